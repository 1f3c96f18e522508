// Command cluster is qk's whole-cluster replication benchmark, behind
// `make bench-cluster`: three `qk broker start` processes on a real
// ZooKeeper (Debian's, started by the benchmark on a loopback port in a
// temporary directory and stopped by PID), measured the way a client and
// an operator see them.
//
// Sections (-only picks some, comma separated):
//
//	throughput  1 KiB records at full speed, `qk perf produce` processes:
//	            acks=1 to RF 1 and acks=all to RF 3 (min.insync.replicas=2),
//	            1 and 3 partitions, led by known brokers; records/s, MiB/s,
//	            p50/p99, the RF 3 / RF 1 ratio of each run and its median,
//	            CPU-seconds per GiB of each broker
//	lag         during the 1-partition acks=all runs, each follower's
//	            distance behind the leader every 100 ms (DescribeLogDirs)
//	shutdown    SIGTERM of the leader under a one-record-at-a-time producer:
//	            the longest gap between acknowledgements around it
//	failover    SIGKILL of the leader under that producer, with
//	            zookeeper.session.timeout.ms 18000 and 6000: kill to next
//	            acknowledgement, and every acknowledged record read back
//
// Why this shape: replication costs are ratios on this kind of machine (2
// cores shared by three brokers and the client, throughput swinging
// 1.5–2× between runs, see reference/machine-limits.md), so RF 3 and
// RF 1 are measured in the same run, interleaved, after an unmeasured
// warm-up run (first-touch page-cache writes on this VM cost ~5×), and
// each figure is the median of -runs runs. Availability figures are
// wall-clock times that a client sees, taken from the client's own
// acknowledgements, not from broker logs.
//
// A full run takes about 4-5 minutes on a quiet machine, most of it the
// failover section's waits for ZooKeeper to expire sessions; each
// throughput run writes 1 GiB (3 GiB to disk at RF 3), deleted after it.
//
// Usage, from the module root:
//
//	go run ./bench/cluster                 # everything, median of 5 runs, to bench/CLUSTER.md
//	go run ./bench/cluster -quick          # tiny counts, 1 run, no report file: checks the pipeline
//	go run ./bench/cluster -only failover -o /tmp/failover.md
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// config is the command line.
type config struct {
	qk        string
	runs      int
	warmup    int
	ballast   bool
	records   int
	kills     int
	shutdowns int
	sessions  []int // zookeeper.session.timeout.ms of the failover section
	quick     bool
	out       string
	only      []string
	timeout   time.Duration
}

// sections, in the order they run.
var sections = []string{"throughput", "lag", "shutdown", "failover"}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{sessions: []int{18000, 6000}}
	var only string
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.qk, "qk", "", "qk binary for the brokers and `qk perf` (default: go build ./cmd/qk into a temporary directory)")
	fs.IntVar(&c.runs, "runs", 5, "measured throughput runs per configuration; the tables show their median")
	fs.IntVar(&c.warmup, "warmup", 1, "unmeasured throughput runs first (they warm the page cache)")
	fs.BoolVar(&c.ballast, "ballast", true, "fill the free memory with a page-cache ballast file before the throughput runs (see benchproc.Ballast)")
	fs.IntVar(&c.records, "records", 1_000_000, "1 KiB records per throughput run (1 GiB: long enough that a run is seconds, not a tick of /proc CPU time)")
	fs.IntVar(&c.kills, "kills", 3, "leader kills per session timeout in the failover section")
	fs.IntVar(&c.shutdowns, "shutdowns", 3, "controlled shutdowns of the leader")
	fs.BoolVar(&c.quick, "quick", false, "tiny counts, one run, one kill (6 s sessions) and one shutdown, no report file: checks the pipeline, measures nothing")
	fs.StringVar(&c.out, "o", "bench/CLUSTER.md", "write the Markdown report here too (not with -quick); empty: stdout only")
	fs.StringVar(&only, "only", "", "run only these sections, comma separated: "+strings.Join(sections, ", "))
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "kill a `qk perf` process that has not finished after this long")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.only, err = parseOnly(only); err != nil {
		return config{}, err
	}
	if c.quick {
		c.runs, c.warmup, c.records, c.kills, c.shutdowns = 1, 0, 20_000, 1, 1
		c.sessions = []int{6000}
		c.out = ""
		c.timeout = min(c.timeout, time.Minute)
	}
	if c.runs < 1 || c.warmup < 0 || c.records < 1 || c.kills < 1 || c.shutdowns < 1 || c.timeout <= 0 {
		return config{}, errors.New("-runs, -records, -kills, -shutdowns and -timeout must be positive, -warmup not negative")
	}
	return c, nil
}

// parseOnly is the -only list, checked against the section names; empty
// means every section.
func parseOnly(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return slices.Clone(sections), nil
	}
	var v []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(sections, f) {
			return nil, fmt.Errorf("-only: unknown section %q (want some of %s)", f, strings.Join(sections, ", "))
		}
		if !slices.Contains(v, f) {
			v = append(v, f)
		}
	}
	return v, nil
}

func (c config) has(section string) bool { return slices.Contains(c.only, section) }

// tpWanted is which throughput configurations run: all four for the
// throughput section, only the 1-partition RF 3 one when just the lag is
// asked for (it is sampled during that run).
func (c config) tpWanted() []bool {
	want := make([]bool, len(tpConfigs))
	for j := range want {
		want[j] = c.has("throughput") || (c.has("lag") && j == tp1RF3)
	}
	return want
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	// Ctrl-C or SIGTERM cancels ctx: the perf process in flight is killed
	// and the deferred close stops every broker and ZooKeeper; Pdeathsig
	// covers a benchmark that dies without running its defers.
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
	h := header{Host: benchproc.Machine(), date: time.Now(), cfg: c}
	if v, err := exec.Command(c.qk, "--version").Output(); err == nil {
		h.qkVersion = strings.TrimSpace(string(v))
	}
	if v, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "zookeeper").Output(); err == nil {
		h.zkVersion = strings.TrimSpace(string(v))
	}

	start := time.Now()
	var res results
	runErr := measure(ctx, c, stderr, &res)
	h.took = time.Since(start)
	h.commands = res.commands
	fmt.Fprintf(stderr, "cluster: done in %v\n", h.took.Round(time.Second))
	if ctx.Err() != nil {
		return errors.New("interrupted; brokers and ZooKeeper stopped, no report")
	}
	if runErr != nil {
		res.err = runErr.Error()
	}
	text := markdown(h, &res)
	if _, err := io.WriteString(stdout, text); err != nil {
		return err
	}
	if c.out != "" && runErr == nil {
		if err := os.WriteFile(c.out, []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "cluster: wrote %s\n", c.out)
	}
	return runErr
}

// measure starts the cluster, runs the sections and stops the cluster;
// what it measured is in res even when it fails part way.
func measure(ctx context.Context, cfg config, log io.Writer, res *results) error {
	fmt.Fprintf(log, "cluster: starting ZooKeeper and 3 brokers (zookeeper.session.timeout.ms=%d)\n", cfg.sessions[0])
	c, err := benchproc.StartCluster(ctx, cfg.qk, 3, cfg.sessions[0], log)
	if err != nil {
		return err
	}
	err = measureOn(ctx, c, cfg, log, res)
	res.commands = c.Started
	c.Close(err == nil && ctx.Err() == nil)
	return err
}

// measureOn runs the sections on c.
func measureOn(ctx context.Context, c *benchproc.Cluster, cfg config, log io.Writer, res *results) error {
	var err error

	if (cfg.has("throughput") || cfg.has("lag")) && cfg.ballast && !cfg.quick {
		// 1 GiB left for the processes; the runs evict the ballast.
		b, err := benchproc.WriteBallast(filepath.Join(c.Root, "ballast"), 1<<30)
		if err != nil {
			return err
		}
		defer b.Remove()
		res.ballast = b.Bytes
		fmt.Fprintf(log, "cluster: %.1f GiB page-cache ballast written\n", float64(b.Bytes)/(1<<30))
	}
	if cfg.has("throughput") || cfg.has("lag") {
		fmt.Fprintln(log, "cluster: throughput")
		res.throughput, err = runThroughput(ctx, c, cfg, cfg.tpWanted(), cfg.has("lag"))
		res.lag = cfg.has("lag")
		if err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
	}
	if cfg.has("shutdown") {
		fmt.Fprintln(log, "cluster: controlled shutdown")
		sr, err := runShutdown(ctx, c, cfg.shutdowns)
		res.shutdown = &sr
		if err != nil {
			return fmt.Errorf("shutdown: %w", err)
		}
	}
	if cfg.has("failover") {
		for _, s := range cfg.sessions {
			if c.Session != s {
				fmt.Fprintf(log, "cluster: restarting the brokers with zookeeper.session.timeout.ms=%d\n", s)
				if err := c.RestartAll(ctx, s); err != nil {
					return fmt.Errorf("restart with session timeout %d ms: %w", s, err)
				}
			}
			fmt.Fprintf(log, "cluster: failover, session timeout %d ms\n", s)
			fr, err := runFailover(ctx, c, cfg.kills)
			res.failover = append(res.failover, fr)
			if err != nil {
				return fmt.Errorf("failover (session %d ms): %w", s, err)
			}
		}
	}
	return nil
}
