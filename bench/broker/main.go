// Command broker measures a whole qk broker process the way a client sees
// it: it starts `qk broker start` in a temporary directory as a separate
// process, writes N records to a one-partition topic with a franz-go
// producer (acks=1, no compression, random incompressible values), reads
// them back with a franz-go consumer, and prints a Markdown table of
// records/s, MiB/s, produce latency (p50/p99, from the Produce call to the
// acknowledgement, HdrHistogram) and the broker's CPU-seconds per GiB moved
// (utime+stime from /proc/<pid>/stat around each phase).
//
// Why CPU per GiB: on a two-core machine shared by client and broker, the
// Kafka path is CPU-bound and throughput swings 1.5–2× between runs (see
// reference/machine-limits.md), so the broker's CPU cost per byte is the
// figure that compares across runs and machines. Each size gets a warm-up
// run (first writes into cold guest pages are slow) and the median of
// several measured runs.
//
// Usage, from the module root:
//
//	go run ./bench/broker              # 1 KiB and 100 B records, median of 5 runs
//	go run ./bench/broker -quick       # tiny counts, 1 run: checks the tool works
//	go run ./bench/broker -qk bin/qk -runs 3 -records-1k 200000
//
// `make bench` runs it after the Go benchmarks and keeps the table in
// bench/<date>.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

// config is the command line.
type config struct {
	qk         string
	records1k  int
	records100 int
	runs       int
	warmup     int
	inflight   int
	buffered   int
	timeout    time.Duration
	quick      bool
	out        string
	sets       []string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.qk, "qk", "", "qk binary to benchmark (default: go build ./cmd/qk into a temporary directory)")
	fs.IntVar(&c.records1k, "records-1k", 2_000_000, "records per run of 1 KiB values")
	fs.IntVar(&c.records100, "records-100", 6_000_000, "records per run of 100 B values")
	fs.IntVar(&c.runs, "runs", 5, "measured runs per record size; the table shows their median")
	fs.IntVar(&c.warmup, "warmup", 1, "unmeasured runs before the measured ones")
	fs.IntVar(&c.inflight, "inflight", 5, "produce requests in flight (Kafka's max.in.flight.requests.per.connection default)")
	fs.IntVar(&c.buffered, "max-buffered", 50_000, "records the producer buffers before Produce blocks (franz-go's default); latency includes this queue")
	fs.DurationVar(&c.timeout, "phase-timeout", 5*time.Minute, "give up on a produce or consume phase after this long (a stuck broker must not hang the bench)")
	fs.BoolVar(&c.quick, "quick", false, "tiny counts, one run, no warm-up: checks that the tool works, measures nothing")
	fs.StringVar(&c.out, "o", "", "also write the Markdown report to this file")
	fs.Func("set", "broker setting key=value, passed to qk broker start --set (repeatable)", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want key=value, got %q", s)
		}
		c.sets = append(c.sets, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.quick {
		c.records1k, c.records100, c.runs, c.warmup = 2_000, 10_000, 1, 0
	}
	if c.records1k < 1 || c.records100 < 1 || c.runs < 1 || c.warmup < 0 || c.inflight < 1 || c.buffered < 1 || c.timeout <= 0 {
		return errors.New("-records-1k, -records-100, -runs, -inflight and -max-buffered and -phase-timeout must be positive, -warmup not negative")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if c.qk == "" {
		bin, cleanup, err := buildQK(ctx)
		if err != nil {
			return err
		}
		defer cleanup()
		c.qk = bin
	}
	version, _ := exec.Command(c.qk, "--version").Output()
	// The checkout the figures belong to, when run from one.
	commit, _ := exec.Command("git", "describe", "--always", "--dirty").Output()

	var extra []string
	for _, s := range c.sets {
		extra = append(extra, "--set", s)
	}
	b, err := startBroker(c.qk, extra)
	if err != nil {
		return err
	}
	defer func() {
		if b != nil {
			b.kill()
			os.RemoveAll(b.dir)
		}
	}()
	fmt.Fprintf(stderr, "bench: broker pid %d at %s, data in %s\n", b.cmd.Process.Pid, b.addr, b.dir)

	// 64 MiB of random bytes: every batch is a fresh window of it.
	pool := make([]byte, 64*mib)
	rng := rand.NewChaCha8([32]byte{'q', 'k'})
	_, _ = rng.Read(pool)

	adm := kadm.NewClient(mustClient(b.addr))
	defer adm.Close()

	rep := report{
		date:    time.Now(),
		version: strings.TrimSpace(string(version)),
		commit:  strings.TrimSpace(string(commit)),
		cfg:     c,
	}
	for _, sz := range []struct {
		label string
		size  int
		n     int
	}{{"1 KiB", kib, c.records1k}, {"100 B", 100, c.records100}} {
		for i := range c.warmup + c.runs {
			name := fmt.Sprintf("%s run %d/%d", sz.label, i-c.warmup+1, c.runs)
			if i < c.warmup {
				name = fmt.Sprintf("%s warm-up %d/%d", sz.label, i+1, c.warmup)
			}
			m, err := runOnce(ctx, b, adm, sz.size, sz.n, pool, c, fmt.Sprintf("%d-%d", sz.size, i))
			if err != nil {
				return fmt.Errorf("%s: %w\nbroker log:\n%s", name, err, b.logTail(4<<10))
			}
			fmt.Fprintf(stderr, "bench: %s: %s\n", name, m)
			if i >= c.warmup {
				m.label, m.run = sz.label, i-c.warmup+1
				rep.runs = append(rep.runs, m)
			}
		}
	}

	err = b.stop()
	b = nil
	if err != nil {
		return err
	}

	text := rep.markdown()
	if _, err := io.WriteString(stdout, text); err != nil {
		return err
	}
	if c.out != "" {
		return os.WriteFile(c.out, []byte(text), 0o644)
	}
	return nil
}

// runOnce is one measured run: a fresh topic, produce, consume, delete.
// Deleting keeps the disk use of a long bench to one run's data.
func runOnce(ctx context.Context, b *brokerProc, adm *kadm.Client, size, n int, pool []byte, c config, id string) (metrics, error) {
	topic := "bench-" + id
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return metrics{}, fmt.Errorf("create topic %s: %w", topic, err)
	}
	defer func() {
		if _, err := adm.DeleteTopic(context.WithoutCancel(ctx), topic); err != nil {
			fmt.Fprintf(os.Stderr, "bench: delete topic %s: %v (its data stays until the broker's directory is removed)\n", topic, err)
		}
	}()

	cpu0, err := b.cpuSeconds()
	if err != nil {
		return metrics{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	p, err := produce(pctx, b.addr, topic, n, size, pool, c.inflight, c.buffered)
	cancel()
	if err != nil {
		return metrics{}, err
	}
	cpu1, err := b.cpuSeconds()
	if err != nil {
		return metrics{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	cr, err := consume(cctx, b.addr, topic, n)
	cancel()
	if err != nil {
		return metrics{}, err
	}
	cpu2, err := b.cpuSeconds()
	if err != nil {
		return metrics{}, err
	}
	return metrics{
		records:          n,
		produceRecS:      float64(p.records) / p.dur.Seconds(),
		produceMiBS:      float64(p.bytes) / mib / p.dur.Seconds(),
		p50ms:            float64(p.p50) / float64(time.Millisecond),
		p99ms:            float64(p.p99) / float64(time.Millisecond),
		produceCPUPerGiB: (cpu1 - cpu0) / (float64(p.bytes) / gib),
		consumeRecS:      float64(cr.records) / cr.dur.Seconds(),
		consumeMiBS:      float64(cr.bytes) / mib / cr.dur.Seconds(),
		consumeCPUPerGiB: (cpu2 - cpu1) / (float64(cr.bytes) / gib),
	}, nil
}

func mustClient(addr string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		panic(err) // only option errors, and the options are constant
	}
	return cl
}

// buildQK builds ./cmd/qk of the module the tool runs in.
func buildQK(ctx context.Context) (string, func(), error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", nil, errors.New("not inside the qk module: run from the repository or pass -qk")
	}
	dir, err := os.MkdirTemp("", "qk-bench-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, "qk")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/qk")
	cmd.Dir = filepath.Dir(gomod)
	if b, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build ./cmd/qk: %v\n%s", err, b)
	}
	return bin, cleanup, nil
}

// metrics are one run's figures.
type metrics struct {
	label            string
	run              int
	records          int
	produceRecS      float64
	produceMiBS      float64
	p50ms, p99ms     float64
	produceCPUPerGiB float64
	consumeRecS      float64
	consumeMiBS      float64
	consumeCPUPerGiB float64
}

func (m metrics) String() string {
	return fmt.Sprintf("produce %.0f rec/s %.1f MiB/s p50 %.2f ms p99 %.2f ms %.2f CPU-s/GiB; consume %.0f rec/s %.1f MiB/s %.2f CPU-s/GiB",
		m.produceRecS, m.produceMiBS, m.p50ms, m.p99ms, m.produceCPUPerGiB, m.consumeRecS, m.consumeMiBS, m.consumeCPUPerGiB)
}

// cells formats the table columns after the label.
func (m metrics) cells() []string {
	return []string{
		group(m.records),
		group(int(m.produceRecS + 0.5)),
		fmt.Sprintf("%.1f", m.produceMiBS),
		fmt.Sprintf("%.2f", m.p50ms),
		fmt.Sprintf("%.2f", m.p99ms),
		fmt.Sprintf("%.2f", m.produceCPUPerGiB),
		group(int(m.consumeRecS + 0.5)),
		fmt.Sprintf("%.1f", m.consumeMiBS),
		fmt.Sprintf("%.2f", m.consumeCPUPerGiB),
	}
}

// medianOf takes the median of each figure separately over runs: the
// run with the median throughput need not have the median latency.
func medianOf(runs []metrics) metrics {
	med := func(f func(metrics) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return metrics{
		label:            runs[0].label,
		records:          runs[0].records,
		produceRecS:      med(func(m metrics) float64 { return m.produceRecS }),
		produceMiBS:      med(func(m metrics) float64 { return m.produceMiBS }),
		p50ms:            med(func(m metrics) float64 { return m.p50ms }),
		p99ms:            med(func(m metrics) float64 { return m.p99ms }),
		produceCPUPerGiB: med(func(m metrics) float64 { return m.produceCPUPerGiB }),
		consumeRecS:      med(func(m metrics) float64 { return m.consumeRecS }),
		consumeMiBS:      med(func(m metrics) float64 { return m.consumeMiBS }),
		consumeCPUPerGiB: med(func(m metrics) float64 { return m.consumeCPUPerGiB }),
	}
}

// report is the Markdown the tool prints.
type report struct {
	date    time.Time
	version string
	commit  string
	cfg     config
	runs    []metrics
}

var columns = []string{"records/run", "produce rec/s", "produce MiB/s", "p50 ms", "p99 ms",
	"broker CPU-s/GiB produced", "consume rec/s", "consume MiB/s", "broker CPU-s/GiB consumed"}

func (r report) markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# qk broker bench, %s\n\n", r.date.Format("2006-01-02 15:04"))
	fmt.Fprintf(&sb, "%s", orUnknown(r.version))
	if r.commit != "" {
		fmt.Fprintf(&sb, " (checkout %s)", r.commit)
	}
	fmt.Fprintf(&sb, "; %s %s/%s, %d CPUs.\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(&sb, "`qk broker start` (defaults%s) in its own process; franz-go producer then consumer over 127.0.0.1; "+
		"1 partition, acks=1, no compression, random values, %d produce requests in flight, up to %s records buffered; %s. "+
		"MiB and GiB count record values; latency runs from the Produce call to the acknowledgement, "+
		"so it includes the wait in the producer's buffer, as kafka-producer-perf-test's does.\n\n",
		setsText(r.cfg.sets), r.cfg.inflight, group(r.cfg.buffered), runsText(r.cfg.runs, r.cfg.warmup))
	if r.cfg.quick {
		sb.WriteString("**-quick: tiny counts, one run — these figures say the tool works, not how fast qk is.**\n\n")
	}
	header := append([]string{"record"}, columns...)
	row := func(cells []string) { fmt.Fprintf(&sb, "| %s |\n", strings.Join(cells, " | ")) }
	row(header)
	row(alignRow(len(header)))
	var labels []string
	for _, m := range r.runs {
		if !slices.Contains(labels, m.label) {
			labels = append(labels, m.label)
		}
	}
	for _, l := range labels {
		var of []metrics
		for _, m := range r.runs {
			if m.label == l {
				of = append(of, m)
			}
		}
		row(append([]string{l}, medianOf(of).cells()...))
	}
	if r.cfg.runs > 1 {
		sb.WriteString("\nEvery measured run:\n\n")
		row(append([]string{"record", "run"}, columns...))
		row(alignRow(len(header) + 1))
		for _, m := range r.runs {
			row(append([]string{m.label, fmt.Sprint(m.run)}, m.cells()...))
		}
	}
	return sb.String()
}

func alignRow(n int) []string {
	cells := []string{"---"}
	for range n - 1 {
		cells = append(cells, "---:")
	}
	return cells
}

func runsText(runs, warmup int) string {
	plural := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	s := "1 run"
	if runs > 1 {
		s = "median of " + plural(runs, "run")
	}
	if warmup == 0 {
		return s + ", no warm-up"
	}
	return s + " after " + plural(warmup, "warm-up run")
}

func setsText(sets []string) string {
	if len(sets) == 0 {
		return ""
	}
	return " plus --set " + strings.Join(sets, " --set ")
}

func orUnknown(s string) string {
	if s == "" {
		return "qk version unknown"
	}
	return s
}

// group formats n with thousands separators: 1234567 -> 1,234,567.
func group(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + group(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
