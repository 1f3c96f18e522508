package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// The SCRAM user of the SASL_SSL runs. 8192 iterations, as Kafka's
// documentation shows: each connection's authentication costs both ends
// a few milliseconds of PBKDF2, once per perf process.
const (
	scramUser       = "alice"
	scramPassword   = "alice-secret"
	scramMechanism  = "SCRAM-SHA-512"
	scramIterations = 8192
)

// listener is one of the broker's three listeners, in the order each
// run measures them; PLAINTEXT first, the ratios' denominator.
type listener struct {
	name string // Kafka's listener name, which is also its security protocol here
	addr string
}

// The listeners by index.
const (
	lnPlaintext = iota
	lnSSL
	lnSASLSSL
	numListeners
)

var listenerNames = [numListeners]string{"PLAINTEXT", "SSL", "SASL_SSL"}

// secBroker is the broker under measurement with its listeners and the
// files its clients need.
type secBroker struct {
	proc      *benchproc.Proc
	listeners [numListeners]listener
	pki       *pki
	commands  []string // the broker's and the user's command lines, for the report
	log       io.Writer
}

// brokerArgs is the broker's command line: three listeners on one
// broker, one PEM key store for both TLS listeners, SCRAM-SHA-512 on the
// SASL one. log.segment.delete.delay.ms=0 and
// group.initial.rebalance.delay.ms=0 as in bench/suite (each run's topic
// is deleted after it; the consumer's group join does not wait 3 s with
// the broker idle and charged for it).
func brokerArgs(addrs [numListeners]string, dataDir, keystore, caFile string) []string {
	var ls []string
	for i, a := range addrs {
		ls = append(ls, listenerNames[i]+"://"+a)
	}
	return []string{"broker", "start",
		"--set", "listeners=" + strings.Join(ls, ","),
		"--set", "log.dirs=" + dataDir,
		"--set", "ssl.keystore.type=PEM",
		"--set", "ssl.keystore.location=" + keystore,
		"--set", "ssl.truststore.type=PEM",
		"--set", "ssl.truststore.location=" + caFile,
		"--set", "sasl.enabled.mechanisms=" + scramMechanism,
		"--set", "log.segment.delete.delay.ms=0",
		"--set", "group.initial.rebalance.delay.ms=0",
		"--set", "qk.http.listener=127.0.0.1:0",
	}
}

// userArgs is the `qk user alter` command line that makes the SCRAM
// user, sent over the PLAINTEXT listener.
func userArgs(plaintext string) []string {
	return []string{"user", "alter", "--entity-name", scramUser,
		"--add-config", fmt.Sprintf("%s=[iterations=%d,password=%s]", scramMechanism, scramIterations, scramPassword),
		"-b", plaintext}
}

// securityArgs is the -X settings of a client of listener ln: none for
// PLAINTEXT; TLS trusting the benchmark's CA for SSL; that and SCRAM as
// the benchmark's user for SASL_SSL.
func securityArgs(ln int, caFile string) []string {
	switch ln {
	case lnSSL:
		return []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + caFile}
	case lnSASLSSL:
		return []string{"-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + caFile,
			"-X", "sasl.mechanism=" + scramMechanism, "-X", "sasl.username=" + scramUser, "-X", "sasl.password=" + scramPassword}
	}
	return nil
}

// startBroker makes the certificates in root, starts the broker there
// and makes the SCRAM user.
func startBroker(ctx context.Context, qk, root string) (*secBroker, error) {
	p, err := newPKI(root)
	if err != nil {
		return nil, err
	}
	b := &secBroker{pki: p}
	var addrs [numListeners]string
	for i := range addrs {
		if addrs[i], err = benchproc.FreeAddr(); err != nil {
			return nil, err
		}
		b.listeners[i] = listener{name: listenerNames[i], addr: addrs[i]}
	}
	args := brokerArgs(addrs, filepath.Join(root, "data"), p.keystore, p.caFile)
	b.commands = append(b.commands, "qk "+strings.Join(args, " "))
	// Launch waits for ApiVersions on the PLAINTEXT listener.
	if b.proc, err = benchproc.Launch(ctx, "qk", qk, root, args, addrs[lnPlaintext]); err != nil {
		return nil, err
	}
	ua := userArgs(addrs[lnPlaintext])
	b.commands = append(b.commands, "qk "+strings.Join(ua, " "))
	uctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(uctx, qk, ua...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.proc.Kill()
		return nil, fmt.Errorf("qk %s: %w\n%s", strings.Join(ua, " "), err, out)
	}
	return b, nil
}
