package quota

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// step is one event of a quota script: record bytes at offset at, or
// (bytes 0) check the rate and Exceeded there.
type step struct {
	at       time.Duration
	bytes    int64
	rate     float64 // checked when bytes is 0
	exceeded bool
}

func TestQuota(t *testing.T) {
	const kib = 1024
	tests := []struct {
		name    string
		bound   int64
		samples int
		window  time.Duration
		steps   []step
	}{
		{"young quota divides by samples-1 windows", 10 * kib, 11, time.Second, []step{
			{at: 0, bytes: 50 * kib},
			{at: 0, rate: 5 * kib},                              // 50 KiB over 10 s
			{at: 500 * time.Millisecond, rate: 50 * kib / 10.5}, // 0.5 s + 10 whole windows
			{at: 500 * time.Millisecond, bytes: 60 * kib},
			{at: 500 * time.Millisecond, rate: 110 * kib / 10.5, exceeded: true},
		}},
		{"two samples of one second", 1000, 2, time.Second, []step{
			{at: 0, bytes: 1000},
			{at: 0, rate: 1000},
			{at: 0, bytes: 1},
			{at: 0, rate: 1001, exceeded: true},
			{at: 1500 * time.Millisecond, rate: 1001 / 1.5, exceeded: false},
			{at: 1500 * time.Millisecond, bytes: 600}, // a second sample
			{at: 1500 * time.Millisecond, rate: 1601 / 1.5, exceeded: true},
			// At 2 s the first sample is two windows old: it counts no
			// more (it restarts empty at 2 s), and the rate is the
			// second's 600 over its 0.5 s padded by one window.
			{at: 2 * time.Second, rate: 600 / 1.5},
			{at: 3600 * time.Millisecond, rate: 0},
		}},
		{"samples roll in a ring", 100, 3, time.Second, []step{
			{at: 0, bytes: 100},
			{at: 1 * time.Second, bytes: 200},
			{at: 2 * time.Second, bytes: 300},
			{at: 2500 * time.Millisecond, rate: 600 / 2.5, exceeded: true},
			{at: 3 * time.Second, bytes: 10}, // replaces the first sample
			{at: 3 * time.Second, rate: 510 / 2.0, exceeded: true},
			{at: 5500 * time.Millisecond, rate: 10 / 2.5},
		}},
		{"unlimited is never exceeded", Unlimited, 11, time.Second, []step{
			{at: 0, bytes: 1 << 50},
			{at: 0, rate: float64(1<<50) / 10, exceeded: false},
		}},
		{"zero bound is exceeded by any byte", 0, 11, time.Second, []step{
			{at: 0, rate: 0, exceeded: false},
			{at: 0, bytes: 1},
			{at: 0, rate: 0.1, exceeded: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := New(tt.bound, tt.samples, tt.window)
			base := time.Unix(1700000000, 0)
			for i, s := range tt.steps {
				now := base.Add(s.at)
				if s.bytes > 0 {
					q.Record(now, s.bytes)
					continue
				}
				require.InDelta(t, s.rate, q.Rate(now), 0.01, "step %d at %v", i, s.at)
				require.Equal(t, s.exceeded, q.Exceeded(now), "step %d at %v", i, s.at)
			}
		})
	}
}

// TestQuotaHoldsTheBound: a fetcher that fetches whenever the quota is not
// exceeded, in 64 KiB steps every 10 ms, moves about bound bytes a second
// on average, the first (samples-1)-window burst included.
func TestQuotaHoldsTheBound(t *testing.T) {
	const bound = 1 << 20
	q := New(bound, 11, time.Second)
	base := time.Unix(1700000000, 0)
	var moved int64
	for ms := 0; ms < 60_000; ms += 10 {
		now := base.Add(time.Duration(ms) * time.Millisecond)
		if !q.Exceeded(now) {
			q.Record(now, 64<<10)
			moved += 64 << 10
		}
	}
	rate := float64(moved) / 60
	require.Greater(t, rate, 0.9*bound)
	require.Less(t, rate, 1.25*bound)
}

func TestSetBound(t *testing.T) {
	q := New(Unlimited, 2, time.Second)
	now := time.Unix(1700000000, 0)
	q.Record(now, 5000)
	require.False(t, q.Exceeded(now))
	q.SetBound(1000)
	require.Equal(t, int64(1000), q.Bound())
	require.True(t, q.Exceeded(now), "the samples are kept")
}

func TestThrottled(t *testing.T) {
	tests := []struct {
		name      string
		list      []string
		partition int32
		broker    int32
		want      bool
	}{
		{"empty", nil, 0, 1, false},
		{"star", []string{"*"}, 7, 3, true},
		{"listed", []string{"0:1", "1:2"}, 1, 2, true},
		{"other broker", []string{"0:1", "1:2"}, 1, 1, false},
		{"other partition", []string{"0:1"}, 2, 1, false},
		{"spaces", []string{" 3 : 4 "}, 3, 4, true},
		{"malformed", []string{"3-4"}, 3, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Throttled(tt.list, tt.partition, tt.broker))
		})
	}
}
