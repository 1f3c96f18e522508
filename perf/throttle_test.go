package perf

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestThrottlerHoldsRate sends as fast as the fake clock allows: the run
// takes n/rate, however the sleeps fall.
func TestThrottlerHoldsRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64
		n    int64
	}{
		{"2000/s", 2000, 10000},
		{"fractional", 0.5, 4},
		{"fast", 1e6, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				thr := NewThrottler(tc.rate, start)
				for i := range tc.n {
					require.NoError(t, thr.Wait(context.Background(), i))
					require.False(t, time.Now().After(thr.Due(i).Add(time.Millisecond)), "record %d sent late", i)
					require.False(t, time.Now().Before(thr.Due(i).Add(-minSleep)), "record %d sent too early", i)
				}
				want := time.Duration(float64(tc.n-1) / tc.rate * float64(time.Second))
				got := time.Since(start)
				require.InDelta(t, want.Seconds(), got.Seconds(), minSleep.Seconds(), "run of %d records", tc.n)
			})
		})
	}
}

// TestThrottlerCatchesUp: a sender that stalled is not held back until it
// is on schedule again, so a stall does not lower the rate of the run.
func TestThrottlerCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		thr := NewThrottler(1000, start)
		time.Sleep(time.Second) // a stall: 1000 records late
		for i := range int64(1000) {
			require.NoError(t, thr.Wait(context.Background(), i))
		}
		require.Equal(t, time.Second, time.Since(start), "late records are sent at once")
		require.NoError(t, thr.Wait(context.Background(), 2000))
		require.Equal(t, 2*time.Second, time.Since(start))
	})
}

func TestThrottlerUnlimitedAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		thr := NewThrottler(-1, start)
		for i := range int64(1000) {
			require.NoError(t, thr.Wait(context.Background(), i))
		}
		require.Equal(t, start, time.Now())

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		slow := NewThrottler(1, start)
		require.ErrorIs(t, slow.Wait(ctx, 10), context.DeadlineExceeded)
		require.Equal(t, time.Second, time.Since(start))
	})
}
