//go:build integration

package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSIGINTStopsCleanly: Ctrl-C in the terminal running the broker is a
// clean shutdown, like SIGTERM: exit status 0, marker written, and the
// next start finds its data without recovery.
func TestSIGINTStopsCleanly(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b.admin(), "sigint", 1, nil)
	cl := b.client(kgo.DefaultProduceTopic("sigint"))
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.stopWith(syscall.SIGINT)
	b.restart()
	waitTopicReady(t, b.admin(), "sigint", 1)
	if _, ok := b.waitLog(loadedLine, readyTimeout); !ok {
		t.Fatalf("no \"loaded logs\" line after restart")
	}
	if uncleanLoadLine.MatchString(b.log()) {
		t.Errorf("broker loaded its logs as after a crash following a SIGINT stop")
	}
	if got := endOffsets(t, b.admin(), "sigint")[0]; got != 1 {
		t.Errorf("end offset %d after restart, want 1", got)
	}
}

// TestDataDirInUse: a second broker started on a data directory a running
// broker owns must refuse to start, as Kafka does with its .lock file;
// two processes appending to the same segments would corrupt them.
func TestDataDirInUse(t *testing.T) {
	a := startBroker(t)
	addr := freeAddr(t)
	cmd := exec.CommandContext(ctxFor(t, readyTimeout), qkBin, "broker", "start",
		"--set", "listeners=PLAINTEXT://"+addr, "--set", "log.dirs="+a.dataDir, "--set", "qk.http.listener=127.0.0.1:0")
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			if err == nil {
				t.Fatalf("second broker on %s exited with status 0:\n%s", a.dataDir, out.String())
			}
			if !strings.Contains(strings.ToLower(out.String()), "lock") {
				t.Errorf("second broker's error does not mention the lock:\n%s", out.String())
			}
			if err := apiVersions(a.addr, time.Second); err != nil {
				t.Fatalf("first broker stopped answering after the second one was refused: %v", err)
			}
			a.stop()
			return
		case <-tick.C:
			if apiVersions(addr, time.Second) == nil {
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("second broker started on %s, which broker pid %d uses:\n%s", a.dataDir, a.pid(), tail(out.String(), 4<<10))
			}
		}
	}
}
