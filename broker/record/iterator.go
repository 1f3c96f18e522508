package record

import (
	"encoding/binary"
	"errors"
)

// Entry is one batch (magic 2) or legacy message (magic 0/1) found by an
// Iterator. Exactly one of Batch and Legacy is set.
type Entry struct {
	Position int64 // byte position of the entry in the iterated buffer
	Magic    int8
	Size     int    // total bytes: LogOverhead + size field
	Bytes    []byte // the entry's bytes (aliasing the buffer)
	Batch    Batch  // magic 2; at least BatchHeaderSize bytes, so every accessor is safe
	Legacy   *LegacyMessage
}

// Iterator walks the batches and messages of a log segment or a fetched
// record set, whatever their magic, the way Kafka's FileLogInputStream
// does, so that dump tools and log recovery agree on where data ends:
//
//   - With 17 bytes or fewer left (not even a full header prefix plus one
//     byte), iteration ends without error.
//   - A size field below 14 (MinMessageOverhead), as in a zero-filled
//     preallocated tail, is an error (*CorruptError wrapping ErrBadSize).
//   - An entry whose declared size runs past the end (a torn write) ends
//     iteration without error.
//
// After the end, Remaining reports the bytes left unread, which Kafka's dump
// tool prints as "Found N invalid bytes at the end". The iterator frames
// entries only: it verifies no CRC and decodes no records (call Validate /
// IsValid and Iterate / Inner as needed). A magic-2 batch shorter than its
// 61-byte header, a magic other than 0-2, or a legacy message whose key and
// value do not fit its size are errors, since no Entry could describe them.
type Iterator struct {
	buf   []byte
	pos   int
	entry Entry
	err   error
	done  bool
}

// NewIterator returns an iterator over b, which holds entries back to back
// starting at byte 0.
func NewIterator(b []byte) *Iterator { return &Iterator{buf: b} }

// Next advances to the next entry and reports whether there is one. When it
// returns false, Err tells a clean end from corruption.
func (it *Iterator) Next() bool {
	if it.done {
		return false
	}
	rest := it.buf[it.pos:]
	if len(rest) <= HeaderPrefixSize {
		return it.stop(nil)
	}
	n := int32(binary.BigEndian.Uint32(rest[BatchLengthOffset:]))
	if n < MinMessageOverhead {
		return it.stop(corrupt(ErrBadSize, it.pos+BatchLengthOffset, "record size %d smaller than minimum record overhead (%d)", n, MinMessageOverhead))
	}
	size := int64(LogOverhead) + int64(n)
	if size > int64(len(rest)) {
		return it.stop(nil) // torn tail
	}
	e := Entry{
		Position: int64(it.pos),
		Magic:    int8(rest[MagicOffset]),
		Size:     int(size),
		Bytes:    rest[:size:size],
	}
	switch e.Magic {
	case MagicV0, MagicV1:
		m, err := ParseLegacy(e.Bytes)
		if err != nil {
			return it.stop(shift(err, it.pos))
		}
		e.Legacy = &m
	case MagicV2:
		if size < BatchHeaderSize {
			return it.stop(corrupt(ErrBadSize, it.pos+BatchLengthOffset, "batch size %d smaller than the v2 header (%d)", size, BatchHeaderSize))
		}
		e.Batch = Batch(e.Bytes)
	default:
		return it.stop(corrupt(ErrBadMagic, it.pos+MagicOffset, "unsupported magic %d", e.Magic))
	}
	it.entry = e
	it.pos += e.Size
	return true
}

func (it *Iterator) stop(err error) bool {
	it.done, it.err, it.entry = true, err, Entry{}
	return false
}

// shift makes a *CorruptError's offset relative to the iterated buffer.
func shift(err error, by int) error {
	var ce *CorruptError
	if errors.As(err, &ce) {
		ce.Offset += int64(by)
	}
	return err
}

// Entry returns the current entry; valid after Next returned true.
func (it *Iterator) Entry() Entry { return it.entry }

// Err returns the corruption that stopped iteration, or nil for a clean end
// (including a torn tail).
func (it *Iterator) Err() error { return it.err }

// Position is the byte position just past the last entry returned: where
// a recovering log would truncate.
func (it *Iterator) Position() int64 { return int64(it.pos) }

// Remaining is the number of bytes after the last entry returned. Once
// Next has returned false without error these are the invalid bytes at the
// end of the buffer.
func (it *Iterator) Remaining() int { return len(it.buf) - it.pos }
