package log

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qk-project/qk/broker/vfs"
	"github.com/stretchr/testify/require"
)

// gatedSyncs holds every .log fsync at a gate until the test opens it, so
// appends pile up behind one flush as they do behind a slow disk.
type gatedSyncs struct {
	gate    chan struct{}
	started chan struct{} // one token per fsync of a .log that reached the gate
	syncs   atomic.Int64
	fail    atomic.Bool
}

func newGatedSyncs() *gatedSyncs {
	return &gatedSyncs{gate: make(chan struct{}), started: make(chan struct{}, 1024)}
}

func (g *gatedSyncs) MaybeFail(op vfs.Op, path string) error {
	if op != vfs.OpSync || len(path) < 4 || path[len(path)-4:] != ".log" {
		return nil
	}
	g.syncs.Add(1)
	g.started <- struct{}{}
	<-g.gate
	if g.fail.Load() {
		return vfs.ErrInjected
	}
	return nil
}

func openGroupCommitLog(t *testing.T, inject vfs.Injector) *Log {
	t.Helper()
	cfg := smallConfig()
	cfg.FlushMessages = 1
	fault := vfs.NewFaulty(vfs.NewMem(), inject)
	l, err := Open("/data/t-0", cfg, WithFS(fault), WithLogger(testLogger(t)))
	require.NoError(t, err)
	return l
}

// waitChan waits for a value on ch, failing the test after a deadline.
func waitChan[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestAppendAsyncGroupCommit: with flush.messages=1, AppendAsync returns
// before the fsync, appends made while one fsync runs share the next one,
// and every waiter learns its batch is durable only once the recovery
// point covers it.
func TestAppendAsyncGroupCommit(t *testing.T) {
	g := newGatedSyncs()
	l := openGroupCommitLog(t, g)
	defer func() { require.NoError(t, l.Close()) }()

	done := make(chan int64, 64)
	waiter := func(last int64) func(error) {
		return func(err error) {
			require.NoError(t, err)
			require.GreaterOrEqual(t, l.RecoveryPoint(), last+1, "waiter released before its offsets were flushed")
			done <- last
		}
	}
	_, pending, err := l.AppendAsync(makeBatch(t, 2, 1000, 10), 0, waiter(1))
	require.NoError(t, err)
	require.True(t, pending, "flush.messages=1 must call for a flush")
	waitChan(t, g.started, "first fsync") // the flusher is now inside the first fsync

	const n = 10
	for i := range n {
		info, pending, err := l.AppendAsync(makeBatch(t, 1, 2000+int64(i), 10), 0, waiter(int64(2+i)))
		require.NoError(t, err)
		require.True(t, pending)
		require.Equal(t, int64(2+i), info.FirstOffset)
	}
	require.Equal(t, int64(2+n), l.LogEndOffset())
	require.Equal(t, int64(0), l.RecoveryPoint(), "nothing is durable while the first fsync is held")
	select {
	case last := <-done:
		t.Fatalf("waiter for offset %d released while its fsync was held", last)
	default:
	}

	// Release the gate: the first flush completes, then one more flush
	// covers all ten later appends.
	close(g.gate)
	for range n + 1 {
		waitChan(t, done, "flush waiters")
	}
	require.Equal(t, int64(2+n), l.RecoveryPoint())
	require.LessOrEqual(t, g.syncs.Load(), int64(3), "ten appends waiting behind one fsync must share the next fsync(s)")
}

// TestAppendAsyncFlushFailure: when the fsync fails, every waiter gets the
// error (KAFKA_STORAGE_ERROR upstream) and the log refuses further writes.
func TestAppendAsyncFlushFailure(t *testing.T) {
	g := newGatedSyncs()
	g.fail.Store(true)
	l := openGroupCommitLog(t, g)
	errs := make(chan error, 8)
	for i := range 3 {
		_, pending, err := l.AppendAsync(makeBatch(t, 1, 1000+int64(i), 10), 0, func(err error) { errs <- err })
		require.NoError(t, err)
		require.True(t, pending)
	}
	close(g.gate)
	for range 3 {
		err := waitChan(t, errs, "failed flush waiters")
		require.ErrorIs(t, err, ErrFailed)
	}
	require.ErrorIs(t, l.Failed(), vfs.ErrInjected)
	_, err := l.Append(makeBatch(t, 1, 5000, 10), 0)
	require.ErrorIs(t, err, ErrFailed)
	require.Error(t, l.Close())
}

// TestAppendAsyncTruncation: waiters whose batches a truncation removed
// are told so (NOT_LEADER_OR_FOLLOWER upstream, the producer retries);
// a waiter below the truncation point still completes with the flush.
func TestAppendAsyncTruncation(t *testing.T) {
	l, err := Open("/data/t-0", smallConfig(), WithFS(vfs.NewMem()), WithLogger(testLogger(t)))
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	for i := range 4 {
		_, err := l.Append(makeBatch(t, 1, 1000+int64(i), 10), 0)
		require.NoError(t, err)
	}
	var mu sync.Mutex
	results := map[int64]error{}
	cb := func(offset int64) func(error) {
		return func(err error) {
			mu.Lock()
			defer mu.Unlock()
			results[offset] = err
		}
	}
	// Waiters as AppendAsync registers them while a flush runs (no flush
	// is due under this config, so none runs here).
	l.mu.Lock()
	for _, off := range []int64{1, 3, 4} {
		l.flushWaiters = append(l.flushWaiters, flushWaiter{offset: off, done: cb(off)})
	}
	l.mu.Unlock()

	_, err = l.TruncateTo(2)
	require.NoError(t, err)
	mu.Lock()
	require.Len(t, results, 2)
	require.ErrorIs(t, results[3], ErrTruncated)
	require.ErrorIs(t, results[4], ErrTruncated)
	mu.Unlock()

	require.NoError(t, l.Flush(2))
	mu.Lock()
	defer mu.Unlock()
	err, ok := results[1]
	require.True(t, ok, "the waiter below the truncation point is released by the flush")
	require.NoError(t, err)
}

// TestAppendAsyncClose: waiters still queued when the log closes are
// released: durable by Close's final flush, so without an error.
func TestAppendAsyncClose(t *testing.T) {
	g := newGatedSyncs()
	l := openGroupCommitLog(t, g)
	errs := make(chan error, 8)
	for i := range 3 {
		_, _, err := l.AppendAsync(makeBatch(t, 1, 1000+int64(i), 10), 0, func(err error) { errs <- err })
		require.NoError(t, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	close(g.gate)
	require.NoError(t, waitChan(t, closed, "close"))
	for range 3 {
		require.NoError(t, waitChan(t, errs, "waiters at close"))
	}
}
