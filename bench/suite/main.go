// Command suite is qk's whole-broker benchmark suite, behind `make bench`.
//
// It measures qk the way a client sees it and, in the same run, measures
// franz-go's kfake in three roles that frame the figure:
//
//	kfake peer  a broker with an on-disk log doing the same work as qk
//	            (kfake.DataDir), the "is qk a good broker" comparison
//	ceiling     a broker that does almost nothing: for produce it
//	            acknowledges without storing (kfake.BlackholeProduce), for
//	            consume it answers every fetch from one canned batch
//	            (kfake.SyntheticFetch). What a client reaches against it is
//	            the most any broker could give that client on this machine.
//
// Why this shape: on a two-core machine shared by client and broker the
// Kafka path is CPU-bound and throughput swings 1.5–2× between runs (see
// reference/machine-limits.md). A bare records/s figure says little; a
// ratio to a peer and to a ceiling measured minutes apart on the same
// machine, and the broker's CPU-seconds per GiB, say a lot. So every
// broker runs as a process of its own (the kfake ones via
// bench/kfakebroker), the load is a `qk perf produce|consume --json`
// process of its own, CPU is read from /proc/<pid>/stat of the broker
// alone, runs are interleaved broker by broker, and every figure is the
// median of -runs runs after -warmup unmeasured ones.
//
// Each row of the matrix (see matrix.go) starts the brokers it needs,
// creates a fresh topic per run (deleted after, so disk use stays at one
// run's data), runs the load, and stops the brokers. The report is a
// Markdown table per section, then the targets as a PASS/MISS
// checklist (targets.go).
//
// Usage, from the module root:
//
//	go run ./bench/suite                      # the full matrix, median of 5 runs
//	go run ./bench/suite -quick               # tiny counts, 1 run: checks the pipeline in seconds
//	go run ./bench/suite -only 'produce 1 KiB acks=1 none' -runs 2
//	go run ./bench/suite -qk bin/qk -set num.io.threads=4 -o bench/RESULTS.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// config is the command line.
type config struct {
	qk      string
	kfake   string
	runs    int
	warmup  int
	quick   bool
	out     string
	only    string
	sets    []string
	timeout time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "suite:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.qk, "qk", "", "qk binary to benchmark and to drive the load with (default: go build ./cmd/qk into a temporary directory)")
	fs.StringVar(&c.kfake, "kfake", "", "kfakebroker binary (default: go build ./bench/kfakebroker into a temporary directory)")
	fs.IntVar(&c.runs, "runs", 5, "measured runs per row and broker; the tables show their median")
	fs.IntVar(&c.warmup, "warmup", 1, "unmeasured runs per row and broker before the measured ones")
	fs.BoolVar(&c.quick, "quick", false, "tiny counts, one run, no warm-up: checks the whole pipeline works, measures nothing")
	fs.StringVar(&c.out, "o", "", "also write the Markdown report to this file")
	fs.StringVar(&c.only, "only", "", "run only the rows whose name matches this regular expression, e.g. 'produce 1 KiB acks=1 none'")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "kill a `qk perf` process that has not finished after this long (a stuck broker must not hang the suite)")
	fs.Func("set", "broker setting key=value for qk, passed to qk broker start --set (repeatable)", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want key=value, got %q", s)
		}
		c.sets = append(c.sets, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.quick {
		c.runs, c.warmup = 1, 0
		c.timeout = min(c.timeout, time.Minute)
	}
	if c.runs < 1 || c.warmup < 0 || c.timeout <= 0 {
		return config{}, errors.New("-runs and -timeout must be positive, -warmup not negative")
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	rows, err := selectRows(matrix(c.quick), c.only)
	if err != nil {
		return err
	}

	// Ctrl-C or SIGTERM cancels ctx: the perf process in flight is killed
	// and the deferred stops kill every broker; Pdeathsig covers a suite
	// that dies without running its defers.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if c.qk == "" || c.kfake == "" {
		dir, err := os.MkdirTemp("", "qk-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if c.qk == "" {
			if c.qk, err = benchproc.GoBuild(ctx, filepath.Join(dir, "qk"), "./cmd/qk"); err != nil {
				return err
			}
		}
		if c.kfake == "" {
			if c.kfake, err = benchproc.GoBuild(ctx, filepath.Join(dir, "kfakebroker"), "./bench/kfakebroker"); err != nil {
				return err
			}
		}
	}

	h := machine()
	h.date, h.runs, h.warmup, h.quick, h.sets, h.only = time.Now(), c.runs, c.warmup, c.quick, c.sets, c.only
	if v, err := exec.Command(c.qk, "--version").Output(); err == nil {
		h.qkVersion = strings.TrimSpace(string(v))
	}

	s := &suite{cfg: c, log: stderr}
	var rs results
	var failed []string
	start := time.Now()
	for _, r := range rows {
		rr := s.runRow(ctx, r)
		rs.add(rr)
		if ctx.Err() != nil {
			return errors.New("interrupted; brokers stopped, no report")
		}
		if rr.err != nil {
			failed = append(failed, r.name)
			fmt.Fprintf(stderr, "suite: %s: %v\n", r.name, rr.err)
		}
	}
	fmt.Fprintf(stderr, "suite: %d rows in %v\n", len(rows), time.Since(start).Round(time.Second))

	text := markdown(h, &rs, targets)
	if _, err := io.WriteString(stdout, text); err != nil {
		return err
	}
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(text), 0o644); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d rows failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// suite runs rows.
type suite struct {
	cfg   config
	log   io.Writer
	topic int // runs so far: each gets a topic name of its own
}

// runRow starts the brokers r needs, runs it warm-up plus runs times
// against each broker in turn, and stops them. Interleaving (qk, peer,
// ceiling, qk, ...) rather than five runs of one then five of the next
// spreads a disturbance over every broker instead of one.
func (s *suite) runRow(ctx context.Context, r row) *rowResult {
	rr := &rowResult{row: r, runs: make(map[role][]sample)}
	fmt.Fprintf(s.log, "suite: %s\n", r.name)
	procs := make(map[role]*benchproc.Proc)
	admins := make(map[role]*kadm.Client)
	defer func() {
		for _, adm := range admins {
			adm.Close()
		}
		for _, ro := range r.roles {
			p := procs[ro]
			if p == nil {
				continue
			}
			if ctx.Err() != nil || rr.err != nil {
				p.Kill()
				os.RemoveAll(p.Dir)
				continue
			}
			if err := stopProc(p); err != nil {
				rr.err = errors.Join(rr.err, err)
			}
		}
	}()
	for _, ro := range r.roles {
		var (
			p   *benchproc.Proc
			err error
		)
		if ro == roleQK {
			p, err = startQK(ctx, s.cfg.qk, s.cfg.sets)
		} else {
			p, err = startKfake(ctx, r.roleName(ro), s.cfg.kfake, r.kfake(ro))
		}
		if err != nil {
			rr.err = err
			return rr
		}
		procs[ro] = p
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
		if err != nil {
			rr.err = err
			return rr
		}
		admins[ro] = kadm.NewClient(cl)
	}

	for i := range s.cfg.warmup + s.cfg.runs {
		label := fmt.Sprintf("run %d/%d", i-s.cfg.warmup+1, s.cfg.runs)
		if i < s.cfg.warmup {
			label = fmt.Sprintf("warm-up %d/%d", i+1, s.cfg.warmup)
		}
		for _, ro := range r.roles {
			smp, err := s.runOnce(ctx, r, ro, procs[ro], admins[ro])
			if err != nil {
				rr.err = fmt.Errorf("%s, %s: %w\n%s log:\n%s", r.roleName(ro), label, err, r.roleName(ro), procs[ro].LogTail(2<<10))
				return rr
			}
			fmt.Fprintf(s.log, "suite:   %-26s %s: %s\n", r.roleName(ro), label, smp)
			if i >= s.cfg.warmup {
				rr.runs[ro] = append(rr.runs[ro], smp)
			}
		}
	}
	return rr
}

// runOnce is one run of r against the broker p: a fresh topic, the fill
// for a consume row, the measured `qk perf` process with the broker's CPU
// read just before and after it, and the topic's deletion.
func (s *suite) runOnce(ctx context.Context, r row, ro role, p *benchproc.Proc, adm *kadm.Client) (sample, error) {
	s.topic++
	topic := fmt.Sprintf("bench-%d", s.topic)
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := adm.CreateTopic(actx, int32(r.partitions), 1, r.topicConfigs(ro), topic)
	cancel()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return sample{}, fmt.Errorf("create topic %s: %w", topic, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		resp, err := adm.DeleteTopic(dctx, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fmt.Fprintf(s.log, "suite: delete topic %s on %s: %v (its data stays until the row ends)\n", topic, p.Name, err)
		}
	}()

	if r.needsFill(ro) {
		f, err := benchproc.RunPerf(ctx, s.cfg.qk, produceArgs(r, p.Addr, topic), s.cfg.timeout)
		if err == nil {
			err = check(f, produceLoad, r.records)
		}
		if err != nil {
			return sample{}, fmt.Errorf("fill: %w", err)
		}
	}

	args := produceArgs(r, p.Addr, topic)
	if r.load == consumeLoad {
		args = consumeArgs(r, p.Addr, topic, min(s.cfg.timeout, 30*time.Second))
	}
	cpu0, err := p.CPUSeconds()
	if err != nil {
		return sample{}, err
	}
	f, err := benchproc.RunPerf(ctx, s.cfg.qk, args, s.cfg.timeout)
	if err != nil {
		return sample{}, err
	}
	cpu1, err := p.CPUSeconds()
	if err != nil {
		return sample{}, err
	}
	if err := check(f, r.load, r.records); err != nil {
		return sample{}, fmt.Errorf("%s: %w", strings.Join(args[:2], " "), err)
	}
	return newSample(f, r, cpu1-cpu0), nil
}

// newSample turns a perf final line and the broker's CPU over the run into
// a sample. Bytes are record values (no keys are sent); should a tool not
// report them, the row's records × size is what was sent.
//
// A consumer's throughput is its fetch phase's when the tool reports one,
// as kafka-consumer-perf-test's fetch.MB.sec: a group join's wait is the
// coordinator's policy (group.initial.rebalance.delay.ms), not the cost
// of serving fetches, and would swamp short runs.
func newSample(f benchproc.Final, r row, cpu float64) sample {
	b := float64(f.Bytes)
	if b <= 0 {
		b = float64(r.records) * float64(r.size)
	}
	s := sample{recPerSec: f.RecordsPerSec, mibPerSec: f.MiBPerSec, cpuPerGiB: cpu / (b / gib)}
	if r.load == consumeLoad && f.FetchRecordsPerSec > 0 && f.FetchMiBPerSec > 0 {
		s.recPerSec, s.mibPerSec = f.FetchRecordsPerSec, f.FetchMiBPerSec
	}
	if f.Latency != nil {
		s.hasLatency = true
		s.p50, s.p99, s.p999 = f.Latency.P50, f.Latency.P99, f.Latency.P999
	}
	return s
}

func (s sample) String() string {
	str := fmt.Sprintf("%s rec/s %.1f MiB/s %.2f CPU-s/GiB", benchproc.Group(s.recPerSec), s.mibPerSec, s.cpuPerGiB)
	if s.hasLatency {
		str += fmt.Sprintf(" p50 %.3f p99 %.3f p99.9 %.3f ms", s.p50, s.p99, s.p999)
	}
	return str
}

// machine describes where the suite runs: the checkout, Go, kfake's
// version, the CPU and the kernel. Each is best effort: a missing one
// says "unknown" rather than stopping a long run.
func machine() header {
	m := benchproc.Machine()
	h := header{describe: m.Describe, goVersion: m.GoVersion, cpuModel: m.CPUModel, cpus: m.CPUs, kernel: m.Kernel}
	if out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/twmb/franz-go/pkg/kfake").Output(); err == nil {
		h.kfake = strings.TrimSpace(string(out))
	}
	return h
}
