package log

import (
	"errors"
	"fmt"
	"math"

	"github.com/qk-project/qk/broker/record"
)

// AppendAsFollower appends batches fetched from the leader, keeping their
// offsets and leader epochs. Every complete batch is validated; a partial
// batch at the end (a fetch response cut by max bytes) is ignored. The first
// offset must not be below the log end offset. The whole chunk is one
// append for the index rule, as in Kafka.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogAppendTime: -1}
	pos := 0
	prevLast := int64(math.MinInt64)
	for pos < len(batches) {
		bt, err := record.Validate(batches[pos:])
		if err != nil {
			if errors.Is(err, record.ErrShortBuffer) {
				break
			}
			return AppendInfo{}, fmt.Errorf("append to %s at byte %d: %w: %w", l.dir, pos, ErrInvalidBatch, err)
		}
		if bt.BaseOffset() <= prevLast {
			return AppendInfo{}, fmt.Errorf("append to %s: %w: batch base offset %d after %d", l.dir, ErrInvalidBatch, bt.BaseOffset(), prevLast)
		}
		if info.FirstOffset < 0 {
			info.FirstOffset = bt.BaseOffset()
		}
		if bt.MaxTimestamp() > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = bt.MaxTimestamp(), bt.LastOffset()
		}
		prevLast = bt.LastOffset()
		info.LastOffset = prevLast
		info.NumRecords += int64(bt.NumRecords())
		pos += len(bt)
	}
	info.ValidBytes = int64(pos)
	if pos == 0 {
		return info, nil
	}
	chunk := batches[:pos]

	l.mu.Lock()
	if err := l.checkWritable(); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, err
	}
	if info.FirstOffset < l.logEndOffset {
		leo := l.logEndOffset
		l.mu.Unlock()
		return AppendInfo{}, fmt.Errorf("append to %s: first offset %d below log end offset %d: %w", l.dir, info.FirstOffset, leo, ErrOffsetOutOfRange)
	}
	for p := 0; p < len(chunk); {
		size, _, _ := record.PeekSize(chunk[p:])
		if int64(size) > l.cfg.MaxMessageBytes {
			l.mu.Unlock()
			return AppendInfo{}, fmt.Errorf("append %d-byte batch to %s (max.message.bytes %d): %w", size, l.dir, l.cfg.MaxMessageBytes, ErrBatchTooLarge)
		}
		p += size
	}
	var err error
	if info.LastOffset-info.FirstOffset <= math.MaxInt32 {
		err = l.appendChunk(chunk, info.FirstOffset, info.LastOffset, info.MaxTimestamp, info.OffsetOfMaxTimestamp)
	} else {
		// The chunk spans more offsets than one segment can index: append
		// batch by batch so that each may roll.
		for p := 0; p < len(chunk) && err == nil; {
			bt := record.Batch(chunk[p : p+record.Batch(chunk[p:]).Size()])
			err = l.appendChunk(bt, bt.BaseOffset(), bt.LastOffset(), bt.MaxTimestamp(), bt.LastOffset())
			p += len(bt)
		}
	}
	if err != nil {
		err = l.fail(err)
		l.mu.Unlock()
		return AppendInfo{}, fmt.Errorf("append to %s: %w", l.dir, err)
	}
	for p := 0; p < len(chunk); {
		bt := record.Batch(chunk[p:])
		if e := bt.PartitionLeaderEpoch(); e >= 0 {
			if _, err := l.epochs.Assign(e, bt.BaseOffset()); err != nil {
				l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
			}
		}
		p += bt.Size()
	}
	info.LogStartOffset = l.logStartOffset
	needFlush := l.logEndOffset-l.recoveryPoint >= l.cfg.FlushMessages
	l.mu.Unlock()
	if needFlush {
		if err := l.Flush(info.LastOffset + 1); err != nil {
			return info, err
		}
	}
	return info, nil
}

// appendChunk rolls if needed and writes one chunk of whole batches; the
// caller holds mu.
func (l *Log) appendChunk(chunk []byte, first, last, maxTs, offsetOfMaxTs int64) error {
	seg, err := l.maybeRoll(int64(len(chunk)), maxTs, first, last, -1)
	if err != nil {
		return err
	}
	if err := seg.append(chunk, last, maxTs, offsetOfMaxTs); err != nil {
		return err
	}
	l.logEndOffset = last + 1
	// Replicated batches update producer state unchecked (Kafka's
	// Replication origin), so that this replica can take over as leader,
	// batch by batch as the leader did: so the transaction index entries
	// (their last stable offsets) are the leader's, byte for byte.
	for p := 0; p < len(chunk); {
		bt := record.Batch(chunk[p:])
		bt = bt[:bt.Size()]
		if bt.ProducerID() >= 0 {
			if err := l.applyBatch(bt, l.indexAbort(seg)); err != nil {
				return err
			}
		}
		p += len(bt)
	}
	return nil
}
