package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrBadRecord: a __transaction_state key or value that does not decode.
var ErrBadRecord = errors.New("txn: bad __transaction_state record")

// ErrUnknownKey: a __transaction_state key of a version this coordinator
// does not know. Kafka logs it and skips the record ("a left over from an
// aborted upgrade").
var ErrUnknownKey = errors.New("txn: unknown __transaction_state key version")

// KeyVersion is the only TransactionLogKey version.
const KeyVersion = 0

// Value versions of TransactionLogValue. Kafka writes version 0 unless the
// transaction.version feature is at least 1 (KRaft only), then version 1.
const (
	ValueVersion0 = 0
	ValueVersion1 = 1 // flexible: compact strings and arrays, tagged fields
)

// Key is a TransactionLogKey: version 0 and the transactional id.
//
//	key: version int16 (0) | transactional_id string
func AppendKey(b []byte, transactionalID string) []byte {
	b = binary.BigEndian.AppendUint16(b, KeyVersion)
	return appendString(b, transactionalID)
}

// ParseKey decodes a key and returns its transactional id. A version other
// than 0 is ErrUnknownKey (the record should be skipped, as Kafka does).
func ParseKey(b []byte) (string, error) {
	d := decoder{b: b}
	v := d.i16()
	if d.err != nil {
		return "", fmt.Errorf("key: %w", d.err)
	}
	if v != KeyVersion {
		return "", fmt.Errorf("%w %d", ErrUnknownKey, v)
	}
	id := d.str()
	return id, d.done("key")
}

// TopicPartitions is one TransactionLogValue.PartitionsSchema entry.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// Value is a TransactionLogValue (versions 0 and 1).
//
//	v0: version int16 | producer_id int64 | producer_epoch int16 |
//	    transaction_timeout_ms int32 | transaction_status int8 |
//	    transaction_partitions [topic string | partition_ids [int32]]? |
//	    transaction_last_update_timestamp_ms int64 |
//	    transaction_start_timestamp_ms int64
//	v1: the same fields, flexible (compact strings and arrays, a tag
//	    buffer after each struct), with tagged fields
//	    0 previous_producer_id int64 (default -1),
//	    1 next_producer_id int64 (default -1),
//	    2 client_transaction_version int16 (default 0).
//
// Partitions is nil when the array is null (Kafka writes null for Empty).
type Value struct {
	Version                  int16
	ProducerID               int64
	PreviousProducerID       int64 // v1 tag 0; -1: none
	NextProducerID           int64 // v1 tag 1; -1: none
	ProducerEpoch            int16
	TimeoutMs                int32
	State                    State // transaction_status
	Partitions               []TopicPartitions
	LastUpdateTimestampMs    int64
	StartTimestampMs         int64
	ClientTransactionVersion int16 // v1 tag 2
}

// AppendTo appends the encoded value in v.Version (0 or 1).
func (v Value) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(v.Version))
	flexible := v.Version >= ValueVersion1
	b = binary.BigEndian.AppendUint64(b, uint64(v.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(v.ProducerEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.TimeoutMs))
	b = append(b, byte(v.State))
	switch {
	case v.Partitions == nil && flexible:
		b = binary.AppendUvarint(b, 0)
	case v.Partitions == nil:
		b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	case flexible:
		b = binary.AppendUvarint(b, uint64(len(v.Partitions))+1)
	default:
		b = binary.BigEndian.AppendUint32(b, uint32(len(v.Partitions)))
	}
	for _, tp := range v.Partitions {
		if flexible {
			b = binary.AppendUvarint(b, uint64(len(tp.Topic))+1)
			b = append(b, tp.Topic...)
			b = binary.AppendUvarint(b, uint64(len(tp.Partitions))+1)
		} else {
			b = appendString(b, tp.Topic)
			b = binary.BigEndian.AppendUint32(b, uint32(len(tp.Partitions)))
		}
		for _, p := range tp.Partitions {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
		if flexible {
			b = append(b, 0) // no tagged fields in PartitionsSchema
		}
	}
	b = binary.BigEndian.AppendUint64(b, uint64(v.LastUpdateTimestampMs))
	b = binary.BigEndian.AppendUint64(b, uint64(v.StartTimestampMs))
	if flexible {
		var n uint64
		if v.PreviousProducerID != NoProducerID {
			n++
		}
		if v.NextProducerID != NoProducerID {
			n++
		}
		if v.ClientTransactionVersion != 0 {
			n++
		}
		b = binary.AppendUvarint(b, n)
		if v.PreviousProducerID != NoProducerID {
			b = append(b, 0, 8)
			b = binary.BigEndian.AppendUint64(b, uint64(v.PreviousProducerID))
		}
		if v.NextProducerID != NoProducerID {
			b = append(b, 1, 8)
			b = binary.BigEndian.AppendUint64(b, uint64(v.NextProducerID))
		}
		if v.ClientTransactionVersion != 0 {
			b = append(b, 2, 2)
			b = binary.BigEndian.AppendUint16(b, uint16(v.ClientTransactionVersion))
		}
	}
	return b
}

// ParseValue decodes a value. A nil value is a tombstone and is not passed
// here. Unknown tagged fields of v1 are skipped.
func ParseValue(b []byte) (Value, error) {
	d := decoder{b: b}
	v := Value{Version: d.i16(), PreviousProducerID: NoProducerID, NextProducerID: NoProducerID}
	if d.err != nil {
		return v, fmt.Errorf("value: %w", d.err)
	}
	if v.Version != ValueVersion0 && v.Version != ValueVersion1 {
		return v, fmt.Errorf("%w: value version %d", ErrBadRecord, v.Version)
	}
	flexible := v.Version == ValueVersion1
	v.ProducerID = d.i64()
	v.ProducerEpoch = d.i16()
	v.TimeoutMs = d.i32()
	status := d.i8()
	if d.err == nil && (status < int8(Empty) || status > int8(PrepareEpochFence)) {
		return v, fmt.Errorf("%w: unknown transaction status %d", ErrBadRecord, status)
	}
	v.State = State(status)
	n := d.arrayLen(flexible, 2)
	if n >= 0 {
		v.Partitions = make([]TopicPartitions, 0, n)
	}
	for range max(n, 0) {
		var tp TopicPartitions
		tp.Topic = d.string(flexible)
		m := d.arrayLen(flexible, 4)
		if d.err == nil && m < 0 {
			d.err = fmt.Errorf("%w: null partition_ids", ErrBadRecord)
		}
		for range max(m, 0) {
			tp.Partitions = append(tp.Partitions, d.i32())
		}
		if flexible {
			d.tags(nil)
		}
		if d.err != nil {
			break
		}
		v.Partitions = append(v.Partitions, tp)
	}
	v.LastUpdateTimestampMs = d.i64()
	v.StartTimestampMs = d.i64()
	if flexible {
		d.tags(func(tag uint64, p []byte) error {
			switch tag {
			case 0, 1:
				if len(p) != 8 {
					return fmt.Errorf("%w: tag %d has %d bytes, want 8", ErrBadRecord, tag, len(p))
				}
				id := int64(binary.BigEndian.Uint64(p))
				if tag == 0 {
					v.PreviousProducerID = id
				} else {
					v.NextProducerID = id
				}
			case 2:
				if len(p) != 2 {
					return fmt.Errorf("%w: tag 2 has %d bytes, want 2", ErrBadRecord, len(p))
				}
				v.ClientTransactionVersion = int16(binary.BigEndian.Uint16(p))
			}
			return nil
		})
	}
	return v, d.done("value")
}

// TopicPartitionSet is the value's partitions as a sorted set.
func (v Value) TopicPartitionSet() []TopicPartition {
	var out []TopicPartition
	for _, tp := range v.Partitions {
		for _, p := range tp.Partitions {
			out = append(out, TopicPartition{tp.Topic, p})
		}
	}
	return sortPartitions(out)
}

// groupPartitions is a sorted partition set as PartitionsSchema entries.
func groupPartitions(set []TopicPartition) []TopicPartitions {
	out := []TopicPartitions{}
	for _, tp := range set {
		if n := len(out); n > 0 && out[n-1].Topic == tp.Topic {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		out = append(out, TopicPartitions{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	return out
}

// ValueOf is the value Kafka writes for a transition (TransactionLog's
// valueToBytes): partitions null when the new state is Empty. version is
// ValueVersion0 unless transaction.version >= 1.
func ValueOf(t TransitMetadata, version int16) Value {
	v := Value{
		Version:                  version,
		ProducerID:               t.ProducerID,
		PreviousProducerID:       NoProducerID,
		NextProducerID:           NoProducerID,
		ProducerEpoch:            t.ProducerEpoch,
		TimeoutMs:                t.TimeoutMs,
		State:                    t.State,
		LastUpdateTimestampMs:    t.LastUpdateMs,
		StartTimestampMs:         t.StartMs,
		ClientTransactionVersion: t.ClientTransactionVersion,
	}
	if version >= ValueVersion1 {
		v.PreviousProducerID = t.PreviousProducerID
		v.NextProducerID = t.NextProducerID
	}
	if t.State != Empty {
		v.Partitions = groupPartitions(t.Partitions)
	}
	return v
}

// Record is the key and value of the __transaction_state record for a
// transition; the value is nil (a tombstone) when the new state is Dead.
func Record(transactionalID string, t TransitMetadata, version int16) (key, value []byte) {
	key = AppendKey(nil, transactionalID)
	if t.State == Dead {
		return key, nil
	}
	return key, ValueOf(t, version).AppendTo(nil)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// decoder reads big-endian fields and remembers the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) need(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b) < n {
		d.err = fmt.Errorf("%w: short buffer (%d bytes left, %d needed)", ErrBadRecord, len(d.b), n)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) i8() int8 {
	if p := d.need(1); p != nil {
		return int8(p[0])
	}
	return 0
}

func (d *decoder) i16() int16 {
	if p := d.need(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (d *decoder) i32() int32 {
	if p := d.need(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (d *decoder) i64() int64 {
	if p := d.need(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	u, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint", ErrBadRecord)
		return 0
	}
	d.b = d.b[n:]
	return u
}

// string reads a non-null string, int16-length or compact.
func (d *decoder) string(compact bool) string {
	var n int
	if compact {
		u := d.uvarint()
		if d.err == nil && (u == 0 || u-1 > uint64(len(d.b))) {
			d.err = fmt.Errorf("%w: compact string length %d with %d bytes left", ErrBadRecord, int64(u)-1, len(d.b))
		}
		n = int(u) - 1
	} else {
		n = int(d.i16())
		if d.err == nil && n < 0 {
			d.err = fmt.Errorf("%w: null string", ErrBadRecord)
		}
	}
	return string(d.need(n))
}

func (d *decoder) str() string { return d.string(false) }

// arrayLen reads an array length, -1 for null. Each element takes at
// least minSize bytes, so a length that cannot fit is an error (no huge
// allocations from a bad record).
func (d *decoder) arrayLen(compact bool, minSize int) int {
	var n int64
	if compact {
		n = int64(d.uvarint()) - 1
		if d.err == nil && n < -1 {
			n = int64(len(d.b)) + 1 // varint overflow: too long
		}
	} else {
		n = int64(d.i32())
	}
	if d.err != nil {
		return -1
	}
	if n < -1 || n > int64(len(d.b)/minSize) {
		d.err = fmt.Errorf("%w: array of %d with %d bytes left", ErrBadRecord, n, len(d.b))
		return -1
	}
	return int(n)
}

// tags reads a tag buffer, calling f (if not nil) for each field.
func (d *decoder) tags(f func(tag uint64, p []byte) error) {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: %d tagged fields with %d bytes left", ErrBadRecord, n, len(d.b))
	}
	for range n {
		tag := d.uvarint()
		size := d.uvarint()
		if d.err == nil && size > uint64(len(d.b)) {
			d.err = fmt.Errorf("%w: tagged field %d of %d bytes with %d left", ErrBadRecord, tag, size, len(d.b))
		}
		p := d.need(int(size))
		if d.err != nil {
			return
		}
		if f != nil {
			if err := f(tag, p); err != nil {
				d.err = err
				return
			}
		}
	}
}

func (d *decoder) done(what string) error {
	if d.err != nil {
		return fmt.Errorf("%s: %w", what, d.err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %s has %d trailing bytes", ErrBadRecord, what, len(d.b))
	}
	return nil
}

// PartitionFor is the __transaction_state partition of a transactional
// id: Utils.abs(id.hashCode()) % partitions, where Java's String.hashCode
// runs over UTF-16 code units with int32 overflow and Utils.abs(MinInt32)
// is 0.
func PartitionFor(transactionalID string, partitions int) int32 {
	var h int32
	for _, r := range transactionalID {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10))
			h = 31*h + int32(0xdc00+(r&0x3ff))
			continue
		}
		// An invalid UTF-8 byte decodes as U+FFFD, as Java's decoder
		// of the request's string would.
		h = 31*h + r
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(partitions)
}

// sortPartitions sorts and dedups a partition set in place.
func sortPartitions(s []TopicPartition) []TopicPartition {
	slices.SortFunc(s, TopicPartition.compare)
	return slices.Compact(s)
}
