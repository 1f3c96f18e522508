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
// must be in the report with figures, no acknowledged record may be lost,
// and nothing may be left running (the cluster stops by PID in close).
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
	var stdout bytes.Buffer
	start := time.Now()
	err := run(args, &stdout, t.Output())
	out := stdout.String()
	require.NoError(t, err, "report:\n%s", out)
	t.Logf("quick benchmark took %v", time.Since(start))

	for _, sec := range []string{"## 1. Throughput", "## 2. Replication lag", "## 3. Failover", "## 4. Controlled shutdown"} {
		require.Contains(t, out, sec, "report:\n%s", out)
	}
	require.NotContains(t, out, "Stopped early")
	require.NotContains(t, out, "NaN")
	require.Regexp(t, `\| 6000 \| [0-9.]+ s \(broker \d(, controller)?\) \| \*\*[0-9.]+ s\*\* \| [0-9,]+ \| 0 \| 0 \| 0 \|`, out, "failover row: acknowledged records, none lost")
	require.Regexp(t, `Read back: [0-9,]+ acknowledged records, 0 lost, 0 duplicated`, out)
}
