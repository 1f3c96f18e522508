package log

import "fmt"

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
	seg, err := createSegment(l.fsys, l.dir, newBase, l.segmentConfig(), l.nowMs(), l.lg, false)
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
