package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// Config holds the topic-level settings of one partition's log. Field
// comments give the Kafka property; DefaultConfig has Kafka's defaults.
type Config struct {
	SegmentBytes         int64                // segment.bytes
	SegmentMs            int64                // segment.ms
	SegmentJitterMs      int64                // segment.jitter.ms
	IndexIntervalBytes   int64                // index.interval.bytes
	MaxIndexSize         int64                // segment.index.bytes (log.index.size.max.bytes)
	RetentionMs          int64                // retention.ms; -1 keeps segments forever
	RetentionBytes       int64                // retention.bytes; -1 means no size limit
	FlushMessages        int64                // flush.messages
	FlushMs              int64                // flush.ms
	FileDeleteDelayMs    int64                // file.delete.delay.ms
	MaxMessageBytes      int64                // max.message.bytes
	MessageTimestampType record.TimestampType // message.timestamp.type
	// CleanupPolicy is cleanup.policy: "delete", "compact" or
	// "compact,delete". Time and size retention apply only with delete.
	CleanupPolicy string
	// Log cleaner settings of a compacted topic (cleaner.go).
	DeleteRetentionMs      int64   // delete.retention.ms: tombstones live this long after their first clean
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
	MinCompactionLagMs     int64   // min.compaction.lag.ms
	MaxCompactionLagMs     int64   // max.compaction.lag.ms
	// ProducerIDExpirationMs is producer.id.expiration.ms, a broker
	// setting (the same for every log): producers idle this long lose
	// their state.
	ProducerIDExpirationMs int64
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:         1 << 30,
		SegmentMs:            7 * 24 * 3600 * 1000,
		SegmentJitterMs:      0,
		IndexIntervalBytes:   4096,
		MaxIndexSize:         10 << 20,
		RetentionMs:          7 * 24 * 3600 * 1000,
		RetentionBytes:       -1,
		FlushMessages:        math.MaxInt64,
		FlushMs:              math.MaxInt64,
		FileDeleteDelayMs:    60000,
		MaxMessageBytes:      1048588,
		MessageTimestampType: record.CreateTime,
		CleanupPolicy:        "delete",

		DeleteRetentionMs:      86_400_000,
		MinCleanableDirtyRatio: 0.5,
		MinCompactionLagMs:     0,
		MaxCompactionLagMs:     math.MaxInt64,

		ProducerIDExpirationMs: DefaultProducerIDExpirationMs,
	}
}

// Validate checks the ranges Kafka's LogConfig enforces.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.SegmentBytes < record.BatchHeaderSize || c.SegmentBytes > math.MaxInt32:
		return bad("segment.bytes %d not in [%d, %d]", c.SegmentBytes, record.BatchHeaderSize, math.MaxInt32)
	case c.SegmentMs < 1:
		return bad("segment.ms %d < 1", c.SegmentMs)
	case c.SegmentJitterMs < 0:
		return bad("segment.jitter.ms %d < 0", c.SegmentJitterMs)
	case c.IndexIntervalBytes < 0:
		return bad("index.interval.bytes %d < 0", c.IndexIntervalBytes)
	case c.MaxIndexSize < 4*TimeIndexEntrySize || c.MaxIndexSize > math.MaxInt32:
		return bad("segment.index.bytes %d not in [%d, %d]", c.MaxIndexSize, 4*TimeIndexEntrySize, math.MaxInt32)
	case c.RetentionMs < -1:
		return bad("retention.ms %d < -1", c.RetentionMs)
	case c.FlushMessages < 1:
		return bad("flush.messages %d < 1", c.FlushMessages)
	case c.FlushMs < 0:
		return bad("flush.ms %d < 0", c.FlushMs)
	case c.FileDeleteDelayMs < 0:
		return bad("file.delete.delay.ms %d < 0", c.FileDeleteDelayMs)
	case c.MaxMessageBytes < 0:
		return bad("max.message.bytes %d < 0", c.MaxMessageBytes)
	case c.MessageTimestampType != record.CreateTime && c.MessageTimestampType != record.LogAppendTime:
		return bad("message.timestamp.type %d", c.MessageTimestampType)
	case c.DeleteRetentionMs < 0:
		return bad("delete.retention.ms %d < 0", c.DeleteRetentionMs)
	case !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1):
		return bad("min.cleanable.dirty.ratio %v not in [0, 1]", c.MinCleanableDirtyRatio)
	case c.MinCompactionLagMs < 0:
		return bad("min.compaction.lag.ms %d < 0", c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return bad("max.compaction.lag.ms %d < 1", c.MaxCompactionLagMs)
	case c.ProducerIDExpirationMs < 1:
		return bad("producer.id.expiration.ms %d < 1", c.ProducerIDExpirationMs)
	}
	for _, p := range strings.Split(c.CleanupPolicy, ",") {
		if p = strings.TrimSpace(p); p != "delete" && p != "compact" {
			return bad("cleanup.policy %q", c.CleanupPolicy)
		}
	}
	return nil
}

func (c Config) deletes() bool { return c.hasPolicy("delete") }

// compacts says cleanup.policy includes compact: the log cleaner keeps
// only the latest record of each key.
func (c Config) compacts() bool { return c.hasPolicy("compact") }

func (c Config) hasPolicy(name string) bool {
	for _, p := range strings.Split(c.CleanupPolicy, ",") {
		if strings.TrimSpace(p) == name {
			return true
		}
	}
	return false
}

// Option configures Open.
type Option func(*options)

type options struct {
	fsys           vfs.FS
	lg             *slog.Logger
	now            func() time.Time
	recoveryPoint  int64
	logStartOffset int64
	highWatermark  int64
	cleanShutdown  bool
	cleanerOffset  int64
}

// WithFS sets the file system (default vfs.OS).
func WithFS(fsys vfs.FS) Option { return func(o *options) { o.fsys = fsys } }

// WithLogger sets the logger (nil discards).
func WithLogger(lg *slog.Logger) Option { return func(o *options) { o.lg = lg } }

// WithClock sets the wall clock (default time.Now), used for segment.ms of
// segments without timestamps, retention.ms, LogAppendTime and flush.ms.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithRecoveryPoint sets the checkpointed recovery point: every offset
// below it was flushed before the last shutdown.
func WithRecoveryPoint(offset int64) Option { return func(o *options) { o.recoveryPoint = offset } }

// WithLogStartOffset sets the checkpointed log start offset.
func WithLogStartOffset(offset int64) Option { return func(o *options) { o.logStartOffset = offset } }

// WithHighWatermark sets the checkpointed high watermark.
func WithHighWatermark(offset int64) Option { return func(o *options) { o.highWatermark = offset } }

// WithCleanShutdown says the previous shutdown was clean (the log dir had
// a clean-shutdown marker): no segment is recovered.
func WithCleanShutdown(clean bool) Option { return func(o *options) { o.cleanShutdown = clean } }

// WithCleanerCheckpoint sets the first dirty offset read from
// cleaner-offset-checkpoint (compacted logs); -1 or an offset outside
// [LogStartOffset, LogEndOffset] means the cleaner starts at the log start.
func WithCleanerCheckpoint(offset int64) Option { return func(o *options) { o.cleanerOffset = offset } }

// FileRegion is a byte range of an open segment file, for sendfile. A
// region from Read stays readable after its segment is deleted (retention,
// truncation) for file.delete.delay.ms; one from ReadRetained holds the
// file open until Release, however long that takes.
type FileRegion struct {
	File     vfs.File
	Position int64
	Length   int64

	seg *Segment // set by ReadRetained until Release
}

// Release drops the region's hold on its segment file (ReadRetained): a
// deleted or closed segment's file is closed once no region holds it. Call
// it exactly once per retained region, after the bytes were sent or the
// region was dropped. It does nothing for a region of Read or a zero
// region; copies of a region share one hold.
func (r FileRegion) Release() {
	if r.seg != nil {
		r.seg.release()
	}
}

// AppendInfo describes an append.
type AppendInfo struct {
	FirstOffset          int64
	LastOffset           int64
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	// LogAppendTime is the broker time stamped into the batch, or -1 for
	// CreateTime topics (and for duplicates, as in Kafka).
	LogAppendTime  int64
	LogStartOffset int64
	NumRecords     int64
	ValidBytes     int64
	// Duplicate says the batch was a producer's retry of a batch already
	// in the log: nothing was appended, and FirstOffset, LastOffset and
	// MaxTimestamp are the original batch's.
	Duplicate bool
}

// ReadInfo is the answer to Read. Region.Length is 0 when there is nothing
// to return. The region starts at the batch that contains FetchOffset, so
// its first batch may begin below FetchOffset; it may end inside a batch
// when maxBytes cuts it (clients drop a partial last batch, as with Kafka).
type ReadInfo struct {
	Region            FileRegion
	FetchOffset       int64
	SegmentBaseOffset int64
	LogStartOffset    int64
	LogEndOffset      int64
	HighWatermark     int64
}

// OffsetForTimestamp is the answer to FetchOffsetByTimestamp.
type OffsetForTimestamp struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
}

// Special timestamps of ListOffsets.
const (
	LatestTimestamp   int64 = -1
	EarliestTimestamp int64 = -2
	MaxTimestamp      int64 = -3
)

// RecoveryStats says what Open had to do.
type RecoveryStats struct {
	RecoveredSegments int   // segments whose indexes were rebuilt from the .log
	TruncatedBytes    int64 // invalid bytes cut from the end
	DeletedSegments   int   // segments after a truncation point that were removed
}

type pendingDelete struct {
	seg *Segment
	at  int64 // ms
}

// Log is one partition's log: a directory <topic>-<partition> of segments.
// All methods are safe for concurrent use. Appends, truncation, retention
// and roll take the write lock; reads take the read lock; fsync runs
// outside both so that a flush does not stall produce (see LOCKS.md).
type Log struct {
	dir       string
	topic     string
	partition int32
	fsys      vfs.FS
	lg        *slog.Logger
	now       func() time.Time

	// flushMu serialises flushes and segment removal, so a segment file is
	// never closed under a running fsync. Taken before mu.
	flushMu sync.Mutex

	mu             sync.RWMutex
	cfg            Config
	segments       []*Segment // ascending base offsets; the last is active
	logStartOffset int64
	logEndOffset   int64
	recoveryPoint  int64
	highWatermark  int64
	lastFlushMs    int64
	dirGen         uint64 // bumped when files are created, renamed or removed
	syncedDirGen   uint64
	epochs         *LeaderEpochCache
	pending        []pendingDelete
	failed         error // set when a write left the log in an unknown state
	closed         bool
	flushTarget    int64 // the async flusher flushes up to here
	flusherRunning bool
	// flushWaiters are AppendAsync callers waiting for their offsets to
	// be flushed (flush.messages): group commit.
	flushWaiters []flushWaiter
	// rolledUnsynced are rolled segments whose trimmed indexes and final
	// time-index entry were not fsynced yet; the next flush syncs them even
	// if their offsets are already below the recovery point.
	rolledUnsynced []*Segment
	// closedFirstBase keeps the first segment's base offset after Close,
	// for the log-start-offset checkpoint written after the logs close.
	closedFirstBase int64
	stats           RecoveryStats

	// producers is the idempotent producers' state (producerstate.go);
	// snapshots lists the <offset>.snapshot files, ascending, and
	// pendingSnaps the snapshots taken at roll that the next flush writes
	// (producersnap.go).
	producers    *ProducerStateManager
	snapshots    []int64
	pendingSnaps []pendingSnapshot

	wg sync.WaitGroup // the async flusher started at roll

	// cleanMu serialises cleans of this log (cleaner.go); taken before
	// flushMu. firstDirtyOffset (under mu) is where the next clean starts,
	// -1 when unknown (the log start offset).
	cleanMu          sync.Mutex
	firstDirtyOffset int64
}

// ParseTopicPartition splits a partition directory name <topic>-<partition>
// (the topic may contain '-'; the partition is after the last one).
func ParseTopicPartition(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || name[i+1] == '+' {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// Open opens (creating if needed) the partition log in dir, whose base name
// must be <topic>-<partition>. Unless WithCleanShutdown(true) is given,
// every segment from the one holding the recovery point to the end is
// recovered: batches are validated, the log is cut at the first invalid or
// torn one (logged at Warn) and indexes are rebuilt.
func Open(dir string, cfg Config, opts ...Option) (*Log, error) {
	o := options{fsys: vfs.OS, now: time.Now, cleanerOffset: -1}
	for _, opt := range opts {
		opt(&o)
	}
	if o.lg == nil {
		o.lg = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	dir = filepath.Clean(dir)
	topic, partition, ok := ParseTopicPartition(filepath.Base(dir))
	if !ok {
		return nil, fmt.Errorf("open log %s: %w", dir, ErrBadDirName)
	}
	l := &Log{
		dir:       dir,
		topic:     topic,
		partition: partition,
		fsys:      o.fsys,
		lg:        o.lg.With("topic", topic, "partition", partition),
		now:       o.now,
		cfg:       cfg,

		firstDirtyOffset: o.cleanerOffset,
	}
	if err := vfs.MkdirAllSync(l.fsys, dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	err := l.load(o)
	if err == nil {
		err = l.loadProducerState(o.cleanShutdown)
	}
	if err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	l.lastFlushMs = l.nowMs()
	return l, nil
}

func (l *Log) nowMs() int64 { return l.now().UnixMilli() }

func (l *Log) segmentConfig() segmentConfig {
	sc := segmentConfig{indexIntervalBytes: l.cfg.IndexIntervalBytes, maxIndexSize: l.cfg.MaxIndexSize}
	if j := min(l.cfg.SegmentJitterMs, l.cfg.SegmentMs); j > 0 {
		sc.rollJitterMs = rand.Int64N(j)
	}
	return sc
}

func (l *Log) persistEpochs(entries []EpochEntry) error {
	if err := checkpoint.WriteLeaderEpochs(l.fsys, l.dir, entries); err != nil {
		return fmt.Errorf("write leader epochs of %s: %w", l.dir, err)
	}
	return nil
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// Topic is the topic name parsed from the directory name.
func (l *Log) Topic() string { return l.topic }

// Partition is the partition number parsed from the directory name.
func (l *Log) Partition() int32 { return l.partition }

// Config returns the log's settings.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// SetConfig replaces the settings (a topic config change). Existing
// segments keep their index interval and roll jitter.
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	l.cfg = cfg
	l.mu.Unlock()
	return nil
}

// LogStartOffset is the first offset a fetch may ask for.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStartOffset
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logEndOffset
}

// RecoveryPoint is the offset below which everything is fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint
}

// HighWatermark is the offset below which records are committed. The log
// only stores it; the replica layer sets it.
func (l *Log) HighWatermark() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.highWatermark
}

// SetHighWatermark sets the high watermark, clamped to [LogStartOffset,
// LogEndOffset], and returns the value stored.
func (l *Log) SetHighWatermark(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.highWatermark = min(max(hw, l.logStartOffset), l.logEndOffset)
	return l.highWatermark
}

// FirstSegmentBaseOffset is the base offset of the oldest segment.
func (l *Log) FirstSegmentBaseOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segments) == 0 {
		return l.closedFirstBase
	}
	return l.segments[0].baseOffset
}

// Size is the total size of the segments' .log files in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// NumSegments is the number of live segments.
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segments)
}

// SegmentBaseOffsets lists the live segments' base offsets, ascending.
func (l *Log) SegmentBaseOffsets() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]int64, len(l.segments))
	for i, s := range l.segments {
		out[i] = s.baseOffset
	}
	return out
}

// RecoveryStats reports what Open recovered.
func (l *Log) RecoveryStats() RecoveryStats {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.stats
}

// LeaderEpochs returns the leader-epoch cache entries.
func (l *Log) LeaderEpochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.Entries()
}

// LatestEpoch is the newest leader epoch in the cache.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.LatestEpoch()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for this log.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.EndOffsetFor(epoch, l.logEndOffset)
}

// AssignLeaderEpoch records that a new leader epoch starts at the current
// log end offset (the replica layer calls it on becoming leader).
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	_, err := l.epochs.Assign(epoch, l.logEndOffset)
	return err
}

// UnflushedMessages is how many offsets lie above the recovery point.
func (l *Log) UnflushedMessages() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logEndOffset - l.recoveryPoint
}

// active is the last segment; the caller holds mu.
func (l *Log) active() *Segment { return l.segments[len(l.segments)-1] }

// floorSegment returns the index of the segment holding offset (the last
// with base ≤ offset), or -1. Binary search: O(log segments).
func (l *Log) floorSegment(offset int64) int {
	return sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > offset }) - 1
}

func (l *Log) checkWritable() error {
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return fmt.Errorf("log %s: %w: %w", l.dir, ErrFailed, l.failed)
	}
	return nil
}

// Failed returns the I/O error that failed the log (nil if it has not
// failed). A failed log refuses writes and flushes, and is recovered at
// the next start: the Manager writes no clean-shutdown marker for its dir.
func (l *Log) Failed() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.failed
}

// fail marks the log failed after an I/O error left its files in an
// unknown state (Kafka takes the log dir offline). The caller holds mu.
func (l *Log) fail(err error) {
	if l.failed == nil {
		l.failed = err
		l.lg.Error("log failed, refusing writes until restart", "err", err)
	}
}

// Append appends one record batch as the leader: batch must hold exactly
// one v2 batch, which is validated (structure and CRC-32C, one record per
// offset, no control batch), then assigned offsets by rewriting its
// baseOffset to the log end offset and its partitionLeaderEpoch to
// leaderEpoch, in place (both lie outside the CRC). For LogAppendTime topics
// the max timestamp is set to now and the CRC recomputed. The caller's
// slice is modified and may be reused once Append returns.
//
// A batch with a producer id (idempotent) is first checked against the
// producer's state (ProducerStateManager.CheckAppend): a retry of one of
// its last five batches is not appended but answered with the original
// offsets and Duplicate set; a fenced epoch is ErrInvalidProducerEpoch and
// a sequence gap ErrOutOfOrderSequence.
func (l *Log) Append(batch []byte, leaderEpoch int32) (AppendInfo, error) {
	info, needFlush, err := l.appendLeader(batch, leaderEpoch)
	if err == nil && needFlush {
		err = l.Flush(info.LastOffset + 1)
	}
	return info, err
}

// AppendAsync is Append without waiting for a flush: when flush.messages
// calls for one, AppendAsync schedules it on the log's background flusher,
// returns at once with pending set, and calls flushed once the batch is
// durable (nil) or can no longer become so (the error that failed, closed
// or truncated the log). Without a flush due, pending is false and flushed
// is never called.
//
// This is group commit: while one fsync runs, later batches, also those
// of the same connection, are appended and wait for the next one, so
// flush.messages=1 costs an fsync per group of batches instead of
// serialising every batch behind its own (Kafka fsyncs inside the append).
// flushed runs on the flusher goroutine and must not block or call back
// into the log.
func (l *Log) AppendAsync(batch []byte, leaderEpoch int32, flushed func(error)) (info AppendInfo, pending bool, err error) {
	info, needFlush, err := l.appendLeader(batch, leaderEpoch)
	if err != nil || !needFlush {
		return info, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	target := info.LastOffset + 1
	if target <= l.recoveryPoint {
		return info, false, nil // a concurrent flush covered it already
	}
	if err := l.checkWritable(); err != nil {
		return info, false, err
	}
	l.flushWaiters = append(l.flushWaiters, flushWaiter{offset: target, done: flushed})
	l.scheduleFlush(target)
	return info, true, nil
}

// flushWaiter is an AppendAsync caller waiting for the recovery point to
// reach offset.
type flushWaiter struct {
	offset int64
	done   func(error)
}

// releaseFlushWaiters calls, outside mu, the waiters whose offsets the
// recovery point has reached, or every waiter with err when err is not nil.
func (l *Log) releaseFlushWaiters(err error) {
	l.mu.Lock()
	ready := l.takeFlushWaiters(func(w flushWaiter) bool { return err != nil || w.offset <= l.recoveryPoint })
	l.mu.Unlock()
	for _, w := range ready {
		w.done(err)
	}
}

// releaseTruncatedWaiters fails the waiters whose batches a truncation
// removed: those above the new log end offset, or all of them after a
// full truncation. Called after mu is released.
func (l *Log) releaseTruncatedWaiters(all bool) {
	l.mu.Lock()
	gone := l.takeFlushWaiters(func(w flushWaiter) bool { return all || w.offset > l.logEndOffset })
	l.mu.Unlock()
	for _, w := range gone {
		w.done(fmt.Errorf("log %s: %w", l.dir, ErrTruncated))
	}
}

// takeFlushWaiters removes the waiters for which take is true and returns
// them in order; the caller holds mu.
func (l *Log) takeFlushWaiters(take func(flushWaiter) bool) []flushWaiter {
	var taken []flushWaiter
	keep := l.flushWaiters[:0]
	for _, w := range l.flushWaiters {
		if take(w) {
			taken = append(taken, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(l.flushWaiters[len(keep):])
	l.flushWaiters = keep
	return taken
}

// appendLeader is Append up to the flush: it reports whether
// flush.messages calls for one.
func (l *Log) appendLeader(batch []byte, leaderEpoch int32) (AppendInfo, bool, error) {
	bt, err := record.Validate(batch)
	if err != nil {
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w: %w", l.dir, ErrInvalidBatch, err)
	}
	if len(bt) != len(batch) {
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w: %d bytes after the batch (one batch per append)", l.dir, ErrInvalidBatch, len(batch)-len(bt))
	}
	count, delta := bt.NumRecords(), bt.LastOffsetDelta()
	if count <= 0 || int64(count) != int64(delta)+1 {
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w: record count %d does not match lastOffsetDelta %d", l.dir, ErrInvalidBatch, count, delta)
	}
	if bt.IsControl() {
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w: clients may not write control batches", l.dir, ErrInvalidBatch)
	}
	idempotent := bt.ProducerID() >= 0
	if idempotent && bt.BaseSequence() < 0 {
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w: producer %d sent sequence %d", l.dir, ErrInvalidBatch, bt.ProducerID(), bt.BaseSequence())
	}

	l.mu.Lock()
	if err := l.checkWritable(); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, false, err
	}
	if int64(len(batch)) > l.cfg.MaxMessageBytes {
		l.mu.Unlock()
		return AppendInfo{}, false, fmt.Errorf("append %d bytes to %s (max.message.bytes %d): %w", len(batch), l.dir, l.cfg.MaxMessageBytes, ErrBatchTooLarge)
	}
	if idempotent {
		if dup, err := l.producers.CheckAppend(bt); err != nil {
			info := AppendInfo{LogStartOffset: l.logStartOffset}
			l.mu.Unlock()
			if err == ErrDuplicateSequence {
				info.FirstOffset, info.LastOffset = dup.FirstOffset, dup.LastOffset
				info.MaxTimestamp, info.OffsetOfMaxTimestamp = dup.Timestamp, dup.LastOffset
				info.LogAppendTime = -1
				info.NumRecords = int64(count)
				info.Duplicate = true
				return info, false, nil
			}
			return AppendInfo{}, false, fmt.Errorf("append to %s: %w", l.dir, err)
		}
	}
	base := l.logEndOffset
	bt.SetBaseOffset(base)
	bt.SetPartitionLeaderEpoch(leaderEpoch)
	var nowMs int64 = -1
	appendTime := int64(-1)
	if l.cfg.MessageTimestampType == record.LogAppendTime {
		nowMs = l.nowMs()
		appendTime = nowMs
		bt.SetLogAppendTime(nowMs)
	}
	last := base + int64(delta)
	maxTs := bt.MaxTimestamp()
	seg, err := l.maybeRoll(int64(len(batch)), maxTs, base, last, nowMs)
	if err == nil {
		err = seg.append(batch, last, maxTs, last)
	}
	if err != nil {
		l.failed = err
		l.mu.Unlock()
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	l.logEndOffset = last + 1
	if idempotent {
		l.producers.Update(bt)
	}
	if leaderEpoch >= 0 {
		if _, err := l.epochs.Assign(leaderEpoch, base); err != nil {
			l.lg.Warn("leader epoch checkpoint not written", "err", err)
		}
	}
	info := AppendInfo{
		FirstOffset:          base,
		LastOffset:           last,
		MaxTimestamp:         maxTs,
		OffsetOfMaxTimestamp: last,
		LogAppendTime:        appendTime,
		LogStartOffset:       l.logStartOffset,
		NumRecords:           int64(count),
		ValidBytes:           int64(len(batch)),
	}
	needFlush := l.logEndOffset-l.recoveryPoint >= l.cfg.FlushMessages
	l.mu.Unlock()
	return info, needFlush, nil
}

// AppendAsFollower appends batches fetched from the leader, keeping their
// offsets and leader epochs. Every complete batch is validated; a partial
// batch at the end (a fetch response cut by max bytes) is ignored. The first
// offset must not be below the log end offset. The whole chunk is one
// append for the index rule, as in Kafka.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogAppendTime: -1}
	pos := 0
	prevLast := int64(math.MinInt64)
	for pos < len(batches) {
		bt, err := record.Validate(batches[pos:])
		if err != nil {
			if errors.Is(err, record.ErrShortBuffer) {
				break
			}
			return AppendInfo{}, fmt.Errorf("append to %s at byte %d: %w: %w", l.dir, pos, ErrInvalidBatch, err)
		}
		if bt.BaseOffset() <= prevLast {
			return AppendInfo{}, fmt.Errorf("append to %s: %w: batch base offset %d after %d", l.dir, ErrInvalidBatch, bt.BaseOffset(), prevLast)
		}
		if info.FirstOffset < 0 {
			info.FirstOffset = bt.BaseOffset()
		}
		if bt.MaxTimestamp() > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = bt.MaxTimestamp(), bt.LastOffset()
		}
		prevLast = bt.LastOffset()
		info.LastOffset = prevLast
		info.NumRecords += int64(bt.NumRecords())
		pos += len(bt)
	}
	info.ValidBytes = int64(pos)
	if pos == 0 {
		return info, nil
	}
	chunk := batches[:pos]

	l.mu.Lock()
	if err := l.checkWritable(); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, err
	}
	if info.FirstOffset < l.logEndOffset {
		leo := l.logEndOffset
		l.mu.Unlock()
		return AppendInfo{}, fmt.Errorf("append to %s: first offset %d below log end offset %d: %w", l.dir, info.FirstOffset, leo, ErrOffsetOutOfRange)
	}
	for p := 0; p < len(chunk); {
		size, _, _ := record.PeekSize(chunk[p:])
		if int64(size) > l.cfg.MaxMessageBytes {
			l.mu.Unlock()
			return AppendInfo{}, fmt.Errorf("append %d-byte batch to %s (max.message.bytes %d): %w", size, l.dir, l.cfg.MaxMessageBytes, ErrBatchTooLarge)
		}
		p += size
	}
	var err error
	if info.LastOffset-info.FirstOffset <= math.MaxInt32 {
		err = l.appendChunk(chunk, info.FirstOffset, info.LastOffset, info.MaxTimestamp, info.OffsetOfMaxTimestamp)
	} else {
		// The chunk spans more offsets than one segment can index: append
		// batch by batch so that each may roll.
		for p := 0; p < len(chunk) && err == nil; {
			bt := record.Batch(chunk[p : p+record.Batch(chunk[p:]).Size()])
			err = l.appendChunk(bt, bt.BaseOffset(), bt.LastOffset(), bt.MaxTimestamp(), bt.LastOffset())
			p += len(bt)
		}
	}
	if err != nil {
		l.failed = err
		l.mu.Unlock()
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	for p := 0; p < len(chunk); {
		bt := record.Batch(chunk[p:])
		if e := bt.PartitionLeaderEpoch(); e >= 0 {
			if _, err := l.epochs.Assign(e, bt.BaseOffset()); err != nil {
				l.lg.Warn("leader epoch checkpoint not written", "err", err)
			}
		}
		p += bt.Size()
	}
	info.LogStartOffset = l.logStartOffset
	needFlush := l.logEndOffset-l.recoveryPoint >= l.cfg.FlushMessages
	l.mu.Unlock()
	if needFlush {
		if err := l.Flush(info.LastOffset + 1); err != nil {
			return info, err
		}
	}
	return info, nil
}

// appendChunk rolls if needed and writes one chunk of whole batches; the
// caller holds mu.
func (l *Log) appendChunk(chunk []byte, first, last, maxTs, offsetOfMaxTs int64) error {
	seg, err := l.maybeRoll(int64(len(chunk)), maxTs, first, last, -1)
	if err != nil {
		return err
	}
	if err := seg.append(chunk, last, maxTs, offsetOfMaxTs); err != nil {
		return err
	}
	l.logEndOffset = last + 1
	// Replicated batches update producer state unchecked (Kafka's
	// Replication origin), so that this replica can take over as leader.
	for p := 0; p < len(chunk); {
		bt := record.Batch(chunk[p:])
		if bt.ProducerID() >= 0 {
			l.producers.Update(bt)
		}
		p += bt.Size()
	}
	return nil
}

// maybeRoll returns the segment to append to, rolling first when Kafka's
// rule says so. nowMs < 0 means "not read yet". The caller holds mu.
func (l *Log) maybeRoll(size, maxTs, firstOffset, lastOffset, nowMs int64) (*Segment, error) {
	seg := l.active()
	if nowMs < 0 {
		nowMs = l.nowMs()
	}
	roll, reason, err := seg.shouldRoll(l.cfg.SegmentBytes, l.cfg.SegmentMs, size, maxTs, lastOffset, nowMs)
	if err != nil || !roll {
		return seg, err
	}
	return l.roll(firstOffset, reason)
}

// roll closes the active segment for appends and starts a new one at
// max(expectedNextOffset, log end offset). The old segment is flushed in
// the background. The caller holds mu.
func (l *Log) roll(expectedNextOffset int64, reason string) (*Segment, error) {
	old := l.active()
	newBase := max(expectedNextOffset, l.logEndOffset)
	if old.baseOffset == newBase {
		if old.size == 0 {
			return old, nil
		}
		return nil, fmt.Errorf("roll %s to %d: %w", l.dir, newBase, ErrSegmentExists)
	}
	if newBase < old.baseOffset {
		return nil, fmt.Errorf("roll %s to %d below active segment %d: %w", l.dir, newBase, old.baseOffset, ErrSegmentExists)
	}
	if err := old.onBecomeInactive(); err != nil {
		return nil, err
	}
	seg, err := createSegment(l.fsys, l.dir, newBase, l.segmentConfig(), l.nowMs(), l.lg)
	if err != nil {
		return nil, err
	}
	l.segments = append(l.segments, seg)
	l.rolledUnsynced = append(l.rolledUnsynced, old)
	l.dirGen++
	l.lg.Info("rolled segment", "segment", seg.logPath, "offset", newBase, "reason", reason)
	// The producer state as of the new base, written by the flush below.
	l.queueSnapshot(newBase)
	l.scheduleFlush(newBase)
	return seg, nil
}

// scheduleFlush makes the background flusher flush up to offset (Kafka
// flushes a rolled segment asynchronously so that the recovery point
// advances). One flusher goroutine runs at a time. The caller holds mu.
func (l *Log) scheduleFlush(offset int64) {
	l.flushTarget = max(l.flushTarget, offset)
	if l.flusherRunning || l.closed || l.failed != nil {
		return
	}
	l.flusherRunning = true
	l.wg.Go(func() {
		for {
			l.mu.Lock()
			target := l.flushTarget
			if (target <= l.recoveryPoint && len(l.rolledUnsynced) == 0 && len(l.pendingSnaps) == 0) || l.checkWritable() != nil {
				l.flusherRunning = false
				failed := l.failed
				l.mu.Unlock()
				if failed != nil {
					l.releaseFlushWaiters(fmt.Errorf("log %s: %w: %w", l.dir, ErrFailed, failed))
				}
				return
			}
			l.mu.Unlock()
			if err := l.Flush(target); err != nil {
				if !errors.Is(err, ErrClosed) {
					l.lg.Warn("background flush failed", "offset", target, "err", err)
				}
				l.mu.Lock()
				l.flusherRunning = false
				l.mu.Unlock()
				return
			}
		}
	})
}

// Flush fsyncs every segment holding offsets in [recovery point, upTo) and
// the directory if files were created, renamed or removed since the last
// flush, then raises the recovery point to upTo (at most the log end
// offset). The fsyncs run without the log lock.
//
// A failed write or fsync fails the log, as in Kafka: after a failed fsync
// the kernel may have dropped the dirty pages, so a retry that succeeds
// proves nothing. The recovery point stays where it was, writes and
// flushes are refused (ErrFailed) and the next start recovers the log.
// A closed or deleted log is not flushed (ErrClosed).
func (l *Log) Flush(upTo int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	err := l.checkWritable()
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	return l.flushLocked(upTo)
}

// flushLocked is Flush with flushMu held. It releases the AppendAsync
// waiters the flush made durable, or all of them when it failed the log.
func (l *Log) flushLocked(upTo int64) error {
	err := l.flushFiles(upTo)
	switch {
	case errors.Is(err, ErrClosed) || errors.Is(err, ErrFailed):
		l.releaseFlushWaiters(err)
	case err != nil && l.Failed() != nil:
		l.releaseFlushWaiters(fmt.Errorf("%w: %w", ErrFailed, err))
	case err == nil:
		l.releaseFlushWaiters(nil)
	}
	return err
}

// flushFiles does flushLocked's work.
func (l *Log) flushFiles(upTo int64) error {
	l.mu.Lock()
	if l.segments == nil {
		l.mu.Unlock()
		return ErrClosed
	}
	upTo = min(upTo, l.logEndOffset)
	gen := l.dirGen
	needDirSync := gen != l.syncedDirGen
	if upTo <= l.recoveryPoint && !needDirSync && len(l.rolledUnsynced) == 0 && len(l.pendingSnaps) == 0 {
		l.mu.Unlock()
		return nil
	}
	// Snapshots taken at roll are written after the segments below them
	// are synced (a snapshot is only trusted at or below the recovery
	// point anyway).
	snaps := l.pendingSnaps
	l.pendingSnaps = nil
	var segs []*Segment
	for _, s := range l.rolledUnsynced {
		if !s.removed {
			segs = append(segs, s)
		}
	}
	if upTo > l.recoveryPoint {
		for i, s := range l.segments {
			next := l.logEndOffset
			if i+1 < len(l.segments) {
				next = l.segments[i+1].baseOffset
			}
			if s.baseOffset < upTo && next > l.recoveryPoint && !slices.Contains(segs, s) {
				segs = append(segs, s)
			}
		}
	}
	clear(l.rolledUnsynced)
	l.rolledUnsynced = l.rolledUnsynced[:0]
	// A failure fails the log (see Flush): the snapshots are dropped and
	// the recovery point is not raised.
	for _, s := range segs {
		if err := s.writePendingIndexes(); err != nil {
			err = fmt.Errorf("flush %s: %w", l.dir, err)
			l.fail(err)
			l.mu.Unlock()
			return err
		}
	}
	l.mu.Unlock()

	for _, s := range segs {
		if err := s.syncFiles(); err != nil {
			err = fmt.Errorf("flush %s: %w", l.dir, err)
			l.mu.Lock()
			l.fail(err)
			l.mu.Unlock()
			return err
		}
	}
	if needDirSync {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			err = fmt.Errorf("flush %s: sync dir: %w", l.dir, err)
			l.mu.Lock()
			l.fail(err)
			l.mu.Unlock()
			return err
		}
	}
	l.writeSnapshots(snaps)

	l.mu.Lock()
	l.syncedDirGen = max(l.syncedDirGen, gen)
	if upTo > l.recoveryPoint {
		l.recoveryPoint = min(upTo, l.logEndOffset)
	}
	l.lastFlushMs = l.nowMs()
	l.mu.Unlock()
	return nil
}

// FlushIfDue flushes everything when flush.ms has passed since the last
// flush (the Manager's flush scheduler calls it).
func (l *Log) FlushIfDue() error {
	l.mu.RLock()
	due := l.cfg.FlushMs != math.MaxInt64 && l.nowMs()-l.lastFlushMs >= l.cfg.FlushMs && l.logEndOffset > l.recoveryPoint
	leo := l.logEndOffset
	err := l.checkWritable()
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	if !due {
		return nil
	}
	return l.Flush(leo)
}

// Read returns the file region holding the batches from offset on: at most
// maxBytes, except that the first batch is returned whole even when it is
// larger, and nothing at or above maxOffset (pass the high watermark for
// consumers, a negative value or the log end offset for no limit). Reading
// at the log end offset returns an empty region; below the log start offset
// or above the log end offset it is ErrOffsetOutOfRange. No record bytes
// are copied.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64) (ReadInfo, error) {
	return l.read(offset, maxBytes, maxOffset, false)
}

// ReadRetained is Read for a region that outlives the call (a fetch
// response sent with sendfile, possibly queued behind others): the region
// holds its segment's file open, even after the segment is deleted and
// file.delete.delay.ms has passed, until Region.Release is called, so its
// descriptor is never closed and reused for another file before the bytes
// are sent. The caller must call Release exactly once.
func (l *Log) ReadRetained(offset int64, maxBytes int32, maxOffset int64) (ReadInfo, error) {
	return l.read(offset, maxBytes, maxOffset, true)
}

func (l *Log) read(offset int64, maxBytes int32, maxOffset int64, retain bool) (ReadInfo, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	info := ReadInfo{FetchOffset: offset, LogStartOffset: l.logStartOffset, LogEndOffset: l.logEndOffset, HighWatermark: l.highWatermark}
	if l.segments == nil {
		return info, ErrClosed
	}
	if offset < l.logStartOffset || offset > l.logEndOffset {
		return info, fmt.Errorf("read %s at %d (log start %d, end %d): %w", l.dir, offset, l.logStartOffset, l.logEndOffset, ErrOffsetOutOfRange)
	}
	if maxOffset < 0 || maxOffset > l.logEndOffset {
		maxOffset = l.logEndOffset
	}
	if offset >= maxOffset || maxBytes < 0 {
		return info, nil
	}
	maxIdx := l.floorSegment(maxOffset)
	for i := max(l.floorSegment(offset), 0); i < len(l.segments) && i <= maxIdx; i++ {
		seg := l.segments[i]
		maxPos := seg.size
		if i == maxIdx && maxOffset < l.logEndOffset {
			p, _, found, err := seg.translateOffset(maxOffset, 0)
			if err != nil {
				return info, err
			}
			if found {
				maxPos = p
			}
		}
		pos, n, found, err := seg.read(offset, int64(maxBytes), maxPos, true)
		if err != nil {
			return info, err
		}
		if found {
			if pos >= maxPos {
				return info, nil
			}
			info.Region = FileRegion{File: seg.log, Position: pos, Length: n}
			if retain {
				seg.retain()
				info.Region.seg = seg
			}
			info.SegmentBaseOffset = seg.baseOffset
			return info, nil
		}
	}
	return info, nil
}

// FetchOffsetByTimestamp answers ListOffsets: for a real timestamp, the
// offset of the first record whose timestamp is ≥ ts (found with the time
// index, a short scan of batch headers and a record scan of one batch); for
// EarliestTimestamp the log start offset, for LatestTimestamp the log end
// offset, for MaxTimestamp the record with the largest timestamp. ok is
// false when no record qualifies.
func (l *Log) FetchOffsetByTimestamp(ts int64) (res OffsetForTimestamp, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.segments == nil {
		return res, false, ErrClosed
	}
	switch ts {
	case EarliestTimestamp:
		return OffsetForTimestamp{Timestamp: -1, Offset: l.logStartOffset, LeaderEpoch: l.epochs.EpochForOffset(l.logStartOffset)}, true, nil
	case LatestTimestamp:
		e, _ := l.epochs.LatestEpoch()
		return OffsetForTimestamp{Timestamp: -1, Offset: l.logEndOffset, LeaderEpoch: e}, true, nil
	case MaxTimestamp:
		return l.maxTimestampOffset()
	}
	if ts < 0 {
		return res, false, fmt.Errorf("fetch offset by timestamp %d: %w", ts, ErrOffsetOutOfRange)
	}
	for _, seg := range l.segments {
		largest, err := seg.largestTimestamp()
		if err != nil {
			return res, false, err
		}
		if largest < ts {
			continue
		}
		res, ok, err := seg.findOffsetByTimestamp(ts, l.logStartOffset)
		if err != nil || ok {
			return res, ok, err
		}
	}
	return res, false, nil
}

// maxTimestampOffset finds the record with the largest timestamp. The
// caller holds mu.
func (l *Log) maxTimestampOffset() (OffsetForTimestamp, bool, error) {
	var best *Segment
	bestTs := TimestampOffset{Timestamp: -1}
	for _, seg := range l.segments {
		ts, err := seg.maxTimestampSoFar()
		if err != nil {
			return OffsetForTimestamp{}, false, err
		}
		if ts.Timestamp > bestTs.Timestamp {
			best, bestTs = seg, ts
		}
	}
	if best == nil {
		return OffsetForTimestamp{}, false, nil
	}
	res, ok, err := best.findOffsetByTimestamp(bestTs.Timestamp, l.logStartOffset)
	if err != nil || !ok {
		return OffsetForTimestamp{Timestamp: bestTs.Timestamp, Offset: bestTs.Offset, LeaderEpoch: l.epochs.EpochForOffset(bestTs.Offset)}, true, err
	}
	return res, true, nil
}

// TruncateTo removes every offset ≥ offset (a follower diverged from its
// leader). It reports whether anything was removed. The log end offset
// becomes offset (or, if a batch straddles offset, that batch's base
// offset: batches are removed whole); the high watermark and the recovery
// point are lowered to it if above.
func (l *Log) TruncateTo(offset int64) (bool, error) {
	if offset < 0 {
		return false, fmt.Errorf("truncate %s to %d: %w", l.dir, offset, ErrOffsetOutOfRange)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	defer l.releaseTruncatedWaiters(false)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return false, err
	}
	if offset >= l.logEndOffset {
		return false, nil
	}
	l.lg.Info("truncating log", "offset", offset, "log_end_offset", l.logEndOffset)
	if l.segments[0].baseOffset > offset {
		return true, l.truncateFullyAndStartAtLocked(offset)
	}
	i := l.floorSegment(offset)
	// A segment starting at offset is kept (emptied) as the active one.
	for _, s := range l.segments[i+1:] {
		if err := l.deleteSegmentFiles(s); err != nil {
			l.failed = err
			return true, err
		}
	}
	clear(l.segments[i+1:])
	l.segments = l.segments[:i+1]
	_, end, err := l.active().truncateTo(offset)
	if err != nil {
		l.failed = err
		return true, err
	}
	offset = end
	l.logEndOffset = offset
	if err := l.epochs.TruncateFromEnd(offset); err != nil {
		l.lg.Warn("leader epoch checkpoint not written", "err", err)
	}
	l.logStartOffset = min(l.logStartOffset, offset)
	l.highWatermark = min(l.highWatermark, offset)
	l.recoveryPoint = min(l.recoveryPoint, offset)
	l.flushTarget = min(l.flushTarget, offset)
	if err := l.truncateProducerState(); err != nil {
		l.failed = err
		return true, err
	}
	return true, nil
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset (a follower far behind a leader whose log start moved past it).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("truncate %s fully to %d: %w", l.dir, offset, ErrOffsetOutOfRange)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	defer l.releaseTruncatedWaiters(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	return l.truncateFullyAndStartAtLocked(offset)
}

func (l *Log) truncateFullyAndStartAtLocked(offset int64) error {
	l.lg.Info("truncating log fully", "offset", offset)
	for _, s := range l.segments {
		if err := l.deleteSegmentFiles(s); err != nil {
			l.failed = err
			return err
		}
	}
	l.segments = l.segments[:0]
	seg, err := createSegment(l.fsys, l.dir, offset, l.segmentConfig(), l.nowMs(), l.lg)
	if err != nil {
		l.failed = err
		return err
	}
	l.segments = append(l.segments, seg)
	l.dirGen++
	if err := l.epochs.Clear(); err != nil {
		l.lg.Warn("leader epoch checkpoint not written", "err", err)
	}
	l.producers.Reset()
	if err := l.deleteSnapshotsIf(func(int64) bool { return true }); err != nil {
		l.lg.Warn("producer snapshot not deleted", "err", err)
	}
	l.logStartOffset, l.logEndOffset = offset, offset
	l.highWatermark, l.recoveryPoint, l.flushTarget = offset, offset, offset
	return nil
}

// Close flushes the log, appends each active segment's final time-index
// entry, trims the indexes, removes pending *.deleted files and closes every
// file. The log end offset becomes the recovery point. A failed log (see
// Failed) is closed without a flush and Close returns an error wrapping
// ErrFailed and the failure, so that the Manager writes no clean-shutdown
// marker and the next start recovers the log.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
	// Waiters the final flush below did not release (a failed log) learn
	// that their batches will not be flushed by this process.
	defer l.releaseFlushWaiters(fmt.Errorf("log %s: %w", l.dir, ErrClosed))

	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	var errs []error
	l.mu.Lock()
	// Final time-index entry and trimmed indexes first, so that the flush
	// below makes the files a clean restart trusts durable.
	active := l.active()
	failed := l.failed
	if failed != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrFailed, failed))
	} else if err := active.onBecomeInactive(); err != nil {
		errs = append(errs, err)
	}
	leo := l.logEndOffset
	var snap []pendingSnapshot
	if failed == nil {
		snap = []pendingSnapshot{{offset: leo, data: checkpoint.EncodeProducerSnapshot(l.producers.Snapshot())}}
	}
	l.mu.Unlock()
	if failed == nil {
		if err := l.flushLocked(leo); err != nil {
			errs = append(errs, err)
		} else {
			// The clean-shutdown snapshot: the next clean Open replays
			// nothing.
			l.writeSnapshots(snap)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if failed == nil {
		if err := active.flush(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.reapDeleted(0, true); err != nil {
		errs = append(errs, err)
	}
	if l.dirGen != l.syncedDirGen {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			errs = append(errs, fmt.Errorf("close %s: sync dir: %w", l.dir, err))
		}
	}
	errs = append(errs, l.closeSegments())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close log %s: %w", l.dir, err)
	}
	return nil
}

// stop makes the log write nothing more to its directory (DeleteLog calls
// it before renaming the directory away, so that nothing lands in a new
// partition created at the old path): it is marked closed, so writes and
// flushes are refused, the background flusher and any running flush are
// waited for, and the pending producer snapshots are taken out (returned
// for resume). Reads keep working until closeWithoutFlush.
func (l *Log) stop() []pendingSnapshot {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
	l.releaseFlushWaiters(fmt.Errorf("log %s: %w", l.dir, ErrClosed))
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	snaps := l.pendingSnaps
	l.pendingSnaps = nil
	return snaps
}

// resume undoes stop (the directory could not be renamed).
func (l *Log) resume(snaps []pendingSnapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = false
	l.requeueSnapshots(snaps)
	if len(snaps) > 0 {
		l.scheduleFlush(l.flushTarget)
	}
}

// closeWithoutFlush closes every file without writing anything (a log
// being deleted, or one opened by a start-up that failed).
func (l *Log) closeWithoutFlush() {
	l.mu.Lock()
	l.closed = true // perhaps already, by stop: the files are closed anyway
	l.mu.Unlock()
	l.releaseFlushWaiters(fmt.Errorf("log %s: %w", l.dir, ErrClosed))
	l.wg.Wait()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segments {
		s.closeHandles()
	}
	for _, p := range l.pending {
		p.seg.closeHandles()
	}
	if len(l.segments) > 0 {
		l.closedFirstBase = l.segments[0].baseOffset
	}
	l.segments, l.pending = nil, nil
}

// closeSegments closes every segment; the caller holds mu (or owns l).
func (l *Log) closeSegments() error {
	var errs []error
	for _, s := range l.segments {
		errs = append(errs, s.close())
	}
	for _, p := range l.pending {
		p.seg.closeHandles()
	}
	if len(l.segments) > 0 {
		l.closedFirstBase = l.segments[0].baseOffset
	}
	l.segments = nil
	l.pending = nil
	return errors.Join(errs...)
}
