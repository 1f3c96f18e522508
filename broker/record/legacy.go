package record

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Layout of a legacy (magic 0/1) message after the shared log overhead.
// See doc.go.
const (
	legacyCRCOffset        = 12
	legacyMagicOffset      = 16
	legacyAttributesOffset = 17
	legacyTimestampOffset  = 18 // magic 1 only

	// LegacyOverheadV0 is RECORD_OVERHEAD_V0: crc, magic, attributes and the
	// two length fields of a magic-0 message (= MinMessageOverhead).
	LegacyOverheadV0 = 14
	// LegacyOverheadV1 adds the int64 timestamp of magic 1.
	LegacyOverheadV1 = 22
)

// LegacyMessage is one magic-0 or magic-1 message (Kafka's LegacyRecord
// with its log overhead). Those formats predate record batches; qk only
// reads them, for dumps and for logs upgraded in place. Key and Value
// alias the parsed bytes; nil means null.
type LegacyMessage struct {
	Offset     int64
	Size       int32 // the message size field: bytes after the log overhead
	CRC        uint32
	Magic      int8
	Attributes int8
	Timestamp  int64 // -1 for magic 0
	Key, Value []byte

	raw       []byte // the whole message as parsed, for the CRC check
	logAppend bool   // inner message of a LogAppendTime wrapper
}

// Codec is the compression codec in the low three attribute bits. Only a
// wrapper message is compressed; its value holds the inner message set.
func (m LegacyMessage) Codec() Codec { return Codec(m.Attributes & CodecMask) }

// TimestampType is NoTimestampType for magic 0. For magic 1 it is the
// attribute bit, except that inner messages of a LogAppendTime wrapper
// report LogAppendTime, as Kafka presents them.
func (m LegacyMessage) TimestampType() TimestampType {
	switch {
	case m.Magic == MagicV0:
		return NoTimestampType
	case m.logAppend || m.Attributes&TimestampTypeMask != 0:
		return LogAppendTime
	}
	return CreateTime
}

// TotalSize is the number of bytes the message takes in the log.
func (m LegacyMessage) TotalSize() int { return LogOverhead + int(m.Size) }

// IsValid reports whether the stored CRC matches the message bytes.
func (m LegacyMessage) IsValid() bool { return m.ComputeCRC() == m.CRC }

// ComputeCRC returns the CRC-32 (IEEE) of the message from the magic byte
// to its end. For a parsed message that is computed over the bytes as they
// were read (so a timestamp taken from the wrapper does not affect it); for
// a message built by hand, over its encoding.
func (m LegacyMessage) ComputeCRC() uint32 {
	if m.raw != nil {
		return crc32.ChecksumIEEE(m.raw[legacyMagicOffset:])
	}
	return crc32.ChecksumIEEE(m.appendBody(nil))
}

// appendBody appends the CRC-covered part of the message: magic,
// attributes, the timestamp (magic 1), key and value.
func (m LegacyMessage) appendBody(dst []byte) []byte {
	dst = append(dst, byte(m.Magic), byte(m.Attributes))
	if m.Magic >= MagicV1 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Timestamp))
	}
	for _, p := range [2][]byte{m.Key, m.Value} {
		if p == nil {
			dst = binary.BigEndian.AppendUint32(dst, 0xffffffff)
			continue
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
		dst = append(dst, p...)
	}
	return dst
}

// ParseLegacy parses the magic-0 or magic-1 message at the start of b (b
// may hold more after it). It checks the structure, not the CRC: use
// IsValid. Key and Value alias b.
func ParseLegacy(b []byte) (LegacyMessage, error) {
	size, magic, err := PeekSize(b)
	if err != nil {
		return LegacyMessage{}, err
	}
	overhead := LegacyOverheadV0
	switch magic {
	case MagicV0:
	case MagicV1:
		overhead = LegacyOverheadV1
	default:
		return LegacyMessage{}, corrupt(ErrBadMagic, legacyMagicOffset, "magic %d is not 0 or 1", magic)
	}
	if size-LogOverhead < overhead {
		return LegacyMessage{}, corrupt(ErrBadSize, BatchLengthOffset, "message size %d smaller than the magic-%d overhead (%d)", size-LogOverhead, magic, overhead)
	}
	if len(b) < size {
		return LegacyMessage{}, corrupt(ErrShortBuffer, len(b), "message declares %d bytes, only %d present", size, len(b))
	}
	b = b[:size:size]
	m := LegacyMessage{
		Offset:     int64(binary.BigEndian.Uint64(b)),
		Size:       int32(size - LogOverhead),
		CRC:        binary.BigEndian.Uint32(b[legacyCRCOffset:]),
		Magic:      magic,
		Attributes: int8(b[legacyAttributesOffset]),
		Timestamp:  -1,
		raw:        b,
	}
	p := legacyTimestampOffset
	if magic == MagicV1 {
		m.Timestamp = int64(binary.BigEndian.Uint64(b[p:]))
		p += 8
	}
	if m.Key, p, err = readBytes32(b, p, "key"); err != nil {
		return LegacyMessage{}, err
	}
	if m.Value, p, err = readBytes32(b, p, "value"); err != nil {
		return LegacyMessage{}, err
	}
	if p != size {
		return LegacyMessage{}, corrupt(ErrInvalidRecord, p, "%d bytes after the value of a %d-byte message", size-p, size)
	}
	return m, nil
}

// readBytes32 reads an int32 length (-1 = null) and the bytes after it.
func readBytes32(b []byte, p int, what string) ([]byte, int, error) {
	if len(b)-p < 4 {
		return nil, p, corrupt(ErrInvalidRecord, p, "%s length runs past the message end", what)
	}
	l := int32(binary.BigEndian.Uint32(b[p:]))
	p += 4
	switch {
	case l == -1:
		return nil, p, nil
	case l < -1:
		return nil, p, corrupt(ErrInvalidRecord, p-4, "invalid %s size %d", what, l)
	case int64(l) > int64(len(b)-p):
		return nil, p, corrupt(ErrInvalidRecord, p-4, "%s of %d bytes runs past the message end (%d left)", what, l, len(b)-p)
	}
	return b[p : p+int(l) : p+int(l)], p + int(l), nil
}

// Inner returns the messages a compressed wrapper holds, with absolute
// offsets, as Kafka's deep iteration presents them. An uncompressed
// message is its own only inner message.
//
// Offsets: magic-0 inner messages carry absolute offsets already. Magic-1
// inner offsets are relative (0..n-1) and the wrapper carries the absolute
// offset of the last one, so absolute = wrapper − lastInner + inner; a
// wrapper offset of 0 (written by old librdkafka producers) means base 0.
// For a magic-1 LogAppendTime wrapper, every inner message takes the
// wrapper's timestamp and timestamp type. CRCs are not checked.
//
// Errors (a *CorruptError): the value is null or does not decompress
// (ErrBadCodec, also for zstd, which magic 0/1 cannot carry), an inner
// message is malformed, compressed itself, has another magic than the
// wrapper, the set is empty, or a non-zero magic-1 wrapper offset is below
// the last relative offset.
func (m LegacyMessage) Inner() ([]LegacyMessage, error) {
	c := m.Codec()
	switch c {
	case CodecNone:
		return []LegacyMessage{m}, nil
	case CodecGzip, CodecSnappy, CodecLZ4:
	default:
		return nil, corrupt(ErrBadCodec, legacyAttributesOffset, "compression codec id %d is invalid for magic %d", c, m.Magic)
	}
	if m.Value == nil {
		return nil, corrupt(ErrInvalidRecord, 0, "compressed wrapper message has a null value")
	}
	src := m.Value
	if c == CodecLZ4 && m.Magic == MagicV0 {
		src = fixLZ4HeaderChecksum(src)
	}
	data, err := Decompress(c, src)
	if err != nil {
		return nil, err
	}
	var inner []LegacyMessage
	for pos := 0; pos < len(data); {
		im, err := ParseLegacy(data[pos:])
		if err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				ce.Offset += int64(pos)
				ce.Reason = "inner message: " + ce.Reason + " (offset in the decompressed value)"
			}
			return nil, err
		}
		if im.Magic != m.Magic {
			return nil, corrupt(ErrInvalidRecord, pos, "inner message magic %d does not match wrapper magic %d", im.Magic, m.Magic)
		}
		if im.Codec() != CodecNone {
			return nil, corrupt(ErrInvalidRecord, pos, "inner message is compressed (%v) inside a %v wrapper", im.Codec(), c)
		}
		inner = append(inner, im)
		pos += im.TotalSize()
	}
	if len(inner) == 0 {
		return nil, corrupt(ErrInvalidRecord, 0, "compressed wrapper message holds no inner messages")
	}
	if m.Magic == MagicV0 {
		return inner, nil
	}
	var base int64
	if m.Offset != 0 {
		last := inner[len(inner)-1].Offset
		if m.Offset < last {
			return nil, corrupt(ErrInvalidRecord, 0, "wrapper offset %d is less than the last inner offset %d and not zero", m.Offset, last)
		}
		base = m.Offset - last
	}
	logAppend := m.TimestampType() == LogAppendTime
	for i := range inner {
		inner[i].Offset += base
		if logAppend {
			inner[i].Timestamp = m.Timestamp
			inner[i].logAppend = true
		}
	}
	return inner, nil
}
