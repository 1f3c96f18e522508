// Package purgatory holds requests that cannot be answered yet, as Kafka's
// DelayedOperationPurgatory does: a produce with acks=-1 waits until the
// high watermark passes its last offset, a fetch waits until
// fetch.min.bytes are available, each at most its timeout
// (request.timeout.ms, fetch.max.wait.ms).
//
// # Why
//
// A handler goroutine that blocked on such a request would hold one of
// num.io.threads for up to the timeout: a few hundred long-polling
// consumers would stop the broker. Instead the handler builds an
// Operation, submits it with TryCompleteElseWatch and returns at once.
// The operation then sits on a watcher list per key (a partition) and a
// timer; no goroutine waits for it. Whoever changes a partition (an
// append moving the log end offset, a follower fetch moving the high
// watermark) calls CheckAndComplete(key), which re-checks the operations
// on that key and completes those that can, on the caller's goroutine.
// The timer completes the rest by expiration.
//
//	handler ──TryCompleteElseWatch(op, timeout, keys)──┐
//	                                                    ▼
//	                    TryComplete? ─yes─► OnComplete (response sent)
//	                        │no
//	                        ▼
//	      watch under every key, TryComplete again (no missed change)
//	                        │no
//	                        ▼
//	                arm timer ──fires──► OnExpiration, OnComplete
//	                        ▲
//	append / HW move ──CheckAndComplete(key)──► TryComplete? ─yes─► OnComplete
//
// # Exactly once
//
// Completion can be attempted concurrently by the submitter, by any number
// of CheckAndComplete callers and by the timer. A compare-and-swap on the
// operation's completed flag (in Base) picks one winner; only the winner
// runs OnComplete (and, for the timer, OnExpiration first) and cancels the
// timer. TryComplete, OnComplete and OnExpiration of one operation run
// under its lock, one at a time. A CheckAndComplete that finds the lock
// held does not wait: it flags the holder to run TryComplete once more
// after releasing it, so no notification is lost and no checker blocks
// behind another.
//
// # Timers
//
// Each waiting operation has a Go runtime timer (time.AfterFunc). Kafka
// uses a hierarchical timing wheel because Java's DelayQueue costs
// O(log n) under a lock and keeps cancelled tasks until they expire. Go's
// timers live in per-P heaps, cost no goroutine until they fire and are
// removed when stopped, which is enough for the tens of thousands of
// waiting requests a broker holds; they also run on the fake clock of
// testing/synctest, so timeouts are tested without sleeping.
//
// # Memory
//
// An operation watched under several keys and completed through one stays
// on the others' lists. CheckAndComplete removes completed operations from
// the list it checks and drops empty lists; in addition, every
// purge-interval completions (purgatory.purge.interval.requests, 1000 by
// default) all lists are swept in the background. Watched counts list
// entries, Delayed armed timers: Kafka's PurgatorySize and
// NumDelayedOperations gauges.
//
// # Locks
//
// In order (broker/LOCKS.md): the operation's lock (Base.mu), then a
// watcher shard's lock, then the operation's timer lock. Callbacks run
// with only the operation's lock held, never a shard lock, so they may
// call CheckAndComplete (of this purgatory or another) for other keys.
// They must not block.
package purgatory
