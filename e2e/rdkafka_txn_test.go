//go:build integration

package e2e

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLibrdkafkaTransactions: librdkafka's transactional producer and a
// read_committed consumer (Debian's python3-confluent-kafka, which make
// test installs) against a qk broker: the committed transactions' keys
// are read, the aborted one's never.
func TestLibrdkafkaTransactions(t *testing.T) {
	b := startBroker(t, withSet("transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1"))
	createTopic(t, b.admin(), "rdk-txn", 3, nil)
	cmd := exec.CommandContext(ctxFor(t, 2*time.Minute), debianPython, "testdata/rdkafka_txn.py", b.addr, "rdk-txn")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rdkafka_txn.py: %v\n%s", err, tail(string(out), 8<<10))
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 || lines[len(lines)-1] != "eof" {
		t.Fatalf("rdkafka_txn.py did not reach the end:\n%s", out)
	}
	got := slices.Sorted(slices.Values(lines[:len(lines)-1]))
	var want []string
	for i := range 10 {
		want = append(want, "c"+string(rune('0'+i)))
	}
	for i := range 5 {
		want = append(want, "d"+string(rune('0'+i)))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed read %v, want the committed keys %v (and none of a0..a9)", got, want)
	}
}

// debianPython is Debian's interpreter, the one python3-confluent-kafka
// is installed for (a python3 earlier on PATH, pyenv's say, lacks it).
const debianPython = "/usr/bin/python3"
