package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/internal/javafmt"
)

// EndToEndOptions are the settings of one `qk perf end-to-end` run.
type EndToEndOptions struct {
	Topic       string
	NumRecords  int
	Acks        string // 1 or all
	RecordSize  int
	PollTimeout time.Duration // longest wait for each record; Kafka's is 60 s
	JSON        bool

	Brokers     []string
	Client      []kgo.Opt
	PingTimeout time.Duration

	Stdout, Stderr io.Writer
}

// EndToEndReport is `qk perf end-to-end --json`'s final object.
type EndToEndReport struct {
	Type      string       `json:"type"`
	Records   int          `json:"records"`
	LatencyMs E2ELatencyMs `json:"latency_ms"`
}

// E2ELatencyMs are the send-to-receive latencies in milliseconds.
type E2ELatencyMs struct {
	Avg  float64 `json:"avg"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// EndToEnd runs Kafka's EndToEndLatency: one record at a time is produced
// synchronously (linger 0) and read back by a consumer already assigned to
// the end of every partition; the latency is from the send to the
// receipt. Each record read must be the one sent; values are random
// letters (Kafka's tool repeats one random letter, so a stray record could
// pass for the one sent). A missing topic is created with one partition
// and replication factor 1, as Kafka's tool does.
//
// Kafka's consumer polls with fetch.max.wait.ms=0; franz-go's least is
// 10 ms, which with fetch.min.bytes=1 only bounds how long an empty fetch
// waits at the broker: a record still returns as soon as it is there.
func EndToEnd(ctx context.Context, o EndToEndOptions) error {
	acks, err := ParseAcks(o.Acks)
	switch {
	case o.Topic == "":
		return errors.New("--topic is required")
	case o.NumRecords <= 0:
		return errors.New("--num-records should be greater than zero")
	case o.RecordSize <= 0:
		return errors.New("--record-size should be greater than zero")
	case err != nil || acks == "0":
		return fmt.Errorf("--acks %q: latency testing requires synchronous acknowledgement: use 1 or all", o.Acks)
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = time.Minute
	}
	info := o.Stdout
	if o.JSON {
		info = o.Stderr
	}
	pc := NewProducerConfig()
	pc.Acks, pc.Linger = acks, 0
	popts, err := pc.Opts()
	if err != nil {
		return err
	}
	base := o.Client
	if len(o.Brokers) > 0 {
		base = append(slices.Clip(base), kgo.SeedBrokers(o.Brokers...))
	}
	prod, err := kgo.NewClient(slices.Concat(base, popts)...)
	if err != nil {
		return err
	}
	defer prod.Close()
	if err := ping(ctx, prod, o.Brokers, o.PingTimeout); err != nil {
		return err
	}

	adm := kadm.NewClient(prod)
	topics, err := adm.ListTopics(ctx, o.Topic)
	if err == nil && !topics.Has(o.Topic) {
		fmt.Fprintf(info, "Topic \"%s\" does not exist. Will create topic with %d partition(s) and replication factor = %d\n", o.Topic, 1, 1)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, o.Topic); err != nil {
			fmt.Fprintf(info, "Creation of topic %s failed\n", o.Topic)
			return fmt.Errorf("create topic %s: %w", o.Topic, err)
		}
	} else if err == nil {
		err = topics.Error()
	}
	if err != nil {
		return fmt.Errorf("describe topic %s: %w", o.Topic, err)
	}
	// Assign every partition at its end offset now, as Kafka's tool
	// seeks to the end and resolves the positions before the first send:
	// a consumer that looked the end up later could miss the first record.
	// A topic just created may have no leader for a moment.
	var ends kadm.ListedOffsets
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ends, err = adm.ListEndOffsets(ctx, o.Topic); err == nil {
			err = ends.Error()
		}
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("list offsets of %s: %w", o.Topic, err)
	}
	at := map[string]map[int32]kgo.Offset{o.Topic: {}}
	ends.Each(func(l kadm.ListedOffset) { at[o.Topic][l.Partition] = kgo.NewOffset().At(l.Offset) })
	cons, err := kgo.NewClient(slices.Concat(base, []kgo.Opt{
		kgo.ConsumePartitions(at),
		kgo.FetchMaxWait(10 * time.Millisecond),
	})...)
	if err != nil {
		return err
	}
	defer cons.Close()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	lat := make([]time.Duration, 0, o.NumRecords)
	var total time.Duration
	for i := range o.NumRecords {
		msg := make([]byte, o.RecordSize)
		for j := range msg {
			msg[j] = letters[rng.IntN(len(letters))]
		}
		begin := time.Now()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: o.Topic, Value: msg}).FirstErr(); err != nil {
			return fmt.Errorf("produce record %d: %w", i, err)
		}
		pctx, cancel := context.WithTimeout(ctx, o.PollTimeout)
		fs := cons.PollFetches(pctx)
		cancel()
		elapsed := time.Since(begin)
		if err := validateE2E(fs, msg, o.PollTimeout); err != nil {
			return err
		}
		if i%1000 == 0 && !o.JSON {
			fmt.Fprintf(o.Stdout, "%d\t%s\n", i, javafmt.Double(float64(elapsed.Nanoseconds())/1000/1000))
		}
		total += elapsed
		lat = append(lat, elapsed)
	}

	slices.Sort(lat)
	// Kafka's percentile: the element at (int)(n * q) of the sorted
	// latencies, which it truncates to whole milliseconds.
	pick := func(q float64) time.Duration { return lat[int(float64(len(lat))*q)] }
	avgMs := float64(total.Nanoseconds()) / float64(o.NumRecords) / 1e6
	if o.JSON {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		return json.NewEncoder(o.Stdout).Encode(EndToEndReport{Type: "final", Records: o.NumRecords, LatencyMs: E2ELatencyMs{
			Avg: float64(int64(avgMs*1000+0.5)) / 1000, P50: ms(pick(0.5)), P99: ms(pick(0.99)), P999: ms(pick(0.999)), Max: ms(lat[len(lat)-1]),
		}})
	}
	fmt.Fprintf(o.Stdout, "Avg latency: %s ms\n", javaF(avgMs, 4))
	fmt.Fprintf(o.Stdout, "Percentiles: 50th = %d, 99th = %d, 99.9th = %d\n",
		pick(0.5).Milliseconds(), pick(0.99).Milliseconds(), pick(0.999).Milliseconds())
	return nil
}

// validateE2E checks a poll returned exactly the record sent, with
// Kafka's messages.
func validateE2E(fs kgo.Fetches, sent []byte, timeout time.Duration) error {
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if ferr == nil && !errors.Is(err, context.DeadlineExceeded) {
			ferr = fmt.Errorf("consume %s-%d: %w", t, p, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	rs := fs.Records()
	switch {
	case len(rs) == 0:
		return fmt.Errorf("poll() timed out before finding a result (timeout:[%d])", timeout.Milliseconds())
	case !bytes.Equal(rs[0].Value, sent):
		return fmt.Errorf("the message read [%s] did not match the message sent [%s]", clip(rs[0].Value), clip(sent))
	case len(rs) != 1:
		return fmt.Errorf("only one result was expected during this test. We found [%d]", len(rs))
	}
	return nil
}

// clip shortens a value for an error message.
func clip(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%s... (%d bytes)", b[:64], len(b))
	}
	return string(b)
}
