package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

const crashDir = "/data/crash-0"

func crashConfig() Config {
	cfg := smallConfig()
	cfg.SegmentBytes = 6000
	cfg.IndexIntervalBytes = 300
	return cfg
}

// writeLog appends batches with random sizes and record counts to a log
// on fsys, flushing now and then. It returns the batches as written, in
// order, and the recovery point (everything below it is durable) read
// just before the caller takes its crash image.
func writeLog(t *testing.T, fsys vfs.FS, rng *rand.Rand, n int) (*Log, [][]byte) {
	t.Helper()
	l, err := Open(crashDir, crashConfig(), WithFS(fsys), WithLogger(testLogger(t)))
	require.NoError(t, err)
	var batches [][]byte
	for i := 0; i < n; i++ {
		b := makeBatch(t, 1+rng.IntN(4), int64(1000+i), rng.IntN(700))
		_, err := l.Append(b, int32(i/20))
		require.NoError(t, err)
		batches = append(batches, b)
		if rng.IntN(10) == 0 {
			require.NoError(t, l.Flush(l.LogEndOffset()))
		}
	}
	return l, batches
}

// verifyPrefix checks that the log holds exactly batches[:k] for some k
// and returns k.
func verifyPrefix(t *testing.T, l *Log, batches [][]byte) int {
	t.Helper()
	var got []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		ri, err := l.Read(off, math.MaxInt32, -1)
		require.NoError(t, err)
		if ri.Region.Length == 0 {
			break
		}
		b := regionBytes(t, ri.Region)
		got = append(got, b...)
		parsed := parseLogBytes(t, b)
		off = parsed[len(parsed)-1].last + 1
	}
	k, pos := 0, 0
	for k < len(batches) && pos+len(batches[k]) <= len(got) {
		require.Equal(t, batches[k], got[pos:pos+len(batches[k])], "batch %d", k)
		pos += len(batches[k])
		k++
	}
	require.Equal(t, len(got), pos, "only whole appended batches are visible")
	want := int64(0)
	if k > 0 {
		want = record.Batch(batches[k-1]).LastOffset() + 1
	}
	require.Equal(t, want, l.LogEndOffset())
	return k
}

// TestCrashKeepsFlushedPrefix: write, crash (unsynced bytes partly kept, as
// a page cache writes back on its own), recover. The log is a prefix of
// what was appended, at least up to the recovery point read before the
// crash; indexes agree with the log; appends continue at the right offset.
func TestCrashKeepsFlushedPrefix(t *testing.T) {
	runs := 40
	if testing.Short() {
		runs = 8
	}
	for seed := range runs {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			mem := vfs.NewMem()
			l, batches := writeLog(t, mem, rng, 30+rng.IntN(80))
			rp := l.RecoveryPoint()
			var crashed *vfs.MemFS
			if seed%2 == 0 {
				crashed = mem.CrashCloneWithTail(rng)
			} else {
				crashed = mem.CrashClone()
			}
			require.NoError(t, l.Close())

			l2, err := Open(crashDir, crashConfig(), WithFS(crashed), WithLogger(testLogger(t)), WithRecoveryPoint(rp))
			require.NoError(t, err)
			k := verifyPrefix(t, l2, batches)
			require.GreaterOrEqual(t, l2.LogEndOffset(), rp, "nothing below the fsynced recovery point is lost")
			require.LessOrEqual(t, l2.RecoveryPoint(), l2.LogEndOffset())
			checkDir(t, crashed, crashDir, dirCheck{maxIndexSize: crashConfig().MaxIndexSize, activePreallocated: true, leaderIndex: true})
			// Epochs agree with the surviving batches.
			for _, e := range l2.LeaderEpochs() {
				require.Less(t, e.StartOffset, l2.LogEndOffset())
			}

			// Appends continue at the recovered end.
			next := l2.LogEndOffset()
			b := makeBatch(t, 2, 5000, 50)
			info, err := l2.Append(b, 99)
			require.NoError(t, err)
			require.Equal(t, next, info.FirstOffset)
			require.NoError(t, l2.Close())
			all := checkDir(t, crashed, crashDir, dirCheck{leaderIndex: true})
			require.Len(t, all, k+1)

			// A second, clean, open trusts the files and scans nothing.
			l3, err := Open(crashDir, crashConfig(), WithFS(crashed), WithCleanShutdown(true))
			require.NoError(t, err)
			require.Zero(t, l3.RecoveryStats().RecoveredSegments)
			require.Equal(t, next+2, l3.LogEndOffset())
			require.NoError(t, l3.Close())
		})
	}
}

// corruptFunc damages the .log at path; base is the file position of the
// batch the damage must cut at.
type corruptFunc func(t *testing.T, f vfs.File, size, batchPos, batchSize int64, rng *rand.Rand)

var corruptions = []struct {
	name string
	// keepsBatch: the damaged batch itself survives (damage after it).
	keepsBatch bool
	fn         corruptFunc
}{
	{"flip a crc-covered byte", false, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		at := pos + record.AttributesOffset + rng.Int64N(n-record.AttributesOffset)
		b := []byte{0}
		_, err := f.ReadAt(b, at)
		require.NoError(t, err)
		b[0] ^= 1 << rng.IntN(8)
		_, err = f.WriteAt(b, at)
		require.NoError(t, err)
	}},
	{"flip the stored crc", false, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		_, err := f.WriteAt([]byte{0xde, 0xad}, pos+record.CRCOffset)
		require.NoError(t, err)
	}},
	{"zero the size field", false, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		_, err := f.WriteAt(make([]byte, 4), pos+record.BatchLengthOffset)
		require.NoError(t, err)
	}},
	{"size field past the end", false, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(size))
		_, err := f.WriteAt(b[:], pos+record.BatchLengthOffset)
		require.NoError(t, err)
	}},
	{"bad magic", false, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		_, err := f.WriteAt([]byte{7}, pos+record.MagicOffset)
		require.NoError(t, err)
	}},
	{"truncate mid-header", false, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		require.NoError(t, f.Truncate(pos+1+rng.Int64N(record.BatchHeaderSize-1)))
	}},
	{"truncate mid-records", false, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		require.NoError(t, f.Truncate(pos+record.BatchHeaderSize+rng.Int64N(n-record.BatchHeaderSize)))
	}},
	{"zeroed preallocated tail", true, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		_, err := f.WriteAt(make([]byte, 100+rng.IntN(5000)), size)
		require.NoError(t, err)
	}},
	{"garbage appended", true, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		g := make([]byte, 1+rng.IntN(3000))
		for i := range g {
			g[i] = byte(rng.Uint32())
		}
		_, err := f.WriteAt(g, size)
		require.NoError(t, err)
	}},
	{"a whole batch from elsewhere appended", true, func(t *testing.T, f vfs.File, size, pos, n int64, rng *rand.Rand) {
		// Valid CRC but offsets going backwards.
		b := make([]byte, n)
		_, err := f.ReadAt(b, pos)
		require.NoError(t, err)
		_, err = f.WriteAt(b, size)
		require.NoError(t, err)
	}},
}

// TestRecoveryCutsAtCorruption damages one batch of one of the last
// segments in each way of the table, reopens as unclean and checks that
// exactly the batches before the damage survive, later segments are gone,
// and indexes agree with the log.
func TestRecoveryCutsAtCorruption(t *testing.T) {
	perCase := 6
	if testing.Short() {
		perCase = 2
	}
	for ci, c := range corruptions {
		for run := range perCase {
			t.Run(fmt.Sprintf("%s/%d", c.name, run), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(run)))
				mem := vfs.NewMem()
				l, batches := writeLog(t, mem, rng, 60+rng.IntN(40))
				require.NoError(t, l.Close())
				bases := segmentBases(t, mem)
				require.Greater(t, len(bases), 3)

				// Pick a batch in one of the last two segments (for tail
				// damage: the last batch of the last segment).
				segIdx := len(bases) - 1 - rng.IntN(2)
				if c.keepsBatch {
					segIdx = len(bases) - 1
				}
				path := FileName(crashDir, bases[segIdx], LogSuffix)
				data := readAll(t, mem, path)
				disk := parseLogBytes(t, data)
				victim := disk[rng.IntN(len(disk))]
				if c.keepsBatch {
					victim = disk[len(disk)-1]
				}
				f, err := mem.OpenFile(path, os.O_RDWR, 0)
				require.NoError(t, err)
				c.fn(t, f, int64(len(data)), victim.pos, victim.size, rng)
				require.NoError(t, f.Close())

				// Recovery starts at the segment before the damaged one.
				rp := bases[max(segIdx-1, 0)]
				l2, err := Open(crashDir, crashConfig(), WithFS(mem), WithLogger(testLogger(t)), WithRecoveryPoint(rp))
				require.NoError(t, err)
				k := verifyPrefix(t, l2, batches)
				wantEnd := victim.base
				if c.keepsBatch {
					wantEnd = victim.last + 1
				}
				require.Equal(t, wantEnd, l2.LogEndOffset())
				require.Equal(t, bases[:segIdx+1], l2.SegmentBaseOffsets(), "later segments deleted")
				st := l2.RecoveryStats()
				require.Equal(t, len(bases)-1-segIdx, st.DeletedSegments)
				require.Positive(t, st.TruncatedBytes)
				require.Equal(t, min(segIdx+1, 2), st.RecoveredSegments)
				_ = k
				info, err := l2.Append(makeBatch(t, 1, 1, 10), 0)
				require.NoError(t, err)
				require.Equal(t, wantEnd, info.FirstOffset)
				require.NoError(t, l2.Close())
				checkDir(t, mem, crashDir, dirCheck{leaderIndex: true})
			})
		}
	}
}

func segmentBases(t *testing.T, fsys vfs.FS) []int64 {
	t.Helper()
	entries, err := fsys.ReadDir(crashDir)
	require.NoError(t, err)
	var bases []int64
	for _, e := range entries {
		if b, suf, ok := ParseFileName(e.Name()); ok && suf == LogSuffix {
			bases = append(bases, b)
		}
	}
	return bases
}

// TestCleanRestartScansNothing: after a clean close, a clean open reads
// only the few batch headers after the active segment's last index entry;
// an unclean open reads every byte from the recovery point on.
func TestCleanRestartScansNothing(t *testing.T) {
	mem := vfs.NewMem()
	rng := rand.New(rand.NewPCG(1, 2))
	l, batches := writeLog(t, mem, rng, 200)
	require.NoError(t, l.Close())
	var total int64
	for _, b := range batches {
		total += int64(len(b))
	}

	clean := newCountingFS(mem)
	l2, err := Open(crashDir, crashConfig(), WithFS(clean), WithCleanShutdown(true))
	require.NoError(t, err)
	require.Zero(t, l2.RecoveryStats().RecoveredSegments)
	require.Equal(t, record.Batch(batches[len(batches)-1]).LastOffset()+1, l2.LogEndOffset())
	// Only the headers after the active segment's last index entry are read.
	require.LessOrEqual(t, clean.logReads(), 2)
	require.LessOrEqual(t, clean.logBytes(), int64(2*headerWindow))
	require.NoError(t, l2.Close())

	unclean := newCountingFS(mem)
	l3, err := Open(crashDir, crashConfig(), WithFS(unclean))
	require.NoError(t, err)
	require.Equal(t, l3.NumSegments(), l3.RecoveryStats().RecoveredSegments)
	require.GreaterOrEqual(t, unclean.logBytes(), total)
	require.NoError(t, l3.Close())
}

// TestSwapAndTempFilesOnOpen: leftovers of deletions, cleaning and swaps.
func TestSwapAndTempFilesOnOpen(t *testing.T) {
	mem := vfs.NewMem()
	rng := rand.New(rand.NewPCG(3, 4))
	l, batches := writeLog(t, mem, rng, 60)
	require.NoError(t, l.Close())
	bases := segmentBases(t, mem)
	require.Greater(t, len(bases), 3)

	write := func(name string, data []byte) {
		f, err := mem.Create(crashDir + "/" + name)
		require.NoError(t, err)
		_, err = f.Write(data)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	name := func(base int64, suf string) string { return FileName(crashDir, base, suf)[len(crashDir)+1:] }
	// A completed swap: segment 1's content replaces itself (as a cleaner
	// rewrite would), its old index is stale.
	seg1 := readAll(t, mem, FileName(crashDir, bases[1], LogSuffix))
	write(name(bases[1], LogSuffix+SwapSuffix), seg1)
	write(name(bases[1], IndexSuffix+SwapSuffix), []byte{1, 2, 3})
	// Leftovers to remove.
	write(name(bases[0], LogSuffix+DeletedSuffix), []byte("x"))
	write(name(bases[0], IndexSuffix+DeletedSuffix), []byte("x"))
	write(name(bases[2]+1, LogSuffix+CleanedSuffix), []byte("x"))
	write(name(bases[2]+5, LogSuffix+SwapSuffix), []byte("x")) // ≥ smallest .cleaned: incomplete split
	write(name(999999, IndexSuffix), make([]byte, 16))         // orphan index
	write(name(999999, TimeIndexSuffix), make([]byte, 24))

	l2, err := Open(crashDir, crashConfig(), WithFS(mem), WithLogger(testLogger(t)), WithCleanShutdown(true))
	require.NoError(t, err)
	verifyPrefix(t, l2, batches)
	require.Len(t, verifyPrefixCount(t, l2, batches), len(batches))
	require.Equal(t, bases, l2.SegmentBaseOffsets())
	require.Equal(t, 1, l2.RecoveryStats().RecoveredSegments, "the swapped-in segment's indexes were rebuilt")
	entries, err := mem.ReadDir(crashDir)
	require.NoError(t, err)
	for _, e := range entries {
		n := e.Name()
		require.NotContains(t, n, ".deleted")
		require.NotContains(t, n, ".cleaned")
		require.NotContains(t, n, ".swap")
		require.NotContains(t, n, "00000000000000999999")
	}
	require.NoError(t, l2.Close())
	checkDir(t, mem, crashDir, dirCheck{leaderIndex: true})
}

func verifyPrefixCount(t *testing.T, l *Log, batches [][]byte) [][]byte {
	return batches[:verifyPrefix(t, l, batches)]
}

// TestMissingIndexIsRebuiltOnCleanOpen: a clean open trusts indexes, but a
// missing one is rebuilt from the .log.
func TestMissingIndexIsRebuiltOnCleanOpen(t *testing.T) {
	mem := vfs.NewMem()
	rng := rand.New(rand.NewPCG(5, 6))
	l, batches := writeLog(t, mem, rng, 60)
	require.NoError(t, l.Close())
	bases := segmentBases(t, mem)
	want := readAll(t, mem, FileName(crashDir, bases[1], IndexSuffix))
	require.NoError(t, mem.Remove(FileName(crashDir, bases[1], IndexSuffix)))
	l2, err := Open(crashDir, crashConfig(), WithFS(mem), WithCleanShutdown(true))
	require.NoError(t, err)
	require.Equal(t, 1, l2.RecoveryStats().RecoveredSegments)
	verifyPrefix(t, l2, batches)
	require.NoError(t, l2.Close())
	require.Equal(t, want, readAll(t, mem, FileName(crashDir, bases[1], IndexSuffix)))
}

// TestCorruptIndexIsRebuiltLazily: an index below the recovery point that
// points past its .log is rebuilt when first used, not trusted.
func TestCorruptIndexIsRebuiltLazily(t *testing.T) {
	mem := vfs.NewMem()
	rng := rand.New(rand.NewPCG(7, 8))
	l, batches := writeLog(t, mem, rng, 60)
	require.NoError(t, l.Close())
	bases := segmentBases(t, mem)
	path := FileName(crashDir, bases[0], IndexSuffix)
	want := readAll(t, mem, path)
	f, err := mem.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0, 0, 0, 1, 0x7f, 0, 0, 0}, 0) // (1, huge position)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	l2, err := Open(crashDir, crashConfig(), WithFS(mem), WithCleanShutdown(true), WithLogger(testLogger(t)))
	require.NoError(t, err)
	verifyPrefix(t, l2, batches)
	require.NoError(t, l2.Close())
	require.Equal(t, want, readAll(t, mem, path))
}

// TestFlushMakesIndexesDurable: a flush writes an index's buffered entries
// and fsyncs the file through a descriptor it opens for that (the index
// keeps none), and the fsync covers the entries written out earlier
// through other descriptors (every 4 KiB, and by a roll's trim): after a
// crash the flushed segments' index files hold every entry, byte for
// byte, while entries appended after the flush are not durable.
func TestFlushMakesIndexesDurable(t *testing.T) {
	mem := vfs.NewMem()
	cfg := crashConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.MaxIndexSize = 1 << 16
	cfg.IndexIntervalBytes = 0 // an entry per batch: several 4 KiB write-outs
	l, err := Open(crashDir, cfg, WithFS(mem), WithLogger(testLogger(t)))
	require.NoError(t, err)
	defer l.Close()
	for i := range 1200 {
		_, err := l.Append(makeBatch(t, 1, int64(1000+i), 10), 0)
		require.NoError(t, err)
	}
	_, err = l.roll(l.LogEndOffset(), "test")
	require.NoError(t, err)
	for i := range 10 {
		_, err := l.Append(makeBatch(t, 1, int64(3000+i), 10), 0)
		require.NoError(t, err)
	}
	require.NoError(t, l.Flush(l.LogEndOffset()))
	_, err = l.Append(makeBatch(t, 1, 4000, 10), 0)
	require.NoError(t, err)

	crash := mem.CrashClone()
	l.mu.RLock()
	defer l.mu.RUnlock()
	require.Len(t, l.segments, 2)
	for i, s := range l.segments {
		want := s.index.x.mem
		if i == 1 {
			want = want[:len(want)-OffsetIndexEntrySize] // appended after the flush
		}
		require.Greater(t, len(want), 0)
		got := readAll(t, crash, FileName(crashDir, s.baseOffset, IndexSuffix))
		require.GreaterOrEqual(t, len(got), len(want))
		require.Equal(t, want, got[:len(want)], "durable .index of segment %d", s.baseOffset)
		require.Equal(t, make([]byte, len(got)-len(want)), got[len(want):], "nothing durable after the flushed entries")
		wantTime := s.timeIndex.x.mem
		if i == 1 {
			wantTime = wantTime[:len(wantTime)-TimeIndexEntrySize]
		}
		gotTime := readAll(t, crash, FileName(crashDir, s.baseOffset, TimeIndexSuffix))
		require.GreaterOrEqual(t, len(gotTime), len(wantTime))
		require.Equal(t, wantTime, gotTime[:len(wantTime)], "durable .timeindex of segment %d", s.baseOffset)
	}
	require.Len(t, l.segments[0].index.x.mem, 1200*OffsetIndexEntrySize-OffsetIndexEntrySize, "one entry per batch but the first")
}

// TestFailedWriteLeavesRecoverableLog: an append whose write fails (after
// writing part of the batch) fails the log; a reopen recovers the batches
// before it.
func TestFailedWriteLeavesRecoverableLog(t *testing.T) {
	for n := 1; n <= 6; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			mem := vfs.NewMem()
			faulty := vfs.NewFaulty(mem, nil, vfs.WithPartialWrites(rand.New(rand.NewPCG(uint64(n), 1))))
			l, err := Open(crashDir, crashConfig(), WithFS(faulty), WithLogger(testLogger(t)))
			require.NoError(t, err)
			var ok [][]byte
			for i := range 5 {
				b := makeBatch(t, 2, int64(i), 100)
				_, err := l.Append(b, 0)
				require.NoError(t, err)
				ok = append(ok, b)
			}
			faulty.SetInjector(vfs.FailNth(vfs.OpWrite, n, nil))
			var failed error
			for i := 0; failed == nil && i < 50; i++ {
				b := makeBatch(t, 2, int64(i), 100)
				if _, failed = l.Append(b, 0); failed == nil {
					ok = append(ok, b)
				}
			}
			require.ErrorIs(t, failed, vfs.ErrInjected)
			faulty.SetInjector(nil)
			_, err = l.Append(makeBatch(t, 1, 1, 1), 0)
			require.Error(t, err, "a failed log refuses appends")
			l.Close()

			l2, err := Open(crashDir, crashConfig(), WithFS(mem))
			require.NoError(t, err)
			require.Equal(t, len(ok), verifyPrefix(t, l2, ok))
			require.NoError(t, l2.Close())
		})
	}
}

// TestFailedSyncKeepsRecoveryPoint: a flush whose fsync fails does not
// advance the recovery point, and fails the log for good (as Kafka does:
// after a failed fsync the kernel may have dropped the dirty pages, so a
// later successful fsync proves nothing). Appends and flushes are refused
// with ErrFailed (KAFKA_STORAGE_ERROR) and Close reports the failure.
func TestFailedSyncKeepsRecoveryPoint(t *testing.T) {
	mem := vfs.NewMem()
	faulty := vfs.NewFaulty(mem, nil)
	l, err := Open(crashDir, crashConfig(), WithFS(faulty))
	require.NoError(t, err)
	for i := range 5 {
		_, err := l.Append(makeBatch(t, 2, int64(i), 100), 0)
		require.NoError(t, err)
	}
	faulty.SetInjector(vfs.FailNth(vfs.OpSync, 1, nil))
	require.ErrorIs(t, l.Flush(l.LogEndOffset()), vfs.ErrInjected)
	require.Zero(t, l.RecoveryPoint())
	faulty.SetInjector(nil)
	require.ErrorIs(t, l.Flush(l.LogEndOffset()), ErrFailed)
	require.ErrorIs(t, l.FlushIfDue(), ErrFailed)
	require.Zero(t, l.RecoveryPoint(), "the recovery point never passes unsynced data")
	_, err = l.Append(makeBatch(t, 1, 10, 100), 0)
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, l.Close(), ErrFailed)
	_ = bytes.Equal
	_ = fs.ErrNotExist
}

// TestKilledBeforeFirstFlushDirSyncedLater: a broker creates a partition
// and is killed (SIGKILL: the page cache survives) before the log's first
// flush, so the directory exists but its entry was never fsynced. The
// restarted broker loads it (an unclean start), appends and flushes: that
// flush must make the directory durable too, or a power loss takes the
// flushed data with the directory.
func TestKilledBeforeFirstFlushDirSyncedLater(t *testing.T) {
	mem := vfs.NewMem()
	require.NoError(t, vfs.MkdirAllSync(mem, "/data", 0o755))
	l, err := Open(crashDir, crashConfig(), WithFS(mem), WithLogger(testLogger(t)))
	require.NoError(t, err)
	require.NoError(t, l.WritePartitionMetadata([16]byte{1}))
	// Killed: no Close, no flush. The next process sees the same files.
	l2, err := Open(crashDir, crashConfig(), WithFS(mem), WithLogger(testLogger(t)), WithCleanShutdown(false))
	require.NoError(t, err)
	_, err = l2.Append(makeBatch(t, 5, 1000, 100), 0)
	require.NoError(t, err)
	require.NoError(t, l2.Flush(l2.LogEndOffset()))
	require.Equal(t, int64(5), l2.RecoveryPoint())

	// Power loss: only what was synced survives.
	l3, err := Open(crashDir, crashConfig(), WithFS(mem.CrashClone()), WithLogger(testLogger(t)), WithRecoveryPoint(5))
	require.NoError(t, err)
	require.Equal(t, int64(5), l3.LogEndOffset(), "flushed records survive with their directory")
	require.NoError(t, l3.Close())
	l.closeWithoutFlush()
	require.NoError(t, l2.Close())
}

// TestFailedCreateLeavesNoDirectory: when Open cannot create a new log's
// files, it removes the directory it made, so that a retry creates the
// log afresh instead of loading a directory that was never made durable.
func TestFailedCreateLeavesNoDirectory(t *testing.T) {
	mem := vfs.NewMem()
	faulty := vfs.NewFaulty(mem, vfs.FailPath(vfs.OpCreate, LogSuffix, nil))
	_, err := Open(crashDir, crashConfig(), WithFS(faulty), WithLogger(testLogger(t)))
	require.ErrorIs(t, err, vfs.ErrInjected)
	_, err = mem.Stat(crashDir)
	require.ErrorIs(t, err, fs.ErrNotExist)

	faulty.SetInjector(nil)
	l, err := Open(crashDir, crashConfig(), WithFS(faulty), WithLogger(testLogger(t)))
	require.NoError(t, err)
	require.Equal(t, int64(0), l.LogEndOffset())
	require.NoError(t, l.Close())
}
