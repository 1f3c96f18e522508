package perf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrRecordsFailed is returned (wrapped, with the count) when records
// could not be produced; the run still finished and printed its stats.
var ErrRecordsFailed = errors.New("records failed")

// ProduceOptions are the settings of one `qk perf produce` run.
type ProduceOptions struct {
	Topic      string
	NumRecords int64
	RecordSize int      // each value this many bytes; or
	Payloads   [][]byte // values picked at random from these (--payload-file)
	Throughput float64  // records/s; negative: no limit
	Producers  int      // parallel clients sharing the count and the stats
	Keys       string   // none, random (8 random bytes) or N distinct keys
	Payload    string   // fixed (one payload reused) or random (never repeats within a batch)
	Warmup     int64    // the first Warmup records are sent but not counted

	// TransactionDuration, with Producer.TransactionalID set, commits a
	// transaction every so long, as Kafka's --transaction-duration-ms.
	TransactionDuration time.Duration

	ReportInterval time.Duration // progress every; Kafka's is fixed at 5 s
	PrintMetrics   bool
	JSON           bool

	Brokers     []string  // seed brokers (replace those in Client)
	Client      []kgo.Opt // connection options: client id, timeouts, -X
	Producer    ProducerConfig
	PingTimeout time.Duration // how long the cluster may take to answer first

	Stdout, Stderr io.Writer
}

// ProduceReport is one line of `qk perf produce --json`: "progress" for
// a reporting window (its records, bytes, errors and length), "final" for
// the counted records of the whole run, elapsed from the first counted
// send to the last acknowledgement. Bytes are key plus value bytes;
// latencies are milliseconds at microsecond precision.
type ProduceReport struct {
	Type          string    `json:"type"`
	Records       int64     `json:"records"`
	Bytes         int64     `json:"bytes"`
	Errors        int64     `json:"errors"`
	ElapsedS      float64   `json:"elapsed_s"`
	RecordsPerSec float64   `json:"records_per_sec"`
	MiBPerSec     float64   `json:"mib_per_sec"`
	LatencyMs     LatencyMs `json:"latency_ms"`
}

// LatencyMs are latency statistics in milliseconds.
type LatencyMs struct {
	Avg  float64 `json:"avg"`
	Max  float64 `json:"max"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

func (o *ProduceOptions) validate() error {
	switch {
	case o.Topic == "":
		return errors.New("--topic is required")
	case o.NumRecords <= 0:
		return errors.New("--num-records should be greater than zero")
	case o.RecordSize > 0 && len(o.Payloads) > 0:
		return errors.New("--record-size and --payload-file are mutually exclusive")
	case o.RecordSize <= 0 && len(o.Payloads) == 0:
		return errors.New("either --record-size or --payload-file must be given (--record-size should be greater than zero)")
	case o.Throughput == 0:
		return errors.New("--throughput 0 would never send: give records/s, or -1 for no limit")
	case o.Producers < 1:
		return errors.New("--producers should be at least 1")
	case o.Warmup < 0 || o.Warmup >= o.NumRecords:
		return errors.New("--warmup-records should be at least 0 and less than --num-records")
	case o.Payload != "fixed" && o.Payload != "random":
		return fmt.Errorf("--payload %q: want fixed or random", o.Payload)
	}
	if o.ReportInterval <= 0 {
		o.ReportInterval = 5 * time.Second
	}
	return nil
}

// Produce runs kafka-producer-perf-test: NumRecords records to Topic at
// Throughput, printing a progress line per ReportInterval and a final
// line, Kafka's ProducerPerformance text or JSON lines. Failed records are
// printed to Stderr and counted; if any failed, the error wraps
// ErrRecordsFailed after the stats were printed.
func Produce(ctx context.Context, o ProduceOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	src, err := newSource(o)
	if err != nil {
		return err
	}
	popts, err := o.Producer.Opts()
	if err != nil {
		return err
	}
	if b := o.Producer.BatchMaxBytes; b > 0 && int(b) < src.maxRecord+recordOverhead {
		// Kafka sends a record larger than batch.size in a batch of its
		// own; franz-go would refuse it, so the cap grows to fit.
		popts = append(popts, kgo.ProducerBatchMaxBytes(int32(src.maxRecord+recordOverhead)))
	}
	m := &metrics{}
	clients := make([]*kgo.Client, o.Producers)
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	for i := range clients {
		// Java clients ask for topics to be auto-created (the broker's
		// auto.create.topics.enable decides); franz-go does not by default.
		opts := slices.Concat(o.Client, []kgo.Opt{kgo.DefaultProduceTopic(o.Topic), kgo.AllowAutoTopicCreation(), kgo.WithHooks(m)}, popts)
		if len(o.Brokers) > 0 {
			opts = append(opts, kgo.SeedBrokers(o.Brokers...))
		}
		if id := o.Producer.TransactionalID; id != "" {
			if o.Producers > 1 {
				id = fmt.Sprintf("%s-%d", id, i)
			}
			opts = append(opts, kgo.TransactionalID(id))
		}
		if clients[i], err = kgo.NewClient(opts...); err != nil {
			return err
		}
	}
	if err := ping(ctx, clients[0], o.Brokers, o.PingTimeout); err != nil {
		return err
	}

	st := newProduceStats(o, m)
	thr := NewThrottler(o.Throughput, time.Now())
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		runErr  error
	)
	for id, cl := range clients {
		wg.Go(func() {
			if err := produceLoop(ctx, cl, o, src, thr, st, &next, uint64(id)); err != nil {
				errOnce.Do(func() { runErr = err })
			}
		})
	}
	wg.Wait()
	if runErr != nil {
		return runErr
	}
	st.final()
	if o.PrintMetrics && !o.JSON {
		id := o.Producer.ClientID
		if id == "" {
			id = "qk"
		}
		printMetrics(o.Stdout, m.producer(), id)
	}
	if n := st.total.errors; n > 0 {
		return fmt.Errorf("%d of %d %w", n, o.NumRecords, ErrRecordsFailed)
	}
	return nil
}

// recordOverhead bounds a record batch's header plus one record's framing.
const recordOverhead = 61 + 32

// produceLoop sends records until the shared count is used up, then
// waits for the acknowledgements.
func produceLoop(ctx context.Context, cl *kgo.Client, o ProduceOptions, src *source, thr *Throttler, st *produceStats, next *atomic.Int64, id uint64) error {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), id))
	txn := o.Producer.TransactionalID != ""
	var txnStart time.Time
	inTxn := false
	commit := func() error {
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		inTxn = false
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit transaction: %w", err)
		}
		return nil
	}
	for {
		i := next.Add(1) - 1
		if i >= o.NumRecords {
			break
		}
		if err := thr.Wait(ctx, i); err != nil {
			return err
		}
		if txn && !inTxn {
			if err := cl.BeginTransaction(); err != nil {
				return fmt.Errorf("begin transaction: %w", err)
			}
			inTxn, txnStart = true, time.Now()
		}
		r := src.record(rng, i)
		n := len(r.Key) + len(r.Value)
		counted := i >= o.Warmup
		sent := time.Now()
		cl.Produce(ctx, r, func(r *kgo.Record, err error) { st.done(r, sent, time.Now(), n, counted, err) })
		if inTxn && time.Since(txnStart) >= o.TransactionDuration {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	if inTxn {
		return commit()
	}
	return cl.Flush(ctx)
}

// source makes the records: keys and values as the options ask.
type source struct {
	fixed     []byte   // --payload fixed
	pool      []byte   // --payload random
	payloads  [][]byte // --payload-file
	size      int
	maxRecord int
	keys      [][]byte // N distinct keys; nil with randomKey: 8 random bytes
	randomKey bool
}

// letters is the alphabet of Kafka's random payloads (random.nextInt(26) + 65).
const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// minPool is the least size of the random pool. Windows are taken in
// order, so no bytes repeat within pool/size consecutive records: more
// than any batch holds, so compression finds nothing to share.
const minPool = 4 << 20

func newSource(o ProduceOptions) (*source, error) {
	s := &source{payloads: o.Payloads, size: o.RecordSize}
	for _, p := range o.Payloads {
		s.maxRecord = max(s.maxRecord, len(p))
	}
	s.maxRecord = max(s.maxRecord, o.RecordSize)
	switch o.Keys {
	case "none", "":
	case "random":
		s.randomKey = true
		s.maxRecord += 8
	default:
		n, err := strconv.Atoi(o.Keys)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--keys %q: want none, random or a number of distinct keys", o.Keys)
		}
		for i := range n {
			s.keys = append(s.keys, []byte(strconv.Itoa(i)))
		}
		s.maxRecord += len(s.keys[n-1])
	}
	if o.RecordSize > 0 {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
		if o.Payload == "random" {
			n := (max(minPool, 4*o.RecordSize) / o.RecordSize) * o.RecordSize
			s.pool = make([]byte, n)
			for i := range s.pool {
				s.pool[i] = byte(rng.Uint32())
			}
		} else {
			s.fixed = make([]byte, o.RecordSize)
			for i := range s.fixed {
				s.fixed[i] = letters[rng.IntN(len(letters))]
			}
		}
	}
	return s, nil
}

func (s *source) record(rng *rand.Rand, i int64) *kgo.Record {
	r := &kgo.Record{}
	switch {
	case s.payloads != nil:
		r.Value = s.payloads[rng.IntN(len(s.payloads))]
	case s.pool != nil:
		off := int(i%int64(len(s.pool)/s.size)) * s.size
		r.Value = s.pool[off : off+s.size : off+s.size]
	default:
		r.Value = s.fixed
	}
	switch {
	case s.randomKey:
		r.Key = make([]byte, 8)
		for j := range r.Key {
			r.Key[j] = byte(rng.Uint32())
		}
	case s.keys != nil:
		r.Key = s.keys[i%int64(len(s.keys))]
	}
	return r
}

// tally is the statistics of a set of acknowledged records. Latencies
// are in microseconds; the histogram has HdrHistogram's 3 significant
// digits, every record is in it (Kafka samples at most 500,000).
type tally struct {
	records, bytes, errors int64
	sumUs, maxUs           int64
	start                  time.Time
	hist                   *hdrhistogram.Histogram
}

// maxLatencyUs is the largest latency the histograms hold: an hour.
const maxLatencyUs = int64(time.Hour / time.Microsecond)

func newTally(start time.Time) tally {
	return tally{start: start, hist: hdrhistogram.New(1, maxLatencyUs, 3)}
}

func (t *tally) add(us int64, n int) {
	t.records++
	t.bytes += int64(n)
	t.sumUs += us
	t.maxUs = max(t.maxUs, us)
	_ = t.hist.RecordValue(min(max(us, 1), maxLatencyUs))
}

// avgMs is the mean latency; 0 (not NaN) without records.
func (t *tally) avgMs() float64 {
	if t.records == 0 {
		return 0
	}
	return float64(t.sumUs) / float64(t.records) / 1000
}

// pUs is a percentile of the latencies in microseconds, with Kafka's
// definition: the element at index (int)(q*n) of the sorted latencies,
// which is the rank HdrHistogram is asked for.
func (t *tally) pUs(q float64) int64 {
	if t.records == 0 {
		return 0
	}
	rank := int64(q/100*float64(t.records)) + 1
	// A bucket's highest equivalent value may pass the true maximum.
	return min(t.hist.ValueAtPercentile(float64(rank)/float64(t.records)*100), t.maxUs)
}

func (t *tally) report(typ string, elapsed time.Duration) ProduceReport {
	sec := elapsed.Seconds()
	rate := func(v float64) float64 {
		if sec <= 0 {
			return 0
		}
		return v / sec
	}
	us := func(v int64) float64 { return float64(v) / 1000 }
	return ProduceReport{
		Type: typ, Records: t.records, Bytes: t.bytes, Errors: t.errors,
		ElapsedS: sec, RecordsPerSec: rate(float64(t.records)), MiBPerSec: rate(float64(t.bytes) / (1 << 20)),
		LatencyMs: LatencyMs{
			Avg: math.Round(t.avgMs()*1000) / 1000, Max: us(t.maxUs),
			P50: us(t.pUs(50)), P95: us(t.pUs(95)), P99: us(t.pUs(99)), P999: us(t.pUs(99.9)),
		},
	}
}

// maxPrintedErrors bounds the per-record error lines: a dead cluster
// fails every record, and a million identical lines help nobody.
const maxPrintedErrors = 100

// produceStats gathers the acknowledgements of all producers, the whole
// run and the current reporting window, and prints the windows as they
// close (from the acknowledging goroutine, as Kafka's Stats.record does).
type produceStats struct {
	o       ProduceOptions
	m       *metrics
	mu      sync.Mutex
	total   tally
	window  tally
	last    time.Time // last counted acknowledgement
	printed int
	jsonEnc *json.Encoder
}

func newProduceStats(o ProduceOptions, m *metrics) *produceStats {
	return &produceStats{o: o, m: m, total: newTally(time.Time{}), window: newTally(time.Time{}), jsonEnc: json.NewEncoder(o.Stdout)}
}

// done records one acknowledgement; sent is when Produce was called.
func (s *produceStats) done(r *kgo.Record, sent, acked time.Time, n int, counted bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.m.recordErrors.Add(1)
		s.total.errors++
		s.window.errors++
		if s.printed < maxPrintedErrors {
			where := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				where = r.Topic // never partitioned: Partition is not set
			}
			fmt.Fprintf(s.o.Stderr, "error producing to %s: %v\n", where, err)
		} else if s.printed == maxPrintedErrors {
			fmt.Fprintf(s.o.Stderr, "more than %d records failed: further errors are only counted\n", maxPrintedErrors)
		}
		s.printed++
		return
	}
	s.m.recordsSent.Add(1)
	if !counted {
		return
	}
	// The run starts at the first counted send; with several producers
	// that may be acknowledged after a later one.
	if s.total.start.IsZero() || sent.Before(s.total.start) {
		s.total.start = sent
		if s.window.records == 0 || sent.Before(s.window.start) {
			s.window.start = sent
		}
	}
	us := acked.Sub(sent).Microseconds()
	s.total.add(us, n)
	s.window.add(us, n)
	if acked.After(s.last) {
		s.last = acked
	}
	if el := acked.Sub(s.window.start); el >= s.o.ReportInterval {
		s.print("progress", &s.window, el)
		s.window.hist.Reset()
		s.window = tally{start: acked, hist: s.window.hist}
	}
}

// final prints the whole run's line.
func (s *produceStats) final() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.print("final", &s.total, s.last.Sub(s.total.start))
}

// print writes one line: Kafka's ProducerPerformance format, or JSON.
//
// The window line is Kafka's printWindow. The final line is Kafka 3.x's
// printTotal, records/sec as %f; Kafka 4.0 prints it as %.1f. Percentiles
// are whole milliseconds, truncated, as Kafka's int latencies are; avg and
// max keep microseconds where Kafka has whole milliseconds.
func (s *produceStats) print(typ string, t *tally, elapsed time.Duration) {
	r := t.report(typ, elapsed)
	if s.o.JSON {
		_ = s.jsonEnc.Encode(r)
		return
	}
	mb := javaF(r.MiBPerSec, 2)
	if typ == "progress" {
		fmt.Fprintf(s.o.Stdout, "%d records sent, %s records/sec (%s MB/sec), %s ms avg latency, %s ms max latency.\n",
			r.Records, javaF(r.RecordsPerSec, 1), mb, javaF(t.avgMs(), 1), javaF(r.LatencyMs.Max, 1))
		return
	}
	ms := func(q float64) int64 { return t.pUs(q) / 1000 }
	fmt.Fprintf(s.o.Stdout, "%d records sent, %s records/sec (%s MB/sec), %s ms avg latency, %s ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.\n",
		r.Records, javaF(r.RecordsPerSec, 6), mb, javaF(t.avgMs(), 2), javaF(r.LatencyMs.Max, 2),
		ms(50), ms(95), ms(99), ms(99.9))
}

// ping checks that the cluster answers, so an unreachable one fails at
// once with one line naming it rather than after the delivery timeout.
func ping(ctx context.Context, cl *kgo.Client, brokers []string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		return fmt.Errorf("cannot reach cluster at %s: %w", strings.Join(brokers, ","), err)
	}
	return nil
}
