package log

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// txnKVs appends a transactional batch of pid holding recs.
func (x *txnLog) txnKVs(pid int64, recs ...kv) AppendInfo {
	x.t.Helper()
	x.ts += 10
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, x.epoch[pid], x.seq[pid]
	opts.Transactional = true
	b := record.NewBuilder(opts)
	for _, r := range recs {
		b.Append(x.ts, []byte(r.key), []byte(r.value), nil)
	}
	raw, err := b.Build()
	require.NoError(x.t, err)
	info, err := x.Append(raw, 0)
	require.NoError(x.t, err)
	x.seq[pid] += int32(len(recs))
	return info
}

// txnRec is one written record and what became of its transaction.
type txnRec struct {
	key, value string
	pid        int64 // -1: not transactional
	aborted    bool
}

// txnKVModel is what a transactional workload on a compacted topic wrote.
type txnKVModel struct {
	byOffset map[int64]*txnRec
	open     map[int64][]*txnRec // producer → records of its open transaction
	markers  int
	n        int
}

func newTxnKVModel() *txnKVModel {
	return &txnKVModel{byOffset: map[int64]*txnRec{}, open: map[int64][]*txnRec{}}
}

// step appends one random step over keys keys: a plain batch, a batch
// of an open or new transaction of producer 1 or 2, or a marker.
func (m *txnKVModel) step(x *txnLog, rng *rand.Rand, keys int) {
	pid := int64(1 + rng.IntN(2))
	recs := func() []kv {
		var out []kv
		for range 1 + rng.IntN(3) {
			m.n++
			out = append(out, kv{key: fmt.Sprintf("k%d", rng.IntN(keys)), value: fmt.Sprintf("v%d", m.n)})
		}
		return out
	}
	switch r := rng.IntN(10); {
	case r < 3:
		rs := recs()
		info := appendKVs(x.t, x.Log, record.CodecNone, rs...)
		for i, r := range rs {
			m.byOffset[info.FirstOffset+int64(i)] = &txnRec{key: r.key, value: r.value, pid: -1}
		}
	case r < 7:
		rs := recs()
		info := x.txnKVs(pid, rs...)
		for i, r := range rs {
			tr := &txnRec{key: r.key, value: r.value, pid: pid}
			m.byOffset[info.FirstOffset+int64(i)] = tr
			m.open[pid] = append(m.open[pid], tr)
		}
	default:
		m.end(x, pid, rng.IntN(2) == 0)
	}
}

// end completes pid's open transaction, if it has one.
func (m *txnKVModel) end(x *txnLog, pid int64, commit bool) {
	if len(m.open[pid]) == 0 {
		return
	}
	x.end(pid, commit)
	m.markers++
	for _, r := range m.open[pid] {
		r.aborted = !commit
	}
	delete(m.open, pid)
}

// finish completes both producers' transactions, the last ones
// committed.
func (m *txnKVModel) finish(x *txnLog) {
	m.end(x, 1, true)
	m.end(x, 2, true)
	x.hwToEnd()
}

// latest is each key's last record that is not aborted, by offset.
func (m *txnKVModel) latest() map[string]int64 {
	out := map[string]int64{}
	for off, r := range m.byOffset {
		if !r.aborted {
			if prev, ok := out[r.key]; !ok || off > prev {
				out[r.key] = off
			}
		}
	}
	return out
}

// consumed is a record as a consumer returns it.
type consumed struct {
	offset     int64
	key, value string
}

// abortedHeap orders a fetch's aborted transactions by first offset, as
// Kafka's consumer does.
type abortedHeap []AbortedTxn

func (h abortedHeap) Len() int           { return len(h) }
func (h abortedHeap) Less(i, j int) bool { return h[i].FirstOffset < h[j].FirstOffset }
func (h abortedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *abortedHeap) Push(x any)        { *h = append(*h, x.(AbortedTxn)) }
func (h *abortedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// consume reads the whole log as a Kafka consumer does (Fetcher's
// nextFetchedRecord): read_committed fetches through ReadCommitted, and
// within each fetch skips the batches of the producers whose aborted
// transaction has begun (the fetch's aborted_transactions) until their
// ABORT marker; read_uncommitted reads up to the high watermark. Control
// batches are never returned.
func consume(t testing.TB, l *Log, readCommitted bool) []consumed {
	t.Helper()
	var out []consumed
	off := l.LogStartOffset()
	for {
		var ri ReadInfo
		var err error
		if readCommitted {
			ri, err = l.ReadCommitted(off, 32<<10, false)
		} else {
			ri, err = l.Read(off, 32<<10, l.HighWatermark())
		}
		require.NoError(t, err)
		if ri.Region.Length == 0 {
			return out
		}
		pending := abortedHeap(slices.Clone(ri.AbortedTransactions))
		heap.Init(&pending)
		abortedProducers := map[int64]bool{}
		b := regionBytes(t, ri.Region)
		progressed := false
		for len(b) >= record.BatchHeaderSize {
			bt := record.Batch(b)
			if bt.Size() > len(b) {
				break
			}
			bt, err := record.Validate(b[:bt.Size()])
			require.NoError(t, err)
			b = b[len(bt):]
			if bt.LastOffset() < off {
				continue
			}
			progressed = true
			off = bt.NextOffset()
			if readCommitted && bt.ProducerID() >= 0 {
				for pending.Len() > 0 && pending[0].FirstOffset <= bt.LastOffset() {
					abortedProducers[heap.Pop(&pending).(AbortedTxn).ProducerID] = true
				}
				if bt.IsControl() {
					if typ, _, ok, _ := bt.TxnMarker(); ok && typ == record.ControlAbort {
						delete(abortedProducers, bt.ProducerID())
					}
				} else if bt.IsTransactional() && abortedProducers[bt.ProducerID()] {
					continue
				}
			}
			if bt.IsControl() {
				continue
			}
			require.NoError(t, bt.Iterate(func(r *record.Record) error {
				out = append(out, consumed{offset: r.Offset(bt), key: string(r.Key), value: string(r.Value)})
				return nil
			}))
		}
		require.True(t, progressed, "no whole batch at %d", off)
	}
}

// expectedView is what a consumer of the fully cleaned log reads: each
// key's latest record that is not aborted, in offset order.
func (m *txnKVModel) expectedView() []consumed {
	var out []consumed
	for key, off := range m.latest() {
		out = append(out, consumed{offset: off, key: key, value: m.byOffset[off].value})
	}
	slices.SortFunc(out, func(a, b consumed) int { return int(a.offset - b.offset) })
	return out
}

// committedView is what a read_committed consumer reads of the log as
// written (before any clean): every record that is not aborted.
func (m *txnKVModel) committedView() []consumed {
	var out []consumed
	for off, r := range m.byOffset {
		if !r.aborted {
			out = append(out, consumed{offset: off, key: r.key, value: r.value})
		}
	}
	slices.SortFunc(out, func(a, b consumed) int { return int(a.offset - b.offset) })
	return out
}

// checkCleanedView checks a consumer's view of a log that may be partly
// cleaned: every record is an original record that is not aborted, at its
// offset, and every key's latest such record is there.
func (m *txnKVModel) checkCleanedView(t testing.TB, view []consumed, what string) {
	t.Helper()
	seen := map[int64]bool{}
	for _, c := range view {
		r, ok := m.byOffset[c.offset]
		require.True(t, ok, "%s: offset %d was written", what, c.offset)
		require.Equal(t, r.key, c.key, "%s: key at %d", what, c.offset)
		require.Equal(t, r.value, c.value, "%s: value at %d", what, c.offset)
		require.False(t, r.aborted, "%s: aborted record at %d (%s=%s) is returned", what, c.offset, c.key, c.value)
		seen[c.offset] = true
	}
	for key, off := range m.latest() {
		require.True(t, seen[off], "%s: latest value of %s at %d is readable", what, key, off)
	}
}

// checkCompactionOf checks that view is a compaction of full: every
// record of view is in full at its offset, and each key's last record in
// full is in view.
func checkCompactionOf(t testing.TB, view, full []consumed, what string) {
	t.Helper()
	byOffset := map[int64]consumed{}
	last := map[string]int64{}
	for _, c := range full {
		byOffset[c.offset] = c
		last[c.key] = c.offset
	}
	seen := map[int64]bool{}
	for _, c := range view {
		require.Equal(t, byOffset[c.offset], c, "%s: record at %d", what, c.offset)
		seen[c.offset] = true
	}
	for key, off := range last {
		require.True(t, seen[off], "%s: last record of %s at %d", what, key, off)
	}
}

// markerState describes the markers of a log: for each one with records,
// whether a batch of its transaction is still in the log, and whether it
// carries a delete horizon.
type markerState struct {
	base       int64
	pid        int64
	abort      bool
	hasData    bool
	hasHorizon bool
	horizon    int64
}

func markers(t testing.TB, l *Log) []markerState {
	t.Helper()
	var out []markerState
	batchSince := map[int64]bool{}
	for _, bt := range logBatches(t, l) {
		if bt.ProducerID() < 0 {
			continue
		}
		if !bt.IsControl() {
			if bt.IsTransactional() {
				batchSince[bt.ProducerID()] = true
			}
			continue
		}
		if bt.NumRecords() == 0 {
			continue
		}
		typ, _, ok, err := bt.TxnMarker()
		require.NoError(t, err)
		require.True(t, ok)
		h, has := bt.DeleteHorizonMs()
		out = append(out, markerState{base: bt.BaseOffset(), pid: bt.ProducerID(), abort: typ == record.ControlAbort,
			hasData: batchSince[bt.ProducerID()], hasHorizon: has, horizon: h})
		delete(batchSince, bt.ProducerID())
	}
	return out
}

// checkTxnIndex checks the aborted transactions the log lists: each one's
// marker is an ABORT of its producer in the log, and every aborted
// transaction that still has a batch in the log is listed.
func checkTxnIndex(t testing.TB, l *Log, what string) {
	t.Helper()
	aborted := l.AbortedTransactions(0, math.MaxInt64)
	byMarker := map[int64]AbortedTxn{}
	for _, a := range aborted {
		byMarker[a.LastOffset] = a
	}
	for _, m := range markers(t, l) {
		a, listed := byMarker[m.base]
		if listed {
			require.True(t, m.abort, "%s: entry %+v points at a COMMIT", what, a)
			require.Equal(t, m.pid, a.ProducerID, "%s: entry %+v", what, a)
			delete(byMarker, m.base)
		}
		if m.abort && m.hasData {
			require.True(t, listed, "%s: the aborted transaction ending at %d still has batches but is not indexed", what, m.base)
		}
	}
	require.Empty(t, byMarker, "%s: entries without their marker", what)
}

// checkMarkers checks that the log has n markers, that those with a delete
// horizon have it at horizon and no batch of their transaction left, and
// returns how many have one.
func checkMarkers(t testing.TB, l *Log, n int, horizon int64, what string) int {
	t.Helper()
	ms := markers(t, l)
	require.Len(t, ms, n, "%s: no marker is removed before its horizon", what)
	withHorizon := 0
	for _, mk := range ms {
		if mk.hasHorizon {
			require.False(t, mk.hasData, "%s: marker at %d of a transaction with data left has a horizon", what, mk.base)
			require.Equal(t, horizon, mk.horizon, "%s: marker at %d", what, mk.base)
			withHorizon++
		}
	}
	return withHorizon
}

// TestCleanTransactions compacts a log with interleaved committed and
// aborted transactions of two producers and plain records on the same
// keys. The first clean removes every aborted record and keeps the
// latest committed or plain value of each key (an aborted record never
// hides one), both for read_committed and read_uncommitted consumers;
// it keeps every marker. A later clean sets the delete horizon of the
// markers whose transaction has no batch left, and a clean past
// delete.retention.ms removes them. The LSO, the aborted transactions and
// the producer state stay right, also across clean and unclean restarts.
func TestCleanTransactions(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 1024
	cfg.DeleteRetentionMs = 60_000
	x := newTxnLog(t, nil, cfg)
	m := newTxnKVModel()
	rng := rand.New(rand.NewPCG(20, 20))
	for range 400 {
		m.step(x, rng, 12)
		if rng.IntN(5) == 0 {
			x.hwToEnd()
		}
	}
	m.finish(x)
	require.NoError(t, x.roll4test())
	require.Greater(t, x.NumSegments(), 8)
	require.Equal(t, m.committedView(), consume(t, x.Log, true), "before the clean")
	before := x.AbortedTransactions(0, math.MaxInt64)
	require.Greater(t, len(before), 10)
	producers := summarize(x.ProducerState())

	// First clean: aborted records go, markers stay.
	st, err := x.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.Equal(t, x.LogEndOffset(), st.EndOffset, "the whole log was cleanable")
	require.Positive(t, st.AbortedRecordsDropped)
	require.Zero(t, st.MarkersDropped)
	want := m.expectedView()
	require.Equal(t, want, consume(t, x.Log, true), "read_committed after the first clean")
	require.Equal(t, want, consume(t, x.Log, false), "read_uncommitted after the first clean")
	ms := markers(t, x.Log)
	require.Len(t, ms, m.markers, "every marker is kept by the clean that removes its data")
	for _, mk := range ms {
		require.False(t, mk.hasHorizon, "marker at %d", mk.base)
	}
	require.Equal(t, before, x.AbortedTransactions(0, math.MaxInt64), "entries stay while their data is being removed")
	require.Equal(t, x.LogEndOffset(), x.LastStableOffset())
	require.Equal(t, producers, summarize(x.ProducerState()))

	// Second clean (new dirty data): the markers whose transaction has
	// no batch left get a delete horizon, and their entries go.
	x.clock.Advance(time.Second)
	more := func(n int) {
		for i := range n {
			info := appendKVs(t, x.Log, record.CodecNone, kv{key: fmt.Sprintf("new%d", i), value: "n", ts: x.ts})
			m.byOffset[info.FirstOffset] = &txnRec{key: fmt.Sprintf("new%d", i), value: "n", pid: -1}
		}
		x.hwToEnd()
		require.NoError(t, x.roll4test())
	}
	more(20)
	st, err = x.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.Zero(t, st.MarkersDropped)
	want = m.expectedView()
	require.Equal(t, want, consume(t, x.Log, true), "read_committed after the second clean")
	require.Equal(t, want, consume(t, x.Log, false), "read_uncommitted after the second clean")
	horizon := x.clock.Now().UnixMilli() + cfg.DeleteRetentionMs
	withHorizon := checkMarkers(t, x.Log, m.markers, horizon, "second clean")
	require.Greater(t, withHorizon, m.markers/2)
	checkTxnIndex(t, x.Log, "second clean")
	require.Less(t, len(x.AbortedTransactions(0, math.MaxInt64)), len(before))
	require.Equal(t, x.LogEndOffset(), x.LastStableOffset())

	// A clean before the horizon keeps them (and gives one to the
	// markers whose last batch the previous clean removed); one after
	// the horizon removes them.
	more(5)
	_, err = x.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	withHorizon = checkMarkers(t, x.Log, m.markers, horizon, "third clean")
	x.clock.Advance(time.Duration(cfg.DeleteRetentionMs) * time.Millisecond)
	more(5)
	st, err = x.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.Equal(t, int64(withHorizon), st.MarkersDropped)
	ms = markers(t, x.Log)
	require.Len(t, ms, m.markers-withHorizon)
	require.Less(t, len(ms), m.markers/4)
	for _, mk := range ms {
		require.False(t, mk.hasHorizon, "marker at %d", mk.base)
	}
	t.Logf("%d markers, %d removed past their horizon, %d aborted transactions indexed before, %d after",
		m.markers, withHorizon, len(before), len(x.AbortedTransactions(0, math.MaxInt64)))
	want = m.expectedView()
	require.Equal(t, want, consume(t, x.Log, true), "read_committed after the markers went")
	require.Equal(t, want, consume(t, x.Log, false), "read_uncommitted after the markers went")
	checkTxnIndex(t, x.Log, "markers removed")
	require.Equal(t, x.LogEndOffset(), x.LastStableOffset())
	require.Equal(t, producers, summarize(x.ProducerState()))
	aborted := x.AbortedTransactions(0, math.MaxInt64)

	// Restarts: a clean one loads the same; an unclean one rebuilds the
	// indexes and the producer state from the cleaned log.
	x.closeLog()
	x.reopen(WithCleanShutdown(true), WithHighWatermark(math.MaxInt64))
	require.Equal(t, aborted, x.AbortedTransactions(0, math.MaxInt64))
	require.Equal(t, want, consume(t, x.Log, true))
	x.Log.closeWithoutFlush()
	x.Log = nil
	x.reopen(WithHighWatermark(math.MaxInt64))
	require.Equal(t, want, consume(t, x.Log, true), "read_committed after recovery")
	require.Equal(t, want, consume(t, x.Log, false), "read_uncommitted after recovery")
	checkTxnIndex(t, x.Log, "after recovery")
	require.Equal(t, x.LogEndOffset(), x.LastStableOffset())
	require.Equal(t, producers, summarize(x.ProducerState()))
}

// TestCleanAbortedRecordDoesNotHideCommitted: a key's aborted records,
// in the dirty section after its committed value (itself in the dirty
// section, or in the section an earlier clean left), are removed and not
// mapped, so the committed value stays; a committed transactional record
// supersedes older values as any record does.
func TestCleanAbortedRecordDoesNotHideCommitted(t *testing.T) {
	cfg := compactConfig()
	x := newTxnLog(t, nil, cfg)
	appendKVs(t, x.Log, record.CodecNone, kv{key: "a", value: "plain-1"}, kv{key: "b", value: "plain-1"})
	x.txnKVs(1, kv{key: "b", value: "committed-2"}, kv{key: "c", value: "committed-2"})
	x.end(1, true)
	x.txnKVs(1, kv{key: "a", value: "aborted-3"})
	x.txnKVs(2, kv{key: "c", value: "aborted-3"})
	appendKVs(t, x.Log, record.CodecNone, kv{key: "d", value: "plain-3"})
	x.txnKVs(1, kv{key: "b", value: "aborted-3"})
	x.end(2, false)
	x.end(1, false)
	x.hwToEnd()
	require.NoError(t, x.roll4test())
	view := func() map[string]string {
		out := map[string]string{}
		for _, c := range consume(t, x.Log, false) {
			out[c.key] = c.value
		}
		return out
	}
	want := map[string]string{"a": "plain-1", "b": "committed-2", "c": "committed-2", "d": "plain-3"}
	st, err := x.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.Equal(t, int64(3), st.AbortedRecordsDropped)
	require.Equal(t, want, view())
	require.Len(t, consume(t, x.Log, false), 4, "one record per key")
	require.Equal(t, consume(t, x.Log, false), consume(t, x.Log, true))

	// Aborted values over a cleaned section.
	x.txnKVs(2, kv{key: "a", value: "aborted-4"}, kv{key: "d", value: "aborted-4"})
	x.end(2, false)
	x.txnKVs(1, kv{key: "c", value: "committed-5"})
	x.end(1, true)
	x.hwToEnd()
	require.NoError(t, x.roll4test())
	st, err = x.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.Equal(t, int64(2), st.AbortedRecordsDropped)
	want["c"] = "committed-5"
	require.Equal(t, want, view())
	require.Len(t, consume(t, x.Log, false), 4)
	require.Equal(t, consume(t, x.Log, false), consume(t, x.Log, true))
}

// TestCleanCrashRemovingMarkers crashes, at each file-system step, the
// clean that removes aborted records of new transactions and the markers
// past their delete horizon, and reopens the log (recovery point at the
// log end): whichever version of each segment survives, both consumers
// read no aborted record and every key's latest value, the aborted
// transactions with data left are indexed, and the LSO is the log end.
func TestCleanCrashRemovingMarkers(t *testing.T) {
	const dir = "/data/crash-0"
	cfg := compactConfig()
	cfg.SegmentBytes = 1024
	cfg.DeleteRetentionMs = 60_000
	tmpl := vfs.NewMem()
	clock := newFakeClock()
	l := openCompacted(t, tmpl, dir, cfg, clock)
	x := &txnLog{testLog: &testLog{Log: l, t: t, dir: dir, fsys: tmpl, clock: clock, cfg: cfg},
		epoch: map[int64]int16{}, seq: map[int64]int32{}, ts: clock.Now().UnixMilli()}
	m := newTxnKVModel()
	rng := rand.New(rand.NewPCG(7, 8))
	work := func(n int) {
		for range n {
			m.step(x, rng, 10)
		}
		m.finish(x)
		require.NoError(t, x.roll4test())
	}
	// Two cleans give the markers without data a horizon; the one under
	// test runs past it, with new transactions to clean.
	for range 2 {
		work(150)
		_, err := l.Compact(CleanOptions{Force: true})
		require.NoError(t, err)
	}
	clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	work(100)
	leo := l.LogEndOffset()
	require.NoError(t, l.Close())

	steps, dropped := 0, int64(0)
	for k := 1; ; k++ {
		mem := tmpl.CrashClone()
		faulty := vfs.NewFaulty(mem, nil)
		l := openCompacted(t, faulty, dir, cfg, clock, WithCleanShutdown(true), WithHighWatermark(math.MaxInt64))
		var crash *vfs.MemFS
		var n atomic.Int64
		faulty.SetInjector(vfs.InjectorFunc(func(op vfs.Op, path string) error {
			switch op {
			case vfs.OpRename, vfs.OpSync, vfs.OpSyncDir, vfs.OpRemove, vfs.OpWrite, vfs.OpCreate, vfs.OpTruncate:
			default:
				return nil
			}
			if n.Add(1) != int64(k) {
				return nil
			}
			require.NoError(t, mem.SyncDir(dir))
			crash = mem.CrashClone()
			return vfs.ErrInjected
		}))
		st, err := l.Compact(CleanOptions{Force: true})
		faulty.SetInjector(nil)
		if n.Load() < int64(k) {
			require.NoError(t, err)
			require.True(t, st.Cleaned)
			steps, dropped = k-1, st.MarkersDropped
			m.checkCleanedView(t, consume(t, l, false), "no crash")
			require.NoError(t, l.Close())
			break
		}
		require.Error(t, err, "step %d", k)
		l.closeWithoutFlush()
		if crash == nil {
			crash = mem.CrashClone()
		}
		r, err := Open(dir, cfg, WithFS(crash), WithClock(clock.Now), WithLogger(testLogger(t)),
			WithRecoveryPoint(leo), WithHighWatermark(math.MaxInt64))
		require.NoError(t, err, "reopen after step %d", k)
		what := fmt.Sprintf("step %d", k)
		require.Equal(t, leo, r.LogEndOffset(), what)
		require.Equal(t, leo, r.LastStableOffset(), what)
		checkTxnIndex(t, r, what)
		m.checkCleanedView(t, consume(t, r, true), what+" read_committed")
		require.NoError(t, r.Close())
	}
	require.Greater(t, steps, 10)
	require.Positive(t, dropped, "the clean under test removes markers")
}
