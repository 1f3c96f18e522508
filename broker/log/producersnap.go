package log

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// Producer-state snapshots of a Log (<offset>.snapshot, format in
// broker/log/checkpoint). A snapshot named S holds the producer state
// implied by every batch below offset S, open transactions included (each
// entry's currentTxnFirstOffset and coordinatorEpoch, as Kafka writes
// them; loading one reopens those transactions). They exist so that
// opening a log does not replay the whole log to rebuild producer state,
// and so that the state of producers whose batches retention deleted
// survives a restart.
//
// When they are written:
//
//   - at every roll, named after the new segment's base offset (the state
//     is encoded under the log lock; the file is written by the flush that
//     the roll schedules, outside the lock, so that no append waits
//     for its fsyncs);
//   - at Close, named after the log end offset.
//
// Every write is atomic (temp file, fsync, rename, directory fsync), so a
// snapshot file is whole or absent. A snapshot that fails its CRC anyway is
// deleted and the next older one used.
//
// Which are trusted at Open: after a clean shutdown every snapshot up to
// the log end offset; after an unclean one only those up to the recovery
// point (the log below it was fsynced, so it is the log the snapshot was
// taken from), or up to the log start offset if that is higher (no
// surviving batch lies below it for the snapshot to disagree with). The
// others are deleted. The state is then the newest trusted snapshot plus a
// replay of every batch from its offset to the log end; with no snapshot,
// of the whole log.
//
// Which are kept: truncation deletes those above the new log end offset
// (and rebuilds the state from what remains), retention those below the
// new log start offset, and after the recovery-point checkpoint is written
// those below the base of the last-but-one segment or of the segment below
// the checkpointed recovery point, whichever is lower (Kafka's
// minSnapshotsOffsetToRetain: "the last two segments").
//
// The one snapshot not below the log start offset is kept even when it is
// at exactly the log start offset, which Kafka's truncateAndReload would
// delete: it is the only record of producers whose data retention removed,
// and Kafka ≥ 2.5 keeps those producers in memory until they expire.

// pendingSnapshot is a snapshot encoded at roll, waiting for the flush to
// write it.
type pendingSnapshot struct {
	offset int64
	data   []byte
}

// snapshotName is the file name (no directory) of the snapshot at offset.
func snapshotName(offset int64) string {
	return fmt.Sprintf("%020d%s", offset, SnapshotSuffix)
}

// ProducerState returns a copy of the partition's producer state, by
// producer id (for DescribeProducers).
func (l *Log) ProducerState() []ProducerEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.Producers()
}

// Producer returns a copy of one producer's state in this partition.
func (l *Log) Producer(producerID int64) (ProducerEntry, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.Producer(producerID)
}

// RemoveExpiredProducers forgets the producers idle for
// producer.id.expiration.ms (the Manager runs it with retention) and
// returns how many were removed. Snapshots keep them until they are
// rewritten; a snapshot loaded later skips expired producers too.
func (l *Log) RemoveExpiredProducers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.segments == nil {
		return 0
	}
	n := l.producers.RemoveExpired(l.nowMs(), l.cfg.ProducerIDExpirationMs)
	if n > 0 {
		l.lg.Info("removed expired producers", "count", n, "producers", l.producers.Len())
	}
	return n
}

// loadProducerState is the last step of Open: trust, delete and load
// snapshots as described above, then replay the log.
func (l *Log) loadProducerState(clean bool) error {
	l.producers = NewProducerStateManager()
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	limit := l.logEndOffset
	if !clean {
		limit = max(l.recoveryPoint, l.logStartOffset)
	}
	txnIndexes := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		off, suffix, ok := ParseFileName(name)
		switch {
		case !ok:
		case suffix == TxnIndexSuffix:
			txnIndexes[off] = true
		case suffix == SnapshotSuffix+".tmp":
			if err := l.remove(name); err != nil {
				return err
			}
		case suffix != SnapshotSuffix:
		case off > limit:
			l.lg.Info("deleting producer snapshot above the trusted offset", "offset", off, "trusted_up_to", limit)
			if err := l.remove(name); err != nil {
				return err
			}
		default:
			l.snapshots = append(l.snapshots, off)
		}
	}
	slices.Sort(l.snapshots)
	if err := l.loadTxnIndexes(txnIndexes); err != nil {
		return err
	}
	return l.rebuildProducerState(min(l.logEndOffset, l.txnRebuildBelow))
}

// loadTxnIndexes reads the .txnindex files of the segments (those named
// in present exist). A corrupt one is emptied and the producer-state
// replay made to start at or below its segment (txnRebuildBelow), which
// rebuilds it from the markers in the log.
func (l *Log) loadTxnIndexes(present map[int64]bool) error {
	for _, seg := range l.segments {
		if !present[seg.baseOffset] {
			continue
		}
		err := seg.txnIndex.load()
		var ce *CorruptError
		switch {
		case errors.As(err, &ce):
			l.lg.Warn("transaction index corrupt, rebuilding it from the log", "segment", seg.txnIndex.path, "err", err)
			seg.txnIndex.entries = nil
			l.txnRebuildBelow = min(l.txnRebuildBelow, seg.baseOffset)
		case err != nil:
			return err
		}
	}
	return nil
}

// rebuildProducerState sets the producer state from the newest snapshot
// at or below limit (pending or on disk; all are at or below the log end
// offset) and a replay of the batches from its offset to the log end. A
// snapshot that cannot be read is deleted and the next older one tried.
//
// The transaction indexes are made to match the replay: in the segments
// from the one holding the replay's start, the entries of markers at or
// above it are replaced by those the replay produces (files are rewritten
// only where that changes them). So after a truncation, a recovery or a
// damaged index, the indexes are what the log implies, and a clean start
// (replay from the snapshot at the log end) touches nothing. limit below
// the log end forces the replay to cover a segment whose index must be
// rebuilt. The caller holds mu (or owns l).
func (l *Log) rebuildProducerState(limit int64) error {
	nowMs := l.nowMs()
	from := l.segments[0].baseOffset
	loaded := false
	for !loaded {
		off, data, pending, ok := l.latestSnapshotAtOrBelow(limit)
		if !ok {
			l.producers.Reset()
			break
		}
		var err error
		if !pending {
			data, err = vfs.ReadFile(l.fsys, l.dir+"/"+snapshotName(off))
		}
		var entries []checkpoint.ProducerSnapshotEntry
		if err == nil {
			entries, err = checkpoint.DecodeProducerSnapshot(data)
		}
		if err != nil {
			l.lg.Warn("producer snapshot unreadable, deleting it", "offset", off, "err", err)
			if err := l.dropSnapshot(off); err != nil {
				return err
			}
			continue
		}
		l.producers.LoadSnapshot(entries, nowMs, l.cfg.ProducerIDExpirationMs)
		from = max(from, off)
		loaded = true
	}
	first := max(l.floorSegment(from), 0)
	aborts := make([][]AbortedTxn, len(l.segments)-first)
	n, err := l.replayProducers(from, func(i int, a AbortedTxn) {
		aborts[i-first] = append(aborts[i-first], a)
	})
	if err != nil {
		return fmt.Errorf("rebuild producer state of %s: %w", l.dir, err)
	}
	rewritten := 0
	for i := first; i < len(l.segments); i++ {
		t := l.segments[i].txnIndex
		var want []AbortedTxn
		for _, a := range t.entries {
			if a.LastOffset < from {
				want = append(want, a)
			}
		}
		want = append(want, aborts[i-first]...)
		gen := t.gen
		changed, err := t.setEntries(want)
		if changed {
			l.dirGen++
		}
		if err != nil {
			return fmt.Errorf("rebuild transaction index of %s: %w", l.dir, err)
		}
		if t.gen != gen {
			// The next flush fsyncs it even below the recovery point.
			rewritten++
			if seg := l.segments[i]; !slices.Contains(l.rolledUnsynced, seg) {
				l.rolledUnsynced = append(l.rolledUnsynced, seg)
			}
		}
	}
	l.txnRebuildBelow = math.MaxInt64
	l.producers.OnHighWatermarkUpdated(max(l.highWatermark, l.logStartOffset))
	if n > 0 || l.producers.Len() > 0 {
		l.lg.Info("loaded producer state", "producers", l.producers.Len(), "from_offset", from, "batches_replayed", n,
			"open_transactions", len(l.producers.ongoing), "transaction_indexes_rewritten", rewritten)
	}
	return nil
}

// latestSnapshot returns the newest snapshot: its offset and, if it is
// still pending, its bytes.
func (l *Log) latestSnapshot() (offset int64, data []byte, pending, ok bool) {
	return l.latestSnapshotAtOrBelow(math.MaxInt64)
}

// latestSnapshotAtOrBelow is latestSnapshot among those at or below limit.
func (l *Log) latestSnapshotAtOrBelow(limit int64) (offset int64, data []byte, pending, ok bool) {
	var p *pendingSnapshot
	for i := len(l.pendingSnaps) - 1; i >= 0; i-- {
		if l.pendingSnaps[i].offset <= limit {
			p = &l.pendingSnaps[i]
			break
		}
	}
	onDisk := int64(-1)
	if i, found := slices.BinarySearch(l.snapshots, limit); found {
		onDisk = l.snapshots[i]
	} else if i > 0 {
		onDisk = l.snapshots[i-1]
	}
	switch {
	case p != nil && p.offset >= onDisk:
		return p.offset, p.data, true, true
	case onDisk >= 0:
		return onDisk, nil, false, true
	}
	return 0, nil, false, false
}

// replayProducers applies every batch with a producer id whose last
// offset is ≥ from to the producer state, reading only batch headers (and
// the records of control batches), and hands each aborted transaction to
// abort with the index of the segment holding its marker. It returns how
// many batches it applied. The caller holds mu (or owns l).
func (l *Log) replayProducers(from int64, abort func(seg int, a AbortedTxn)) (int, error) {
	n := 0
	if from >= l.logEndOffset {
		return 0, nil
	}
	for i := max(l.floorSegment(from), 0); i < len(l.segments); i++ {
		seg := l.segments[i]
		pos := int64(0)
		if seg.baseOffset < from {
			p, _, found, err := seg.translateOffset(from, 0)
			if err != nil {
				return n, err
			}
			if !found {
				continue
			}
			pos = p
		}
		m, err := l.replaySegment(seg, pos, from, func(a AbortedTxn) error {
			abort(i, a)
			return nil
		})
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (l *Log) replaySegment(seg *Segment, pos, from int64, abort func(AbortedTxn) error) (int, error) {
	hs := newHeaderScanner(seg.log, seg.size)
	defer hs.release()
	n := 0
	for {
		h, done, err := hs.at(pos)
		if err != nil {
			return n, &CorruptError{Path: seg.logPath, Offset: pos, Err: ErrCorruptLog, Reason: "bad batch header", Cause: err}
		}
		if done {
			return n, nil
		}
		if h.magic == record.MagicV2 && h.lastOffset >= from {
			if bt := record.Batch(hs.header(pos)); bt.ProducerID() >= 0 {
				if bt.IsControl() {
					// A marker's record says COMMIT or ABORT.
					raw := make([]byte, h.size)
					if _, err := seg.log.ReadAt(raw, pos); err != nil {
						return n, fmt.Errorf("read %s at %d: %w", seg.logPath, pos, err)
					}
					bt = raw
				}
				if err := l.applyBatch(bt, abort); err != nil {
					return n, err
				}
				n++
			}
		}
		pos += int64(h.size)
	}
}

// queueSnapshot encodes the producer state as of offset (the log end
// offset) for the next flush to write. The caller holds mu.
func (l *Log) queueSnapshot(offset int64) {
	data := checkpoint.EncodeProducerSnapshot(l.producers.Snapshot())
	l.pendingSnaps = slices.DeleteFunc(l.pendingSnaps, func(p pendingSnapshot) bool { return p.offset >= offset })
	l.pendingSnaps = append(l.pendingSnaps, pendingSnapshot{offset: offset, data: data})
}

// writeSnapshots writes snapshots taken from pendingSnaps atomically. The
// caller holds flushMu but not mu. A failure fails the log, as Kafka's
// IOException from a snapshot takes the log dir offline: a disk that
// cannot take a small file will not take the next batch either.
func (l *Log) writeSnapshots(snaps []pendingSnapshot) {
	for _, p := range snaps {
		if err := vfs.WriteFileAtomic(l.fsys, l.dir, snapshotName(p.offset), p.data); err != nil {
			l.failIO(fmt.Errorf("producer snapshot at %d: %w", p.offset, err))
			return
		}
		l.mu.Lock()
		if i, found := slices.BinarySearch(l.snapshots, p.offset); !found {
			l.snapshots = slices.Insert(l.snapshots, i, p.offset)
		}
		l.mu.Unlock()
	}
}

// dropSnapshot forgets and deletes the snapshot at offset. The caller
// holds mu.
func (l *Log) dropSnapshot(offset int64) error {
	l.pendingSnaps = slices.DeleteFunc(l.pendingSnaps, func(p pendingSnapshot) bool { return p.offset == offset })
	if i, found := slices.BinarySearch(l.snapshots, offset); found {
		l.snapshots = slices.Delete(l.snapshots, i, i+1)
		return l.remove(snapshotName(offset))
	}
	return nil
}

// deleteSnapshotsIf deletes every snapshot whose offset satisfies drop.
// The caller holds flushMu and mu (so no flush is writing one).
func (l *Log) deleteSnapshotsIf(drop func(offset int64) bool) error {
	l.pendingSnaps = slices.DeleteFunc(l.pendingSnaps, func(p pendingSnapshot) bool { return drop(p.offset) })
	var errs []error
	kept := l.snapshots[:0]
	for _, off := range l.snapshots {
		if !drop(off) {
			kept = append(kept, off)
			continue
		}
		if err := l.remove(snapshotName(off)); err != nil {
			errs = append(errs, err)
		}
	}
	l.snapshots = kept
	return errors.Join(errs...)
}

// truncateProducerState is the producer-state side of TruncateTo: drop the
// snapshots above the new log end offset and rebuild. The caller holds
// flushMu and mu.
func (l *Log) truncateProducerState() error {
	leo := l.logEndOffset
	if err := l.deleteSnapshotsIf(func(off int64) bool { return off > leo }); err != nil {
		return fmt.Errorf("producer snapshot: %w", err)
	}
	return l.rebuildProducerState(leo)
}

// deleteSnapshotsBeforeRecoveryPoint deletes the snapshots no longer
// needed once recoveryPoint is checkpointed: those below the base offset
// of the last-but-one segment and below the base of the segment under
// recoveryPoint. A later unclean load then still finds a snapshot at or
// below the checkpointed recovery point.
func (l *Log) deleteSnapshotsBeforeRecoveryPoint(recoveryPoint int64) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.segments == nil || l.closed {
		return
	}
	keep := l.active().baseOffset
	if n := len(l.segments); n > 1 {
		keep = l.segments[n-2].baseOffset
	}
	if i := l.floorSegment(recoveryPoint - 1); i >= 0 {
		keep = min(keep, l.segments[i].baseOffset)
	} else {
		keep = min(keep, recoveryPoint)
	}
	if err := l.deleteSnapshotsIf(func(off int64) bool { return off < keep }); err != nil {
		l.fail(fmt.Errorf("producer snapshot: %w", err))
	}
}

// requeueSnapshots puts back snapshots a failed flush did not write, unless
// a newer one at the same offset was queued meanwhile. The caller holds mu.
func (l *Log) requeueSnapshots(snaps []pendingSnapshot) {
	for _, p := range snaps {
		i, found := slices.BinarySearchFunc(l.pendingSnaps, p.offset, func(q pendingSnapshot, off int64) int { return cmp.Compare(q.offset, off) })
		if !found && p.offset <= l.logEndOffset {
			l.pendingSnaps = slices.Insert(l.pendingSnaps, i, p)
		}
	}
}
