package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPartitionFor(t *testing.T) {
	// Java's "x".hashCode() for each id, and the partition of 50 and 1000.
	for _, tc := range []struct {
		id    string
		hash  int32 // for the record; partition 1000 shows it
		p50   int32
		p1000 int32
	}{
		{"", 0, 0, 0},
		{"a", 97, 47, 97},
		{"ab", 3105, 5, 105},    // 97*31 + 98
		{"é", 233, 33, 233},     // one UTF-16 unit
		{"😀", 1772899, 49, 899}, // the surrogate pair D83D DE00: 0xD83D*31 + 0xDE00
		{"my-txn", -1061187895, 45, 895},
		{"zombie-producer", -2004850855, 5, 855},
		{"transactional-id-1", 1051133891, 41, 891},
		// Kafka put this group's offsets in __consumer_offsets-16 (fixture).
		{"simple-consumer-example", 1556959566, 16, 566},
		// hashes to MinInt32: Utils.abs gives 0.
		{"polygenelubricants", -1 << 31, 0, 0},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if got := PartitionFor(tc.id, 50); got != tc.p50 {
				t.Errorf("PartitionFor(%q, 50) = %d, want %d", tc.id, got, tc.p50)
			}
			if got := PartitionFor(tc.id, 1000); got != tc.p1000 {
				t.Errorf("PartitionFor(%q, 1000) = %d, want %d", tc.id, got, tc.p1000)
			}
			if got := PartitionFor(tc.id, 1); got != 0 {
				t.Errorf("PartitionFor(%q, 1) = %d", tc.id, got)
			}
		})
	}
}

func mustHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bytes written by hand from TransactionLogKey.json and
// TransactionLogValue.json.
const (
	keyT      = "0000 0001 74"
	valueV0   = "0000 00000000000003e8 0002 0000ea60 01 00000001 0003 666f6f 00000002 00000000 00000001 0000000000000005 0000000000000003"
	valueV0E  = "0000 00000000000003e8 0003 0000ea60 00 ffffffff 0000000000000009 ffffffffffffffff"
	valueV1   = "0001 00000000000003e8 0002 0000ea60 01 02 04 666f6f 03 00000000 00000001 00 0000000000000005 0000000000000003 02 00 08 00000000000003e7 02 02 0002"
	valueV1NT = "0001 00000000000003e8 0002 0000ea60 04 01 0000000000000005 0000000000000003 00"
)

func TestCodec(t *testing.T) {
	ongoing := Value{Version: 0, ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 2,
		TimeoutMs: 60000, State: Ongoing, Partitions: []TopicPartitions{{"foo", []int32{0, 1}}},
		LastUpdateTimestampMs: 5, StartTimestampMs: 3}
	empty := Value{Version: 0, ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 3,
		TimeoutMs: 60000, State: Empty, LastUpdateTimestampMs: 9, StartTimestampMs: -1}
	v1 := ongoing
	v1.Version, v1.PreviousProducerID, v1.ClientTransactionVersion = 1, 999, 2
	v1NoTags := Value{Version: 1, ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 2,
		TimeoutMs: 60000, State: CompleteCommit, Partitions: []TopicPartitions{}, LastUpdateTimestampMs: 5, StartTimestampMs: 3}
	for _, tc := range []struct {
		name string
		hex  string
		v    Value
	}{
		{"v0 ongoing", valueV0, ongoing},
		{"v0 empty (null partitions)", valueV0E, empty},
		{"v1 tagged", valueV1, v1},
		{"v1 no tags", valueV1NT, v1NoTags},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustHex(t, tc.hex)
			got, err := ParseValue(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.v) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.v)
			}
			if enc := tc.v.AppendTo(nil); !bytes.Equal(enc, b) {
				t.Fatalf("encodes to %x\nwant       %x", enc, b)
			}
		})
	}

	k := AppendKey(nil, "t")
	if !bytes.Equal(k, mustHex(t, keyT)) {
		t.Fatalf("key %x", k)
	}
	if id, err := ParseKey(k); err != nil || id != "t" {
		t.Fatalf("ParseKey = %q, %v", id, err)
	}

	// What the coordinator writes for a transition: v0, partitions
	// grouped by topic, null for Empty, a tombstone for Dead.
	tr := TransitMetadata{ProducerID: 1000, PreviousProducerID: 999, NextProducerID: -1, ProducerEpoch: 2,
		TimeoutMs: 60000, State: Ongoing, Partitions: []TopicPartition{{"foo", 0}, {"foo", 1}}, StartMs: 3, LastUpdateMs: 5}
	key, val := Record("t", tr, ValueVersion0)
	if !bytes.Equal(key, mustHex(t, keyT)) || !bytes.Equal(val, mustHex(t, valueV0)) {
		t.Fatalf("Record = %x, %x", key, val)
	}
	tr.State, tr.Partitions, tr.ProducerEpoch, tr.LastUpdateMs, tr.StartMs = Empty, nil, 3, 9, -1
	if _, val := Record("t", tr, ValueVersion0); !bytes.Equal(val, mustHex(t, valueV0E)) {
		t.Fatalf("Empty record = %x", val)
	}
	tr.State = Dead
	if key, val := Record("t", tr, ValueVersion0); val != nil || !bytes.Equal(key, mustHex(t, keyT)) {
		t.Fatalf("Dead record = %x, %x", key, val)
	}
	tr = TransitMetadata{ProducerID: 1000, PreviousProducerID: 999, NextProducerID: -1, ProducerEpoch: 2, TimeoutMs: 60000,
		State: Ongoing, Partitions: []TopicPartition{{"foo", 0}, {"foo", 1}}, StartMs: 3, LastUpdateMs: 5, ClientTransactionVersion: 2}
	if _, val := Record("t", tr, ValueVersion1); !bytes.Equal(val, mustHex(t, valueV1)) {
		t.Fatalf("v1 record = %x", val)
	}
	tr.Partitions = []TopicPartition{{"a", 3}, {"b", 0}, {"b", 2}}
	if got := ValueOf(tr, 0).TopicPartitionSet(); !reflect.DeepEqual(got, tr.Partitions) {
		t.Fatalf("partitions round trip: %v", got)
	}
}

func TestCodecErrors(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
	}{
		{"empty", ""},
		{"version only", "0000"},
		{"unknown version", "0002 00000000000003e8 0002 0000ea60 01 ffffffff 0000000000000005 0000000000000003"},
		{"negative version", "ffff"},
		{"unknown status", "0000 00000000000003e8 0002 0000ea60 08 ffffffff 0000000000000005 0000000000000003"},
		{"negative status", "0000 00000000000003e8 0002 0000ea60 ff ffffffff 0000000000000005 0000000000000003"},
		{"short timestamps", "0000 00000000000003e8 0002 0000ea60 01 ffffffff 0000000000000005 00000000"},
		{"trailing", valueV0E + "00"},
		{"huge array", "0000 00000000000003e8 0002 0000ea60 01 7fffffff 0000000000000005 0000000000000003"},
		{"negative array", "0000 00000000000003e8 0002 0000ea60 01 fffffffe 0000000000000005 0000000000000003"},
		{"null topic", "0000 00000000000003e8 0002 0000ea60 01 00000001 ffff 00000000 0000000000000005 0000000000000003"},
		{"null partition ids", "0000 00000000000003e8 0002 0000ea60 01 00000001 0001 61 ffffffff 0000000000000005 0000000000000003"},
		{"short topic", "0000 00000000000003e8 0002 0000ea60 01 00000001 0009 61"},
		{"v1 bad varint", "0001 00000000000003e8 0002 0000ea60 01 ffffffffffffffffffff"},
		{"v1 null compact topic", "0001 00000000000003e8 0002 0000ea60 01 02 00 01 00 0000000000000005 0000000000000003 00"},
		{"v1 tag too long", "0001 00000000000003e8 0002 0000ea60 04 01 0000000000000005 0000000000000003 01 00 09 00000000000003e7"},
		{"v1 tag of wrong size", "0001 00000000000003e8 0002 0000ea60 04 01 0000000000000005 0000000000000003 01 00 04 000003e7"},
		{"v1 missing tag buffer", "0001 00000000000003e8 0002 0000ea60 04 01 0000000000000005 0000000000000003"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseValue(mustHex(t, tc.hex))
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("ParseValue: %v, want ErrBadRecord", err)
			}
			t.Log(err)
		})
	}
	// A v1 value with an unknown tag: skipped.
	v, err := ParseValue(mustHex(t, "0001 00000000000003e8 0002 0000ea60 04 01 0000000000000005 0000000000000003 01 07 02 abcd"))
	if err != nil || v.State != CompleteCommit {
		t.Fatalf("unknown tag: %+v, %v", v, err)
	}
	if _, err := ParseKey(mustHex(t, "0001 0001 74")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("key v1: %v", err)
	}
	for _, k := range []string{"", "00", "0000", "0000 0005 74", "0000 ffff", "0000 0001 74 00"} {
		if _, err := ParseKey(mustHex(t, k)); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("ParseKey(%s): %v, want ErrBadRecord", k, err)
		}
	}
}

// FuzzDecode: no input panics; what decodes re-encodes to a value that
// decodes the same, and a v0 value re-encodes to its own bytes.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{keyT, valueV0, valueV0E, valueV1, valueV1NT, "0001 0001 74", ""} {
		f.Add(mustHex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, err := ParseKey(b); err == nil {
			if !bytes.Equal(AppendKey(nil, id), b) {
				t.Fatalf("key %x re-encodes to %x", b, AppendKey(nil, id))
			}
		}
		p := NewPartition(0, 0, DefaultConfig())
		_ = p.Replay(AppendKey(nil, "t"), b)
		_ = p.Replay(b, b)
		p.Loaded(0)
		v, err := ParseValue(b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v is not ErrBadRecord", err)
			}
			return
		}
		enc := v.AppendTo(nil)
		if v.Version == 0 && !bytes.Equal(enc, b) {
			t.Fatalf("v0 %x re-encodes to %x", b, enc)
		}
		again, err := ParseValue(enc)
		if err != nil || !reflect.DeepEqual(again, v) {
			t.Fatalf("%+v re-decodes to %+v, %v", v, again, err)
		}
	})
}

// TestFutureValue is Kafka's testDeserializeFutureTransactionLogValue: a
// v1 value with unknown tagged fields (a string 100 and an int32 101) in
// the partitions and at the top: they are skipped.
func TestFutureValue(t *testing.T) {
	tags := "02 64 05 0003 666f6f 65 04 00000fa0"
	b := mustHex(t, "0001 00000000000003e8 0064 000003e8 04 02 06 746f706963 02 00000001 "+tags+
		" 00000000000007d0 0000000000000bb8 "+tags)
	v, err := ParseValue(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Value{Version: 1, ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 100,
		TimeoutMs: 1000, State: CompleteCommit, Partitions: []TopicPartitions{{"topic", []int32{1}}},
		LastUpdateTimestampMs: 2000, StartTimestampMs: 3000}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got  %+v\nwant %+v", v, want)
	}
	// Kafka's testReadTxnRecordKeyCanReadUnknownMessage: key version
	// Short.MAX_VALUE is an unknown key, to skip.
	if _, err := ParseKey(mustHex(t, "7fff")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("key 0x7fff: %v", err)
	}
	// A loaded CompleteCommit keeps its partitions as Kafka does (only
	// Empty drops them).
	p := NewPartition(0, 0, DefaultConfig())
	if err := p.Replay(AppendKey(nil, "transaction-id"), b); err != nil {
		t.Fatal(err)
	}
	m, _ := p.Get("transaction-id")
	if m.State != CompleteCommit || len(m.Partitions) != 1 || m.Partitions[0] != (TopicPartition{"topic", 1}) {
		t.Fatalf("loaded %s", m)
	}
}
