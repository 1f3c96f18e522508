package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceResult is one timed produce phase.
type produceResult struct {
	records int
	bytes   int64 // record values only
	dur     time.Duration
	p50     time.Duration
	p99     time.Duration
}

// produce writes n records of size bytes to partition 0 of topic and
// returns the throughput and the latency of each record from the Produce
// call to its acknowledgement. Values are consecutive windows of pool,
// random bytes larger than any batch, so no batch repeats itself and no
// codec could shrink it (compression is off anyway).
func produce(ctx context.Context, addr, topic string, n, size int, pool []byte, inflight, buffered int) (produceResult, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), // idempotence needs acks=all
		kgo.MaxProduceRequestsInflightPerBroker(inflight),
		kgo.MaxBufferedRecords(buffered),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		return produceResult{}, err
	}
	defer cl.Close()
	// Connect (and exchange ApiVersions) before the clock starts; the
	// topic's metadata, a millisecond, is loaded inside the timed window.
	if err := cl.Ping(ctx); err != nil {
		return produceResult{}, fmt.Errorf("ping: %w", err)
	}

	// Latencies in microseconds up to one minute, three significant digits.
	hist := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	var (
		mu       sync.Mutex
		firstErr error
	)
	promise := func(r *kgo.Record, err error) {
		// The producer set r.Timestamp from time.Now just before
		// Produce; its monotonic reading makes this a duration.
		lat := time.Since(r.Timestamp)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		_ = hist.RecordValue(max(lat.Microseconds(), 1))
	}

	span := len(pool) - size
	start := time.Now()
	for i := range n {
		off := (i * size) % span
		cl.Produce(ctx, &kgo.Record{Value: pool[off : off+size], Timestamp: time.Now()}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return produceResult{}, fmt.Errorf("flush: %w", err)
	}
	dur := time.Since(start)
	if firstErr != nil {
		return produceResult{}, fmt.Errorf("produce: %w", firstErr)
	}
	if got := hist.TotalCount(); got != int64(n) {
		return produceResult{}, fmt.Errorf("produce: %d of %d records acknowledged", got, n)
	}
	return produceResult{
		records: n,
		bytes:   int64(n) * int64(size),
		dur:     dur,
		p50:     time.Duration(hist.ValueAtQuantile(50)) * time.Microsecond,
		p99:     time.Duration(hist.ValueAtQuantile(99)) * time.Microsecond,
	}, nil
}

// consumeResult is one timed consume phase.
type consumeResult struct {
	records int
	bytes   int64
	dur     time.Duration
}

// consume reads partition 0 of topic from the start until it has want
// records. The clock includes the client's start (metadata, list offsets),
// as a consumer's does; that is milliseconds of a multi-second run.
func consume(ctx context.Context, addr, topic string, want int) (consumeResult, error) {
	start := time.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		return consumeResult{}, err
	}
	defer cl.Close()
	var res consumeResult
	for res.records < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return consumeResult{}, fmt.Errorf("consume: %d of %d records: %w", res.records, want, err)
		}
		var errs []error
		fs.EachError(func(_ string, _ int32, err error) { errs = append(errs, err) })
		if len(errs) > 0 {
			return consumeResult{}, fmt.Errorf("consume: %w", errors.Join(errs...))
		}
		fs.EachRecord(func(r *kgo.Record) {
			res.records++
			res.bytes += int64(len(r.Value))
		})
	}
	res.dur = time.Since(start)
	return res, nil
}
