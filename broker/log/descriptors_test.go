package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/vfs"
)

// openDescriptors counts the process's open file descriptors that point
// into dir (or below it), read from /proc/self/fd. Descriptors of files
// that were removed meanwhile count too (their link ends in " (deleted)").
func openDescriptors(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if os.IsNotExist(err) {
		t.Skip("no /proc/self/fd")
	}
	require.NoError(t, err)
	prefix := dir + string(filepath.Separator)
	n := 0
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // closed since ReadDir (the descriptor of ReadDir itself)
		}
		if strings.HasPrefix(target, prefix) {
			n++
		}
	}
	return n
}

// realTempDir is t.TempDir with symlinks resolved, as /proc shows paths.
func realTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

// requireDescriptorsPerSegment checks that l holds exactly one descriptor
// per live segment (and per segment awaiting deletion, extra). flushMu is
// held while counting, so no flush (the background flusher's either) has
// an index file open for its write-out or fsync at that moment: appends,
// rolls, truncations and retention run in the test goroutine and are done.
func requireDescriptorsPerSegment(t *testing.T, l *Log, extra int, msgAndArgs ...any) int {
	t.Helper()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	segs := l.NumSegments()
	got := openDescriptors(t, l.Dir())
	require.Equal(t, segs+extra, got, msgAndArgs...)
	return got
}

// TestOneDescriptorPerSegment: a segment keeps one descriptor, its .log,
// whether it is active or rolled: the indexes open their files only for
// the write-out, truncation, resize or fsync at hand. Checked while a log
// rolls 200 times (with flushes in between), after a reopen with and
// without recovery, after reads that load old segments' indexes lazily,
// after a truncation and after retention deleted segments.
func TestOneDescriptorPerSegment(t *testing.T) {
	dir := filepath.Join(realTempDir(t), "fds-0")
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 10
	cfg.IndexIntervalBytes = 0 // an index entry per batch
	cfg.MaxIndexSize = 64 << 10
	cfg.FileDeleteDelayMs = 0
	cfg.RetentionMs = -1
	const segments = 200
	open := func(opts ...Option) *Log {
		l, err := Open(dir, cfg, append([]Option{WithClock(clock.Now), WithLogger(testLogger(t))}, opts...)...)
		require.NoError(t, err)
		return l
	}

	l := open()
	requireDescriptorsPerSegment(t, l, 0, "new log")
	ts := clock.Now().UnixMilli()
	appends := 0
	for l.NumSegments() < segments {
		_, err := l.Append(makeBatch(t, 2, ts+int64(appends), 100), 0)
		require.NoError(t, err)
		appends++
		if appends%97 == 0 {
			require.NoError(t, l.Flush(l.LogEndOffset()))
		}
		if appends%50 == 0 {
			requireDescriptorsPerSegment(t, l, 0, "after %d appends", appends)
		}
	}
	rolled := requireDescriptorsPerSegment(t, l, 0, "after %d appends", appends)
	t.Logf("%d segments after %d appends: %d descriptors", l.NumSegments(), appends, rolled)
	leo := l.LogEndOffset()
	require.NoError(t, l.Close())
	require.Zero(t, openDescriptors(t, dir), "a closed log holds no descriptor")

	// Unclean: every segment is recovered, its indexes rebuilt.
	l = open(WithRecoveryPoint(0))
	require.Equal(t, segments, l.RecoveryStats().RecoveredSegments)
	require.Equal(t, leo, l.LogEndOffset())
	requireDescriptorsPerSegment(t, l, 0, "after recovering every segment")
	require.NoError(t, l.Close())
	require.Zero(t, openDescriptors(t, dir))

	// Clean: indexes are loaded lazily, by the reads below.
	l = open(WithCleanShutdown(true), WithRecoveryPoint(leo))
	require.Zero(t, l.RecoveryStats().RecoveredSegments)
	requireDescriptorsPerSegment(t, l, 0, "after a clean open")
	for _, base := range l.SegmentBaseOffsets() {
		r, err := l.Read(base, 1<<20, -1)
		require.NoError(t, err)
		require.Positive(t, r.Region.Length, "segment %d", base)
	}
	for _, s := range l.segments {
		require.True(t, s.loaded.Load(), "reading segment %d loaded its indexes", s.baseOffset)
	}
	res, ok, err := l.FetchOffsetByTimestamp(ts + int64(appends/2))
	require.NoError(t, err)
	require.True(t, ok)
	require.Positive(t, res.Offset)
	requireDescriptorsPerSegment(t, l, 0, "after loading every segment's indexes")

	// A retained region holds its segment's .log, no more.
	retained, err := l.ReadRetained(0, 1<<20, -1)
	require.NoError(t, err)
	requireDescriptorsPerSegment(t, l, 0, "with a retained region")

	// Truncation to the middle of an old segment makes it active again
	// (its indexes re-grown, the later segments deleted).
	bases := l.SegmentBaseOffsets()
	mid := bases[segments-10] + 1
	truncated, err := l.TruncateTo(mid)
	require.NoError(t, err)
	require.True(t, truncated)
	require.Len(t, l.SegmentBaseOffsets(), segments-9)
	requireDescriptorsPerSegment(t, l, 0, "after truncation")
	for range 200 {
		_, err := l.Append(makeBatch(t, 2, ts+int64(appends), 100), 0)
		require.NoError(t, err)
		appends++
	}
	requireDescriptorsPerSegment(t, l, 0, "after appending past the truncation")

	// Retention: the first half of the segments goes (file.delete.delay.ms
	// 0: removed at once), except the one under the retained region,
	// whose .log stays open until the region is released.
	l.SetHighWatermark(l.LogEndOffset())
	before := l.NumSegments()
	half := l.SegmentBaseOffsets()[before/2]
	_, err = l.DeleteRecordsBefore(half)
	require.NoError(t, err)
	n, err := l.DeleteOldSegments()
	require.NoError(t, err)
	require.Equal(t, before/2, n)
	requireDescriptorsPerSegment(t, l, 1, "after retention, one region retained")
	retained.Region.Release()
	requireDescriptorsPerSegment(t, l, 0, "after retention")

	// With file.delete.delay.ms a deleted segment keeps its .log open for
	// in-flight reads until the delay has passed, as in Kafka.
	cfg.FileDeleteDelayMs = 1000
	require.NoError(t, l.SetConfig(cfg))
	_, err = l.DeleteRecordsBefore(l.SegmentBaseOffsets()[2])
	require.NoError(t, err)
	n, err = l.DeleteOldSegments()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	requireDescriptorsPerSegment(t, l, 2, "two segments awaiting deletion")
	clock.Advance(time.Second)
	_, err = l.DeleteOldSegments()
	require.NoError(t, err)
	requireDescriptorsPerSegment(t, l, 0, "after the deletion delay")

	require.NoError(t, l.Close())
	require.Zero(t, openDescriptors(t, dir))
}

// TestManyLogsOneDescriptorEach: a broker with many single-segment
// partitions holds one descriptor per partition in its log dir, after the
// logs are created and after a restart (clean, so indexes load lazily,
// and after a crash, so every log is recovered).
func TestManyLogsOneDescriptorEach(t *testing.T) {
	logs := 2000
	if testing.Short() {
		logs = 200
	}
	dataDir := realTempDir(t)
	cfg := DefaultConfig()
	cfg.MaxIndexSize = 64 << 10
	mc := ManagerConfig{LogDirs: []string{dataDir}, Logger: testLogger(t), DefaultConfig: cfg,
		NumRecoveryThreadsPerDataDir: 2,
		RetentionCheckIntervalMs:     -1, FlushOffsetCheckpointIntervalMs: -1, FlushStartOffsetCheckpointMs: -1, HighWatermarkCheckpointMs: -1}
	m, err := OpenManager(mc)
	require.NoError(t, err)
	for p := range logs {
		l, err := m.CreateLog(fmt.Sprintf("fds%d", p%10), int32(p/10), cfg)
		require.NoError(t, err)
		_, err = l.Append(makeBatch(t, 1, 1_700_000_000_000, 10), 0)
		require.NoError(t, err)
	}
	segments := func(m *Manager) int {
		n := 0
		for _, l := range m.Logs() {
			n += l.NumSegments()
		}
		return n
	}
	require.Equal(t, logs, segments(m))
	created := openDescriptors(t, dataDir)
	t.Logf("%d logs created: %d descriptors in the data dir", logs, created)
	require.Equal(t, logs, created)
	require.NoError(t, m.Close())
	require.Zero(t, openDescriptors(t, dataDir), "a closed manager holds no descriptor")

	m, err = OpenManager(mc)
	require.NoError(t, err)
	require.Equal(t, logs, segments(m))
	reopened := openDescriptors(t, dataDir)
	t.Logf("%d logs reopened: %d descriptors in the data dir", logs, reopened)
	require.Equal(t, logs, reopened)
	for _, l := range m.Logs() {
		r, err := l.Read(0, 1<<20, -1)
		require.NoError(t, err)
		require.Positive(t, r.Region.Length)
	}
	require.Equal(t, logs, openDescriptors(t, dataDir), "after loading every index")
	// A crash: the logs are dropped without a flush, there is no
	// clean-shutdown marker, and the next start recovers each one.
	for _, l := range m.Logs() {
		l.closeWithoutFlush()
	}
	require.Zero(t, openDescriptors(t, dataDir))
	require.NoError(t, m.Close())
	require.NoError(t, checkpoint.RemoveCleanShutdown(vfs.OS, dataDir))
	m, err = OpenManager(mc)
	require.NoError(t, err)
	recovered := 0
	for _, l := range m.Logs() {
		recovered += l.RecoveryStats().RecoveredSegments
	}
	require.Equal(t, logs, recovered)
	require.Equal(t, logs, openDescriptors(t, dataDir), "after recovering every log")
	require.NoError(t, m.Close())
	require.Zero(t, openDescriptors(t, dataDir))
}
