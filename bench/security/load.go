package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

const (
	recordSize = 1024
	mib        = 1 << 20
	gib        = 1 << 30
	mbPerMiB   = mib / 1e6 // MB/s are 10^6 bytes a second, as in reference/machine-limits.md
)

// The two loads of each listener, in the order a run measures them: the
// consumer reads what the producer just wrote.
const (
	ldProduce = iota
	ldConsume
	numLoads
)

var loadNames = [numLoads]string{"produce", "consume"}

// produceArgs is the `qk perf produce` command line of a run over a
// listener: bench/suite's "produce 1 KiB acks=1 none" row, plus the
// listener's security settings.
func produceArgs(addr, topic string, records int, sec []string) []string {
	args := []string{"perf", "produce",
		"-b", addr,
		"--topic", topic,
		"--num-records", strconv.Itoa(records),
		"--record-size", strconv.Itoa(recordSize),
		"--throughput", "-1",
		"--acks", "1",
		"--compression", "none",
		"--linger", "5ms",
		"--payload", "random",
		"--producer-props", "enable.idempotence=false",
		"--json",
	}
	return append(args, sec...)
}

// consumeArgs is the `qk perf consume` command line that reads the run's
// records back over the same listener; idle is how long the consumer
// waits for a record before it gives up.
func consumeArgs(addr, topic string, records int, idle time.Duration, sec []string) []string {
	args := []string{"perf", "consume",
		"-b", addr,
		"--topic", topic,
		"--messages", strconv.Itoa(records),
		"--timeout", strconv.FormatInt(idle.Milliseconds(), 10),
		"--json",
	}
	return append(args, sec...)
}

// sample is one measured load over one listener.
type sample struct {
	recPerSec float64
	mbPerSec  float64 // 10^6 bytes of record values a second
	cpuPerGiB float64 // broker CPU-seconds per GiB of record values
}

// newSample turns a perf final line and the broker's CPU over the perf
// process into a sample. Bytes are record values; should the tool not
// report them, records × size is what was sent. A consumer's throughput
// is its fetch phase's when the tool reports one (after the group join),
// as kafka-consumer-perf-test's fetch.MB.sec, like bench/suite's; its
// CPU is the whole process's, join included.
func newSample(f benchproc.Final, ld, records int, cpu float64) sample {
	b := float64(f.Bytes)
	if b <= 0 {
		b = float64(records) * recordSize
	}
	rps, mibps := f.RecordsPerSec, f.MiBPerSec
	if ld == ldConsume && f.FetchRecordsPerSec > 0 && f.FetchMiBPerSec > 0 {
		rps, mibps = f.FetchRecordsPerSec, f.FetchMiBPerSec
	}
	if mibps == 0 && f.ElapsedS > 0 {
		mibps = b / mib / f.ElapsedS
	}
	return sample{recPerSec: rps, mbPerSec: mibps * mbPerMiB, cpuPerGiB: cpu / (b / gib)}
}

func (s sample) String() string {
	return fmt.Sprintf("%s rec/s %.1f MB/s %.2f CPU-s/GiB", benchproc.Group(s.recPerSec), s.mbPerSec, s.cpuPerGiB)
}

// round is one measured pass: run[ld][ln] is load ld over listener ln.
type round [numLoads][numListeners]sample

// results is everything the benchmark measured.
type results struct {
	runs     []round
	records  int
	ballast  int64    // bytes of the page-cache ballast, 0 without
	commands []string // the broker's and the SCRAM user's command lines
	err      string   // what stopped the benchmark early
}

// Figures of a sample the report takes medians and ratios of.
var (
	figRecPerSec = func(s sample) float64 { return s.recPerSec }
	figMBPerSec  = func(s sample) float64 { return s.mbPerSec }
	figCPUPerGiB = func(s sample) float64 { return s.cpuPerGiB }
)

// ratio is fig of listener ln over PLAINTEXT's for load ld in run i,
// both measured seconds apart; NaN when either is missing.
func (r *results) ratio(i, ld, ln int, fig func(sample) float64) float64 {
	x, y := fig(r.runs[i][ld][ln]), fig(r.runs[i][ld][lnPlaintext])
	if x <= 0 || y <= 0 || math.IsNaN(x) || math.IsNaN(y) {
		return math.NaN()
	}
	return x / y
}

// medianRatio is the median over the runs of the per-run ratio.
func (r *results) medianRatio(ld, ln int, fig func(sample) float64) float64 {
	var v []float64
	for i := range r.runs {
		if x := r.ratio(i, ld, ln, fig); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return benchproc.Median(v)
}

// median of one figure of load ld over listener ln over the runs.
func (r *results) median(ld, ln int, fig func(sample) float64) float64 {
	var v []float64
	for _, run := range r.runs {
		if x := fig(run[ld][ln]); x > 0 {
			v = append(v, x)
		}
	}
	return benchproc.Median(v)
}

// runLoads measures warmup+runs passes; each pass goes listener by
// listener, producing a fresh topic's records over it and reading them
// back over it, so a slow minute of the shared machine is spread over
// all three. Pass i starts at a different listener (order), so that
// none is always the first after a topic deletion or the last before.
func runLoads(ctx context.Context, b *secBroker, cfg config, log io.Writer, res *results) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.listeners[lnPlaintext].addr))
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()
	b.log = log
	for i := range cfg.warmup + cfg.runs {
		label := fmt.Sprintf("run %d/%d", i-cfg.warmup+1, cfg.runs)
		if i < cfg.warmup {
			label = fmt.Sprintf("warm-up %d/%d", i+1, cfg.warmup)
		}
		var r round
		for _, ln := range order(i) {
			l := b.listeners[ln]
			topic := fmt.Sprintf("sec-%d-%s", i, strings.ToLower(l.name))
			p, c, err := b.pass(ctx, cfg, adm, ln, topic)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", l.name, label, err)
			}
			fmt.Fprintf(log, "security:   %-9s %-12s produce %s | consume %s\n", l.name, label, p, c)
			r[ldProduce][ln], r[ldConsume][ln] = p, c
		}
		if i >= cfg.warmup {
			res.runs = append(res.runs, r)
		}
	}
	return nil
}

// order is the listeners in the order pass i measures them: rotated by
// one each pass.
func order(i int) []int {
	v := make([]int, numListeners)
	for k := range v {
		v[k] = (i + k) % numListeners
	}
	return v
}

// pass is one listener's produce and consume of a run, on a fresh
// one-partition topic deleted afterwards.
func (b *secBroker) pass(ctx context.Context, cfg config, adm *kadm.Client, ln int, topic string) (sample, sample, error) {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := adm.CreateTopic(actx, 1, 1, nil, topic)
	cancel()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return sample{}, sample{}, fmt.Errorf("create topic %s: %w", topic, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := adm.DeleteTopic(dctx, topic); err != nil {
			fmt.Fprintf(b.log, "security: delete topic %s: %v (its data stays until the benchmark ends)\n", topic, err)
		}
	}()
	addr, sec := b.listeners[ln].addr, securityArgs(ln, b.pki.caFile)
	p, err := b.measureOne(ctx, cfg, ldProduce, produceArgs(addr, topic, cfg.records, sec), cfg.records)
	if err != nil {
		return sample{}, sample{}, err
	}
	c, err := b.measureOne(ctx, cfg, ldConsume, consumeArgs(addr, topic, cfg.records, min(cfg.timeout, 30*time.Second), sec), cfg.records)
	return p, c, err
}

// measureOne runs one `qk perf` process with the broker's CPU read just
// before and after it.
func (b *secBroker) measureOne(ctx context.Context, cfg config, ld int, args []string, records int) (sample, error) {
	cpu0, err := b.proc.CPUSeconds()
	if err != nil {
		return sample{}, err
	}
	f, err := benchproc.RunPerf(ctx, cfg.qk, args, cfg.timeout)
	if err != nil {
		return sample{}, b.explain(err)
	}
	cpu1, err := b.proc.CPUSeconds()
	if err != nil {
		return sample{}, b.explain(err)
	}
	if err := f.Complete(records, ld == ldProduce); err != nil {
		return sample{}, fmt.Errorf("qk perf %s: %w", loadNames[ld], err)
	}
	return newSample(f, ld, records, cpu1-cpu0), nil
}

// explain adds the broker's exit and log tail to err when it has died.
func (b *secBroker) explain(err error) error {
	if b.proc.Alive() {
		return err
	}
	return fmt.Errorf("%w\nbroker (pid %d) died: %s\nbroker log:\n%s", err, b.proc.Pid(), b.proc.ExitStatus(), b.proc.LogTail(4<<10))
}
