package log

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// logBytes is every .log segment of l, concatenated.
func logBytes(t *testing.T, fsys vfs.FS, l *Log) []byte {
	t.Helper()
	var all []byte
	for _, base := range l.SegmentBaseOffsets() {
		all = append(all, readAll(t, fsys, FileName(l.Dir(), base, LogSuffix))...)
	}
	return all
}

// TestFutureLogMove: a partition's log in d1 is copied into a future log
// in d2 (named <topic>-<partition>.<uuid>-future) while appends go on,
// then promoted: the log is in d2 byte for byte from the batch holding its
// log start offset, with its log start
// offset and high watermark, the old directory is renamed for deletion
// and removed, and a restart finds the partition in d2 only.
func TestFutureLogMove(t *testing.T) {
	mem := vfs.NewMem()
	cfg := managerConfig(t, mem)
	m, err := OpenManager(cfg)
	require.NoError(t, err)
	l, err := m.CreateLog("t", 0, cfg.DefaultConfig)
	require.NoError(t, err)
	d1 := filepathDir(l.Dir())
	d2 := testDirs[0]
	if d1 == d2 {
		d2 = testDirs[1]
	}
	for range 20 {
		_, err := l.Append(makeBatch(t, 5, 1000, 100), 0)
		require.NoError(t, err)
	}
	l.SetHighWatermark(60)
	_, err = l.DeleteRecordsBefore(7)
	require.NoError(t, err)
	require.Greater(t, l.NumSegments(), 1)

	_, err = m.CreateFutureLog("t", 0, "/nowhere", cfg.DefaultConfig)
	require.ErrorIs(t, err, ErrLogDirNotFound)
	_, err = m.CreateFutureLog("t", 0, d1, cfg.DefaultConfig)
	require.Error(t, err, "a future log in the log's own dir")
	f, err := m.CreateFutureLog("t", 0, d2, cfg.DefaultConfig)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(f.Dir(), "-future"), f.Dir())
	again, dir, ok := m.FutureLog("t", 0)
	require.True(t, ok)
	require.Same(t, f, again)
	require.Equal(t, d2, dir)

	for i := 0; ; i++ {
		n, err := l.CopyTo(f, 2000)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		if i == 2 { // appends go on during the copy
			_, err := l.Append(makeBatch(t, 3, 2000, 100), 0)
			require.NoError(t, err)
		}
	}
	require.Equal(t, l.LogEndOffset(), f.LogEndOffset())
	want := logBytes(t, mem, l)
	oldDir := l.Dir()

	nl, err := m.PromoteFutureLog("t", 0)
	require.NoError(t, err)
	require.Equal(t, d2+"/t-0", nl.Dir())
	require.Equal(t, int64(7), nl.LogStartOffset())
	require.Equal(t, int64(60), nl.HighWatermark())
	require.Equal(t, l.LogEndOffset(), nl.LogEndOffset())
	// From the batch holding the log start offset on (the old log still
	// has the batch below it, which retention has yet to delete).
	moved := logBytes(t, mem, nl)
	require.True(t, bytes.HasSuffix(want, moved), "the moved log differs")
	require.Equal(t, int64(5), record.Batch(moved).BaseOffset(), "the moved log starts at the batch holding offset 7")
	got, ok := m.GetLog("t", 0)
	require.True(t, ok)
	require.Same(t, nl, got)
	d, _ := m.DirOf("t", 0)
	require.Equal(t, d2, d)
	_, _, ok = m.FutureLog("t", 0)
	require.False(t, ok)
	_, err = mem.Stat(oldDir)
	require.Error(t, err, "the old directory is still there")
	_, err = l.Append(makeBatch(t, 1, 3000, 10), 0)
	require.Error(t, err, "the replaced log takes appends")
	_, err = nl.Append(makeBatch(t, 1, 3000, 10), 0)
	require.NoError(t, err)
	require.NoError(t, m.Close())

	m2, err := OpenManager(managerConfig(t, mem))
	require.NoError(t, err)
	defer m2.Close()
	l2, ok := m2.GetLog("t", 0)
	require.True(t, ok)
	require.Equal(t, d2+"/t-0", l2.Dir())
	require.Equal(t, nl.LogEndOffset(), l2.LogEndOffset())
}

// TestFutureLogResumesAndFollowsTruncation: a future log survives a
// restart (the move resumes); the current log truncated and grown again
// in a new leader epoch makes CopyTo truncate the future log to where they
// diverged; AbortFutureLog removes it.
func TestFutureLogResumesAndFollowsTruncation(t *testing.T) {
	mem := vfs.NewMem()
	cfg := managerConfig(t, mem)
	m, err := OpenManager(cfg)
	require.NoError(t, err)
	l, err := m.CreateLog("t", 0, cfg.DefaultConfig)
	require.NoError(t, err)
	d2 := testDirs[0]
	if filepathDir(l.Dir()) == d2 {
		d2 = testDirs[1]
	}
	for range 10 {
		_, err := l.Append(makeBatch(t, 2, 1000, 50), 1)
		require.NoError(t, err)
	}
	f, err := m.CreateFutureLog("t", 0, d2, cfg.DefaultConfig)
	require.NoError(t, err)
	for {
		n, err := l.CopyTo(f, 1<<20)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.Equal(t, int64(20), f.LogEndOffset())
	require.NoError(t, m.Close())

	m2, err := OpenManager(managerConfig(t, mem))
	require.NoError(t, err)
	defer m2.Close()
	f2, dir, ok := m2.FutureLog("t", 0)
	require.True(t, ok, "the future log is gone after a restart")
	require.Equal(t, d2, dir)
	require.Equal(t, int64(20), f2.LogEndOffset())

	// The replica became a follower: cut to 12, then a new leader's batches
	// in epoch 2.
	l2, _ := m2.GetLog("t", 0)
	_, err = l2.TruncateTo(12)
	require.NoError(t, err)
	for i := range 5 {
		_, err := l2.AppendAsFollower(epochBatch(t, 12+int64(2*i), 2, 2))
		require.NoError(t, err)
	}
	require.Equal(t, int64(22), l2.LogEndOffset())
	for {
		n, err := l2.CopyTo(f2, 1<<20)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.Equal(t, l2.LogEndOffset(), f2.LogEndOffset())
	require.True(t, bytes.Equal(logBytes(t, mem, l2), logBytes(t, mem, f2)), "the future log kept batches the log lost")

	m2.AbortFutureLog("t", 0)
	_, _, ok = m2.FutureLog("t", 0)
	require.False(t, ok)
	_, err = mem.Stat(f2.Dir())
	require.Error(t, err, "the aborted future log's directory is still there")
}

func filepathDir(p string) string { return p[:strings.LastIndexByte(p, '/')] }

// epochBatch is a follower's batch of n records at base in leader epoch
// epoch.
func epochBatch(t *testing.T, base int64, n int, epoch int32) []byte {
	t.Helper()
	b := makeBatch(t, n, 5000, 50)
	bt := record.Batch(b)
	bt.SetBaseOffset(base)
	bt.SetPartitionLeaderEpoch(epoch)
	return b
}
