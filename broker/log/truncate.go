package log

import "fmt"

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
			return true, l.fail(err)
		}
	}
	clear(l.segments[i+1:])
	l.segments = l.segments[:i+1]
	_, end, err := l.active().truncateTo(offset)
	if err != nil {
		return true, l.fail(err)
	}
	offset = end
	// Kafka's LogSegment.truncateTo cuts the transaction index with the
	// log; the producer-state rebuild below then finds it as it wants it.
	removed, err := l.active().txnIndex.truncateTo(offset)
	if removed {
		l.dirGen++
	}
	if err != nil {
		return true, l.fail(err)
	}
	l.logEndOffset = offset
	l.logStartOffset = min(l.logStartOffset, offset)
	l.highWatermark = min(l.highWatermark, offset)
	l.recoveryPoint = min(l.recoveryPoint, offset)
	l.flushTarget = min(l.flushTarget, offset)
	if err := l.epochs.TruncateFromEnd(offset); err != nil {
		return true, l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
	}
	if err := l.truncateProducerState(); err != nil {
		return true, l.fail(err)
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
			return l.fail(err)
		}
	}
	l.segments = l.segments[:0]
	seg, err := createSegment(l.fsys, l.dir, offset, l.segmentConfig(), l.nowMs(), l.lg, false)
	if err != nil {
		return l.fail(err)
	}
	l.segments = append(l.segments, seg)
	l.dirGen++
	l.producers.Reset()
	l.logStartOffset, l.logEndOffset = offset, offset
	l.highWatermark, l.recoveryPoint, l.flushTarget = offset, offset, offset
	if err := l.epochs.Clear(); err != nil {
		return l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
	}
	if err := l.deleteSnapshotsIf(func(int64) bool { return true }); err != nil {
		return l.fail(fmt.Errorf("producer snapshot: %w", err))
	}
	return nil
}
