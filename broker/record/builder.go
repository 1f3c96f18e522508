package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BatchOptions are the header fields of a batch being built. The zero value
// is not "no producer": ProducerID 0 is a real producer id. Start from
// DefaultBatchOptions unless every field is meant.
type BatchOptions struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Codec                Codec
	TimestampType        TimestampType
	Transactional        bool
	Control              bool
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	// BaseTimestamp is the timestamp record deltas are relative to; 0
	// means the first appended record's timestamp, as producers do.
	BaseTimestamp int64
}

// DefaultBatchOptions is a non-idempotent, uncompressed CreateTime batch at
// offset 0: no producer id, epoch or sequence and no leader epoch.
func DefaultBatchOptions() BatchOptions {
	return BatchOptions{
		PartitionLeaderEpoch: NoPartitionLeaderEp,
		Codec:                CodecNone,
		TimestampType:        CreateTime,
		ProducerID:           NoProducerID,
		ProducerEpoch:        -1,
		BaseSequence:         NoSequence,
	}
}

// Builder accumulates records and produces one v2 batch. Records are
// encoded as they are appended, so the builder holds one buffer of
// uncompressed records; Build compresses it. A Builder is not safe for
// concurrent use; Reset lets it be reused.
type Builder struct {
	opts      BatchOptions
	records   []byte
	count     int64
	lastDelta int32
	baseTS    int64
	maxTS     int64
	err       error
}

// NewBuilder returns an empty builder for a batch with the given header.
func NewBuilder(opts BatchOptions) *Builder {
	b := new(Builder)
	b.Reset(opts)
	return b
}

// Reset empties the builder for a new batch, keeping its buffer.
func (b *Builder) Reset(opts BatchOptions) {
	*b = Builder{opts: opts, records: b.records[:0], lastDelta: -1}
}

// Len is the number of records appended so far.
func (b *Builder) Len() int { return int(b.count) }

// Append adds a record at the next offset (offset delta 0 for the first
// record, then one more than the previous). nil key, value or header value
// are written as null; a nil value is a tombstone.
func (b *Builder) Append(timestamp int64, key, value []byte, headers []Header) {
	b.AppendAt(b.lastDelta+1, timestamp, key, value, headers)
}

// AppendRecord adds r keeping its offset delta (so compacted batches can
// be rebuilt with their gaps). Its timestamp is taken as
// BatchOptions.BaseTimestamp + r.TimestampDelta: to copy records between
// batches, set BaseTimestamp to the source batch's BaseTimestamp.
func (b *Builder) AppendRecord(r Record) {
	b.AppendAt(r.OffsetDelta, b.opts.BaseTimestamp+r.TimestampDelta, r.Key, r.Value, r.Headers)
}

// AppendAt adds a record with an explicit offset delta, which must be
// greater than the previous record's. A violation is reported by Build.
func (b *Builder) AppendAt(offsetDelta int32, timestamp int64, key, value []byte, headers []Header) {
	if b.err != nil {
		return
	}
	if b.count == math.MaxInt32 {
		b.err = fmt.Errorf("record: batch already holds %d records", b.count)
		return
	}
	if offsetDelta <= b.lastDelta {
		b.err = fmt.Errorf("record: offset delta %d does not follow %d", offsetDelta, b.lastDelta)
		return
	}
	if b.count == 0 {
		b.baseTS = b.opts.BaseTimestamp
		if b.baseTS == 0 {
			b.baseTS = timestamp
		}
		b.maxTS = timestamp
	}
	b.maxTS = max(b.maxTS, timestamp)
	tsDelta := timestamp - b.baseTS

	body := 1 + varintSize(tsDelta) + varintSize(int64(offsetDelta)) +
		bytesSize(key) + bytesSize(value) + varintSize(int64(len(headers)))
	for _, h := range headers {
		body += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	if body > math.MaxInt32 {
		b.err = fmt.Errorf("record: record of %d bytes is too large", body)
		return
	}
	r := b.records
	r = binary.AppendVarint(r, int64(body))
	r = append(r, 0) // attributes: unused
	r = binary.AppendVarint(r, tsDelta)
	r = binary.AppendVarint(r, int64(offsetDelta))
	r = appendBytes(r, key)
	r = appendBytes(r, value)
	r = binary.AppendVarint(r, int64(len(headers)))
	for _, h := range headers {
		r = binary.AppendVarint(r, int64(len(h.Key)))
		r = append(r, h.Key...)
		r = appendBytes(r, h.Value)
	}
	b.records = r
	b.count++
	b.lastDelta = offsetDelta
}

func bytesSize(p []byte) int {
	if p == nil {
		return 1
	}
	return varintSize(int64(len(p))) + len(p)
}

func appendBytes(dst, p []byte) []byte {
	if p == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(p)))
	return append(dst, p...)
}

// Build returns the encoded batch: the header, then the records section
// compressed with the codec, with the CRC filled in. baseTimestamp is the
// first record's timestamp (or BatchOptions.BaseTimestamp) and
// maxTimestamp the largest record timestamp; an empty batch has both -1
// and lastOffsetDelta 0. The builder is left unchanged, so Build may be
// called again after more appends.
func (b *Builder) Build() ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.opts.Codec < CodecNone || b.opts.Codec > CodecZstd {
		return nil, corrupt(ErrBadCodec, AttributesOffset, "unknown compression codec id %d", b.opts.Codec)
	}
	out := make([]byte, RecordsOffset, RecordsOffset+len(b.records))
	out, err := Compress(b.opts.Codec, out, b.records)
	if err != nil {
		return nil, fmt.Errorf("record: compress batch: %w", err)
	}
	if len(out)-LogOverhead > math.MaxInt32 {
		return nil, corrupt(ErrBadSize, BatchLengthOffset, "batch of %d bytes is too large", len(out))
	}
	baseTS, maxTS, lastDelta := b.baseTS, b.maxTS, b.lastDelta
	if b.count == 0 {
		baseTS, maxTS, lastDelta = -1, -1, 0
	}
	attrs := uint16(b.opts.Codec)
	if b.opts.TimestampType == LogAppendTime {
		attrs |= TimestampTypeMask
	}
	if b.opts.Transactional {
		attrs |= TransactionalMask
	}
	if b.opts.Control {
		attrs |= ControlMask
	}
	be := binary.BigEndian
	be.PutUint64(out[BaseOffsetOffset:], uint64(b.opts.BaseOffset))
	be.PutUint32(out[BatchLengthOffset:], uint32(len(out)-LogOverhead))
	be.PutUint32(out[PartitionLeaderEpochOffset:], uint32(b.opts.PartitionLeaderEpoch))
	out[MagicOffset] = MagicV2
	be.PutUint16(out[AttributesOffset:], attrs)
	be.PutUint32(out[LastOffsetDeltaOffset:], uint32(lastDelta))
	be.PutUint64(out[BaseTimestampOffset:], uint64(baseTS))
	be.PutUint64(out[MaxTimestampOffset:], uint64(maxTS))
	be.PutUint64(out[ProducerIDOffset:], uint64(b.opts.ProducerID))
	be.PutUint16(out[ProducerEpochOffset:], uint16(b.opts.ProducerEpoch))
	be.PutUint32(out[BaseSequenceOffset:], uint32(b.opts.BaseSequence))
	be.PutUint32(out[RecordsCountOffset:], uint32(b.count))
	Batch(out).UpdateCRC()
	return out, nil
}

// BuildControlBatch builds the END_TXN marker batch a transaction
// coordinator's WriteTxnMarkers makes the partition leader append: one
// control record (key: version 0 + marker type, value: version 0 +
// coordinator epoch), transactional and control bits set, no compression and
// no sequence. opts supplies the offsets, leader epoch and producer id and
// epoch; its codec, flags and base sequence are overridden. marker must be
// ControlAbort or ControlCommit.
func BuildControlBatch(opts BatchOptions, timestamp int64, marker ControlType, coordinatorEpoch int32) ([]byte, error) {
	if !marker.IsTxnMarker() {
		return nil, fmt.Errorf("record: %v is not a transaction marker type", marker)
	}
	opts.Codec = CodecNone
	opts.Transactional = true
	opts.Control = true
	opts.BaseSequence = NoSequence
	b := NewBuilder(opts)
	var key [ControlKeySize]byte
	var value [EndTxnMarkerSize]byte
	b.Append(timestamp,
		AppendControlKey(key[:0], marker),
		EndTxnMarker{CoordinatorEpoch: coordinatorEpoch}.AppendTo(value[:0]),
		nil)
	return b.Build()
}
