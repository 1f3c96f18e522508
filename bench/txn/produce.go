package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

const (
	recordSize = 1024
	mib        = 1 << 20
	gib        = 1 << 30
)

// producer is one side of the produce comparison.
type producer struct {
	name          string
	transactional bool
}

// producers are the produce section's two sides, in the order each run
// measures them.
var producers = []producer{
	{name: "idempotent, not transactional"},
	{name: "transactional, commit every 100 ms", transactional: true},
}

// Indexes into producers.
const (
	prodIdempotent = iota
	prodTransactional
)

// produceTopic is the topic of a produce run: 1 partition led by broker 0,
// RF 3 with min.insync.replicas=2, so acks=all waits for a follower.
func produceTopic(name string) benchproc.TopicSpec {
	return benchproc.TopicSpec{Name: name, Partitions: 1, RF: 3, MinISR: 2}
}

// produceArgs is the `qk perf produce` command line of a run of p; both
// sides are acks=all and idempotent, the transactional one commits every
// txnEvery; values are random so nothing compresses by accident.
func produceArgs(p producer, addrs []string, topic, txnID string, records int, txnEvery time.Duration) []string {
	args := []string{"perf", "produce",
		"-b", strings.Join(addrs, ","),
		"--topic", topic,
		"--num-records", strconv.Itoa(records),
		"--record-size", strconv.Itoa(recordSize),
		"--throughput", "-1",
		"--acks", "all",
		"--payload", "random",
		"--producer-props", "enable.idempotence=true", "acks=all",
	}
	if p.transactional {
		args = append(args, "--transactional-id", txnID, "--transaction-duration-ms", strconv.FormatInt(txnEvery.Milliseconds(), 10))
	}
	return append(args, "--json")
}

// prodSample is one measured produce run of one side.
type prodSample struct {
	recPerSec, mibPerSec float64
	p50, p99             float64   // ms
	cpuPerGiB            []float64 // by broker id
}

func (s prodSample) String() string {
	str := fmt.Sprintf("%s rec/s %.1f MiB/s p50 %.2f p99 %.2f ms CPU-s/GiB", benchproc.Group(s.recPerSec), s.mibPerSec, s.p50, s.p99)
	for id, c := range s.cpuPerGiB {
		str += fmt.Sprintf(" b%d %.2f", id, c)
	}
	return str
}

// newProdSample turns a perf final line and each broker's CPU over the
// run into a sample.
func newProdSample(f benchproc.Final, records int, cpu []float64) prodSample {
	bytes := float64(f.Bytes)
	if bytes <= 0 {
		bytes = float64(records) * recordSize
	}
	s := prodSample{recPerSec: f.RecordsPerSec, mibPerSec: f.MiBPerSec}
	if s.mibPerSec == 0 && f.ElapsedS > 0 {
		s.mibPerSec = bytes / mib / f.ElapsedS
	}
	if f.Latency != nil {
		s.p50, s.p99 = f.Latency.P50, f.Latency.P99
	}
	for _, c := range cpu {
		s.cpuPerGiB = append(s.cpuPerGiB, c/(bytes/gib))
	}
	return s
}

// prodResults are the produce section's measured runs: runs[i][j] is run
// i of producers[j].
type prodResults struct {
	runs    [][]prodSample
	records int
}

// ratio is run i's transactional records/s over its idempotent records/s.
func (r *prodResults) ratio(i int) float64 {
	x, y := r.runs[i][prodTransactional].recPerSec, r.runs[i][prodIdempotent].recPerSec
	if x <= 0 || y <= 0 {
		return math.NaN()
	}
	return x / y
}

func (r *prodResults) median(j int, fig func(prodSample) float64) float64 {
	var v []float64
	for _, run := range r.runs {
		v = append(v, fig(run[j]))
	}
	return benchproc.Median(v)
}

func (r *prodResults) medianRatio() float64 {
	var v []float64
	for i := range r.runs {
		if x := r.ratio(i); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return benchproc.Median(v)
}

// runProduce measures both producers warmup+runs times, interleaved: each
// run measures both sides before the next run starts, the side measured
// first alternating between runs, so neither always runs on the page
// cache the other left.
func runProduce(ctx context.Context, c *benchproc.Cluster, cfg config, log io.Writer) (*prodResults, error) {
	res := &prodResults{records: cfg.records}
	for i := range cfg.warmup + cfg.runs {
		label := fmt.Sprintf("run %d/%d", i-cfg.warmup+1, cfg.runs)
		if i < cfg.warmup {
			label = fmt.Sprintf("warm-up %d/%d", i+1, cfg.warmup)
		}
		run := make([]prodSample, len(producers))
		order := []int{prodIdempotent, prodTransactional}
		if i%2 == 1 {
			order = []int{prodTransactional, prodIdempotent}
		}
		for _, j := range order {
			p := producers[j]
			s, err := produceRun(ctx, c, cfg, p, fmt.Sprintf("produce-%d-%d", i, j), fmt.Sprintf("bench-txn-produce-%d", i))
			if err != nil {
				return res, fmt.Errorf("%s, %s: %w", p.name, label, err)
			}
			fmt.Fprintf(log, "txn:   %-36s %s: %s\n", p.name, label, s)
			run[j] = s
		}
		if i >= cfg.warmup {
			res.runs = append(res.runs, run)
		}
	}
	return res, nil
}

// produceRun is one run of p: a fresh topic, primed, each broker's CPU
// read just before and after the `qk perf produce` process, and the
// topic's deletion.
func produceRun(ctx context.Context, c *benchproc.Cluster, cfg config, p producer, topic, txnID string) (prodSample, error) {
	if err := c.CreateTopic(ctx, produceTopic(topic)); err != nil {
		return prodSample{}, err
	}
	defer c.DeleteTopic(ctx, topic)
	if err := prime(ctx, c.Addrs(), topic); err != nil {
		return prodSample{}, c.Explain(err)
	}
	cpu0, err := c.CPU()
	if err != nil {
		return prodSample{}, err
	}
	wctx, stopWatch := c.Watch(ctx)
	f, err := benchproc.RunPerf(wctx, c.QK, produceArgs(p, c.Addrs(), topic, txnID, cfg.records, cfg.txnEvery), cfg.timeout)
	stopWatch()
	if err != nil {
		return prodSample{}, c.Explain(err)
	}
	cpu1, err := c.CPU()
	if err != nil {
		return prodSample{}, err
	}
	if err := f.Complete(cfg.records, true); err != nil {
		return prodSample{}, c.Explain(fmt.Errorf("qk perf produce: %w", err))
	}
	for i := range cpu1 {
		cpu1[i] -= cpu0[i]
	}
	return newProdSample(f, cfg.records, cpu1), nil
}

// prime writes one record (acks=all, idempotent) to partition 0 of a fresh
// topic and waits for it before the measured run: the first acks=all write
// to a new partition waits for the followers' first fetches of it, a cost
// of creating the topic and not of either producer.
func prime(ctx context.Context, addrs []string, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, recordSize)}).FirstErr(); err != nil {
		return fmt.Errorf("prime %s: %w", topic, err)
	}
	return nil
}
