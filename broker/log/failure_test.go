package log

import (
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// Regression tests of storage failures and of recovery (reviewer probes).

// followerBatch is a batch as a leader sent it: base offset and leader
// epoch set.
func followerBatch(t *testing.T, base int64, n int, ts int64) []byte {
	t.Helper()
	b := makeBatch(t, n, ts, 100)
	bt := record.Batch(b)
	bt.SetBaseOffset(base)
	bt.SetPartitionLeaderEpoch(0)
	return b
}

// TestFailedLogGetsNoCleanShutdownMarker: a write that failed half way and
// whose undo (truncate) failed too leaves a torn tail. Closing the Manager
// must not write the clean-shutdown marker, so that the next start
// recovers the log and cuts the garbage.
func TestFailedLogGetsNoCleanShutdownMarker(t *testing.T) {
	mem := vfs.NewMem()
	fault := vfs.NewFaulty(mem, nil, vfs.WithPartialWrites(rand.New(rand.NewPCG(1, 2))))
	cfg := smallConfig()
	m, err := OpenManager(ManagerConfig{LogDirs: []string{"/data"}, FS: fault, Logger: testLogger(t), DefaultConfig: cfg})
	require.NoError(t, err)
	l, err := m.CreateLog("t", 0, cfg)
	require.NoError(t, err)
	first := makeBatch(t, 5, 1000, 100)
	_, err = l.Append(first, 0)
	require.NoError(t, err)

	fault.SetInjector(vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if strings.HasSuffix(path, LogSuffix) && (op == vfs.OpWrite || op == vfs.OpTruncate) {
			return vfs.ErrInjected
		}
		return nil
	}))
	_, err = l.Append(makeBatch(t, 50, 2000, 100), 0)
	require.Error(t, err)
	fault.SetInjector(nil)
	require.ErrorIs(t, l.Failed(), vfs.ErrInjected)
	_, err = l.Append(makeBatch(t, 1, 2500, 100), 0)
	require.ErrorIs(t, err, ErrFailed, "a failed log refuses appends")

	// The failure takes the dir offline (logdir.go), which closes the log.
	waitUntil(t, "the log dir to go offline", func() bool { return slices.Equal(m.OfflineDirs(), []string{"/data"}) })
	_, ok := m.GetLog("t", 0)
	require.False(t, ok, "the failed log is still served")
	require.NoError(t, m.Close())
	clean, _, err := checkpoint.ReadCleanShutdown(mem, "/data")
	require.NoError(t, err)
	require.False(t, clean, "no clean-shutdown marker for a dir with a failed log")

	m2, err := OpenManager(ManagerConfig{LogDirs: []string{"/data"}, FS: mem, Logger: testLogger(t), DefaultConfig: cfg})
	require.NoError(t, err)
	defer m2.Close()
	l2, ok := m2.GetLog("t", 0)
	require.True(t, ok)
	require.Equal(t, int64(5), l2.LogEndOffset())
	require.Positive(t, l2.RecoveryStats().TruncatedBytes, "recovery cut the torn tail")
	st, err := mem.Stat("/data/t-0/00000000000000000000.log")
	require.NoError(t, err)
	require.Equal(t, int64(len(first)), st.Size())

	_, err = l2.Append(makeBatch(t, 1, 3000, 100), 0)
	require.NoError(t, err)
	r, err := l2.Read(5, 1<<20, -1)
	require.NoError(t, err)
	buf := make([]byte, r.Region.Length)
	_, err = r.Region.File.ReadAt(buf, r.Region.Position)
	require.NoError(t, err)
	bt, err := record.Validate(buf)
	require.NoError(t, err, "the batch at offset 5 is the one appended after the restart")
	require.Equal(t, int64(5), bt.BaseOffset())
}

// flushedGapLog is a follower's log on a Mem file system with a gap at a
// segment boundary: offsets 0-4 in segment 0, 10-14 in segment 10 (the
// leader's log was compacted), flushed.
func flushedGapLog(t *testing.T) (*vfs.MemFS, Config, *Log) {
	t.Helper()
	fsys := vfs.NewMem()
	cfg := smallConfig()
	cfg.SegmentBytes = 1000
	l, err := Open(crashDir, cfg, WithFS(fsys), WithLogger(testLogger(t)))
	require.NoError(t, err)
	_, err = l.AppendAsFollower(followerBatch(t, 0, 5, 1000))
	require.NoError(t, err)
	_, err = l.AppendAsFollower(followerBatch(t, 10, 5, 2000))
	require.NoError(t, err)
	require.NoError(t, l.Flush(l.LogEndOffset()))
	return fsys, cfg, l
}

// TestGapBetweenFlushedSegmentsSurvivesUncleanOpen: a follower whose
// leader skipped offsets (compacted topic) rolls at the gap. Once flushed,
// both segments are durable and an unclean open (recovery point not yet
// checkpointed) must keep them; a second crash must too.
func TestGapBetweenFlushedSegmentsSurvivesUncleanOpen(t *testing.T) {
	fsys, cfg, l := flushedGapLog(t)
	require.Equal(t, []int64{0, 10}, l.SegmentBaseOffsets())

	crash := fsys.CrashClone()
	l2, err := Open(crashDir, cfg, WithFS(crash), WithLogger(testLogger(t)), WithRecoveryPoint(0))
	require.NoError(t, err)
	require.Equal(t, int64(15), l2.LogEndOffset(), "a fully fsynced log lost no data")
	require.Equal(t, []int64{0, 10}, l2.SegmentBaseOffsets())
	require.Zero(t, l2.RecoveryStats().DeletedSegments)
	require.GreaterOrEqual(t, l2.RecoveryPoint(), int64(10), "the proven boundary is the recovery point")

	// The broker crashes again before it checkpoints anything.
	crash2 := crash.CrashClone()
	l3, err := Open(crashDir, cfg, WithFS(crash2), WithLogger(testLogger(t)), WithRecoveryPoint(0))
	require.NoError(t, err)
	require.Equal(t, int64(15), l3.LogEndOffset())
	require.Equal(t, []int64{0, 10}, l3.SegmentBaseOffsets())
	require.NoError(t, l3.Close())
	require.NoError(t, l2.Close())
	require.NoError(t, l.Close())
}

// TestUnprovenGapEndsLog: without the proof (no snapshot at the next
// segment's base), a segment ending below the next one's base is a crash
// hole, and the log ends there as before.
func TestUnprovenGapEndsLog(t *testing.T) {
	fsys, cfg, l := flushedGapLog(t)
	require.NoError(t, l.Close())
	require.NoError(t, fsys.Remove(crashDir+"/"+snapshotName(10)))

	l2, err := Open(crashDir, cfg, WithFS(fsys), WithLogger(testLogger(t)), WithRecoveryPoint(0))
	require.NoError(t, err)
	defer l2.Close()
	require.Equal(t, int64(5), l2.LogEndOffset())
	require.Equal(t, 1, l2.RecoveryStats().DeletedSegments)
}

// TestRetainedRegionOutlivesSegmentDeletion: a region handed to sendfile
// (ReadRetained) keeps its segment file open after retention deleted the
// segment with file.delete.delay.ms=0, and after the log closed, until it
// is released; only then is the descriptor closed (and free for reuse).
func TestRetainedRegionOutlivesSegmentDeletion(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig() // file.delete.delay.ms 0
	cfg.SegmentBytes = 1000
	l, err := Open(crashDir, cfg, WithFS(fsys), WithLogger(testLogger(t)))
	require.NoError(t, err)
	for i := range 4 {
		_, err := l.Append(makeBatch(t, 5, int64(1000*i), 100), 0)
		require.NoError(t, err)
	}
	require.Greater(t, l.NumSegments(), 2)
	l.SetHighWatermark(l.LogEndOffset())

	retained, err := l.ReadRetained(0, 1<<20, -1)
	require.NoError(t, err)
	closing, err := l.ReadRetained(l.LogEndOffset()-1, 1<<20, -1)
	require.NoError(t, err)

	_, err = l.DeleteRecordsBefore(l.LogEndOffset() - 1)
	require.NoError(t, err)
	n, err := l.DeleteOldSegments()
	require.NoError(t, err)
	require.Positive(t, n)

	buf := make([]byte, retained.Region.Length)
	_, err = retained.Region.File.ReadAt(buf, retained.Region.Position)
	require.NoError(t, err, "a retained region's file stays open after its segment is deleted")
	_, err = record.Validate(buf)
	require.NoError(t, err)

	retained.Region.Release()
	_, err = retained.Region.File.ReadAt(buf[:1], retained.Region.Position)
	require.ErrorIs(t, err, fs.ErrClosed, "released: the deleted segment's file is closed")

	// Close leaves a held file open until its region is released.
	require.NoError(t, l.Close())
	_, err = closing.Region.File.ReadAt(buf[:1], closing.Region.Position)
	require.NoError(t, err)
	closing.Region.Release()
	_, err = closing.Region.File.ReadAt(buf[:1], closing.Region.Position)
	require.ErrorIs(t, err, fs.ErrClosed)
}

// dirState maps each file of dir to its content.
func dirState(t *testing.T, fsys vfs.FS, dir string) map[string]string {
	t.Helper()
	ents, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range ents {
		out[e.Name()] = string(readAll(t, fsys, dir+"/"+e.Name()))
	}
	return out
}

// TestDeletedLogWritesNothingIntoRecreatedDir: DeleteLog stops the log
// before renaming its directory: the background flusher (here waiting for
// a running flush) finishes first and pending producer snapshots are
// dropped, and later calls on the old Log write nothing, so a partition
// created again at the same path never sees the deleted one's files.
func TestDeletedLogWritesNothingIntoRecreatedDir(t *testing.T) {
	mem := vfs.NewMem()
	cfg := smallConfig()
	cfg.SegmentBytes = 1000
	cfg.FileDeleteDelayMs = 60_000
	mc := ManagerConfig{LogDirs: []string{"/data"}, FS: mem, Logger: testLogger(t), DefaultConfig: cfg,
		RetentionCheckIntervalMs: -1, FlushOffsetCheckpointIntervalMs: -1, FlushStartOffsetCheckpointMs: -1, HighWatermarkCheckpointMs: -1}
	m, err := OpenManager(mc)
	require.NoError(t, err)
	old, err := m.CreateLog("t", 0, cfg)
	require.NoError(t, err)

	old.flushMu.Lock() // a long flush is running: the flusher started at roll waits
	for i := range 6 {
		_, err := old.Append(makeBatch(t, 5, int64(1000*i), 100), 0)
		require.NoError(t, err)
	}
	require.Greater(t, old.NumSegments(), 2)
	deleted := make(chan error)
	go func() { deleted <- m.DeleteLog("t", 0) }()
	old.flushMu.Unlock()
	require.NoError(t, <-deleted)

	nl, err := m.CreateLog("t", 0, cfg)
	require.NoError(t, err)
	before := dirState(t, mem, nl.Dir())
	require.ErrorIs(t, old.Flush(old.LogEndOffset()), ErrClosed)
	require.ErrorIs(t, old.FlushIfDue(), ErrClosed)
	require.ErrorIs(t, old.AssignLeaderEpoch(7), ErrClosed)
	_, err = old.Append(makeBatch(t, 1, 9000, 100), 0)
	require.ErrorIs(t, err, ErrClosed)
	_, err = old.DeleteOldSegments()
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, before, dirState(t, mem, nl.Dir()), "the deleted log wrote into the new partition's directory")
	for name := range before {
		require.False(t, strings.HasSuffix(name, SnapshotSuffix), "snapshot %s of the deleted log in the new directory", name)
	}
	require.NoError(t, m.Close())
}

// TestDeleteLogOfLongTopic: the directory of a deleted partition whose
// topic has 249 characters is renamed to a name of at most 255 bytes (the
// topic is cut, as Kafka does), so the deletion works and the partition
// does not come back at the next start.
func TestDeleteLogOfLongTopic(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig()
	mc := ManagerConfig{LogDirs: []string{dir}, Logger: testLogger(t), DefaultConfig: cfg, RetentionCheckIntervalMs: -1}
	m, err := OpenManager(mc)
	require.NoError(t, err)
	topic := strings.Repeat("x", 249)
	_, err = m.CreateLog(topic, 7, cfg)
	require.NoError(t, err)
	require.NoError(t, m.DeleteLog(topic, 7))
	_, ok := m.GetLog(topic, 7)
	require.False(t, ok)
	ents, err := vfs.OS.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if e.IsDir() {
			require.LessOrEqual(t, len(e.Name()), 255)
			require.True(t, strings.HasSuffix(e.Name(), "-delete"), e.Name())
			require.True(t, strings.HasPrefix(e.Name(), "xxx"), e.Name())
		}
	}
	require.NoError(t, m.Close())

	m2, err := OpenManager(mc)
	require.NoError(t, err)
	_, ok = m2.GetLog(topic, 7)
	require.False(t, ok, "the deleted partition is back after a restart")
	require.NoError(t, m2.Close())
	require.Len(t, deleteDirName(TopicPartition{Topic: topic, Partition: 2147483647}), 255)
	require.Equal(t, "t-0.", deleteDirName(TopicPartition{Topic: "t", Partition: 0})[:4])
}

// TestDeleteLogRenameFailureKeepsPartition: when the directory cannot be
// renamed, the partition stays in the Manager and keeps working.
func TestDeleteLogRenameFailureKeepsPartition(t *testing.T) {
	mem := vfs.NewMem()
	fault := vfs.NewFaulty(mem, nil)
	cfg := smallConfig()
	m, err := OpenManager(ManagerConfig{LogDirs: []string{"/data"}, FS: fault, Logger: testLogger(t), DefaultConfig: cfg, RetentionCheckIntervalMs: -1})
	require.NoError(t, err)
	l, err := m.CreateLog("t", 0, cfg)
	require.NoError(t, err)
	fault.SetInjector(vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpRename && path == "/data/t-0" {
			return vfs.ErrInjected
		}
		return nil
	}))
	require.ErrorIs(t, m.DeleteLog("t", 0), vfs.ErrInjected)
	fault.SetInjector(nil)
	got, ok := m.GetLog("t", 0)
	require.True(t, ok)
	require.Same(t, l, got)
	_, err = l.Append(makeBatch(t, 1, 1000, 100), 0)
	require.NoError(t, err)
	require.NoError(t, m.Close())
}

// TestCleanedLogWithGapsReopensUnclean: a compacted follower log (offsets
// missing between and inside segments), cleaned and flushed, loses no
// segment when reopened after a crash with nothing checkpointed.
func TestCleanedLogWithGapsReopensUnclean(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 1000
	l := openCompacted(t, fsys, crashDir, cfg, clock)
	next := int64(0)
	for i := range 12 {
		_, err := l.AppendAsFollower(followerBatch(t, next, 3, clock.Now().UnixMilli()+int64(i)))
		require.NoError(t, err)
		next += 3 + int64(i%3)*4 // the leader's log is compacted already
	}
	l.SetHighWatermark(l.LogEndOffset())
	_, err := l.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.NoError(t, l.Flush(l.LogEndOffset()))
	bases, leo := l.SegmentBaseOffsets(), l.LogEndOffset()
	require.Greater(t, len(bases), 2)

	l2 := openCompacted(t, fsys.CrashClone(), crashDir, cfg, clock, WithRecoveryPoint(0))
	defer l2.Close()
	require.Equal(t, leo, l2.LogEndOffset())
	require.Equal(t, bases, l2.SegmentBaseOffsets())
	require.Zero(t, l2.RecoveryStats().DeletedSegments)
	require.NoError(t, l.Close())
}

// TestFailedIndexFlushFailsLog: an index holds no descriptor, so a flush
// opens each changed index file, writes its buffered entries and fsyncs
// it (outside the log's lock). A failure at any of those steps fails the
// log as a failed .log write or fsync does: the recovery point stays,
// writes and flushes are refused, Close reports it.
func TestFailedIndexFlushFailsLog(t *testing.T) {
	for _, tc := range []struct {
		op     vfs.Op
		suffix string
	}{
		{vfs.OpOpen, IndexSuffix},
		{vfs.OpWrite, IndexSuffix},
		{vfs.OpSync, IndexSuffix},
		{vfs.OpOpen, TimeIndexSuffix},
		{vfs.OpWrite, TimeIndexSuffix},
		{vfs.OpSync, TimeIndexSuffix},
	} {
		t.Run(tc.op.String()+tc.suffix, func(t *testing.T) {
			mem := vfs.NewMem()
			faulty := vfs.NewFaulty(mem, nil)
			l, err := Open(crashDir, crashConfig(), WithFS(faulty), WithLogger(testLogger(t)))
			require.NoError(t, err)
			for i := range 5 {
				_, err := l.Append(makeBatch(t, 5, int64(1000*i), 100), 0)
				require.NoError(t, err)
			}
			require.Positive(t, l.active().index.Entries())
			require.Positive(t, l.active().timeIndex.Entries())
			faulty.SetInjector(vfs.FailPath(tc.op, tc.suffix, nil))
			err = l.Flush(l.LogEndOffset())
			require.ErrorIs(t, err, vfs.ErrInjected)
			faulty.SetInjector(nil)
			require.ErrorIs(t, l.Failed(), vfs.ErrInjected)
			require.Zero(t, l.RecoveryPoint())
			require.ErrorIs(t, l.Flush(l.LogEndOffset()), ErrFailed)
			_, err = l.Append(makeBatch(t, 1, 9000, 100), 0)
			require.ErrorIs(t, err, ErrFailed)
			require.ErrorIs(t, l.Close(), ErrFailed)

			l2, err := Open(crashDir, crashConfig(), WithFS(mem.CrashClone()), WithLogger(testLogger(t)))
			require.NoError(t, err)
			require.Equal(t, int64(25), l2.LogEndOffset(), "recovery keeps what the .log holds")
			require.NoError(t, l2.Close())
		})
	}
}
