package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// The consume section's topic is written by fillProducers transactional
// producers at once, so their transactions interleave in the log; each
// transaction is txnRecords records, and every -abort-every-th one of
// each producer is aborted (defaultAbortEvery; none with 0).
const (
	consumeTopic      = "consume-txn"
	fillProducers     = 2
	txnRecords        = 1000
	defaultAbortEvery = 10
)

// isolation is one side of the consume comparison.
type isolation struct {
	level string // isolation.level
}

// isolations are the consume section's two sides.
var isolations = []isolation{{level: "read_uncommitted"}, {level: "read_committed"}}

const (
	isoUncommitted = iota
	isoCommitted
)

// fill is what the consume section's topic holds.
type fill struct {
	committed, aborted int // data records in committed and aborted transactions
	txns, abortedTxns  int
	took               time.Duration
}

// records is how many records a consumer at level sees: read_uncommitted
// returns the aborted ones too, neither returns the control records.
func (f fill) records(level string) int {
	if level == "read_committed" {
		return f.committed
	}
	return f.committed + f.aborted
}

// plan is how many committed records each of fillTopic's producers
// writes (the remainder to the first).
func plan(committed int) []int {
	per := make([]int, fillProducers)
	for i := range per {
		per[i] = committed / fillProducers
	}
	per[0] += committed % fillProducers
	return per
}

// fillTopic creates the consume section's topic (1 partition led by
// broker 0, RF 3, min.insync.replicas=2) and fills it with committed
// records by fillProducers franz-go transactional producers writing at
// once, each aborting one transaction in abortEvery (none with 0), then
// checks that the last stable offset has reached the high watermark.
func fillTopic(ctx context.Context, c *benchproc.Cluster, committed, abortEvery int) (fill, error) {
	if err := c.CreateTopic(ctx, benchproc.TopicSpec{Name: consumeTopic, Partitions: 1, RF: 3, MinISR: 2}); err != nil {
		return fill{}, err
	}
	value := make([]byte, recordSize)
	_, _ = rand.Read(value)
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		f    fill
		errs []error
	)
	for i, n := range plan(committed) {
		wg.Go(func() {
			got, err := fillOne(ctx, c.Addrs(), fmt.Sprintf("bench-txn-fill-%d", i), n, abortEvery, value)
			mu.Lock()
			defer mu.Unlock()
			f.committed += got.committed
			f.aborted += got.aborted
			f.txns += got.txns
			f.abortedTxns += got.abortedTxns
			if err != nil {
				errs = append(errs, fmt.Errorf("producer %d: %w", i, err))
			}
		})
	}
	wg.Wait()
	f.took = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return f, c.Explain(err)
	}
	return f, stable(ctx, c, consumeTopic)
}

// fillOne is one transactional producer of fillTopic: committed records
// in transactions of txnRecords, every abortEvery-th transaction aborted
// (none with 0).
func fillOne(ctx context.Context, addrs []string, txnID string, committed, abortEvery int, value []byte) (fill, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(consumeTopic),
		kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return fill{}, err
	}
	defer cl.Close()
	var f fill
	for t := 0; f.committed < committed; t++ {
		abort := abortEvery > 0 && t%abortEvery == abortEvery-1
		n := txnRecords
		if !abort {
			n = min(n, committed-f.committed)
		}
		if err := cl.BeginTransaction(); err != nil {
			return f, fmt.Errorf("transaction %d: begin: %w", t, err)
		}
		var perr error
		var once sync.Once
		for range n {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					once.Do(func() { perr = err })
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return f, fmt.Errorf("transaction %d: flush: %w", t, err)
		}
		if perr != nil {
			return f, fmt.Errorf("transaction %d: produce: %w", t, perr)
		}
		end := kgo.TryCommit
		if abort {
			end = kgo.TryAbort
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			return f, fmt.Errorf("transaction %d: end (commit %v): %w", t, !abort, err)
		}
		f.txns++
		if abort {
			f.abortedTxns++
			f.aborted += n
		} else {
			f.committed += n
		}
	}
	return f, nil
}

// stable waits until topic's partition 0 has its last stable offset at
// its high watermark: every transaction's marker written.
func stable(ctx context.Context, c *benchproc.Cluster, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()
	return c.Poll(ctx, time.Minute, topic+"'s last stable offset to reach its high watermark", func() error {
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		h, _ := hw.Lookup(topic, 0)
		l, _ := lso.Lookup(topic, 0)
		if h.Err != nil || l.Err != nil {
			return errors.Join(h.Err, l.Err)
		}
		if h.Offset != l.Offset {
			return fmt.Errorf("LSO %d, HW %d", l.Offset, h.Offset)
		}
		return nil
	})
}

// consumeArgs is the `qk perf consume` command line of one run: a fresh
// group, from the start, isolation.level from the properties file props.
func consumeArgs(addrs []string, topic, group, props string, messages int) []string {
	return []string{"perf", "consume",
		"-b", strings.Join(addrs, ","),
		"--topic", topic,
		"--messages", strconv.Itoa(messages),
		"--group", group,
		"--consumer.config", props,
		"--timeout", "30000",
		"--json",
	}
}

// consSample is one measured consume run of one side.
type consSample struct {
	records   int64
	fetchMS   float64 // elapsed less the group join
	recPerSec float64 // records returned per second of fetch time
	mibPerSec float64 // record bytes returned per second of fetch time
	logMiBps  float64 // the partition's data (committed and aborted) per second of fetch time
	cpuPerGiB float64 // broker 0 (the leader), per GiB of the partition's data
}

func (s consSample) String() string {
	return fmt.Sprintf("%s records in %.0f ms: %s rec/s %.1f MiB/s returned, %.1f MiB/s of log, leader %.2f CPU-s/GiB",
		benchproc.Group(float64(s.records)), s.fetchMS, benchproc.Group(s.recPerSec), s.mibPerSec, s.logMiBps, s.cpuPerGiB)
}

// consResults are the consume section's measured runs: runs[i][j] is run
// i of isolations[j].
type consResults struct {
	fill fill
	runs [][]consSample
}

// ratio is run i's read_committed over read_uncommitted speed: the time
// to read the whole partition read_uncommitted over the time
// read_committed took, the same log bytes being fetched either way.
func (r *consResults) ratio(i int) float64 {
	u, c := r.runs[i][isoUncommitted].fetchMS, r.runs[i][isoCommitted].fetchMS
	if u <= 0 || c <= 0 {
		return math.NaN()
	}
	return u / c
}

func (r *consResults) median(j int, fig func(consSample) float64) float64 {
	var v []float64
	for _, run := range r.runs {
		v = append(v, fig(run[j]))
	}
	return benchproc.Median(v)
}

func (r *consResults) medianRatio() float64 {
	var v []float64
	for i := range r.runs {
		if x := r.ratio(i); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return benchproc.Median(v)
}

// runConsume fills the topic once, then reads it to its end with each
// isolation level warmup+runs times, interleaved, the level read first
// alternating between runs.
func runConsume(ctx context.Context, c *benchproc.Cluster, cfg config, log io.Writer) (*consResults, error) {
	f, err := fillTopic(ctx, c, cfg.fill, cfg.abortEvery)
	if err != nil {
		return nil, fmt.Errorf("filling %s: %w", consumeTopic, err)
	}
	fmt.Fprintf(log, "txn:   filled %s in %v: %d transactions (%d aborted), %d committed and %d aborted records\n",
		consumeTopic, f.took.Round(time.Millisecond), f.txns, f.abortedTxns, f.committed, f.aborted)
	res := &consResults{fill: f}
	props := make([]string, len(isolations))
	for j, iso := range isolations {
		props[j] = filepath.Join(c.Root, iso.level+".properties")
		if err := os.WriteFile(props[j], []byte("isolation.level="+iso.level+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	logBytes := float64(f.committed+f.aborted) * recordSize
	for i := range cfg.warmup + cfg.runs {
		label := fmt.Sprintf("run %d/%d", i-cfg.warmup+1, cfg.runs)
		if i < cfg.warmup {
			label = fmt.Sprintf("warm-up %d/%d", i+1, cfg.warmup)
		}
		run := make([]consSample, len(isolations))
		order := []int{isoUncommitted, isoCommitted}
		if i%2 == 1 {
			order = []int{isoCommitted, isoUncommitted}
		}
		for _, j := range order {
			iso := isolations[j]
			want := f.records(iso.level)
			cpu0, err := c.CPU()
			if err != nil {
				return res, err
			}
			wctx, stopWatch := c.Watch(ctx)
			fin, err := benchproc.RunPerf(wctx, c.QK, consumeArgs(c.Addrs(), consumeTopic, fmt.Sprintf("bench-txn-%d-%d", i, j), props[j], want), cfg.timeout)
			stopWatch()
			if err != nil {
				return res, c.Explain(fmt.Errorf("%s, %s: %w", iso.level, label, err))
			}
			cpu1, err := c.CPU()
			if err != nil {
				return res, err
			}
			if err := fin.Complete(want, false); err != nil {
				return res, fmt.Errorf("%s, %s: qk perf consume: %w", iso.level, label, err)
			}
			s := consSample{records: fin.Records, fetchMS: fin.FetchMS, cpuPerGiB: (cpu1[0] - cpu0[0]) / (logBytes / gib)}
			if s.fetchMS <= 0 {
				s.fetchMS = fin.ElapsedS * 1000
			}
			if s.fetchMS > 0 {
				secs := s.fetchMS / 1000
				s.recPerSec = float64(fin.Records) / secs
				s.mibPerSec = float64(fin.Bytes) / mib / secs
				s.logMiBps = logBytes / mib / secs
			}
			fmt.Fprintf(log, "txn:   %-16s %s: %s\n", iso.level, label, s)
			run[j] = s
		}
		if i >= cfg.warmup {
			res.runs = append(res.runs, run)
		}
	}
	return res, nil
}
