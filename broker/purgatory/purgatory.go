package purgatory

import (
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Key names a partition: the key produce and fetch operations wait on,
// checked when the partition's log end offset or high watermark moves.
// Topic must be a string that never changes: not one aliasing a request
// frame (kmsg's UnsafeReadFrom), whose bytes are reused. The watcher map
// keeps the latest key it was given, and a key whose bytes change under
// the map corrupts it (a nil watcher turned up in a list, and every
// later check of the partition panicked). Use the partition's or the
// metadata's topic name.
type Key struct {
	Topic     string
	Partition int32
}

// DefaultPurgeInterval is purgatory.purge.interval.requests' default for
// produce and fetch: after this many watched operations complete, the
// entries they left in other keys' watcher lists are swept out.
const DefaultPurgeInterval = 1000

// numShards splits the watcher map so that checks of different partitions
// do not contend (Kafka shards its watcher lists the same way).
const numShards = 32

// Option configures New.
type Option func(*options)

type options struct {
	lg            *slog.Logger
	purgeInterval int
}

// WithLogger sets the logger (nil discards).
func WithLogger(lg *slog.Logger) Option { return func(o *options) { o.lg = lg } }

// WithPurgeInterval sets how many completions of watched operations
// trigger a purge of the watcher lists (values < 1 mean 1).
func WithPurgeInterval(n int) Option { return func(o *options) { o.purgeInterval = max(n, 1) } }

type shard[K comparable] struct {
	mu       sync.Mutex
	watchers map[K][]*Base
}

// Purgatory holds delayed operations until they complete or time out,
// without a goroutine per operation (see the package doc). K is the key
// type operations are watched under, usually Key. All methods are safe for
// concurrent use.
type Purgatory[K comparable] struct {
	name string
	lg   *slog.Logger
	seed maphash.Seed

	shards [numShards]shard[K]

	watched  atomic.Int64 // (operation, key) entries in the watcher lists
	delayed  atomic.Int64 // armed timers
	shutdown atomic.Bool

	purgeInterval       int64
	completedSincePurge atomic.Int64
	purging             atomic.Bool
	wg                  sync.WaitGroup
}

// New returns an empty purgatory. name ("Produce", "Fetch") labels its log
// lines.
func New[K comparable](name string, opts ...Option) *Purgatory[K] {
	o := options{purgeInterval: DefaultPurgeInterval}
	for _, opt := range opts {
		opt(&o)
	}
	if o.lg == nil {
		o.lg = slog.New(slog.DiscardHandler)
	}
	p := &Purgatory[K]{
		name:          name,
		lg:            o.lg.With("component", "purgatory", "purgatory", name),
		seed:          maphash.MakeSeed(),
		purgeInterval: int64(o.purgeInterval),
	}
	for i := range p.shards {
		p.shards[i].watchers = map[K][]*Base{}
	}
	return p
}

// Name is the name given to New.
func (p *Purgatory[K]) Name() string { return p.name }

// Watched is the number of (operation, key) entries in the watcher lists,
// including completed operations not purged yet (Kafka's
// PurgatorySize).
func (p *Purgatory[K]) Watched() int { return int(p.watched.Load()) }

// Delayed is the number of operations waiting for their timeout (Kafka's
// NumDelayedOperations).
func (p *Purgatory[K]) Delayed() int { return int(p.delayed.Load()) }

func (p *Purgatory[K]) shardFor(key K) *shard[K] {
	return &p.shards[maphash.Comparable(p.seed, key)%numShards]
}

// TryCompleteElseWatch submits op: it runs TryComplete and, if the
// operation cannot complete yet, watches it under every key and arms a
// timer that expires it after timeout. It reports whether the operation
// completed during this call.
//
// TryComplete runs a second time after the operation is watched: a state
// change between the first check and the watch would otherwise notify
// CheckAndComplete while the operation was on no list, and it would wait
// for its timeout. After the second check every later change finds it.
//
// A timeout ≤ 0, or a purgatory that is shut down, expires an operation
// that cannot complete at once immediately (OnExpiration, OnComplete)
// instead of watching it. An operation may be submitted once.
func (p *Purgatory[K]) TryCompleteElseWatch(op Operation, timeout time.Duration, keys ...K) bool {
	b := op.base()
	if !b.submitted.CompareAndSwap(false, true) {
		panic("purgatory: operation submitted twice")
	}
	b.op, b.delayed = op, &p.delayed
	if len(keys) > 0 {
		b.onDone = p.completedOne
	}

	b.mu.Lock()
	b.pending.Store(false)
	if b.tryAndUnlock() {
		return true
	}
	if timeout <= 0 || p.shutdown.Load() {
		b.expire()
		return false
	}
	// Not on any list yet and no timer: nothing else checks it while
	// the lock is down.
	b.mu.Lock()
	for _, k := range keys {
		p.watch(k, b)
	}
	if b.tryAndUnlock() {
		return true
	}
	if b.pending.Load() && b.maybeTryComplete() {
		return true
	}
	b.armTimer(timeout)
	if p.shutdown.Load() {
		// Shutdown may have swept the lists before this operation was on
		// them: expire it here so that nobody waits for it.
		b.expire()
	}
	return false
}

func (p *Purgatory[K]) watch(key K, b *Base) {
	sh := p.shardFor(key)
	sh.mu.Lock()
	sh.watchers[key] = append(sh.watchers[key], b)
	sh.mu.Unlock()
	p.watched.Add(1)
}

var bufPool = sync.Pool{New: func() any { return new([]*Base) }}

// CheckAndComplete runs TryComplete on every operation watched under key
// that is not complete (call it when the partition's log end offset or
// high watermark moves) and returns how many it completed. Completed
// operations leave key's watcher list. Callbacks run on the calling
// goroutine; no purgatory lock is held while they run, so they may call
// CheckAndComplete themselves.
func (p *Purgatory[K]) CheckAndComplete(key K) int {
	sh := p.shardFor(key)
	sh.mu.Lock()
	list := sh.watchers[key]
	if len(list) == 0 {
		sh.mu.Unlock()
		return 0
	}
	bp := bufPool.Get().(*[]*Base)
	ops := append((*bp)[:0], list...)
	sh.mu.Unlock()

	n := 0
	for _, b := range ops {
		if b.maybeTryComplete() {
			n++
		}
	}
	clear(ops)
	*bp = ops[:0]
	bufPool.Put(bp)

	sh.mu.Lock()
	p.removeCompleted(sh, key)
	sh.mu.Unlock()
	return n
}

// removeCompleted drops completed operations from key's list, and the list
// when it empties, so the map holds only keys with waiting operations. The
// caller holds sh.mu.
func (p *Purgatory[K]) removeCompleted(sh *shard[K], key K) int {
	list := sh.watchers[key]
	kept := slices.DeleteFunc(list, func(b *Base) bool { return b.completed.Load() })
	removed := len(list) - len(kept)
	if len(kept) == 0 {
		delete(sh.watchers, key)
	} else {
		sh.watchers[key] = kept
	}
	p.watched.Add(-int64(removed))
	return removed
}

// completedOne counts a completed watched operation; every purgeInterval
// of them, the lists are purged in the background. An operation completed
// through one key (or by its timer) stays on its other keys' lists until
// then, or until those keys are checked.
func (p *Purgatory[K]) completedOne() {
	if p.completedSincePurge.Add(1) < p.purgeInterval {
		return
	}
	if !p.purging.CompareAndSwap(false, true) {
		return
	}
	p.completedSincePurge.Store(0)
	p.wg.Go(func() {
		defer p.purging.Store(false)
		p.purgeCompleted()
	})
}

// purgeCompleted sweeps every watcher list.
func (p *Purgatory[K]) purgeCompleted() int {
	n := 0
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		for key := range sh.watchers {
			n += p.removeCompleted(sh, key)
		}
		sh.mu.Unlock()
	}
	if n > 0 {
		p.lg.Debug("purged completed operations", "removed", n, "watched", p.Watched(), "delayed", p.Delayed())
	}
	return n
}

// Shutdown expires every watched operation (OnExpiration, then OnComplete,
// so that each request is answered) and makes later submissions that
// cannot complete at once expire immediately. It waits for a purge in
// progress. An operation watched under no key is left to its timer.
func (p *Purgatory[K]) Shutdown() {
	if !p.shutdown.CompareAndSwap(false, true) {
		return
	}
	var pending []*Base
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		for _, list := range sh.watchers {
			for _, b := range list {
				if !b.completed.Load() {
					pending = append(pending, b)
				}
			}
		}
		sh.mu.Unlock()
	}
	for _, b := range pending {
		b.expire()
	}
	p.wg.Wait()
	p.purgeCompleted()
	p.lg.Info("purgatory shut down", "expired", len(pending))
}
