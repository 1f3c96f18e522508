package log

import (
	"fmt"

	"github.com/qk-project/qk/broker/record"
)

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
	info, needFlush, err := l.appendLeader(batch, leaderEpoch, originClient)
	if err == nil && needFlush {
		err = l.Flush(info.LastOffset + 1)
	}
	return info, err
}

// AppendAsCoordinator is Append for a batch a coordinator builds on a
// producer's behalf (the group coordinator's TxnOffsetCommit, in the
// producer's id and epoch): as Kafka's AppendOrigin.COORDINATOR, its
// sequence is neither checked nor matched against earlier batches (the
// coordinator writes sequence 0 every time); an older epoch is still
// fenced (ErrInvalidProducerEpoch).
func (l *Log) AppendAsCoordinator(batch []byte, leaderEpoch int32) (AppendInfo, error) {
	info, needFlush, err := l.appendLeader(batch, leaderEpoch, originCoordinator)
	if err == nil && needFlush {
		err = l.Flush(info.LastOffset + 1)
	}
	return info, err
}

// appendOrigin is who built a batch the leader appends (Kafka's
// AppendOrigin): a client, a coordinator on a producer's behalf, or the
// log itself (a transaction marker).
type appendOrigin int8

const (
	originClient appendOrigin = iota
	originCoordinator
	originMarker
)

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
	info, needFlush, err := l.appendLeader(batch, leaderEpoch, originClient)
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
// flush.messages calls for one. origin says who built the batch:
// originMarker is a transaction marker built by AppendMarker (clients may
// not send control batches).
func (l *Log) appendLeader(batch []byte, leaderEpoch int32, origin appendOrigin) (AppendInfo, bool, error) {
	marker := origin == originMarker
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
	if bt.IsControl() != marker {
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w: clients may not write control batches", l.dir, ErrInvalidBatch)
	}
	idempotent := bt.ProducerID() >= 0 && !marker
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
	if marker {
		if err := l.producers.CheckMarker(bt.ProducerID(), bt.ProducerEpoch(), markerCoordinatorEpoch(bt)); err != nil {
			l.mu.Unlock()
			return AppendInfo{}, false, fmt.Errorf("append marker to %s: %w", l.dir, err)
		}
	}
	if err := l.checkTxnGuard(bt); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	if marker {
		l.spoilTxnGuard(bt.ProducerID())
	}
	if idempotent && origin == originCoordinator {
		if err := l.producers.CheckCoordinatorAppend(bt); err != nil {
			l.mu.Unlock()
			return AppendInfo{}, false, fmt.Errorf("append to %s: %w", l.dir, err)
		}
	} else if idempotent {
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
		err = l.fail(err)
		l.mu.Unlock()
		return AppendInfo{}, false, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	l.logEndOffset = last + 1
	if bt.ProducerID() >= 0 {
		if err := l.applyBatch(bt, l.indexAbort(seg)); err != nil {
			err = l.fail(err)
			l.mu.Unlock()
			return AppendInfo{}, false, fmt.Errorf("append to %s: %w", l.dir, err)
		}
	}
	if leaderEpoch >= 0 {
		if _, err := l.epochs.Assign(leaderEpoch, base); err != nil {
			// The batch is in the log; the next write finds it failed.
			l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
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
