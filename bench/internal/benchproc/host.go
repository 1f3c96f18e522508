package benchproc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Median is the middle value, or the mean of the middle two; NaN for no
// values. Medians, not means: one run disturbed by a neighbour on a
// shared machine moves a mean, not a median.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Group formats v, rounded, with thousands separators: 1234567 -> 1,234,567;
// "—" for NaN or an infinity (a figure not measured, such as the median of
// no runs), which int64 cannot hold.
func Group(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1<<62 {
		return "—"
	}
	n := int64(math.Round(v))
	if n < 0 {
		return "-" + Group(float64(-n))
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// GoBuild builds pkg of the module the benchmark runs in into out.
func GoBuild(ctx context.Context, out, pkg string) (string, error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the qk module: run from the repository or pass the binaries' flags")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = filepath.Dir(mod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// Host is where a benchmark ran: the checkout, Go, the CPU and the kernel.
type Host struct {
	Describe  string // git describe of the checkout
	GoVersion string
	CPUModel  string
	CPUs      int
	Kernel    string
}

// Machine describes this machine. Each field is best effort: a missing
// one stays empty (a report says "unknown") rather than stopping a long
// run.
func Machine() Host {
	h := Host{GoVersion: runtime.Version(), CPUs: runtime.NumCPU()}
	if out, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		h.Describe = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel, h.CPUs = ParseCPUInfo(string(b), h.CPUs)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	return h
}

// ParseCPUInfo returns the first "model name" of /proc/cpuinfo and the
// number of "processor" entries (def when there are none).
func ParseCPUInfo(info string, def int) (string, int) {
	var model string
	n := 0
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			n++
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		}
	}
	if n == 0 {
		n = def
	}
	return model, n
}

// OrUnknown is s, or "unknown" when s is empty.
func OrUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
