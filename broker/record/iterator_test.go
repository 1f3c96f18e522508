package record

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// segment concatenates a v1 message, a v0 message and two v2 batches.
func segment(t testing.TB) ([]byte, []int) {
	t.Helper()
	parts := [][]byte{
		legacyMessage(0, MagicV1, 0, 100, []byte("a"), []byte("1")),
		legacyMessage(1, MagicV0, 0, -1, nil, []byte("2")),
		sampleBatch(t, CodecNone),
		sampleBatch(t, CodecGzip),
	}
	var sizes []int
	for _, p := range parts {
		sizes = append(sizes, len(p))
	}
	return bytes.Join(parts, nil), sizes
}

func TestIteratorMixedMagic(t *testing.T) {
	seg, sizes := segment(t)
	it := NewIterator(seg)
	var pos int64
	var magics []int8
	for i := 0; it.Next(); i++ {
		e := it.Entry()
		require.Equal(t, pos, e.Position)
		require.Equal(t, sizes[i], e.Size)
		require.Equal(t, seg[pos:pos+int64(e.Size)], e.Bytes)
		magics = append(magics, e.Magic)
		if e.Magic == MagicV2 {
			require.Nil(t, e.Legacy)
			require.Equal(t, e.Size, e.Batch.Size())
		} else {
			require.Nil(t, e.Batch)
			require.Equal(t, e.Size, e.Legacy.TotalSize())
		}
		pos += int64(e.Size)
		require.Equal(t, pos, it.Position())
	}
	require.NoError(t, it.Err())
	require.Equal(t, []int8{1, 0, 2, 2}, magics)
	require.Zero(t, it.Remaining())
	require.False(t, it.Next(), "stays finished")
}

// TestIteratorTail covers FileLogInputStream's end-of-log rules.
func TestIteratorTail(t *testing.T) {
	seg, _ := segment(t)
	whole := len(seg)
	zeros := func(n int) []byte { return make([]byte, n) }
	withSize := func(size int32, n int) []byte {
		b := make([]byte, n)
		binary.BigEndian.PutUint32(b[8:], uint32(size))
		b[16] = 2
		return b
	}
	cases := []struct {
		name      string
		tail      []byte
		entries   int
		remaining int
		err       error
	}{
		{"clean", nil, 4, 0, nil},
		{"17 zero bytes: too short to read", zeros(17), 4, 17, nil},
		{"18 zero bytes: size 0 is corrupt", zeros(18), 4, 18, ErrBadSize},
		{"preallocated zeros", zeros(4096), 4, 4096, ErrBadSize},
		{"size 13", withSize(13, 40), 4, 40, ErrBadSize},
		{"negative size", withSize(-5, 40), 4, 40, ErrBadSize},
		{"torn batch", sampleBatch(t, CodecNone)[:40], 4, 40, nil},
		{"size past end", withSize(1000, 100), 4, 100, nil},
		{"v2 shorter than header", withSize(30, 42), 4, 42, ErrBadSize},
		{"magic 3", func() []byte { b := withSize(100, 112); b[16] = 3; return b }(), 4, 112, ErrBadMagic},
		{"legacy with bad key length", func() []byte {
			b := legacyMessage(9, 0, 0, -1, nil, []byte("x"))
			binary.BigEndian.PutUint32(b[18:], 99)
			return b
		}(), 4, 27, ErrInvalidRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := append(bytes.Clone(seg), tc.tail...)
			it := NewIterator(b)
			n := 0
			for it.Next() {
				n++
			}
			require.Equal(t, tc.entries, n)
			require.Equal(t, tc.remaining, it.Remaining())
			require.Equal(t, int64(whole), it.Position())
			if tc.err == nil {
				require.NoError(t, it.Err())
				return
			}
			ce := requireCorrupt(t, it.Err(), tc.err)
			require.GreaterOrEqual(t, ce.Offset, int64(whole), "offset is relative to the whole buffer")
		})
	}
}

func TestIteratorEmpty(t *testing.T) {
	for _, b := range [][]byte{nil, {}, make([]byte, 17)} {
		it := NewIterator(b)
		require.False(t, it.Next())
		require.NoError(t, it.Err())
		require.Equal(t, len(b), it.Remaining())
	}
}
