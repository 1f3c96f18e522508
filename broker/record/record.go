package record

import (
	"errors"
	"fmt"
)

// Record is one decoded record of a v2 batch. Key and Value alias the
// batch's (or the decompressed) bytes; nil means null (a null value is a
// tombstone), an empty non-nil slice means zero-length.
type Record struct {
	// Position is the byte position of the record's length varint inside
	// the (decompressed) records section.
	Position       int
	Length         int32 // the declared length varint
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []Header
}

// Header is a record header. Value nil means null.
type Header struct {
	Key   string
	Value []byte
}

// Offset is the record's absolute offset within batch b.
func (r *Record) Offset(b Batch) int64 { return b.BaseOffset() + int64(r.OffsetDelta) }

// Timestamp is the record's timestamp within batch b: base + delta for
// CreateTime, the batch's maxTimestamp for LogAppendTime.
func (r *Record) Timestamp(b Batch) int64 {
	if b.TimestampType() == LogAppendTime {
		return b.MaxTimestamp()
	}
	return b.BaseTimestamp() + r.TimestampDelta
}

// Sequence is the record's producer sequence (baseSequence + offsetDelta,
// wrapping), or -1 when the batch carries none.
func (r *Record) Sequence(b Batch) int32 { return IncrementSequence(b.BaseSequence(), r.OffsetDelta) }

// minRecordSize is the smallest possible record body: attributes (1) and
// one byte each for timestampDelta, offsetDelta, keyLength, valueLength and
// headerCount. With the length varint a record takes at least 7 bytes.
const minRecordSize = 6

// Iterate decodes the batch's records in order and calls fn for each. A
// compressed batch is first decompressed into a fresh buffer (bounded by
// MaxDecompressedSize). It does not check the CRC; call Validate first when
// the bytes are untrusted.
//
// The *Record handed to fn is reused for the next record: copy the struct
// (rec := *r) to keep it. A copy stays valid as long as the batch bytes do
// (uncompressed batch) or indefinitely (compressed batch), since Key, Value
// and header values alias those bytes and each record gets its own Headers.
//
// Iterate checks what Kafka's reader checks: each record's body is exactly
// its declared length, the batch holds exactly NumRecords records and no
// trailing bytes, header counts are not negative and header keys not null.
// Failures are a *CorruptError wrapping ErrInvalidRecord (ErrBadCodec when
// the records cannot be decompressed, ErrBadSize for a malformed header).
// An error returned by fn stops the iteration and is returned as is.
func (b Batch) Iterate(fn func(r *Record) error) error {
	data, count, err := b.records()
	if err != nil {
		return err
	}
	return b.decodeRecords(data, count, fn)
}

// AllRecords decodes every record of the batch; see Iterate for what is
// checked and how long the records' bytes stay valid.
func (b Batch) AllRecords() ([]Record, error) {
	data, count, err := b.records()
	if err != nil {
		return nil, err
	}
	// count is attacker-controlled; the data length bounds it honestly.
	out := make([]Record, 0, min(count, len(data)/(minRecordSize+1)))
	err = b.decodeRecords(data, count, func(r *Record) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// records returns the uncompressed records section and the declared count.
func (b Batch) records() ([]byte, int, error) {
	if len(b) < BatchHeaderSize {
		return nil, 0, corrupt(ErrShortBuffer, len(b), "batch of %d bytes is shorter than the v2 header (%d)", len(b), BatchHeaderSize)
	}
	size := int64(LogOverhead) + int64(b.BatchLength())
	if size < BatchHeaderSize {
		return nil, 0, corrupt(ErrBadSize, BatchLengthOffset, "batch size %d smaller than the v2 header (%d)", size, BatchHeaderSize)
	}
	if size > int64(len(b)) {
		return nil, 0, corrupt(ErrShortBuffer, len(b), "batch declares %d bytes, only %d present", size, len(b))
	}
	count := b.NumRecords()
	if count < 0 {
		return nil, 0, corrupt(ErrBadSize, RecordsCountOffset, "negative record count %d", count)
	}
	data := []byte(b[RecordsOffset:size])
	switch c := b.Codec(); c {
	case CodecNone:
	case CodecGzip, CodecSnappy, CodecLZ4, CodecZstd:
		out, err := AppendDecompressed(c, nil, data)
		if err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				ce.Offset = RecordsOffset
			}
			return nil, 0, err
		}
		data = out
	default:
		return nil, 0, corrupt(ErrBadCodec, AttributesOffset, "unknown compression codec id %d", c)
	}
	return data, int(count), nil
}

// decodeRecords walks count records in data (the records section).
func (b Batch) decodeRecords(data []byte, count int, fn func(r *Record) error) error {
	// Errors in an uncompressed batch point at the batch byte; in a
	// compressed one only the decompressed position means anything, so it
	// is reported relative to the records section and said so.
	base, where := RecordsOffset, ""
	if b.Codec() != CodecNone {
		base, where = 0, " of the decompressed records"
	}
	var (
		r    Record
		slab []Header // headers of several records share one allocation
		pos  int
	)
	for i := 0; i < count; i++ {
		if pos >= len(data) {
			return corrupt(ErrInvalidRecord, base+pos, "incorrect declared batch size: %d records declared, only %d present%s", count, i, where)
		}
		n, err := decodeRecord(data, pos, &r, &slab, count-i)
		if err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				ce.Offset += int64(base)
				ce.Reason = fmt.Sprintf("record %d: %s%s", i, ce.Reason, where)
			}
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
		pos += n
	}
	if pos != len(data) {
		return corrupt(ErrInvalidRecord, base+pos, "incorrect declared batch size: %d bytes left after %d records%s", len(data)-pos, count, where)
	}
	return nil
}

// decodeRecord decodes the record at data[pos:] into r and returns its
// total size including the length varint. Error offsets are positions in
// data. Every length is checked against the bytes that remain before it is
// used, so no corrupt length can cause a large allocation or a panic.
func decodeRecord(data []byte, pos int, r *Record, slab *[]Header, recordsLeft int) (int, error) {
	length, n := varint(data, pos)
	if n <= 0 {
		return 0, badVarint(pos, n, "record length")
	}
	if length < minRecordSize {
		return 0, corrupt(ErrInvalidRecord, pos, "invalid record size %d (minimum %d)", length, minRecordSize)
	}
	start := pos + n
	if int(length) > len(data)-start {
		return 0, corrupt(ErrInvalidRecord, pos, "invalid record size: expected %d bytes in record payload, but only %d remain", length, len(data)-start)
	}
	end := start + int(length)
	body := data[:end] // reads past the record's end fail as truncation
	p := start

	// Fields are set one by one: assigning a whole Record literal costs a
	// bulk write barrier per record while the GC runs.
	r.Position, r.Length, r.Attributes = pos, length, int8(body[p])
	r.Headers = nil
	p++
	if r.TimestampDelta, n = varlong(body, p); n <= 0 {
		return 0, badVarint(p, n, "timestamp delta")
	}
	p += n
	if r.OffsetDelta, n = varint(body, p); n <= 0 {
		return 0, badVarint(p, n, "offset delta")
	}
	p += n
	var err error
	if r.Key, p, err = readBytes(body, p, "key"); err != nil {
		return 0, err
	}
	if r.Value, p, err = readBytes(body, p, "value"); err != nil {
		return 0, err
	}
	hc, n := varint(body, p)
	if n <= 0 {
		return 0, badVarint(p, n, "header count")
	}
	if hc < 0 {
		return 0, corrupt(ErrInvalidRecord, p, "invalid negative header count %d", hc)
	}
	p += n
	// Each header takes at least two bytes (two length varints).
	if int(hc) > (end-p)/2 {
		return 0, corrupt(ErrInvalidRecord, p, "header count %d cannot fit in the %d bytes left in the record", hc, end-p)
	}
	if hc > 0 {
		if cap(*slab)-len(*slab) < int(hc) {
			// Guess that the records left look like this one, so a batch
			// usually needs one allocation for all its headers; the guess is
			// bounded by what the remaining bytes could hold.
			guess := min(int(hc)*max(recordsLeft, 1), (len(data)-p)/2, 4096)
			*slab = make([]Header, 0, max(int(hc), guess))
		}
		s := *slab
		r.Headers = s[len(s) : len(s)+int(hc) : len(s)+int(hc)]
		*slab = s[:len(s)+int(hc)]
		for i := range r.Headers {
			kl, n := varint(body, p)
			if n <= 0 {
				return 0, badVarint(p, n, "header key length")
			}
			if kl < 0 {
				return 0, corrupt(ErrInvalidRecord, p, "invalid negative header key size %d", kl)
			}
			p += n
			if int(kl) > end-p {
				return 0, corrupt(ErrInvalidRecord, p, "header key of %d bytes runs past the record end (%d left)", kl, end-p)
			}
			r.Headers[i].Key = string(body[p : p+int(kl)])
			p += int(kl)
			if r.Headers[i].Value, p, err = readBytes(body, p, "header value"); err != nil {
				return 0, err
			}
		}
	}
	if p != end {
		return 0, corrupt(ErrInvalidRecord, pos, "invalid record size: expected to read %d bytes in record payload, but %d bytes remain", length, end-p)
	}
	return end - pos, nil
}

// readBytes reads a varint length (-1 = null) and that many bytes from
// b[p:], returning the bytes (nil for null, non-nil for empty) and the new
// position.
func readBytes(b []byte, p int, what string) ([]byte, int, error) {
	l, n := varint(b, p)
	if n <= 0 {
		return nil, p, badVarint(p, n, what+" length")
	}
	p += n
	switch {
	case l == -1:
		return nil, p, nil
	case l < -1:
		return nil, p, corrupt(ErrInvalidRecord, p-n, "invalid %s size %d", what, l)
	case int(l) > len(b)-p:
		return nil, p, corrupt(ErrInvalidRecord, p-n, "%s of %d bytes runs past the record end (%d left)", what, l, len(b)-p)
	}
	return b[p : p+int(l) : p+int(l)], p + int(l), nil
}

func badVarint(off, n int, what string) error {
	if n == 0 {
		return corrupt(ErrInvalidRecord, off, "%s varint runs past the record end", what)
	}
	return corrupt(ErrInvalidRecord, off, "%s varint is too long", what)
}
