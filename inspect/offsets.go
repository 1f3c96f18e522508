package inspect

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// The __consumer_offsets decoder of --offsets-decoder, in the shape Kafka
// 3.8+ prints (GroupCoordinatorRecordSerde + the generated JSON
// converters):
//
//	key:     {"type":"<key version>","data":{…key fields…}}
//	payload: {"version":"<value version>","data":{…value fields…}}
//	payload: <DELETE>                       (tombstone)
//
// Key versions 0 and 1 are OffsetCommit (group, topic, partition), 2 is
// GroupMetadata (group). Values are decoded for versions 0-3, the
// non-flexible versions every ZooKeeper-mode broker writes. Fields appear
// only in the versions that define them, in schema order, exactly as the
// generated converters emit them. For protocolType "consumer" each
// member's subscription and assignment bytes are replaced by their decoded
// ConsumerProtocolSubscription/Assignment; if those do not decode, the
// base64 of the bytes stays, as in Kafka. A record that cannot be decoded
// gives the key text "Error at offset N, skipping. <reason>" and no
// payload; an unknown key version "Unknown record type V at offset N,
// skipping.".
//
// Known gap: the KIP-848 consumer-group records (key versions 3+, written
// by Kafka 3.7+'s new group coordinator) are reported as unknown types.

// formatOffsetsRecord renders one __consumer_offsets record. hasValue is
// false when Kafka prints no payload (decoding failed).
func formatOffsetsRecord(offset int64, key, value []byte) (k, v string, hasValue bool) {
	if key == nil {
		return fmt.Sprintf("Error at offset %d, skipping. Failed to decode message at offset %d using offset topic decoder (message had a missing key)", offset, offset), "", false
	}
	kr := &wireReader{b: key}
	kv := kr.i16("key version")
	var kj, vj jsonObj
	var valueFn func(r *wireReader, version int16, j *jsonObj)
	switch {
	case kr.err != nil:
	case kv == 0 || kv == 1:
		kj.str("group", kr.str("group"))
		kj.str("topic", kr.str("topic"))
		kj.int("partition", int64(kr.i32("partition")))
		valueFn = offsetCommitValue
	case kv == 2:
		kj.str("group", kr.str("group"))
		valueFn = groupMetadataValue
	default:
		return fmt.Sprintf("Unknown record type %d at offset %d, skipping.", kv, offset), "", false
	}
	if kr.err != nil {
		return fmt.Sprintf("Error at offset %d, skipping. %v", offset, kr.err), "", false
	}
	var kw jsonObj
	kw.str("type", strconv.Itoa(int(kv)))
	kw.raw("data", kj.done())
	k = string(kw.done())
	if value == nil {
		return k, "<DELETE>", true
	}
	vr := &wireReader{b: value}
	vv := vr.i16("value version")
	if vr.err == nil && (vv < 0 || vv > 3) {
		kind := "GroupMetadataValue"
		if kv < 2 {
			kind = "OffsetCommitValue"
		}
		vr.err = fmt.Errorf("unsupported %s version %d (qk decodes 0-3)", kind, vv)
	}
	if vr.err == nil {
		valueFn(vr, vv, &vj)
	}
	if vr.err != nil {
		return fmt.Sprintf("Error at offset %d, skipping. %v", offset, vr.err), "", false
	}
	var vw jsonObj
	vw.str("version", strconv.Itoa(int(vv)))
	vw.raw("data", vj.done())
	return k, string(vw.done()), true
}

// offsetCommitValue decodes OffsetCommitValue v0-v3.
func offsetCommitValue(r *wireReader, v int16, j *jsonObj) {
	j.int("offset", r.i64("offset"))
	if v >= 3 {
		j.int("leaderEpoch", int64(r.i32("leaderEpoch")))
	}
	j.str("metadata", r.str("metadata"))
	j.int("commitTimestamp", r.i64("commitTimestamp"))
	if v == 1 {
		j.int("expireTimestamp", r.i64("expireTimestamp"))
	}
}

// groupMetadataValue decodes GroupMetadataValue v0-v3.
func groupMetadataValue(r *wireReader, v int16, j *jsonObj) {
	protocolType := r.str("protocolType")
	j.str("protocolType", protocolType)
	j.int("generation", int64(r.i32("generation")))
	r.nullableStr(j, "protocol")
	r.nullableStr(j, "leader")
	if v >= 2 {
		j.int("currentStateTimestamp", r.i64("currentStateTimestamp"))
	}
	n := r.count("members")
	var members []byte
	members = append(members, '[')
	for i := 0; i < n && r.err == nil; i++ {
		var m jsonObj
		m.str("memberId", r.str("memberId"))
		if v >= 3 {
			r.nullableStr(&m, "groupInstanceId")
		}
		m.str("clientId", r.str("clientId"))
		m.str("clientHost", r.str("clientHost"))
		if v >= 1 {
			m.int("rebalanceTimeout", int64(r.i32("rebalanceTimeout")))
		}
		m.int("sessionTimeout", int64(r.i32("sessionTimeout")))
		sub := r.bytes("subscription")
		asg := r.bytes("assignment")
		if r.err != nil {
			break
		}
		consumer := protocolType == "consumer"
		embedded(&m, "subscription", sub, consumer, consumerSubscription)
		embedded(&m, "assignment", asg, consumer, consumerAssignment)
		if i > 0 {
			members = append(members, ',')
		}
		members = append(members, m.done()...)
	}
	members = append(members, ']')
	j.raw("members", members)
}

// embedded adds a member's subscription or assignment: decoded when the
// group speaks the consumer protocol and the bytes decode, else base64, the
// way Jackson prints a byte array.
func embedded(j *jsonObj, name string, b []byte, decode bool, fn func(r *wireReader, version int16) []byte) {
	if decode {
		r := &wireReader{b: b}
		v := r.i16("version")
		if r.err == nil && v >= 0 && v <= 3 {
			if out := fn(r, v); r.err == nil {
				j.raw(name, out)
				return
			}
		}
	}
	j.str(name, base64.StdEncoding.EncodeToString(b))
}

// consumerSubscription decodes ConsumerProtocolSubscription v0-v3.
func consumerSubscription(r *wireReader, v int16) []byte {
	var j jsonObj
	n := r.count("topics")
	topics := make([]string, 0, min(n, 1024))
	for i := 0; i < n && r.err == nil; i++ {
		topics = append(topics, r.str("topic"))
	}
	j.strs("topics", topics)
	r.nullableBytes(&j, "userData")
	if v >= 1 {
		j.raw("ownedPartitions", r.topicPartitions("ownedPartitions"))
	}
	if v >= 2 {
		j.int("generationId", int64(r.i32("generationId")))
	}
	if v >= 3 {
		r.nullableStr(&j, "rackId")
	}
	return j.done()
}

// consumerAssignment decodes ConsumerProtocolAssignment v0-v3.
func consumerAssignment(r *wireReader, v int16) []byte {
	var j jsonObj
	j.raw("assignedPartitions", r.topicPartitions("assignedPartitions"))
	r.nullableBytes(&j, "userData")
	return j.done()
}

// wireReader reads Kafka's classic (non-flexible) encoding: big-endian
// integers, int16-length strings, int32-length bytes and arrays. The first
// failure sticks in err and later reads return zero values.
type wireReader struct {
	b   []byte
	err error
}

var errUnderflow = errors.New("buffer underflow")

func (r *wireReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w reading %s: need %d bytes, %d left", errUnderflow, what, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *wireReader) i16(what string) int16 {
	if b := r.take(2, what); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *wireReader) i32(what string) int32 {
	if b := r.take(4, what); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *wireReader) i64(what string) int64 {
	if b := r.take(8, what); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// strOrNull reads a string16; ok is false for null (length -1).
func (r *wireReader) strOrNull(what string) (s string, ok bool) {
	n := r.i16(what + " length")
	if r.err != nil {
		return "", false
	}
	if n < 0 {
		return "", false
	}
	return string(r.take(int(n), what)), r.err == nil
}

// str reads a non-nullable string16, as Kafka's generated readers do: a
// null is an error.
func (r *wireReader) str(what string) string {
	s, ok := r.strOrNull(what)
	if !ok && r.err == nil {
		r.err = fmt.Errorf("non-nullable field %s was serialized as null", what)
	}
	return s
}

func (r *wireReader) nullableStr(j *jsonObj, what string) {
	s, ok := r.strOrNull(what)
	if ok {
		j.str(what, s)
	} else {
		j.null(what)
	}
}

// bytes reads a non-nullable bytes32.
func (r *wireReader) bytes(what string) []byte {
	n := r.i32(what + " length")
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.err = fmt.Errorf("non-nullable field %s was serialized as null", what)
		return nil
	}
	return r.take(int(n), what)
}

func (r *wireReader) nullableBytes(j *jsonObj, what string) {
	n := r.i32(what + " length")
	if r.err != nil {
		return
	}
	if n < 0 {
		j.null(what)
		return
	}
	j.str(what, base64.StdEncoding.EncodeToString(r.take(int(n), what)))
}

// count reads a non-nullable array length and bounds it by the bytes left
// (every element takes at least one byte), so a corrupt count cannot make
// the decoder allocate or loop for long.
func (r *wireReader) count(what string) int {
	n := r.i32(what + " count")
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.err = fmt.Errorf("non-nullable field %s was serialized as null", what)
		return 0
	}
	if int(n) > len(r.b) {
		r.err = fmt.Errorf("%w reading %s: %d elements declared, %d bytes left", errUnderflow, what, n, len(r.b))
		return 0
	}
	return int(n)
}

// topicPartitions reads [topic string16, partitions [int32]] as JSON.
func (r *wireReader) topicPartitions(what string) []byte {
	n := r.count(what)
	out := []byte{'['}
	for i := 0; i < n && r.err == nil; i++ {
		var tp jsonObj
		tp.str("topic", r.str("topic"))
		np := r.count("partitions")
		ps := []byte{'['}
		for k := 0; k < np && r.err == nil; k++ {
			if k > 0 {
				ps = append(ps, ',')
			}
			ps = strconv.AppendInt(ps, int64(r.i32("partition")), 10)
		}
		tp.raw("partitions", append(ps, ']'))
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, tp.done()...)
	}
	return append(out, ']')
}
