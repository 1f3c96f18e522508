//go:build linux

package network

import (
	"slices"
	"sync"
)

// requestQueue is the bounded queue between the processors and the handlers
// (Kafka's RequestChannel). A processor that finds it full does not block:
// push records it as a waiter and returns false, the processor stops reading
// its sockets, and the next pop tells the waiters there is room. So a full
// queue pushes back to the clients through their TCP windows instead of
// growing, and a processor keeps writing responses while it waits.
type requestQueue struct {
	mu       sync.Mutex
	nonEmpty sync.Cond
	ring     []*Request
	head, n  int
	waiters  []*processor
	closed   bool
}

func newRequestQueue(capacity int) *requestQueue {
	q := &requestQueue{ring: make([]*Request, capacity)}
	q.nonEmpty.L = &q.mu
	return q
}

// push appends r, or returns false and registers p to be told when there is
// room.
func (q *requestQueue) push(p *processor, r *Request) bool {
	q.mu.Lock()
	if q.closed || q.n == len(q.ring) {
		if !q.closed && !slices.Contains(q.waiters, p) {
			q.waiters = append(q.waiters, p)
		}
		q.mu.Unlock()
		return false
	}
	q.ring[(q.head+q.n)%len(q.ring)] = r
	q.n++
	q.mu.Unlock()
	q.nonEmpty.Signal()
	return true
}

// pop blocks until a request is available or the queue is closed.
func (q *requestQueue) pop() (*Request, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.n == 0 && !q.closed {
		q.nonEmpty.Wait()
	}
	if q.n == 0 {
		return nil, false
	}
	r := q.ring[q.head]
	q.ring[q.head] = nil
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	for i, p := range q.waiters {
		p.queueHasRoom()
		q.waiters[i] = nil
	}
	q.waiters = q.waiters[:0]
	return r, true
}

// len is the number of queued requests.
func (q *requestQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// close wakes the handlers so they exit once the queue is empty. Requests
// still queued are returned to the caller, which drops them (forced shutdown).
func (q *requestQueue) close() []*Request {
	q.mu.Lock()
	q.closed = true
	var left []*Request
	for ; q.n > 0; q.n-- {
		left = append(left, q.ring[q.head])
		q.ring[q.head] = nil
		q.head = (q.head + 1) % len(q.ring)
	}
	q.waiters = nil
	q.mu.Unlock()
	q.nonEmpty.Broadcast()
	return left
}
