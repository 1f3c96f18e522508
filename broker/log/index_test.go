package log

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
)

func TestOffsetIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000100.index")
	idx, err := OpenOffsetIndex(vfs.OS, path, 100, 85) // rounds down to 80: 10 slots
	require.NoError(t, err)
	require.Equal(t, int64(80), idx.SizeInBytes(), "preallocated")
	require.Equal(t, 10, idx.MaxEntries())

	require.Equal(t, OffsetPosition{Offset: 100, Position: 0}, idx.Lookup(150), "empty: (base, 0)")
	for i := 1; i <= 9; i++ {
		require.NoError(t, idx.Append(100+int64(i)*10, int32(i)*1000))
	}
	require.ErrorIs(t, idx.Append(190, 99999), ErrIndexOffset, "not increasing")
	require.ErrorIs(t, idx.Append(99, 99999), ErrOffsetOverflow, "below the base")
	require.ErrorIs(t, idx.Append(100+math.MaxInt32+1, 99999), ErrOffsetOverflow)
	require.NoError(t, idx.Append(200, 10000))
	require.True(t, idx.IsFull())
	require.ErrorIs(t, idx.Append(210, 11000), ErrIndexFull)

	cases := []struct {
		target int64
		want   OffsetPosition
	}{
		{50, OffsetPosition{100, 0}},
		{100, OffsetPosition{100, 0}},
		{109, OffsetPosition{100, 0}},
		{110, OffsetPosition{110, 1000}},
		{111, OffsetPosition{110, 1000}},
		{155, OffsetPosition{150, 5000}},
		{200, OffsetPosition{200, 10000}},
		{math.MaxInt64, OffsetPosition{200, 10000}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, idx.Lookup(c.target), "lookup %d", c.target)
	}

	idx.TruncateTo(150)
	require.Equal(t, 4, idx.Entries())
	require.Equal(t, int64(140), idx.LastOffset())
	require.NoError(t, idx.TrimToValidSize())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, int64(32), st.Size())
	require.NoError(t, idx.Close())

	// Reopen: entries come back; resize re-grows without losing them.
	idx, err = OpenOffsetIndex(vfs.OS, path, 100, 80)
	require.NoError(t, err)
	require.Equal(t, 4, idx.Entries())
	require.True(t, idx.IsFull())
	require.NoError(t, idx.ResizeToMax())
	require.False(t, idx.IsFull())
	require.NoError(t, idx.Append(150, 5000))
	require.NoError(t, idx.Flush())
	got := DecodeOffsetIndex(readAll(t, vfs.OS, path), 100)
	require.Equal(t, []OffsetPosition{{110, 1000}, {120, 2000}, {130, 3000}, {140, 4000}, {150, 5000}}, got)
	require.NoError(t, idx.Reset())
	require.Zero(t, idx.Entries())
	require.Equal(t, make([]byte, 80), readAll(t, vfs.OS, path), "reset zeroes the file")
	require.NoError(t, idx.Close())
}

func TestOffsetIndexOpenChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	entry := func(rel, pos uint32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, rel), pos)
	}
	// Preallocated zeros after real entries are not entries.
	b := append(append(entry(5, 100), entry(9, 200)...), make([]byte, 64)...)
	idx, err := OpenOffsetIndex(vfs.OS, write("a.index", b), 0, 1024)
	require.NoError(t, err)
	require.Equal(t, 2, idx.Entries())
	require.Equal(t, 10, idx.MaxEntries())
	require.NoError(t, idx.Close())

	_, err = OpenOffsetIndex(vfs.OS, write("b.index", append(entry(5, 100), 1, 2, 3)), 0, 1024)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrCorruptIndex)

	_, err = OpenOffsetIndex(vfs.OS, write("c.index", append(entry(9, 200), entry(5, 300)...)), 0, 1024)
	require.ErrorIs(t, err, ErrCorruptIndex, "decreasing offsets")
}

func TestTimeIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000100.timeindex")
	idx, err := OpenTimeIndex(vfs.OS, path, 100, 60) // 5 slots, one reserved
	require.NoError(t, err)
	require.Equal(t, int64(60), idx.SizeInBytes())
	require.Equal(t, TimestampOffset{Timestamp: -1, Offset: 100}, idx.LastEntry())
	require.Equal(t, TimestampOffset{Timestamp: -1, Offset: 100}, idx.Lookup(5000))

	require.NoError(t, idx.MaybeAppend(1000, 105, false))
	require.NoError(t, idx.MaybeAppend(1000, 110, false), "same timestamp: skipped")
	require.Equal(t, 1, idx.Entries())
	require.ErrorIs(t, idx.MaybeAppend(900, 120, false), ErrIndexOffset, "timestamp going backwards")
	require.ErrorIs(t, idx.MaybeAppend(2000, 104, false), ErrIndexOffset, "offset going backwards")
	require.NoError(t, idx.MaybeAppend(2000, 120, false))
	require.NoError(t, idx.MaybeAppend(3000, 130, false))
	require.False(t, idx.IsFull())
	require.NoError(t, idx.MaybeAppend(4000, 140, false))
	require.True(t, idx.IsFull(), "one slot reserved")
	require.ErrorIs(t, idx.MaybeAppend(5000, 150, false), ErrIndexFull)
	require.NoError(t, idx.MaybeAppend(5000, 150, true), "the final entry uses the reserved slot")

	for _, c := range []struct {
		ts   int64
		want TimestampOffset
	}{
		{999, TimestampOffset{-1, 100}},
		{1000, TimestampOffset{1000, 105}},
		{2500, TimestampOffset{2000, 120}},
		{math.MaxInt64, TimestampOffset{5000, 150}},
	} {
		require.Equal(t, c.want, idx.Lookup(c.ts), "lookup %d", c.ts)
	}
	idx.TruncateTo(130)
	require.Equal(t, TimestampOffset{2000, 120}, idx.LastEntry())
	require.NoError(t, idx.SanityCheck())
	require.NoError(t, idx.Close())
	require.Len(t, readAll(t, vfs.OS, path), 24)
	require.Equal(t, []TimestampOffset{{1000, 105}, {2000, 120}}, DecodeTimeIndex(readAll(t, vfs.OS, path), 100))
}

// FuzzOffsetIndexLookup checks Lookup against a linear scan.
func FuzzOffsetIndexLookup(f *testing.F) {
	f.Add([]byte{1, 5, 9, 200}, int64(7))
	f.Add([]byte{}, int64(0))
	f.Fuzz(func(t *testing.T, deltas []byte, target int64) {
		mem := vfs.NewMem()
		idx, err := OpenOffsetIndex(mem, "/x.index", 1000, 8*int64(len(deltas)+1))
		require.NoError(t, err)
		var entries []OffsetPosition
		off, pos := int64(1000), int32(0)
		for _, d := range deltas {
			off += int64(d%50) + 1
			pos += int32(d) + 1
			require.NoError(t, idx.Append(off, pos))
			entries = append(entries, OffsetPosition{off, pos})
		}
		want := OffsetPosition{Offset: 1000}
		for _, e := range entries {
			if e.Offset <= target {
				want = e
			}
		}
		require.Equal(t, want, idx.Lookup(target))
	})
}
