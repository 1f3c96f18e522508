package log

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/qk-project/qk/broker/vfs"
)

// OffsetIndex is a segment's sparse offset index (the .index file): 8-byte
// entries (offset − baseOffset as int32, byte position of a batch in the
// .log as int32), strictly increasing in offset. While the segment is active
// the file is preallocated to the configured maximum size; it is trimmed to
// its entries when the segment rolls or closes. The entries are also held in
// memory, so lookups never touch the file, and no descriptor is kept: the
// file is opened for each write-out, resize or flush and closed after it
// (indexfile.go).
//
// An OffsetIndex is not safe for concurrent mutation; the owning Log
// serialises writers, and readers run only while no writer does.
type OffsetIndex struct {
	x          *indexFile
	baseOffset int64
}

// OpenOffsetIndex opens the offset index at path, creating it preallocated
// to maxIndexSize (rounded down to whole entries) if it does not exist. An
// existing file is read and sanity-checked: its length must be a multiple of
// 8 and its entries strictly increasing; never-written preallocated space
// (an entry after the first with relative offset 0, or a first entry of
// zeros) ends the entries, as in Kafka's dump tool.
func OpenOffsetIndex(fsys vfs.FS, path string, baseOffset, maxIndexSize int64) (*OffsetIndex, error) {
	return openOffsetIndex(fsys, path, baseOffset, maxIndexSize, true)
}

func openOffsetIndex(fsys vfs.FS, path string, baseOffset, maxIndexSize int64, load bool) (*OffsetIndex, error) {
	x, raw, err := openIndexFile(fsys, path, OffsetIndexEntrySize, maxIndexSize, load)
	if err != nil {
		return nil, err
	}
	idx := &OffsetIndex{x: x, baseOffset: baseOffset}
	if raw != nil {
		n, err := parseOffsetIndex(path, raw)
		if err != nil {
			return nil, err
		}
		x.setLoaded(raw, n)
	}
	if load && x.fileSize%OffsetIndexEntrySize != 0 {
		return nil, &CorruptError{Path: path, Offset: x.fileSize, Err: ErrCorruptIndex,
			Reason: fmt.Sprintf("index file size %d is not a multiple of %d", x.fileSize, OffsetIndexEntrySize)}
	}
	return idx, nil
}

// parseOffsetIndex returns how many leading entries of raw are real and
// checks that they increase.
func parseOffsetIndex(path string, raw []byte) (int, error) {
	n := len(raw) / OffsetIndexEntrySize
	var prevRel, prevPos int32
	for i := 0; i < n; i++ {
		e := raw[i*OffsetIndexEntrySize:]
		rel := int32(binary.BigEndian.Uint32(e))
		pos := int32(binary.BigEndian.Uint32(e[4:]))
		if rel == 0 && (i > 0 || pos == 0) {
			return i, nil
		}
		if rel < 0 || pos < 0 || (i > 0 && (rel <= prevRel || pos <= prevPos)) {
			return 0, &CorruptError{Path: path, Offset: int64(i * OffsetIndexEntrySize), Err: ErrCorruptIndex,
				Reason: fmt.Sprintf("entry %d (relative offset %d, position %d) does not follow (%d, %d)", i, rel, pos, prevRel, prevPos)}
		}
		prevRel, prevPos = rel, pos
	}
	return n, nil
}

// BaseOffset is the offset the relative offsets are counted from.
func (idx *OffsetIndex) BaseOffset() int64 { return idx.baseOffset }

// Path is the file's current name.
func (idx *OffsetIndex) Path() string { return idx.x.path }

// Entries is the number of entries.
func (idx *OffsetIndex) Entries() int { return idx.x.entries() }

// MaxEntries is how many entries the file has room for.
func (idx *OffsetIndex) MaxEntries() int { return idx.x.maxEntries() }

// IsFull reports whether no entry can be appended.
func (idx *OffsetIndex) IsFull() bool { return idx.x.entries() >= idx.x.maxEntries() }

// SizeInBytes is the file's current length.
func (idx *OffsetIndex) SizeInBytes() int64 { return idx.x.fileSize }

func (idx *OffsetIndex) rel(i int) int32 {
	return int32(binary.BigEndian.Uint32(idx.x.mem[i*OffsetIndexEntrySize:]))
}

func (idx *OffsetIndex) pos(i int) int32 {
	return int32(binary.BigEndian.Uint32(idx.x.mem[i*OffsetIndexEntrySize+4:]))
}

// Entry returns entry i with an absolute offset.
func (idx *OffsetIndex) Entry(i int) OffsetPosition {
	return OffsetPosition{Offset: idx.baseOffset + int64(idx.rel(i)), Position: idx.pos(i)}
}

// LastOffset is the offset of the last entry, or the base offset when the
// index is empty.
func (idx *OffsetIndex) LastOffset() int64 {
	if n := idx.x.entries(); n > 0 {
		return idx.baseOffset + int64(idx.rel(n-1))
	}
	return idx.baseOffset
}

// LastEntry is the last entry, or (baseOffset, 0) when the index is empty.
func (idx *OffsetIndex) LastEntry() OffsetPosition {
	if n := idx.x.entries(); n > 0 {
		return idx.Entry(n - 1)
	}
	return OffsetPosition{Offset: idx.baseOffset}
}

// CanAppendOffset reports whether offset can be stored relative to the base
// offset (0 ≤ offset − base ≤ MaxInt32).
func (idx *OffsetIndex) CanAppendOffset(offset int64) bool {
	d := offset - idx.baseOffset
	return d >= 0 && d <= math.MaxInt32
}

// Append adds the entry (offset, position). The offset must be larger than
// the last entry's.
func (idx *OffsetIndex) Append(offset int64, position int32) error {
	if idx.IsFull() {
		return fmt.Errorf("append offset %d to %s (%d entries): %w", offset, idx.x.path, idx.x.entries(), ErrIndexFull)
	}
	if !idx.CanAppendOffset(offset) {
		return fmt.Errorf("append offset %d to %s (base %d): %w", offset, idx.x.path, idx.baseOffset, ErrOffsetOverflow)
	}
	if n := idx.x.entries(); n > 0 && offset <= idx.LastOffset() {
		return fmt.Errorf("append offset %d to %s after %d: %w", offset, idx.x.path, idx.LastOffset(), ErrIndexOffset)
	}
	var e [OffsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-idx.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	return idx.x.add(e[:])
}

// slotFor returns the index of the largest entry whose offset is ≤ target,
// or -1 if there is none.
func (idx *OffsetIndex) slotFor(target int64) int {
	d := target - idx.baseOffset
	if d < 0 {
		return -1
	}
	if d > math.MaxInt32 {
		d = math.MaxInt32
	}
	rel := int32(d)
	lo, hi := 0, idx.x.entries() // find first entry with rel > target
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if idx.rel(m) <= rel {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// Lookup returns the entry with the largest offset ≤ target, or
// (baseOffset, 0) if there is none. The batch holding target starts at or
// after the returned position.
func (idx *OffsetIndex) Lookup(target int64) OffsetPosition {
	i := idx.slotFor(target)
	if i < 0 {
		return OffsetPosition{Offset: idx.baseOffset}
	}
	return idx.Entry(i)
}

// upperBoundOffset returns the offset of the first entry whose position is
// ≥ position (Kafka's fetchUpperBoundOffset): every batch that starts
// before position holds only offsets below it. ok is false when no entry
// lies at or after position.
func (idx *OffsetIndex) upperBoundOffset(position int64) (int64, bool) {
	lo, hi := 0, idx.x.entries()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int64(idx.pos(m)) < position {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == idx.x.entries() {
		return 0, false
	}
	return idx.baseOffset + int64(idx.rel(lo)), true
}

// TruncateTo removes the entries whose offset is ≥ offset.
func (idx *OffsetIndex) TruncateTo(offset int64) error {
	i := idx.slotFor(offset)
	n := i + 1
	if i >= 0 && idx.baseOffset+int64(idx.rel(i)) == offset {
		n = i
	}
	return idx.x.truncateEntries(n)
}

// Reset removes every entry and preallocates the file again.
func (idx *OffsetIndex) Reset() error { return idx.x.reset() }

// TrimToValidSize shrinks the file to its entries.
func (idx *OffsetIndex) TrimToValidSize() error { return idx.x.trim() }

// Resize sets the file length (rounded down to whole entries, never below
// the entries present), e.g. to re-grow the index of an active segment.
func (idx *OffsetIndex) Resize(size int64) error { return idx.x.resize(size) }

// ResizeToMax re-grows the file to the configured maximum index size.
func (idx *OffsetIndex) ResizeToMax() error { return idx.x.resize(idx.x.maxIndexSize) }

// SanityCheck verifies the invariants Kafka's sanity check does: the file
// length is a multiple of the entry size and the last offset is not below
// the base offset. Entry order was checked when the file was read.
func (idx *OffsetIndex) SanityCheck() error {
	if idx.x.fileSize%OffsetIndexEntrySize != 0 {
		return &CorruptError{Path: idx.x.path, Offset: idx.x.fileSize, Err: ErrCorruptIndex,
			Reason: fmt.Sprintf("index file size %d is not a multiple of %d", idx.x.fileSize, OffsetIndexEntrySize)}
	}
	if n := idx.x.entries(); n > 0 && idx.LastOffset() < idx.baseOffset {
		return &CorruptError{Path: idx.x.path, Offset: int64((n - 1) * OffsetIndexEntrySize), Err: ErrCorruptIndex,
			Reason: fmt.Sprintf("last offset %d is below the base offset %d", idx.LastOffset(), idx.baseOffset)}
	}
	return nil
}

// Flush writes buffered entries and fsyncs the file.
func (idx *OffsetIndex) Flush() error { return idx.x.flush() }

// Close trims the file to its entries. The index keeps no descriptor, so
// there is nothing else to close.
func (idx *OffsetIndex) Close() error { return idx.x.close(true) }
