package purgatory

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testOp completes when ready reports true. It records its callbacks and
// flags any that break the contract (a second OnComplete, OnExpiration
// after OnComplete, callbacks running concurrently).
type testOp struct {
	Base
	ready func() bool

	tries       atomic.Int32
	completions atomic.Int32
	expirations atomic.Int32
	inCallback  atomic.Int32
	violations  atomic.Int32
	expiredAt   time.Time // written in OnExpiration, read after completion
	done        chan struct{}
}

func newOp(ready func() bool) *testOp {
	return &testOp{ready: ready, done: make(chan struct{})}
}

func (o *testOp) enter() {
	if o.inCallback.Add(1) != 1 {
		o.violations.Add(1)
	}
}

func (o *testOp) leave() { o.inCallback.Add(-1) }

func (o *testOp) TryComplete() bool {
	o.enter()
	defer o.leave()
	o.tries.Add(1)
	if o.ready() {
		return o.ForceComplete()
	}
	return false
}

func (o *testOp) OnComplete() {
	if o.completions.Add(1) != 1 {
		o.violations.Add(1)
		return
	}
	close(o.done)
}

func (o *testOp) OnExpiration() {
	o.enter()
	defer o.leave()
	if o.completions.Load() != 0 || o.expirations.Add(1) != 1 {
		o.violations.Add(1)
	}
	o.expiredAt = time.Now()
}

func (o *testOp) requireCompleted(t *testing.T, expired bool) {
	t.Helper()
	select {
	case <-o.done:
	default:
		t.Fatal("operation not completed")
	}
	require.True(t, o.IsCompleted())
	require.Equal(t, int32(1), o.completions.Load())
	require.Zero(t, o.violations.Load())
	if expired {
		require.Equal(t, int32(1), o.expirations.Load(), "expired")
	} else {
		require.Zero(t, o.expirations.Load(), "not expired")
	}
}

func (o *testOp) requirePending(t *testing.T) {
	t.Helper()
	require.False(t, o.IsCompleted())
	require.Zero(t, o.completions.Load())
	require.Zero(t, o.expirations.Load())
}

var (
	k0 = Key{Topic: "t", Partition: 0}
	k1 = Key{Topic: "t", Partition: 1}
	k2 = Key{Topic: "t", Partition: 2}
)

func TestCompletesAtOnce(t *testing.T) {
	p := New[Key]("Fetch", WithLogger(testLogger(t)))
	op := newOp(func() bool { return true })
	require.True(t, p.TryCompleteElseWatch(op, time.Second, k0))
	op.requireCompleted(t, false)
	require.Equal(t, int32(1), op.tries.Load())
	require.Zero(t, p.Watched())
	require.Zero(t, p.Delayed())
}

func TestCompletesOnCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[Key]("Produce", WithLogger(testLogger(t)))
		var hw atomic.Int64
		op := newOp(func() bool { return hw.Load() >= 10 })
		require.False(t, p.TryCompleteElseWatch(op, time.Second, k0))
		op.requirePending(t)
		require.Equal(t, int32(2), op.tries.Load(), "checked before and after watching")
		require.Equal(t, 1, p.Watched())
		require.Equal(t, 1, p.Delayed())

		require.Zero(t, p.CheckAndComplete(k1), "another key")
		require.Zero(t, p.CheckAndComplete(k0), "condition not met")
		op.requirePending(t)

		time.Sleep(500 * time.Millisecond)
		hw.Store(10)
		require.Equal(t, 1, p.CheckAndComplete(k0))
		op.requireCompleted(t, false)
		require.Zero(t, p.Watched())
		require.Zero(t, p.Delayed(), "timer cancelled")

		// Past the timeout nothing more happens.
		time.Sleep(time.Second)
		synctest.Wait()
		op.requireCompleted(t, false)
		require.Zero(t, p.CheckAndComplete(k0))
	})
}

func TestExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[Key]("Fetch", WithLogger(testLogger(t)))
		op := newOp(func() bool { return false })
		start := time.Now()
		require.False(t, p.TryCompleteElseWatch(op, 500*time.Millisecond, k0, k1))
		require.Equal(t, 2, p.Watched())
		require.Equal(t, 1, p.Delayed())

		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		op.requirePending(t)

		time.Sleep(time.Millisecond)
		synctest.Wait()
		op.requireCompleted(t, true)
		require.Equal(t, 500*time.Millisecond, op.expiredAt.Sub(start))
		require.Zero(t, p.Delayed())
		require.Equal(t, 2, p.Watched(), "still listed until checked or purged")

		require.Zero(t, p.CheckAndComplete(k0))
		require.Equal(t, 1, p.Watched())
		require.Zero(t, p.CheckAndComplete(k1))
		require.Zero(t, p.Watched())
		op.requireCompleted(t, true)
	})
}

func TestZeroTimeoutExpiresAtOnce(t *testing.T) {
	p := New[Key]("Fetch")
	op := newOp(func() bool { return false })
	require.False(t, p.TryCompleteElseWatch(op, 0, k0))
	op.requireCompleted(t, true)
	require.Zero(t, p.Watched())
	require.Zero(t, p.Delayed())

	ready := newOp(func() bool { return true })
	require.True(t, p.TryCompleteElseWatch(ready, 0, k0))
	ready.requireCompleted(t, false)
}

// TestNoMissedNotification: the state changes (and CheckAndComplete runs)
// after the first check but before the operation is watched. The check
// after watching catches it.
func TestNoMissedNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[Key]("Produce")
		var hw atomic.Int64
		var op *testOp
		op = newOp(func() bool {
			if op.tries.Load() == 1 {
				// A concurrent append lands now and notifies: nobody is
				// watching yet.
				hw.Store(1)
				require.Zero(t, p.CheckAndComplete(k0))
				return false
			}
			return hw.Load() >= 1
		})
		require.True(t, p.TryCompleteElseWatch(op, time.Minute, k0))
		op.requireCompleted(t, false)
		require.Zero(t, p.Delayed())
		require.Equal(t, 1, p.Watched(), "listed, completed, purged later")
		require.Zero(t, p.CheckAndComplete(k0))
		require.Zero(t, p.Watched())
	})
}

// TestCheckDuringCheck: a CheckAndComplete that arrives while another
// goroutine runs the operation's TryComplete does not wait, and the
// operation is re-checked so that the change it announced is seen.
func TestCheckDuringCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[Key]("Produce")
		var hw atomic.Int64
		inside, release := make(chan struct{}), make(chan struct{})
		var blockOnce sync.Once
		var op *testOp
		op = newOp(func() bool {
			if op.tries.Load() == 3 {
				// The third check (by the first CheckAndComplete) reads
				// the state, then stalls; meanwhile the state changes and
				// a second CheckAndComplete comes.
				v := hw.Load()
				blockOnce.Do(func() { close(inside); <-release })
				return v >= 1
			}
			return hw.Load() >= 1
		})
		require.False(t, p.TryCompleteElseWatch(op, time.Minute, k0))
		first := make(chan int)
		go func() { first <- p.CheckAndComplete(k0) }()
		<-inside
		hw.Store(1)
		require.Zero(t, p.CheckAndComplete(k0), "does not wait for the running check")
		close(release)
		require.Equal(t, 1, <-first, "the running checker retried")
		op.requireCompleted(t, false)
		require.Equal(t, int32(4), op.tries.Load())
	})
}

func TestMultipleKeysAndPurge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[Key]("Fetch", WithPurgeInterval(2), WithLogger(testLogger(t)))
		var ready atomic.Bool
		a := newOp(ready.Load)
		b := newOp(ready.Load)
		require.False(t, p.TryCompleteElseWatch(a, time.Minute, k0, k1, k2))
		require.False(t, p.TryCompleteElseWatch(b, time.Minute, k1, k2))
		require.Equal(t, 5, p.Watched())
		require.Equal(t, 2, p.Delayed())

		ready.Store(true)
		require.Equal(t, 2, p.CheckAndComplete(k1))
		a.requireCompleted(t, false)
		b.requireCompleted(t, false)
		require.Zero(t, p.Delayed())
		// Two completions reach the purge interval: the background purge
		// clears k0 and k2 too.
		synctest.Wait()
		require.Zero(t, p.Watched())
	})
}

func TestShutdownExpiresPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[Key]("Fetch", WithLogger(testLogger(t)))
		ops := make([]*testOp, 10)
		for i := range ops {
			ops[i] = newOp(func() bool { return false })
			require.False(t, p.TryCompleteElseWatch(ops[i], time.Hour, Key{Topic: "t", Partition: int32(i % 3)}))
		}
		require.Equal(t, 10, p.Delayed())
		p.Shutdown()
		for _, op := range ops {
			op.requireCompleted(t, true)
		}
		require.Zero(t, p.Delayed())
		require.Zero(t, p.Watched())

		late := newOp(func() bool { return false })
		require.False(t, p.TryCompleteElseWatch(late, time.Hour, k0))
		late.requireCompleted(t, true)
		ready := newOp(func() bool { return true })
		require.True(t, p.TryCompleteElseWatch(ready, time.Hour, k0))
		ready.requireCompleted(t, false)
		p.Shutdown() // idempotent
	})
}

func TestSubmitTwicePanics(t *testing.T) {
	p := New[Key]("Fetch")
	op := newOp(func() bool { return true })
	p.TryCompleteElseWatch(op, time.Second, k0)
	require.Panics(t, func() { p.TryCompleteElseWatch(op, time.Second, k0) })
}

func TestGenericKeys(t *testing.T) {
	p := New[string]("Rebalance")
	var ready atomic.Bool
	op := newOp(ready.Load)
	require.False(t, p.TryCompleteElseWatch(op, time.Hour, "group-a"))
	ready.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("group-a"))
	op.requireCompleted(t, false)
}

// stress runs many goroutines that submit operations on a few keys while
// others raise each key's level and check it, with timeouts short enough
// that many operations expire. Every operation must complete exactly once,
// by its condition or its timeout; afterwards nothing is watched or
// delayed.
func stress(t *testing.T, submitters, perSubmitter int, maxTimeout time.Duration) []*testOp {
	const numKeys = 8
	p := New[Key]("Stress", WithPurgeInterval(64))
	var levels [numKeys]atomic.Int64
	var mu sync.Mutex
	var all []*testOp
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var checkers sync.WaitGroup
	for k := range numKeys {
		checkers.Go(func() {
			key := Key{Topic: "t", Partition: int32(k)}
			for {
				select {
				case <-stop:
					return
				default:
				}
				levels[k].Add(1)
				p.CheckAndComplete(key)
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			}
		})
	}
	for s := range submitters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(s), 1))
			for range perSubmitter {
				nk := 1 + rng.IntN(3)
				keys := make([]Key, nk)
				var conds []func() bool
				for i := range keys {
					k := rng.IntN(numKeys)
					keys[i] = Key{Topic: "t", Partition: int32(k)}
					target := levels[k].Load() + rng.Int64N(40)
					conds = append(conds, func() bool { return levels[k].Load() >= target })
				}
				op := newOp(func() bool {
					for _, c := range conds {
						if c() {
							return true
						}
					}
					return false
				})
				mu.Lock()
				all = append(all, op)
				mu.Unlock()
				timeout := time.Duration(rng.Int64N(int64(maxTimeout)))
				p.TryCompleteElseWatch(op, timeout, keys...)
				if rng.IntN(50) == 0 {
					op.ForceComplete() // a caller giving up on its own
				}
			}
		})
	}
	wg.Wait()
	for _, op := range all {
		<-op.done
	}
	close(stop)
	checkers.Wait()
	for k := range numKeys {
		p.CheckAndComplete(Key{Topic: "t", Partition: int32(k)})
	}
	p.Shutdown()
	require.Zero(t, p.Watched())
	require.Zero(t, p.Delayed())
	for i, op := range all {
		require.True(t, op.IsCompleted(), "op %d", i)
		require.Equal(t, int32(1), op.completions.Load(), "op %d completed once", i)
		require.LessOrEqual(t, op.expirations.Load(), int32(1), "op %d", i)
		require.Zero(t, op.violations.Load(), "op %d", i)
	}
	return all
}

// TestStressSynctest runs the stress on synctest's clock: real goroutine
// interleavings (and the race detector) with timeouts that cost no wall
// time.
func TestStressSynctest(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 100
	}
	synctest.Test(t, func(t *testing.T) {
		all := stress(t, 16, n, 20*time.Millisecond)
		var expired int
		for _, op := range all {
			expired += int(op.expirations.Load())
		}
		t.Logf("%d operations, %d expired", len(all), expired)
		require.Positive(t, expired)
		require.Less(t, expired, len(all))
	})
}

// TestStressRealTimers runs the stress on the real clock, so runtime timers
// fire on their own goroutines while checks run.
func TestStressRealTimers(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	stress(t, 8, n, 2*time.Millisecond)
}

func ExamplePurgatory() {
	p := New[Key]("Fetch")
	defer p.Shutdown()

	var available atomic.Int64 // bytes the partition holds past the fetch offset
	fetch := &exampleFetch{minBytes: 100, available: &available}
	completed := p.TryCompleteElseWatch(fetch, 500*time.Millisecond, Key{Topic: "orders", Partition: 0})
	fmt.Println("answered at once:", completed)

	// A produce appends 150 bytes, then tells the fetch purgatory.
	available.Add(150)
	p.CheckAndComplete(Key{Topic: "orders", Partition: 0})
	// Output:
	// answered at once: false
	// fetch answered with 150 bytes, timed out: false
}

type exampleFetch struct {
	Base
	minBytes  int64
	available *atomic.Int64
	timedOut  bool
}

func (f *exampleFetch) TryComplete() bool {
	if f.available.Load() >= f.minBytes {
		return f.ForceComplete()
	}
	return false
}

func (f *exampleFetch) OnExpiration() { f.timedOut = true }

func (f *exampleFetch) OnComplete() {
	fmt.Printf("fetch answered with %d bytes, timed out: %v\n", f.available.Load(), f.timedOut)
}

type benchOp struct {
	Base
	ready *atomic.Bool
}

func (o *benchOp) TryComplete() bool {
	if o.ready.Load() {
		return o.ForceComplete()
	}
	return false
}
func (o *benchOp) OnComplete()   {}
func (o *benchOp) OnExpiration() {}

// BenchmarkWatchThenComplete is the life of a delayed fetch that a produce
// satisfies: submit (two checks, watch, arm a timer), then one
// CheckAndComplete that completes it and cancels the timer.
func BenchmarkWatchThenComplete(b *testing.B) {
	p := New[Key]("Fetch")
	defer p.Shutdown()
	key := Key{Topic: "orders", Partition: 3}
	var ready atomic.Bool
	b.ReportAllocs()
	for b.Loop() {
		ready.Store(false)
		op := &benchOp{ready: &ready}
		p.TryCompleteElseWatch(op, time.Second, key)
		ready.Store(true)
		p.CheckAndComplete(key)
	}
}

// TestPanicInTryCompleteLeavesOperationUsable: a TryComplete that panics
// inside a CheckAndComplete (recovered further up, as a handler
// goroutine's recover does) does not leave the operation locked: the next
// check completes it, rather than skipping it until it expires.
func TestPanicInTryCompleteLeavesOperationUsable(t *testing.T) {
	p := New[Key]("test")
	key := Key{Topic: "t", Partition: 0}
	var state atomic.Int32 // 0 not ready, 1 panics, 2 ready
	op := newOp(func() bool {
		switch state.Load() {
		case 1:
			panic("boom")
		case 2:
			return true
		}
		return false
	})
	require.False(t, p.TryCompleteElseWatch(op, time.Hour, key))
	state.Store(1)
	func() {
		defer func() { require.Equal(t, "boom", recover()) }()
		p.CheckAndComplete(key)
	}()
	state.Store(2)
	require.Equal(t, 1, p.CheckAndComplete(key), "the operation is skipped after a panic in its check")
	require.EqualValues(t, 1, op.completions.Load())
	require.EqualValues(t, 0, op.expirations.Load())
}
