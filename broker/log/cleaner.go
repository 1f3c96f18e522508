package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"time"

	"github.com/qk-project/qk/broker/record"
)

// Log compaction (cleanup.policy=compact or compact,delete), after Kafka's
// LogCleaner:
//
//	log start             first dirty               first uncleanable   active
//	|----- clean ---------|-------- dirty ------------|-------------------|-----
//	 cleaned before         map: key -> latest offset   too new (lag, HW)
//
// A clean builds an offset map (key hash → latest offset) over the dirty
// section, then rewrites the segments from the log start to the end of the
// mapped range, keeping a record only if its offset is ≥ the map's offset
// for its key (or its key is not in the map). Offsets never change: a
// rewritten batch keeps its baseOffset, lastOffsetDelta, leader epoch and
// producer fields; records keep their offset deltas and timestamps.
//
// Tombstones (null values) follow KIP-534: the first clean that keeps a
// tombstone's batch sets attribute bit 6 and stores deleteHorizonMs = now +
// delete.retention.ms in the batch's baseTimestamp (record timestamp
// deltas are re-based so timestamps do not change); a later clean drops
// tombstones of batches whose horizon has passed.
//
// Batches:
//   - a batch that keeps every record and needs no new horizon is copied
//     byte for byte; others are rebuilt with their codec and a new CRC;
//   - a batch that loses every record is dropped, except (kept as an empty
//     batch, count 0, as Kafka does) when it is its idempotent producer's
//     last batch, so the producer's sequence state survives a restart,
//     and when it is the last batch of a cleaned segment, so the segment
//     still ends where the next one starts (recovery treats a segment that
//     ends short of the next one as lost data);
//   - legacy (magic 0/1) entries are kept as they are;
//   - aborted transactions' batches are removed, markers kept until their
//     transaction has no batch left and then for delete.retention.ms
//     (cleaner_txn.go);
//   - records without a key (rejected by produce for compacted topics)
//     are dropped.
//
// Cleaned segments are grouped like Kafka's groupSegmentsBySize (sum of
// sizes ≤ segment.bytes, of index sizes ≤ segment.index.bytes, offsets
// within one int32) and each group replaces its old segments crash-safely:
//
//  1. write <base>.log.cleaned, .index.cleaned, .timeindex.cleaned; fsync;
//  2. rename them to .swap (the .log last) and fsync the directory: the
//     replacement is now committed (start-up completes a .swap that has no
//     .cleaned at or below its offset, and deletes one that has);
//  3. under Log.mu: rename the old segments' files to .deleted (removed
//     after file.delete.delay.ms, so reads in flight keep their files),
//     rename the .swap files to their final names, swap the segment list;
//  4. fsync the directory.
//
// Only step 3 holds Log.mu; steps 2-4 hold flushMu, so retention and
// truncation (which take it) cannot remove the old segments meanwhile, and
// a group whose segments changed while it was being cleaned is abandoned.

// ErrCleanAborted means the log changed (retention, truncation, close)
// while a clean was running; nothing was replaced.
var ErrCleanAborted = errors.New("log: clean aborted, the log changed")

// offsetMapEntrySize is what one key costs in Kafka's SkimpyOffsetMap (a
// 16-byte hash and an 8-byte offset); log.cleaner.dedupe.buffer.size
// divided by it, times the load factor, is the number of keys a clean can
// map.
const (
	offsetMapEntrySize  = 24
	offsetMapLoadFactor = 0.9
	// DefaultDedupeBufferSize is log.cleaner.dedupe.buffer.size.
	DefaultDedupeBufferSize = 128 << 20
)

// CleanOptions tune one clean.
type CleanOptions struct {
	// DedupeBufferSize bounds the offset map (log.cleaner.dedupe.buffer.size
	// of one cleaner thread); 0 means DefaultDedupeBufferSize.
	DedupeBufferSize int64
	// Force cleans even below min.cleanable.dirty.ratio (an admin
	// trigger); the lag rules still apply.
	Force bool
}

// CleanStats reports one clean.
type CleanStats struct {
	Cleaned           bool  // false: nothing to clean
	FirstDirtyOffset  int64 // where the dirty section started
	EndOffset         int64 // the new first dirty offset
	DirtyRatio        float64
	BytesBefore       int64
	BytesAfter        int64
	SegmentsBefore    int
	SegmentsAfter     int
	RecordsRead       int64
	RecordsRetained   int64
	TombstonesDropped int64
	// AbortedRecordsDropped counts the records of aborted transactions
	// removed, MarkersDropped the transaction markers removed past their
	// delete horizon (emptied ones included).
	AbortedRecordsDropped int64
	MarkersDropped        int64
	Duration              time.Duration
}

// keyHash is a 128-bit hash of a record key: two independent maphash
// seeds, so a collision (which would drop a live key) is as unlikely as
// with Kafka's MD5.
type keyHash struct{ a, b uint64 }

// offsetMap maps key hashes to the latest offset seen, up to a fixed
// number of keys.
type offsetMap struct {
	s1, s2   maphash.Seed
	m        map[keyHash]int64
	capacity int
}

func newOffsetMap(bufferSize int64) *offsetMap {
	if bufferSize <= 0 {
		bufferSize = DefaultDedupeBufferSize
	}
	c := max(int(float64(bufferSize/offsetMapEntrySize)*offsetMapLoadFactor), 1)
	return &offsetMap{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), m: make(map[keyHash]int64, min(c, 1<<16)), capacity: c}
}

func (m *offsetMap) hash(key []byte) keyHash {
	return keyHash{maphash.Bytes(m.s1, key), maphash.Bytes(m.s2, key)}
}

// cleanPlan is what a clean works on, taken under Log.mu (read).
type cleanPlan struct {
	cfg              Config
	nowMs            int64
	firstDirty       int64
	firstUncleanable int64
	segs             []*Segment // non-active segments wholly below firstUncleanable
	sizes            []int64    // their sizes when planned
	nexts            []int64    // the base offset of the segment after each
	cleanBytes       int64
	dirtyBytes       int64
	forced           bool // max.compaction.lag.ms passed
	producerLast     map[int64]lastRecord
}

func (p *cleanPlan) ratio() float64 {
	if p.cleanBytes+p.dirtyBytes == 0 {
		return 0
	}
	return float64(p.dirtyBytes) / float64(p.cleanBytes+p.dirtyBytes)
}

// cleanable reports whether the plan has anything worth cleaning.
func (p *cleanPlan) cleanable(force bool) bool {
	if p.dirtyBytes == 0 {
		return false
	}
	return force || p.forced || p.ratio() >= p.cfg.MinCleanableDirtyRatio
}

// FirstDirtyOffset is where the next clean of a compacted log starts (what
// cleaner-offset-checkpoint records), or -1 when no clean ran yet.
func (l *Log) FirstDirtyOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstDirtyOffset
}

// DirtyRatio is the share of the cleanable bytes that lie after the first
// dirty offset (0 for a log that does not compact), and whether the log
// qualifies for a clean now (ratio ≥ min.cleanable.dirty.ratio, or
// max.compaction.lag.ms passed).
func (l *Log) DirtyRatio() (float64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.segments == nil || !l.cfg.compacts() {
		return 0, false
	}
	p, err := l.planLocked(l.nowMs())
	if err != nil {
		return 0, false
	}
	return p.ratio(), p.cleanable(false)
}

// planLocked computes the clean and dirty sections; the caller holds mu.
func (l *Log) planLocked(nowMs int64) (*cleanPlan, error) {
	p := &cleanPlan{cfg: l.cfg, nowMs: nowMs}
	p.firstDirty = l.firstDirtyOffset
	if p.firstDirty < l.logStartOffset || p.firstDirty > l.logEndOffset {
		p.firstDirty = l.logStartOffset
	}
	// The dirty section ends before the active segment, at the last
	// stable offset (at most the high watermark; Kafka's
	// firstUncleanableDirtyOffset) and before the first segment holding
	// records newer than min.compaction.lag.ms.
	p.firstUncleanable = min(l.active().baseOffset, l.lastStableOffsetLocked())
	if lag := l.cfg.MinCompactionLagMs; lag > 0 {
		for i := max(l.floorSegment(p.firstDirty), 0); i < len(l.segments)-1; i++ {
			s := l.segments[i]
			ts, err := s.largestTimestamp()
			if err != nil {
				return nil, err
			}
			if ts > nowMs-lag {
				p.firstUncleanable = min(p.firstUncleanable, s.baseOffset)
				break
			}
		}
	}
	for i := 0; i < len(l.segments)-1; i++ {
		s, next := l.segments[i], l.segments[i+1].baseOffset
		if next > p.firstUncleanable {
			break
		}
		p.segs = append(p.segs, s)
		p.sizes = append(p.sizes, s.size)
		p.nexts = append(p.nexts, next)
		if next <= p.firstDirty {
			p.cleanBytes += s.size
		} else {
			p.dirtyBytes += s.size
		}
	}
	if p.dirtyBytes > 0 && l.cfg.MaxCompactionLagMs < math.MaxInt64 {
		// The first dirty segment's first batch waited longer than
		// max.compaction.lag.ms: clean regardless of the ratio.
		i := max(l.floorSegment(p.firstDirty), 0)
		s := l.segments[i]
		if h, done, err := readHeaderAt(s.log, 0, s.size); err == nil && !done && h.maxTimestamp >= 0 {
			p.forced = nowMs-h.maxTimestamp > l.cfg.MaxCompactionLagMs
		}
	}
	p.producerLast = map[int64]lastRecord{}
	for _, e := range l.producers.Producers() {
		p.producerLast[e.ProducerID] = lastRecord{lastDataOffset: e.LastOffset(), epoch: e.Epoch}
	}
	return p, nil
}

// Compact cleans the log once if it compacts and qualifies (see
// CleanOptions.Force), and reports what it did. It runs the whole
// rewrite without the log lock; concurrent reads and appends continue.
func (l *Log) Compact(opts CleanOptions) (CleanStats, error) {
	st, err := l.compact(opts)
	// An I/O error (a full disk under the .cleaned files, a failed
	// rename) fails the log and takes its dir offline, as Kafka's cleaner
	// hands an IOException to the LogDirFailureChannel.
	return st, l.failIO(err)
}

func (l *Log) compact(opts CleanOptions) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	start := time.Now()
	l.mu.RLock()
	if err := l.checkWritable(); err != nil {
		l.mu.RUnlock()
		return CleanStats{}, err
	}
	if !l.cfg.compacts() {
		l.mu.RUnlock()
		return CleanStats{}, nil
	}
	p, err := l.planLocked(l.nowMs())
	l.mu.RUnlock()
	if err != nil {
		return CleanStats{}, err
	}
	st := CleanStats{FirstDirtyOffset: p.firstDirty, EndOffset: p.firstDirty, DirtyRatio: p.ratio()}
	if !p.cleanable(opts.Force) {
		return st, nil
	}
	om := newOffsetMap(opts.DedupeBufferSize)
	end, err := l.buildOffsetMap(p, om, &st)
	if err != nil {
		return st, err
	}
	if end <= p.firstDirty {
		return st, nil
	}
	st.EndOffset = end
	// Segments to rewrite: from the log start to the one holding end-1.
	var segs []*Segment
	var sizes, nexts []int64
	for i, s := range p.segs {
		if s.baseOffset >= end {
			break
		}
		segs, sizes, nexts = append(segs, s), append(sizes, p.sizes[i]), append(nexts, p.nexts[i])
	}
	st.SegmentsBefore = len(segs)
	for _, n := range sizes {
		st.BytesBefore += n
	}
	txns := newCleanedTxnMetadata()
	for _, g := range l.groupSegments(segs, sizes, p.cfg) {
		after, err := l.cleanGroup(p, om, txns, segs[g[0]:g[1]], sizes[g[0]:g[1]], nexts[g[0]:g[1]], &st)
		if err != nil {
			return st, err
		}
		st.BytesAfter += after
		st.SegmentsAfter++
	}
	l.mu.Lock()
	l.firstDirtyOffset = end
	l.mu.Unlock()
	st.Cleaned = true
	st.Duration = time.Since(start)
	l.lg.Info("cleaned log", "first_dirty_offset", p.firstDirty, "end_offset", end,
		"dirty_ratio", p.ratio(), "bytes_before", st.BytesBefore, "bytes_after", st.BytesAfter,
		"segments_before", st.SegmentsBefore, "segments_after", st.SegmentsAfter,
		"tombstones_dropped", st.TombstonesDropped, "aborted_records_dropped", st.AbortedRecordsDropped,
		"markers_dropped", st.MarkersDropped, "duration", st.Duration.String())
	return st, nil
}

// buildOffsetMap maps each key of the dirty section to its latest offset
// and returns the end of the mapped range: the end of the dirty section,
// or the first batch whose keys did not fit the map. Batches of aborted
// transactions are not mapped (Kafka's isAborted skip).
func (l *Log) buildOffsetMap(p *cleanPlan, om *offsetMap, st *CleanStats) (int64, error) {
	end := p.firstDirty
	txns := newCleanedTxnMetadata()
	aborted, err := l.abortedIn(p.firstDirty, p.firstUncleanable)
	if err != nil {
		return 0, err
	}
	txns.addAborted(aborted)
	for i, s := range p.segs {
		if p.nexts[i] <= p.firstDirty {
			continue
		}
		sc := newBatchScanner(s.log, p.sizes[i], 0)
		for {
			h, raw, err := sc.next()
			if err == errScanEnd {
				break
			}
			if err != nil {
				return 0, fmt.Errorf("clean %s: read %s at %d: %w", l.dir, s.logPath, sc.pos, err)
			}
			if h.lastOffset < p.firstDirty {
				continue
			}
			if h.magic == record.MagicV2 && record.Batch(raw).IsControl() {
				txns.onControlBatchRead(record.Batch(raw))
			} else if h.magic == record.MagicV2 && txns.onBatchRead(record.Batch(raw)) {
				st.RecordsRead += int64(record.Batch(raw).NumRecords())
			} else if h.magic == record.MagicV2 {
				bt := record.Batch(raw)
				if len(om.m)+int(bt.NumRecords()) > om.capacity {
					if len(om.m) == 0 {
						return 0, fmt.Errorf("clean %s: a batch of %d records does not fit the %d-key offset map (log.cleaner.dedupe.buffer.size)", l.dir, bt.NumRecords(), om.capacity)
					}
					return end, nil
				}
				err := bt.Iterate(func(r *record.Record) error {
					st.RecordsRead++
					if off := r.Offset(bt); r.Key != nil && off >= p.firstDirty {
						om.m[om.hash(r.Key)] = off
					}
					return nil
				})
				if err != nil {
					return 0, fmt.Errorf("clean %s: decode batch at offset %d of %s: %w", l.dir, h.baseOffset, s.logPath, err)
				}
			}
			end = h.nextOffset()
		}
		end = p.nexts[i]
	}
	return end, nil
}

// groupSegments splits segs into runs [from, to) to be cleaned into one
// segment each: total size ≤ segment.bytes, index sizes ≤
// segment.index.bytes, offsets within an int32 of the first base.
func (l *Log) groupSegments(segs []*Segment, sizes []int64, cfg Config) [][2]int {
	var groups [][2]int
	for i := 0; i < len(segs); {
		j := i + 1
		size := sizes[i]
		idx, tidx := l.indexBytes(segs[i])
		for j < len(segs) {
			ix, tx := l.indexBytes(segs[j])
			next := segs[j].baseOffset
			if j+1 < len(segs) {
				next = segs[j+1].baseOffset
			}
			if size+sizes[j] > cfg.SegmentBytes || idx+ix > cfg.MaxIndexSize || tidx+tx > cfg.MaxIndexSize ||
				next-1-segs[i].baseOffset > math.MaxInt32 {
				break
			}
			size, idx, tidx = size+sizes[j], idx+ix, tidx+tx
			j++
		}
		groups = append(groups, [2]int{i, j})
		i = j
	}
	return groups
}

// indexBytes is the size of a segment's trimmed indexes.
func (l *Log) indexBytes(s *Segment) (int64, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if s.removed || s.ensureLoaded() != nil {
		return 0, 0
	}
	return int64(s.index.Entries()) * OffsetIndexEntrySize, int64(s.timeIndex.Entries()) * TimeIndexEntrySize
}

// abortedIn returns the aborted transactions overlapping [from, to)
// (marker at or above from, first offset below to) from the transaction
// indexes of the segment holding from and the later ones.
func (l *Log) abortedIn(from, to int64) ([]AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || l.segments == nil {
		return nil, ErrCleanAborted
	}
	return l.collectAborted(max(l.floorSegment(from), 0), from, to), nil
}

// cleanGroup rewrites one group of segments into <base>.log.cleaned and
// swaps it in. It returns the size of the new segment. txns carries the
// transactions from one group to the next; nexts are the base offsets of
// the segments after each of segs.
func (l *Log) cleanGroup(p *cleanPlan, om *offsetMap, txns *cleanedTxnMetadata, segs []*Segment, sizes, nexts []int64, st *CleanStats) (int64, error) {
	base := segs[0].baseOffset
	cleaned, err := l.createCleaned(base)
	if err != nil {
		return 0, err
	}
	ok := false
	defer func() {
		if !ok {
			cleaned.closeHandles()
			for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
				_ = l.fsys.Remove(FileName(l.dir, base, suf+CleanedSuffix))
				_ = l.fsys.Remove(FileName(l.dir, base, suf+SwapSuffix))
			}
		}
	}()
	f := batchFilter{p: p, om: om, st: st, txns: txns}
	txns.cleanedIndex = nil
	for i, s := range segs {
		// Every aborted transaction with data in the segment, so the
		// cleaned segment's index can be rebuilt whole (Kafka collects
		// over the full segment range for the same reason).
		aborted, err := l.abortedIn(s.baseOffset, nexts[i])
		if err != nil {
			return 0, err
		}
		txns.addAborted(aborted)
		sc := newBatchScanner(s.log, sizes[i], 0)
		for {
			h, raw, err := sc.next()
			if err == errScanEnd {
				break
			}
			if err != nil {
				return 0, fmt.Errorf("clean %s: read %s at %d: %w", l.dir, s.logPath, sc.pos, err)
			}
			last := i == len(segs)-1 && sc.pos == sizes[i]
			out, keep, ferr := f.filter(h, raw, last)
			if ferr != nil {
				return 0, fmt.Errorf("clean %s: batch at offset %d of %s: %w", l.dir, h.baseOffset, s.logPath, ferr)
			}
			if keep {
				if err := cleaned.append(out, h.lastOffset, record.Batch(out).MaxTimestamp(), h.lastOffset); err != nil {
					return 0, fmt.Errorf("clean %s: %w", l.dir, err)
				}
			}
		}
	}
	if err := cleaned.onBecomeInactive(); err != nil {
		return 0, err
	}
	// The cleaned segment indexes the aborted transactions whose marker
	// it keeps and that still have batches in the log; the others
	// describe no data any more.
	if _, err := cleaned.txnIndex.setEntries(txns.cleanedIndex); err != nil {
		return 0, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	if err := cleaned.flush(); err != nil {
		return 0, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	if err := l.swapIn(cleaned, segs, sizes); err != nil {
		return 0, err
	}
	ok = true
	return cleaned.size, nil
}

// createCleaned creates the empty <base>.log.cleaned and its indexes.
func (l *Log) createCleaned(base int64) (*Segment, error) {
	l.mu.RLock()
	sc := segmentConfig{indexIntervalBytes: l.cfg.IndexIntervalBytes, maxIndexSize: l.cfg.MaxIndexSize}
	l.mu.RUnlock()
	s := &Segment{fsys: l.fsys, dir: l.dir, lg: l.lg, baseOffset: base, cfg: sc,
		logPath: FileName(l.dir, base, LogSuffix+CleanedSuffix), created: l.nowMs(), rollingTsKnown: false}
	fl, err := l.fsys.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("clean %s: create %s: %w", l.dir, s.logPath, err)
	}
	s.log = fl
	idx, err := openOffsetIndex(l.fsys, FileName(l.dir, base, IndexSuffix+CleanedSuffix), base, sc.maxIndexSize, false)
	if err != nil {
		fl.Close()
		return nil, err
	}
	tidx, err := openTimeIndex(l.fsys, FileName(l.dir, base, TimeIndexSuffix+CleanedSuffix), base, sc.maxIndexSize, false)
	if err != nil {
		fl.Close()
		return nil, err
	}
	s.index, s.timeIndex = idx, tidx
	s.txnIndex = newTransactionIndex(l.fsys, FileName(l.dir, base, TxnIndexSuffix+CleanedSuffix), base)
	s.maxTs = TimestampOffset{Timestamp: -1, Offset: base}
	s.loaded.Store(true)
	return s, nil
}

// renameSegmentFiles renames the cleaner's files of s from suffix+from to
// suffix+to (the .log last) and points s at each new name as soon as its
// file is renamed (the indexes open their files by name).
func (l *Log) renameSegmentFiles(s *Segment, from, to string) error {
	for _, suf := range []string{IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, LogSuffix} {
		src, dst := FileName(l.dir, s.baseOffset, suf+from), FileName(l.dir, s.baseOffset, suf+to)
		if suf == TxnIndexSuffix && !s.txnIndex.exists {
			s.setFileName(suf, dst)
			continue
		}
		if err := l.fsys.Rename(src, dst); err != nil {
			return fmt.Errorf("clean %s: rename %s: %w", l.dir, src, err)
		}
		s.setFileName(suf, dst)
	}
	return nil
}

// swapIn replaces old (a run of segments of the log) by cleaned, steps 2-4
// of the procedure in the comment at the top of this file.
func (l *Log) swapIn(cleaned *Segment, old []*Segment, sizes []int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	at, err := l.findRun(old, sizes)
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	if err := l.renameSegmentFiles(cleaned, CleanedSuffix, SwapSuffix); err != nil {
		return err
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("clean %s: sync dir: %w", l.dir, err)
	}
	// Committed: from here a failure leaves the log failed, and the next
	// Open completes the swap.
	l.mu.Lock()
	if at, err = l.findRun(old, sizes); err != nil {
		// Cannot happen while flushMu is held; the .swap is completed at
		// the next start.
		l.fail(err)
		l.mu.Unlock()
		return err
	}
	fail := func(err error) error {
		l.fail(err)
		l.mu.Unlock()
		return err
	}
	segs := make([]*Segment, 0, len(l.segments)-len(old)+1)
	segs = append(segs, l.segments[:at]...)
	segs = append(segs, cleaned)
	segs = append(segs, l.segments[at+len(old):]...)
	for _, s := range old {
		if err := l.deleteSegmentFiles(s); err != nil {
			return fail(err)
		}
	}
	if err := l.renameSegmentFiles(cleaned, SwapSuffix, ""); err != nil {
		return fail(err)
	}
	clear(l.segments)
	l.segments = segs
	l.dirGen++
	gen := l.dirGen
	l.mu.Unlock()
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("clean %s: sync dir: %w", l.dir, err)
	}
	l.mu.Lock()
	l.syncedDirGen = max(l.syncedDirGen, gen)
	l.mu.Unlock()
	return nil
}

// findRun returns where old sits in l.segments, unchanged and not active;
// ErrCleanAborted otherwise. The caller holds mu.
func (l *Log) findRun(old []*Segment, sizes []int64) (int, error) {
	if l.closed || l.failed != nil || l.segments == nil {
		return 0, ErrCleanAborted
	}
	at := l.floorSegment(old[0].baseOffset)
	if at < 0 || at+len(old) >= len(l.segments) {
		return 0, ErrCleanAborted
	}
	for i, s := range old {
		if l.segments[at+i] != s || s.removed || s.size != sizes[i] {
			return 0, ErrCleanAborted
		}
	}
	return at, nil
}

// batchFilter decides, batch by batch, what a clean keeps.
type batchFilter struct {
	p     *cleanPlan
	om    *offsetMap
	st    *CleanStats
	txns  *cleanedTxnMetadata
	b     *record.Builder
	kept  []record.Record
	empty [record.BatchHeaderSize]byte
}

// filter returns the bytes to write for the batch raw (raw itself when it
// is kept unchanged, to be written before the scanner moves on) and
// whether to write anything. lastOfGroup keeps the batch, empty if need
// be, so the cleaned segment ends where the next segment starts. In
// Kafka's terms (cleanInto's RecordFilter): a batch that is its
// producer's last, or the group's last, is RETAIN_EMPTY; an aborted data
// batch, or a marker whose transaction has no batch left and whose delete
// horizon has passed, is DELETE; any other is DELETE_EMPTY (dropped only
// if no record is kept).
func (f *batchFilter) filter(h batchHeader, raw []byte, lastOfGroup bool) ([]byte, bool, error) {
	if h.magic != record.MagicV2 {
		return raw, true, nil
	}
	bt := record.Batch(raw)
	horizon, hasHorizon := bt.DeleteHorizonMs()
	control := bt.IsControl()
	var canDiscard, discardRecords bool
	if control {
		canDiscard = f.txns.onControlBatchRead(bt)
		discardRecords = canDiscard && hasHorizon && horizon <= f.p.nowMs
	} else {
		canDiscard = f.txns.onBatchRead(bt)
		discardRecords = canDiscard
	}
	retainEmpty := f.p.isLastOfProducer(bt) || lastOfGroup

	f.kept = f.kept[:0]
	tombstones := 0
	total := 0
	switch {
	case discardRecords:
		if !control {
			f.st.AbortedRecordsDropped += int64(bt.NumRecords())
		}
	case control:
		// A marker is kept whole; the first clean that may discard it
		// sets its delete horizon.
		if bt.NumRecords() > 0 && (hasHorizon || !canDiscard) {
			return raw, true, nil
		}
		err := bt.Iterate(func(r *record.Record) error {
			total++
			f.kept = append(f.kept, *r)
			return nil
		})
		if err != nil {
			return nil, false, err
		}
	default:
		err := bt.Iterate(func(r *record.Record) error {
			total++
			if r.Key == nil {
				return nil // invalid in a compacted topic
			}
			if latest, ok := f.om.m[f.om.hash(r.Key)]; ok && r.Offset(bt) < latest {
				return nil
			}
			if r.Value == nil {
				if hasHorizon && horizon <= f.p.nowMs {
					f.st.TombstonesDropped++
					return nil
				}
				tombstones++
			}
			f.kept = append(f.kept, *r)
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		// An empty batch (emptied by an earlier clean) is kept only
		// while it is needed, below.
		if total > 0 && len(f.kept) == total && (tombstones == 0 || hasHorizon) {
			f.st.RecordsRetained += int64(len(f.kept))
			return raw, true, nil
		}
	}
	f.st.RecordsRetained += int64(len(f.kept))
	if len(f.kept) == 0 {
		if control && bt.NumRecords() > 0 {
			f.st.MarkersDropped++
		}
		if retainEmpty {
			return f.emptyBatch(bt), true, nil
		}
		return nil, false, nil
	}
	opts := record.BatchOptions{
		BaseOffset:           bt.BaseOffset(),
		PartitionLeaderEpoch: bt.PartitionLeaderEpoch(),
		Codec:                bt.Codec(),
		TimestampType:        bt.TimestampType(),
		Transactional:        bt.IsTransactional(),
		Control:              control,
		ProducerID:           bt.ProducerID(),
		ProducerEpoch:        bt.ProducerEpoch(),
		BaseSequence:         bt.BaseSequence(),
	}
	setHorizon := tombstones > 0 || control
	if setHorizon {
		if !hasHorizon {
			horizon = f.p.nowMs + f.p.cfg.DeleteRetentionMs
		}
		opts.BaseTimestamp = horizon
	}
	if f.b == nil {
		f.b = record.NewBuilder(opts)
	} else {
		f.b.Reset(opts)
	}
	for i := range f.kept {
		r := &f.kept[i]
		f.b.AppendAt(r.OffsetDelta, bt.BaseTimestamp()+r.TimestampDelta, r.Key, r.Value, r.Headers)
	}
	out, err := f.b.Build()
	if err != nil {
		return nil, false, err
	}
	nb := record.Batch(out)
	be := binary.BigEndian
	be.PutUint32(out[record.LastOffsetDeltaOffset:], uint32(bt.LastOffsetDelta()))
	if setHorizon {
		be.PutUint16(out[record.AttributesOffset:], uint16(nb.Attributes())|record.DeleteHorizonMask)
	}
	if bt.TimestampType() == record.LogAppendTime {
		be.PutUint64(out[record.MaxTimestampOffset:], uint64(bt.MaxTimestamp()))
	}
	nb.UpdateCRC()
	return out, true, nil
}

// emptyBatch is bt with its records removed: count 0, no codec, no
// base timestamp, every other field kept (Kafka's writeEmptyHeader).
func (f *batchFilter) emptyBatch(bt record.Batch) []byte {
	out := make([]byte, record.BatchHeaderSize)
	copy(out, bt[:record.BatchHeaderSize])
	be := binary.BigEndian
	be.PutUint32(out[record.BatchLengthOffset:], uint32(record.BatchHeaderSize-record.LogOverhead))
	attrs := uint16(bt.Attributes()) &^ (uint16(record.CodecMask) | record.DeleteHorizonMask)
	be.PutUint16(out[record.AttributesOffset:], attrs)
	be.PutUint64(out[record.BaseTimestampOffset:], math.MaxUint64) // -1
	be.PutUint32(out[record.RecordsCountOffset:], 0)
	record.Batch(out).UpdateCRC()
	return out
}
