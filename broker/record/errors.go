package record

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every parse or decode failure wraps one of these in a
// *CorruptError so callers can both match the class with errors.Is and report
// the byte position with errors.As.
var (
	// ErrShortBuffer means the input ends before the structure it declares.
	// For a log file this is a torn tail; for a request it is a truncated frame.
	ErrShortBuffer = errors.New("record: short buffer")
	// ErrBadMagic means the magic byte is not one this package understands.
	ErrBadMagic = errors.New("record: unsupported magic")
	// ErrBadCRC means the stored checksum does not match the bytes.
	ErrBadCRC = errors.New("record: crc mismatch")
	// ErrBadSize means a length field is impossible (below the minimum
	// overhead, negative, or inconsistent with the surrounding structure).
	ErrBadSize = errors.New("record: invalid size")
	// ErrInvalidRecord means a record inside a batch is malformed (varints,
	// header counts, offset deltas, record count).
	ErrInvalidRecord = errors.New("record: invalid record")
	// ErrBadCodec means the compression attribute names no known codec, or the
	// compressed stream cannot be decoded.
	ErrBadCodec = errors.New("record: invalid compression")
)

// CorruptError names what is wrong and where. Offset is the byte position
// relative to the start of the buffer handed to the function that failed
// (for a batch: from the batch's first byte).
type CorruptError struct {
	Offset int64
	Reason string
	Err    error // one of the sentinels above
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", e.Err, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(sentinel error, off int, format string, args ...any) error {
	return &CorruptError{Offset: int64(off), Reason: fmt.Sprintf(format, args...), Err: sentinel}
}
