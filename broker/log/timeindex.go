package log

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/qk-project/qk/broker/vfs"
)

// TimeIndex is a segment's time index (the .timeindex file): 12-byte
// entries (timestamp int64, offset − baseOffset int32), meaning "the largest
// timestamp seen up to this offset". Both columns increase: an entry is
// appended only when its timestamp is larger than the last one. One slot is
// kept free for the entry a segment appends when it rolls or closes, so the
// index reports full one entry early.
type TimeIndex struct {
	x          *indexFile
	baseOffset int64
}

// OpenTimeIndex opens the time index at path, creating it preallocated to
// maxIndexSize rounded down to whole entries if it does not exist. An
// existing file is read and sanity-checked like an OffsetIndex.
func OpenTimeIndex(fsys vfs.FS, path string, baseOffset, maxIndexSize int64) (*TimeIndex, error) {
	return openTimeIndex(fsys, path, baseOffset, maxIndexSize, true)
}

func openTimeIndex(fsys vfs.FS, path string, baseOffset, maxIndexSize int64, load bool) (*TimeIndex, error) {
	x, raw, err := openIndexFile(fsys, path, TimeIndexEntrySize, maxIndexSize, load)
	if err != nil {
		return nil, err
	}
	idx := &TimeIndex{x: x, baseOffset: baseOffset}
	if raw != nil {
		n, err := parseTimeIndex(path, raw)
		if err != nil {
			return nil, err
		}
		x.setLoaded(raw, n)
	}
	if load && x.fileSize%TimeIndexEntrySize != 0 {
		return nil, &CorruptError{Path: path, Offset: x.fileSize, Err: ErrCorruptIndex,
			Reason: fmt.Sprintf("time index file size %d is not a multiple of %d", x.fileSize, TimeIndexEntrySize)}
	}
	return idx, nil
}

func parseTimeIndex(path string, raw []byte) (int, error) {
	n := len(raw) / TimeIndexEntrySize
	var prevTs int64
	var prevRel int32
	for i := 0; i < n; i++ {
		e := raw[i*TimeIndexEntrySize:]
		ts := int64(binary.BigEndian.Uint64(e))
		rel := int32(binary.BigEndian.Uint32(e[8:]))
		if rel == 0 && (i > 0 || ts == 0) {
			return i, nil
		}
		if rel < 0 || (i > 0 && (ts <= prevTs || rel < prevRel)) {
			return 0, &CorruptError{Path: path, Offset: int64(i * TimeIndexEntrySize), Err: ErrCorruptIndex,
				Reason: fmt.Sprintf("entry %d (timestamp %d, relative offset %d) does not follow (%d, %d)", i, ts, rel, prevTs, prevRel)}
		}
		prevTs, prevRel = ts, rel
	}
	return n, nil
}

// BaseOffset is the offset the relative offsets are counted from.
func (idx *TimeIndex) BaseOffset() int64 { return idx.baseOffset }

// Path is the file's current name.
func (idx *TimeIndex) Path() string { return idx.x.path }

// Entries is the number of entries.
func (idx *TimeIndex) Entries() int { return idx.x.entries() }

// MaxEntries is how many entries the file has room for.
func (idx *TimeIndex) MaxEntries() int { return idx.x.maxEntries() }

// IsFull reports whether the index must roll: one slot stays reserved for
// the final entry appended on roll or close.
func (idx *TimeIndex) IsFull() bool { return idx.x.entries() >= idx.x.maxEntries()-1 }

// SizeInBytes is the file's current length.
func (idx *TimeIndex) SizeInBytes() int64 { return idx.x.fileSize }

func (idx *TimeIndex) ts(i int) int64 {
	return int64(binary.BigEndian.Uint64(idx.x.mem[i*TimeIndexEntrySize:]))
}

func (idx *TimeIndex) rel(i int) int32 {
	return int32(binary.BigEndian.Uint32(idx.x.mem[i*TimeIndexEntrySize+8:]))
}

// Entry returns entry i with an absolute offset.
func (idx *TimeIndex) Entry(i int) TimestampOffset {
	return TimestampOffset{Timestamp: idx.ts(i), Offset: idx.baseOffset + int64(idx.rel(i))}
}

// LastEntry is the last entry, or (-1, baseOffset) when the index is empty.
func (idx *TimeIndex) LastEntry() TimestampOffset {
	if n := idx.x.entries(); n > 0 {
		return idx.Entry(n - 1)
	}
	return TimestampOffset{Timestamp: -1, Offset: idx.baseOffset}
}

// MaybeAppend appends (timestamp, offset) if timestamp is larger than the
// last entry's timestamp and does nothing otherwise. Going backwards in
// either column is an error. skipFullCheck lets the final roll/close entry
// use the reserved slot.
func (idx *TimeIndex) MaybeAppend(timestamp, offset int64, skipFullCheck bool) error {
	n := idx.x.entries()
	last := idx.LastEntry()
	if n > 0 && offset < last.Offset {
		return fmt.Errorf("append offset %d to %s after %d: %w", offset, idx.x.path, last.Offset, ErrIndexOffset)
	}
	if n > 0 && timestamp < last.Timestamp {
		return fmt.Errorf("append timestamp %d to %s after %d: %w", timestamp, idx.x.path, last.Timestamp, ErrIndexOffset)
	}
	if timestamp <= last.Timestamp {
		return nil
	}
	if !skipFullCheck && idx.IsFull() || n >= idx.x.maxEntries() {
		return fmt.Errorf("append timestamp %d to %s (%d entries): %w", timestamp, idx.x.path, n, ErrIndexFull)
	}
	d := offset - idx.baseOffset
	if d < 0 || d > math.MaxInt32 {
		return fmt.Errorf("append offset %d to %s (base %d): %w", offset, idx.x.path, idx.baseOffset, ErrOffsetOverflow)
	}
	var e [TimeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(timestamp))
	binary.BigEndian.PutUint32(e[8:], uint32(d))
	return idx.x.add(e[:])
}

// Lookup returns the entry with the largest timestamp ≤ target, or
// (-1, baseOffset) if there is none.
func (idx *TimeIndex) Lookup(target int64) TimestampOffset {
	lo, hi := 0, idx.x.entries()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if idx.ts(m) <= target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return TimestampOffset{Timestamp: -1, Offset: idx.baseOffset}
	}
	return idx.Entry(lo - 1)
}

// TruncateTo removes the entries whose offset is ≥ offset.
func (idx *TimeIndex) TruncateTo(offset int64) error {
	d := offset - idx.baseOffset
	if d <= 0 {
		return idx.x.truncateEntries(0)
	}
	if d > math.MaxInt32 {
		return nil
	}
	rel := int32(d)
	lo, hi := 0, idx.x.entries() // first entry with rel >= offset
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if idx.rel(m) < rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return idx.x.truncateEntries(lo)
}

// Reset removes every entry and preallocates the file again.
func (idx *TimeIndex) Reset() error { return idx.x.reset() }

// TrimToValidSize shrinks the file to its entries.
func (idx *TimeIndex) TrimToValidSize() error { return idx.x.trim() }

// Resize sets the file length (rounded down to whole entries, never below
// the entries present).
func (idx *TimeIndex) Resize(size int64) error { return idx.x.resize(size) }

// ResizeToMax re-grows the file to the configured maximum index size.
func (idx *TimeIndex) ResizeToMax() error { return idx.x.resize(idx.x.maxIndexSize) }

// SanityCheck verifies Kafka's time-index invariants: whole entries, the
// last timestamp not below the first, the last offset not below the base.
func (idx *TimeIndex) SanityCheck() error {
	if idx.x.fileSize%TimeIndexEntrySize != 0 {
		return &CorruptError{Path: idx.x.path, Offset: idx.x.fileSize, Err: ErrCorruptIndex,
			Reason: fmt.Sprintf("time index file size %d is not a multiple of %d", idx.x.fileSize, TimeIndexEntrySize)}
	}
	n := idx.x.entries()
	if n == 0 {
		return nil
	}
	if last := idx.Entry(n - 1); last.Timestamp < idx.ts(0) || last.Offset < idx.baseOffset {
		return &CorruptError{Path: idx.x.path, Offset: int64((n - 1) * TimeIndexEntrySize), Err: ErrCorruptIndex,
			Reason: fmt.Sprintf("last entry (%d, %d) is below the first timestamp %d or the base offset %d", last.Timestamp, last.Offset, idx.ts(0), idx.baseOffset)}
	}
	return nil
}

// Flush writes buffered entries and fsyncs the file.
func (idx *TimeIndex) Flush() error { return idx.x.flush() }

// Close trims the file to its entries. The index keeps no descriptor, so
// there is nothing else to close.
func (idx *TimeIndex) Close() error { return idx.x.close(true) }
