package log

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	report         func(error)
}

// WithFS sets the file system (default vfs.OS).
func WithFS(fsys vfs.FS) Option { return func(o *options) { o.fsys = fsys } }

// WithLogger sets the logger (nil discards).
func WithLogger(lg *slog.Logger) Option { return func(o *options) { o.lg = lg } }

// WithFailureReporter sets where the log reports the I/O error that fails
// it, once: the Manager's failure channel, which takes the log's whole
// directory offline (Kafka's LogDirFailureChannel). fn is called with the
// log's lock held, so it must neither block nor call back into the log.
// Without a reporter the log logs its failure at ERROR itself.
func WithFailureReporter(fn func(err error)) Option { return func(o *options) { o.report = fn } }

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

// RecoveryStats says what Open had to do.
type RecoveryStats struct {
	RecoveredSegments int   // segments whose indexes were rebuilt from the .log
	TruncatedBytes    int64 // invalid bytes cut from the end
	DeletedSegments   int   // segments after a truncation point that were removed
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
	// createdUnsynced says Open created the partition directory and no
	// flush has started since: partition.metadata and the leader-epoch
	// checkpoint are written without an fsync (writeUnsynced), and the
	// first flush fsyncs them, the directory and its parent (the log dir)
	// before it counts anything as flushed (dirUnsynced). Creating a
	// partition so costs no fsync in the request that creates it (10,000
	// partitions were 30,000 fsyncs), and nothing is lost: until its first
	// flush a log holds nothing durable, and a partition whose directory a
	// crash took is created again, empty, at the next start. The flush
	// clears it when it plans its work (under mu), so a write made while
	// the flush runs takes the durable path.
	createdUnsynced bool
	// dirUnsynced says the directory's own entry, in the log dir, may not
	// be durable: the log was created here, or loaded after an unclean
	// shutdown (a directory created by a process that was killed before
	// its first flush exists only in the page cache). The next flush
	// syncs the directory and the log dir (syncCreation) first.
	dirUnsynced bool
	epochs      *LeaderEpochCache
	// maxEpochSeen is the newest leader epoch this log has named since it
	// was opened: in its checkpoint at load (before entries past the log
	// end were dropped) or assigned since; -1 for none. A leadership
	// below or at it would reuse an epoch an earlier leadership used.
	maxEpochSeen   int32
	pending        []pendingDelete
	failed         error // set when a write left the log in an unknown state
	report         func(error)
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
	producers *ProducerStateManager
	// txnGuards are the transaction verifications in progress, by
	// producer id, and nextGuard the last token handed out (verify.go).
	txnGuards    map[int64]*txnGuard
	nextGuard    uint64
	snapshots    []int64
	pendingSnaps []pendingSnapshot
	// txnRebuildBelow is set at load to the base of the lowest segment
	// whose .txnindex must be rebuilt (it was corrupt, or came from an
	// interrupted cleaner swap): the producer-state replay then starts at
	// or below it. MaxInt64 otherwise.
	txnRebuildBelow int64

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
// must be <topic>-<partition> (or a future log's
// <topic>-<partition>.<uuid>-future, future.go). Unless WithCleanShutdown(true) is given,
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
	if ftp, future := parseFutureDirName(filepath.Base(dir)); future {
		topic, partition, ok = ftp.Topic, ftp.Partition, true
	}
	if !ok {
		return nil, fmt.Errorf("open log %s: %w", dir, ErrBadDirName)
	}
	l := &Log{
		maxEpochSeen: -1,
		dir:          dir,
		topic:        topic,
		partition:    partition,
		fsys:         o.fsys,
		lg:           o.lg.With("topic", topic, "partition", partition),
		now:          o.now,
		cfg:          cfg,
		report:       o.report,

		firstDirtyOffset: o.cleanerOffset,
		txnRebuildBelow:  math.MaxInt64,
	}
	if _, err := l.fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// The log dir itself is made durably; the partition directory's
		// creation is synced by the first flush (createdUnsynced).
		if err := vfs.MkdirAllSync(l.fsys, filepath.Dir(dir), 0o755); err != nil {
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
		if err := l.fsys.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
		l.createdUnsynced, l.dirUnsynced = true, true
		l.dirGen++
	} else if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	var err error
	if l.createdUnsynced {
		if err = l.initEmpty(o); err != nil {
			// Leave nothing half made: a retry must find no directory,
			// not load this one as if it had been made durable.
			l.closeSegments()
			if rerr := l.fsys.RemoveAll(dir); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
	} else {
		l.dirUnsynced = !o.cleanShutdown
		err = l.load(o)
		if err == nil {
			err = l.loadProducerState(o.cleanShutdown)
		}
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

// initEmpty sets up a log in the directory Open just created: one empty
// segment at the log start offset, no epochs, no producers. load would
// find the same after listing and reading an empty directory several
// times.
func (l *Log) initEmpty(o options) error {
	l.epochs = NewLeaderEpochCache(nil, l.persistEpochs)
	start := max(o.logStartOffset, 0)
	seg, err := createSegment(l.fsys, l.dir, start, l.segmentConfig(), l.nowMs(), l.lg, true)
	if err != nil {
		return err
	}
	l.segments = []*Segment{seg}
	l.dirGen++
	l.logStartOffset, l.logEndOffset, l.recoveryPoint, l.flushTarget = start, start, start, start
	l.highWatermark = start
	l.producers = NewProducerStateManager()
	return nil
}

// WritePartitionMetadata writes the partition.metadata file (Kafka's
// topic id of the partition). For a log created by this process and not
// flushed yet it is written without an fsync: the log's first flush syncs
// it with the directory. Otherwise it is replaced durably (temp, fsync,
// rename, directory fsync).
func (l *Log) WritePartitionMetadata(topicID [16]byte) error {
	// flushMu: a flush running now must not sync the creation before this
	// write and then count it as durable.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return err
	}
	var err error
	if !l.createdUnsynced {
		err = checkpoint.WritePartitionMetadata(l.fsys, l.dir, topicID)
	} else {
		var b []byte
		if b, err = checkpoint.EncodePartitionMetadata(topicID); err != nil {
			return err
		}
		err = l.writeUnsynced(checkpoint.PartitionMetadataFile, b)
	}
	if err != nil && isIOError(err) {
		return l.fail(err)
	}
	return err
}

// writeUnsynced replaces the file name of a log created and not yet
// flushed, without an fsync (see createdUnsynced), under l.mu.
func (l *Log) writeUnsynced(name string, b []byte) error {
	path := l.dir + "/" + name
	f, err := l.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	l.dirGen++
	return nil
}

// syncCreation makes a new log's directory durable: partition.metadata, the
// leader-epoch checkpoint,
// the directory (by the caller's dir sync) and the log dir holding it.
func (l *Log) syncCreation() error {
	for _, name := range []string{checkpoint.PartitionMetadataFile, checkpoint.LeaderEpochFile} {
		path := l.dir + "/" + name
		f, err := l.fsys.OpenFile(path, os.O_RDWR, 0)
		switch {
		case err == nil:
			err = f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		case errors.Is(err, fs.ErrNotExist):
			err = nil
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", l.dir, err)
	}
	if err := l.fsys.SyncDir(filepath.Dir(l.dir)); err != nil {
		return fmt.Errorf("sync dir %s: %w", filepath.Dir(l.dir), err)
	}
	return nil
}

func (l *Log) persistEpochs(entries []EpochEntry) error {
	if len(entries) == 0 && !l.exists(l.dir+"/"+checkpoint.LeaderEpochFile) {
		// A missing checkpoint reads as an empty one: a new log need not
		// pay two fsyncs (file and directory) to write that it has no
		// epochs yet.
		return nil
	}
	if l.createdUnsynced {
		// A log created by this process and not flushed yet: its first
		// flush syncs the checkpoint with the directory (syncCreation).
		// Until then a crash may lose the directory, epochs and all, and
		// the log holds nothing durable they could describe.
		return l.writeUnsynced(checkpoint.LeaderEpochFile, checkpoint.EncodeLeaderEpochs(entries))
	}
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
	l.producers.OnHighWatermarkUpdated(l.highWatermark)
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

// MaxEpochSeen is the newest leader epoch the log has named since it was
// opened, including checkpoint entries dropped at load because they start
// at or past the log's end (a leadership that began and appended nothing,
// or whose records were lost).
func (l *Log) MaxEpochSeen() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e := l.maxEpochSeen
	if latest, ok := l.epochs.LatestEpoch(); ok {
		e = max(e, latest)
	}
	return e, e >= 0
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
	// A failed log says so even once closed (its dir went offline and
	// closed it): KAFKA_STORAGE_ERROR, not a log that merely went away.
	if l.failed != nil {
		return fmt.Errorf("log %s: %w: %w", l.dir, ErrFailed, l.failed)
	}
	if l.closed {
		return ErrClosed
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
// unknown state and reports it to the failure channel, which takes the
// log dir offline as Kafka does. It returns err wrapped in ErrFailed, so
// that the caller's error maps to KAFKA_STORAGE_ERROR. The caller holds mu.
func (l *Log) fail(err error) error {
	if l.failed == nil {
		l.failed = err
		if l.report != nil {
			// The directory's failure is the one ERROR line.
			l.lg.Warn("log failed, refusing writes until restart", "err", err)
			l.report(err)
		} else {
			l.lg.Error("log failed, refusing writes until restart", "err", err)
		}
	}
	return fmt.Errorf("log %s: %w: %w", l.dir, ErrFailed, err)
}

// failIO fails the log if err is an I/O error and returns err; for paths
// that do not hold mu (those that do call fail).
func (l *Log) failIO(err error) error {
	if err == nil || !isIOError(err) {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fail(err)
}

// failClosed is the end of a log whose directory went offline: marked
// failed with cause (unless it already is) and its files closed without a
// flush, as Kafka closes the handlers of an offline dir's logs. Readers
// holding it get errors from then on; the Manager no longer lists it.
func (l *Log) failClosed(cause error) {
	l.mu.Lock()
	if l.failed == nil {
		l.failed = cause
	}
	l.mu.Unlock()
	l.closeWithoutFlush()
}
