package log

import (
	"errors"
	"fmt"
)

type pendingDelete struct {
	seg *Segment
	at  int64 // ms
}

// DeleteRecordsBefore raises the log start offset to offset (the
// DeleteRecords API) and returns the new log start offset. offset may not
// exceed the high watermark (ErrAboveHighWatermark). Whole segments below
// it are removed by the next DeleteOldSegments.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return 0, err
	}
	if offset < 0 {
		return l.logStartOffset, fmt.Errorf("delete records of %s before %d: %w", l.dir, offset, ErrOffsetOutOfRange)
	}
	if offset > l.highWatermark {
		return l.logStartOffset, fmt.Errorf("delete records of %s before %d (high watermark %d): %w", l.dir, offset, l.highWatermark, ErrAboveHighWatermark)
	}
	l.incrementLogStartOffset(offset, "delete records")
	return l.logStartOffset, nil
}

// incrementLogStartOffset raises the log start offset; the caller holds mu.
func (l *Log) incrementLogStartOffset(offset int64, reason string) {
	if offset <= l.logStartOffset {
		return
	}
	l.lg.Info("incremented log start offset", "offset", offset, "reason", reason)
	l.logStartOffset = offset
	l.highWatermark = max(l.highWatermark, offset)
	// Completed transactions whose marker is now below the log start
	// offset (or the raised high watermark) are stable.
	l.producers.OnHighWatermarkUpdated(l.highWatermark)
	if err := l.epochs.TruncateFromStart(offset); err != nil {
		l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
	}
}

// DeleteOldSegments applies retention: segments below the log start
// offset, then (cleanup.policy delete) retention.bytes and retention.ms.
// Segments are examined oldest first and deletion stops at the first that
// does not qualify; a segment whose offsets are not all below the high
// watermark is never deleted. If every segment qualifies an empty one is
// rolled first, so the active segment is never deleted and the log always
// keeps one. Deleted files are renamed *.deleted and removed after
// file.delete.delay.ms. It returns how many segments were deleted.
func (l *Log) DeleteOldSegments() (_ int, err error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritable(); err != nil {
		return 0, err
	}
	// A rename, removal or roll that failed left the segment list and the
	// files apart: the log fails and its dir goes offline.
	defer func() {
		if err != nil && isIOError(err) {
			err = l.fail(err)
		}
	}()
	nowMs := l.nowMs()
	if err := l.reapDeleted(nowMs, false); err != nil {
		return 0, err
	}
	total := 0
	n, err := l.deleteOldSegments("log start offset breach", func(s *Segment, next *Segment) (bool, error) {
		return next != nil && next.baseOffset <= l.logStartOffset, nil
	})
	total += n
	if err != nil || !l.cfg.deletes() {
		return total, err
	}
	if l.cfg.RetentionBytes >= 0 {
		var size int64
		for _, s := range l.segments {
			size += s.size
		}
		if size >= l.cfg.RetentionBytes {
			diff := size - l.cfg.RetentionBytes
			n, err := l.deleteOldSegments("retention size breach", func(s *Segment, _ *Segment) (bool, error) {
				if diff-s.size >= 0 {
					diff -= s.size
					return true, nil
				}
				return false, nil
			})
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	if l.cfg.RetentionMs >= 0 {
		n, err := l.deleteOldSegments("retention time breach", func(s *Segment, _ *Segment) (bool, error) {
			ts, err := s.largestTimestamp()
			if err != nil {
				return false, err
			}
			return nowMs-ts > l.cfg.RetentionMs, nil
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// deleteOldSegments deletes the longest prefix of segments satisfying
// pred (and the high-watermark rule). The caller holds flushMu and mu.
func (l *Log) deleteOldSegments(reason string, pred func(s, next *Segment) (bool, error)) (int, error) {
	k := 0
	for k < len(l.segments) {
		s := l.segments[k]
		var next *Segment
		upper := l.logEndOffset
		if k+1 < len(l.segments) {
			next = l.segments[k+1]
			upper = next.baseOffset
		}
		if next == nil && s.size == 0 {
			break
		}
		if l.highWatermark < upper {
			break
		}
		ok, err := pred(s, next)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		k++
	}
	if k == 0 {
		return 0, nil
	}
	if k == len(l.segments) {
		if _, err := l.roll(l.logEndOffset, reason); err != nil {
			return 0, err
		}
	}
	doomed := make([]*Segment, k)
	copy(doomed, l.segments[:k])
	l.segments = append(l.segments[:0], l.segments[k:]...)
	for _, s := range doomed {
		if err := l.deleteSegmentFiles(s); err != nil {
			return 0, err
		}
	}
	l.lg.Info("deleted segments", "reason", reason, "count", k, "first", doomed[0].baseOffset, "last", doomed[k-1].baseOffset)
	l.incrementLogStartOffset(l.segments[0].baseOffset, reason)
	// Snapshots below the new log start offset describe deleted data; the
	// one at it (if any) keeps the state of producers whose data is gone.
	lso := l.logStartOffset
	if err := l.deleteSnapshotsIf(func(off int64) bool { return off < lso }); err != nil {
		return k, fmt.Errorf("producer snapshot: %w", err)
	}
	return k, nil
}

// deleteSegmentFiles takes a segment out of service: its files are renamed
// *.deleted and removed after file.delete.delay.ms (at once when that is 0).
// The caller holds flushMu and mu and has removed s from l.segments.
func (l *Log) deleteSegmentFiles(s *Segment) error {
	l.dirGen++
	s.removed = true
	if l.cfg.FileDeleteDelayMs <= 0 {
		return s.removeFiles(false)
	}
	if err := s.renameToDeleted(); err != nil {
		return err
	}
	l.pending = append(l.pending, pendingDelete{seg: s, at: l.nowMs() + l.cfg.FileDeleteDelayMs})
	return nil
}

// reapDeleted removes *.deleted files whose delay has passed (all of them
// when force is set). The caller holds flushMu and mu.
func (l *Log) reapDeleted(nowMs int64, force bool) error {
	var errs []error
	kept := l.pending[:0]
	for _, p := range l.pending {
		if force || p.at <= nowMs {
			errs = append(errs, p.seg.removeFiles(true))
			l.dirGen++
		} else {
			kept = append(kept, p)
		}
	}
	clear(l.pending[len(kept):])
	l.pending = kept
	return errors.Join(errs...)
}
