package log

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/qk-project/qk/broker/log/checkpoint"
)

// load brings the directory to a consistent state and opens its segments
// (Kafka's LogLoader, §4.3 of the format reference):
//
//  1. *.deleted and *.cleaned files are removed; *.swap files from an
//     interrupted split (offset ≥ the smallest .cleaned) are removed, the
//     others completed: segments they replace are removed and the suffix
//     dropped (their indexes are rebuilt).
//  2. Index files without a .log are removed. Each .log is opened; one
//     missing an index is recovered now.
//  3. After an unclean shutdown every segment from the one holding the
//     recovery point to the end is recovered. The first segment that had to
//     be cut, or that ends short of the next segment's base offset without
//     proof that the gap is legitimate (a hole left by unsynced data), ends
//     the log: later segments are removed. See gapIsDurable.
//  4. An empty log, or one ending below the checkpointed log start offset,
//     restarts with one empty segment at the log start offset.
func (l *Log) load(o options) error {
	epochs, err := checkpoint.ReadLeaderEpochs(l.fsys, l.dir+"/"+checkpoint.LeaderEpochFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.lg.Warn("leader epoch checkpoint unreadable, starting empty", "err", err)
		epochs = nil
	}
	l.epochs = NewLeaderEpochCache(epochs, l.persistEpochs)

	if err := l.removeTempFiles(); err != nil {
		return err
	}
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	nowMs := l.nowMs()
	// epochErr is the first leader-epoch checkpoint write that failed
	// while recovery assigned epochs: the load fails with it (an I/O
	// error in the log dir, which takes the dir offline).
	var epochErr error
	assign := func(epoch int32, offset int64) {
		if latest, ok := l.epochs.LatestEpoch(); ok && epoch <= latest {
			return
		}
		if _, err := l.epochs.Assign(epoch, offset); err != nil && epochErr == nil {
			epochErr = fmt.Errorf("leader epoch checkpoint: %w", err)
		}
	}
	for _, base := range bases {
		seg, err := openSegment(l.fsys, l.dir, base, l.segmentConfig(), nowMs, l.lg)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, seg)
		if !l.exists(FileName(l.dir, base, IndexSuffix)) || !l.exists(FileName(l.dir, base, TimeIndexSuffix)) {
			l.lg.Info("rebuilding missing index", "segment", seg.logPath)
			if err := l.recoverSegment(seg, assign); err != nil {
				return err
			}
		}
	}

	// provenDurable is the highest segment boundary below which the log is
	// known to have been fsynced (a gap accepted by gapIsDurable).
	provenDurable := int64(0)
	if !o.cleanShutdown && len(l.segments) > 0 {
		start := max(l.floorSegment(o.recoveryPoint), 0)
		for i := start; i < len(l.segments); i++ {
			seg := l.segments[i]
			res, err := seg.recover(assign)
			if err != nil {
				return fmt.Errorf("recover segment %s: %w", seg.logPath, err)
			}
			l.stats.RecoveredSegments++
			reason := res.cause
			if res.truncated == 0 && i+1 < len(l.segments) {
				// Segments are created before the previous one's data is
				// durable, and a page cache writes files back in any order,
				// so after a crash a segment may end short of the next
				// one's base because its tail was lost. But gaps are also
				// legitimate (a compacted log; a follower rolls at the
				// first offset of a fetched chunk), so a gap ends the log
				// only when nothing proves the lower segment complete.
				next, err := seg.readNextOffset()
				if err != nil {
					return err
				}
				switch nb := l.segments[i+1].baseOffset; {
				case next == nb:
				case next < nb && l.gapIsDurable(nb):
					provenDurable = max(provenDurable, nb)
				default:
					reason = fmt.Errorf("segment ends at offset %d but the next segment starts at %d", next, nb)
				}
			}
			if reason == nil {
				continue
			}
			later := l.segments[i+1:]
			l.stats.TruncatedBytes += res.truncated
			l.stats.DeletedSegments += len(later)
			var laterBytes int64
			for _, s := range later {
				laterBytes += s.size
			}
			l.lg.Warn("truncated log during recovery",
				"segment", seg.logPath, "position", res.position, "bytes_lost", res.truncated+laterBytes,
				"reason", reason.Error(), "later_segments_deleted", len(later))
			for _, s := range later {
				l.stats.TruncatedBytes += s.size
				if err := s.removeFiles(false); err != nil {
					return err
				}
			}
			clear(later)
			l.segments = l.segments[:i+1]
			l.dirGen++
			break
		}
	}

	lsoCheckpoint := max(o.logStartOffset, 0)
	if len(l.segments) > 0 {
		leo, err := l.active().readNextOffset()
		if err != nil {
			return err
		}
		l.logEndOffset = leo
		if leo < lsoCheckpoint {
			l.lg.Warn("log ends below the checkpointed log start offset, deleting all segments",
				"log_end_offset", leo, "log_start_offset", lsoCheckpoint)
			for _, s := range l.segments {
				if err := s.removeFiles(false); err != nil {
					return err
				}
			}
			l.segments = nil
			l.dirGen++
		}
	}
	if len(l.segments) == 0 {
		seg, err := createSegment(l.fsys, l.dir, lsoCheckpoint, l.segmentConfig(), nowMs, l.lg, false)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, seg)
		l.logEndOffset = lsoCheckpoint
		l.dirGen++
	}
	if err := l.active().resizeIndexesToMax(); err != nil {
		return err
	}
	l.logStartOffset = max(lsoCheckpoint, l.segments[0].baseOffset)
	if o.cleanShutdown {
		l.recoveryPoint = l.logEndOffset
	} else {
		// A proven boundary raises the recovery point, so that the proof
		// (the snapshot, which is only trusted up to the recovery point)
		// survives this load and the gap is not judged again.
		l.recoveryPoint = min(max(o.recoveryPoint, provenDurable, 0), l.logEndOffset)
	}
	l.flushTarget = l.recoveryPoint
	l.highWatermark = min(max(o.highWatermark, l.logStartOffset), l.logEndOffset)
	if e, ok := l.epochs.LatestEpoch(); ok {
		l.maxEpochSeen = max(l.maxEpochSeen, e)
	}
	if epochErr != nil {
		return epochErr
	}
	if err := l.epochs.TruncateFromEnd(l.logEndOffset); err != nil {
		return fmt.Errorf("leader epoch checkpoint: %w", err)
	}
	if err := l.epochs.TruncateFromStart(l.logStartOffset); err != nil {
		return fmt.Errorf("leader epoch checkpoint: %w", err)
	}
	if l.stats.RecoveredSegments > 0 || l.stats.TruncatedBytes > 0 {
		l.lg.Info("recovered log", "segments", l.stats.RecoveredSegments, "bytes_lost", l.stats.TruncatedBytes,
			"log_start_offset", l.logStartOffset, "log_end_offset", l.logEndOffset)
	}
	return nil
}

// gapIsDurable says whether every segment below base was fsynced at some
// point, so that a recovered segment ending below base ends there for
// good (offsets were compacted away, or a follower rolled at a gap) rather
// than because its tail was lost in a crash. The proof is the producer
// snapshot named base: a roll queues it and flushLocked writes it
// (atomically: temp, fsync, rename, dir fsync) only after fsyncing every
// rolled segment and the directory, so it exists on disk only if the
// segments below it were durable. Snapshots from base up are never deleted
// while base lies above the checkpointed recovery point. A log without
// that snapshot (its write failed, or the directory was written by Apache
// Kafka, which writes the snapshot before flushing the rolled segment)
// keeps the old, conservative rule: the log ends at the gap.
func (l *Log) gapIsDurable(base int64) bool {
	return l.exists(l.dir + "/" + snapshotName(base))
}

// recoverSegment recovers one segment during load outside the recovery
// range (its index was missing), logging what was cut.
func (l *Log) recoverSegment(seg *Segment, assign func(int32, int64)) error {
	res, err := seg.recover(assign)
	if err != nil {
		return fmt.Errorf("recover segment %s: %w", seg.logPath, err)
	}
	l.stats.RecoveredSegments++
	if res.truncated > 0 {
		l.stats.TruncatedBytes += res.truncated
		l.lg.Warn("truncated invalid tail of segment", "segment", seg.logPath, "position", res.position,
			"bytes_lost", res.truncated, "reason", errString(res.cause))
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (l *Log) exists(path string) bool {
	_, err := l.fsys.Stat(path)
	return err == nil
}

// removeTempFiles is step 1 of load (§2.6 of the format reference):
// *.deleted and *.cleaned files go; a *.log.swap whose base offset is at
// or above the smallest *.cleaned offset belongs to a replacement that was
// not committed (its group was still being renamed) and goes too; every
// other *.log.swap is completed. Swapped index files are always dropped:
// the indexes of a completed swap are rebuilt from its .log.
func (l *Log) removeTempFiles() error {
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	minCleaned := int64(math.MaxInt64)
	var swaps []string
	bases := map[int64]bool{} // bases of every live segment file
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, DeletedSuffix):
			if err := l.remove(name); err != nil {
				return err
			}
		case strings.HasSuffix(name, CleanedSuffix):
			if base, _, ok := ParseFileName(name); ok {
				minCleaned = min(minCleaned, base)
			}
			if err := l.remove(name); err != nil {
				return err
			}
		case strings.HasSuffix(name, SwapSuffix):
			swaps = append(swaps, name)
		default:
			if base, suffix, ok := ParseFileName(name); ok && slices.Contains(segmentFiles, suffix) {
				bases[base] = true
			}
		}
	}
	slices.Sort(swaps)
	for _, name := range swaps {
		base, suffix, ok := ParseFileName(name)
		switch {
		case !ok || base >= minCleaned || suffix != LogSuffix+SwapSuffix:
			// An incomplete replacement, or a swapped index: indexes are
			// rebuilt.
			if err := l.remove(name); err != nil {
				return err
			}
		default:
			if err := l.completeSwap(base, bases); err != nil {
				return err
			}
		}
	}
	return nil
}

// completeSwap finishes an interrupted segment replacement: every file of
// the segments whose base offsets lie in the swap file's range [base, next
// offset) is removed (whichever of a segment's files were already renamed
// away), its swapped indexes are dropped (they are rebuilt) and the .swap
// suffix of its .log removed. The cleaner always keeps the last batch of a
// cleaned group, so the range covers every segment it replaces.
func (l *Log) completeSwap(base int64, bases map[int64]bool) error {
	swapPath := FileName(l.dir, base, LogSuffix+SwapSuffix)
	f, err := l.fsys.OpenFile(swapPath, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", swapPath, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat %s: %w", swapPath, err)
	}
	next := base
	sc := newBatchScanner(f, st.Size(), 0)
	for {
		h, _, err := sc.next()
		if err != nil {
			break
		}
		next = h.nextOffset()
	}
	f.Close()
	l.lg.Info("completing interrupted segment swap", "segment", swapPath, "next_offset", next)
	for b := range bases {
		if b == base || (b > base && b < next) {
			for _, suf := range segmentFiles {
				if err := l.remove(FileName(l.dir, b, suf)[len(l.dir)+1:]); err != nil {
					return err
				}
			}
			delete(bases, b)
		}
	}
	for _, suf := range []string{IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
		if err := l.remove(FileName(l.dir, base, suf+SwapSuffix)[len(l.dir)+1:]); err != nil {
			return err
		}
	}
	// The transaction index is rebuilt from the markers by the
	// producer-state replay, which must then start at or below base.
	l.txnRebuildBelow = min(l.txnRebuildBelow, base)
	if err := l.fsys.Rename(swapPath, FileName(l.dir, base, LogSuffix)); err != nil {
		return fmt.Errorf("complete swap %s: %w", swapPath, err)
	}
	bases[base] = true
	l.dirGen++
	return nil
}

// remove deletes a file of the directory by name; a missing file is fine.
func (l *Log) remove(name string) error {
	if err := l.fsys.Remove(l.dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s/%s: %w", l.dir, name, err)
	}
	l.dirGen++
	return nil
}

// listSegments removes orphan index files and returns the base offsets of
// the .log files, ascending.
func (l *Log) listSegments() ([]int64, error) {
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.dir, err)
	}
	logs := map[int64]bool{}
	var bases []int64
	for _, e := range entries {
		if base, suffix, ok := ParseFileName(e.Name()); ok && suffix == LogSuffix && !e.IsDir() {
			logs[base] = true
			bases = append(bases, base)
		}
	}
	for _, e := range entries {
		base, suffix, ok := ParseFileName(e.Name())
		if !ok || logs[base] {
			continue
		}
		switch suffix {
		case IndexSuffix, TimeIndexSuffix, TxnIndexSuffix:
			l.lg.Info("removing orphan index file", "segment", e.Name())
			if err := l.remove(e.Name()); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(bases)
	return bases, nil
}
