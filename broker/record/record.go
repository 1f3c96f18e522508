package record

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
