package record

import (
	"encoding/binary"
	"hash/crc32"
)

// Layout constants of a RecordBatch v2 (magic 2) header. See doc.go.
const (
	BaseOffsetOffset           = 0
	BatchLengthOffset          = 8
	PartitionLeaderEpochOffset = 12
	MagicOffset                = 16
	CRCOffset                  = 17
	AttributesOffset           = 21
	LastOffsetDeltaOffset      = 23
	BaseTimestampOffset        = 27
	MaxTimestampOffset         = 35
	ProducerIDOffset           = 43
	ProducerEpochOffset        = 51
	BaseSequenceOffset         = 53
	RecordsCountOffset         = 57
	RecordsOffset              = 61

	// LogOverhead is the offset + size prefix every batch of every magic has.
	LogOverhead = 12
	// BatchHeaderSize is RECORD_BATCH_OVERHEAD: the smallest legal v2 batch.
	BatchHeaderSize = RecordsOffset
	// HeaderPrefixSize is how many bytes are needed to know a batch's magic
	// and total size, whatever its magic.
	HeaderPrefixSize = MagicOffset + 1
	// MinMessageOverhead is the smallest size field Kafka's file iterator
	// accepts (LegacyRecord.RECORD_OVERHEAD_V0).
	MinMessageOverhead = 14
)

// Attribute bits (low byte of the int16 attributes).
const (
	CodecMask           = 0x07
	TimestampTypeMask   = 0x08
	TransactionalMask   = 0x10
	ControlMask         = 0x20
	DeleteHorizonMask   = 0x40
	MagicV0             = 0
	MagicV1             = 1
	MagicV2             = 2
	NoProducerID        = -1
	NoSequence          = -1
	NoPartitionLeaderEp = -1
)

// Codec is the compression codec in the low three attribute bits.
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String returns the lower-case name Kafka's tools print (compresscodec: …).
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "unknown"
}

// TimestampType of a batch.
type TimestampType int8

const (
	NoTimestampType TimestampType = -1
	CreateTime      TimestampType = 0
	LogAppendTime   TimestampType = 1
)

// String returns Kafka's name for the type, as printed by the dump tool.
func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTime:
		return "LogAppendTime"
	}
	return "NoTimestampType"
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b, the checksum v2 batches carry.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Batch is a read-only view over the bytes of one RecordBatch v2. It does
// not copy: the accessors read from the underlying slice, so a Batch is only
// valid as long as those bytes are. The setters write in place.
type Batch []byte

// PeekSize reports the total on-disk size (LogOverhead + size field) and the
// magic of the batch or legacy message starting at b. It needs
// HeaderPrefixSize bytes; with fewer it returns ErrShortBuffer.
func PeekSize(b []byte) (size int, magic int8, err error) {
	if len(b) < HeaderPrefixSize {
		return 0, 0, corrupt(ErrShortBuffer, len(b), "need %d bytes for a batch header prefix, have %d", HeaderPrefixSize, len(b))
	}
	n := int32(binary.BigEndian.Uint32(b[BatchLengthOffset:]))
	if n < MinMessageOverhead {
		return 0, 0, corrupt(ErrBadSize, BatchLengthOffset, "record size %d smaller than minimum record overhead (%d)", n, MinMessageOverhead)
	}
	return LogOverhead + int(n), int8(b[MagicOffset]), nil
}

// ParseBatch checks that b begins with a structurally sound v2 batch header
// and returns a view of exactly that batch (b may hold more bytes after it).
// It checks length, magic, count vs lastOffsetDelta and the codec, but not
// the CRC: call Validate for the full check. Records are not decoded.
func ParseBatch(b []byte) (Batch, error) {
	size, magic, err := PeekSize(b)
	if err != nil {
		return nil, err
	}
	if magic != MagicV2 {
		return nil, corrupt(ErrBadMagic, MagicOffset, "magic %d is not 2", magic)
	}
	if size < BatchHeaderSize {
		return nil, corrupt(ErrBadSize, BatchLengthOffset, "batch size %d smaller than the v2 header (%d)", size, BatchHeaderSize)
	}
	if len(b) < size {
		return nil, corrupt(ErrShortBuffer, len(b), "batch declares %d bytes, only %d present", size, len(b))
	}
	bt := Batch(b[:size:size])
	if c := bt.Codec(); c > CodecZstd {
		return nil, corrupt(ErrBadCodec, AttributesOffset, "unknown compression codec id %d", c)
	}
	count, delta := bt.NumRecords(), bt.LastOffsetDelta()
	if count < 0 {
		return nil, corrupt(ErrBadSize, RecordsCountOffset, "negative record count %d", count)
	}
	if delta < 0 {
		return nil, corrupt(ErrBadSize, LastOffsetDeltaOffset, "negative lastOffsetDelta %d", delta)
	}
	// Compaction may remove records but keeps lastOffsetDelta, so count can be
	// smaller than delta+1; it can never be larger.
	if count > 0 && int64(count) > int64(delta)+1 {
		return nil, corrupt(ErrBadSize, RecordsCountOffset, "record count %d exceeds lastOffsetDelta %d + 1", count, delta)
	}
	// Each record takes at least 7 bytes uncompressed (length, attributes,
	// timestampDelta, offsetDelta, keyLength, valueLength, headerCount).
	if bt.Codec() == CodecNone && int64(count)*7 > int64(size-RecordsOffset) {
		return nil, corrupt(ErrBadSize, RecordsCountOffset, "record count %d cannot fit in %d bytes", count, size-RecordsOffset)
	}
	return bt, nil
}

// Validate is ParseBatch followed by the CRC-32C check.
func Validate(b []byte) (Batch, error) {
	bt, err := ParseBatch(b)
	if err != nil {
		return nil, err
	}
	if got, want := bt.ComputeCRC(), bt.CRC(); got != want {
		return nil, corrupt(ErrBadCRC, CRCOffset, "stored crc %d, computed %d", want, got)
	}
	return bt, nil
}

func (b Batch) i16(off int) int16 { return int16(binary.BigEndian.Uint16(b[off:])) }
func (b Batch) i32(off int) int32 { return int32(binary.BigEndian.Uint32(b[off:])) }
func (b Batch) i64(off int) int64 { return int64(binary.BigEndian.Uint64(b[off:])) }

// Size is the total number of bytes of the batch (12 + batchLength).
func (b Batch) Size() int                   { return LogOverhead + int(b.i32(BatchLengthOffset)) }
func (b Batch) BaseOffset() int64           { return b.i64(BaseOffsetOffset) }
func (b Batch) BatchLength() int32          { return b.i32(BatchLengthOffset) }
func (b Batch) PartitionLeaderEpoch() int32 { return b.i32(PartitionLeaderEpochOffset) }
func (b Batch) Magic() int8                 { return int8(b[MagicOffset]) }
func (b Batch) CRC() uint32                 { return binary.BigEndian.Uint32(b[CRCOffset:]) }
func (b Batch) Attributes() int16           { return b.i16(AttributesOffset) }
func (b Batch) LastOffsetDelta() int32      { return b.i32(LastOffsetDeltaOffset) }
func (b Batch) LastOffset() int64           { return b.BaseOffset() + int64(b.LastOffsetDelta()) }
func (b Batch) NextOffset() int64           { return b.LastOffset() + 1 }
func (b Batch) BaseTimestamp() int64        { return b.i64(BaseTimestampOffset) }
func (b Batch) MaxTimestamp() int64         { return b.i64(MaxTimestampOffset) }
func (b Batch) ProducerID() int64           { return b.i64(ProducerIDOffset) }
func (b Batch) ProducerEpoch() int16        { return b.i16(ProducerEpochOffset) }
func (b Batch) BaseSequence() int32         { return b.i32(BaseSequenceOffset) }
func (b Batch) NumRecords() int32           { return b.i32(RecordsCountOffset) }
func (b Batch) Codec() Codec                { return Codec(b.Attributes() & CodecMask) }
func (b Batch) IsTransactional() bool       { return b.Attributes()&TransactionalMask != 0 }
func (b Batch) IsControl() bool             { return b.Attributes()&ControlMask != 0 }
func (b Batch) HasDeleteHorizon() bool      { return b.Attributes()&DeleteHorizonMask != 0 }

// TimestampType is LogAppendTime when attribute bit 3 is set.
func (b Batch) TimestampType() TimestampType {
	if b.Attributes()&TimestampTypeMask != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// DeleteHorizonMs returns the cleaner's delete horizon, which is stored in
// baseTimestamp when the attribute bit is set.
func (b Batch) DeleteHorizonMs() (int64, bool) {
	if !b.HasDeleteHorizon() {
		return 0, false
	}
	return b.BaseTimestamp(), true
}

// LastSequence is baseSequence + lastOffsetDelta, wrapping at int32 max to 0
// as Kafka does; -1 when the batch has no sequence.
func (b Batch) LastSequence() int32 {
	return IncrementSequence(b.BaseSequence(), b.LastOffsetDelta())
}

// IncrementSequence adds delta to a producer sequence with Kafka's wrap rule
// (past MaxInt32 it continues from 0). A negative base means "no sequence".
func IncrementSequence(base, delta int32) int32 {
	if base < 0 {
		return NoSequence
	}
	if base > (1<<31-1)-delta {
		return delta - ((1<<31 - 1) - base) - 1
	}
	return base + delta
}

// ComputeCRC returns the CRC-32C of the bytes the crc field covers.
func (b Batch) ComputeCRC() uint32 { return Checksum(b[AttributesOffset:]) }

// RecordBytes returns the (possibly compressed) record bytes after the header.
func (b Batch) RecordBytes() []byte { return b[RecordsOffset:] }

// SetBaseOffset rewrites baseOffset in place. It lies outside the CRC, so
// the broker assigns offsets without re-checksumming.
func (b Batch) SetBaseOffset(off int64) {
	binary.BigEndian.PutUint64(b[BaseOffsetOffset:], uint64(off))
}

// SetPartitionLeaderEpoch rewrites partitionLeaderEpoch in place (outside
// the CRC).
func (b Batch) SetPartitionLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(b[PartitionLeaderEpochOffset:], uint32(epoch))
}

// SetLogAppendTime sets the timestamp type to LogAppendTime and maxTimestamp
// to ts, then recomputes the CRC, since both fields are covered by it.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := uint16(b.Attributes()) | TimestampTypeMask
	binary.BigEndian.PutUint16(b[AttributesOffset:], attrs)
	binary.BigEndian.PutUint64(b[MaxTimestampOffset:], uint64(ts))
	b.UpdateCRC()
}

// UpdateCRC recomputes and stores the CRC after a change to covered bytes.
func (b Batch) UpdateCRC() {
	binary.BigEndian.PutUint32(b[CRCOffset:], b.ComputeCRC())
}
