package log

import (
	"fmt"

	"github.com/qk-project/qk/broker/record"
)

// The partition side of transactions: markers, the last stable offset and
// the aborted transactions of a read_committed fetch. The producer state
// keeps the transactions (txnstate.go), each segment the aborted ones
// whose marker it holds (txnindex.go).

// applyBatch updates the producer state with a batch that is in the log
// (producer id ≥ 0; a control batch whole) and, when the batch is a
// marker completing a transaction, indexes an abort through index and
// completes the transaction, in Kafka's order (LogSegment.updateTxnIndex
// before completeTxn, so the entry's last stable offset is computed with
// the transaction still open). The caller holds mu (or owns l).
func (l *Log) applyBatch(bt record.Batch, index func(AbortedTxn) error) error {
	done, ok := l.producers.Update(bt)
	if !ok {
		if bt.IsTransactional() && !bt.IsControl() {
			l.producers.stampTxnStart(bt, l.nowMs())
		}
		return nil
	}
	if done.IsAborted {
		a := AbortedTxn{ProducerID: done.ProducerID, FirstOffset: done.FirstOffset, LastOffset: done.LastOffset,
			LastStableOffset: l.producers.LastStableOffsetFor(done)}
		if err := index(a); err != nil {
			return err
		}
	}
	l.producers.CompleteTxn(done)
	return nil
}

// indexAbort returns the sink that appends aborted transactions to seg's
// transaction index (leader and follower appends). The caller holds mu.
func (l *Log) indexAbort(seg *Segment) func(AbortedTxn) error {
	return func(a AbortedTxn) error {
		created, err := seg.txnIndex.append(a)
		if created {
			l.dirGen++
		}
		return err
	}
}

// markerCoordinatorEpoch is the coordinator epoch of a marker batch built
// by AppendMarker (-1 if it cannot be read, which cannot happen).
func markerCoordinatorEpoch(bt record.Batch) int32 {
	_, m, ok, err := bt.TxnMarker()
	if err != nil || !ok {
		return -1
	}
	return m.CoordinatorEpoch
}

// AppendMarker writes a transaction marker as the leader (WriteTxnMarkers):
// a control batch in Kafka's bytes (attributes transactional and control,
// baseSequence -1, the producer's id and epoch, one record with key
// {version 0, ABORT=0 or COMMIT=1} and value {version 0, coordinatorEpoch},
// timestamp nowMs; LogAppendTime topics stamp nowMs as for any batch). It
// completes the producer's open transaction (an ABORT also adds an entry
// to the active segment's .txnindex); a marker for a producer with no
// open transaction is written all the same, as Kafka does, and opens
// nothing. Refused, with nothing appended: a producer epoch older than
// the producer's (ErrInvalidProducerEpoch) and a coordinator epoch older
// than the producer's last marker's (ErrTransactionCoordinatorFenced). It
// flushes as Append does (flush.messages).
func (l *Log) AppendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, leaderEpoch int32, nowMs int64) (AppendInfo, error) {
	if producerID < 0 {
		return AppendInfo{}, fmt.Errorf("append marker to %s: %w: producer id %d", l.dir, ErrInvalidBatch, producerID)
	}
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch = producerID, producerEpoch
	batch, err := record.BuildControlBatch(opts, nowMs, typ, coordinatorEpoch)
	if err != nil {
		return AppendInfo{}, fmt.Errorf("append marker to %s: %w", l.dir, err)
	}
	info, needFlush, err := l.appendLeader(batch, leaderEpoch, originMarker)
	if err == nil && needFlush {
		err = l.Flush(info.LastOffset + 1)
	}
	return info, err
}

// LastStableOffset is the offset below which every transaction is decided
// and its marker replicated (Kafka's UnifiedLog.lastStableOffset):
// min(first unstable offset, high watermark), the first unstable offset
// raised to the log start offset. It equals the high watermark when no
// transaction is open or awaiting replication. A read_committed fetch
// reads below it.
func (l *Log) LastStableOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastStableOffsetLocked()
}

// lastStableOffsetLocked is LastStableOffset; the caller holds mu.
func (l *Log) lastStableOffsetLocked() int64 {
	if fuo, ok := l.producers.FirstUnstableOffset(); ok {
		if fuo = max(fuo, l.logStartOffset); fuo < l.highWatermark {
			return fuo
		}
	}
	return l.highWatermark
}

// FirstUnstableOffset is the first offset of the oldest transaction that
// is open or whose marker is not yet below the high watermark (raised to
// the log start offset); ok is false when there is none.
func (l *Log) FirstUnstableOffset() (offset int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	fuo, ok := l.producers.FirstUnstableOffset()
	return max(fuo, l.logStartOffset), ok
}

// OngoingTransactions returns the partition's open transactions, oldest
// first (for DescribeProducers, find-hanging and metrics).
func (l *Log) OngoingTransactions() []OpenTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.OngoingTxns()
}

// OngoingTxnStarts returns the open transactions with their start
// timestamps, oldest first (for metrics and status pages).
func (l *Log) OngoingTxnStarts() []TxnStart {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.OngoingTxnStarts()
}

// OffsetSnapshot is the log's offsets taken at one instant (Kafka's
// LogOffsetSnapshot).
type OffsetSnapshot struct {
	LogStartOffset   int64
	LogEndOffset     int64
	HighWatermark    int64
	LastStableOffset int64
}

// FetchOffsetSnapshot returns the log start and end offsets, high
// watermark and last stable offset under one lock.
func (l *Log) FetchOffsetSnapshot() OffsetSnapshot {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return OffsetSnapshot{LogStartOffset: l.logStartOffset, LogEndOffset: l.logEndOffset,
		HighWatermark: l.highWatermark, LastStableOffset: l.lastStableOffsetLocked()}
}

// AbortedTransactions returns the aborted transactions overlapping
// [startOffset, upperBoundOffset): those whose ABORT marker is at or
// above startOffset and whose first offset is below upperBoundOffset
// (Kafka's collectAbortedTransactions), from the transaction indexes of
// the segment holding startOffset and the later ones, in marker order.
//
// It takes the log's lock for itself. A fetch must take the data and
// their aborted transactions from one view of the log: use ReadCommitted,
// which does both under one hold of the lock. A caller that reads with
// Read must at least pass as upperBoundOffset the ReadInfo's
// LastStableOffset (the read's bound): a marker appended after the read
// then only concerns a transaction that began at or above it, which the
// bound excludes; but a truncation between the two calls can still make
// them disagree.
func (l *Log) AbortedTransactions(startOffset, upperBoundOffset int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.segments == nil {
		return nil
	}
	return l.collectAborted(max(l.floorSegment(startOffset), 0), startOffset, upperBoundOffset)
}

// collectAborted collects from segment i on; the caller holds mu.
func (l *Log) collectAborted(i int, startOffset, upperBoundOffset int64) []AbortedTxn {
	var out []AbortedTxn
	for ; i < len(l.segments); i++ {
		var complete bool
		out, complete = l.segments[i].txnIndex.collect(out, startOffset, upperBoundOffset)
		if complete {
			break
		}
	}
	return out
}

// ReadCommitted is the read of a read_committed fetch: Read (or
// ReadRetained, with retain) bounded by the last stable offset, with
// ReadInfo.AbortedTransactions set to the aborted transactions that
// overlap the returned data, both taken under one hold of the log's lock,
// so they describe the same log (see AbortedTransactions). The upper
// bound of the lookup is, as in Kafka (LocalLog.addAbortedTransactions),
// the offset of the first offset-index entry after the region, else the
// next segment's base offset or the log end offset, and never above the
// last stable offset: every offset the region holds is below it. An
// empty read has no aborted transactions.
func (l *Log) ReadCommitted(offset int64, maxBytes int32, retain bool) (ReadInfo, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	lso := l.lastStableOffsetLocked()
	info, seg, err := l.readLocked(offset, maxBytes, lso, retain)
	if err != nil || seg < 0 || info.Region.Length == 0 {
		return info, err
	}
	s := l.segments[seg]
	upper := l.logEndOffset
	if seg+1 < len(l.segments) {
		upper = l.segments[seg+1].baseOffset
	}
	if err := s.ensureLoaded(); err == nil {
		if off, ok := s.index.upperBoundOffset(info.Region.Position + info.Region.Length); ok {
			upper = off
		}
	}
	upper = min(upper, lso)
	info.AbortedTransactions = l.collectAborted(seg, offset, upper)
	return info, nil
}
