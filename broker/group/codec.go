package group

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadRecord: a __consumer_offsets key or value that does not decode.
var ErrBadRecord = errors.New("group: bad __consumer_offsets record")

// Key versions of __consumer_offsets records (reference §7).
const (
	KeyVersionOffsetV0 = 0
	KeyVersionOffset   = 1 // what Kafka writes for an OffsetCommit key
	KeyVersionGroup    = 2
)

// Key is the key of a __consumer_offsets record: an OffsetCommit key
// (versions 0 and 1: group, topic, partition) or a GroupMetadata key
// (version 2: group). Later versions (KIP-848 records) are not parsed.
type Key struct {
	Version   int16
	Group     string
	Topic     string
	Partition int32
}

// IsOffset reports whether k is an OffsetCommit key.
func (k Key) IsOffset() bool { return k.Version == KeyVersionOffsetV0 || k.Version == KeyVersionOffset }

// IsGroup reports whether k is a GroupMetadata key.
func (k Key) IsGroup() bool { return k.Version == KeyVersionGroup }

// OffsetKey is the key Kafka writes for a committed offset.
func OffsetKey(group, topic string, partition int32) Key {
	return Key{Version: KeyVersionOffset, Group: group, Topic: topic, Partition: partition}
}

// GroupKey is the key of a group's metadata.
func GroupKey(group string) Key { return Key{Version: KeyVersionGroup, Group: group} }

// AppendTo appends the encoded key.
func (k Key) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(k.Version))
	b = appendString(b, k.Group)
	if k.IsOffset() {
		b = appendString(b, k.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(k.Partition))
	}
	return b
}

// ParseKey decodes a key. A version above 2 is returned with only its
// version set and no error, so that loaders can skip it.
func ParseKey(b []byte) (Key, error) {
	d := decoder{b: b}
	k := Key{Version: d.i16()}
	switch {
	case k.IsOffset():
		k.Group, k.Topic, k.Partition = d.str(), d.str(), d.i32()
	case k.IsGroup():
		k.Group = d.str()
	default:
		return k, nil
	}
	return k, d.done("key")
}

// OffsetValue is the value of an OffsetCommit record (versions 0-3).
type OffsetValue struct {
	Version         int16
	Offset          int64
	LeaderEpoch     int32 // v3; -1: none
	Metadata        string
	CommitTimestamp int64
	ExpireTimestamp int64 // v1 only; -1: none
}

// AppendTo appends the encoded value.
func (v OffsetValue) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(v.Version))
	b = binary.BigEndian.AppendUint64(b, uint64(v.Offset))
	if v.Version >= 3 {
		b = binary.BigEndian.AppendUint32(b, uint32(v.LeaderEpoch))
	}
	b = appendString(b, v.Metadata)
	b = binary.BigEndian.AppendUint64(b, uint64(v.CommitTimestamp))
	if v.Version == 1 {
		b = binary.BigEndian.AppendUint64(b, uint64(v.ExpireTimestamp))
	}
	return b
}

// ParseOffsetValue decodes an OffsetCommit value.
func ParseOffsetValue(b []byte) (OffsetValue, error) {
	d := decoder{b: b}
	v := OffsetValue{Version: d.i16(), LeaderEpoch: -1, ExpireTimestamp: -1}
	if d.err == nil && (v.Version < 0 || v.Version > 3) {
		return v, fmt.Errorf("%w: offset value version %d", ErrBadRecord, v.Version)
	}
	v.Offset = d.i64()
	if v.Version >= 3 {
		v.LeaderEpoch = d.i32()
	}
	v.Metadata = d.str()
	v.CommitTimestamp = d.i64()
	if v.Version == 1 {
		v.ExpireTimestamp = d.i64()
	}
	return v, d.done("offset value")
}

// GroupValue is the value of a GroupMetadata record (versions 0-3).
type GroupValue struct {
	Version               int16
	ProtocolType          string
	Generation            int32
	Protocol              *string
	Leader                *string
	CurrentStateTimestamp int64 // v2+; -1: none
	Members               []MemberValue
}

// MemberValue is one member in a GroupMetadata value.
type MemberValue struct {
	MemberID         string
	GroupInstanceID  *string // v3+
	ClientID         string
	ClientHost       string
	RebalanceTimeout int32 // v1+
	SessionTimeout   int32
	Subscription     []byte
	Assignment       []byte
}

// AppendTo appends the encoded value.
func (v GroupValue) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(v.Version))
	b = appendString(b, v.ProtocolType)
	b = binary.BigEndian.AppendUint32(b, uint32(v.Generation))
	b = appendNullableString(b, v.Protocol)
	b = appendNullableString(b, v.Leader)
	if v.Version >= 2 {
		b = binary.BigEndian.AppendUint64(b, uint64(v.CurrentStateTimestamp))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v.Members)))
	for _, m := range v.Members {
		b = appendString(b, m.MemberID)
		if v.Version >= 3 {
			b = appendNullableString(b, m.GroupInstanceID)
		}
		b = appendString(b, m.ClientID)
		b = appendString(b, m.ClientHost)
		if v.Version >= 1 {
			b = binary.BigEndian.AppendUint32(b, uint32(m.RebalanceTimeout))
		}
		b = binary.BigEndian.AppendUint32(b, uint32(m.SessionTimeout))
		b = appendBytes(b, m.Subscription)
		b = appendBytes(b, m.Assignment)
	}
	return b
}

// ParseGroupValue decodes a GroupMetadata value.
func ParseGroupValue(b []byte) (GroupValue, error) {
	d := decoder{b: b}
	v := GroupValue{Version: d.i16(), CurrentStateTimestamp: -1}
	if d.err == nil && (v.Version < 0 || v.Version > 3) {
		return v, fmt.Errorf("%w: group value version %d", ErrBadRecord, v.Version)
	}
	v.ProtocolType = d.str()
	v.Generation = d.i32()
	v.Protocol = d.nstr()
	v.Leader = d.nstr()
	if v.Version >= 2 {
		v.CurrentStateTimestamp = d.i64()
	}
	n := d.i32()
	if d.err == nil && (n < 0 || int(n) > len(d.b)) {
		return v, fmt.Errorf("%w: %d members", ErrBadRecord, n)
	}
	for range n {
		var m MemberValue
		m.MemberID = d.str()
		if v.Version >= 3 {
			m.GroupInstanceID = d.nstr()
		}
		m.ClientID = d.str()
		m.ClientHost = d.str()
		m.RebalanceTimeout = -1
		if v.Version >= 1 {
			m.RebalanceTimeout = d.i32()
		}
		m.SessionTimeout = d.i32()
		m.Subscription = d.bytes()
		m.Assignment = d.bytes()
		if d.err != nil {
			break
		}
		if v.Version < 1 {
			m.RebalanceTimeout = m.SessionTimeout
		}
		v.Members = append(v.Members, m)
	}
	return v, d.done("group value")
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return binary.BigEndian.AppendUint16(b, 0xffff)
	}
	return appendString(b, *s)
}

func appendBytes(b, p []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	return append(b, p...)
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
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: short buffer (%d bytes left, %d needed)", ErrBadRecord, len(d.b), n)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
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

func (d *decoder) str() string {
	s := d.nstr()
	if s == nil {
		if d.err == nil {
			d.err = fmt.Errorf("%w: null string", ErrBadRecord)
		}
		return ""
	}
	return *s
}

func (d *decoder) nstr() *string {
	n := d.i16()
	if d.err != nil || n < 0 {
		return nil
	}
	s := string(d.need(int(n)))
	if d.err != nil {
		return nil
	}
	return &s
}

func (d *decoder) bytes() []byte {
	n := d.i32()
	if d.err != nil {
		return nil
	}
	if n < 0 {
		return nil
	}
	return append([]byte{}, d.need(int(n))...)
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

// PartitionFor is the __consumer_offsets partition of a group:
// abs(javaStringHashCode(group)) % partitions, with abs(MinInt32) = 0 as
// Kafka's Utils.abs has it.
func PartitionFor(group string, partitions int) int32 {
	var h int32
	for _, r := range utf16Units(group) {
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(partitions)
}

// utf16Units is s as Java's String.charAt sees it.
func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}
