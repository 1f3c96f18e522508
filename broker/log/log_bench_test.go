package log

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
)

// benchBatch builds an uncompressed batch of exactly size bytes.
func benchBatch(b testing.TB, size int) []byte {
	b.Helper()
	for valueSize := size; valueSize > 0; valueSize-- {
		bl := record.NewBuilder(record.DefaultBatchOptions())
		bl.Append(1_700_000_000_000, nil, make([]byte, valueSize), nil)
		out, err := bl.Build()
		require.NoError(b, err)
		if len(out) == size {
			return out
		}
		if len(out) < size {
			break
		}
		valueSize -= len(out) - size - 1
	}
	b.Fatalf("cannot build a %d-byte batch", size)
	return nil
}

var benchSizes = []int{16 << 10}

func sizeName(n int) string { return fmt.Sprintf("size=%dKiB", n>>10) }

// BenchmarkAppend appends pre-built batches through Log.Append: validate
// (CRC-32C), assign offsets, roll check, write, index.
func BenchmarkAppend(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) { benchAppend(b, size) })
	}
}

func benchAppend(b *testing.B, size int) {
	batch := benchBatch(b, size)
	l, err := Open(filepath.Join(b.TempDir(), "bench-0"), DefaultConfig())
	require.NoError(b, err)
	b.Cleanup(func() { l.Close() })
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
}

// BenchmarkSequentialWrite is the floor Append is measured against: plain
// sequential writes of the same bytes to an os.File, a new file every
// segment.bytes like the log.
func BenchmarkSequentialWrite(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) { benchWrite(b, size) })
	}
}

func benchWrite(b *testing.B, size int) {
	batch := benchBatch(b, size)
	dir := b.TempDir()
	segBytes := DefaultConfig().SegmentBytes
	n := 0
	f, err := os.Create(filepath.Join(dir, "0.log"))
	require.NoError(b, err)
	b.Cleanup(func() { f.Close() })
	var written int64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if written+int64(size) > segBytes {
			f.Close()
			n++
			if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("%d.log", n))); err != nil {
				b.Fatal(err)
			}
			written = 0
		}
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
		written += int64(size)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
}

// BenchmarkLookup measures offset → file region (Log.Read of one batch at
// a random offset): binary search over segments, index lookup, a short
// header scan. It must stay flat from 10 to 1000 segments.
func BenchmarkLookup(b *testing.B) {
	for _, segments := range []int{10, 1000} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) { benchLookup(b, segments) })
	}
}

func benchLookup(b *testing.B, segments int) {
	const perSegment = 64
	batch := benchBatch(b, 1024)
	cfg := DefaultConfig()
	cfg.SegmentBytes = perSegment * 1024
	cfg.MaxIndexSize = 64 << 10
	l, err := Open(filepath.Join(b.TempDir(), "bench-0"), cfg)
	require.NoError(b, err)
	b.Cleanup(func() { l.Close() })
	for range segments * perSegment {
		_, err := l.Append(batch, 0)
		require.NoError(b, err)
	}
	require.Equal(b, segments, l.NumSegments())
	rng := rand.New(rand.NewPCG(1, 2))
	leo := l.LogEndOffset()
	b.ReportAllocs()
	for b.Loop() {
		ri, err := l.Read(rng.Int64N(leo), 1, -1)
		if err != nil || ri.Region.Length != 1024 {
			b.Fatal(err, ri.Region.Length)
		}
	}
}
