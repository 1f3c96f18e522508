//go:build integration

package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQuickEndToEnd runs the whole suite in -quick mode, as `make bench`
// would but at tiny counts: it builds qk and kfakebroker, starts every
// broker of every row, drives each with `qk perf`, and prints the report.
// It is the guard that keeps the suite from rotting as qk, qk perf and
// kfake change: every section must be there and every broker of every row
// must have moved records.
func TestQuickEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brokers and builds binaries")
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
	t.Logf("quick suite took %v", time.Since(start))

	for _, sec := range append(sections, "Targets") {
		require.Contains(t, out, "\n## "+sec+"\n", "report:\n%s", out)
	}
	require.NotContains(t, out, "failed")
	require.NotContains(t, out, "NaN")
	require.NotContains(t, out, "Inf")

	// Every broker of every row: a table line whose records/s and MiB/s
	// are positive numbers.
	line := regexp.MustCompile(`(?m)^\| ([^|]+) \| ([^|]+) \| ([0-9,]+) \| ([0-9,]+) \| ([0-9.]+) \| ([0-9.—]+) \| ([0-9.—]+) \| ([0-9.—]+) \| ([0-9.]+) \|`)
	got := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		recs, err := strconv.ParseFloat(strings.ReplaceAll(m[4], ",", ""), 64)
		require.NoError(t, err)
		mibs, err := strconv.ParseFloat(m[5], 64)
		require.NoError(t, err)
		require.Positive(t, recs, "records/s of %s on %s", m[1], m[2])
		require.Positive(t, mibs, "MiB/s of %s on %s", m[1], m[2])
		got[m[1]+" on "+m[2]] = true
	}
	for _, r := range matrix(true) {
		for _, ro := range r.roles {
			require.True(t, got[r.name+" on "+r.roleName(ro)], "no figures for %s on %s in:\n%s", r.name, r.roleName(ro), out)
		}
	}
	for _, tg := range targets {
		require.Regexp(t, regexp.MustCompile(`(?m)^\| `+regexp.QuoteMeta(tg.name)+` \| [^|]+ \| [^|]+ \| (PASS|MISS) \|$`), out)
	}
}
