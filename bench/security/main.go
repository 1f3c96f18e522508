// Command security is qk's TLS and SASL cost benchmark, behind `make
// bench-security`: one `qk broker start` process with a PLAINTEXT, an
// SSL and a SASL_SSL (SCRAM-SHA-512) listener, and `qk perf produce`
// and `qk perf consume` processes against each, as an operator would
// run them.
//
// What it measures, per listener: 1 KiB records at full speed, acks=1,
// one partition, linger 5 ms (bench/suite's produce rows), then the same
// records read back by one consumer over the same listener; records/s,
// MB/s and the broker's CPU-seconds per GiB (its utime+stime from
// /proc/<pid>/stat over the perf process, per GiB of record values
// moved), and, per run, SSL / PLAINTEXT and SASL_SSL / PLAINTEXT of the
// throughput and of the CPU per GiB, with the median of those ratios.
//
// Why this shape: on this kind of machine (2 cores shared by the broker
// and the client, throughput swinging 1.5–2× between runs; see
// reference/machine-limits.md) only ratios taken in the same run hold,
// so each run goes through the three listeners one after the other,
// after an unmeasured warm-up run, and a page-cache ballast fills the
// free memory first so that no run pays for first-touching memory the
// VM returned to its host. The CA and the broker's certificate are made
// at start in the run's temporary directory.
//
// Usage, from the module root:
//
//	go run ./bench/security                      # median of 5 runs, to bench/SECURITY.md
//	go run ./bench/security -quick               # tiny counts, 1 run, no report file: checks the pipeline
//	go run ./bench/security -microbench m.txt    # also put this benchstat output in the report
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
)

// config is the command line.
type config struct {
	qk         string
	runs       int
	warmup     int
	records    int
	ballast    bool
	quick      bool
	out        string
	microbench string // a file of benchstat output for the report, or ""
	timeout    time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "security:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("security", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.qk, "qk", "", "qk binary for the broker and `qk perf` (default: go build ./cmd/qk into a temporary directory)")
	fs.IntVar(&c.runs, "runs", 5, "measured runs; each goes through every listener once, and the tables show medians")
	fs.IntVar(&c.warmup, "warmup", 1, "unmeasured runs first")
	fs.IntVar(&c.records, "records", 1_000_000, "1 KiB records per produce run, read back by the consume run (1 GiB: seconds per run, not a tick of /proc CPU time)")
	fs.BoolVar(&c.ballast, "ballast", true, "fill the free memory with a page-cache ballast file before the runs (see benchproc.Ballast)")
	fs.BoolVar(&c.quick, "quick", false, "tiny counts, one run, no warm-up, no ballast, no report file: checks the pipeline, measures nothing")
	fs.StringVar(&c.out, "o", "bench/SECURITY.md", "write the Markdown report here too (not with -quick); empty: stdout only")
	fs.StringVar(&c.microbench, "microbench", "", "benchstat output of `go test -bench 'FetchTLS|RoundTripTLS' ./broker/network/` to include in the report")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "kill a `qk perf` process that has not finished after this long")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.quick {
		c.runs, c.warmup, c.records, c.ballast, c.out = 1, 0, 5_000, false, ""
		c.timeout = min(c.timeout, time.Minute)
	}
	if c.runs < 1 || c.warmup < 0 || c.records < 1 || c.timeout <= 0 {
		return config{}, errors.New("-runs, -records and -timeout must be positive, -warmup not negative")
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	// Ctrl-C or SIGTERM cancels ctx: the perf process in flight is killed
	// and the deferred close stops the broker; Pdeathsig covers a
	// benchmark that dies without running its defers.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if c.qk == "" {
		dir, err := os.MkdirTemp("", "qk-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if c.qk, err = benchproc.GoBuild(ctx, filepath.Join(dir, "qk"), "./cmd/qk"); err != nil {
			return err
		}
	}
	h := header{Host: benchproc.Machine(), date: time.Now(), cfg: c, ktls: probeKTLS()}
	if v, err := exec.Command(c.qk, "--version").Output(); err == nil {
		h.qkVersion = strings.TrimSpace(string(v))
	}
	if c.microbench != "" {
		b, err := os.ReadFile(c.microbench)
		if err != nil {
			return err
		}
		h.microbench = string(b)
	}

	start := time.Now()
	res := &results{}
	runErr := measure(ctx, c, stderr, res)
	h.took = time.Since(start)
	fmt.Fprintf(stderr, "security: done in %v\n", h.took.Round(time.Second))
	if ctx.Err() != nil {
		return errors.New("interrupted; broker stopped, no report")
	}
	if runErr != nil {
		res.err = runErr.Error()
	}
	text := markdown(h, res)
	if _, err := io.WriteString(stdout, text); err != nil {
		return err
	}
	if c.out != "" && runErr == nil {
		if err := os.WriteFile(c.out, []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "security: wrote %s\n", c.out)
	}
	return runErr
}

// measure starts the broker, makes the SCRAM user, writes the ballast,
// runs the loads and stops the broker; what it measured is in res even
// when it fails part way.
func measure(ctx context.Context, cfg config, log io.Writer, res *results) error {
	root, err := os.MkdirTemp("", "qk-bench-security-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	fmt.Fprintln(log, "security: starting the broker (PLAINTEXT, SSL, SASL_SSL)")
	b, err := startBroker(ctx, cfg.qk, root)
	if err != nil {
		return err
	}
	res.commands = b.commands
	graceful := false
	defer func() {
		if graceful {
			if err := b.proc.Stop(30 * time.Second); err != nil {
				fmt.Fprintf(log, "security: stopping the broker: %v\n", err)
			}
		} else {
			b.proc.Kill()
		}
	}()
	if cfg.ballast {
		// 1 GiB left for the processes; the runs evict the ballast.
		bl, err := benchproc.WriteBallast(filepath.Join(root, "ballast"), 1<<30)
		if err != nil {
			return err
		}
		defer bl.Remove()
		res.ballast = bl.Bytes
		fmt.Fprintf(log, "security: %.1f GiB page-cache ballast written\n", float64(bl.Bytes)/(1<<30))
	}
	res.records = cfg.records
	if err := runLoads(ctx, b, cfg, log, res); err != nil {
		return err
	}
	graceful = ctx.Err() == nil
	return nil
}
