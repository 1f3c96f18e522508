//go:build integration

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// qkShell runs script with sh, qk on $PATH and QK_BROKERS set to addr, as
// a user's shell would after `make run`; it returns stdout, stderr and
// the error.
func qkShell(t *testing.T, addr string, timeout time.Duration, script string) (string, string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctxFor(t, timeout), "sh", "-c", script)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(childEnv(), "QK_BROKERS="+addr, "PATH="+filepath.Dir(qkBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestProduceCreatesTopic: on a fresh broker with the embedded defaults
// (auto.create.topics.enable=true), `qk produce` to a missing topic has
// it created, as kafka-console-producer.sh and kcat do, and the records
// read back; --format json records naming their own topic too.
func TestProduceCreatesTopic(t *testing.T) {
	b := startBroker(t)
	out, stderr, err := qkShell(t, b.addr, time.Minute, "seq 1 5 | qk produce demo && qk consume demo -o start -e")
	if err != nil {
		t.Fatalf("produce and consume: %v\nstderr:\n%s", err, stderr)
	}
	if want := "1\n2\n3\n4\n5\n"; out != want {
		t.Fatalf("consumed %q, want %q", out, want)
	}
	out, stderr, err = qkShell(t, b.addr, time.Minute,
		`echo '{"topic":"demo-json","key":"k","value":"v"}' | qk produce --format json && qk consume demo-json -o start -e -f '%k=%v\n'`)
	if err != nil {
		t.Fatalf("json produce and consume: %v\nstderr:\n%s", err, stderr)
	}
	if out != "k=v\n" {
		t.Fatalf("consumed %q, want %q", out, "k=v\n")
	}
}

// TestProduceMissingTopicRefused: with auto.create.topics.enable=false the
// produce fails, within --timeout, naming the setting and the command that
// creates the topic (kgo gives up after 4 metadata refreshes that still
// say UNKNOWN_TOPIC_OR_PARTITION, about a second).
func TestProduceMissingTopicRefused(t *testing.T) {
	b := startBroker(t, withSet("auto.create.topics.enable=false"))
	for _, tc := range []struct{ name, script, topic string }{
		{"text", "seq 1 5 | qk produce demo --timeout 5s", "demo"},
		{"json", `echo '{"topic":"other","value":"v"}' | qk produce --format json --timeout 5s`, "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, stderr, err := qkShell(t, b.addr, time.Minute, tc.script)
			took := time.Since(start)
			if err == nil {
				t.Fatalf("produce to a missing topic succeeded with auto-create off")
			}
			want := `topic "` + tc.topic + `" does not exist and the broker did not create it (auto.create.topics.enable=false?); create it with: qk topic create ` + tc.topic
			if !strings.Contains(stderr, want) {
				t.Fatalf("stderr %q does not say %q", stderr, want)
			}
			if took > 5*time.Second+5*time.Second {
				t.Fatalf("produce took %v to fail, want within --timeout 5s (plus start-up)", took)
			}
		})
	}
	md := runCmd(t, 30*time.Second, nil, qkBin, "topic", "list", "-b", b.addr)
	if strings.Contains(string(md), "demo") || strings.Contains(string(md), "other") {
		t.Fatalf("a refused topic was created:\n%s", md)
	}
}
