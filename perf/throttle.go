package perf

import (
	"context"
	"time"
)

// minSleep is the shortest sleep the throttler takes, as in Kafka's
// ThroughputThrottler (MIN_SLEEP_NS): sleeping for every record at high
// rates costs more in wake-ups than it smooths.
const minSleep = 2 * time.Millisecond

// Throttler holds senders to a rate, the idea of Kafka's
// ThroughputThrottler. Kafka adds 1/rate of "sleep deficit" per record and
// sleeps once it reaches 2 ms, so oversleeping makes its rate drift low.
// This one keeps an absolute schedule instead: record n is due at
// start + n/rate, and a sender that is at least minSleep early sleeps until
// then. Being early by less than that is allowed, and a sender that fell
// behind (a stalled machine) catches up at full speed, so the rate over a
// run is the requested one as long as the client can go faster. It is
// shared by concurrent senders, each waiting for the record number it took.
type Throttler struct {
	start time.Time
	rate  float64 // records per second; <= 0: no limit
}

// NewThrottler returns a throttler for rate records per second from start;
// rate <= 0 means no limit (Kafka's --throughput -1).
func NewThrottler(rate float64, start time.Time) *Throttler {
	return &Throttler{start: start, rate: rate}
}

// Due is when record n (counting from 0) may be sent.
func (t *Throttler) Due(n int64) time.Time {
	if t.rate <= 0 {
		return t.start
	}
	return t.start.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
}

// Wait blocks until record n is due, or ctx is done.
func (t *Throttler) Wait(ctx context.Context, n int64) error {
	if t.rate <= 0 {
		return nil
	}
	d := time.Until(t.Due(n))
	if d < minSleep {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
