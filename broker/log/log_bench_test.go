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

// warmUp writes and removes 512 MiB before a write benchmark: the first
// writes into page cache after a pause run at a fraction of the steady rate
// on these VMs (cold guest pages, see machine-limits.md), which would
// otherwise penalise whichever benchmark runs first.
func warmUp(b *testing.B, buf []byte) {
	b.Helper()
	f, err := os.Create(filepath.Join(b.TempDir(), "warm-up"))
	require.NoError(b, err)
	for n := 0; n < 512<<20; n += len(buf) {
		_, err := f.Write(buf)
		require.NoError(b, err)
	}
	require.NoError(b, f.Close())
	require.NoError(b, os.Remove(f.Name()))
}

func sizeName(n int) string { return fmt.Sprintf("size=%dKiB", n>>10) }

// BenchmarkAppend appends pre-built batches through Log.Append: validate
// (CRC-32C), assign offsets, roll check, write, index.
func BenchmarkAppend(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) { benchAppend(b, size, 0) })
	}
}

// benchSegmentBytes is segment.bytes for the write benchmarks. Both keep
// at most benchSegmentsKept segments (the log through retention.bytes, the
// plain writer by removing older files), so a run's page-cache footprint
// stays bounded and pages are recycled, as on a broker in steady state:
// otherwise each run creates gigabytes of fresh dirty pages and the figures
// measure the VM's memory and writeback, not the code. The log also pays
// for Kafka's asynchronous flush of every rolled segment.
const (
	benchSegmentBytes = 256 << 20
	benchSegmentsKept = 4
)

// BenchmarkAppendFsync is BenchmarkAppend with flush.messages=1: every
// Append fsyncs its segment's .log and indexes before it returns (no group
// commit: one appender), so it measures the per-flush cost of the files a
// segment keeps, not only the disk's fsync latency.
func BenchmarkAppendFsync(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) { benchAppend(b, size, 1) })
	}
}

// benchAppend appends batches of size bytes with the given flush.messages
// (0 keeps Kafka's default, no flush by count).
func benchAppend(b *testing.B, size int, flushMessages int64) {
	batch := benchBatch(b, size)
	warmUp(b, batch)
	cfg := DefaultConfig()
	if flushMessages > 0 {
		cfg.FlushMessages = flushMessages
	}
	cfg.SegmentBytes = benchSegmentBytes
	cfg.RetentionBytes = benchSegmentsKept * benchSegmentBytes
	cfg.FileDeleteDelayMs = 0
	l, err := Open(filepath.Join(b.TempDir(), "bench-0"), cfg)
	require.NoError(b, err)
	b.Cleanup(func() { l.Close() })
	check := benchSegmentBytes / size
	b.SetBytes(int64(size))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
		if i++; i%check == 0 {
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := l.DeleteOldSegments(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
}

// BenchmarkSequentialWrite is the floor Append is measured against: plain
// sequential writes of the same bytes to an os.File, a new file every
// benchSegmentBytes like the log's segments, older files removed.
func BenchmarkSequentialWrite(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) { benchWrite(b, size) })
	}
}

func benchWrite(b *testing.B, size int) {
	batch := benchBatch(b, size)
	warmUp(b, batch)
	dir := b.TempDir()
	name := func(n int) string { return filepath.Join(dir, fmt.Sprintf("%d.log", n)) }
	n := 0
	f, err := os.Create(name(n))
	require.NoError(b, err)
	b.Cleanup(func() { f.Close() })
	var written int64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if written+int64(size) > benchSegmentBytes {
			f.Close()
			n++
			if f, err = os.Create(name(n)); err != nil {
				b.Fatal(err)
			}
			if n >= benchSegmentsKept {
				os.Remove(name(n - benchSegmentsKept))
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
// a random offset): binary search over the segments, binary search in the
// segment's offset index, a short scan of batch headers (one ReadAt each).
// The log holds the same 64 MiB in 10 or in 1000 segments, so only the
// segment count differs: with logarithmic searches the cost stays flat.
func BenchmarkLookup(b *testing.B) {
	for _, segments := range []int{10, 1000} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) { benchLookup(b, segments) })
	}
}

func benchLookup(b *testing.B, segments int) {
	const batches, batchSize = 1 << 16, 1024
	batch := benchBatch(b, batchSize)
	cfg := DefaultConfig()
	cfg.SegmentBytes = int64(batches / segments * batchSize)
	cfg.MaxIndexSize = 1 << 20
	l, err := Open(filepath.Join(b.TempDir(), "bench-0"), cfg)
	require.NoError(b, err)
	b.Cleanup(func() { l.Close() })
	for range batches {
		_, err := l.Append(batch, 0)
		require.NoError(b, err)
	}
	require.InDelta(b, segments, l.NumSegments(), float64(segments)/50+1)
	rng := rand.New(rand.NewPCG(1, 2))
	leo := l.LogEndOffset()
	b.ReportAllocs()
	for b.Loop() {
		ri, err := l.Read(rng.Int64N(leo), 1, -1)
		if err != nil || ri.Region.Length != batchSize {
			b.Fatal(err, ri.Region.Length)
		}
	}
}
