package record

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// Tests against bytes written by real Kafka brokers and clients. The
// concrete values come from shared/reference/kafka-formats.md and the
// fixtures' SOURCE.txt files.

// TestFixtureV2Vector decodes the reference's §1.7 test vector field by
// field: the first batch of a Kafka 0.11/1.0 log, written by kafkajs.
func TestFixtureV2Vector(t *testing.T) {
	for _, name := range []string{"v4_response.p0.records", "v11_response.p0.records"} {
		t.Run(name, func(t *testing.T) {
			raw := fixture(t, "kafkajs-fetch-responses/records/"+name)
			b, err := Validate(raw)
			require.NoError(t, err)
			require.Equal(t, 217, b.Size())
			require.Len(t, raw, 217)

			require.Equal(t, int64(0), b.BaseOffset())
			require.Equal(t, int32(205), b.BatchLength())
			require.Equal(t, int32(0), b.PartitionLeaderEpoch())
			require.Equal(t, int8(2), b.Magic())
			require.Equal(t, uint32(3595851112), b.CRC())
			require.Equal(t, int16(0), b.Attributes())
			require.Equal(t, CodecNone, b.Codec())
			require.Equal(t, CreateTime, b.TimestampType())
			require.Equal(t, int32(2), b.LastOffsetDelta())
			require.Equal(t, int64(2), b.LastOffset())
			require.Equal(t, int64(1509827900073), b.BaseTimestamp())
			require.Equal(t, int64(1509827900073), b.MaxTimestamp())
			require.Equal(t, int64(-1), b.ProducerID())
			require.Equal(t, int16(0), b.ProducerEpoch())
			require.Equal(t, int32(0), b.BaseSequence())
			require.Equal(t, int32(2), b.LastSequence())
			require.Equal(t, int32(3), b.NumRecords())

			recs, err := b.AllRecords()
			require.NoError(t, err)
			require.Len(t, recs, 3)
			for i, r := range recs {
				require.Equal(t, 52*i, r.Position, "record %d position", i)
				require.Equal(t, int32(51), r.Length)
				require.Equal(t, int32(i), r.OffsetDelta)
				require.Equal(t, int64(i), r.Offset(b))
				require.Equal(t, int64(1509827900073), r.Timestamp(b))
				require.Equal(t, int32(i), r.Sequence(b))
				require.Equal(t, fmt.Sprintf("key-%d", i), string(r.Key))
				require.Equal(t, fmt.Sprintf("some-value-%d", i), string(r.Value))
				require.Equal(t, []Header{{
					Key:   fmt.Sprintf("header-key-%d", i),
					Value: fmt.Appendf(nil, "header-value-%d", i),
				}}, r.Headers)
			}
		})
	}
}

// TestFixtureV2VectorRebuilt shows the Builder writes exactly what kafkajs
// wrote for the §1.7 vector, CRC included.
func TestFixtureV2VectorRebuilt(t *testing.T) {
	want := fixture(t, "kafkajs-fetch-responses/records/v4_response.p0.records")
	opts := DefaultBatchOptions()
	opts.PartitionLeaderEpoch = 0
	opts.ProducerEpoch = 0
	opts.BaseSequence = 0
	bld := NewBuilder(opts)
	for i := range 3 {
		bld.Append(1509827900073, fmt.Appendf(nil, "key-%d", i), fmt.Appendf(nil, "some-value-%d", i),
			[]Header{{Key: fmt.Sprintf("header-key-%d", i), Value: fmt.Appendf(nil, "header-value-%d", i)}})
	}
	got, err := bld.Build()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestFixtureScalaProducer rebuilds the six single-record batches the Java
// producer wrote (producerEpoch -1, baseSequence -1) byte for byte.
func TestFixtureScalaProducer(t *testing.T) {
	raw := fixture(t, "kafkajs-fetch-responses/records/v4_from_scala_producer_response.p0.records")
	it := NewIterator(raw)
	var n int
	for it.Next() {
		e := it.Entry()
		b, err := Validate(e.Batch)
		require.NoError(t, err)
		require.Equal(t, int64(n), b.BaseOffset())
		require.Equal(t, int16(-1), b.ProducerEpoch())
		require.Equal(t, int32(-1), b.BaseSequence())
		recs, err := b.AllRecords()
		require.NoError(t, err)
		require.Len(t, recs, 1)
		n++
		require.Equal(t, fmt.Sprintf("KEY-%d", n), string(recs[0].Key))
		require.Equal(t, fmt.Sprintf("VALUE-Lorem ipsum dolor sit amet-%d", n), string(recs[0].Value))
		require.Empty(t, recs[0].Headers)

		opts := DefaultBatchOptions()
		opts.BaseOffset = b.BaseOffset()
		opts.PartitionLeaderEpoch = b.PartitionLeaderEpoch()
		bld := NewBuilder(opts)
		bld.Append(recs[0].Timestamp(b), recs[0].Key, recs[0].Value, nil)
		got, err := bld.Build()
		require.NoError(t, err)
		require.Equal(t, []byte(e.Batch), got, "batch %d rebuilt", n)
	}
	require.NoError(t, it.Err())
	require.Equal(t, 6, n)
}

// TestFixtureV2Gzip reads two gzip batches written by a 1.x broker.
func TestFixtureV2Gzip(t *testing.T) {
	raw := fixture(t, "kafkajs-fetch-responses/records/v4_response_gzip.p0.records")
	it := NewIterator(raw)
	var crcs []uint32
	var offsets []int64
	var keys []string
	for it.Next() {
		b, err := Validate(it.Entry().Batch)
		require.NoError(t, err)
		require.Equal(t, CodecGzip, b.Codec())
		crcs = append(crcs, b.CRC())
		require.NoError(t, b.Iterate(func(r *Record) error {
			offsets = append(offsets, r.Offset(b))
			keys = append(keys, string(r.Key))
			return nil
		}))
	}
	require.NoError(t, it.Err())
	require.Equal(t, []uint32{690420683, 1562317768}, crcs)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5}, offsets)
	require.Equal(t, []string{"key-0", "key-1", "key-2", "key-1", "key-2", "key-3"}, keys)
}

// TestFixtureRawSnappy reads the kafkajs-written snappy batch whose records
// section is a bare snappy block without xerial framing, which Kafka's
// reader accepts.
func TestFixtureRawSnappy(t *testing.T) {
	raw := fixture(t, "kafkajs-fetch-responses/records/v4_response_snappy.p3.records")
	b, err := Validate(raw)
	require.NoError(t, err)
	require.Equal(t, CodecSnappy, b.Codec())
	require.Equal(t, uint32(2549051050), b.CRC())
	require.False(t, isXerial(b.RecordBytes()), "fixture should have no xerial header")
	recs, err := b.AllRecords()
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, "key-149", string(recs[0].Key))
	require.Equal(t, "value-149-2019-02-04T15:13:48.187Z", string(recs[0].Value))
	require.Equal(t, int64(1549293228209), recs[0].Timestamp(b))
}

// TestFixtureXerialSnappyV2 reads the Kafka 2.8 snappy log of §1.7's second
// vector: a xerial stream with one chunk per batch.
func TestFixtureXerialSnappyV2(t *testing.T) {
	raw := fixture(t, "kafka280-zk-snappy-offsets/kafka-logs/some-topic-0/00000000000000000000.log")
	it := NewIterator(raw)
	require.True(t, it.Next())
	first, err := Validate(it.Entry().Batch)
	require.NoError(t, err)
	require.Equal(t, 221, first.Size())
	require.Equal(t, uint32(754603787), first.CRC())
	require.Equal(t, int16(2), first.Attributes())
	require.Equal(t, int32(1), first.NumRecords())

	section := first.RecordBytes()
	require.True(t, isXerial(section))
	require.Equal(t, []byte{0, 0, 0, 1, 0, 0, 0, 1}, section[8:16], "version, min compatible version")
	require.Equal(t, xerialChunks(t, section), []int{140})
	data, err := Decompress(CodecSnappy, section)
	require.NoError(t, err)
	require.Len(t, data, 136)

	recs, err := first.AllRecords()
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Len(t, recs[0].Headers, 1)
	require.Equal(t, "__Key_TypeId__", recs[0].Headers[0].Key)

	n := 1
	for it.Next() {
		b, err := Validate(it.Entry().Batch)
		require.NoError(t, err)
		require.Equal(t, CodecSnappy, b.Codec())
		_, err = b.AllRecords()
		require.NoError(t, err)
		n++
	}
	require.NoError(t, it.Err())
	require.Equal(t, 9, n)
}

// xerialChunks returns the compressed length of each chunk of a
// single-header xerial stream.
func xerialChunks(t testing.TB, s []byte) []int {
	t.Helper()
	require.True(t, isXerial(s))
	var out []int
	for p := xerialHeaderSize; p < len(s); {
		n := int(binary.BigEndian.Uint32(s[p:]))
		out = append(out, n)
		p += 4 + n
	}
	return out
}

// TestFixtureLegacyV0 checks the reference's magic-0 vector.
func TestFixtureLegacyV0(t *testing.T) {
	raw := fixture(t, "kafkajs-fetch-responses/records/v0_response.p0.records")
	m, err := ParseLegacy(raw)
	require.NoError(t, err)
	require.Equal(t, LegacyMessage{
		Offset: 0, Size: 31, CRC: 120234579, Magic: 0, Attributes: 0, Timestamp: -1,
		Key: []byte("key-0"), Value: []byte("some-value-0"), raw: raw,
	}, m)
	require.Equal(t, 43, m.TotalSize())
	require.True(t, m.IsValid())
	require.Equal(t, NoTimestampType, m.TimestampType())
	require.Equal(t, CodecNone, m.Codec())
	inner, err := m.Inner()
	require.NoError(t, err)
	require.Equal(t, []LegacyMessage{m}, inner)
	// The CRC recomputed from the fields matches the one over the bytes.
	m.raw = nil
	require.Equal(t, uint32(120234579), m.ComputeCRC())
}

// TestFixtureLegacyV1 checks magic-1 messages: the reference's vector and a
// three-message set.
func TestFixtureLegacyV1(t *testing.T) {
	m, err := ParseLegacy(fixture(t, "kafkajs-fetch-responses/records/v4_response_010_format.p1.records"))
	require.NoError(t, err)
	require.Equal(t, int8(1), m.Magic)
	require.Equal(t, uint32(2036710961), m.CRC)
	require.Equal(t, int64(1538502423117), m.Timestamp)
	require.Equal(t, CreateTime, m.TimestampType())
	require.True(t, m.IsValid())

	raw := fixture(t, "kafkajs-fetch-responses/records/v2_response.p0.records")
	it := NewIterator(raw)
	var got []string
	for it.Next() {
		e := it.Entry()
		require.Equal(t, int8(1), e.Magic)
		require.True(t, e.Legacy.IsValid())
		got = append(got, fmt.Sprintf("%d %d %s=%s", e.Legacy.Offset, e.Legacy.Timestamp, e.Legacy.Key, e.Legacy.Value))
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{
		"0 1509827715172 key-0=some-value-0",
		"1 1509827715173 key-1=some-value-1",
		"2 1509827715173 key-2=some-value-2",
	}, got)
}

// TestFixtureLegacyGzipWrappers covers both offset conventions of
// compressed legacy sets: absolute inner offsets (magic 0) and relative
// ones (magic 1), each under a wrapper carrying the last offset, 2.
func TestFixtureLegacyGzipWrappers(t *testing.T) {
	t.Run("magic0/absolute", func(t *testing.T) {
		w, err := ParseLegacy(fixture(t, "kafkajs-fetch-responses/records/v1_response_gzip.p0.records"))
		require.NoError(t, err)
		require.Equal(t, int8(0), w.Magic)
		require.Equal(t, CodecGzip, w.Codec())
		require.Equal(t, int64(2), w.Offset)
		require.True(t, w.IsValid())
		require.Nil(t, w.Key)
		require.Equal(t, []int64{0, 1, 2}, rawInnerOffsets(t, w))
		inner, err := w.Inner()
		require.NoError(t, err)
		require.Equal(t, []int64{0, 1, 2}, offsetsOf(inner))
		for i, m := range inner {
			require.True(t, m.IsValid())
			require.Equal(t, fmt.Sprintf("key-%d", i), string(m.Key))
			require.Equal(t, int64(-1), m.Timestamp)
		}
	})
	t.Run("magic1/relative", func(t *testing.T) {
		raw := fixture(t, "kafkajs-fetch-responses/records/v2_response_gzip.p0.records")
		w, err := ParseLegacy(raw)
		require.NoError(t, err)
		require.Equal(t, int8(1), w.Magic)
		require.Equal(t, int64(2), w.Offset)
		require.Equal(t, int64(1509827715534), w.Timestamp)
		require.Equal(t, []int64{0, 1, 2}, rawInnerOffsets(t, w))
		inner, err := w.Inner()
		require.NoError(t, err)
		require.Equal(t, []int64{0, 1, 2}, offsetsOf(inner))
		require.Equal(t, []int64{1509827715533, 1509827715534, 1509827715534}, []int64{inner[0].Timestamp, inner[1].Timestamp, inner[2].Timestamp})
		for _, m := range inner {
			require.Equal(t, CreateTime, m.TimestampType())
			require.True(t, m.IsValid())
		}

		// The wrapper offset is outside the CRC; moving it to 12 moves the
		// absolute inner offsets to 10..12.
		moved := bytes.Clone(raw)
		binary.BigEndian.PutUint64(moved, 12)
		w, err = ParseLegacy(moved)
		require.NoError(t, err)
		require.True(t, w.IsValid())
		inner, err = w.Inner()
		require.NoError(t, err)
		require.Equal(t, []int64{10, 11, 12}, offsetsOf(inner))

		// Offset 0 means base 0 (old librdkafka), 1 is impossible.
		binary.BigEndian.PutUint64(moved, 0)
		w, _ = ParseLegacy(moved)
		inner, err = w.Inner()
		require.NoError(t, err)
		require.Equal(t, []int64{0, 1, 2}, offsetsOf(inner))
		binary.BigEndian.PutUint64(moved, 1)
		w, _ = ParseLegacy(moved)
		_, err = w.Inner()
		requireCorrupt(t, err, ErrInvalidRecord)
	})
}

// rawInnerOffsets decompresses a wrapper and returns the offsets stored in
// the inner messages, before Inner makes them absolute.
func rawInnerOffsets(t testing.TB, w LegacyMessage) []int64 {
	t.Helper()
	data, err := Decompress(w.Codec(), w.Value)
	require.NoError(t, err)
	it := NewIterator(data)
	var out []int64
	for it.Next() {
		out = append(out, it.Entry().Legacy.Offset)
	}
	require.NoError(t, it.Err())
	require.Zero(t, it.Remaining())
	return out
}

func offsetsOf(ms []LegacyMessage) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Offset
	}
	return out
}

// TestFixtureKafkaRust reads magic-0 message sets from Kafka 0.8.2/0.9:
// the same 42 messages uncompressed, in a gzip wrapper, and in snappy
// wrappers framed as 20 xerial chunks (0.8.2.1) and as 1 (0.8.2.2).
func TestFixtureKafkaRust(t *testing.T) {
	const dir = "kafka-rust-legacy-fetch/records/"
	plain := fixture(t, dir+"fetch1.mytopic.1p.nocompression.kafka.0821.p0.messageset")
	var want []LegacyMessage
	it := NewIterator(plain)
	for it.Next() {
		m := *it.Entry().Legacy
		require.True(t, m.IsValid())
		want = append(want, m)
	}
	require.NoError(t, it.Err())
	require.Len(t, want, 42)
	require.Equal(t, int64(41), want[41].Offset)

	for _, tc := range []struct {
		file   string
		codec  Codec
		chunks int // xerial chunks; 0 for gzip
	}{
		{"fetch1.mytopic.1p.gzip.kafka.0821.p0.messageset", CodecGzip, 0},
		{"fetch1.mytopic.1p.snappy.kafka.0821.p0.messageset", CodecSnappy, 20},
		{"fetch1.mytopic.1p.snappy.kafka.0822.p0.messageset", CodecSnappy, 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw := fixture(t, dir+tc.file)
			it := NewIterator(raw)
			require.True(t, it.Next())
			w := it.Entry().Legacy
			require.False(t, it.Next())
			require.NoError(t, it.Err())
			require.Zero(t, it.Remaining())

			require.Equal(t, tc.codec, w.Codec())
			require.Equal(t, int64(41), w.Offset)
			require.True(t, w.IsValid())
			if tc.chunks > 0 {
				require.Len(t, xerialChunks(t, w.Value), tc.chunks)
			}
			inner, err := w.Inner()
			require.NoError(t, err)
			require.Len(t, inner, 42)
			for i, m := range inner {
				require.Equal(t, int64(i), m.Offset)
				require.True(t, m.IsValid())
				require.Equal(t, want[i].CRC, m.CRC)
				require.Equal(t, want[i].Key, m.Key)
				require.Equal(t, want[i].Value, m.Value)
			}
		})
	}
}

// TestFixtureInvalidCRC: kafka-rust's corrupted copy differs from the good
// message only in its CRC, so it parses but is not valid.
func TestFixtureInvalidCRC(t *testing.T) {
	const dir = "kafka-rust-legacy-fetch/records/"
	good := fixture(t, dir+"fetch2.mytopic.nocompression.kafka.0900.p0.messageset")
	bad := fixture(t, dir+"fetch2.mytopic.nocompression.invalid_crc.kafka.0900.p0.messageset")
	g, err := ParseLegacy(good)
	require.NoError(t, err)
	b, err := ParseLegacy(bad)
	require.NoError(t, err)
	require.True(t, g.IsValid())
	require.False(t, b.IsValid())
	require.Equal(t, g.ComputeCRC(), b.ComputeCRC())
	require.NotEqual(t, g.CRC, b.CRC)
	require.Equal(t, uint32(1482184792), b.CRC)
}

// TestFixtureMixedFormats walks a log upgraded in place: 1611 magic-1
// messages followed by 3 magic-2 batches, offsets contiguous throughout.
func TestFixtureMixedFormats(t *testing.T) {
	raw := fixture(t, "kafkajs-fetch-responses/records/v4_response_mixed_formats.p0.records")
	it := NewIterator(raw)
	var v1, v2, records int
	next := int64(0)
	var batchPositions []int64
	for it.Next() {
		e := it.Entry()
		switch e.Magic {
		case MagicV1:
			require.Zero(t, v2, "magic 1 after magic 2")
			require.True(t, e.Legacy.IsValid())
			require.Equal(t, next, e.Legacy.Offset)
			next++
			v1++
		case MagicV2:
			b, err := Validate(e.Batch)
			require.NoError(t, err)
			require.Equal(t, next, b.BaseOffset())
			n := 0
			require.NoError(t, b.Iterate(func(r *Record) error {
				require.Equal(t, next+int64(n), r.Offset(b))
				n++
				return nil
			}))
			records += n
			next = b.NextOffset()
			batchPositions = append(batchPositions, e.Position)
			v2++
		}
	}
	require.NoError(t, it.Err())
	require.Zero(t, it.Remaining())
	require.Equal(t, 1611, v1)
	require.Equal(t, 3, v2)
	require.Equal(t, 814, records)
	require.Equal(t, int64(2425), next)
	require.Equal(t, []int64{120499, 132075, 135233}, batchPositions)
}

// TestFixtureSegments walks every Kafka-written segment and checks each
// batch's CRC and records.
func TestFixtureSegments(t *testing.T) {
	want := map[string][2]int{ // entries, records
		"cp-zk-3broker-rolled-segments/broker2/invoice-0/00000000000000000000.log":                {380, 30626},
		"cp760-zk-clean-shutdown/kafka-data/stock-market-realtime-0/00000000000000000000.log":     {143, 1120},
		"kafka271-zk-single-broker/kafka-logs/__consumer_offsets-17/00000000000000000000.log":     {1, 1},
		"kafka271-zk-single-broker/kafka-logs/__consumer_offsets-17/00000000000000000001.log":     {2, 2},
		"kafka271-zk-single-broker/kafka-logs/__consumer_offsets-28/00000000000000000000.log":     {1, 1},
		"kafka271-zk-single-broker/kafka-logs/__consumer_offsets-28/00000000000000000002.log":     {1, 1},
		"kafka271-zk-single-broker/kafka-logs/__consumer_offsets-39/00000000000000000000.log":     {3, 3},
		"kafka271-zk-single-broker/kafka-logs/__consumer_offsets-39/00000000000000000018.log":     {1, 2},
		"kafka271-zk-single-broker/kafka-logs/myTopic-0/00000000000000000038.log":                 {0, 0},
		"kafka280-zk-snappy-offsets/kafka-logs/__consumer_offsets-16/00000000000000000000.log":    {69, 69},
		"kafka280-zk-snappy-offsets/kafka-logs/some-topic-0/00000000000000000000.log":             {9, 9},
		"kafka300-zk-zookeeper-snapshot/data/kafka/__consumer_offsets-1/00000000000000000000.log": {3, 3},
		"kafka300-zk-zookeeper-snapshot/data/kafka/my-first-topic-2/00000000000000000000.log":     {7, 7},
		"kafka362-zk-idempotent/kafka-logs/__consumer_offsets-38/00000000000000000000.log":        {1, 1},
		"kafka362-zk-idempotent/kafka-logs/one-0/00000000000000000000.log":                        {11, 11},
	}
	files := append(fixtureFiles(t, "*/*/*/*.log"), fixtureFiles(t, "*/*/*/*/*.log")...)
	require.Len(t, files, len(want))
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			w, ok := want[f]
			require.True(t, ok, "unexpected fixture")
			raw := fixture(t, f)
			it := NewIterator(raw)
			var entries, records int
			var pos int64
			for it.Next() {
				e := it.Entry()
				require.Equal(t, pos, e.Position)
				pos += int64(e.Size)
				b, err := Validate(e.Batch)
				require.NoError(t, err)
				require.NoError(t, b.Iterate(func(*Record) error { records++; return nil }))
				entries++
			}
			require.NoError(t, it.Err())
			require.Zero(t, it.Remaining())
			require.Equal(t, w, [2]int{entries, records})
		})
	}
}

// TestFixtureIdempotent checks the idempotent producer's sequence numbers
// in the Kafka 3.6 log: producer id 0, one record per batch. (The fixture's
// SOURCE.txt says four batches with sequences 0..3; the file actually holds
// eleven, 0..10, as the expected dump also shows.)
func TestFixtureIdempotent(t *testing.T) {
	raw := fixture(t, "kafka362-zk-idempotent/kafka-logs/one-0/00000000000000000000.log")
	it := NewIterator(raw)
	var seqs []int32
	for it.Next() {
		b := it.Entry().Batch
		if b.ProducerID() != 0 {
			continue
		}
		require.NoError(t, b.Iterate(func(r *Record) error {
			seqs = append(seqs, r.Sequence(b))
			return nil
		}))
	}
	require.NoError(t, it.Err())
	require.Equal(t, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seqs)
}

// TestFixtureExpectedDumps regenerates the batch and record lines of the
// fixtures' expected-dump files (Kafka 3.3+ kafka-dump-log format, written
// by an independent decoder) from what this package decodes, and compares.
// Key and payload text is compared only when it is valid UTF-8, since
// decoders disagree on how to replace invalid bytes.
func TestFixtureExpectedDumps(t *testing.T) {
	dumps := fixtureFiles(t, "*/expected-dump.*.txt")
	var checked int
	for _, dump := range dumps {
		base := filepath.Dir(dump)
		sections := splitDump(t, fixture(t, dump))
		for _, s := range sections {
			if !strings.HasSuffix(s.file, ".log") {
				continue
			}
			t.Run(filepath.Join(base, s.file), func(t *testing.T) {
				got := dumpLines(t, fixture(t, filepath.Join(base, s.file)))
				var want []string
				for _, l := range s.lines {
					if strings.HasPrefix(l, "baseOffset:") || strings.HasPrefix(l, "| offset:") {
						want = append(want, l)
					}
				}
				deep := false
				for _, l := range want {
					deep = deep || strings.HasPrefix(l, "| ")
				}
				var filtered []string
				for _, l := range got {
					if deep || !strings.HasPrefix(l, "| ") {
						filtered = append(filtered, l)
					}
				}
				require.Len(t, filtered, len(want))
				for i := range want {
					g, w := filtered[i], want[i]
					if strings.Contains(g, "\uFFFD") || dumpMeta(w) == w {
						g, w = dumpMeta(g), dumpMeta(w)
					}
					require.Equal(t, w, g, "line %d", i)
					checked++
				}
			})
		}
	}
	require.Positive(t, checked)
	t.Logf("compared %d dump lines", checked)
}

type dumpSection struct {
	file  string
	lines []string
}

func splitDump(t testing.TB, b []byte) []dumpSection {
	t.Helper()
	var out []dumpSection
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if f, ok := strings.CutPrefix(l, "Dumping "); ok {
			out = append(out, dumpSection{file: f})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].lines = append(out[len(out)-1].lines, l)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// dumpLines renders a segment the way kafka-dump-log --deep-iteration
// --print-data-log does (3.3+), for v2 batches.
func dumpLines(t testing.TB, seg []byte) []string {
	t.Helper()
	var out []string
	it := NewIterator(seg)
	for it.Next() {
		e := it.Entry()
		b := e.Batch
		require.NotNil(t, b, "only v2 segments are dumped here")
		_, verr := Validate(b)
		horizon := "OptionalLong.empty"
		if h, ok := b.DeleteHorizonMs(); ok {
			horizon = fmt.Sprintf("OptionalLong[%d]", h)
		}
		out = append(out, fmt.Sprintf("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t",
			b.BaseOffset(), b.LastOffset(), b.NumRecords(), b.BaseSequence(), b.LastSequence(), b.ProducerID(), b.ProducerEpoch(),
			b.PartitionLeaderEpoch(), b.IsTransactional(), b.IsControl(), horizon, e.Position, b.TimestampType(), b.MaxTimestamp(),
			b.Size(), b.Magic(), b.Codec(), b.CRC(), verr == nil))
		require.NoError(t, b.Iterate(func(r *Record) error {
			keys := make([]string, len(r.Headers))
			for i, h := range r.Headers {
				keys[i] = h.Key
			}
			l := fmt.Sprintf("| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
				r.Offset(b), b.TimestampType(), r.Timestamp(b), lenOrNull(r.Key), lenOrNull(r.Value), r.Sequence(b), strings.Join(keys, ","))
			if b.IsControl() {
				typ, err := ParseControlKey(r.Key)
				require.NoError(t, err)
				if typ.IsTxnMarker() {
					m, err := ParseEndTxnMarker(r.Value)
					require.NoError(t, err)
					l += fmt.Sprintf(" endTxnMarker: %s coordinatorEpoch: %d", typ, m.CoordinatorEpoch)
				} else {
					l += fmt.Sprintf(" controlType: %s(%d)", typ, typ)
				}
			} else {
				if r.Key != nil {
					l += " key: " + printable(r.Key)
				}
				if r.Value != nil {
					l += " payload: " + printable(r.Value)
				}
			}
			out = append(out, l)
			return nil
		}))
	}
	require.NoError(t, it.Err())
	return out
}

// dumpMeta strips the key and payload text from a dump record line.
func dumpMeta(l string) string {
	if i := strings.Index(l, " key: "); i >= 0 {
		return l[:i]
	}
	if i := strings.Index(l, " payload: "); i >= 0 {
		return l[:i]
	}
	return l
}

func printable(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return "\uFFFD"
}

func lenOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}
