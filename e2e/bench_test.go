//go:build integration

package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBenchQuick runs the broker bench tool (bench/broker) in its -quick
// mode against the qk under test, so that the tool behind `make bench`
// keeps working as the broker and franz-go change: it must start the
// broker, produce, consume, stop it cleanly and print its table.
func TestBenchQuick(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bench")
	if err := goBuild(bin, "./bench/broker"); err != nil {
		t.Fatal(err)
	}
	out := string(runCmd(t, 2*time.Minute, nil, bin, "-quick", "-qk", qkBin))
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\| record \| records/run \| produce rec/s \| produce MiB/s \| p50 ms \| p99 ms \| broker CPU-s/GiB produced \|`),
		regexp.MustCompile(`(?m)^\| 1 KiB \| 2,000 \| [0-9,]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9,]+ \| [0-9.]+ \| [0-9.]+ \|$`),
		regexp.MustCompile(`(?m)^\| 100 B \| 10,000 \| [0-9,]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9,]+ \| [0-9.]+ \| [0-9.]+ \|$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("bench -quick output has no line matching %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
		t.Errorf("bench -quick output has NaN or Inf:\n%s", out)
	}
}
