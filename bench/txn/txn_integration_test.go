//go:build integration

package main

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQuickEndToEnd runs the whole benchmark in -quick mode: a real
// ZooKeeper, three brokers, every section. It is the guard that keeps the
// benchmark from rotting as qk, qk perf and franz-go change: every section
// must be in the report with figures, and nothing may be left running
// (the cluster stops by PID in Close).
//
// It runs with the broker's defaults, KIP-890 verification on. (It once
// had to turn verification off: a producer's pipelined produce raced the
// verified first batch of its transaction, fixed by network.Request.Hold.)
// QK_BENCH_TXN_SET (space-separated key=value broker settings) adds
// settings, e.g. QK_BENCH_TXN_SET=transaction.partition.verification.enable=false.
func TestQuickEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three brokers")
	}
	args := []string{"-quick"}
	// As in e2e: QK_E2E_BIN runs against a qk built elsewhere instead of
	// this checkout's.
	if bin := os.Getenv("QK_E2E_BIN"); bin != "" {
		args = append(args, "-qk", bin)
	}
	for _, kv := range bytes.Fields([]byte(os.Getenv("QK_BENCH_TXN_SET"))) {
		args = append(args, "-set", string(kv))
	}
	var stdout bytes.Buffer
	start := time.Now()
	err := run(args, &stdout, t.Output())
	out := stdout.String()
	require.NoError(t, err, "report:\n%s", out)
	t.Logf("quick benchmark took %v", time.Since(start))

	for _, sec := range []string{"## Summary", "## 1. Producer throughput", "## 2. read_committed", "## 3. EndTxn latency"} {
		require.Contains(t, out, sec, "report:\n%s", out)
	}
	require.NotContains(t, out, "Stopped early")
	require.NotContains(t, out, "NaN")
	require.Regexp(t, `\| transactional / idempotent producer records/s .* \| [0-9.]+× \|`, out)
	require.Regexp(t, `\| read_committed / read_uncommitted speed .* \| [0-9.]+× \|`, out)
	require.Regexp(t, `\| EndTxn \(commit\) latency, RF 3 \| p50 [0-9.]+ ms, p99 [0-9.]+ ms \|`, out)
}
