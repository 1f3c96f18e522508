package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// The endtxn section's transactions: endTxnPartitions records, one to
// each partition of a topic whose partition i is led by broker i, so a
// commit has a marker for every broker to write.
const (
	endTxnTopic      = "endtxn"
	endTxnPartitions = 3
	maxLatencyUs     = 60_000_000
)

// endTxnSample is one run of the endtxn section, in ms.
type endTxnSample struct {
	txns                           int
	p50, p99, p999, max            float64 // EndTransaction(commit)
	cycleP50, cycleP99, txnsPerSec float64 // Begin to commit returned
	concurrentRetries              float64 // CONCURRENT_TRANSACTIONS back-offs per measured transaction
}

// concurrentCounter is a kgo.Logger that counts franz-go's back-offs on
// CONCURRENT_TRANSACTIONS (its debug line "... failed with
// CONCURRENT_TRANSACTIONS ..."): how often a transaction waited for the
// previous one's markers. It logs nothing.
type concurrentCounter struct{ n atomic.Int64 }

func (c *concurrentCounter) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (c *concurrentCounter) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "CONCURRENT_TRANSACTIONS") {
		c.n.Add(1)
	}
}

func (s endTxnSample) String() string {
	return fmt.Sprintf("%d transactions: EndTxn p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms; whole transaction p50 %.2f p99 %.2f ms, %.1f transactions/s, %.2f CONCURRENT_TRANSACTIONS back-offs each",
		s.txns, s.p50, s.p99, s.p999, s.max, s.cycleP50, s.cycleP99, s.txnsPerSec, s.concurrentRetries)
}

// endTxnResults are the section's measured runs.
type endTxnResults struct {
	runs []endTxnSample
}

func (r *endTxnResults) median(fig func(endTxnSample) float64) float64 {
	var v []float64
	for _, s := range r.runs {
		v = append(v, fig(s))
	}
	return benchproc.Median(v)
}

// runEndTxn creates the section's topic, then warmup+runs runs of
// cfg.txns transactions each, each run a new producer (a new
// transactional id, so a new InitProducerId and coordinator lookup,
// outside the measurement).
func runEndTxn(ctx context.Context, c *benchproc.Cluster, cfg config, log io.Writer) (*endTxnResults, error) {
	if err := c.CreateTopic(ctx, benchproc.TopicSpec{Name: endTxnTopic, Partitions: endTxnPartitions, RF: 3, MinISR: 2}); err != nil {
		return nil, err
	}
	res := &endTxnResults{}
	for i := range cfg.warmup + cfg.runs {
		label := fmt.Sprintf("run %d/%d", i-cfg.warmup+1, cfg.runs)
		if i < cfg.warmup {
			label = fmt.Sprintf("warm-up %d/%d", i+1, cfg.warmup)
		}
		wctx, stopWatch := c.Watch(ctx)
		s, err := endTxnRun(wctx, c.Addrs(), fmt.Sprintf("bench-txn-endtxn-%d", i), cfg.txnWarmup, cfg.txns)
		stopWatch()
		if err != nil {
			return res, c.Explain(fmt.Errorf("%s: %w", label, err))
		}
		fmt.Fprintf(log, "txn:   endtxn %s: %s\n", label, s)
		if i >= cfg.warmup {
			res.runs = append(res.runs, s)
		}
	}
	return res, nil
}

// endTxnRun runs warmup then n transactions with one producer:
// Begin, one record to each partition, ProduceSync (every record
// acknowledged), then EndTransaction(commit), timed alone. The records
// being acknowledged first, the time is the commit's as the client sees
// it: the EndTxn round trip to the coordinator (Kafka answers once its
// PrepareCommit is replicated in __transaction_state, RF 3, and writes
// the markers afterwards).
func endTxnRun(ctx context.Context, addrs []string, txnID string, warmup, n int) (endTxnSample, error) {
	var retries concurrentCounter
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(endTxnTopic),
		kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.WithLogger(&retries))
	if err != nil {
		return endTxnSample{}, err
	}
	defer cl.Close()
	endHist := hdrhistogram.New(1, maxLatencyUs, 3)
	cycleHist := hdrhistogram.New(1, maxLatencyUs, 3)
	value := make([]byte, recordSize)
	var measured time.Duration
	var retries0 int64
	for t := range warmup + n {
		if t == warmup {
			retries0 = retries.n.Load()
		}
		begin := time.Now()
		if err := cl.BeginTransaction(); err != nil {
			return endTxnSample{}, fmt.Errorf("transaction %d: begin: %w", t, err)
		}
		recs := make([]*kgo.Record, endTxnPartitions)
		for p := range recs {
			recs[p] = &kgo.Record{Partition: int32(p), Value: value}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return endTxnSample{}, fmt.Errorf("transaction %d: produce: %w", t, err)
		}
		end := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return endTxnSample{}, fmt.Errorf("transaction %d: commit: %w", t, err)
		}
		done := time.Now()
		if t < warmup {
			continue
		}
		measured += done.Sub(begin)
		_ = endHist.RecordValue(done.Sub(end).Microseconds())
		_ = cycleHist.RecordValue(done.Sub(begin).Microseconds())
	}
	ms := func(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	return endTxnSample{
		txns: n,
		p50:  ms(endHist, 50), p99: ms(endHist, 99), p999: ms(endHist, 99.9), max: float64(endHist.Max()) / 1000,
		cycleP50: ms(cycleHist, 50), cycleP99: ms(cycleHist, 99),
		txnsPerSec:        float64(n) / measured.Seconds(),
		concurrentRetries: float64(retries.n.Load()-retries0) / float64(n),
	}, nil
}
