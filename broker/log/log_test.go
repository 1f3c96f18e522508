package log

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

type testLog struct {
	*Log
	t     *testing.T
	dir   string
	fsys  vfs.FS
	clock *fakeClock
	cfg   Config
	// appended holds each appended batch as written (offsets assigned).
	appended [][]byte
}

func openTestLog(t *testing.T, fsys vfs.FS, cfg Config, opts ...Option) *testLog {
	t.Helper()
	dir := "/data/topic-a-0"
	if fsys == nil {
		fsys = vfs.OS
		dir = filepath.Join(t.TempDir(), "topic-a-0")
	}
	tl := &testLog{t: t, dir: dir, fsys: fsys, clock: newFakeClock(), cfg: cfg}
	tl.reopen(opts...)
	t.Cleanup(func() {
		if tl.Log != nil {
			tl.Log.Close()
		}
	})
	return tl
}

func (tl *testLog) reopen(opts ...Option) {
	tl.t.Helper()
	base := []Option{WithFS(tl.fsys), WithLogger(testLogger(tl.t)), WithClock(tl.clock.Now)}
	l, err := Open(tl.dir, tl.cfg, append(base, opts...)...)
	require.NoError(tl.t, err)
	tl.Log = l
}

func (tl *testLog) closeLog() {
	tl.t.Helper()
	require.NoError(tl.t, tl.Log.Close())
	tl.Log = nil
}

// append appends a batch of n records with timestamps from ts.
func (tl *testLog) append(n int, ts int64, valueSize int, epoch int32) AppendInfo {
	tl.t.Helper()
	b := makeBatch(tl.t, n, ts, valueSize)
	info, err := tl.Append(b, epoch)
	require.NoError(tl.t, err)
	tl.appended = append(tl.appended, b)
	return info
}

func regionBytes(t testing.TB, r FileRegion) []byte {
	t.Helper()
	out := make([]byte, r.Length)
	_, err := r.File.ReadAt(out, r.Position)
	require.NoError(t, err)
	return out
}

func TestAppendAssignsOffsetsAndReadReturnsRegions(t *testing.T) {
	tl := openTestLog(t, nil, DefaultConfig())
	var want int64
	for i := range 50 {
		info := tl.append(1+i%5, 1000+int64(i), 100+i*37, 3)
		require.Equal(t, want, info.FirstOffset)
		want = info.LastOffset + 1
		require.Equal(t, int64(1+i%5), info.NumRecords)
		require.Equal(t, int64(-1), info.LogAppendTime)
	}
	require.Equal(t, want, tl.LogEndOffset())

	// Every batch is found from each of its offsets, byte for byte.
	for _, b := range tl.appended {
		bt := record.Batch(b)
		require.Equal(t, int32(3), bt.PartitionLeaderEpoch())
		for off := bt.BaseOffset(); off <= bt.LastOffset(); off++ {
			ri, err := tl.Read(off, 1, -1) // maxBytes 1: the first batch whole anyway
			require.NoError(t, err)
			require.Equal(t, b, regionBytes(t, ri.Region), "read at %d", off)
			require.Equal(t, want, ri.LogEndOffset)
		}
	}

	// maxBytes cuts after the first batch, possibly mid-batch (Kafka).
	b0, b1 := tl.appended[0], tl.appended[1]
	ri, err := tl.Read(0, int32(len(b0)+len(b1)+10), -1)
	require.NoError(t, err)
	require.Equal(t, int64(len(b0)+len(b1)+10), ri.Region.Length)
	require.True(t, bytes.HasPrefix(regionBytes(t, ri.Region), append(append([]byte{}, b0...), b1...)))

	// The whole log.
	ri, err = tl.Read(0, math.MaxInt32, -1)
	require.NoError(t, err)
	require.Equal(t, bytes.Join(tl.appended, nil), regionBytes(t, ri.Region))

	// maxOffset (the high watermark for consumers) is exclusive.
	hwBatch := record.Batch(tl.appended[10])
	ri, err = tl.Read(0, math.MaxInt32, hwBatch.BaseOffset())
	require.NoError(t, err)
	require.Equal(t, bytes.Join(tl.appended[:10], nil), regionBytes(t, ri.Region))
	ri, err = tl.Read(hwBatch.BaseOffset(), math.MaxInt32, hwBatch.BaseOffset())
	require.NoError(t, err)
	require.Zero(t, ri.Region.Length)

	// At the log end: empty; past it: out of range.
	ri, err = tl.Read(want, 100, -1)
	require.NoError(t, err)
	require.Zero(t, ri.Region.Length)
	_, err = tl.Read(want+1, 100, -1)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	_, err = tl.Read(-1, 100, -1)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)

	checkDir(t, tl.fsys, tl.dir, dirCheck{maxIndexSize: tl.cfg.MaxIndexSize, activePreallocated: true, leaderIndex: true})
	tl.closeLog()
	got := checkDir(t, tl.fsys, tl.dir, dirCheck{leaderIndex: true})
	require.Len(t, got, 50)
}

func TestAppendRejectsBadBatches(t *testing.T) {
	tl := openTestLog(t, nil, DefaultConfig())
	good := makeBatch(t, 3, 1, 10)

	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	_, err := tl.Append(corrupt, 0)
	require.ErrorIs(t, err, ErrInvalidBatch)
	require.ErrorIs(t, err, record.ErrBadCRC)

	_, err = tl.Append(good[:len(good)-1], 0)
	require.ErrorIs(t, err, record.ErrShortBuffer)

	_, err = tl.Append(append(bytes.Clone(good), good...), 0)
	require.ErrorIs(t, err, ErrInvalidBatch)

	cfg := DefaultConfig()
	cfg.MaxMessageBytes = int64(len(good) - 1)
	require.NoError(t, tl.SetConfig(cfg))
	_, err = tl.Append(bytes.Clone(good), 0)
	require.ErrorIs(t, err, ErrBatchTooLarge)
	require.Equal(t, int64(0), tl.LogEndOffset())
}

func TestLogAppendTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MessageTimestampType = record.LogAppendTime
	tl := openTestLog(t, nil, cfg)
	info := tl.append(2, 5, 10, 0)
	now := tl.clock.Now().UnixMilli()
	require.Equal(t, now, info.LogAppendTime)
	require.Equal(t, now, info.MaxTimestamp)
	bt, err := record.Validate(tl.appended[0])
	require.NoError(t, err, "crc recomputed")
	require.Equal(t, record.LogAppendTime, bt.TimestampType())
}

func TestRollOnSegmentBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 10_000
	tl := openTestLog(t, nil, cfg)
	for i := range 40 {
		tl.append(2, int64(i), 900, 0)
	}
	bases := tl.SegmentBaseOffsets()
	require.Greater(t, len(bases), 4)
	// Each rolled segment stays within segment.bytes and the next one
	// starts where it ended.
	all := checkDir(t, tl.fsys, tl.dir, dirCheck{maxIndexSize: cfg.MaxIndexSize, activePreallocated: true, leaderIndex: true})
	require.Len(t, all, 40)
	for _, base := range bases {
		st, err := os.Stat(FileName(tl.dir, base, LogSuffix))
		require.NoError(t, err)
		require.LessOrEqual(t, st.Size(), cfg.SegmentBytes)
	}
	require.Equal(t, int64(0), bases[0])
	tl.closeLog()
	checkDir(t, tl.fsys, tl.dir, dirCheck{leaderIndex: true})
}

func TestRollOnSegmentMs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentMs = 60_000
	tl := openTestLog(t, nil, cfg)
	// Timestamps decide: the incoming max timestamp minus the first batch's.
	tl.append(1, 1_000_000, 10, 0)
	tl.append(1, 1_000_000+60_000, 10, 0)
	require.Equal(t, 1, tl.NumSegments(), "not more than segment.ms yet")
	tl.append(1, 1_000_000+60_001, 10, 0)
	require.Equal(t, []int64{0, 2}, tl.SegmentBaseOffsets())

	// Without timestamps the wall clock since creation decides.
	tl2 := openTestLog(t, nil, cfg)
	tl2.append(1, -1, 10, 0)
	tl2.clock.Advance(60 * time.Second)
	tl2.append(1, -1, 10, 0)
	require.Equal(t, 1, tl2.NumSegments())
	tl2.clock.Advance(time.Millisecond)
	tl2.append(1, -1, 10, 0)
	require.Equal(t, []int64{0, 2}, tl2.SegmentBaseOffsets())
}

func TestRollWhenIndexFull(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 0 // an entry for every append but the first
	cfg.MaxIndexSize = 48      // 6 offset-index slots, 4 time-index slots (one reserved)
	tl := openTestLog(t, nil, cfg)
	for i := range 20 {
		tl.append(1, int64(100+i), 10, 0)
	}
	bases := tl.SegmentBaseOffsets()
	// Appends 2..4 add time entries 1..3, then the time index is full.
	require.Equal(t, []int64{0, 4, 8, 12, 16}, bases)
	tl.closeLog()
	checkDir(t, tl.fsys, tl.dir, dirCheck{leaderIndex: true})
	for _, base := range bases[:4] {
		tidx := parseTimeIndexBytes(readAll(t, tl.fsys, FileName(tl.dir, base, TimeIndexSuffix)), base)
		// Entries for appends 2..4; the final entry at roll would repeat the
		// last one's timestamp, so it is skipped.
		require.Equal(t, []diskTimeEntry{{base + 101, base + 1}, {base + 102, base + 2}, {base + 103, base + 3}}, tidx)
	}
}

func TestRollOnRelativeOffsetOverflow(t *testing.T) {
	tl := openTestLog(t, nil, DefaultConfig())
	b := makeBatch(t, 2, 10, 10)
	_, err := tl.AppendAsFollower(b)
	require.NoError(t, err)
	far := makeBatch(t, 2, 20, 10)
	farBase := int64(math.MaxInt32) + 10
	record.Batch(far).SetBaseOffset(farBase)
	_, err = tl.AppendAsFollower(far)
	require.NoError(t, err)
	require.Equal(t, []int64{0, farBase}, tl.SegmentBaseOffsets())
	require.Equal(t, farBase+2, tl.LogEndOffset())

	// One chunk spanning the gap is split batch by batch.
	tl2 := openTestLog(t, nil, DefaultConfig())
	chunk := append(makeBatch(t, 2, 10, 10), far...)
	info, err := tl2.AppendAsFollower(chunk)
	require.NoError(t, err)
	require.Equal(t, int64(0), info.FirstOffset)
	require.Equal(t, farBase+1, info.LastOffset)
	require.Equal(t, []int64{0, farBase}, tl2.SegmentBaseOffsets())
	ri, err := tl2.Read(farBase, 1000, -1)
	require.NoError(t, err)
	require.Equal(t, far, regionBytes(t, ri.Region))

	// TruncateFullyAndStartAt near the int32 boundary, then a leader append
	// whose last offset overflows the segment rolls.
	tl3 := openTestLog(t, nil, DefaultConfig())
	require.NoError(t, tl3.TruncateFullyAndStartAt(math.MaxInt32-1))
	tl3.append(1, 1, 10, 0) // offset MaxInt32-1: relative 0
	tl3.append(5, 1, 10, 0) // offsets MaxInt32 .. MaxInt32+4: relative still fits
	require.Equal(t, []int64{math.MaxInt32 - 1}, tl3.SegmentBaseOffsets())
	require.NoError(t, tl3.TruncateFullyAndStartAt(0))
	tl3.append(1, 1, 10, 0)
	far2 := makeBatch(t, 1, 1, 10)
	record.Batch(far2).SetBaseOffset(math.MaxInt32 + 1)
	_, err = tl3.AppendAsFollower(far2)
	require.NoError(t, err)
	require.Equal(t, []int64{0, math.MaxInt32 + 1}, tl3.SegmentBaseOffsets())
}

func TestAppendAsFollowerKeepsOffsetsAndEpochs(t *testing.T) {
	leader := openTestLog(t, nil, DefaultConfig())
	for i := range 30 {
		leader.append(3, int64(i), 500, int32(i/10))
	}
	ri, err := leader.Read(0, math.MaxInt32, -1)
	require.NoError(t, err)
	all := regionBytes(t, ri.Region)

	follower := openTestLog(t, nil, DefaultConfig())
	// Replicate in chunks of ~5000 bytes cut at arbitrary points: the
	// partial tail of each chunk is ignored and fetched again.
	for off := int64(0); off < leader.LogEndOffset(); {
		ri, err := leader.Read(off, 5000, -1)
		require.NoError(t, err)
		info, err := follower.AppendAsFollower(regionBytes(t, ri.Region))
		require.NoError(t, err)
		off = info.LastOffset + 1
	}
	require.Equal(t, leader.LogEndOffset(), follower.LogEndOffset())
	require.Equal(t, leader.LeaderEpochs(), follower.LeaderEpochs())
	ri, err = follower.Read(0, math.MaxInt32, -1)
	require.NoError(t, err)
	require.Equal(t, all, regionBytes(t, ri.Region))
	follower.closeLog()
	// Follower index entries name the chunk's last offset.
	checkDir(t, follower.fsys, follower.dir, dirCheck{})
}

func TestTruncateTo(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4000
	tl := openTestLog(t, nil, cfg)
	for i := range 30 {
		tl.append(2, int64(i), 400, int32(i/10))
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	bases := tl.SegmentBaseOffsets()
	require.Greater(t, len(bases), 5)

	// Into the middle of an earlier segment, at a batch boundary.
	target := record.Batch(tl.appended[13]).BaseOffset()
	changed, err := tl.TruncateTo(target)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, target, tl.LogEndOffset())
	require.Equal(t, target, tl.HighWatermark())
	require.LessOrEqual(t, tl.RecoveryPoint(), target)
	ri, err := tl.Read(0, math.MaxInt32, -1)
	require.NoError(t, err)
	// Read returns one segment at a time; collect them all.
	var got []byte
	for off := int64(0); off < tl.LogEndOffset(); {
		ri, err = tl.Read(off, math.MaxInt32, -1)
		require.NoError(t, err)
		b := regionBytes(t, ri.Region)
		got = append(got, b...)
		batches := parseLogBytes(t, b)
		off = batches[len(batches)-1].last + 1
	}
	require.Equal(t, bytes.Join(tl.appended[:13], nil), got)
	require.Equal(t, []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 20}}, tl.LeaderEpochs())

	// Appends continue at the truncation point, into the truncated segment.
	info := tl.append(1, 99, 10, 2)
	require.Equal(t, target, info.FirstOffset)
	checkDir(t, tl.fsys, tl.dir, dirCheck{maxIndexSize: cfg.MaxIndexSize, activePreallocated: true, leaderIndex: true})

	// Beyond the end: nothing to do.
	changed, err = tl.TruncateTo(tl.LogEndOffset() + 5)
	require.NoError(t, err)
	require.False(t, changed)

	// To a segment base: that segment is emptied and kept.
	bases = tl.SegmentBaseOffsets()
	_, err = tl.TruncateTo(bases[1])
	require.NoError(t, err)
	require.Equal(t, bases[:2], tl.SegmentBaseOffsets())
	require.Equal(t, bases[1], tl.LogEndOffset())
	tl.closeLog()
	checkDir(t, tl.fsys, tl.dir, dirCheck{leaderIndex: true})
	tl.reopen(WithCleanShutdown(true))
	require.Equal(t, bases[1], tl.LogEndOffset())
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	tl := openTestLog(t, nil, DefaultConfig())
	for i := range 5 {
		tl.append(2, int64(i), 10, 1)
	}
	require.NoError(t, tl.TruncateFullyAndStartAt(1000))
	require.Equal(t, []int64{1000}, tl.SegmentBaseOffsets())
	require.Equal(t, int64(1000), tl.LogStartOffset())
	require.Equal(t, int64(1000), tl.LogEndOffset())
	require.Equal(t, int64(1000), tl.HighWatermark())
	require.Empty(t, tl.LeaderEpochs())
	_, err := tl.Read(0, 100, -1)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	info := tl.append(1, 1, 10, 2)
	require.Equal(t, int64(1000), info.FirstOffset)
	_, err = os.Stat(FileName(tl.dir, 0, LogSuffix))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestDeleteRecordsBefore(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2000
	cfg.RetentionMs = -1
	tl := openTestLog(t, nil, cfg)
	for i := range 20 {
		tl.append(2, int64(i), 300, 0)
	}
	_, err := tl.DeleteRecordsBefore(5)
	require.ErrorIs(t, err, ErrAboveHighWatermark, "high watermark is still 0")
	tl.SetHighWatermark(30)
	lso, err := tl.DeleteRecordsBefore(25)
	require.NoError(t, err)
	require.Equal(t, int64(25), lso)
	_, err = tl.Read(24, 100, -1)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	ri, err := tl.Read(25, 1, -1)
	require.NoError(t, err)
	require.Equal(t, tl.appended[12], regionBytes(t, ri.Region), "batch 24..25")
	_, err = tl.DeleteRecordsBefore(31)
	require.ErrorIs(t, err, ErrAboveHighWatermark)

	// Retention then removes the segments wholly below the start offset.
	before := tl.SegmentBaseOffsets()
	n, err := tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Positive(t, n)
	after := tl.SegmentBaseOffsets()
	require.Equal(t, before[n:], after)
	require.LessOrEqual(t, after[0], int64(25))
	require.Equal(t, int64(25), tl.LogStartOffset())
	for _, b := range before[:n] {
		_, err := os.Stat(FileName(tl.dir, b, LogSuffix))
		require.ErrorIs(t, err, os.ErrNotExist)
	}
}

func TestRetentionMs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1500
	cfg.RetentionMs = 10_000
	cfg.FileDeleteDelayMs = 60_000
	tl := openTestLog(t, nil, cfg)
	now := tl.clock.Now().UnixMilli()
	// Segments of two batches each; timestamps old, then one recent, then old.
	ts := []int64{now - 50_000, now - 40_000, now - 30_000, now - 20_000, now - 1_000, now - 900, now - 30_000, now - 30_000}
	for _, x := range ts {
		tl.append(1, x, 600, 0)
	}
	require.Equal(t, 4, tl.NumSegments())
	tl.SetHighWatermark(tl.LogEndOffset())

	n, err := tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Equal(t, 2, n, "stops at the segment with a recent timestamp")
	require.Equal(t, []int64{4, 6}, tl.SegmentBaseOffsets())
	require.Equal(t, int64(4), tl.LogStartOffset())
	// Deleted files wait as *.deleted for file.delete.delay.ms.
	_, err = os.Stat(FileName(tl.dir, 0, LogSuffix+DeletedSuffix))
	require.NoError(t, err)

	// Everything old: the active segment qualifies, so an empty one is
	// rolled first and the log keeps one segment.
	tl.clock.Advance(time.Minute)
	n, err = tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int64{8}, tl.SegmentBaseOffsets())
	require.Equal(t, int64(8), tl.LogStartOffset())
	require.Equal(t, int64(8), tl.LogEndOffset())
	_, err = os.Stat(FileName(tl.dir, 0, LogSuffix+DeletedSuffix))
	require.ErrorIs(t, err, os.ErrNotExist, "reaped after the delay")

	// The empty active segment is never deleted.
	tl.clock.Advance(time.Hour)
	n, err = tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Zero(t, n)
	info := tl.append(1, tl.clock.Now().UnixMilli(), 10, 0)
	require.Equal(t, int64(8), info.FirstOffset)
}

func TestRetentionRespectsHighWatermark(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1500
	cfg.RetentionMs = 1
	tl := openTestLog(t, nil, cfg)
	for range 6 {
		tl.append(1, 1, 600, 0)
	}
	tl.SetHighWatermark(3)
	n, err := tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the segment [0,2) lies below the high watermark")
	require.Equal(t, int64(2), tl.LogStartOffset())
}

func TestRetentionBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1500
	cfg.RetentionMs = -1
	tl := openTestLog(t, nil, cfg)
	for range 9 {
		tl.append(1, 1, 600, 0)
	}
	tl.SetHighWatermark(tl.LogEndOffset())
	segSize := tl.Size() / int64(tl.NumSegments()+1) // active holds one batch
	require.Equal(t, 5, tl.NumSegments())
	cfg.RetentionBytes = tl.Size() - 2*segSize - 1 // over by just under two segments
	require.NoError(t, tl.SetConfig(cfg))
	n, err := tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Equal(t, 1, n, "deleting a second would undershoot retention.bytes")
	require.LessOrEqual(t, tl.Size()-segSize, cfg.RetentionBytes)

	// Compact-only topics keep everything.
	cfg.CleanupPolicy = "compact"
	cfg.RetentionBytes = 1
	require.NoError(t, tl.SetConfig(cfg))
	n, err = tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestFetchOffsetByTimestamp(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3000
	cfg.IndexIntervalBytes = 500
	tl := openTestLog(t, nil, cfg)
	// Batch i has 4 records with timestamps 1000*i + 0,10,20,30.
	for i := range 30 {
		b := record.NewBuilder(record.DefaultBatchOptions())
		for r := range 4 {
			b.Append(int64(1000*i+10*r), nil, make([]byte, 100), nil)
		}
		raw, err := b.Build()
		require.NoError(t, err)
		_, err = tl.Append(raw, int32(i/10))
		require.NoError(t, err)
	}
	require.Greater(t, tl.NumSegments(), 3)
	cases := []struct {
		ts     int64
		offset int64
		found  bool
	}{
		{0, 0, true},
		{5, 1, true},
		{10, 1, true},
		{31, 4, true},
		{5020, 22, true},
		{29030, 119, true},
		{29031, 0, false},
	}
	for _, c := range cases {
		res, ok, err := tl.FetchOffsetByTimestamp(c.ts)
		require.NoError(t, err)
		require.Equal(t, c.found, ok, "ts %d", c.ts)
		if ok {
			require.Equal(t, c.offset, res.Offset, "ts %d", c.ts)
			require.GreaterOrEqual(t, res.Timestamp, c.ts)
			require.Equal(t, int32(c.offset/40), res.LeaderEpoch)
		}
	}
	res, ok, err := tl.FetchOffsetByTimestamp(EarliestTimestamp)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(0), res.Offset)
	res, _, _ = tl.FetchOffsetByTimestamp(LatestTimestamp)
	require.Equal(t, int64(120), res.Offset)
	require.Equal(t, int32(2), res.LeaderEpoch)
	res, ok, err = tl.FetchOffsetByTimestamp(MaxTimestamp)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, OffsetForTimestamp{Timestamp: 29030, Offset: 119, LeaderEpoch: 2}, res)

	// After a clean restart the same answers come from the files.
	tl.closeLog()
	tl.reopen(WithCleanShutdown(true))
	for _, c := range cases {
		res, ok, err := tl.FetchOffsetByTimestamp(c.ts)
		require.NoError(t, err)
		require.Equal(t, c.found, ok)
		if ok {
			require.Equal(t, c.offset, res.Offset, "ts %d after restart", c.ts)
		}
	}
	// Below the log start offset nothing is returned.
	tl.SetHighWatermark(tl.LogEndOffset())
	_, err = tl.DeleteRecordsBefore(50)
	require.NoError(t, err)
	res, ok, err = tl.FetchOffsetByTimestamp(0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(50), res.Offset)
}

func TestLeaderEpochCheckpoint(t *testing.T) {
	tl := openTestLog(t, nil, DefaultConfig())
	tl.append(2, 1, 10, 0)
	tl.append(2, 1, 10, 0)
	tl.append(2, 1, 10, 2)
	tl.append(2, 1, 10, 5)
	require.Equal(t, []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 4}, {Epoch: 5, StartOffset: 6}}, tl.LeaderEpochs())
	got, err := checkpoint.ReadLeaderEpochs(vfs.OS, tl.dir+"/"+checkpoint.LeaderEpochFile)
	require.NoError(t, err)
	require.Equal(t, tl.LeaderEpochs(), got)
	require.Equal(t, "0\n3\n0 0\n2 4\n5 6\n", string(readAll(t, vfs.OS, tl.dir+"/"+checkpoint.LeaderEpochFile)))

	e, off := tl.EndOffsetForEpoch(2)
	require.Equal(t, int32(2), e)
	require.Equal(t, int64(6), off)
	e, off = tl.EndOffsetForEpoch(5)
	require.Equal(t, int32(5), e)
	require.Equal(t, int64(8), off)
	e, off = tl.EndOffsetForEpoch(3)
	require.Equal(t, int32(2), e, "unknown epoch: the one below")
	require.Equal(t, int64(6), off)
	e, off = tl.EndOffsetForEpoch(9)
	require.Equal(t, UndefinedEpoch, e)
	require.Equal(t, UndefinedEpochOffset, off)

	_, err = tl.TruncateTo(6)
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 4}}, tl.LeaderEpochs())
	require.Equal(t, int64(6), tl.LogEndOffset())
	tl.closeLog()
	tl.reopen()
	require.Equal(t, []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 4}}, tl.LeaderEpochs())

	// Inside a batch: the batch goes whole and the end offset is its base.
	_, err = tl.TruncateTo(5)
	require.NoError(t, err)
	require.Equal(t, int64(4), tl.LogEndOffset())
	require.Equal(t, []EpochEntry{{Epoch: 0, StartOffset: 0}}, tl.LeaderEpochs())
}

func TestOpenRejectsBadNames(t *testing.T) {
	for _, name := range []string{"topic", "topic-", "-1", "topic-x", "topic-+1", "topic-1.5"} {
		_, err := Open(filepath.Join(t.TempDir(), name), DefaultConfig())
		require.ErrorIs(t, err, ErrBadDirName, name)
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 10
	_, err := Open(filepath.Join(t.TempDir(), "t-0"), cfg)
	require.ErrorIs(t, err, ErrBadConfig)
}

func TestClosedLog(t *testing.T) {
	tl := openTestLog(t, nil, DefaultConfig())
	tl.closeLog()
	l, err := Open(tl.dir, DefaultConfig(), WithCleanShutdown(true))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "idempotent")
	_, err = l.Append(makeBatch(t, 1, 1, 1), 0)
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.Read(0, 1, -1)
	require.True(t, errors.Is(err, ErrClosed))
}
