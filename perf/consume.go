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
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumeOptions are the settings of one `qk perf consume` run. Group,
// fetch size (FetchPartitionMax) and where to start (OffsetReset) are in
// Consumer, as Kafka's tool puts them in the consumer properties.
type ConsumeOptions struct {
	Topic          string
	Messages       int64
	Timeout        time.Duration // longest wait for a record before giving up
	ReportInterval time.Duration
	Detailed       bool // --show-detailed-stats
	HideHeader     bool
	PrintMetrics   bool
	JSON           bool
	DateFormat     string // SimpleDateFormat pattern

	Brokers     []string
	Client      []kgo.Opt
	Consumer    ConsumerConfig
	PingTimeout time.Duration

	Stdout, Stderr io.Writer
}

// ConsumeReport is `qk perf consume --json`'s final object (and, with
// --show-detailed-stats, its "progress" objects for each interval): the
// fields of Kafka's CSV row. Bytes are key plus value bytes; fetch_ms is
// the elapsed time less the time spent in rebalances.
type ConsumeReport struct {
	Type               string  `json:"type"`
	Records            int64   `json:"records"`
	Bytes              int64   `json:"bytes"`
	ElapsedS           float64 `json:"elapsed_s"`
	RecordsPerSec      float64 `json:"records_per_sec"`
	MiBPerSec          float64 `json:"mib_per_sec"`
	RebalanceMs        int64   `json:"rebalance_ms"`
	FetchMs            int64   `json:"fetch_ms"`
	FetchMiBPerSec     float64 `json:"fetch_mib_per_sec"`
	FetchRecordsPerSec float64 `json:"fetch_records_per_sec"`
}

// NewGroupID is Kafka's default --group: perf-consumer-<0..99999>.
func NewGroupID() string { return fmt.Sprintf("perf-consumer-%d", rand.IntN(100_000)) }

// rebalances measures time spent joining the group, as Kafka's
// ConsumerPerfRebListener does: from a revocation (or the start) to the
// following assignment, in total and since the last progress line.
type rebalances struct {
	mu        sync.Mutex
	joinStart int64 // ms
	total     int64
	round     int64
}

func (r *rebalances) revoked(context.Context, *kgo.Client, map[string][]int32) {
	r.mu.Lock()
	r.joinStart = time.Now().UnixMilli()
	r.mu.Unlock()
}

func (r *rebalances) assigned(context.Context, *kgo.Client, map[string][]int32) {
	r.mu.Lock()
	el := time.Now().UnixMilli() - r.joinStart
	r.total += el
	r.round += el
	r.mu.Unlock()
}

// takeRound returns the rebalance time since the last call and resets it.
// (Kafka means to do this, but resets a copy the listener never sees, so
// its detailed rows show 0 after the first interval.)
func (r *rebalances) takeRound() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.round
	r.round = 0
	return n
}

// Consume runs kafka-consumer-perf-test: it consumes Messages records of
// Topic as a member of a group and prints Kafka's ConsumerPerformance
// CSV (or JSON).
//
// Differences from Kafka's tool: it stops at exactly Messages records
// (Kafka counts the whole last poll); the timeout warning goes to Stderr,
// not stdout, so stdout stays CSV; the rebalance time of a detailed row
// is that interval's. As in Kafka, a timeout is not an error and the
// elapsed time includes the wait.
func Consume(ctx context.Context, o ConsumeOptions) error {
	switch {
	case o.Topic == "":
		return errors.New("--topic is required")
	case o.Messages <= 0:
		return errors.New("--messages should be greater than zero")
	case o.ReportInterval <= 0:
		return errors.New("--reporting-interval must be greater than 0")
	case o.Timeout < 0:
		return errors.New("--timeout must not be negative")
	}
	if o.DateFormat == "" {
		o.DateFormat = DefaultDateFormat
	}
	df, err := ParseDateFormat(o.DateFormat)
	if err != nil {
		return err
	}
	c := o.Consumer
	if c.Group == "" {
		c.Group = NewGroupID()
	}
	reset := kgo.NewOffset().AtStart()
	if c.OffsetReset == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	m := &metrics{}
	reb := &rebalances{}
	opts := slices.Concat(o.Client, []kgo.Opt{
		kgo.ConsumerGroup(c.Group),
		kgo.ConsumeTopics(o.Topic),
		kgo.ConsumeResetOffset(reset),
		kgo.AllowAutoTopicCreation(), // Java's allow.auto.create.topics=true
		// Kafka's default assignors are [range, cooperative-sticky]: a
		// Java group uses range, eager, so every rebalance revokes and
		// the listener times it.
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.OnPartitionsRevoked(reb.revoked),
		kgo.OnPartitionsAssigned(reb.assigned),
		kgo.WithHooks(m),
	}, c.Opts())
	if len(o.Brokers) > 0 {
		opts = append(opts, kgo.SeedBrokers(o.Brokers...))
	}

	startMs := time.Now().UnixMilli()
	reb.joinStart = startMs
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := ping(ctx, cl, o.Brokers, o.PingTimeout); err != nil {
		return err
	}
	enc := json.NewEncoder(o.Stdout)
	if !o.HideHeader && !o.JSON {
		printConsumerHeader(o.Stdout, o.Detailed)
	}

	var read, bytes, lastRead, lastBytes int64
	timeoutMs := o.Timeout.Milliseconds()
	intervalMs := o.ReportInterval.Milliseconds()
	lastReport, lastConsumed, now := startMs, startMs, startMs
	for read < o.Messages && now-lastConsumed <= timeoutMs {
		pctx, cancel := context.WithDeadline(ctx, time.UnixMilli(lastConsumed+timeoutMs+1))
		fs := cl.PollRecords(pctx, int(min(o.Messages-read, 1<<30)))
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("consume %s-%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		now = time.Now().UnixMilli()
		if fs.NumRecords() > 0 {
			lastConsumed = now
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			bytes += int64(len(r.Key) + len(r.Value))
			if now-lastReport >= intervalMs {
				round := reb.takeRound()
				if o.Detailed {
					row := consumeRow("progress", bytes-lastBytes, read-lastRead, now-lastReport, round)
					row.Bytes, row.Records = bytes, read // Kafka's totals, interval rates
					if row.FetchMs <= 0 {
						row.FetchMiBPerSec, row.FetchRecordsPerSec = 0, 0 // as printExtendedProgress
					}
					if o.JSON {
						_ = enc.Encode(row.finite())
					} else {
						fmt.Fprintf(o.Stdout, "%s, %d, %s\n", df.Format(time.UnixMilli(now)), 0, row.csv())
					}
				}
				lastReport, lastRead, lastBytes = now, read, bytes
			}
		})
	}
	if read < o.Messages {
		fmt.Fprintf(o.Stderr, "WARNING: Exiting before consuming the expected number of messages: timeout (%d ms) exceeded. You can use the --timeout option to increase the timeout.\n", timeoutMs)
	}
	endMs := time.Now().UnixMilli()

	// Kafka's consumer commits on close with auto commit on (the default).
	if c.AutoCommit == nil || *c.AutoCommit {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := cl.CommitUncommittedOffsets(cctx); err != nil {
			fmt.Fprintf(o.Stderr, "WARNING: commit offsets of group %s: %v\n", c.Group, err)
		}
		cancel()
	}

	reb.mu.Lock()
	rebMs := reb.total
	reb.mu.Unlock()
	final := consumeRow("final", bytes, read, endMs-startMs, rebMs)
	switch {
	case o.JSON:
		_ = enc.Encode(final.finite())
	case !o.Detailed:
		start, end := df.Format(time.UnixMilli(startMs)), df.Format(time.UnixMilli(endMs))
		fmt.Fprintf(o.Stdout, "%s, %s, %s\n", start, end, final.csv())
	}
	if o.PrintMetrics && !o.JSON {
		id := o.Consumer.ClientID
		if id == "" {
			id = "qk"
		}
		printMetrics(o.Stdout, m.consumer(), id)
	}
	return nil
}

// printConsumerHeader is ConsumerPerformance.printHeader.
func printConsumerHeader(w io.Writer, detailed bool) {
	const fields = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	if detailed {
		fmt.Fprintf(w, "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec%s\n", fields)
	} else {
		fmt.Fprintf(w, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec%s\n", fields)
	}
}

// consumeRow computes a row from a span of elapsedMs holding rebalanceMs
// of rebalancing, with Kafka's arithmetic on whole milliseconds.
func consumeRow(typ string, bytes, records, elapsedMs, rebalanceMs int64) ConsumeReport {
	fetchMs := elapsedMs - rebalanceMs
	mb := float64(bytes) / (1 << 20)
	per := func(v float64, ms int64) float64 { return v / (float64(ms) / 1000) }
	return ConsumeReport{
		Type: typ, Records: records, Bytes: bytes, ElapsedS: float64(elapsedMs) / 1000,
		MiBPerSec: per(mb, elapsedMs), RecordsPerSec: per(float64(records), elapsedMs),
		RebalanceMs: rebalanceMs, FetchMs: fetchMs,
		FetchMiBPerSec: per(mb, fetchMs), FetchRecordsPerSec: per(float64(records), fetchMs),
	}
}

// finite replaces the NaN and infinite rates of empty spans by 0, which
// JSON cannot carry (the CSV prints them as Java does).
func (r ConsumeReport) finite() ConsumeReport {
	for _, f := range []*float64{&r.RecordsPerSec, &r.MiBPerSec, &r.FetchMiBPerSec, &r.FetchRecordsPerSec} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = 0
		}
	}
	return r
}

// csv is the row after its time column(s):
// "%.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f" (MB, MB/s, messages, msg/s,
// rebalance ms, fetch ms, fetch MB/s, fetch msg/s).
func (r ConsumeReport) csv() string {
	return fmt.Sprintf("%s, %s, %d, %s, %d, %d, %s, %s",
		javaF(float64(r.Bytes)/(1<<20), 4), javaF(r.MiBPerSec, 4), r.Records, javaF(r.RecordsPerSec, 4),
		r.RebalanceMs, r.FetchMs, javaF(r.FetchMiBPerSec, 4), javaF(r.FetchRecordsPerSec, 4))
}
