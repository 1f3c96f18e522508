package clientquota

import (
	"math"
	"time"
)

// Defaults of quota.window.num and quota.window.size.seconds.
const (
	DefaultSamples = 11
	DefaultWindow  = time.Second
)

// Window is the sampling of a rate: Samples samples of Size each
// (quota.window.num, quota.window.size.seconds).
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindowConfig is Kafka's default: 11 samples of 1 s.
var DefaultWindowConfig = Window{Samples: DefaultSamples, Size: DefaultWindow}

func (w Window) orDefault() Window {
	if w.Samples < 1 {
		w.Samples = DefaultSamples
	}
	if w.Size <= 0 {
		w.Size = DefaultWindow
	}
	return w
}

// Span is the time all samples cover: Samples × Size.
func (w Window) Span() time.Duration {
	w = w.orDefault()
	return time.Duration(w.Samples) * w.Size
}

type sample struct {
	start time.Time
	value float64
}

// Rate is Kafka's Rate over a SampledStat of sums (WindowedSum), in
// units per second. It is a plain value with no lock: its owner
// serialises calls. The zero Rate is empty.
type Rate struct {
	samples []sample // at most Window.Samples, a ring from cur
	cur     int
}

// Record adds v at now (SampledStat.record): into the current sample, or
// a new one once the current is a window old, reusing the oldest when all
// are taken.
func (r *Rate) Record(w Window, v float64, now time.Time) {
	w = w.orDefault()
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now})
		r.cur = 0
	}
	s := &r.samples[r.cur]
	if now.Sub(s.start) >= w.Size {
		r.cur = (r.cur + 1) % w.Samples
		if r.cur >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now})
			r.cur = len(r.samples) - 1
		} else {
			r.samples[r.cur] = sample{start: now}
		}
		s = &r.samples[r.cur]
	}
	s.value += v
}

// purge restarts, empty at now, the samples older than the whole span
// (purgeObsoleteSamples).
func (r *Rate) purge(w Window, now time.Time) {
	expire := w.Span()
	for i := range r.samples {
		if now.Sub(r.samples[i].start) >= expire {
			r.samples[i] = sample{start: now}
		}
	}
}

// WindowSize is the time the rate divides by at now (Rate.windowSize):
// since the oldest live sample began, padded to at least Samples-1 whole
// windows, and at least 1 ms.
func (r *Rate) WindowSize(w Window, now time.Time) time.Duration {
	w = w.orDefault()
	r.purge(w, now)
	oldest := now
	for _, s := range r.samples {
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	// Kafka counts in whole milliseconds.
	elapsed := now.Sub(oldest).Truncate(time.Millisecond)
	if full, minFull := int(elapsed/w.Size), w.Samples-1; full < minFull {
		elapsed += time.Duration(minFull-full) * w.Size
	}
	return max(elapsed, time.Millisecond)
}

// Measure is the rate at now, per second (Rate.measure).
func (r *Rate) Measure(w Window, now time.Time) float64 {
	size := r.WindowSize(w, now) // purges first
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	return total / size.Seconds()
}

// ThrottleTime is QuotaUtils.throttleTime: how long a client whose rate,
// measured over windowSize, is observed must wait for its average to come
// back to bound if it records nothing more: (observed - bound) / bound ×
// windowSize, rounded to the millisecond. Zero when observed is within
// the bound. A zero bound (every byte is over) waits the whole
// windowSize. A positive maxThrottle caps the result.
func ThrottleTime(observed, bound float64, windowSize, maxThrottle time.Duration) time.Duration {
	if observed <= bound {
		return 0
	}
	var d time.Duration
	if bound <= 0 {
		d = windowSize
	} else {
		ms := (observed - bound) / bound * float64(windowSize.Milliseconds())
		if ms >= math.MaxInt32 {
			ms = math.MaxInt32 // Kafka's throttle times are int32 ms
		}
		d = time.Duration(math.Round(ms)) * time.Millisecond
	}
	if maxThrottle > 0 && d > maxThrottle {
		d = maxThrottle
	}
	return d
}

// PercentOfThread converts handler time to the unit of request
// quotas: a percentage of one thread's second
// (ClientRequestQuotaManager.nanosToPercentage).
func PercentOfThread(d time.Duration) float64 {
	return float64(d.Nanoseconds()) * (100.0 / float64(time.Second))
}
