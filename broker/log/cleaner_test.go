package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/internal/fixtures"
)

// kv is one record of a compacted topic; a nil value is a tombstone.
type kv struct {
	key, value string
	tomb       bool
	ts         int64
}

// compactConfig is a compacted topic with small segments.
func compactConfig() Config {
	c := smallConfig()
	c.CleanupPolicy = "compact"
	c.SegmentBytes = 2048
	c.IndexIntervalBytes = 256
	c.DeleteRetentionMs = 3_600_000
	return c
}

// appendKVs appends one batch of records with the codec.
func appendKVs(t testing.TB, l *Log, codec record.Codec, recs ...kv) AppendInfo {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.Codec = codec
	b := record.NewBuilder(opts)
	for _, r := range recs {
		var v []byte
		if !r.tomb {
			v = []byte(r.value)
		}
		b.Append(r.ts, []byte(r.key), v, nil)
	}
	raw, err := b.Build()
	require.NoError(t, err)
	info, err := l.Append(raw, 0)
	require.NoError(t, err)
	return info
}

// readRec is a record as a consumer sees it.
type readRec struct {
	offset int64
	key    string
	value  []byte // nil: tombstone
	ts     int64
}

// rawBatch is a batch's header fields read with encoding/binary only.
type rawBatch struct {
	base, last        int64
	attrs             int16
	baseTs, maxTs     int64
	count             int32
	hasHorizon        bool
	producerID        int64
	partitionLeaderEp int32
}

func parseRawHeader(b []byte) rawBatch {
	be := binary.BigEndian
	attrs := int16(be.Uint16(b[21:]))
	return rawBatch{
		base:              int64(be.Uint64(b)),
		last:              int64(be.Uint64(b)) + int64(int32(be.Uint32(b[23:]))),
		attrs:             attrs,
		baseTs:            int64(be.Uint64(b[27:])),
		maxTs:             int64(be.Uint64(b[35:])),
		producerID:        int64(be.Uint64(b[43:])),
		count:             int32(be.Uint32(b[57:])),
		hasHorizon:        attrs&0x40 != 0,
		partitionLeaderEp: int32(be.Uint32(b[12:])),
	}
}

// readLog reads the whole log from its start through Read, the way a
// consumer fetches: whole batches only, continuing after the last one.
func readLog(t testing.TB, l *Log) ([]readRec, []rawBatch) {
	t.Helper()
	recs, batches, err := tryReadLog(l)
	require.NoError(t, err)
	return recs, batches
}

func tryReadLog(l *Log) ([]readRec, []rawBatch, error) {
	var recs []readRec
	var batches []rawBatch
	off := l.LogStartOffset()
	for {
		info, err := l.Read(off, 64<<10, -1)
		if err != nil {
			return nil, nil, err
		}
		if info.Region.Length == 0 {
			return recs, batches, nil
		}
		buf := make([]byte, info.Region.Length)
		if _, err := info.Region.File.ReadAt(buf, info.Region.Position); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		progressed := false
		for p := 0; p+61 <= len(buf); {
			size := 12 + int(int32(binary.BigEndian.Uint32(buf[p+8:])))
			if p+size > len(buf) {
				break
			}
			bt, err := record.Validate(buf[p : p+size])
			if err != nil {
				return nil, nil, fmt.Errorf("batch at %d: %w", off, err)
			}
			h := parseRawHeader(bt)
			if h.last >= off {
				batches = append(batches, h)
				err = bt.Iterate(func(r *record.Record) error {
					if o := r.Offset(bt); o >= off {
						var v []byte
						if r.Value != nil {
							v = append([]byte{}, r.Value...)
						}
						recs = append(recs, readRec{offset: o, key: string(r.Key), value: v, ts: r.Timestamp(bt)})
					}
					return nil
				})
				if err != nil {
					return nil, nil, err
				}
				off = h.last + 1
				progressed = true
			}
			p += size
		}
		if !progressed {
			return nil, nil, fmt.Errorf("no whole batch at offset %d", off)
		}
	}
}

// model is what was written: every record by offset.
type model struct {
	byOffset map[int64]kv
	leo      int64
}

func newModel() *model { return &model{byOffset: map[int64]kv{}} }

func (m *model) add(info AppendInfo, recs []kv) {
	for i, r := range recs {
		m.byOffset[info.FirstOffset+int64(i)] = r
	}
	m.leo = info.LastOffset + 1
}

// latest returns key -> offset of its latest record below end.
func (m *model) latest(end int64) map[string]int64 {
	out := map[string]int64{}
	for off, r := range m.byOffset {
		if off < end && off >= out[r.key] {
			out[r.key] = off
		}
	}
	return out
}

// writeRandom appends n records over keys keys in batches of 1-5 with
// mixed codecs; about one in ten is a tombstone.
func writeRandom(t testing.TB, l *Log, m *model, rng *rand.Rand, n, keys int, ts func() int64) {
	t.Helper()
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecLZ4, record.CodecZstd, record.CodecSnappy}
	for written := 0; written < n; {
		k := min(1+rng.IntN(5), n-written)
		var recs []kv
		for range k {
			r := kv{key: fmt.Sprintf("key-%03d", rng.IntN(keys)), ts: ts()}
			if rng.IntN(10) == 0 {
				r.tomb = true
			} else {
				r.value = fmt.Sprintf("v%d-%s", written+len(recs), strings.Repeat("x", rng.IntN(40)))
			}
			recs = append(recs, r)
		}
		info := appendKVs(t, l, codecs[rng.IntN(len(codecs))], recs...)
		m.add(info, recs)
		written += k
	}
}

// checkCompacted verifies what a consumer reads after cleans that
// covered offsets below end: every record is the original one at its
// original offset, offsets increase, every key's latest record is there,
// and below end no key appears before its latest record.
func checkCompacted(t testing.TB, recs []readRec, m *model, end int64, tombstonesGone bool) {
	t.Helper()
	latest := m.latest(m.leo)
	latestBelow := m.latest(end)
	seen := map[int64]bool{}
	prev := int64(-1)
	for _, r := range recs {
		require.Greater(t, r.offset, prev, "offsets strictly increase")
		prev = r.offset
		orig, ok := m.byOffset[r.offset]
		require.True(t, ok, "offset %d was written", r.offset)
		require.Equal(t, orig.key, r.key, "key at offset %d", r.offset)
		if orig.tomb {
			require.Nil(t, r.value, "tombstone at %d", r.offset)
		} else {
			require.Equal(t, orig.value, string(r.value), "value at %d", r.offset)
		}
		require.Equal(t, orig.ts, r.ts, "timestamp at %d", r.offset)
		if r.offset < end {
			require.Equal(t, latestBelow[r.key], r.offset, "key %s at %d is older than its latest below %d", r.key, r.offset, end)
		}
		seen[r.offset] = true
	}
	for key, off := range latest {
		if tombstonesGone && m.byOffset[off].tomb && off < end {
			require.False(t, seen[off], "tombstone of %s at %d should be gone", key, off)
			continue
		}
		require.True(t, seen[off], "latest record of %s at offset %d is readable", key, off)
	}
}

func openCompacted(t testing.TB, fsys vfs.FS, dir string, cfg Config, clock *fakeClock, opts ...Option) *Log {
	t.Helper()
	opts = append([]Option{WithFS(fsys), WithClock(clock.Now), WithLogger(testLogger(t))}, opts...)
	l, err := Open(dir, cfg, opts...)
	require.NoError(t, err)
	return l
}

func TestCleanKeepsLatestValuePerKeyAtOriginalOffset(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	cfg := compactConfig()
	l := openCompacted(t, fsys, "/data/t-0", cfg, clock)
	m := newModel()
	rng := rand.New(rand.NewPCG(1, 2))
	writeRandom(t, l, m, rng, 1500, 60, func() int64 { return clock.Now().UnixMilli() })
	l.SetHighWatermark(l.LogEndOffset())
	segsBefore := l.NumSegments()
	require.Greater(t, segsBefore, 10)

	st, err := l.Compact(CleanOptions{})
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.Less(t, st.BytesAfter, st.BytesBefore)
	active := l.SegmentBaseOffsets()[l.NumSegments()-1]
	require.Equal(t, active, st.EndOffset, "the dirty section ends at the active segment")
	require.Equal(t, active, l.FirstDirtyOffset())

	recs, _ := readLog(t, l)
	checkCompacted(t, recs, m, st.EndOffset, false)
	require.Equal(t, m.leo, l.LogEndOffset())
	checkDir(t, fsys, "/data/t-0", dirCheck{maxIndexSize: cfg.MaxIndexSize, activePreallocated: true, leaderIndex: true})

	// Appends continue; a second clean without new writes does nothing.
	again, err := l.Compact(CleanOptions{})
	require.NoError(t, err)
	require.False(t, again.Cleaned)
	// A second clean over new data groups the small cleaned segments
	// (Kafka's groupSegmentsBySize).
	segsBefore = l.NumSegments()
	writeRandom(t, l, m, rng, 300, 60, func() int64 { return clock.Now().UnixMilli() })
	l.SetHighWatermark(l.LogEndOffset())
	st, err = l.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.True(t, st.Cleaned)
	require.Less(t, l.NumSegments(), segsBefore, "small cleaned segments are grouped")
	recs, _ = readLog(t, l)
	checkCompacted(t, recs, m, st.EndOffset, false)
	writeRandom(t, l, m, rng, 10, 60, func() int64 { return clock.Now().UnixMilli() })
	require.NoError(t, l.Close())
	checkDir(t, fsys, "/data/t-0", dirCheck{maxIndexSize: cfg.MaxIndexSize, leaderIndex: true})

	// Reopened after an unclean shutdown with nothing checkpointed: every
	// segment is recovered, and none of the cleaned ones is cut.
	l = openCompacted(t, fsys.CrashClone(), "/data/t-0", cfg, clock, WithRecoveryPoint(0))
	defer l.Close()
	require.Zero(t, l.RecoveryStats().TruncatedBytes)
	require.Equal(t, m.leo, l.LogEndOffset())
	recs, _ = readLog(t, l)
	checkCompacted(t, recs, m, st.EndOffset, false)
}

func TestCleanTombstonesUseDeleteHorizon(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	cfg := compactConfig()
	l := openCompacted(t, fsys, "/data/t-0", cfg, clock)
	defer l.Close()
	m := newModel()
	ts := func() int64 { return clock.Now().UnixMilli() }
	for i := range 40 {
		recs := []kv{{key: fmt.Sprintf("k%d", i%8), value: fmt.Sprintf("v%d", i), ts: ts()}}
		m.add(appendKVs(t, l, record.CodecNone, recs...), recs)
	}
	for i := range 4 { // delete k0..k3
		recs := []kv{{key: fmt.Sprintf("k%d", i), tomb: true, ts: ts()}}
		m.add(appendKVs(t, l, record.CodecGzip, recs...), recs)
	}
	for i := range 60 { // filler to roll the tombstones out of the active segment
		recs := []kv{{key: fmt.Sprintf("f%d", i%4), value: strings.Repeat("f", 100), ts: ts()}}
		m.add(appendKVs(t, l, record.CodecNone, recs...), recs)
	}
	l.SetHighWatermark(l.LogEndOffset())
	firstClean := clock.Now().UnixMilli()
	st, err := l.Compact(CleanOptions{})
	require.NoError(t, err)
	require.True(t, st.Cleaned)

	recs, batches := readLog(t, l)
	checkCompacted(t, recs, m, st.EndOffset, false)
	tombs := 0
	for _, r := range recs {
		if r.value == nil {
			tombs++
		}
	}
	require.Equal(t, 4, tombs, "tombstones survive the first clean")
	// Batches holding tombstones carry the delete horizon (bit 6,
	// baseTimestamp = clean time + delete.retention.ms).
	horizons := 0
	for _, b := range batches {
		if b.base >= st.EndOffset {
			continue
		}
		if b.hasHorizon {
			horizons++
			require.Equal(t, firstClean+cfg.DeleteRetentionMs, b.baseTs)
		}
	}
	require.Equal(t, 4, horizons)

	// Before the horizon a clean keeps them; after it they go.
	clock.Advance(time.Duration(cfg.DeleteRetentionMs-1) * time.Millisecond)
	_, err = l.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	recs, _ = readLog(t, l)
	checkCompacted(t, recs, m, st.EndOffset, false)

	clock.Advance(2 * time.Millisecond)
	for i := range 30 { // a new dirty section
		recs := []kv{{key: fmt.Sprintf("g%d", i%3), value: strings.Repeat("g", 100), ts: ts()}}
		m.add(appendKVs(t, l, record.CodecNone, recs...), recs)
	}
	l.SetHighWatermark(l.LogEndOffset())
	st2, err := l.Compact(CleanOptions{Force: true})
	require.NoError(t, err)
	require.True(t, st2.Cleaned)
	require.EqualValues(t, 4, st2.TombstonesDropped)
	recs, _ = readLog(t, l)
	checkCompacted(t, recs, m, st2.EndOffset, true)
	for _, r := range recs {
		require.NotNil(t, r.value, "no tombstone left at %d", r.offset)
		require.NotContains(t, []string{"k0", "k1", "k2", "k3"}, r.key, "deleted keys are gone entirely")
	}
}

func TestCleanDirtyRatioLagAndActiveSegment(t *testing.T) {
	clock := newFakeClock()
	ts := func() int64 { return clock.Now().UnixMilli() }
	t.Run("active segment never cleaned", func(t *testing.T) {
		cfg := compactConfig()
		cfg.SegmentBytes = 1 << 20
		l := openCompacted(t, vfs.NewMem(), "/d/t-0", cfg, clock)
		defer l.Close()
		for i := range 50 {
			appendKVs(t, l, record.CodecNone, kv{key: "same", value: fmt.Sprint(i), ts: ts()})
		}
		l.SetHighWatermark(l.LogEndOffset())
		st, err := l.Compact(CleanOptions{Force: true})
		require.NoError(t, err)
		require.False(t, st.Cleaned)
		recs, _ := readLog(t, l)
		require.Len(t, recs, 50)
	})
	t.Run("min.cleanable.dirty.ratio", func(t *testing.T) {
		cfg := compactConfig()
		l := openCompacted(t, vfs.NewMem(), "/d/t-0", cfg, clock)
		defer l.Close()
		m := newModel()
		rng := rand.New(rand.NewPCG(3, 4))
		writeRandom(t, l, m, rng, 3000, 2000, ts) // mostly distinct keys: cleaning keeps most
		l.SetHighWatermark(l.LogEndOffset())
		st, err := l.Compact(CleanOptions{})
		require.NoError(t, err)
		require.True(t, st.Cleaned)
		writeRandom(t, l, m, rng, 60, 2000, ts) // a little more: one or two dirty segments
		l.SetHighWatermark(l.LogEndOffset())
		ratio, ok := l.DirtyRatio()
		require.Less(t, ratio, cfg.MinCleanableDirtyRatio)
		require.False(t, ok)
		st, err = l.Compact(CleanOptions{})
		require.NoError(t, err)
		require.False(t, st.Cleaned, "a mostly clean log is left alone")
		// max.compaction.lag.ms overrides the ratio.
		cfg.MaxCompactionLagMs = 1000
		require.NoError(t, l.SetConfig(cfg))
		clock.Advance(2 * time.Second)
		_, ok = l.DirtyRatio()
		require.True(t, ok)
		st, err = l.Compact(CleanOptions{})
		require.NoError(t, err)
		require.True(t, st.Cleaned)
	})
	t.Run("min.compaction.lag.ms", func(t *testing.T) {
		cfg := compactConfig()
		cfg.MinCompactionLagMs = 60_000
		l := openCompacted(t, vfs.NewMem(), "/d/t-0", cfg, clock)
		defer l.Close()
		m := newModel()
		rng := rand.New(rand.NewPCG(5, 6))
		old := clock.Now().UnixMilli() - 120_000
		writeRandom(t, l, m, rng, 600, 20, func() int64 { return old })
		boundary := l.LogEndOffset()
		writeRandom(t, l, m, rng, 600, 20, ts)
		l.SetHighWatermark(l.LogEndOffset())
		st, err := l.Compact(CleanOptions{})
		require.NoError(t, err)
		require.True(t, st.Cleaned)
		require.LessOrEqual(t, st.EndOffset, boundary+1, "records within the lag are not cleaned")
		recs, _ := readLog(t, l)
		checkCompacted(t, recs, m, st.EndOffset, false)
		n := 0
		for _, r := range recs {
			if r.offset >= st.EndOffset {
				n++
			}
		}
		require.EqualValues(t, m.leo-st.EndOffset, n, "records within the lag are all kept")
	})
	t.Run("delete policy not cleaned", func(t *testing.T) {
		cfg := compactConfig()
		cfg.CleanupPolicy = "delete"
		l := openCompacted(t, vfs.NewMem(), "/d/t-0", cfg, clock)
		defer l.Close()
		writeRandom(t, l, newModel(), rand.New(rand.NewPCG(7, 8)), 300, 5, ts)
		l.SetHighWatermark(l.LogEndOffset())
		st, err := l.Compact(CleanOptions{Force: true})
		require.NoError(t, err)
		require.False(t, st.Cleaned)
	})
	t.Run("retention applies to compact,delete only", func(t *testing.T) {
		for _, policy := range []string{"compact", "compact,delete"} {
			cfg := compactConfig()
			cfg.CleanupPolicy = policy
			cfg.RetentionMs = 1000
			l := openCompacted(t, vfs.NewMem(), "/d/t-0", cfg, clock)
			writeRandom(t, l, newModel(), rand.New(rand.NewPCG(7, 8)), 300, 5, ts)
			l.SetHighWatermark(l.LogEndOffset())
			clock.Advance(5 * time.Second)
			n, err := l.DeleteOldSegments()
			require.NoError(t, err)
			if policy == "compact" {
				require.Zero(t, n, policy)
			} else {
				require.Positive(t, n, policy)
			}
			require.NoError(t, l.Close())
		}
	})
}

func TestCleanerCheckpointManager(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	cfg := compactConfig()
	mcfg := func() ManagerConfig {
		return ManagerConfig{LogDirs: []string{"/data"}, FS: fsys, Clock: clock.Now, Logger: testLogger(t),
			DefaultConfig: cfg, RetentionCheckIntervalMs: -1, FlushOffsetCheckpointIntervalMs: -1,
			FlushStartOffsetCheckpointMs: -1, HighWatermarkCheckpointMs: -1}
	}
	mgr, err := OpenManager(mcfg())
	require.NoError(t, err)
	l, err := mgr.CreateLog("compacted", 0, cfg)
	require.NoError(t, err)
	m := newModel()
	writeRandom(t, l, m, rand.New(rand.NewPCG(9, 9)), 800, 30, func() int64 { return clock.Now().UnixMilli() })
	l.SetHighWatermark(l.LogEndOffset())
	cleaned, err := mgr.CleanDirtiest()
	require.NoError(t, err)
	require.True(t, cleaned)
	end := l.FirstDirtyOffset()
	require.Positive(t, end)
	got := string(readAll(t, fsys, "/data/"+checkpoint.CleanerOffsetFile))
	require.Equal(t, fmt.Sprintf("0\n1\ncompacted 0 %d\n", end), got, "Kafka's checkpoint format")
	require.NoError(t, mgr.Close())

	mgr, err = OpenManager(mcfg())
	require.NoError(t, err)
	defer mgr.Close()
	l, ok := mgr.GetLog("compacted", 0)
	require.True(t, ok)
	require.Equal(t, end, l.FirstDirtyOffset(), "read back at start-up")
	st, err := mgr.CleanNow("compacted", 0)
	require.NoError(t, err)
	require.False(t, st.Cleaned, "nothing new to clean after the restart")
	cleaned, err = mgr.CleanDirtiest()
	require.NoError(t, err)
	require.False(t, cleaned)
	recs, _ := readLog(t, l)
	checkCompacted(t, recs, m, end, false)
}

func TestCleanerCheckpointReset(t *testing.T) {
	clock := newFakeClock()
	for _, cp := range []int64{-5, 1 << 40} {
		fsys := vfs.NewMem()
		l := openCompacted(t, fsys, "/d/t-0", compactConfig(), clock, WithCleanerCheckpoint(cp))
		m := newModel()
		writeRandom(t, l, m, rand.New(rand.NewPCG(1, 1)), 500, 10, func() int64 { return clock.Now().UnixMilli() })
		l.SetHighWatermark(l.LogEndOffset())
		st, err := l.Compact(CleanOptions{})
		require.NoError(t, err)
		require.True(t, st.Cleaned, "checkpoint %d reset to the log start", cp)
		require.Zero(t, st.FirstDirtyOffset)
		require.NoError(t, l.Close())
	}
}

func TestCleanBackgroundCleaner(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := compactConfig()
	mgr, err := OpenManager(ManagerConfig{LogDirs: []string{"/data"}, FS: fsys, Logger: testLogger(t),
		DefaultConfig: cfg, CleanerEnable: true, CleanerBackoffMs: 5})
	require.NoError(t, err)
	defer mgr.Close()
	l, err := mgr.CreateLog("bg", 0, cfg)
	require.NoError(t, err)
	writeRandom(t, l, newModel(), rand.New(rand.NewPCG(2, 2)), 600, 10, func() int64 { return time.Now().UnixMilli() })
	l.SetHighWatermark(l.LogEndOffset())
	deadline := time.Now().Add(10 * time.Second)
	for l.FirstDirtyOffset() <= 0 {
		require.True(t, time.Now().Before(deadline), "background cleaner did not run")
		runtime.Gosched()
	}
}

// TestCleanCrashAtEachStep crashes a clean before each of its file-system
// operations (with every directory change so far durable, the worst case
// for the rename sequence), and separately fails each operation; either
// way the reopened log must hold the original or the cleaned version of
// every key's history, at the original offsets, and take appends.
func TestCleanCrashAtEachStep(t *testing.T) {
	const dir = "/data/crash-0"
	for _, delay := range []int64{0, 60_000} {
		for _, mode := range []string{"crash", "fail"} {
			t.Run(fmt.Sprintf("%s/delay=%d", mode, delay), func(t *testing.T) {
				if testing.Short() && (mode == "crash") != (delay == 0) {
					t.Skip("two of the four variants in -short")
				}
				cfg := compactConfig()
				cfg.FileDeleteDelayMs = delay
				// The log before the clean under test: cleaned once (so
				// the crash hits a log with a cleaned section and delete
				// horizons), more writes, closed.
				tmpl := vfs.NewMem()
				clock := newFakeClock()
				ts := func() int64 { return clock.Now().UnixMilli() }
				l := openCompacted(t, tmpl, dir, cfg, clock)
				m := newModel()
				writeRandom(t, l, m, rand.New(rand.NewPCG(11, 12)), 250, 15, ts)
				l.SetHighWatermark(l.LogEndOffset())
				_, err := l.Compact(CleanOptions{})
				require.NoError(t, err)
				writeRandom(t, l, m, rand.New(rand.NewPCG(13, 14)), 150, 15, ts)
				l.SetHighWatermark(l.LogEndOffset())
				firstDirty := l.FirstDirtyOffset()
				before, _ := readLog(t, l)
				require.NoError(t, l.Close())
				clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)

				steps, oldVersion, newVersion := 0, 0, 0
				for k := 1; ; k++ {
					mem := tmpl.CrashClone()
					faulty := vfs.NewFaulty(mem, nil)
					l := openCompacted(t, faulty, dir, cfg, clock, WithCleanShutdown(true),
						WithHighWatermark(math.MaxInt64), WithCleanerCheckpoint(firstDirty))
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
						if mode == "crash" {
							// Every directory change so far reached the
							// disk: the worst case for the rename order.
							require.NoError(t, mem.SyncDir(dir))
							crash = mem.CrashClone()
						}
						return vfs.ErrInjected
					}))
					st, err := l.Compact(CleanOptions{Force: true})
					faulty.SetInjector(nil)
					if n.Load() < int64(k) {
						require.NoError(t, err)
						require.True(t, st.Cleaned)
						require.NoError(t, l.Close())
						steps = k - 1
						break
					}
					require.Error(t, err, "step %d", k)
					if crash == nil {
						crash = mem.CrashClone()
					}
					l.closeWithoutFlush()

					r, err := Open(dir, cfg, WithFS(crash), WithClock(clock.Now), WithLogger(testLogger(t)), WithHighWatermark(math.MaxInt64))
					require.NoError(t, err, "reopen after step %d", k)
					require.Equal(t, m.leo, r.LogEndOffset(), "step %d: no offset lost", k)
					recs, _, err := tryReadLog(r)
					require.NoError(t, err, "step %d", k)
					// Every record is an original one at its offset and
					// each key's latest record is there.
					checkCompacted(t, recs, m, 0, false)
					if len(recs) < len(before) {
						newVersion++
					} else {
						oldVersion++
					}
					more := []kv{{key: "after", value: "crash", ts: ts()}}
					info := appendKVs(t, r, record.CodecNone, more...)
					require.Equal(t, m.leo, info.FirstOffset)
					require.NoError(t, r.Close())
					r2, err := Open(dir, cfg, WithFS(crash), WithClock(clock.Now), WithCleanShutdown(true))
					require.NoError(t, err)
					require.Equal(t, m.leo+1, r2.LogEndOffset())
					require.NoError(t, r2.Close())
				}
				require.Greater(t, steps, 10, "the clean has many steps")
				require.Positive(t, oldVersion, "some crashes recover the old version")
				require.Positive(t, newVersion, "some crashes recover the cleaned version")
				t.Logf("%d file-system steps checked: %d recovered the old version, %d the cleaned one", steps, oldVersion, newVersion)
			})
		}
	}
}

func TestCleanKafkaConsumerOffsets(t *testing.T) {
	for _, p := range []int{17, 28, 39} {
		name := fmt.Sprintf("__consumer_offsets-%d", p)
		from := fixtures.Path(t, "kafka271-zk-single-broker/kafka-logs/"+name)
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			entries, err := os.ReadDir(from)
			require.NoError(t, err)
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(from, e.Name()))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
			}
			clock := newFakeClock()
			cfg := DefaultConfig()
			cfg.CleanupPolicy = "compact"
			cfg.MaxIndexSize = 4096
			l := openCompacted(t, vfs.OS, dir, cfg, clock, WithCleanShutdown(true), WithHighWatermark(math.MaxInt64))
			before, _ := readLog(t, l)
			require.NotEmpty(t, before)
			// Roll so that everything Kafka wrote is cleanable.
			l.mu.Lock()
			_, err = l.roll(l.logEndOffset, "test")
			l.mu.Unlock()
			require.NoError(t, err)
			l.SetHighWatermark(l.LogEndOffset())
			st, err := l.Compact(CleanOptions{Force: true})
			require.NoError(t, err)
			require.True(t, st.Cleaned)
			after, _ := readLog(t, l)
			latest := func(recs []readRec) map[string]readRec {
				out := map[string]readRec{}
				for _, r := range recs {
					out[r.key] = r
				}
				return out
			}
			require.Equal(t, latest(before), latest(after), "latest value of every key kept at its offset")
			require.LessOrEqual(t, len(after), len(before))
			require.NoError(t, l.Close())
			l = openCompacted(t, vfs.OS, dir, cfg, clock, WithRecoveryPoint(0), WithHighWatermark(math.MaxInt64))
			defer l.Close()
			again, _ := readLog(t, l)
			require.Equal(t, after, again, "readable after an unclean reopen")
		})
	}
}

// TestCleanConcurrentReaders reads the log from 0 over and over while it is
// cleaned and appended to: every read is a consistent log.
func TestCleanConcurrentReaders(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	cfg := compactConfig()
	cfg.FileDeleteDelayMs = 60_000
	l := openCompacted(t, fsys, "/data/t-0", cfg, clock)
	defer l.Close()
	m := newModel()
	rng := rand.New(rand.NewPCG(21, 22))
	ts := func() int64 { return clock.Now().UnixMilli() }
	writeRandom(t, l, m, rng, 800, 40, ts)
	l.SetHighWatermark(l.LogEndOffset())
	var mu sync.Mutex // guards m for the reader
	snapshot := func() *model {
		mu.Lock()
		defer mu.Unlock()
		c := &model{byOffset: make(map[int64]kv, len(m.byOffset)), leo: m.leo}
		for k, v := range m.byOffset {
			c.byOffset[k] = v
		}
		return c
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			mm := snapshot()
			recs, _, err := tryReadLog(l)
			if err != nil {
				t.Errorf("read during clean: %v", err)
				return
			}
			prev := int64(-1)
			for _, r := range recs {
				if r.offset <= prev {
					t.Errorf("offset %d after %d", r.offset, prev)
					return
				}
				prev = r.offset
				if orig, ok := mm.byOffset[r.offset]; ok && orig.key != r.key {
					t.Errorf("offset %d holds key %s, written %s", r.offset, r.key, orig.key)
					return
				}
			}
			reads.Add(1)
		}
	})
	for round := range 5 {
		_, err := l.Compact(CleanOptions{Force: true})
		require.NoError(t, err, "round %d", round)
		mu.Lock()
		writeRandom(t, l, m, rng, 200, 40, ts)
		mu.Unlock()
		l.SetHighWatermark(l.LogEndOffset())
	}
	for reads.Load() < 3 {
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	recs, _ := readLog(t, l)
	checkCompacted(t, recs, m, l.FirstDirtyOffset(), false)
}

// BenchmarkClean cleans 64 MiB of 1 KiB records over 10k keys.
func BenchmarkClean(b *testing.B) {
	const total = 64 << 20
	const valueSize = 1 << 10
	cfg := DefaultConfig()
	cfg.CleanupPolicy = "compact"
	cfg.SegmentBytes = 8 << 20
	cfg.MaxIndexSize = 1 << 20
	clock := newFakeClock()
	tmpl := vfs.NewMem()
	l, err := Open("/data/bench-0", cfg, WithFS(tmpl), WithClock(clock.Now))
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 1))
	val := make([]byte, valueSize)
	var written int64
	for written < total {
		bl := record.NewBuilder(record.DefaultBatchOptions())
		for range 16 {
			bl.Append(clock.Now().UnixMilli(), fmt.Appendf(nil, "key-%05d", rng.IntN(10_000)), val, nil)
		}
		raw, err := bl.Build()
		require.NoError(b, err)
		_, err = l.Append(raw, 0)
		require.NoError(b, err)
		written += int64(len(raw))
	}
	l.SetHighWatermark(l.LogEndOffset())
	require.NoError(b, l.Close())
	b.SetBytes(written)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		fsys := tmpl.CrashClone()
		l, err := Open("/data/bench-0", cfg, WithFS(fsys), WithClock(clock.Now), WithCleanShutdown(true), WithHighWatermark(math.MaxInt64))
		require.NoError(b, err)
		b.StartTimer()
		st, err := l.Compact(CleanOptions{})
		require.NoError(b, err)
		require.True(b, st.Cleaned)
		b.StopTimer()
		require.NoError(b, l.Close())
		b.StartTimer()
	}
}
