//go:build integration

package main

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQuickEndToEnd runs the whole benchmark in -quick mode: the broker
// with its three listeners, the SCRAM user, a produce and a consume over
// each. It keeps the benchmark from rotting as the broker's security
// settings and qk perf's client settings change: every table must have
// figures for every listener. It takes a few seconds.
func TestQuickEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and six qk perf processes")
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

	for _, sec := range []string{"## 1. Produce", "## 2. Consume", "## 3. Ratios", "## 4. What this says", "## Kernel TLS"} {
		require.Contains(t, out, sec, "report:\n%s", out)
	}
	require.NotContains(t, out, "Stopped early")
	require.NotContains(t, out, "NaN")
	// Every listener has its throughput figures. The CPU columns may be
	// "—": a -quick run moves 5 MB, and a broker's CPU is counted in 10 ms
	// ticks, so one listener's delta can be zero.
	for _, l := range []string{"PLAINTEXT", "SSL", "SASL_SSL"} {
		require.Regexp(t, `(?m)^\| `+l+` \| [0-9,]+ \| [0-9.]+ \| ([0-9.]+|—) \| [0-9.]+× \| ([0-9.]+×|—) \|$`, out)
	}
}
