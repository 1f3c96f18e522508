package purgatory

import (
	"sync"
	"sync/atomic"
	"time"
)

// Operation is a delayed request: a produce with acks=-1 waiting for the
// high watermark to pass its batch, a fetch waiting for fetch.min.bytes.
// Implementations embed Base, which supplies the completion machinery
// (and the unexported method that restricts Operation to such types).
//
// The purgatory calls the three methods one at a time per operation (they
// run under the operation's lock, Kafka's DelayedOperation.lock), so an
// implementation needs no locking of its own for the fields they share.
// They may run on any goroutine: the submitter's, one calling
// CheckAndComplete, or a timer's. They must not block, and must not submit
// the same operation again.
type Operation interface {
	// TryComplete checks whether the operation can complete now (enough
	// bytes to fetch, the high watermark past the batch). If so it calls
	// ForceComplete and returns its result; otherwise it returns false.
	TryComplete() bool
	// OnComplete sends the response. It runs exactly once, whether the
	// operation completed or expired.
	OnComplete()
	// OnExpiration runs, before OnComplete, when the timeout passed first
	// (or the purgatory shut down), so that OnComplete can answer with
	// what is there (a fetch) or REQUEST_TIMED_OUT (a produce).
	OnExpiration()

	base() *Base
}

// Base is embedded by every Operation. Its zero value is ready; it must not
// be copied once the operation is submitted.
type Base struct {
	// mu is the operation lock: TryComplete, OnComplete and OnExpiration run
	// under it.
	mu sync.Mutex
	// completed is set exactly once, by whoever completes the operation:
	// ForceComplete or the expiration. The compare-and-swap on it is what
	// makes completion exactly-once across goroutines.
	completed atomic.Bool
	// pending is set by a CheckAndComplete that found mu held: the holder
	// retries TryComplete after releasing it, so a notification that
	// arrives while another goroutine is checking is not lost.
	pending   atomic.Bool
	submitted atomic.Bool

	op      Operation
	delayed *atomic.Int64 // the purgatory's Delayed gauge
	onDone  func()        // counts completions towards the next purge

	timerMu sync.Mutex // guards timer; innermost
	timer   *time.Timer
}

func (b *Base) base() *Base { return b }

// IsCompleted reports whether the operation completed or expired.
func (b *Base) IsCompleted() bool { return b.completed.Load() }

// ForceComplete completes the operation unless it already is: it cancels
// the timeout and runs OnComplete, and reports whether this call did it.
// TryComplete calls it when the condition holds. Called from elsewhere, it
// runs OnComplete without the operation lock, so the caller must then make
// sure that nothing else touches the operation's fields concurrently.
func (b *Base) ForceComplete() bool {
	if !b.markCompleted() {
		return false
	}
	b.op.OnComplete()
	return true
}

// markCompleted wins or loses the race to complete.
func (b *Base) markCompleted() bool {
	if !b.completed.CompareAndSwap(false, true) {
		return false
	}
	b.stopTimer()
	if b.onDone != nil {
		b.onDone()
	}
	return true
}

// expire completes the operation by expiration: OnExpiration, then
// OnComplete, under the operation lock.
func (b *Base) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.markCompleted() {
		return
	}
	b.op.OnExpiration()
	b.op.OnComplete()
}

// try runs TryComplete with mu held. A TryComplete that returns true
// without completing is completed here, so the operation cannot be lost.
func (b *Base) try() bool {
	if b.completed.Load() || !b.op.TryComplete() {
		return false
	}
	b.ForceComplete()
	return true
}

// tryAndUnlock runs try with mu held and releases mu, also when
// TryComplete panics: a panic recovered further up (a handler goroutine's
// recover closes its connection) must not leave the operation locked, or
// every later check of it would skip it and it could only expire.
func (b *Base) tryAndUnlock() bool {
	defer b.mu.Unlock()
	return b.try()
}

// maybeTryComplete runs TryComplete unless another goroutine is already
// running it, in which case that goroutine is told to run it again: a
// CheckAndComplete never waits for another's check (nor can it deadlock
// against a caller holding its own locks around a check), and no
// notification is lost.
func (b *Base) maybeTryComplete() bool {
	for !b.completed.Load() {
		if b.mu.TryLock() {
			b.pending.Store(false)
			done := b.tryAndUnlock()
			if done || !b.pending.Load() {
				return done
			}
			continue // asked again while we held the lock
		}
		if b.pending.Swap(true) {
			return false // the holder has been told already and will retry
		}
		// The holder may have released the lock before our flag landed:
		// go round once more.
	}
	return false
}

// armTimer expires the operation after timeout unless it completed.
func (b *Base) armTimer(timeout time.Duration) {
	b.timerMu.Lock()
	defer b.timerMu.Unlock()
	if b.completed.Load() {
		return
	}
	b.delayed.Add(1)
	b.timer = time.AfterFunc(timeout, b.onTimer)
}

// onTimer runs on the timer's goroutine. Exactly one of onTimer and a
// successful Stop in stopTimer decrements the gauge.
func (b *Base) onTimer() {
	b.delayed.Add(-1)
	b.expire()
}

func (b *Base) stopTimer() {
	b.timerMu.Lock()
	defer b.timerMu.Unlock()
	if b.timer != nil && b.timer.Stop() {
		b.delayed.Add(-1)
	}
	b.timer = nil
}
