package log

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// File-name suffixes of a segment and of its temporary states (§2.1, §2.6
// of the format reference).
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
	TxnIndexSuffix  = ".txnindex"
	SnapshotSuffix  = ".snapshot"
	DeletedSuffix   = ".deleted"
	CleanedSuffix   = ".cleaned"
	SwapSuffix      = ".swap"
)

// FileName returns dir/<baseOffset as 20 digits><suffix>, e.g.
// dir/00000000000000030626.index.
func FileName(dir string, baseOffset int64, suffix string) string {
	return dir + "/" + fmt.Sprintf("%020d", baseOffset) + suffix
}

// ParseFileName splits a segment file name (no directory) into its base
// offset and its suffix (everything from the first '.'). ok is false when
// the name does not start with the digits of a non-negative offset.
func ParseFileName(name string) (baseOffset int64, suffix string, ok bool) {
	dot := strings.IndexByte(name, '.')
	if dot <= 0 {
		return 0, "", false
	}
	digits := name[:dot]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, "", false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, name[dot:], true
}

// segmentConfig is what a Segment needs from the log's Config.
type segmentConfig struct {
	indexIntervalBytes int64
	maxIndexSize       int64
	rollJitterMs       int64
}

// Segment is one .log file with its offset and time indexes. Offsets in it
// are ≥ its base offset and below the next segment's.
//
// A live segment holds exactly one file descriptor, its open .log, active
// or not, as in Kafka: the indexes keep their entries in memory and open
// their files only for the write-out, resize or flush at hand
// (indexfile.go), so a broker with many partitions or segments does not
// run out of descriptors. A deleted segment's .log stays open until
// file.delete.delay.ms has passed and no FileRegion holds it.
//
// A Segment does no locking of its own for mutations: the Log calls every
// mutating method with its write lock held and the read methods with at
// least its read lock. The one exception is index loading, which is lazy (a
// rolled segment's indexes are read only when first needed) and guarded by
// loadMu, so concurrent readers may trigger it.
type Segment struct {
	fsys       vfs.FS
	dir        string
	lg         *slog.Logger
	baseOffset int64
	cfg        segmentConfig

	log     vfs.File
	logPath string
	size    int64

	// refs counts the FileRegions of the .log handed out by ReadRetained
	// and not released yet. closing says the segment wants its .log
	// closed (it was closed or deleted); the close happens when both are
	// true and refs is 0, by closeLog or by the last release, so a
	// descriptor in a queued sendfile is never closed (and reused for
	// another file) under it. logClosed makes the close happen once.
	refs      atomic.Int64
	closing   atomic.Bool
	logClosed atomic.Bool

	// created is when this segment object was made (ms); segment.ms uses
	// it when the segment has no timestamps.
	created int64
	// rollingTs is the max timestamp of the first append (-1 none); known
	// says whether it was read from disk yet.
	rollingTs      int64
	rollingTsKnown bool

	loadMu    sync.Mutex
	loaded    atomic.Bool
	index     *OffsetIndex
	timeIndex *TimeIndex
	// txnIndex is the .txnindex (txnindex.go); its entries are loaded by
	// the Log at open (loadTxnIndexes), not lazily.
	txnIndex *TransactionIndex
	// maxTs is the largest timestamp so far and the (batch last) offset
	// that carries it; set by load, append, recover and truncate.
	maxTs TimestampOffset
	// removed is set (under the log's locks) when the segment leaves the
	// log.
	removed bool
	// bytesSinceLastIndexEntry is Kafka's counter; on open it is derived as
	// size − position of the last index entry, which is what an append-built
	// and a recovery-built index both imply.
	bytesSinceLastIndexEntry int64
}

// createSegment makes a new, empty segment, replacing stale files of the
// same name.
//
// fresh says the directory was just created, so there is nothing stale to
// remove: a partition is created with three file creations, not a dozen
// calls (10,000 partitions at once are created in the request that makes
// them).
func createSegment(fsys vfs.FS, dir string, base int64, cfg segmentConfig, nowMs int64, lg *slog.Logger, fresh bool) (*Segment, error) {
	s := &Segment{fsys: fsys, dir: dir, lg: lg, baseOffset: base, cfg: cfg, logPath: FileName(dir, base, LogSuffix),
		created: nowMs, rollingTs: -1, rollingTsKnown: true,
		txnIndex: newTransactionIndex(fsys, FileName(dir, base, TxnIndexSuffix), base)}
	if !fresh {
		for _, suf := range []string{IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
			if err := fsys.Remove(FileName(dir, base, suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("create segment %s: remove stale file: %w", s.logPath, err)
			}
		}
	}
	f, err := fsys.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", s.logPath, err)
	}
	s.log = f
	if err := s.createIndexes(); err != nil {
		f.Close()
		return nil, fmt.Errorf("create segment %s: %w", s.logPath, err)
	}
	s.maxTs = TimestampOffset{Timestamp: -1, Offset: base}
	s.loaded.Store(true)
	return s, nil
}

// openSegment opens the existing segment whose .log is at base. Its
// indexes are loaded lazily.
func openSegment(fsys vfs.FS, dir string, base int64, cfg segmentConfig, nowMs int64, lg *slog.Logger) (*Segment, error) {
	s := &Segment{fsys: fsys, dir: dir, lg: lg, baseOffset: base, cfg: cfg, logPath: FileName(dir, base, LogSuffix),
		created: nowMs, rollingTs: -1, txnIndex: newTransactionIndex(fsys, FileName(dir, base, TxnIndexSuffix), base)}
	f, err := fsys.OpenFile(s.logPath, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", s.logPath, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open segment %s: %w", s.logPath, err)
	}
	s.log, s.size = f, st.Size()
	if s.size > 1<<31-1 {
		f.Close()
		return nil, &CorruptError{Path: s.logPath, Offset: s.size, Err: ErrCorruptLog, Reason: "segment larger than 2 GiB"}
	}
	return s, nil
}

// createIndexes makes new, empty, preallocated index files (replacing any
// of the same name).
func (s *Segment) createIndexes() error {
	ox := newIndexFile(s.fsys, FileName(s.dir, s.baseOffset, IndexSuffix), OffsetIndexEntrySize, s.cfg.maxIndexSize)
	if err := ox.create(); err != nil {
		return err
	}
	tx := newIndexFile(s.fsys, FileName(s.dir, s.baseOffset, TimeIndexSuffix), TimeIndexEntrySize, s.cfg.maxIndexSize)
	if err := tx.create(); err != nil {
		return err
	}
	s.index = &OffsetIndex{x: ox, baseOffset: s.baseOffset}
	s.timeIndex = &TimeIndex{x: tx, baseOffset: s.baseOffset}
	return nil
}

// openIndexes opens (load=true: reads and checks) or creates the indexes.
func (s *Segment) openIndexes(load bool) error {
	idx, err := openOffsetIndex(s.fsys, FileName(s.dir, s.baseOffset, IndexSuffix), s.baseOffset, s.cfg.maxIndexSize, load)
	if err != nil {
		return err
	}
	tidx, err := openTimeIndex(s.fsys, FileName(s.dir, s.baseOffset, TimeIndexSuffix), s.baseOffset, s.cfg.maxIndexSize, load)
	if err != nil {
		return err
	}
	s.index, s.timeIndex = idx, tidx
	return nil
}

// BaseOffset is the segment's base offset (its file name).
func (s *Segment) BaseOffset() int64 { return s.baseOffset }

// Size is the .log length in bytes.
func (s *Segment) Size() int64 { return s.size }

// File is the open .log file.
func (s *Segment) File() vfs.File { return s.log }

// LogPath is the .log file's current name.
func (s *Segment) LogPath() string { return s.logPath }

// ensureLoaded reads the indexes of a segment opened lazily. Indexes that
// fail their checks, or point past the end of the .log, are rebuilt from
// the .log (without truncating it: only recovery truncates).
func (s *Segment) ensureLoaded() error {
	if s.loaded.Load() {
		return nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.loaded.Load() {
		return nil
	}
	err := s.openIndexes(true)
	if err == nil {
		err = s.checkIndexesAgainstLog()
		if err != nil {
			s.index, s.timeIndex = nil, nil
		}
	}
	if err != nil {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			return fmt.Errorf("load indexes of %s: %w", s.logPath, err)
		}
		s.lg.Warn("rebuilding corrupt index", "segment", s.logPath, "err", err)
		if err := s.openIndexes(false); err != nil {
			return fmt.Errorf("load indexes of %s: %w", s.logPath, err)
		}
		if _, _, err := s.rebuildIndexes(nil, false); err != nil {
			return fmt.Errorf("rebuild indexes of %s: %w", s.logPath, err)
		}
		if err := s.finishIndexes(); err != nil {
			return fmt.Errorf("rebuild indexes of %s: %w", s.logPath, err)
		}
		s.loaded.Store(true)
		return nil
	}
	s.maxTs = s.timeIndex.LastEntry()
	s.bytesSinceLastIndexEntry = s.size - int64(s.index.LastEntry().Position)
	s.loaded.Store(true)
	return nil
}

// checkIndexesAgainstLog is the sanity check run when indexes are loaded:
// Kafka's checks plus "no entry points past the end of the .log".
func (s *Segment) checkIndexesAgainstLog() error {
	if err := s.index.SanityCheck(); err != nil {
		return err
	}
	if err := s.timeIndex.SanityCheck(); err != nil {
		return err
	}
	if n := s.index.Entries(); n > 0 {
		if last := s.index.Entry(n - 1); int64(last.Position) >= s.size {
			return &CorruptError{Path: s.index.Path(), Offset: int64((n - 1) * OffsetIndexEntrySize), Err: ErrCorruptIndex,
				Reason: fmt.Sprintf("entry (%d, %d) points past the end of the log (%d bytes)", last.Offset, last.Position, s.size)}
		}
	}
	return nil
}

// canConvertToRelativeOffset reports whether offset fits the indexes.
func (s *Segment) canConvertToRelativeOffset(offset int64) bool {
	d := offset - s.baseOffset
	return d >= 0 && d <= 1<<31-1
}

// append writes records (one or more whole batches) at the end of the
// segment and maintains the indexes with Kafka's rule: if more than
// index.interval.bytes were appended since the last entry, add the entry
// (largestOffset, position of this append) before counting this append.
func (s *Segment) append(records []byte, largestOffset, maxTimestamp, offsetOfMaxTimestamp int64) error {
	if len(records) == 0 {
		return nil
	}
	if err := s.ensureLoaded(); err != nil {
		return err
	}
	if !s.canConvertToRelativeOffset(largestOffset) {
		return fmt.Errorf("append offset %d to %s: %w", largestOffset, s.logPath, ErrOffsetOverflow)
	}
	pos := s.size
	if pos+int64(len(records)) > 1<<31-1 {
		return fmt.Errorf("append %d bytes to %s at %d: %w", len(records), s.logPath, pos, ErrOffsetOverflow)
	}
	if _, err := s.log.WriteAt(records, pos); err != nil {
		// Take back whatever part of the write landed, so the file keeps
		// ending at a batch boundary.
		if terr := s.log.Truncate(pos); terr != nil {
			err = errors.Join(err, terr)
		}
		return fmt.Errorf("append to %s at %d: %w", s.logPath, pos, err)
	}
	if pos == 0 {
		s.rollingTs, s.rollingTsKnown = maxTimestamp, true
	}
	s.size += int64(len(records))
	if maxTimestamp > s.maxTs.Timestamp {
		s.maxTs = TimestampOffset{Timestamp: maxTimestamp, Offset: offsetOfMaxTimestamp}
	}
	if s.bytesSinceLastIndexEntry > s.cfg.indexIntervalBytes {
		if err := s.index.Append(largestOffset, int32(pos)); err != nil {
			return err
		}
		if err := s.timeIndex.MaybeAppend(s.maxTs.Timestamp, s.maxTs.Offset, false); err != nil {
			return err
		}
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += int64(len(records))
	return nil
}

// recoverResult describes what recovery cut off.
type recoverResult struct {
	truncated int64 // bytes removed from the end of the .log
	position  int64 // where the valid data ends
	cause     error // why the scan stopped (nil at a clean end)
}

// recover rebuilds both indexes from the .log, validating every batch
// (structure, CRC, offsets increasing and representable), truncates the
// .log at the first invalid or torn batch and returns what was cut. Each
// valid v2 batch's leader epoch is passed to assignEpoch (if set).
func (s *Segment) recover(assignEpoch func(epoch int32, offset int64)) (recoverResult, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.index == nil {
		if err := s.openIndexes(false); err != nil {
			return recoverResult{}, err
		}
	}
	valid, cause, err := s.rebuildIndexes(assignEpoch, true)
	if err != nil {
		return recoverResult{}, err
	}
	res := recoverResult{position: valid, cause: cause}
	if valid < s.size {
		res.truncated = s.size - valid
		if err := s.log.Truncate(valid); err != nil {
			return res, fmt.Errorf("recover %s: truncate to %d: %w", s.logPath, valid, err)
		}
		s.size = valid
	}
	if err := s.finishIndexes(); err != nil {
		return res, err
	}
	s.loaded.Store(true)
	return res, nil
}

// finishIndexes ends a rebuild the way Kafka's recover does: trim the
// offset index, append the final time-index entry, trim the time index.
func (s *Segment) finishIndexes() error {
	if err := s.index.TrimToValidSize(); err != nil {
		return err
	}
	if err := s.timeIndex.MaybeAppend(s.maxTs.Timestamp, s.maxTs.Offset, true); err != nil {
		return err
	}
	return s.timeIndex.TrimToValidSize()
}

// rebuildIndexes resets the indexes and rebuilds them from the .log. It
// returns the number of valid bytes and, if the scan stopped early, why.
// With strict set, batches whose offsets do not increase or do not fit the
// segment also end the valid prefix. When the index fills up (a smaller
// log.index.size.max.bytes than the data was written with) later entries
// are skipped: lookups stay correct, only coarser.
func (s *Segment) rebuildIndexes(assignEpoch func(epoch int32, offset int64), strict bool) (valid int64, cause error, err error) {
	if err := s.index.Reset(); err != nil {
		return 0, nil, err
	}
	if err := s.timeIndex.Reset(); err != nil {
		return 0, nil, err
	}
	s.maxTs = TimestampOffset{Timestamp: -1, Offset: s.baseOffset}
	var lastIndexEntry int64
	prevLast := s.baseOffset - 1
	sc := newBatchScanner(s.log, s.size, 0)
	for {
		h, _, serr := sc.next()
		if serr != nil {
			if serr == errScanEnd {
				break
			}
			var rc *record.CorruptError
			if !errors.As(serr, &rc) {
				return 0, nil, fmt.Errorf("read %s at %d: %w", s.logPath, sc.pos, serr)
			}
			cause = serr
			break
		}
		if strict {
			if h.baseOffset <= prevLast || !s.canConvertToRelativeOffset(h.lastOffset) {
				cause = fmt.Errorf("batch offsets [%d, %d] do not follow %d within base %d: %w", h.baseOffset, h.lastOffset, prevLast, s.baseOffset, ErrOffsetOverflow)
				break
			}
		} else if !s.canConvertToRelativeOffset(h.lastOffset) || h.lastOffset <= prevLast {
			cause = fmt.Errorf("batch offsets [%d, %d] do not follow %d: %w", h.baseOffset, h.lastOffset, prevLast, ErrOffsetOverflow)
			break
		}
		if h.maxTimestamp > s.maxTs.Timestamp {
			s.maxTs = TimestampOffset{Timestamp: h.maxTimestamp, Offset: h.lastOffset}
		}
		if valid-lastIndexEntry > s.cfg.indexIntervalBytes && !s.index.IsFull() && !s.timeIndex.IsFull() {
			if err := s.index.Append(h.lastOffset, int32(valid)); err != nil {
				return 0, nil, err
			}
			if err := s.timeIndex.MaybeAppend(s.maxTs.Timestamp, s.maxTs.Offset, false); err != nil {
				return 0, nil, err
			}
			lastIndexEntry = valid
		}
		valid += int64(h.size)
		prevLast = h.lastOffset
		if assignEpoch != nil && h.magic >= record.MagicV2 && h.leaderEpoch >= 0 {
			assignEpoch(h.leaderEpoch, h.baseOffset)
		}
	}
	s.bytesSinceLastIndexEntry = valid - lastIndexEntry
	if valid == 0 {
		s.rollingTs, s.rollingTsKnown = -1, true
	} else {
		s.rollingTsKnown = false
	}
	return valid, cause, nil
}

// translateOffset finds the first batch with lastOffset ≥ offset, scanning
// batch headers from the index entry at or below offset (or from
// startingPosition if that is larger). found is false when the segment
// holds no such batch.
func (s *Segment) translateOffset(offset, startingPosition int64) (pos int64, h batchHeader, found bool, err error) {
	if err := s.ensureLoaded(); err != nil {
		return 0, batchHeader{}, false, err
	}
	pos = max(int64(s.index.Lookup(offset).Position), startingPosition)
	hs := newHeaderScanner(s.log, s.size)
	defer hs.release()
	for {
		h, done, err := hs.at(pos)
		if err != nil {
			return 0, batchHeader{}, false, &CorruptError{Path: s.logPath, Offset: pos, Err: ErrCorruptLog, Reason: "bad batch header", Cause: err}
		}
		if done {
			return 0, batchHeader{}, false, nil
		}
		if h.lastOffset >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.size)
	}
}

// read returns the region of this segment that starts with the first batch
// whose last offset is ≥ startOffset. At most maxSize bytes are returned,
// except that the first batch is always returned whole when minOneBatch is
// set, and nothing at or beyond maxPosition. found is false when the segment
// holds no batch at or after startOffset (the caller moves to the next
// segment).
func (s *Segment) read(startOffset int64, maxSize, maxPosition int64, minOneBatch bool) (pos, length int64, found bool, err error) {
	pos, h, found, err := s.translateOffset(startOffset, 0)
	if err != nil || !found {
		return 0, 0, false, err
	}
	adjusted := maxSize
	if minOneBatch {
		adjusted = max(maxSize, int64(h.size))
	}
	length = min(maxPosition-pos, adjusted)
	return pos, max(length, 0), true, nil
}

// readNextOffset is the offset after the last batch (the base offset when
// the segment is empty), found by scanning from the last index entry.
func (s *Segment) readNextOffset() (int64, error) {
	if err := s.ensureLoaded(); err != nil {
		return 0, err
	}
	next := s.baseOffset
	pos := int64(s.index.LastEntry().Position)
	hs := newHeaderScanner(s.log, s.size)
	defer hs.release()
	for {
		h, done, err := hs.at(pos)
		if err != nil {
			return 0, &CorruptError{Path: s.logPath, Offset: pos, Err: ErrCorruptLog, Reason: "bad batch header", Cause: err}
		}
		if done {
			return next, nil
		}
		next = h.nextOffset()
		pos += int64(h.size)
	}
}

// largestTimestampAfter scans batch headers from pos to the end and returns
// the largest max timestamp and its batch's last offset.
func (s *Segment) largestTimestampAfter(pos int64) (TimestampOffset, error) {
	best := TimestampOffset{Timestamp: -1, Offset: -1}
	hs := newHeaderScanner(s.log, s.size)
	defer hs.release()
	for {
		h, done, err := hs.at(pos)
		if err != nil {
			return best, &CorruptError{Path: s.logPath, Offset: pos, Err: ErrCorruptLog, Reason: "bad batch header", Cause: err}
		}
		if done {
			return best, nil
		}
		if h.maxTimestamp > best.Timestamp {
			best = TimestampOffset{Timestamp: h.maxTimestamp, Offset: h.lastOffset}
		}
		pos += int64(h.size)
	}
}

// truncateTo removes every batch whose last offset is ≥ offset (a batch
// containing offset goes entirely) and the index entries at or above it.
// It returns the bytes removed and the new end offset: offset itself, or
// the base offset of a batch that straddled it. The segment becomes active
// again, so its indexes are re-grown.
func (s *Segment) truncateTo(offset int64) (int64, int64, error) {
	pos, h, found, err := s.translateOffset(offset, 0)
	if err != nil {
		return 0, 0, err
	}
	end := offset
	if found {
		end = min(offset, h.baseOffset)
	}
	if err := s.index.TruncateTo(end); err != nil {
		return 0, 0, err
	}
	if err := s.timeIndex.TruncateTo(end); err != nil {
		return 0, 0, err
	}
	if err := s.resizeIndexesToMax(); err != nil {
		return 0, 0, err
	}
	var cut int64
	if found && pos < s.size {
		cut = s.size - pos
		if err := s.log.Truncate(pos); err != nil {
			return 0, 0, fmt.Errorf("truncate %s to %d: %w", s.logPath, pos, err)
		}
		s.size = pos
	}
	if s.size == 0 {
		s.rollingTs, s.rollingTsKnown = -1, true
	}
	s.bytesSinceLastIndexEntry = s.size - int64(s.index.LastEntry().Position)
	// Recompute the max timestamp: last time-index entry, then a scan of
	// the batches after it.
	last := s.timeIndex.LastEntry()
	after, err := s.largestTimestampAfter(int64(s.index.Lookup(last.Offset).Position))
	if err != nil {
		return cut, end, err
	}
	s.maxTs = last
	if after.Timestamp > last.Timestamp {
		s.maxTs = after
	}
	return cut, end, nil
}

// firstBatchTimestamp returns the rolling-based timestamp (the max
// timestamp of the first append, read from the first batch after a reopen),
// or -1 when there is none.
func (s *Segment) firstBatchTimestamp() int64 {
	if !s.rollingTsKnown {
		h, done, err := readHeaderAt(s.log, 0, s.size)
		s.rollingTs, s.rollingTsKnown = -1, true
		if err == nil && !done {
			s.rollingTs = h.maxTimestamp
		}
	}
	return s.rollingTs
}

// timeWaitedForRoll is how long this segment has been "open" for
// segment.ms: the incoming max timestamp minus the first batch's, when the
// segment has timestamps, else wall-clock now minus creation time.
func (s *Segment) timeWaitedForRoll(nowMs, incomingMaxTimestamp int64) int64 {
	if ts := s.firstBatchTimestamp(); ts >= 0 {
		return incomingMaxTimestamp - ts
	}
	return nowMs - s.created
}

// shouldRoll is Kafka's roll rule for an append of size bytes whose largest
// offset and timestamp are given.
func (s *Segment) shouldRoll(segmentBytes, segmentMs, size, maxTimestamp, maxOffset, nowMs int64) (bool, string, error) {
	if err := s.ensureLoaded(); err != nil {
		return false, "", err
	}
	switch {
	case s.size > segmentBytes-size:
		return true, "segment.bytes", nil
	case s.size > 0 && s.timeWaitedForRoll(nowMs, maxTimestamp) > segmentMs-s.cfg.rollJitterMs:
		return true, "segment.ms", nil
	case s.index.IsFull():
		return true, "offset index full", nil
	case s.timeIndex.IsFull():
		return true, "time index full", nil
	case !s.canConvertToRelativeOffset(maxOffset):
		return true, "relative offset overflow", nil
	}
	return false, "", nil
}

// maxTimestampSoFar is the largest batch max timestamp in the segment
// (-1 when none).
func (s *Segment) maxTimestampSoFar() (TimestampOffset, error) {
	if err := s.ensureLoaded(); err != nil {
		return TimestampOffset{}, err
	}
	return s.maxTs, nil
}

// largestTimestamp is what retention.ms compares: the max timestamp, or
// the .log's modification time when the segment has no timestamps.
func (s *Segment) largestTimestamp() (int64, error) {
	ts, err := s.maxTimestampSoFar()
	if err != nil {
		return 0, err
	}
	if ts.Timestamp >= 0 {
		return ts.Timestamp, nil
	}
	st, err := s.log.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", s.logPath, err)
	}
	return st.ModTime().UnixMilli(), nil
}

// onBecomeInactive is called when the segment stops being the active one:
// append the final time-index entry and trim both indexes.
func (s *Segment) onBecomeInactive() error {
	if err := s.ensureLoaded(); err != nil {
		return err
	}
	if err := s.timeIndex.MaybeAppend(s.maxTs.Timestamp, s.maxTs.Offset, true); err != nil {
		return err
	}
	if err := s.index.TrimToValidSize(); err != nil {
		return err
	}
	return s.timeIndex.TrimToValidSize()
}

// resizeIndexesToMax re-grows both indexes (the segment is active).
func (s *Segment) resizeIndexesToMax() error {
	if err := s.ensureLoaded(); err != nil {
		return err
	}
	if err := s.index.ResizeToMax(); err != nil {
		return err
	}
	return s.timeIndex.ResizeToMax()
}

// flush writes buffered index entries and fsyncs the .log and (if
// loaded) both indexes. The caller holds the log's write lock and flushMu
// (or owns the segment, as the cleaner does).
func (s *Segment) flush() error {
	return s.syncFiles(s.claimIndexFlushes())
}

// segmentSync is what syncFiles writes and fsyncs besides the .log, taken
// by claimIndexFlushes under the log's write lock, so that syncFiles,
// which runs without it, reads no state that appends change.
type segmentSync struct {
	indexes   bool // the indexes were loaded
	index     indexFlush
	timeIndex indexFlush
	txnIndex  txnIndexFlush
}

// claimIndexFlushes claims the buffered index entries for syncFiles to
// write and returns what it must fsync. The caller holds the log's write
// lock and flushMu, and calls syncFiles before releasing flushMu.
func (s *Segment) claimIndexFlushes() segmentSync {
	if !s.loaded.Load() {
		return segmentSync{txnIndex: s.txnIndex.claimFlush()}
	}
	return segmentSync{indexes: true, index: s.index.x.claimFlush(), timeIndex: s.timeIndex.x.claimFlush(), txnIndex: s.txnIndex.claimFlush()}
}

// syncFiles fsyncs the .log and writes and fsyncs the index files (each
// through a descriptor opened for it, unless it did not change since its
// last fsync), without touching any state that appends use, so the Log
// can run it without its lock while appends continue (entries buffered
// after claimIndexFlushes are above the flushed offset and not needed
// for it). The caller holds flushMu, which keeps the files' names and
// the claimed entries stable.
func (s *Segment) syncFiles(p segmentSync) error {
	if err := p.txnIndex.run(); err != nil {
		return err
	}
	if !p.indexes {
		if err := s.log.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", s.logPath, err)
		}
		return nil
	}
	// The fsyncs run at once: each waits for the disk (and perhaps a
	// journal commit), so in series they add up, and with
	// flush.messages=1 every produce acknowledgement waits for them. The
	// recovery point moves only after all succeed, so their order does
	// not matter. The indexes' opens and writes hide behind the .log's
	// fsync too.
	var idxErr, timeErr error
	var wg sync.WaitGroup
	if p.index.needed() {
		wg.Go(func() { idxErr = p.index.run() })
	}
	if p.timeIndex.needed() {
		wg.Go(func() { timeErr = p.timeIndex.run() })
	}
	logErr := s.log.Sync()
	wg.Wait()
	switch {
	case logErr != nil:
		return fmt.Errorf("sync %s: %w", s.logPath, logErr)
	case idxErr != nil:
		return idxErr
	case timeErr != nil:
		return timeErr
	}
	return nil
}

// close appends the final time-index entry, trims the indexes (they hold
// no descriptor) and closes the .log. It does not fsync; the Log flushes
// first.
func (s *Segment) close() error {
	var errs []error
	if s.loaded.Load() {
		if err := s.timeIndex.MaybeAppend(s.maxTs.Timestamp, s.maxTs.Offset, true); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, s.index.Close(), s.timeIndex.Close())
	}
	if err := s.closeLog(); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w", s.logPath, err))
	}
	return errors.Join(errs...)
}

// retain takes a reference on the .log for a FileRegion. The caller holds
// the log's lock and s is live (not closing).
func (s *Segment) retain() { s.refs.Add(1) }

// release drops a reference taken by retain, closing the .log if the
// segment was closed or deleted meanwhile and this was the last one.
func (s *Segment) release() {
	if s.refs.Add(-1) == 0 && s.closing.Load() && s.logClosed.CompareAndSwap(false, true) {
		if err := s.log.Close(); err != nil {
			s.lg.Warn("closing segment after its last file region failed", "segment", s.logPath, "err", err)
		}
	}
}

// closeLog closes the .log now, or when the last FileRegion holding it is
// released.
func (s *Segment) closeLog() error {
	s.closing.Store(true)
	if s.refs.Load() == 0 && s.logClosed.CompareAndSwap(false, true) {
		return s.log.Close()
	}
	return nil
}

// closeHandles closes the .log (the one descriptor a segment holds)
// without writing anything.
func (s *Segment) closeHandles() {
	s.closeLog()
}

// segmentFiles lists the suffixes a segment may own.
var segmentFiles = []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix}

// renameToDeleted renames every file of the segment to <name>.deleted, the
// first step of Kafka's asynchronous delete. The open .log keeps working,
// so in-flight reads of the region survive until the files are removed.
// Each name is updated as soon as its file is renamed: the indexes open
// their files by name.
func (s *Segment) renameToDeleted() error {
	for _, suf := range segmentFiles {
		from := FileName(s.dir, s.baseOffset, suf)
		if err := s.fsys.Rename(from, from+DeletedSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rename %s for deletion: %w", from, err)
		}
		s.setFileName(suf, from+DeletedSuffix)
	}
	return nil
}

// setFileName records that the segment's file with suffix suf is now at
// path.
func (s *Segment) setFileName(suf, path string) {
	switch suf {
	case LogSuffix:
		s.logPath = path
	case IndexSuffix:
		if s.index != nil {
			s.index.x.path = path
		}
	case TimeIndexSuffix:
		if s.timeIndex != nil {
			s.timeIndex.x.path = path
		}
	case TxnIndexSuffix:
		if s.txnIndex != nil {
			s.txnIndex.path = path
		}
	}
}

// removeFiles closes the handles and removes the segment's files (with the
// .deleted suffix when deleted is set).
func (s *Segment) removeFiles(deleted bool) error {
	s.closeHandles()
	suffix := ""
	if deleted {
		suffix = DeletedSuffix
	}
	var errs []error
	for _, suf := range segmentFiles {
		p := FileName(s.dir, s.baseOffset, suf+suffix)
		if err := s.fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// findOffsetByTimestamp returns the first record at or after
// startingOffset whose timestamp is ≥ ts: the time index gives a start
// position, batch headers are scanned to the first batch whose max
// timestamp is ≥ ts, and that batch's records are decoded. ok is false
// when the segment holds no such record.
func (s *Segment) findOffsetByTimestamp(ts, startingOffset int64) (OffsetForTimestamp, bool, error) {
	if err := s.ensureLoaded(); err != nil {
		return OffsetForTimestamp{}, false, err
	}
	from := s.timeIndex.Lookup(ts)
	pos := int64(s.index.Lookup(max(from.Offset, startingOffset)).Position)
	hs := newHeaderScanner(s.log, s.size)
	defer hs.release()
	for {
		h, done, err := hs.at(pos)
		if err != nil {
			return OffsetForTimestamp{}, false, &CorruptError{Path: s.logPath, Offset: pos, Err: ErrCorruptLog, Reason: "bad batch header", Cause: err}
		}
		if done {
			return OffsetForTimestamp{}, false, nil
		}
		if h.maxTimestamp >= ts && h.lastOffset >= startingOffset {
			res, ok, err := s.searchBatch(pos, h, ts, startingOffset)
			if err != nil || ok {
				return res, ok, err
			}
		}
		pos += int64(h.size)
	}
}

// searchBatch decodes the records of the batch at pos and returns the
// first with timestamp ≥ ts and offset ≥ startingOffset. Legacy entries
// are answered at batch granularity.
func (s *Segment) searchBatch(pos int64, h batchHeader, ts, startingOffset int64) (OffsetForTimestamp, bool, error) {
	if h.magic != record.MagicV2 {
		return OffsetForTimestamp{Timestamp: h.maxTimestamp, Offset: max(h.lastOffset, startingOffset), LeaderEpoch: -1}, true, nil
	}
	raw := make([]byte, h.size)
	if _, err := s.log.ReadAt(raw, pos); err != nil {
		return OffsetForTimestamp{}, false, fmt.Errorf("read %s at %d: %w", s.logPath, pos, err)
	}
	bt := record.Batch(raw)
	var res OffsetForTimestamp
	found := false
	errFound := errors.New("found")
	err := bt.Iterate(func(r *record.Record) error {
		if rts, off := r.Timestamp(bt), r.Offset(bt); rts >= ts && off >= startingOffset {
			res = OffsetForTimestamp{Timestamp: rts, Offset: off, LeaderEpoch: h.leaderEpoch}
			found = true
			return errFound
		}
		return nil
	})
	if err != nil && !found {
		return OffsetForTimestamp{}, false, &CorruptError{Path: s.logPath, Offset: pos, Err: ErrCorruptLog, Reason: "cannot decode records", Cause: err}
	}
	return res, found, nil
}
