package log

import "encoding/binary"

// On-disk entry sizes of the two segment indexes.
const (
	OffsetIndexEntrySize = 8  // relativeOffset int32 + position int32
	TimeIndexEntrySize   = 12 // timestamp int64 + relativeOffset int32
)

// OffsetPosition is one offset-index entry with its offset made absolute.
type OffsetPosition struct {
	Offset   int64
	Position int32
}

// TimestampOffset is one time-index entry with its offset made absolute.
type TimestampOffset struct {
	Timestamp int64
	Offset    int64
}

// DecodeOffsetIndex decodes the entries of an .index file's bytes. Like
// Kafka's dump tool it stops at the first entry after the first whose
// relative offset is 0: that is preallocated, never-written space. Trailing
// bytes that do not form a whole entry are ignored.
func DecodeOffsetIndex(b []byte, baseOffset int64) []OffsetPosition {
	n := len(b) / OffsetIndexEntrySize
	out := make([]OffsetPosition, 0, n)
	for i := 0; i < n; i++ {
		e := b[i*OffsetIndexEntrySize:]
		rel := int32(binary.BigEndian.Uint32(e))
		if i > 0 && rel == 0 {
			break
		}
		out = append(out, OffsetPosition{Offset: baseOffset + int64(rel), Position: int32(binary.BigEndian.Uint32(e[4:]))})
	}
	return out
}

// DecodeTimeIndex decodes the entries of a .timeindex file's bytes with the
// same stop rule as DecodeOffsetIndex.
func DecodeTimeIndex(b []byte, baseOffset int64) []TimestampOffset {
	n := len(b) / TimeIndexEntrySize
	out := make([]TimestampOffset, 0, n)
	for i := 0; i < n; i++ {
		e := b[i*TimeIndexEntrySize:]
		rel := int32(binary.BigEndian.Uint32(e[8:]))
		if i > 0 && rel == 0 {
			break
		}
		out = append(out, TimestampOffset{Timestamp: int64(binary.BigEndian.Uint64(e)), Offset: baseOffset + int64(rel)})
	}
	return out
}

// AppendOffsetIndexEntry appends the encoding of (relativeOffset, position).
func AppendOffsetIndexEntry(dst []byte, relOffset, position int32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(relOffset))
	return binary.BigEndian.AppendUint32(dst, uint32(position))
}

// AppendTimeIndexEntry appends the encoding of (timestamp, relativeOffset).
func AppendTimeIndexEntry(dst []byte, timestamp int64, relOffset int32) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(timestamp))
	return binary.BigEndian.AppendUint32(dst, uint32(relOffset))
}
