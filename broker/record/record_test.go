package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChecksumVector(t *testing.T) {
	require.Equal(t, uint32(0xE3069283), Checksum([]byte("123456789")))
}

func TestVarint(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, 1 << 20, math.MaxInt32, math.MinInt32} {
		enc := binary.AppendVarint(nil, v)
		require.Equal(t, len(enc), varintSize(v), "size of %d", v)
		got, n := varint(enc, 0)
		require.Equal(t, len(enc), n)
		require.Equal(t, int32(v), got)
		gotl, n := varlong(enc, 0)
		require.Equal(t, len(enc), n)
		require.Equal(t, v, gotl)
	}
	for _, v := range []int64{math.MaxInt64, math.MinInt64, math.MaxInt32 + 1} {
		enc := binary.AppendVarint(nil, v)
		got, n := varlong(enc, 0)
		require.Equal(t, v, got)
		require.Equal(t, len(enc), n)
		_, n = varint(enc, 0)
		require.Equal(t, -1, n, "%d does not fit a varint", v)
	}
	for name, tc := range map[string]struct {
		in   []byte
		max  int
		want int
	}{
		"empty":                {nil, 5, 0},
		"unterminated":         {[]byte{0x80, 0x80}, 5, 0},
		"six-byte varint":      {[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 5, -1},
		"eleven-byte varlong":  {bytes.Repeat([]byte{0x80}, 11), 10, -1},
		"varlong overflow":     {append(bytes.Repeat([]byte{0xff}, 9), 0x02), 10, -1},
		"padded but in bounds": {[]byte{0x80, 0x80, 0x00}, 5, 3},
	} {
		t.Run(name, func(t *testing.T) {
			_, n := uvarint(tc.in, 0, tc.max)
			require.Equal(t, tc.want, n)
		})
	}
}

type testRecord struct {
	ts         int64
	key, value []byte
	headers    []Header
}

// shapes are record sets covering the encodings a batch can carry.
var shapes = map[string][]testRecord{
	"one": {{ts: 1000, key: []byte("k"), value: []byte("v")}},
	"nulls and tombstones": {
		{ts: 1000, key: nil, value: []byte("no key")},
		{ts: 1001, key: []byte("tombstone"), value: nil},
		{ts: 1002, key: nil, value: nil},
		{ts: 1003, key: []byte{}, value: []byte{}},
	},
	"headers": {
		{ts: 5, key: []byte("a"), value: []byte("1"), headers: []Header{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}, {Key: "", Value: []byte{}}}},
		{ts: 6, key: []byte("b"), value: nil, headers: []Header{{Key: "trace-id", Value: []byte("0123456789abcdef")}}},
		{ts: 7, key: nil, value: []byte("2")},
	},
	"timestamps out of order": {
		{ts: 1_700_000_000_000, value: []byte("first")},
		{ts: 1_600_000_000_000, value: []byte("earlier")},
		{ts: 1_800_000_000_000, value: []byte("latest")},
		{ts: -1, value: []byte("no timestamp")},
	},
	"large values": {
		{ts: 1, key: []byte("big"), value: payload(200<<10, 21)},
		{ts: 2, key: []byte("big2"), value: randomBytes(70<<10, 22), headers: []Header{{Key: "k", Value: payload(1000, 23)}}},
	},
	"many small": func() []testRecord {
		var rs []testRecord
		for i := range 1000 {
			rs = append(rs, testRecord{ts: int64(1_000_000 + i), key: fmt.Appendf(nil, "key-%d", i), value: fmt.Appendf(nil, "value-%d", i)})
		}
		return rs
	}(),
}

// TestBuilderRoundTrip builds every shape with every codec and decodes it
// back: header fields, CRC and each record.
func TestBuilderRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for name, recs := range shapes {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				opts := DefaultBatchOptions()
				opts.Codec = c
				opts.BaseOffset = 1000
				opts.PartitionLeaderEpoch = 7
				opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 42, 3, math.MaxInt32-1
				bld := NewBuilder(opts)
				maxTS := int64(math.MinInt64)
				for _, r := range recs {
					bld.Append(r.ts, r.key, r.value, r.headers)
					maxTS = max(maxTS, r.ts)
				}
				require.Equal(t, len(recs), bld.Len())
				raw, err := bld.Build()
				require.NoError(t, err)

				b, err := Validate(raw)
				require.NoError(t, err)
				require.Len(t, raw, b.Size())
				require.Equal(t, c, b.Codec())
				require.Equal(t, int64(1000), b.BaseOffset())
				require.Equal(t, int32(7), b.PartitionLeaderEpoch())
				require.Equal(t, int32(len(recs)), b.NumRecords())
				require.Equal(t, int32(len(recs)-1), b.LastOffsetDelta())
				require.Equal(t, int64(1000+len(recs)), b.NextOffset())
				require.Equal(t, recs[0].ts, b.BaseTimestamp())
				require.Equal(t, maxTS, b.MaxTimestamp())
				require.Equal(t, int64(42), b.ProducerID())
				require.Equal(t, int16(3), b.ProducerEpoch())
				require.Equal(t, IncrementSequence(math.MaxInt32-1, int32(len(recs)-1)), b.LastSequence())
				require.False(t, b.IsTransactional())
				require.False(t, b.IsControl())
				require.Equal(t, CreateTime, b.TimestampType())

				got, err := b.AllRecords()
				require.NoError(t, err)
				require.Len(t, got, len(recs))
				for i, r := range got {
					want := recs[i]
					require.Equal(t, int32(i), r.OffsetDelta)
					require.Equal(t, int64(1000+i), r.Offset(b))
					require.Equal(t, want.ts, r.Timestamp(b))
					requireBytes(t, want.key, r.Key)
					requireBytes(t, want.value, r.Value)
					require.Len(t, r.Headers, len(want.headers))
					for j, h := range r.Headers {
						require.Equal(t, want.headers[j].Key, h.Key)
						requireBytes(t, want.headers[j].Value, h.Value)
					}
				}
				if c == CodecNone {
					// Positions point at each record's length varint.
					for _, r := range got {
						l, _ := varint(b.RecordBytes(), r.Position)
						require.Equal(t, r.Length, l)
					}
				}
			})
		}
	}
}

// requireBytes distinguishes null (nil) from empty, which Kafka does.
func requireBytes(t testing.TB, want, got []byte) {
	t.Helper()
	if want == nil {
		require.Nil(t, got)
		return
	}
	require.NotNil(t, got)
	require.Equal(t, want, got)
}

func TestBuilderEmpty(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Codec = c
		raw, err := NewBuilder(opts).Build()
		require.NoError(t, err)
		b, err := Validate(raw)
		require.NoError(t, err)
		require.Equal(t, int32(0), b.NumRecords())
		require.Equal(t, int32(0), b.LastOffsetDelta())
		require.Equal(t, int64(-1), b.BaseTimestamp())
		require.Equal(t, int64(-1), b.MaxTimestamp())
		require.Equal(t, int64(-1), b.ProducerID())
		require.Equal(t, int16(-1), b.ProducerEpoch())
		require.Equal(t, int32(-1), b.BaseSequence())
		require.Equal(t, int32(-1), b.PartitionLeaderEpoch())
		if c == CodecNone {
			require.Len(t, raw, BatchHeaderSize)
		}
		calls := 0
		require.NoError(t, b.Iterate(func(*Record) error { calls++; return nil }))
		require.Zero(t, calls)
	}
}

func TestBuilderOptions(t *testing.T) {
	opts := DefaultBatchOptions()
	opts.TimestampType = LogAppendTime
	opts.Transactional = true
	opts.BaseTimestamp = 500
	bld := NewBuilder(opts)
	bld.Append(600, nil, []byte("a"), nil)
	bld.Append(400, nil, []byte("b"), nil)
	raw, err := bld.Build()
	require.NoError(t, err)
	b, err := Validate(raw)
	require.NoError(t, err)
	require.Equal(t, int16(TimestampTypeMask|TransactionalMask), b.Attributes())
	require.Equal(t, LogAppendTime, b.TimestampType())
	require.True(t, b.IsTransactional())
	require.Equal(t, int64(500), b.BaseTimestamp())
	require.Equal(t, int64(600), b.MaxTimestamp())
	recs, err := b.AllRecords()
	require.NoError(t, err)
	require.Equal(t, []int64{100, -100}, []int64{recs[0].TimestampDelta, recs[1].TimestampDelta})
	// LogAppendTime: every record reports the batch's maxTimestamp.
	require.Equal(t, int64(600), recs[1].Timestamp(b))

	// Reset reuses the builder for an unrelated batch.
	bld.Reset(DefaultBatchOptions())
	require.Zero(t, bld.Len())
	bld.Append(7, nil, nil, nil)
	raw, err = bld.Build()
	require.NoError(t, err)
	b, err = Validate(raw)
	require.NoError(t, err)
	require.Equal(t, int16(0), b.Attributes())
	require.Equal(t, int32(1), b.NumRecords())
	require.Equal(t, int64(7), b.BaseTimestamp())

	_, err = NewBuilder(BatchOptions{Codec: 6}).Build()
	requireCorrupt(t, err, ErrBadCodec)
}

// TestBuilderAppendAt rebuilds a compacted batch: offset gaps survive and
// lastOffsetDelta is the last record's delta, not count-1.
func TestBuilderAppendAt(t *testing.T) {
	src := NewBuilder(DefaultBatchOptions())
	for i := range 10 {
		src.Append(int64(100+i), fmt.Appendf(nil, "k%d", i), []byte("v"), nil)
	}
	raw, err := src.Build()
	require.NoError(t, err)
	orig := Batch(raw)

	opts := DefaultBatchOptions()
	opts.BaseTimestamp = orig.BaseTimestamp()
	compacted := NewBuilder(opts)
	require.NoError(t, orig.Iterate(func(r *Record) error {
		if r.OffsetDelta%3 == 0 {
			compacted.AppendRecord(*r)
		}
		return nil
	}))
	raw, err = compacted.Build()
	require.NoError(t, err)
	b, err := Validate(raw)
	require.NoError(t, err)
	require.Equal(t, int32(4), b.NumRecords())
	require.Equal(t, int32(9), b.LastOffsetDelta())
	recs, err := b.AllRecords()
	require.NoError(t, err)
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d@%d=%s", r.Offset(b), r.Timestamp(b), r.Key))
	}
	require.Equal(t, []string{"0@100=k0", "3@103=k3", "6@106=k6", "9@109=k9"}, got)

	bad := NewBuilder(DefaultBatchOptions())
	bad.AppendAt(5, 1, nil, nil, nil)
	bad.AppendAt(5, 1, nil, nil, nil)
	_, err = bad.Build()
	require.ErrorContains(t, err, "does not follow")
}

func TestIterateStopsOnCallbackError(t *testing.T) {
	bld := NewBuilder(DefaultBatchOptions())
	for range 5 {
		bld.Append(1, nil, []byte("v"), nil)
	}
	raw, err := bld.Build()
	require.NoError(t, err)
	stop := errors.New("stop here")
	var seen int
	err = Batch(raw).Iterate(func(r *Record) error {
		seen++
		if r.OffsetDelta == 2 {
			return stop
		}
		return nil
	})
	require.Same(t, stop, err)
	require.Equal(t, 3, seen)
}

// TestIterateRecordReuse: the callback's *Record is reused, but a copy of
// it (headers included) stays intact.
func TestIterateRecordReuse(t *testing.T) {
	bld := NewBuilder(DefaultBatchOptions())
	for i := range 40 {
		bld.Append(1, nil, nil, []Header{{Key: fmt.Sprint(i), Value: []byte{byte(i)}}})
	}
	raw, err := bld.Build()
	require.NoError(t, err)
	var kept []Record
	var ptrs []*Record
	require.NoError(t, Batch(raw).Iterate(func(r *Record) error {
		kept = append(kept, *r)
		ptrs = append(ptrs, r)
		return nil
	}))
	require.Same(t, ptrs[0], ptrs[39])
	for i, r := range kept {
		require.Equal(t, []Header{{Key: fmt.Sprint(i), Value: []byte{byte(i)}}}, r.Headers)
	}
}

// TestIterateCorruptRecords: hand-made record sections with one defect
// each, framed in batches with valid CRCs, so only record decoding can
// notice.
func TestIterateCorruptRecords(t *testing.T) {
	good := rawRecord{key: []byte("k"), value: []byte("v"), headers: [][2][]byte{{[]byte("h"), []byte("x")}}}
	cat := func(rs ...rawRecord) []byte {
		var out []byte
		for _, r := range rs {
			out = append(out, r.encode()...)
		}
		return out
	}
	with := func(f func(r *rawRecord)) rawRecord { r := good; f(&r); return r }
	cases := []struct {
		name    string
		count   int32
		codec   Codec
		records []byte
		want    error
		reason  string
	}{
		{"valid", 2, CodecNone, cat(good, good), nil, ""},
		{"count too high", 3, CodecNone, cat(good, good), ErrInvalidRecord, "incorrect declared batch size"},
		{"count too low", 1, CodecNone, cat(good, good), ErrInvalidRecord, "incorrect declared batch size"},
		{"trailing garbage", 2, CodecNone, append(cat(good, good), 0), ErrInvalidRecord, "bytes left"},
		{"count zero with records", 0, CodecNone, cat(good), ErrInvalidRecord, "incorrect declared batch size"},
		{"length past end", 1, CodecNone, cat(with(func(r *rawRecord) { r.length = ptr[int64](100) })), ErrInvalidRecord, "invalid record size"},
		{"length too small", 1, CodecNone, cat(with(func(r *rawRecord) { r.length = ptr[int64](3) })), ErrInvalidRecord, "invalid record size"},
		{"negative length", 1, CodecNone, cat(with(func(r *rawRecord) { r.length = ptr[int64](-1) })), ErrInvalidRecord, "invalid record size"},
		{"length longer than fields", 1, CodecNone, cat(with(func(r *rawRecord) { r.trailing = []byte{1, 2} })), ErrInvalidRecord, "expected to read"},
		{"length shorter than fields", 2, CodecNone, func() []byte {
			r := good.encode()
			r[0] -= 2 // zigzag: declared length one less
			return append(r, good.encode()...)
		}(), ErrInvalidRecord, ""},
		{"key past end", 1, CodecNone, cat(with(func(r *rawRecord) { r.keyLen = ptr[int64](50) })), ErrInvalidRecord, "key of 50 bytes"},
		{"key length -2", 1, CodecNone, cat(with(func(r *rawRecord) { r.keyLen = ptr[int64](-2) })), ErrInvalidRecord, "invalid key size"},
		{"negative header count", 1, CodecNone, cat(with(func(r *rawRecord) { r.hdrCount = ptr[int64](-1); r.headers = nil })), ErrInvalidRecord, "negative header count"},
		{"huge header count", 1, CodecNone, cat(with(func(r *rawRecord) { r.hdrCount = ptr[int64](math.MaxInt32) })), ErrInvalidRecord, "header count"},
		{"null header key", 1, CodecNone, cat(with(func(r *rawRecord) { r.headers = [][2][]byte{{nil, []byte("x")}} })), ErrInvalidRecord, "negative header key size"},
		{"header value past end", 1, CodecNone, cat(with(func(r *rawRecord) {
			r.headers = nil
			r.hdrCount = ptr[int64](1)
			r.trailing = []byte{2, 'h', 40}
		})), ErrInvalidRecord, "header value of 20 bytes"},
		{"overlong varint", 1, CodecNone, append([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, good.encode()...), ErrInvalidRecord, "too long"},
		{"record section ends mid-varint", 1, CodecNone, []byte{0x80}, ErrInvalidRecord, "runs past"},
		{"compressed count too high", 3, CodecGzip, mustCompress(CodecGzip, cat(good, good)), ErrInvalidRecord, "decompressed"},
		{"compressed valid", 2, CodecZstd, mustCompress(CodecZstd, cat(good, good)), nil, ""},
		{"compressed garbage", 1, CodecLZ4, []byte("not lz4 at all"), ErrBadCodec, ""},
		{"unknown codec", 1, 5, cat(good), ErrBadCodec, "codec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := rawBatch(tc.count, tc.codec, tc.records)
			err := b.Iterate(func(*Record) error { return nil })
			_, err2 := b.AllRecords()
			if tc.want == nil {
				require.NoError(t, err)
				require.NoError(t, err2)
				return
			}
			ce := requireCorrupt(t, err, tc.want)
			require.Contains(t, ce.Reason, tc.reason)
			require.Equal(t, err.Error(), err2.Error())
		})
	}
}

func mustCompress(c Codec, b []byte) []byte {
	out, err := Compress(c, nil, b)
	if err != nil {
		panic(err)
	}
	return out
}

// sampleBatch is a small batch using every record feature.
func sampleBatch(t testing.TB, c Codec) []byte {
	t.Helper()
	opts := DefaultBatchOptions()
	opts.Codec = c
	opts.BaseOffset = 10
	bld := NewBuilder(opts)
	bld.Append(1000, []byte("key"), []byte("value"), []Header{{Key: "h", Value: []byte("hv")}, {Key: "n", Value: nil}})
	bld.Append(1001, nil, nil, nil)
	bld.Append(999, []byte{}, []byte("x"), nil)
	raw, err := bld.Build()
	require.NoError(t, err)
	return raw
}

// exercise runs every reader over b; it must not panic and every error
// must be a *CorruptError.
func exercise(t testing.TB, b []byte) {
	t.Helper()
	check := func(err error) {
		t.Helper()
		if err != nil {
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
		}
	}
	_, _, err := PeekSize(b)
	check(err)
	_, err = ParseBatch(b)
	check(err)
	bt, err := Validate(b)
	check(err)
	if err == nil {
		check(bt.Iterate(func(*Record) error { return nil }))
	}
	// Iterate does not require a valid CRC; run it on anything framed.
	if pb, err := ParseBatch(b); err == nil {
		check(pb.Iterate(func(*Record) error { return nil }))
		_, err = pb.AllRecords()
		check(err)
	}
	check(Batch(b).Iterate(func(*Record) error { return nil }))
	it := NewIterator(b)
	for it.Next() {
		if e := it.Entry(); e.Legacy != nil {
			_, err := e.Legacy.Inner()
			check(err)
		}
	}
	check(it.Err())
	if m, err := ParseLegacy(b); err == nil {
		_, err = m.Inner()
		check(err)
	} else {
		check(err)
	}
}

// TestCorruptEveryByte flips each byte of a small batch, per codec. CRC-32C
// catches every single-byte change in the bytes it covers; outside it,
// the header checks decide. No change may panic.
func TestCorruptEveryByte(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			orig := sampleBatch(t, c)
			for i := range orig {
				for _, x := range []byte{0x01, 0x80, 0xff} {
					b := bytes.Clone(orig)
					b[i] ^= x
					exercise(t, b)
					_, err := Validate(b)
					switch {
					case i >= RecordsOffset:
						requireCorrupt(t, err, ErrBadCRC)
					case i >= CRCOffset:
						// Header fields may fail a structural check first.
						ce := requireCorrupt(t, err, err)
						require.True(t, errors.Is(ce, ErrBadCRC) || errors.Is(ce, ErrBadSize) || errors.Is(ce, ErrBadCodec), "byte %d: %v", i, err)
					case i < BatchLengthOffset, i >= PartitionLeaderEpochOffset && i < MagicOffset:
						require.NoError(t, err, "byte %d is outside the CRC and unchecked", i)
					default:
						require.Error(t, err, "byte %d", i)
					}
				}
			}
		})
	}
}

// TestTruncateEveryPosition cuts a batch at every length. Readers see a
// short buffer; the iterator sees a torn tail and stops cleanly.
func TestTruncateEveryPosition(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			orig := sampleBatch(t, c)
			for n := range len(orig) {
				b := bytes.Clone(orig[:n])
				exercise(t, b)
				_, err := ParseBatch(b)
				requireCorrupt(t, err, ErrShortBuffer)
				err = Batch(b).Iterate(func(*Record) error { return nil })
				require.Error(t, err)
				it := NewIterator(b)
				require.False(t, it.Next())
				require.NoError(t, it.Err())
				require.Equal(t, n, it.Remaining())
			}
		})
	}
}

// TestTruncateRecords shortens the records section and fixes up the
// length and CRC, so the header is consistent and only Iterate can tell.
func TestTruncateRecords(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			orig := sampleBatch(t, c)
			for n := BatchHeaderSize; n < len(orig); n++ {
				b := bytes.Clone(orig[:n])
				binary.BigEndian.PutUint32(b[BatchLengthOffset:], uint32(n-LogOverhead))
				Batch(b).UpdateCRC()
				bt, err := Validate(b)
				if err != nil {
					requireCorrupt(t, err, ErrBadSize) // uncompressed count no longer fits
					continue
				}
				err = bt.Iterate(func(*Record) error { return nil })
				require.Error(t, err, "cut at %d", n)
				var ce *CorruptError
				require.ErrorAs(t, err, &ce)
				if c == CodecNone {
					require.ErrorIs(t, err, ErrInvalidRecord)
				}
			}
		})
	}
}
