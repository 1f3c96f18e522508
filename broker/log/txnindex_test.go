package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// readTxnIndexFile decodes a .txnindex with encoding/binary only (no code
// of this package): version, producerId, firstOffset, lastOffset,
// lastStableOffset per 34 bytes.
func readTxnIndexFile(t testing.TB, path string) []AbortedTxn {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Zero(t, len(b)%34, "%s: %d bytes", path, len(b))
	var out []AbortedTxn
	for ; len(b) > 0; b = b[34:] {
		require.Equal(t, uint16(0), binary.BigEndian.Uint16(b), "version")
		out = append(out, AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		})
	}
	return out
}

// txnIndexFiles lists the .txnindex files of dir with their entries.
func txnIndexFiles(t testing.TB, dir string) map[string][]AbortedTxn {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]AbortedTxn{}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), TxnIndexSuffix) {
			out[e.Name()] = readTxnIndexFile(t, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

func TestAbortAddsTxnIndexEntry(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 2)   // 0-1  P1
	x.data(2, 1)   // 2    P2
	x.plain(1)     // 3
	x.end(1, true) // 4    P1 commits: nothing indexed
	require.Empty(t, txnIndexFiles(t, x.dir), "no file before the first abort")
	x.data(1, 1)    // 5    P1 again
	x.end(2, false) // 6    P2 aborts while P1 (from 5) is open
	x.end(1, false) // 7    P1 aborts, nothing else open
	x.data(3, 1)    // 8
	x.end(3, false) // 9
	want := []AbortedTxn{
		{ProducerID: 2, FirstOffset: 2, LastOffset: 6, LastStableOffset: 5},
		{ProducerID: 1, FirstOffset: 5, LastOffset: 7, LastStableOffset: 8},
		{ProducerID: 3, FirstOffset: 8, LastOffset: 9, LastStableOffset: 10},
	}
	require.Equal(t, map[string][]AbortedTxn{"00000000000000000000.txnindex": want}, txnIndexFiles(t, x.dir))
	require.Equal(t, want, x.AbortedTransactions(0, 10))
}

func TestTxnIndexPerSegmentAndLazy(t *testing.T) {
	cfg := smallConfig()
	x := newTxnLog(t, nil, cfg)
	x.data(1, 1)    // 0
	x.end(1, false) // 1
	x.data(1, 1)    // 2
	x.end(1, true)  // 3
	require.NoError(t, x.roll4test())
	x.plain(2)   // 4-5
	x.data(2, 1) // 6
	require.NoError(t, x.roll4test())
	x.end(2, false) // 7: the marker's segment holds the entry
	files := txnIndexFiles(t, x.dir)
	require.Equal(t, map[string][]AbortedTxn{
		"00000000000000000000.txnindex": {{1, 0, 1, 2}},
		"00000000000000000007.txnindex": {{2, 6, 7, 8}},
	}, files, "segment 4 has no abort and no file")
	require.Equal(t, []AbortedTxn{{2, 6, 7, 8}}, x.AbortedTransactions(4, 8))
	require.Equal(t, []AbortedTxn{{1, 0, 1, 2}, {2, 6, 7, 8}}, x.AbortedTransactions(0, 8))
	require.Equal(t, []AbortedTxn{{1, 0, 1, 2}}, x.AbortedTransactions(0, 6), "first offset 6 is not below the bound")
	require.Empty(t, x.AbortedTransactions(2, 6), "marker 1 is below the start")
}

// roll4test rolls the active segment at the log end offset.
func (x *txnLog) roll4test() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, err := x.roll(x.logEndOffset, "test")
	return err
}

func TestTruncationReopensTransaction(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 2)    // 0-1
	x.data(2, 1)    // 2
	x.end(1, false) // 3
	x.data(1, 1)    // 4
	x.end(2, false) // 5
	x.hwToEnd()
	require.Len(t, txnIndexFiles(t, x.dir)["00000000000000000000.txnindex"], 2)

	// Below P2's marker: P2's transaction is open again, its entry gone.
	_, err := x.TruncateTo(5)
	require.NoError(t, err)
	require.Equal(t, []OpenTxn{{2, 2}, {1, 4}}, x.OngoingTransactions())
	require.Equal(t, []AbortedTxn{{1, 0, 3, 2}}, txnIndexFiles(t, x.dir)["00000000000000000000.txnindex"])
	require.Equal(t, int64(2), x.LastStableOffset())
	e, _ := x.Producer(2)
	require.Equal(t, int64(2), e.CurrentTxnFirstOffset)

	// Below P1's marker: no abort left, no file.
	_, err = x.TruncateTo(3)
	require.NoError(t, err)
	require.Empty(t, txnIndexFiles(t, x.dir))
	require.Equal(t, []OpenTxn{{1, 0}, {2, 2}}, x.OngoingTransactions())
	require.Empty(t, x.AbortedTransactions(0, 10))

	// The log carries on: P1 aborts again.
	x.hwToEnd()
	_, err = x.AppendMarker(1, 0, 5, false, 0, 1)
	require.NoError(t, err)
	require.Equal(t, []AbortedTxn{{1, 0, 3, 2}}, x.AbortedTransactions(0, 10))
}

func TestTruncationWithSnapshotsReopensTransaction(t *testing.T) {
	cfg := rollConfig()
	x := newTxnLog(t, nil, cfg)
	x.data(1, 1) // 0, open across rolls (snapshots at each roll)
	for range 30 {
		x.plain(3)
	}
	require.Greater(t, x.NumSegments(), 2)
	require.NoError(t, x.Flush(x.LogEndOffset()))
	m := x.end(1, false)
	x.plain(1)
	x.hwToEnd()
	require.Equal(t, []AbortedTxn{{1, 0, m.LastOffset, m.LastOffset + 1}}, x.AbortedTransactions(0, math.MaxInt64))
	_, err := x.TruncateTo(m.LastOffset)
	require.NoError(t, err)
	require.Equal(t, []OpenTxn{{1, 0}}, x.OngoingTransactions(), "the snapshot below the cut keeps the transaction open")
	require.Empty(t, x.AbortedTransactions(0, math.MaxInt64))
	require.Empty(t, txnIndexFiles(t, x.dir))
	require.Equal(t, int64(0), x.LastStableOffset())
}

func TestTxnIndexDeletedWithSegment(t *testing.T) {
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = 1000
	cfg.RetentionMs = -1
	x := newTxnLog(t, nil, cfg)
	x.data(1, 1)
	x.end(1, false)
	require.NoError(t, x.roll4test())
	x.plain(1)
	x.hwToEnd()
	_, err := x.DeleteRecordsBefore(2)
	require.NoError(t, err)
	n, err := x.DeleteOldSegments()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	name := FileName(x.dir, 0, TxnIndexSuffix)
	require.NoFileExists(t, name)
	require.FileExists(t, name+DeletedSuffix, "renamed with the other files of the segment")
	require.Empty(t, x.AbortedTransactions(0, 10))
	x.clock.Advance(2000 * 1e6)
	_, err = x.DeleteOldSegments()
	require.NoError(t, err)
	require.NoFileExists(t, name+DeletedSuffix)
}

func TestTxnIndexSurvivesCleanRestart(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 1)
	x.data(2, 1)
	x.end(1, false)
	x.data(3, 1)
	x.hwToEnd()
	before := x.AbortedTransactions(0, 100)
	lso := x.LastStableOffset()
	files := txnIndexFiles(t, x.dir)
	x.closeLog()
	x.reopen(WithCleanShutdown(true), WithHighWatermark(4))
	require.Equal(t, before, x.AbortedTransactions(0, 100))
	require.Equal(t, files, txnIndexFiles(t, x.dir))
	require.Equal(t, lso, x.LastStableOffset())
	require.Equal(t, []OpenTxn{{2, 1}, {3, 3}}, x.OngoingTransactions())
}

// TestRecoveryRebuildsTxnIndex: after an unclean shutdown whose tail was
// torn inside an ABORT marker, recovery cuts the marker, the index loses
// its entry (the marker is not in the log) and the transaction is open
// again; a lost index file is rebuilt from the markers.
func TestRecoveryRebuildsTxnIndex(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 1)    // 0
	x.data(2, 1)    // 1
	x.end(1, false) // 2
	x.data(1, 1)    // 3
	m := x.end(2, false)
	x.hwToEnd()
	require.Len(t, x.AbortedTransactions(0, 100), 2)
	// Crash: no Close; cut the last marker in half.
	logPath := FileName(x.dir, 0, LogSuffix)
	st, err := os.Stat(logPath)
	require.NoError(t, err)
	x.Log.closeWithoutFlush()
	x.Log = nil
	require.NoError(t, os.Truncate(logPath, st.Size()-10))

	x.reopen(WithHighWatermark(m.LastOffset))
	require.Equal(t, m.LastOffset, x.LogEndOffset())
	require.Equal(t, []AbortedTxn{{1, 0, 2, 1}}, x.AbortedTransactions(0, 100))
	require.Equal(t, map[string][]AbortedTxn{"00000000000000000000.txnindex": {{1, 0, 2, 1}}}, txnIndexFiles(t, x.dir))
	require.Equal(t, []OpenTxn{{2, 1}, {1, 3}}, x.OngoingTransactions())
	require.Equal(t, int64(1), x.LastStableOffset())

	// The index file lost too (crash before its write-back): rebuilt.
	x.Log.closeWithoutFlush()
	x.Log = nil
	require.NoError(t, os.Remove(FileName(x.dir, 0, TxnIndexSuffix)))
	x.reopen()
	require.Equal(t, []AbortedTxn{{1, 0, 2, 1}}, x.AbortedTransactions(0, 100))
	require.Equal(t, map[string][]AbortedTxn{"00000000000000000000.txnindex": {{1, 0, 2, 1}}}, txnIndexFiles(t, x.dir))
}

func TestCorruptTxnIndexRebuilt(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 1)
	x.end(1, false)
	require.NoError(t, x.roll4test())
	x.data(2, 1)
	x.end(2, false)
	x.hwToEnd()
	want := txnIndexFiles(t, x.dir)
	require.Len(t, want, 2)
	x.closeLog()
	path := FileName(x.dir, 0, TxnIndexSuffix)
	require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o644))
	x.reopen(WithCleanShutdown(true), WithHighWatermark(4))
	require.Equal(t, want, txnIndexFiles(t, x.dir))
	require.Equal(t, []AbortedTxn{{1, 0, 1, 2}, {2, 2, 3, 4}}, x.AbortedTransactions(0, 10))
}

// txnOp is one step of a random transactional workload.
type txnModel struct {
	open    map[int64]int64 // producer → first offset
	aborted []AbortedTxn    // LastStableOffset not modelled
}

// runTxnWorkload appends n random steps (transactional data of three
// producers, markers, plain batches) and returns the model.
func runTxnWorkload(t *testing.T, x *txnLog, rng *rand.Rand, n int) *txnModel {
	m := &txnModel{open: map[int64]int64{}}
	for range n {
		pid := int64(1 + rng.IntN(3))
		switch r := rng.IntN(10); {
		case r < 5:
			info := x.data(pid, 1+rng.IntN(3))
			if _, ok := m.open[pid]; !ok {
				m.open[pid] = info.FirstOffset
			}
		case r < 8:
			commit := rng.IntN(2) == 0
			info := x.end(pid, commit)
			if first, ok := m.open[pid]; ok {
				if !commit {
					m.aborted = append(m.aborted, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: info.LastOffset})
				}
				delete(m.open, pid)
			}
		default:
			x.plain(1 + rng.IntN(3))
		}
		if rng.IntN(4) == 0 {
			x.hwToEnd()
		}
	}
	x.hwToEnd()
	return m
}

func (m *txnModel) lso(hw int64) int64 {
	lso := hw
	for _, f := range m.open {
		lso = min(lso, f)
	}
	return lso
}

func withoutLSO(in []AbortedTxn) []AbortedTxn {
	out := slices.Clone(in)
	for i := range out {
		out[i].LastStableOffset = 0
	}
	return out
}

// TestReadCommittedAbortedTransactions checks ReadCommitted against a
// model on a log of many small segments: the region never reaches the
// LSO, and every aborted transaction with data in the region is listed
// (what a consumer needs to drop it); every listed one overlaps
// [fetch offset, bound).
func TestReadCommittedAbortedTransactions(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 900
	cfg.IndexIntervalBytes = 100
	x := newTxnLog(t, nil, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	m := runTxnWorkload(t, x, rng, 300)
	require.Greater(t, x.NumSegments(), 5)
	require.Equal(t, m.lso(x.HighWatermark()), x.LastStableOffset())
	require.Equal(t, withoutLSO(m.aborted), withoutLSO(x.AbortedTransactions(0, math.MaxInt64)))

	lso := x.LastStableOffset()
	for start := int64(0); start < lso; start++ {
		for _, maxBytes := range []int32{1, 200, 1000, math.MaxInt32} {
			ri, err := x.ReadCommitted(start, maxBytes, false)
			require.NoError(t, err)
			require.Equal(t, lso, ri.LastStableOffset)
			if ri.Region.Length == 0 {
				require.Empty(t, ri.AbortedTransactions)
				continue
			}
			// Whole batches in the region.
			b := regionBytes(t, ri.Region)
			var lastInRegion int64 = -1
			for len(b) >= record.BatchHeaderSize {
				bt := record.Batch(b)
				if bt.Size() > len(b) {
					break
				}
				require.Less(t, bt.LastOffset(), lso, "read_committed returns nothing at or above the LSO")
				lastInRegion = bt.LastOffset()
				b = b[bt.Size():]
			}
			for _, a := range m.aborted {
				if a.LastOffset >= start && a.FirstOffset <= lastInRegion {
					require.True(t, slices.ContainsFunc(ri.AbortedTransactions, func(g AbortedTxn) bool {
						return g.ProducerID == a.ProducerID && g.FirstOffset == a.FirstOffset
					}), "start %d max %d: aborted %+v with data in the region is missing from %+v", start, maxBytes, a, ri.AbortedTransactions)
				}
			}
			for _, g := range ri.AbortedTransactions {
				require.GreaterOrEqual(t, g.LastOffset, start)
				require.Less(t, g.FirstOffset, lso)
			}
		}
	}
}

// TestFollowerTxnStateEqualsLeader replicates a transactional log batch by
// batch (every file byte for byte, the .txnindex included) and in one
// chunk (the same state and aborted transactions).
func TestFollowerTxnStateEqualsLeader(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1200
	cfg.IndexIntervalBytes = 150
	leader := newTxnLog(t, nil, cfg)
	m := runTxnWorkload(t, leader, rand.New(rand.NewPCG(3, 4)), 200)
	require.NotEmpty(t, m.aborted)
	batches := logBatches(t, leader.Log)

	byBatch := openTestLog(t, nil, cfg)
	byBatch.clock = leader.clock
	var chunk []byte
	for _, bt := range batches {
		_, err := byBatch.AppendAsFollower(bt)
		require.NoError(t, err)
		chunk = append(chunk, bt...)
	}
	oneChunk := openTestLog(t, nil, cfg)
	_, err := oneChunk.AppendAsFollower(chunk)
	require.NoError(t, err)

	hw := leader.HighWatermark()
	for _, f := range []*testLog{byBatch, oneChunk} {
		f.SetHighWatermark(hw)
		require.Equal(t, leader.ProducerState(), f.ProducerState())
		require.Equal(t, leader.OngoingTransactions(), f.OngoingTransactions())
		require.Equal(t, leader.LastStableOffset(), f.LastStableOffset())
		require.Equal(t, leader.AbortedTransactions(0, math.MaxInt64), f.AbortedTransactions(0, math.MaxInt64))
	}
	// As a new leader, the follower completes the open transactions.
	open := oneChunk.OngoingTransactions()
	require.NotEmpty(t, open)
	for _, o := range open {
		_, err := oneChunk.AppendMarker(o.ProducerID, 0, 5, false, 1, 1_800_000_000_000)
		require.NoError(t, err)
	}
	require.Empty(t, oneChunk.OngoingTransactions())
	oneChunk.SetHighWatermark(oneChunk.LogEndOffset())
	require.Equal(t, oneChunk.LogEndOffset(), oneChunk.LastStableOffset())
	require.Len(t, oneChunk.AbortedTransactions(0, math.MaxInt64), len(m.aborted)+len(open))

	leader.closeLog()
	byBatch.closeLog()
	require.Equal(t, dirFiles(t, leader.dir), dirFiles(t, byBatch.dir))
}

// dirFiles reads every file of dir.
func dirFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = b
	}
	return out
}

// TestTxnSnapshotRoundTrip: open transactions, coordinator epochs and
// completed-but-unreplicated ones survive a clean restart through the
// snapshot; the LSO after the restart is the one before it.
func TestTxnSnapshotRoundTrip(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 2)    // 0-1
	x.data(2, 1)    // 2
	x.end(1, false) // 3
	x.data(3, 2)    // 4-5
	x.plain(2)      // 6-7
	x.hwToEnd()
	before := x.ProducerState()
	lso := x.LastStableOffset()
	require.Equal(t, int64(2), lso)
	hw := x.HighWatermark()
	x.closeLog()

	entries := snapshotEntries(t, x.dir, 8)
	require.Len(t, entries, 3)
	require.Equal(t, int64(-1), entries[0].CurrentTxnFirstOffset)
	require.Equal(t, int32(5), entries[0].CoordinatorEpoch)
	require.Equal(t, int64(2), entries[1].CurrentTxnFirstOffset)
	require.Equal(t, int32(-1), entries[1].CoordinatorEpoch)
	require.Equal(t, int64(4), entries[2].CurrentTxnFirstOffset)

	x.reopen(WithCleanShutdown(true), WithHighWatermark(hw))
	require.Equal(t, lso, x.LastStableOffset())
	require.Equal(t, []OpenTxn{{2, 2}, {3, 4}}, x.OngoingTransactions())
	after := x.ProducerState()
	for i := range before {
		// The snapshot keeps one batch per producer, and one timestamp
		// (the producer's last, as Kafka's format).
		before[i].Batches = before[i].Batches[len(before[i].Batches)-1:]
		before[i].Batches[0].Timestamp = before[i].LastTimestamp
	}
	require.Equal(t, before, after)

	// The transactions complete after the restart as before it.
	x.end(2, true)
	x.end(3, false)
	x.hwToEnd()
	require.Equal(t, x.LogEndOffset(), x.LastStableOffset())
	require.Equal(t, []AbortedTxn{{1, 0, 3, 2}, {3, 4, 9, 10}}, x.AbortedTransactions(0, 100))

	// Unclean restart from an older snapshot replays to the same state.
	x.Log.closeWithoutFlush()
	x.Log = nil
	x.reopen(WithRecoveryPoint(8), WithHighWatermark(10))
	require.Empty(t, x.OngoingTransactions())
	require.Equal(t, int64(10), x.LastStableOffset())
	require.Equal(t, []AbortedTxn{{1, 0, 3, 2}, {3, 4, 9, 10}}, x.AbortedTransactions(0, 100))
}

func snapshotEntries(t testing.TB, dir string, offset int64) []snapshotEntryView {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, snapshotName(offset)))
	require.NoError(t, err)
	// version int16, crc uint32, count int32, then 46-byte entries.
	n := int(binary.BigEndian.Uint32(b[6:]))
	require.Len(t, b, 10+46*n)
	var out []snapshotEntryView
	for e := b[10:]; len(e) > 0; e = e[46:] {
		out = append(out, snapshotEntryView{
			ProducerID:            int64(binary.BigEndian.Uint64(e)),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(e[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(e[38:])),
		})
	}
	return out
}

type snapshotEntryView struct {
	ProducerID            int64
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
}

// TestConcurrentReadCommitted runs read_committed reads against appends,
// markers and HW moves (for the race detector).
func TestConcurrentReadCommitted(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 2000
	x := newTxnLog(t, vfs.NewMem(), cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			pid := int64(1 + i%3)
			if i%4 == 3 {
				_, _ = x.AppendMarker(pid, 0, 5, i%8 == 3, 0, int64(i))
				continue
			}
			b := txnBatch(t, pid, 0, int32(i), 1, int64(i))
			_, _ = x.Append(b, 0)
			x.SetHighWatermark(x.LogEndOffset())
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		lso := x.LastStableOffset()
		ri, err := x.ReadCommitted(x.LogStartOffset(), 500, false)
		require.NoError(t, err)
		require.LessOrEqual(t, lso, ri.LastStableOffset)
		_ = x.AbortedTransactions(0, lso)
	}
}

// TestCleanKeepsAbortedTransactions: the clean that removes the aborted
// records keeps every .txnindex entry of the segments it replaces (as
// Kafka's cleaner does while it still reads batches of the transaction),
// each in the segment of its marker, and the dirty section ends at the
// last stable offset. After an unclean restart the entries are rebuilt
// from what is left in the log (cleaner_txn_test.go checks the rules).
func TestCleanKeepsAbortedTransactions(t *testing.T) {
	cfg := compactConfig()
	x := newTxnLog(t, nil, cfg)
	for round := range 40 {
		for k := range 5 {
			appendKVs(t, x.Log, record.CodecNone, kv{key: fmt.Sprintf("k%d", k), value: fmt.Sprintf("v%d-%d", k, round), ts: x.ts})
		}
		x.data(int64(1+round%3), 2)
		if round%3 == 2 {
			x.end(1, round%2 == 0)
			x.end(2, false)
			x.end(3, true)
		}
	}
	x.end(1, false)
	open := x.data(4, 1) // stays open: the clean stops below it
	for range 30 {
		appendKVs(t, x.Log, record.CodecNone, kv{key: "k0", value: "later", ts: x.ts})
	}
	x.hwToEnd()
	require.Equal(t, open.FirstOffset, x.LastStableOffset())
	aborted := x.AbortedTransactions(0, math.MaxInt64)
	require.NotEmpty(t, aborted)
	segs := x.NumSegments()

	st, err := x.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.Less(t, st.BytesAfter, st.BytesBefore)
	require.LessOrEqual(t, x.NumSegments(), segs)
	require.LessOrEqual(t, st.EndOffset, open.FirstOffset, "nothing at or above the LSO is cleaned")
	require.Equal(t, aborted, x.AbortedTransactions(0, math.MaxInt64))
	committed := consume(t, x.Log, true)
	// Each entry sits in the file of the segment holding its marker.
	bases := x.SegmentBaseOffsets()
	var inFiles []AbortedTxn
	for name, entries := range txnIndexFiles(t, x.dir) {
		base, _, ok := ParseFileName(name)
		require.True(t, ok)
		require.Contains(t, bases, base, "%s belongs to a live segment", name)
		for _, a := range entries {
			i, _ := slices.BinarySearch(bases, a.LastOffset+1)
			require.Equal(t, base, bases[i-1], "entry %+v in %s", a, name)
		}
		inFiles = append(inFiles, entries...)
	}
	slices.SortFunc(inFiles, func(a, b AbortedTxn) int { return int(a.LastOffset - b.LastOffset) })
	require.Equal(t, aborted, inFiles)

	// A clean restart loads them; an unclean one (nothing checkpointed)
	// rebuilds them from the markers and what is left of their
	// transactions.
	x.closeLog()
	x.reopen(WithCleanShutdown(true), WithHighWatermark(math.MaxInt64))
	require.Equal(t, aborted, x.AbortedTransactions(0, math.MaxInt64))
	x.Log.closeWithoutFlush()
	x.Log = nil
	x.reopen(WithHighWatermark(math.MaxInt64))
	checkTxnIndex(t, x.Log, "after recovery")
	require.Equal(t, committed, consume(t, x.Log, true))
	require.Equal(t, open.FirstOffset, x.LastStableOffset())
}

// TestCleanCrashKeepsAbortedTransactions crashes a clean of a log with
// aborted transactions at each file-system step and reopens it with the
// recovery point at the log end (everything was flushed before the
// clean): whichever version of the segments survives, a read_committed
// consumer reads no aborted record and every key's latest committed
// value, and every aborted transaction with data left is indexed, also
// when an interrupted swap had to be completed at start-up (its
// .txnindex is rebuilt from the markers).
func TestCleanCrashKeepsAbortedTransactions(t *testing.T) {
	const dir = "/data/crash-0"
	cfg := compactConfig()
	tmpl := vfs.NewMem()
	clock := newFakeClock()
	l := openCompacted(t, tmpl, dir, cfg, clock)
	x := &txnLog{testLog: &testLog{Log: l, t: t, dir: dir, fsys: tmpl, clock: clock, cfg: cfg},
		epoch: map[int64]int16{}, seq: map[int64]int32{}, ts: clock.Now().UnixMilli()}
	for round := range 30 {
		for k := range 4 {
			appendKVs(t, l, record.CodecNone, kv{key: fmt.Sprintf("k%d", k), value: fmt.Sprintf("v%d", round), ts: x.ts})
		}
		x.data(int64(1+round%2), 1)
		if round%2 == 1 {
			x.end(1, false)
			x.end(2, round%4 == 1)
		}
	}
	for range 20 {
		appendKVs(t, l, record.CodecNone, kv{key: "k0", value: "later", ts: x.ts})
	}
	x.hwToEnd()
	aborted := l.AbortedTransactions(0, math.MaxInt64)
	require.Greater(t, len(aborted), 10)
	committed := consume(t, l, true)
	leo := l.LogEndOffset()
	require.NoError(t, l.Close())

	swapsCompleted := 0
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
			require.Equal(t, aborted, l.AbortedTransactions(0, math.MaxInt64))
			require.NoError(t, l.Close())
			break
		}
		require.Error(t, err, "step %d", k)
		l.closeWithoutFlush()
		if crash == nil {
			crash = mem.CrashClone()
		}
		if slices.ContainsFunc(must(crash.ReadDir(dir)), func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), LogSuffix+SwapSuffix) }) {
			swapsCompleted++
		}
		r, err := Open(dir, cfg, WithFS(crash), WithClock(clock.Now), WithLogger(testLogger(t)),
			WithRecoveryPoint(leo), WithHighWatermark(math.MaxInt64))
		require.NoError(t, err, "reopen after step %d", k)
		what := fmt.Sprintf("step %d", k)
		checkTxnIndex(t, r, what)
		checkCompactionOf(t, consume(t, r, true), committed, what)
		require.Equal(t, leo, r.LastStableOffset(), what)
		require.NoError(t, r.Close())
	}
	require.Positive(t, swapsCompleted, "some crashes leave a swap to complete")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestKafkaTxnIndexValues is the scenario of Kafka's
// LogSegmentTest.testRecoverTransactionIndex, with its expected entry:
// pid 5's transaction at 100-101, pid 10's at 102-103, plain records at
// 104-105, pid 10 aborts at 106, pid 5 commits at 107 → one entry (10,
// 102, 106, lastStableOffset 100). Appended, and rebuilt by recovery.
func TestKafkaTxnIndexValues(t *testing.T) {
	x := &txnLog{testLog: openTestLog(t, nil, smallConfig(), WithLogStartOffset(100)),
		epoch: map[int64]int16{}, seq: map[int64]int32{5: 100, 10: 100}, ts: 1_700_000_000_000}
	require.Equal(t, int64(100), x.data(5, 2).FirstOffset)
	require.Equal(t, int64(102), x.data(10, 2).FirstOffset)
	x.plain(2)
	require.Equal(t, int64(106), x.end(10, false).FirstOffset)
	require.Equal(t, int64(107), x.end(5, true).FirstOffset)
	want := []AbortedTxn{{ProducerID: 10, FirstOffset: 102, LastOffset: 106, LastStableOffset: 100}}
	require.Equal(t, want, readTxnIndexFile(t, FileName(x.dir, 100, TxnIndexSuffix)))

	x.Log.closeWithoutFlush()
	x.Log = nil
	require.NoError(t, os.Remove(FileName(x.dir, 100, TxnIndexSuffix)))
	x.reopen(WithLogStartOffset(100), WithRecoveryPoint(100))
	require.Equal(t, int64(108), x.LogEndOffset())
	require.Equal(t, want, readTxnIndexFile(t, FileName(x.dir, 100, TxnIndexSuffix)))
}

func TestTruncateFullyForgetsTransactions(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 1)
	x.end(1, false)
	x.data(2, 1)
	x.hwToEnd()
	require.NotEmpty(t, txnIndexFiles(t, x.dir))
	require.NoError(t, x.TruncateFullyAndStartAt(50))
	require.Empty(t, txnIndexFiles(t, x.dir))
	require.Empty(t, x.OngoingTransactions())
	require.Empty(t, x.AbortedTransactions(0, math.MaxInt64))
	require.Equal(t, int64(50), x.LastStableOffset())
	_, ok := x.Producer(2)
	require.False(t, ok)
}
