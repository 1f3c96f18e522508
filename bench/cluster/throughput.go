package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
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
)

// tpConfig is one configuration of the throughput section.
type tpConfig struct {
	name       string
	partitions int
	rf         int
	acks       string // "1" or "all"
}

// tpConfigs are the section's four configurations, in the order each run
// measures them. RF 1 and RF 3 of one partition count sit side by side,
// so the ratio of a run divides figures taken a few seconds apart.
var tpConfigs = []tpConfig{
	{name: "1 partition, RF 1, acks=1", partitions: 1, rf: 1, acks: "1"},
	{name: "1 partition, RF 3, acks=all", partitions: 1, rf: 3, acks: "all"},
	{name: "3 partitions, RF 1, acks=1", partitions: 3, rf: 1, acks: "1"},
	{name: "3 partitions, RF 3, acks=all", partitions: 3, rf: 3, acks: "all"},
}

// Indexes into tpConfigs.
const (
	tp1RF1 = iota
	tp1RF3
	tp3RF1
	tp3RF3
)

// topic is the topic a run of t writes to; RF 3 topics have
// min.insync.replicas=2, so acks=all waits for a follower and survives
// the loss of one.
func (t tpConfig) topic(name string) benchproc.TopicSpec {
	s := benchproc.TopicSpec{Name: name, Partitions: t.partitions, RF: t.rf}
	if t.rf == 3 {
		s.MinISR = 2
	}
	return s
}

// perfArgs is the `qk perf produce` command line of a run of t. acks=all
// runs are idempotent (franz-go's and Kafka's default), acks=1 runs cannot
// be; values are random so nothing compresses by accident.
func perfArgs(t tpConfig, addrs []string, topic string, records int) []string {
	idem := "false"
	if t.acks == "all" {
		idem = "true"
	}
	return []string{"perf", "produce",
		"-b", strings.Join(addrs, ","),
		"--topic", topic,
		"--num-records", strconv.Itoa(records),
		"--record-size", strconv.Itoa(recordSize),
		"--throughput", "-1",
		"--acks", t.acks,
		"--payload", "random",
		"--producer-props", "enable.idempotence=" + idem,
		"--json",
	}
}

// tpSample is one measured run of one configuration.
type tpSample struct {
	recPerSec, mibPerSec float64
	p50, p99             float64   // ms
	cpuPerGiB            []float64 // by broker id: CPU-seconds per GiB produced
	firstWrite           float64   // ms: the priming write to the fresh topic
	lag                  *lagSample
}

// newTPSample turns a perf final line and each broker's CPU over the run
// into a sample. Bytes are record values; should the tool not report
// them, records × size is what was sent.
func newTPSample(f benchproc.Final, records int, cpu []float64) tpSample {
	bytes := float64(f.Bytes)
	if bytes <= 0 {
		bytes = float64(records) * recordSize
	}
	s := tpSample{recPerSec: f.RecordsPerSec, mibPerSec: f.MiBPerSec}
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

// tpResults are the throughput section's measured runs: runs[i][j] is
// run i of tpConfigs[j] (a zero sample for a configuration not run).
type tpResults struct {
	runs    [][]tpSample
	only    []bool // by configuration: measured at all
	records int
}

// ratio is run i's records/s of configuration a over b: the RF 3 / RF 1
// ratio of one run, both measured seconds apart.
func (r *tpResults) ratio(i, a, b int) float64 {
	x, y := r.runs[i][a].recPerSec, r.runs[i][b].recPerSec
	if y <= 0 || x <= 0 {
		return math.NaN()
	}
	return x / y
}

// median of one figure of configuration j over the runs.
func (r *tpResults) median(j int, fig func(tpSample) float64) float64 {
	var v []float64
	for _, run := range r.runs {
		if f := fig(run[j]); !math.IsNaN(f) {
			v = append(v, f)
		}
	}
	return benchproc.Median(v)
}

// medianRatio is the median over runs of the per-run ratio a/b.
func (r *tpResults) medianRatio(a, b int) float64 {
	var v []float64
	for i := range r.runs {
		if x := r.ratio(i, a, b); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return benchproc.Median(v)
}

// runThroughput measures the configurations picked by want, warmup+runs
// times, interleaved: each run goes through every configuration once
// before the next run starts, so a slow minute on a shared machine is
// spread over all of them. With lag it samples the followers' lag during
// the measured runs of the 1-partition RF 3 configuration.
func runThroughput(ctx context.Context, c *benchproc.Cluster, cfg config, want []bool, lag bool) (*tpResults, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()

	res := &tpResults{only: want, records: cfg.records}
	for i := range cfg.warmup + cfg.runs {
		label := fmt.Sprintf("run %d/%d", i-cfg.warmup+1, cfg.runs)
		if i < cfg.warmup {
			label = fmt.Sprintf("warm-up %d/%d", i+1, cfg.warmup)
		}
		run := make([]tpSample, len(tpConfigs))
		for j, t := range tpConfigs {
			if !want[j] {
				continue
			}
			sampleLag := lag && j == tp1RF3 && i >= cfg.warmup
			s, err := throughputRun(ctx, c, cfg, t, fmt.Sprintf("tp-%d-%d", i, j), adm, sampleLag)
			if err != nil {
				return res, fmt.Errorf("%s, %s: %w", t.name, label, err)
			}
			fmt.Fprintf(c.Log, "cluster:   %-30s %s: %s\n", t.name, label, s)
			run[j] = s
		}
		if i >= cfg.warmup {
			res.runs = append(res.runs, run)
		}
	}
	return res, nil
}

func (s tpSample) String() string {
	str := fmt.Sprintf("%s rec/s %.1f MiB/s p50 %.2f p99 %.2f ms first write %.0f ms CPU-s/GiB", benchproc.Group(s.recPerSec), s.mibPerSec, s.p50, s.p99, s.firstWrite)
	for id, c := range s.cpuPerGiB {
		str += fmt.Sprintf(" b%d %.2f", id, c)
	}
	if s.lag != nil {
		for _, f := range s.lag.followers {
			str += fmt.Sprintf(" lag b%d p99 %.0f KiB", f.id, f.p99/1024)
		}
	}
	return str
}

// throughputRun is one run of t: a fresh topic, primed, each broker's
// CPU read just before and after the `qk perf produce` process, the lag
// sampler alongside it when asked, and the topic's deletion.
func throughputRun(ctx context.Context, c *benchproc.Cluster, cfg config, t tpConfig, topic string, adm *kadm.Client, sampleLag bool) (tpSample, error) {
	if err := c.CreateTopic(ctx, t.topic(topic)); err != nil {
		return tpSample{}, err
	}
	defer c.DeleteTopic(ctx, topic)
	first, err := prime(ctx, c.Addrs(), topic, t)
	if err != nil {
		return tpSample{}, c.Explain(err)
	}
	cpu0, err := c.CPU()
	if err != nil {
		return tpSample{}, err
	}
	var lagDone <-chan lagTrace
	stopLag := func() {}
	if sampleLag {
		lctx, cancel := context.WithCancel(ctx)
		stopLag = cancel
		lagDone = sampleLagLoop(lctx, adm, topic, 0, []int32{1, 2}, 100*time.Millisecond)
	}
	wctx, stopWatch := c.Watch(ctx)
	f, err := benchproc.RunPerf(wctx, c.QK, perfArgs(t, c.Addrs(), topic, cfg.records), cfg.timeout)
	stopWatch()
	stopLag()
	if err != nil {
		return tpSample{}, c.Explain(err)
	}
	cpu1, err := c.CPU()
	if err != nil {
		return tpSample{}, err
	}
	if err := f.Complete(cfg.records, true); err != nil {
		return tpSample{}, c.Explain(fmt.Errorf("qk perf produce: %w", err))
	}
	for i := range cpu1 {
		cpu1[i] -= cpu0[i]
	}
	s := newTPSample(f, cfg.records, cpu1)
	s.firstWrite = float64(first) / float64(time.Millisecond)
	if lagDone != nil {
		tr := <-lagDone
		size, err := partitionSizes(ctx, adm, topic, 0)
		if err != nil {
			return tpSample{}, fmt.Errorf("leader's size after the run: %w", err)
		}
		l := tr.summary(float64(size[0]) / float64(cfg.records))
		s.lag = &l
	}
	return s, nil
}

// prime writes one record to each partition of a fresh topic with t's
// acks and waits for the acknowledgements, before the measured run: the
// first acks=all write to a new partition waits for the followers' first
// fetches of it, which here took up to a second, a cost of creating a
// topic rather than of replicating a stream, and one that would land in
// every RF 3 run since each run has a topic of its own. How long it took
// is reported on its own.
func prime(ctx context.Context, addrs []string, topic string, t tpConfig) (time.Duration, error) {
	acks := kgo.LeaderAck()
	opts := []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
	if t.acks == "all" {
		acks = kgo.AllISRAcks()
	} else {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(append(opts, kgo.RequiredAcks(acks))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	// Metadata first, so the time is the write's and not the client's
	// start-up.
	if err := cl.Ping(ctx); err != nil {
		return 0, fmt.Errorf("prime %s: %w", topic, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := range t.partitions {
		recs = append(recs, &kgo.Record{Partition: int32(p), Value: make([]byte, recordSize)})
	}
	start := time.Now()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return 0, fmt.Errorf("prime %s: %w", topic, err)
	}
	return time.Since(start), nil
}

// partitionSizes asks every broker (DescribeLogDirs, in parallel) for the
// size of its replica of topic-p, by broker id.
func partitionSizes(ctx context.Context, adm *kadm.Client, topic string, p int32) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var set kadm.TopicsSet
	set.Add(topic, p)
	d, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, err
	}
	sizes := make(map[int32]int64)
	for id, dirs := range d {
		if dp, ok := dirs.LookupPartition(topic, p); ok {
			sizes[id] = dp.Size
		}
	}
	return sizes, nil
}

// lagTrace is what the lag sampler saw: per follower, leader size minus
// follower size in bytes at each sample.
type lagTrace struct {
	lags   map[int32][]int64
	failed int // samples whose DescribeLogDirs failed
}

// sampleLagLoop samples, every interval until ctx ends and once more
// then (the moment the perf process ended), each follower's lag behind
// leader on topic-p, and sends what it saw. Only samples once the leader
// holds data count, so the moments before the producer starts do not pull
// the percentiles to zero. It is bounded by ctx, which ends with the perf
// process.
func sampleLagLoop(ctx context.Context, adm *kadm.Client, topic string, leader int32, followers []int32, interval time.Duration) <-chan lagTrace {
	out := make(chan lagTrace, 1)
	go func() {
		tr := lagTrace{lags: make(map[int32][]int64)}
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			last := false
			select {
			case <-ctx.Done():
				last = true
			case <-tick.C:
			}
			sctx := ctx
			if last {
				sctx = context.WithoutCancel(ctx)
			}
			sizes, err := partitionSizes(sctx, adm, topic, 0)
			if err != nil {
				tr.failed++
			} else {
				tr.add(sizes, leader, followers)
			}
			if last {
				out <- tr
				return
			}
		}
	}()
	return out
}

// add records one sample of replica sizes, if the leader holds data.
func (tr *lagTrace) add(sizes map[int32]int64, leader int32, followers []int32) {
	ls, ok := sizes[leader]
	if !ok || ls == 0 {
		return
	}
	for _, f := range followers {
		if fs, ok := sizes[f]; ok {
			tr.lags[f] = append(tr.lags[f], ls-fs)
		}
	}
}

// lagSample is one run's lag, per follower.
type lagSample struct {
	followers      []followerLag
	bytesPerRecord float64 // the leader's log bytes per record produced
	failed         int
}

// followerLag is one follower's lag in bytes over a run.
type followerLag struct {
	id            int32
	samples       int
	p50, p99, max float64
}

// summary is the lag's percentiles per follower. A negative lag (the
// follower's size read a moment after the leader's) counts as 0.
func (tr lagTrace) summary(bytesPerRecord float64) lagSample {
	l := lagSample{bytesPerRecord: bytesPerRecord, failed: tr.failed}
	for _, id := range slices.Sorted(maps.Keys(tr.lags)) {
		var v []float64
		for _, x := range tr.lags[id] {
			v = append(v, float64(max(x, 0)))
		}
		l.followers = append(l.followers, followerLag{id: id, samples: len(v),
			p50: percentile(v, 50), p99: percentile(v, 99), max: percentile(v, 100)})
	}
	return l
}

// percentile is the nearest-rank q-th percentile of v (q in (0, 100]),
// NaN for no values: p99 of 150 samples is the 149th smallest.
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	rank := int(math.Ceil(q / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
