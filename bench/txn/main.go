// Command txn is qk's transactions benchmark, behind `make bench-txn`:
// three `qk broker start` processes on a real ZooKeeper (benchproc.Cluster,
// as bench/cluster), measured the way a client and an operator see them.
//
// Sections (-only picks some, comma separated):
//
//	produce  1 KiB records at full speed to a 1-partition RF 3 topic
//	         (min.insync.replicas=2), `qk perf produce` processes:
//	         transactional (--transactional-id, a commit every
//	         --transaction-duration-ms 100) against the same producer
//	         idempotent but not transactional; records/s, MiB/s, p50/p99,
//	         the ratio of each run and its median, broker CPU-seconds per GiB
//	consume  `qk perf consume` processes reading a topic filled by
//	         transactional producers (committed and aborted transactions)
//	         to its end, isolation.level=read_committed against
//	         read_uncommitted; the ratio of each run and its median
//	endtxn   EndTxn latency on RF 3: a franz-go transactional producer in
//	         this process, each transaction one record to each of 3
//	         partitions (each led by another broker), EndTransaction(commit)
//	         timed; p50, p99, p99.9 per run and their medians
//
// Why this shape: on this kind of machine (2 cores shared by three brokers
// and the client, throughput swinging 1.5–2× between runs) a cost is a
// ratio, so the two sides of each comparison are measured in the same run,
// interleaved, after an unmeasured warm-up run (first-touch page-cache
// writes on this VM cost ~5×), and each figure is the median of -runs runs.
//
// Usage, from the module root:
//
//	go run ./bench/txn -qk bin/qk          # everything, median of 5 runs, to bench/TXN.md
//	go run ./bench/txn -quick              # tiny counts, 1 run, no report file: checks the pipeline
//	go run ./bench/txn -only endtxn -o /tmp/endtxn.md
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
	qk         string
	runs       int
	warmup     int
	ballast    bool
	records    int // produce section, per run
	fill       int // consume section: committed records in the topic
	abortEvery int // consume section: every abortEvery-th transaction of each filling producer is aborted; 0: none
	txns       int // endtxn section, per run
	txnWarmup  int // endtxn section: unmeasured transactions at the start of each run
	quick      bool
	out        string
	only       []string
	timeout    time.Duration
	session    int
	txnEvery   time.Duration // --transaction-duration-ms of the produce section
	set        []string      // extra broker settings, key=value
}

// setFlag collects repeated -set key=value flags.
type setFlag []string

func (s *setFlag) String() string { return strings.Join(*s, " ") }

func (s *setFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	*s = append(*s, v)
	return nil
}

// sections, in the order they run.
var sections = []string{"produce", "consume", "endtxn"}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "txn:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{session: 18000, txnEvery: 100 * time.Millisecond, abortEvery: defaultAbortEvery}
	var only string
	fs := flag.NewFlagSet("txn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.qk, "qk", "", "qk binary for the brokers and `qk perf` (default: go build ./cmd/qk into a temporary directory)")
	fs.IntVar(&c.runs, "runs", 5, "measured runs per configuration; the tables show their median")
	fs.IntVar(&c.warmup, "warmup", 1, "unmeasured runs first (they warm the page cache, the coordinator and the brokers)")
	fs.BoolVar(&c.ballast, "ballast", true, "fill the free memory with a page-cache ballast file before the produce runs (see benchproc.Ballast)")
	fs.IntVar(&c.records, "records", 1_000_000, "1 KiB records per produce run (1 GiB)")
	fs.IntVar(&c.fill, "fill", 3_000_000, "committed 1 KiB records in the consume section's topic (aborted transactions come on top, see -abort-every; 3 GiB: a read takes seconds, not the ~0.7 s of 1 GiB)")
	fs.IntVar(&c.abortEvery, "abort-every", c.abortEvery, "abort every Nth transaction of each producer filling the consume section's topic; 0: none aborted (read_committed then skips nothing)")
	fs.IntVar(&c.txns, "txns", 200, "transactions per endtxn run (qk completes about 15 a second: the next transaction waits for the markers)")
	fs.IntVar(&c.txnWarmup, "txn-warmup", 50, "unmeasured transactions at the start of each endtxn run")
	fs.BoolVar(&c.quick, "quick", false, "tiny counts, one run, no warm-up, no report file: checks the pipeline, measures nothing")
	fs.StringVar(&c.out, "o", "bench/TXN.md", "write the Markdown report here too (not with -quick); empty: stdout only")
	fs.StringVar(&only, "only", "", "run only these sections, comma separated: "+strings.Join(sections, ", "))
	fs.Var((*setFlag)(&c.set), "set", "extra broker setting key=value, as `qk broker start --set` (repeatable; the report names them)")
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
		c.runs, c.warmup, c.records, c.fill, c.txns, c.txnWarmup = 1, 0, 20_000, 20_000, 20, 2
		c.out = ""
		c.timeout = min(c.timeout, time.Minute)
	}
	if c.runs < 1 || c.warmup < 0 || c.records < 1 || c.fill < 1 || c.txns < 1 || c.txnWarmup < 0 || c.timeout <= 0 || c.abortEvery < 0 || c.abortEvery == 1 {
		return config{}, errors.New("-runs, -records, -fill, -txns and -timeout must be positive, -warmup and -txn-warmup not negative, -abort-every 0 or above 1 (1 would abort every transaction)")
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
	h.load[0] = loadAvg()
	var res results
	runErr := measure(ctx, c, stderr, &res)
	h.took = time.Since(start)
	h.load[1] = loadAvg()
	fmt.Fprintf(stderr, "txn: done in %v\n", h.took.Round(time.Second))
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
		fmt.Fprintf(stderr, "txn: wrote %s\n", c.out)
	}
	return runErr
}

// measure starts the cluster, runs the sections and stops the cluster;
// what it measured is in res even when it fails part way.
func measure(ctx context.Context, cfg config, log io.Writer, res *results) error {
	fmt.Fprintln(log, "txn: starting ZooKeeper and 3 brokers")
	c, err := benchproc.StartCluster(ctx, cfg.qk, 3, cfg.session, log, cfg.set...)
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
	if cfg.has("produce") && cfg.ballast && !cfg.quick {
		// 1 GiB left for the processes; the runs evict the ballast.
		b, err := benchproc.WriteBallast(filepath.Join(c.Root, "ballast"), 1<<30)
		if err != nil {
			return err
		}
		defer b.Remove()
		res.ballast = b.Bytes
		fmt.Fprintf(log, "txn: %.1f GiB page-cache ballast written\n", float64(b.Bytes)/(1<<30))
	}
	if cfg.has("produce") {
		fmt.Fprintln(log, "txn: produce")
		var err error
		res.produce, err = runProduce(ctx, c, cfg, log)
		if err != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	if cfg.has("consume") {
		fmt.Fprintln(log, "txn: consume")
		var err error
		res.consume, err = runConsume(ctx, c, cfg, log)
		if err != nil {
			return fmt.Errorf("consume: %w", err)
		}
	}
	if cfg.has("endtxn") {
		fmt.Fprintln(log, "txn: endtxn")
		var err error
		res.endTxn, err = runEndTxn(ctx, c, cfg, log)
		if err != nil {
			return fmt.Errorf("endtxn: %w", err)
		}
	}
	return nil
}
