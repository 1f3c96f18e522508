package record

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/snappy"

	"github.com/qk-project/qk/internal/fixtures"
)

// Fuzz targets, seeded from the Kafka-written fixtures and from batches
// built here. Run one with e.g.
//
//	go test -run '^$' -fuzz FuzzIterate -fuzztime 30s ./broker/record
//
// Seeds are kept small because the fuzzer minimizes every new interesting
// input byte by byte, and a 16 KiB one stalls a worker for tens of seconds:
// each fixture contributes its first few entries of at most 4 KiB, one seed
// each, and files that small also whole. Generated seeds stand in for the
// large multi-chunk snappy and gzip wrappers.

const (
	maxSeed        = 4 << 10
	entriesPerFile = 3
)

// fuzzSeeds returns fixture entries plus generated batches of every codec
// and legacy wrappers.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, pattern := range []string{"*/records/*", "*/*/*/*.log", "*/*/*/*/*.log"} {
		files, _ := filepath.Glob(filepath.Join(fixtures.Dir(f), pattern))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil || len(b) == 0 {
				continue
			}
			if len(b) <= maxSeed {
				seeds = append(seeds, b)
			}
			it := NewIterator(b)
			for n := 0; n < entriesPerFile && it.Next(); n++ {
				if e := it.Entry(); e.Size <= maxSeed && e.Size < len(b) {
					seeds = append(seeds, e.Bytes)
				}
			}
		}
	}
	for _, c := range allCodecs {
		seeds = append(seeds, sampleBatch(f, c))
	}
	ctrl, err := BuildControlBatch(DefaultBatchOptions(), 1, ControlCommit, 3)
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, ctrl)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
		seeds = append(seeds,
			wrapper(f, 1, MagicV1, c, true, 7, legacyMessage(0, 1, 0, 1, []byte("k"), nil), legacyMessage(1, 1, 0, 2, nil, []byte("v"))),
			wrapper(f, 1, MagicV0, c, false, -1, legacyMessage(0, 0, 0, -1, []byte("k"), nil), legacyMessage(1, 0, 0, -1, nil, []byte("v"))))
	}
	return seeds
}

// requireCorruptErr fails the fuzz run when err is not a *CorruptError.
func requireCorruptErr(t *testing.T, err error) {
	t.Helper()
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("error is not a *CorruptError: %T %v", err, err)
	}
}

func FuzzParseBatch(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		size, magic, err := PeekSize(data)
		requireCorruptErr(t, err)
		b, err := ParseBatch(data)
		requireCorruptErr(t, err)
		if err != nil {
			return
		}
		if magic != MagicV2 || b.Size() != size || len(b) != size || size < BatchHeaderSize {
			t.Fatalf("ParseBatch accepted magic %d size %d len %d", magic, size, len(b))
		}
		if b.NumRecords() < 0 || b.LastOffsetDelta() < 0 || b.Codec() > CodecZstd {
			t.Fatalf("ParseBatch accepted count %d delta %d codec %d", b.NumRecords(), b.LastOffsetDelta(), b.Codec())
		}
		_, verr := Validate(data)
		if (verr == nil) != (b.ComputeCRC() == b.CRC()) {
			t.Fatalf("Validate %v disagrees with the CRC", verr)
		}
		_ = b.LastSequence()
		_, _ = b.DeleteHorizonMs()
	})
}

func FuzzIterate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		requireCorruptErr(t, Batch(data).Iterate(func(*Record) error { return nil }))
		it := NewIterator(data)
		var pos int64
		for it.Next() {
			e := it.Entry()
			if e.Position != pos || e.Size < LogOverhead+MinMessageOverhead || int(e.Position)+e.Size > len(data) {
				t.Fatalf("entry at %d size %d (expected position %d, %d bytes)", e.Position, e.Size, pos, len(data))
			}
			pos += int64(e.Size)
			if e.Legacy != nil {
				_, err := e.Legacy.Inner()
				requireCorruptErr(t, err)
				continue
			}
			recs, err := e.Batch.AllRecords()
			requireCorruptErr(t, err)
			if err == nil {
				checkRebuild(t, e.Batch, recs)
			}
		}
		requireCorruptErr(t, it.Err())
		if it.Err() == nil && it.Remaining() != len(data)-int(pos) {
			t.Fatalf("remaining %d, expected %d", it.Remaining(), len(data)-int(pos))
		}
	})
}

// checkRebuild re-encodes records that decoded and expects to decode the
// same records back: decoding and building agree on the format.
func checkRebuild(t *testing.T, b Batch, recs []Record) {
	t.Helper()
	if int(b.NumRecords()) != len(recs) {
		t.Fatalf("decoded %d records, batch declares %d", len(recs), b.NumRecords())
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].OffsetDelta <= recs[i-1].OffsetDelta {
			return // the builder only writes increasing deltas
		}
	}
	if len(recs) > 0 && recs[0].OffsetDelta < 0 {
		return
	}
	opts := DefaultBatchOptions()
	opts.BaseTimestamp = b.BaseTimestamp()
	bld := NewBuilder(opts)
	for _, r := range recs {
		bld.AppendRecord(r)
	}
	raw, err := bld.Build()
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	nb, err := Validate(raw)
	if err != nil {
		t.Fatalf("rebuilt batch invalid: %v", err)
	}
	got, err := nb.AllRecords()
	if err != nil {
		t.Fatalf("rebuilt batch does not decode: %v", err)
	}
	if len(got) != len(recs) {
		t.Fatalf("rebuilt %d records, want %d", len(got), len(recs))
	}
	for i := range got {
		w, g := recs[i], got[i]
		if g.OffsetDelta != w.OffsetDelta ||
			nb.BaseTimestamp()+g.TimestampDelta != b.BaseTimestamp()+w.TimestampDelta ||
			!sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: rebuilt %+v, want %+v", i, g, w)
		}
		for j := range g.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d: rebuilt %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

// sameBytes is bytes.Equal that also tells null from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func FuzzDecompress(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		if b, err := ParseBatch(s); err == nil {
			f.Add(byte(b.Codec()), []byte(b.RecordBytes()))
		}
		if m, err := ParseLegacy(s); err == nil && m.Value != nil {
			f.Add(byte(m.Codec()), m.Value)
		}
	}
	in := payload(3000, 1)
	for _, c := range allCodecs {
		f.Add(byte(c), mustCompress(c, in))
	}
	f.Add(byte(CodecSnappy), xerialStream(in, 256))
	f.Add(byte(CodecSnappy), append(xerialStream(in[:100], 64), xerialStream(in[100:], 1000)...))
	f.Add(byte(CodecSnappy), snappyBlock(in))
	f.Fuzz(func(t *testing.T, codec byte, data []byte) {
		c := Codec(codec % 5)
		out, err := Decompress(c, data)
		requireCorruptErr(t, err)
		if err != nil {
			return
		}
		if len(out) > MaxDecompressedSize {
			t.Fatalf("%s produced %d bytes", c, len(out))
		}
		enc, err := Compress(c, nil, out)
		if err != nil {
			t.Fatalf("%s: recompress: %v", c, err)
		}
		back, err := Decompress(c, enc)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("%s: round trip of decompressed data failed: %v", c, err)
		}
	})
}

func FuzzLegacy(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseLegacy(data)
		requireCorruptErr(t, err)
		if err != nil {
			return
		}
		if m.TotalSize() > len(data) || (m.Magic != MagicV0 && m.Magic != MagicV1) {
			t.Fatalf("accepted magic %d size %d of %d bytes", m.Magic, m.TotalSize(), len(data))
		}
		_ = m.IsValid()
		inner, err := m.Inner()
		requireCorruptErr(t, err)
		if err != nil {
			return
		}
		if len(inner) == 0 {
			t.Fatal("Inner returned no messages without an error")
		}
		for _, im := range inner {
			if im.Magic != m.Magic || (m.Codec() != CodecNone && im.Codec() != CodecNone) {
				t.Fatalf("inner magic %d codec %v under magic %d codec %v", im.Magic, im.Codec(), m.Magic, m.Codec())
			}
			_ = im.IsValid()
		}
	})
}

func snappyBlock(b []byte) []byte { return snappy.Encode(nil, b) }
