// Package quota is Kafka's ReplicationQuotaManager: a byte rate over a
// sliding window, shared by every throttled replica of a broker, which
// replication traffic is held under while catching up.
//
// A broker has two: the leader quota (leader.replication.throttled.rate)
// is charged with the bytes a leader sends followers of the partitions
// its topics list in leader.replication.throttled.replicas, the follower
// quota (follower.replication.throttled.rate) with the bytes a follower
// fetches for those in follower.replication.throttled.replicas. A
// throttled partition is skipped while its quota is exceeded, unless its
// replica is in sync: throttles exist so that reassignments and
// recovering replicas do not starve the brokers, never to slow the
// replication that acks=all waits for.
//
// The rate is Kafka's Rate over a SampledStat: samples of
// replication.quota.window.size.seconds, replication.quota.window.num of
// them (11 of 1 s by default). A sample older than all of them together
// counts no more. The rate divides the bytes of the live samples by the
// time since the oldest began, padded to at least num-1 whole windows: a
// fresh quota lets about bound × (num-1) window bytes pass at once, and
// then holds to the bound on average. Quotas are approximate by design:
// a fetch already under way is never cut, so the rate may overshoot by
// one fetch.
package quota

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Unlimited is the default bound (Kafka's Long.MAX_VALUE): never exceeded.
const Unlimited = math.MaxInt64

// Defaults of replication.quota.window.num and
// replication.quota.window.size.seconds.
const (
	DefaultSamples = 11
	DefaultWindow  = time.Second
)

type sample struct {
	start time.Time
	bytes int64
}

// Quota is one replication quota. It takes the time as an argument, so it
// is pure and tests drive it with any clock; it is safe for concurrent
// use.
type Quota struct {
	numSamples int
	window     time.Duration

	mu      sync.Mutex // guards what follows
	bound   int64      // bytes/s
	samples []sample   // at most numSamples, in a ring from cur
	cur     int
}

// New returns a quota of bound bytes/s over numSamples samples of window
// each (values below 1 take Kafka's defaults).
func New(bound int64, numSamples int, window time.Duration) *Quota {
	if numSamples < 1 {
		numSamples = DefaultSamples
	}
	if window <= 0 {
		window = DefaultWindow
	}
	return &Quota{numSamples: numSamples, window: window, bound: bound}
}

// SetBound changes the bound (a dynamic config change); the samples are
// kept, as Kafka's updateQuota keeps its sensor.
func (q *Quota) SetBound(bound int64) {
	q.mu.Lock()
	q.bound = bound
	q.mu.Unlock()
}

// Bound is the bound in bytes/s.
func (q *Quota) Bound() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bound
}

// Record charges bytes at now.
func (q *Quota) Record(now time.Time, bytes int64) {
	if bytes <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.current(now).bytes += bytes
}

// current is the sample now falls in, starting a new one (and dropping
// the oldest) when the current one is a window old. Called under mu.
func (q *Quota) current(now time.Time) *sample {
	if len(q.samples) == 0 {
		q.samples = append(q.samples, sample{start: now})
		q.cur = 0
	}
	s := &q.samples[q.cur]
	if now.Sub(s.start) < q.window {
		return s
	}
	if len(q.samples) < q.numSamples {
		q.samples = append(q.samples, sample{start: now})
		q.cur = len(q.samples) - 1
	} else {
		q.cur = (q.cur + 1) % len(q.samples)
		q.samples[q.cur] = sample{start: now}
	}
	return &q.samples[q.cur]
}

// Rate is the measured rate at now in bytes/s (Kafka's Rate.measure).
func (q *Quota) Rate(now time.Time) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rate(now)
}

func (q *Quota) rate(now time.Time) float64 {
	if len(q.samples) == 0 {
		return 0
	}
	// Samples older than the whole window count no more (Kafka's
	// purgeObsoleteSamples resets them to start now).
	expire := time.Duration(q.numSamples) * q.window
	var total int64
	oldest := now
	for i := range q.samples {
		s := &q.samples[i]
		if now.Sub(s.start) >= expire {
			*s = sample{start: now}
		}
		total += s.bytes
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	// At least numSamples-1 whole windows, so a young quota does not read
	// a burst as a huge rate (Kafka's Rate.windowSize: the missing whole
	// windows are added to the time elapsed).
	if full, minFull := int(elapsed/q.window), q.numSamples-1; full < minFull {
		elapsed += time.Duration(minFull-full) * q.window
	}
	if elapsed <= 0 {
		elapsed = q.window
	}
	return float64(total) / elapsed.Seconds()
}

// Exceeded reports whether the rate at now is above the bound (Kafka's
// isQuotaExceeded). An Unlimited quota is never exceeded.
func (q *Quota) Exceeded(now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bound == Unlimited {
		return false
	}
	return q.rate(now) > float64(q.bound)
}

// Throttled reports whether a throttled-replicas list (the value of
// leader.replication.throttled.replicas or
// follower.replication.throttled.replicas, "*" or partition:brokerId
// items) names partition on broker brokerID. As in Kafka's
// parseThrottledPartitions, a broker applies a list to itself only: the
// leader list names the leaders that limit what they send (the current
// replicas, in a reassignment), the follower list the followers that
// limit what they fetch (the new ones).
func Throttled(list []string, partition, brokerID int32) bool {
	if len(list) == 1 && strings.TrimSpace(list[0]) == "*" {
		return true
	}
	return slices.ContainsFunc(list, func(item string) bool {
		p, b, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return false
		}
		pi, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		return err1 == nil && err2 == nil && int32(pi) == partition && int32(bi) == brokerID
	})
}
