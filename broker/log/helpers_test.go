package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/internal/fixtures"
)

// fixture reads a file written by real Kafka (internal/fixtures fails
// the test when it is missing).
func fixture(t testing.TB, rel string) []byte {
	t.Helper()
	return fixtures.Read(t, rel)
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeClock is an injected wall clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// smallConfig is a config whose indexes are small enough for MemFS.
func smallConfig() Config {
	c := DefaultConfig()
	c.MaxIndexSize = 4096
	c.FileDeleteDelayMs = 0
	return c
}

// makeBatch builds an uncompressed batch of n records with the given
// first timestamp (one ms apart) and value size.
func makeBatch(t testing.TB, n int, ts int64, valueSize int) []byte {
	t.Helper()
	b := record.NewBuilder(record.DefaultBatchOptions())
	val := make([]byte, valueSize)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	for i := 0; i < n; i++ {
		b.Append(ts+int64(i), []byte(fmt.Sprintf("k%d", i)), val, nil)
	}
	out, err := b.Build()
	require.NoError(t, err)
	return out
}

// --- an independent reader of the on-disk formats: encoding/binary only,
// no code of this package. ---

type diskBatch struct {
	pos, size   int64
	base, last  int64
	maxTs       int64
	leaderEpoch int32
	crcOK       bool
}

// parseLogBytes walks a .log image: 8-byte base offset, 4-byte length,
// 4-byte leader epoch, magic, crc, attributes, lastOffsetDelta... It stops
// at the first entry that does not fit.
func parseLogBytes(t testing.TB, b []byte) []diskBatch {
	t.Helper()
	be := binary.BigEndian
	var out []diskBatch
	for pos := 0; pos+61 <= len(b); {
		size := 12 + int(int32(be.Uint32(b[pos+8:])))
		if size < 61 || pos+size > len(b) {
			break
		}
		raw := b[pos : pos+size]
		crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
		out = append(out, diskBatch{
			pos:         int64(pos),
			size:        int64(size),
			base:        int64(be.Uint64(raw)),
			last:        int64(be.Uint64(raw)) + int64(int32(be.Uint32(raw[23:]))),
			maxTs:       int64(be.Uint64(raw[35:])),
			leaderEpoch: int32(be.Uint32(raw[12:])),
			crcOK:       crc == be.Uint32(raw[17:]),
		})
		pos += size
	}
	return out
}

type diskIndexEntry struct{ offset, pos int64 }
type diskTimeEntry struct{ ts, offset int64 }

// parseIndexBytes decodes every 8-byte entry of an .index image, stopping
// at never-written (zero) space.
func parseIndexBytes(b []byte, base int64) []diskIndexEntry {
	var out []diskIndexEntry
	for i := 0; i+8 <= len(b); i += 8 {
		rel, pos := int32(binary.BigEndian.Uint32(b[i:])), int32(binary.BigEndian.Uint32(b[i+4:]))
		if rel == 0 && pos == 0 {
			break
		}
		out = append(out, diskIndexEntry{base + int64(rel), int64(pos)})
	}
	return out
}

func parseTimeIndexBytes(b []byte, base int64) []diskTimeEntry {
	var out []diskTimeEntry
	for i := 0; i+12 <= len(b); i += 12 {
		ts, rel := int64(binary.BigEndian.Uint64(b[i:])), int32(binary.BigEndian.Uint32(b[i+8:]))
		if ts == 0 && rel == 0 {
			break
		}
		out = append(out, diskTimeEntry{ts, base + int64(rel)})
	}
	return out
}

func readAll(t testing.TB, fsys vfs.FS, path string) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, path)
	require.NoError(t, err)
	return b
}

type dirCheck struct {
	maxIndexSize int64
	// activePreallocated: the last segment's indexes are still at their
	// maximum size (log open); otherwise every index must be trimmed.
	activePreallocated bool
	// leaderIndex: entries must name the last offset of the batch they
	// point at (true for leader appends and recovery).
	leaderIndex bool
}

// checkDir verifies a partition directory with the independent reader and
// returns every batch in offset order.
func checkDir(t testing.TB, fsys vfs.FS, dir string, c dirCheck) []diskBatch {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		digits := strings.TrimSuffix(name, ".log")
		require.Len(t, digits, 20, "segment name %s", name)
		var base int64
		_, err := fmt.Sscanf(digits, "%d", &base)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%020d", base), digits)
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	var all []diskBatch
	for si, base := range bases {
		name := func(suf string) string { return fmt.Sprintf("%s/%020d%s", dir, base, suf) }
		logBytes := readAll(t, fsys, name(".log"))
		batches := parseLogBytes(t, logBytes)
		var sum int64
		for _, b := range batches {
			require.True(t, b.crcOK, "crc of batch at %d in %s", b.pos, name(".log"))
			require.GreaterOrEqual(t, b.base, base, "batch below segment base")
			if len(all) > 0 {
				require.Greater(t, b.base, all[len(all)-1].last, "offsets must increase")
			}
			sum += b.size
			all = append(all, b)
		}
		require.Equal(t, int64(len(logBytes)), sum, "%s must hold only whole batches", name(".log"))
		byPos := map[int64]diskBatch{}
		for _, b := range batches {
			byPos[b.pos] = b
		}
		idxBytes := readAll(t, fsys, name(".index"))
		tidxBytes := readAll(t, fsys, name(".timeindex"))
		active := si == len(bases)-1
		if active && c.activePreallocated {
			require.Equal(t, c.maxIndexSize/8*8, int64(len(idxBytes)), "active .index preallocated")
			require.Equal(t, c.maxIndexSize/12*12, int64(len(tidxBytes)), "active .timeindex preallocated")
		}
		idx := parseIndexBytes(idxBytes, base)
		tidx := parseTimeIndexBytes(tidxBytes, base)
		if !(active && c.activePreallocated) {
			require.Equal(t, len(idx)*8, len(idxBytes), "%s trimmed", name(".index"))
			require.Equal(t, len(tidx)*12, len(tidxBytes), "%s trimmed", name(".timeindex"))
		}
		for i, e := range idx {
			b, ok := byPos[e.pos]
			require.True(t, ok, "index entry %d (%d,%d) of %s points at a batch start", i, e.offset, e.pos, name(".index"))
			if c.leaderIndex {
				require.Equal(t, b.last, e.offset, "index entry %d names its batch's last offset", i)
			} else {
				require.GreaterOrEqual(t, e.offset, b.last)
			}
			if i > 0 {
				require.Greater(t, e.offset, idx[i-1].offset)
				require.Greater(t, e.pos, idx[i-1].pos)
			}
		}
		lastOffsets := map[int64]bool{}
		for _, b := range batches {
			lastOffsets[b.last] = true
		}
		for i, e := range tidx {
			require.True(t, lastOffsets[e.offset], "time index entry %d names a batch last offset", i)
			if i > 0 {
				require.Greater(t, e.ts, tidx[i-1].ts, "time index timestamps increase")
				require.GreaterOrEqual(t, e.offset, tidx[i-1].offset, "time index offsets increase")
			}
		}
		if !(active && c.activePreallocated) && len(batches) > 0 {
			// A closed or rolled segment ends with its max timestamp.
			maxTs := int64(-1)
			for _, b := range batches {
				maxTs = max(maxTs, b.maxTs)
			}
			if maxTs >= 0 {
				require.NotEmpty(t, tidx)
				require.Equal(t, maxTs, tidx[len(tidx)-1].ts, "final time index entry of %s", name(".timeindex"))
			}
		}
	}
	return all
}

// countingFS counts ReadAt calls and bytes on .log files.
type countingFS struct {
	vfs.FS
	mu    sync.Mutex
	reads map[string]int
	bytes map[string]int64
}

func newCountingFS(inner vfs.FS) *countingFS {
	return &countingFS{FS: inner, reads: map[string]int{}, bytes: map[string]int64{}}
}

func (c *countingFS) logBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for name, k := range c.bytes {
		if strings.HasSuffix(name, ".log") {
			n += k
		}
	}
	return n
}

func (c *countingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, c: c, name: name}, nil
}

func (c *countingFS) logReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for name, k := range c.reads {
		if strings.HasSuffix(name, ".log") {
			n += k
		}
	}
	return n
}

type countingFile struct {
	vfs.File
	c    *countingFS
	name string
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.c.mu.Lock()
	f.c.reads[f.name]++
	f.c.bytes[f.name] += int64(n)
	f.c.mu.Unlock()
	return n, err
}

func sortedKeys[K interface{ ~string }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
