package record

import (
	"fmt"
	"testing"
)

// benchBatch builds a batch of about size uncompressed bytes from records
// with 100-byte values, like a producer's batch of small JSON messages.
func benchBatch(b *testing.B, c Codec, size int) (raw []byte, records int) {
	b.Helper()
	opts := DefaultBatchOptions()
	opts.Codec = c
	bld := NewBuilder(opts)
	val := payload(100, 99)
	for i := 0; bld.Len()*(len(val)+30) < size; i++ {
		bld.Append(1_700_000_000_000+int64(i), fmt.Appendf(nil, "key-%06d", i), val, []Header{{Key: "h", Value: []byte("v")}})
	}
	raw, err := bld.Build()
	if err != nil {
		b.Fatal(err)
	}
	return raw, bld.Len()
}

func BenchmarkValidate(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) { benchValidate(b, size) })
	}
}

func benchValidate(b *testing.B, size int) {
	raw, _ := benchBatch(b, CodecNone, size)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIterate(b *testing.B) {
	for _, c := range allCodecs {
		b.Run("codec="+c.String()+"/size=16KiB", func(b *testing.B) { benchIterate(b, c, 16<<10) })
	}
}

// benchIterate reports throughput in uncompressed record bytes.
func benchIterate(b *testing.B, c Codec, size int) {
	raw, n := benchBatch(b, c, size)
	plain, _ := benchBatch(b, CodecNone, size)
	bt := Batch(raw)
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		if err := bt.Iterate(func(*Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkDecompress(b *testing.B) {
	for _, c := range allCodecs[1:] {
		b.Run("codec="+c.String()+"/size=64KiB", func(b *testing.B) { benchDecompress(b, c, 64<<10) })
	}
}

// benchDecompress reports throughput in decompressed bytes, appending into
// a reused buffer as a pooled caller would.
func benchDecompress(b *testing.B, c Codec, size int) {
	in := payload(size, 7)
	enc := mustCompress(c, in)
	b.ReportMetric(float64(len(in))/float64(len(enc)), "ratio")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	buf := make([]byte, 0, size)
	for b.Loop() {
		out, err := AppendDecompressed(c, buf[:0], enc)
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
}

func BenchmarkCompress(b *testing.B) {
	for _, c := range allCodecs[1:] {
		b.Run("codec="+c.String()+"/size=64KiB", func(b *testing.B) { benchCompress(b, c, 64<<10) })
	}
}

func benchCompress(b *testing.B, c Codec, size int) {
	in := payload(size, 7)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	buf := make([]byte, 0, size)
	for b.Loop() {
		out, err := Compress(c, buf[:0], in)
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, c := range []Codec{CodecNone, CodecLZ4} {
		b.Run("codec="+c.String()+"/size=16KiB", func(b *testing.B) { benchBuild(b, c, 16<<10) })
	}
}

// benchBuild reports throughput in uncompressed batch bytes.
func benchBuild(b *testing.B, c Codec, size int) {
	raw, _ := benchBatch(b, CodecNone, size)
	recs, err := Batch(raw).AllRecords()
	if err != nil {
		b.Fatal(err)
	}
	opts := DefaultBatchOptions()
	opts.Codec = c
	bld := NewBuilder(opts)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		bld.Reset(opts)
		for _, r := range recs {
			bld.Append(r.TimestampDelta, r.Key, r.Value, r.Headers)
		}
		if _, err := bld.Build(); err != nil {
			b.Fatal(err)
		}
	}
}
