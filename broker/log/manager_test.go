package log

import (
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/vfs"
)

var testDirs = []string{"/kafka/d1", "/kafka/d2"}

func managerConfig(t *testing.T, fsys vfs.FS) ManagerConfig {
	cfg := smallConfig()
	cfg.SegmentBytes = 3000
	return ManagerConfig{
		LogDirs:                         slices.Clone(testDirs),
		FS:                              fsys,
		Logger:                          testLogger(t),
		DefaultConfig:                   cfg,
		NumRecoveryThreadsPerDataDir:    4,
		RetentionCheckIntervalMs:        -1,
		FlushOffsetCheckpointIntervalMs: -1,
		FlushStartOffsetCheckpointMs:    -1,
		HighWatermarkCheckpointMs:       -1,
	}
}

// parseCheckpointText is an independent reader of Kafka's text checkpoint:
// version line 0, count line, then "topic partition offset" lines.
func parseCheckpointText(t *testing.T, b []byte) map[string]int64 {
	t.Helper()
	require.True(t, strings.HasSuffix(string(b), "\n"), "lines end in \\n")
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	require.Equal(t, "0", lines[0])
	n, err := strconv.Atoi(lines[1])
	require.NoError(t, err)
	require.Len(t, lines, n+2)
	out := map[string]int64{}
	for _, line := range lines[2:] {
		f := strings.Split(line, " ")
		require.Len(t, f, 3, "line %q", line)
		off, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		out[f[0]+"-"+f[1]] = off
	}
	return out
}

// barrierFS makes the first n ReadDir calls of partition directories wait
// for each other, so a test fails (after a generous guard timeout) unless
// at least n partitions are opened concurrently.
type barrierFS struct {
	vfs.FS
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
	stuck   bool
}

func (b *barrierFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if _, _, ok := ParseTopicPartition(name[strings.LastIndexByte(name, '/')+1:]); ok && strings.Count(name, "/") == 3 {
		b.mu.Lock()
		b.arrived++
		if b.arrived == b.n {
			close(b.all)
		}
		wait := b.arrived <= b.n
		b.mu.Unlock()
		if wait {
			select {
			case <-b.all:
			case <-time.After(10 * time.Second):
				b.mu.Lock()
				b.stuck = true
				b.mu.Unlock()
			}
		}
	}
	return b.FS.ReadDir(name)
}

func TestManagerOpensPartitionsInParallelAndShutsDownCleanly(t *testing.T) {
	mem := vfs.NewMem()
	m, err := OpenManager(managerConfig(t, mem))
	require.NoError(t, err)
	leos := map[string]int64{}
	for p := range 40 {
		topic := []string{"orders", "my.topic-with-dashes"}[p%2]
		l, err := m.CreateLog(topic, int32(p), m.ConfigFor(topic))
		require.NoError(t, err)
		for i := range p % 7 {
			_, err := l.Append(makeBatch(t, 3, int64(i), 300), 0)
			require.NoError(t, err)
		}
		l.SetHighWatermark(l.LogEndOffset() - int64(p%2))
		leos[fmt.Sprintf("%s-%d", topic, p)] = l.LogEndOffset()
	}
	// Both dirs got partitions.
	for _, d := range testDirs {
		entries, err := mem.ReadDir(d)
		require.NoError(t, err)
		require.Greater(t, len(entries), 10)
	}
	l, _ := m.GetLog("orders", 6)
	require.Equal(t, 2, l.NumSegments())
	l.SetHighWatermark(l.LogEndOffset())
	_, err = l.DeleteRecordsBefore(7)
	require.NoError(t, err)
	require.NoError(t, m.Close())

	// Checkpoints in Kafka's text format, one set per dir.
	rps, hws, lsos := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, d := range testDirs {
		for name, into := range map[string]map[string]int64{
			checkpoint.RecoveryPointFile: rps, checkpoint.ReplicationOffsetFile: hws, checkpoint.LogStartOffsetFile: lsos,
		} {
			for k, v := range parseCheckpointText(t, readAll(t, mem, d+"/"+name)) {
				into[k] = v
			}
		}
		present, _, err := checkpoint.ReadCleanShutdown(mem, d)
		require.NoError(t, err)
		require.True(t, present, "clean-shutdown marker in %s", d)
	}
	require.Equal(t, leos, rps, "recovery point = log end offset after close")
	require.Len(t, hws, 40)
	require.Equal(t, leos["orders-6"], hws["orders-6"])
	require.Equal(t, map[string]int64{"orders-6": 7}, lsos, "only logs whose start is above their first segment")

	// Reopen: everything in parallel (the barrier needs 4 concurrent
	// opens per dir), nothing recovered, markers gone.
	bfs := &barrierFS{FS: mem, n: 4, all: make(chan struct{})}
	m2, err := OpenManager(managerConfig(t, bfs))
	require.NoError(t, err)
	require.False(t, bfs.stuck, "partitions were not opened concurrently")
	require.Len(t, m2.Logs(), 40)
	for _, l := range m2.Logs() {
		name := fmt.Sprintf("%s-%d", l.Topic(), l.Partition())
		require.Equal(t, leos[name], l.LogEndOffset(), name)
		require.Equal(t, hws[name], l.HighWatermark(), name)
		require.Zero(t, l.RecoveryStats().RecoveredSegments, name)
	}
	l, _ = m2.GetLog("orders", 6)
	require.Equal(t, int64(7), l.LogStartOffset())
	for _, d := range testDirs {
		present, _, err := checkpoint.ReadCleanShutdown(mem, d)
		require.NoError(t, err)
		require.False(t, present, "marker removed at start-up")
	}
	require.NoError(t, m2.Close())
}

func TestManagerUncleanOpenRecoversFromRecoveryPoint(t *testing.T) {
	mem := vfs.NewMem()
	cfg := managerConfig(t, mem)
	m, err := OpenManager(cfg)
	require.NoError(t, err)
	l, err := m.CreateLog("events", 0, m.ConfigFor("events"))
	require.NoError(t, err)
	for i := range 20 {
		_, err := l.Append(makeBatch(t, 2, int64(i), 400), 0)
		require.NoError(t, err)
	}
	require.NoError(t, l.Flush(l.LogEndOffset()))
	require.NoError(t, m.CheckpointRecoveryPoints())
	rp := l.RecoveryPoint()
	for i := range 20 {
		_, err := l.Append(makeBatch(t, 2, int64(i), 400), 0)
		require.NoError(t, err)
	}
	require.NoError(t, l.Flush(l.LogEndOffset())) // durable, but the checkpoint still says rp
	leo := l.LogEndOffset()
	bases := l.SegmentBaseOffsets()
	crashed := mem.CrashClone() // no Close: no marker
	require.NoError(t, m.Close())

	m2, err := OpenManager(managerConfig(t, crashed))
	require.NoError(t, err)
	l2, ok := m2.GetLog("events", 0)
	require.True(t, ok)
	require.Equal(t, leo, l2.LogEndOffset())
	want := 0
	for _, b := range bases {
		if b >= bases[sortSearch(bases, rp)] {
			want++
		}
	}
	require.Less(t, want, len(bases))
	require.Equal(t, want, l2.RecoveryStats().RecoveredSegments, "only from the segment holding the recovery point")
	require.Equal(t, rp, l2.RecoveryPoint())
	require.NoError(t, m2.Close())
}

// sortSearch returns the index of the segment holding offset.
func sortSearch(bases []int64, offset int64) int {
	i := 0
	for i+1 < len(bases) && bases[i+1] <= offset {
		i++
	}
	return i
}

func TestManagerDirectoryHandling(t *testing.T) {
	mem := vfs.NewMem()
	for _, d := range []string{"/kafka/d1/t-0", "/kafka/d1/t-1.0123456789abcdef0123456789abcdef-delete",
		"/kafka/d1/t-2.0123456789abcdef0123456789abcdef-future", "/kafka/d1/lost+found", "/kafka/d2/u-3"} {
		require.NoError(t, mem.MkdirAll(d, 0o755))
	}
	m, err := OpenManager(managerConfig(t, mem))
	require.NoError(t, err)
	var names []string
	for _, l := range m.Logs() {
		names = append(names, fmt.Sprintf("%s-%d", l.Topic(), l.Partition()))
	}
	require.Equal(t, []string{"t-0", "u-3"}, names)
	_, err = mem.Stat("/kafka/d1/t-1.0123456789abcdef0123456789abcdef-delete")
	require.ErrorIs(t, err, fs.ErrNotExist, "interrupted deletion finished")
	// A future log (a move between log dirs) whose partition has no log
	// to move from is removed (one with a log is resumed:
	// TestFutureLogResumesAndFollowsTruncation).
	_, err = mem.Stat("/kafka/d1/t-2.0123456789abcdef0123456789abcdef-future")
	require.ErrorIs(t, err, fs.ErrNotExist, "future log without a log kept")

	_, err = m.CreateLog("bad/topic", 0, DefaultConfig())
	require.ErrorIs(t, err, ErrBadTopic)
	l, err := m.CreateLog("t", 0, DefaultConfig())
	require.NoError(t, err)
	got, _ := m.GetLog("t", 0)
	require.Same(t, got, l, "existing log returned")

	require.NoError(t, m.DeleteLog("t", 0))
	_, ok := m.GetLog("t", 0)
	require.False(t, ok)
	_, err = mem.Stat("/kafka/d1/t-0")
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, m.Close())
	require.Equal(t, map[string]int64{"u-3": 0}, parseCheckpointText(t, readAll(t, mem, "/kafka/d2/"+checkpoint.RecoveryPointFile)))
	require.Empty(t, parseCheckpointText(t, readAll(t, mem, "/kafka/d1/"+checkpoint.RecoveryPointFile)))

	// The same partition in two dirs is refused.
	require.NoError(t, mem.MkdirAll("/kafka/d1/u-3", 0o755))
	_, err = OpenManager(managerConfig(t, mem))
	require.ErrorContains(t, err, "u-3")
}

// TestManagerBackgroundLoops runs the loops on synctest's fake clock.
func TestManagerBackgroundLoops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := vfs.NewMem()
		cfg := managerConfig(t, mem)
		cfg.RetentionCheckIntervalMs = 300_000
		cfg.FlushSchedulerIntervalMs = 1_000
		cfg.FlushOffsetCheckpointIntervalMs = 60_000
		cfg.FlushStartOffsetCheckpointMs = 60_000
		cfg.HighWatermarkCheckpointMs = 5_000
		cfg.DefaultConfig.RetentionMs = 3_600_000
		cfg.DefaultConfig.FlushMs = 2_000
		m, err := OpenManager(cfg)
		require.NoError(t, err)
		l, err := m.CreateLog("logs", 0, m.ConfigFor("logs"))
		require.NoError(t, err)
		old := time.Now().Add(-2 * time.Hour).UnixMilli()
		for i := range 12 {
			_, err := l.Append(makeBatch(t, 1, old+int64(i), 600), 0)
			require.NoError(t, err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		synctest.Wait()
		segs := l.NumSegments()
		require.Greater(t, segs, 2)

		// flush.ms: the scheduler flushes the active segment within ~3 s.
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, l.LogEndOffset(), l.RecoveryPoint())

		// replica.high.watermark.checkpoint.interval.ms = 5 s.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		hw := parseCheckpointText(t, readAll(t, mem, l.Dir()[:strings.LastIndexByte(l.Dir(), '/')]+"/"+checkpoint.ReplicationOffsetFile))
		require.Equal(t, map[string]int64{"logs-0": 12}, hw)

		// 60 s: recovery points.
		time.Sleep(55 * time.Second)
		synctest.Wait()
		rp := parseCheckpointText(t, readAll(t, mem, l.Dir()[:strings.LastIndexByte(l.Dir(), '/')]+"/"+checkpoint.RecoveryPointFile))
		require.Equal(t, map[string]int64{"logs-0": 12}, rp)

		// 300 s: retention deletes every old segment (rolling an empty one).
		time.Sleep(240 * time.Second)
		synctest.Wait()
		require.Equal(t, 1, l.NumSegments())
		require.Equal(t, int64(12), l.LogStartOffset())
		require.NoError(t, m.Close())
		_ = math.MaxInt64
	})
}

// TestManagerDeleteLogDefersRemoval: DeleteLog frees the partition's name
// at once and refuses writes, while file regions handed out before keep
// reading until file.delete.delay.ms has passed (or the manager closes).
func TestManagerDeleteLogDefersRemoval(t *testing.T) {
	dir := t.TempDir()
	cfg := managerConfig(t, vfs.OS)
	cfg.LogDirs = []string{dir}
	cfg.DefaultConfig.FileDeleteDelayMs = 60_000
	m, err := OpenManager(cfg)
	require.NoError(t, err)
	l, err := m.CreateLog("gone", 0, cfg.DefaultConfig)
	require.NoError(t, err)
	batch := makeBatch(t, 5, 1000, 100)
	want := append([]byte(nil), batch...)
	_, err = l.Append(batch, 0)
	require.NoError(t, err)
	l.SetHighWatermark(l.LogEndOffset())
	ri, err := l.Read(0, 1<<20, -1)
	require.NoError(t, err)

	require.NoError(t, m.DeleteLog("gone", 0))
	_, err = vfs.OS.Stat(dir + "/gone-0")
	require.ErrorIs(t, err, fs.ErrNotExist, "renamed at once")
	entries, err := vfs.OS.ReadDir(dir)
	require.NoError(t, err)
	var doomed []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-delete") {
			doomed = append(doomed, e.Name())
		}
	}
	require.Len(t, doomed, 1)
	require.True(t, strings.HasPrefix(doomed[0], "gone-0."))

	got := make([]byte, ri.Region.Length)
	_, err = ri.Region.File.ReadAt(got, ri.Region.Position)
	require.NoError(t, err, "a region handed out before the deletion still reads")
	want[0], got[0] = 0, 0 // the base offset was rewritten by Append
	require.Equal(t, want[len(want)-50:], got[len(got)-50:])
	_, err = l.Append(makeBatch(t, 1, 1000, 10), 0)
	require.ErrorIs(t, err, ErrClosed, "a deleted log takes no writes")

	again, err := m.CreateLog("gone", 0, cfg.DefaultConfig)
	require.NoError(t, err)
	require.NotSame(t, l, again)
	require.Equal(t, int64(0), again.LogEndOffset(), "the name is free for a new, empty partition")

	require.NoError(t, m.Close())
	_, err = vfs.OS.Stat(dir + "/" + doomed[0])
	require.ErrorIs(t, err, fs.ErrNotExist, "removed by Close")
}

func TestManagerDeleteLogRemovesAfterDelay(t *testing.T) {
	dir := t.TempDir()
	cfg := managerConfig(t, vfs.OS)
	cfg.LogDirs = []string{dir}
	cfg.DefaultConfig.FileDeleteDelayMs = 0
	m, err := OpenManager(cfg)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.CreateLog("quick", 3, cfg.DefaultConfig)
	require.NoError(t, err)
	require.NoError(t, m.DeleteLog("quick", 3))
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, err := vfs.OS.ReadDir(dir)
		require.NoError(t, err)
		left := false
		for _, e := range entries {
			left = left || strings.HasPrefix(e.Name(), "quick-3")
		}
		if !left {
			break
		}
		require.True(t, time.Now().Before(deadline), "deleted directory not removed")
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}
