package log

import (
	"math/rand/v2"
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

	err = m.Close()
	require.ErrorIs(t, err, ErrFailed)
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

// TestGapBetweenFlushedSegmentsSurvivesUncleanOpen: a follower whose
// leader skipped offsets (compacted topic) rolls at the gap. Once flushed,
// both segments are durable and an unclean open (recovery point not yet
// checkpointed) must keep them; a second crash must too.
func TestGapBetweenFlushedSegmentsSurvivesUncleanOpen(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := smallConfig()
	cfg.SegmentBytes = 1000
	l, err := Open(crashDir, cfg, WithFS(fsys), WithLogger(testLogger(t)))
	require.NoError(t, err)
	_, err = l.AppendAsFollower(followerBatch(t, 0, 5, 1000))
	require.NoError(t, err)
	_, err = l.AppendAsFollower(followerBatch(t, 10, 5, 2000))
	require.NoError(t, err)
	require.Equal(t, []int64{0, 10}, l.SegmentBaseOffsets())
	require.NoError(t, l.Flush(l.LogEndOffset()))

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
	require.NoError(t, l.Close())
	require.NoError(t, fsys.Remove(crashDir+"/"+snapshotName(10)))

	l2, err := Open(crashDir, cfg, WithFS(fsys), WithLogger(testLogger(t)), WithRecoveryPoint(0))
	require.NoError(t, err)
	defer l2.Close()
	require.Equal(t, int64(5), l2.LogEndOffset())
	require.Equal(t, 1, l2.RecoveryStats().DeletedSegments)
}
