package controller

import (
	"context"
	"maps"
	"sync"
)

// applied counts, per broker, the UpdateMetadata requests of this
// controller term that were sent and those that were answered, so that a
// topic admin API answers only once every live broker's cache shows its
// change (read your writes through any broker). The channel sends one
// broker's requests in order over one connection, so "answered up to n"
// is one number per broker. Its lock is innermost: taken under
// Controller.mu by send and the barriers, and alone by the channel's
// callbacks.
type applied struct {
	mu      sync.Mutex
	gen     uint64           // the term the counts are of
	sent    map[int32]uint64 // last UpdateMetadata queued to a broker
	acked   map[int32]uint64 // last answered (or given up: broker removed)
	changed chan struct{}    // closed at every answer, forget and reset
}

// appliedBarrier is what one admin change waits for: the UpdateMetadata
// sequence each live broker had been sent when the change's batch went
// out, in term gen.
type appliedBarrier struct {
	gen  uint64
	want map[int32]uint64
}

// newApplied returns the counts before any term.
func newApplied() *applied {
	return &applied{sent: map[int32]uint64{}, acked: map[int32]uint64{}, changed: make(chan struct{})}
}

// broadcast wakes the waiters; a.mu is held.
func (a *applied) broadcast() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// reset starts term gen: barriers of earlier terms are released (their
// controller is gone; what it sent is the new controller's to resend).
func (a *applied) reset(gen uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen = gen
	clear(a.sent)
	clear(a.acked)
	a.broadcast()
}

// next numbers an UpdateMetadata queued to broker id in term gen.
func (a *applied) next(gen uint64, id int32) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen != a.gen {
		return 0
	}
	a.sent[id]++
	return a.sent[id]
}

// ack records broker id's answer to UpdateMetadata seq of term gen.
func (a *applied) ack(gen uint64, id int32, seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if gen != a.gen || seq <= a.acked[id] {
		return
	}
	a.acked[id] = seq
	a.broadcast()
}

// forget gives up on what broker id was sent: it left the live set.
func (a *applied) forget(id int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked[id] = a.sent[id]
	a.broadcast()
}

// barrier is the sequence each of brokers has been sent so far.
func (a *applied) barrier(gen uint64, brokers []int32) appliedBarrier {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := appliedBarrier{gen: gen, want: map[int32]uint64{}}
	for _, id := range brokers {
		if s := a.sent[id]; s > a.acked[id] {
			b.want[id] = s
		}
	}
	return b
}

// wait waits until every broker of b answered its sequence (or was
// forgotten), the term ended, or ctx ended.
func (a *applied) wait(ctx context.Context, b appliedBarrier) error {
	if len(b.want) == 0 {
		return nil
	}
	// Brokers are dropped from want as they answer, so a wake-up looks
	// only at those still behind.
	want := maps.Clone(b.want)
	for {
		a.mu.Lock()
		if a.gen == b.gen {
			maps.DeleteFunc(want, func(id int32, s uint64) bool { return a.acked[id] >= s })
		} else {
			clear(want) // the term ended
		}
		done := len(want) == 0
		ch := a.changed
		a.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
