package log

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

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
	// A new log's files written so far without an fsync are synced by
	// this flush (syncCreation, below); from here on they are written
	// durably, so nothing written while this flush runs is left unsynced.
	created := l.dirUnsynced
	l.createdUnsynced = false
	if upTo <= l.recoveryPoint && !needDirSync && !created && len(l.rolledUnsynced) == 0 && len(l.pendingSnaps) == 0 {
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
	// The index entries buffered so far are claimed here and written by
	// syncFiles, with their fsync, without the lock.
	var planBuf [4]segmentSync
	plans := planBuf[:0]
	for _, s := range segs {
		plans = append(plans, s.claimIndexFlushes())
	}
	l.mu.Unlock()

	// A failure fails the log (see Flush): the snapshots are dropped and
	// the recovery point is not raised. A new log's directory is made
	// durable first, so that the files synced below cannot be lost with
	// it.
	if created {
		if err := l.syncCreation(); err != nil {
			err = fmt.Errorf("flush %s: %w", l.dir, err)
			l.mu.Lock()
			l.fail(err)
			l.mu.Unlock()
			return err
		}
	}
	for i, s := range segs {
		if err := s.syncFiles(plans[i]); err != nil {
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
	if created {
		l.dirUnsynced = false
	}
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
