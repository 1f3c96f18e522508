package log

import (
	"errors"
	"fmt"

	"github.com/qk-project/qk/broker/log/checkpoint"
)

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
	// As Kafka's takeSnapshot, only a new offset is worth a snapshot: a
	// log whose newest snapshot on disk is at its end (or that is empty
	// and has none) is closed without writing one, so restarting a broker
	// of 10,000 idle partitions does not rewrite 10,000 snapshots.
	last, _, pending, ok := l.latestSnapshot()
	upToDate := (ok && !pending && last == leo) || (!ok && leo == l.logStartOffset && l.producers.Len() == 0)
	if failed == nil && !upToDate {
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
