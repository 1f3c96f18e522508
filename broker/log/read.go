package log

import (
	"fmt"

	"github.com/qk-project/qk/broker/vfs"
)

// FileRegion is a byte range of an open segment file, for sendfile. A
// region from Read stays readable after its segment is deleted (retention,
// truncation) for file.delete.delay.ms; one from ReadRetained holds the
// file open until Release, however long that takes.
type FileRegion struct {
	File     vfs.File
	Position int64
	Length   int64

	seg *Segment // set by ReadRetained until Release
}

// Release drops the region's hold on its segment file (ReadRetained): a
// deleted or closed segment's file is closed once no region holds it. Call
// it exactly once per retained region, after the bytes were sent or the
// region was dropped. It does nothing for a region of Read or a zero
// region; copies of a region share one hold.
func (r FileRegion) Release() {
	if r.seg != nil {
		r.seg.release()
	}
}

// ReadInfo is the answer to Read. Region.Length is 0 when there is nothing
// to return. The region starts at the batch that contains FetchOffset, so
// its first batch may begin below FetchOffset; it may end inside a batch
// when maxBytes cuts it (clients drop a partial last batch, as with Kafka).
type ReadInfo struct {
	Region            FileRegion
	FetchOffset       int64
	SegmentBaseOffset int64
	LogStartOffset    int64
	LogEndOffset      int64
	HighWatermark     int64
	// LastStableOffset is the last stable offset when the read was made.
	LastStableOffset int64
	// AbortedTransactions are set by ReadCommitted: the aborted
	// transactions overlapping the region (a Fetch's
	// aborted_transactions: their ProducerID and FirstOffset).
	AbortedTransactions []AbortedTxn
}

// OffsetForTimestamp is the answer to FetchOffsetByTimestamp.
type OffsetForTimestamp struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
}

// Special timestamps of ListOffsets.
const (
	LatestTimestamp   int64 = -1
	EarliestTimestamp int64 = -2
	MaxTimestamp      int64 = -3
)

// Read returns the file region holding the batches from offset on: at most
// maxBytes, except that the first batch is returned whole even when it is
// larger, and nothing at or above maxOffset (pass the high watermark for
// read_uncommitted consumers, a negative value or the log end offset for
// no limit; read_committed fetches use ReadCommitted). Reading
// at the log end offset returns an empty region; below the log start offset
// or above the log end offset it is ErrOffsetOutOfRange. No record bytes
// are copied.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64) (ReadInfo, error) {
	return l.read(offset, maxBytes, maxOffset, false)
}

// ReadRetained is Read for a region that outlives the call (a fetch
// response sent with sendfile, possibly queued behind others): the region
// holds its segment's file open, even after the segment is deleted and
// file.delete.delay.ms has passed, until Region.Release is called, so its
// descriptor is never closed and reused for another file before the bytes
// are sent. The caller must call Release exactly once.
func (l *Log) ReadRetained(offset int64, maxBytes int32, maxOffset int64) (ReadInfo, error) {
	return l.read(offset, maxBytes, maxOffset, true)
}

func (l *Log) read(offset int64, maxBytes int32, maxOffset int64, retain bool) (ReadInfo, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	info, _, err := l.readLocked(offset, maxBytes, maxOffset, retain)
	return info, err
}

// readLocked is read under mu (held by the caller); it also returns the
// index of the segment the region is in (-1 for no region).
func (l *Log) readLocked(offset int64, maxBytes int32, maxOffset int64, retain bool) (ReadInfo, int, error) {
	info := ReadInfo{FetchOffset: offset, LogStartOffset: l.logStartOffset, LogEndOffset: l.logEndOffset, HighWatermark: l.highWatermark}
	if l.segments == nil {
		return info, -1, ErrClosed
	}
	info.LastStableOffset = l.lastStableOffsetLocked()
	if offset < l.logStartOffset || offset > l.logEndOffset {
		return info, -1, fmt.Errorf("read %s at %d (log start %d, end %d): %w", l.dir, offset, l.logStartOffset, l.logEndOffset, ErrOffsetOutOfRange)
	}
	if maxOffset < 0 || maxOffset > l.logEndOffset {
		maxOffset = l.logEndOffset
	}
	if offset >= maxOffset || maxBytes < 0 {
		return info, -1, nil
	}
	maxIdx := l.floorSegment(maxOffset)
	for i := max(l.floorSegment(offset), 0); i < len(l.segments) && i <= maxIdx; i++ {
		seg := l.segments[i]
		maxPos := seg.size
		if i == maxIdx && maxOffset < l.logEndOffset {
			p, _, found, err := seg.translateOffset(maxOffset, 0)
			if err != nil {
				return info, -1, err
			}
			if found {
				maxPos = p
			}
		}
		pos, n, found, err := seg.read(offset, int64(maxBytes), maxPos, true)
		if err != nil {
			return info, -1, err
		}
		if found {
			if pos >= maxPos {
				return info, -1, nil
			}
			info.Region = FileRegion{File: seg.log, Position: pos, Length: n}
			if retain {
				seg.retain()
				info.Region.seg = seg
			}
			info.SegmentBaseOffset = seg.baseOffset
			return info, i, nil
		}
	}
	return info, -1, nil
}

// FetchOffsetByTimestamp answers ListOffsets: for a real timestamp, the
// offset of the first record whose timestamp is ≥ ts (found with the time
// index, a short scan of batch headers and a record scan of one batch); for
// EarliestTimestamp the log start offset, for LatestTimestamp the log end
// offset, for MaxTimestamp the record with the largest timestamp. ok is
// false when no record qualifies.
func (l *Log) FetchOffsetByTimestamp(ts int64) (res OffsetForTimestamp, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.segments == nil {
		return res, false, ErrClosed
	}
	switch ts {
	case EarliestTimestamp:
		return OffsetForTimestamp{Timestamp: -1, Offset: l.logStartOffset, LeaderEpoch: l.epochs.EpochForOffset(l.logStartOffset)}, true, nil
	case LatestTimestamp:
		e, _ := l.epochs.LatestEpoch()
		return OffsetForTimestamp{Timestamp: -1, Offset: l.logEndOffset, LeaderEpoch: e}, true, nil
	case MaxTimestamp:
		return l.maxTimestampOffset()
	}
	if ts < 0 {
		return res, false, fmt.Errorf("fetch offset by timestamp %d: %w", ts, ErrOffsetOutOfRange)
	}
	for _, seg := range l.segments {
		largest, err := seg.largestTimestamp()
		if err != nil {
			return res, false, err
		}
		if largest < ts {
			continue
		}
		res, ok, err := seg.findOffsetByTimestamp(ts, l.logStartOffset)
		if err != nil || ok {
			return res, ok, err
		}
	}
	return res, false, nil
}

// maxTimestampOffset finds the record with the largest timestamp. The
// caller holds mu.
func (l *Log) maxTimestampOffset() (OffsetForTimestamp, bool, error) {
	var best *Segment
	bestTs := TimestampOffset{Timestamp: -1}
	for _, seg := range l.segments {
		ts, err := seg.maxTimestampSoFar()
		if err != nil {
			return OffsetForTimestamp{}, false, err
		}
		if ts.Timestamp > bestTs.Timestamp {
			best, bestTs = seg, ts
		}
	}
	if best == nil {
		return OffsetForTimestamp{}, false, nil
	}
	res, ok, err := best.findOffsetByTimestamp(bestTs.Timestamp, l.logStartOffset)
	if err != nil || !ok {
		return OffsetForTimestamp{Timestamp: bestTs.Timestamp, Offset: bestTs.Offset, LeaderEpoch: l.epochs.EpochForOffset(bestTs.Offset)}, true, err
	}
	return res, true, nil
}
