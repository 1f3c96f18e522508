package clientquota

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestThrottleTime(t *testing.T) {
	tests := []struct {
		name            string
		observed, bound float64
		window, max     time.Duration
		want            time.Duration
	}{
		{"within the bound", 1000, 1000, 10 * time.Second, 0, 0},
		{"below the bound", 10, 1000, 10 * time.Second, 0, 0},
		{"twice the bound waits a window size", 2000, 1000, 10 * time.Second, 0, 10 * time.Second},
		{"fractional excess", 1428.5714, 1000, 10500 * time.Millisecond, 0, 4500 * time.Millisecond},
		{"rounded to the millisecond", 1000.06, 1000, 10 * time.Second, 0, time.Millisecond},
		{"capped (request quotas)", 5000, 1000, 10 * time.Second, time.Second, time.Second},
		{"cap above the throttle changes nothing", 1100, 1000, 10 * time.Second, 11 * time.Second, time.Second},
		{"zero bound waits the window", 1, 0, 10 * time.Second, 0, 10 * time.Second},
		{"huge excess stops at int32 ms", 1e30, 1, 10 * time.Second, 0, 2147483647 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, ThrottleTime(tt.observed, tt.bound, tt.window, tt.max))
		})
	}
}

func TestRate(t *testing.T) {
	type step struct {
		at    time.Duration
		value float64 // recorded when not 0
		rate  float64 // checked when value is 0
		size  time.Duration
	}
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name  string
		w     Window
		steps []step
	}{
		{"young rate divides by samples-1 windows", DefaultWindowConfig, []step{
			{at: 0, value: 50_000},
			{at: 0, rate: 5_000, size: 10 * time.Second},
			{at: 500 * time.Millisecond, value: 10_000},
			{at: 500 * time.Millisecond, rate: 60_000 / 10.5, size: 10500 * time.Millisecond},
		}},
		{"samples roll in a ring and expire", Window{Samples: 3, Size: time.Second}, []step{
			{at: 0, value: 100},
			{at: time.Second, value: 200},
			{at: 2 * time.Second, value: 300},
			{at: 2500 * time.Millisecond, rate: 600 / 2.5, size: 2500 * time.Millisecond},
			{at: 3 * time.Second, value: 10}, // reuses the first sample
			{at: 3 * time.Second, rate: 510 / 2.0, size: 2 * time.Second},
			// At 5.5 s the 1 s and 2 s samples are a span old.
			{at: 5500 * time.Millisecond, rate: 10 / 2.5, size: 2500 * time.Millisecond},
			{at: time.Minute, rate: 0, size: 2 * time.Second},
		}},
		{"negative values unrecord", DefaultWindowConfig, []step{
			{at: 0, value: 1000},
			{at: 0, value: -400},
			{at: 0, rate: 60, size: 10 * time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Rate
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				if s.value != 0 {
					r.Record(tt.w, s.value, now)
					continue
				}
				require.InDelta(t, s.rate, r.Measure(tt.w, now), 1e-9, "step %d", i)
				require.Equal(t, s.size, r.WindowSize(tt.w, now), "step %d", i)
			}
		})
	}
}

func TestPercentOfThread(t *testing.T) {
	require.InDelta(t, 100.0, PercentOfThread(time.Second), 1e-12)
	require.InDelta(t, 0.1, PercentOfThread(time.Millisecond), 1e-12)
}

func TestManager(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	q := Quotas{
		{User: Named("alice")}:                     {ProducerByteRate: 1000},
		{User: Named("bob"), Client: Default}:      {ProducerByteRate: 1000},
		{Client: Named("app")}:                     {ProducerByteRate: 2000, RequestPercentage: 50},
		{User: Named("carol"), Client: Named("x")}: {ConsumerByteRate: 10},
	}
	t.Run("a user quota is shared by the user's clients", func(t *testing.T) {
		m := New(ForType(Produce))
		m.Update(q)
		require.Zero(t, m.RecordAndGetThrottle("alice", "a", 6000, t0))
		// 6000+14000 over 10 s is 2000/s: twice the quota, one 10 s window.
		require.Equal(t, 10*time.Second, m.RecordAndGetThrottle("alice", "b", 14000, t0))
		require.Equal(t, 1, m.Sensors())
		r, ok := m.Rate(SensorKey{User: "alice"}, t0)
		require.True(t, ok)
		require.InDelta(t, 2000, r, 1e-9)
	})
	t.Run("a default client quota is per client", func(t *testing.T) {
		m := New(ForType(Produce))
		m.Update(q)
		require.Zero(t, m.RecordAndGetThrottle("bob", "a", 10000, t0))
		require.Zero(t, m.RecordAndGetThrottle("bob", "b", 10000, t0))
		require.Equal(t, 2, m.Sensors())
		require.Equal(t, 4500*time.Millisecond, m.RecordAndGetThrottle("bob", "a", 5000, t0.Add(500*time.Millisecond)))
	})
	t.Run("unlimited pairs record nothing", func(t *testing.T) {
		m := New(ForType(Produce))
		m.Update(q)
		require.Zero(t, m.RecordAndGetThrottle("dave", "other", 1e12, t0))
		require.Zero(t, m.Sensors())
		m = New(ForType(Fetch))
		require.Zero(t, m.RecordAndGetThrottle("carol", "x", 1e12, t0), "no quotas yet")
		m.Update(q)
		require.Positive(t, m.RecordAndGetThrottle("carol", "x", 1e12, t0))
	})
	t.Run("request quotas are capped at one window", func(t *testing.T) {
		m := New(ForType(Request))
		m.Update(q)
		// 10 s of handler time in one go: 1000% over 10 s is 100%, twice 50%.
		require.Equal(t, time.Second, m.RecordAndGetThrottle("dave", "app", PercentOfThread(10*time.Second), t0))
		match, ok := m.Limit("dave", "app")
		require.True(t, ok)
		require.Equal(t, SensorKey{Client: "app"}, match.Sensor)
	})
	t.Run("unrecord takes a throttled value back", func(t *testing.T) {
		m := New(ForType(Fetch))
		require.False(t, m.Enabled())
		m.Unrecord("carol", "x", 5, t0) // no quotas: nothing to do
		m.Update(q)
		require.True(t, m.Enabled())
		// 10 bytes/s over 10 s: 100 bytes fit, 300 are three times over.
		require.Equal(t, 20*time.Second, m.RecordAndGetThrottle("carol", "x", 300, t0))
		m.Unrecord("carol", "x", 300, t0)
		r, ok := m.Rate(SensorKey{User: "carol", Client: "x"}, t0)
		require.True(t, ok)
		require.Zero(t, r)
		require.Zero(t, m.RecordAndGetThrottle("carol", "x", 100, t0))
		m.Unrecord("dave", "y", 1, t0) // unlimited pair
		require.Equal(t, 1, m.Sensors())
	})
	t.Run("an update keeps a sensor's history under the new bound", func(t *testing.T) {
		m := New(ForType(Produce))
		m.Update(q)
		require.Zero(t, m.RecordAndGetThrottle("alice", "a", 10000, t0))
		m.Update(Quotas{{User: Named("alice")}: {ProducerByteRate: 500}})
		require.Equal(t, 10*time.Second, m.RecordAndGetThrottle("alice", "a", 0, t0))
		m.Update(Quotas{})
		require.Zero(t, m.RecordAndGetThrottle("alice", "a", 1e9, t0))
	})
}

// TestManagerExpiry runs on synctest's clock: samples age out of the
// window, and a sensor idle for an hour is dropped.
func TestManagerExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New(ForType(Produce))
		m.Update(Quotas{{Client: Default}: {ProducerByteRate: 1000}})
		require.Equal(t, 10*time.Second, m.RecordAndGetThrottle("", "a", 20000, time.Now()))
		// The sample still counts 10 s later, over 10 s of elapsed time
		// instead of the 10 padded windows: Kafka's rate is approximate.
		time.Sleep(10 * time.Second)
		require.Equal(t, 10*time.Second, m.RecordAndGetThrottle("", "a", 0, time.Now()))
		// After a whole span (11 s) from its start the sample counts no more.
		time.Sleep(time.Second)
		r, ok := m.Rate(SensorKey{Client: "a"}, time.Now())
		require.True(t, ok)
		require.Zero(t, r)
		require.Zero(t, m.RecordAndGetThrottle("", "a", 0, time.Now()))
		require.Zero(t, m.RecordAndGetThrottle("", "b", 1, time.Now()))
		require.Equal(t, 2, m.Sensors())
		time.Sleep(InactiveSensorExpiration)
		_, ok = m.Rate(SensorKey{Client: "a"}, time.Now())
		require.False(t, ok)
		require.Zero(t, m.RecordAndGetThrottle("", "b", 1, time.Now()))
		require.Equal(t, 1, m.Sensors(), "a's sensor expired, b's was just used")
	})
}

func TestManagers(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := NewManagers(Window{Samples: 2, Size: 500 * time.Millisecond})
	ms.Update(Quotas{{Client: Default}: {ProducerByteRate: 100, RequestPercentage: 10}})
	// 2 samples of 0.5 s: a fresh sensor divides by one window.
	require.Equal(t, 500*time.Millisecond, ms.Get(Produce).RecordAndGetThrottle("", "a", 100, t0))
	require.Zero(t, ms.Get(Fetch).RecordAndGetThrottle("", "a", 1e9, t0))
	require.Equal(t, 500*time.Millisecond, ms.Get(Request).RecordAndGetThrottle("", "a", PercentOfThread(time.Second), t0), "capped at one window")
}
