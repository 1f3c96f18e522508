package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLegacy(t *testing.T) {
	v0 := legacyMessage(7, MagicV0, 0, -1, []byte("k"), []byte("v"))
	v1 := legacyMessage(8, MagicV1, TimestampTypeMask, 1234, nil, []byte("value"))
	m, err := ParseLegacy(v0)
	require.NoError(t, err)
	require.Equal(t, int64(7), m.Offset)
	require.Equal(t, int32(LegacyOverheadV0+2), m.Size)
	require.Equal(t, len(v0), m.TotalSize())
	require.Equal(t, NoTimestampType, m.TimestampType())
	require.Equal(t, int64(-1), m.Timestamp)
	require.True(t, m.IsValid())

	m, err = ParseLegacy(v1)
	require.NoError(t, err)
	require.Equal(t, int64(1234), m.Timestamp)
	require.Equal(t, LogAppendTime, m.TimestampType())
	require.Nil(t, m.Key)
	require.Equal(t, "value", string(m.Value))
	require.True(t, m.IsValid())
	require.Equal(t, m.ComputeCRC(), LegacyMessage{Magic: 1, Attributes: TimestampTypeMask, Timestamp: 1234, Value: []byte("value")}.ComputeCRC())

	// Trailing bytes after the message are the caller's business.
	m2, err := ParseLegacy(append(bytes.Clone(v1), 1, 2, 3))
	require.NoError(t, err)
	require.Equal(t, m.Size, m2.Size)

	set := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"short prefix", v0[:16], ErrShortBuffer},
		{"size below minimum", set(v0, 8, 13), ErrBadSize},
		{"v1 size below v1 minimum", set(v1, 8, 20), ErrBadSize},
		{"truncated", v0[:len(v0)-1], ErrShortBuffer},
		{"magic 2", func() []byte { b := bytes.Clone(v0); b[16] = 2; return b }(), ErrBadMagic},
		{"key past end", set(v0, 18, 100), ErrInvalidRecord},
		{"key length -2", set(v0, 18, 0xfffffffe), ErrInvalidRecord},
		{"value past end", set(v0, 23, 2), ErrInvalidRecord},
		{"value short of end", set(v0, 23, 0), ErrInvalidRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLegacy(tc.in)
			requireCorrupt(t, err, tc.want)
		})
	}
}

// wrapper compresses inner messages into a magic 0/1 wrapper message.
func wrapper(t testing.TB, offset int64, magic int8, c Codec, logAppend bool, ts int64, inner ...[]byte) []byte {
	t.Helper()
	val, err := Compress(c, nil, bytes.Join(inner, nil))
	require.NoError(t, err)
	attrs := int8(c)
	if logAppend {
		attrs |= TimestampTypeMask
	}
	return legacyMessage(offset, magic, attrs, ts, nil, val)
}

func TestLegacyInner(t *testing.T) {
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
		t.Run(c.String()+"/v0 absolute", func(t *testing.T) {
			w, err := ParseLegacy(wrapper(t, 102, MagicV0, c, false, -1,
				legacyMessage(100, 0, 0, -1, nil, []byte("a")),
				legacyMessage(101, 0, 0, -1, nil, []byte("b")),
				legacyMessage(102, 0, 0, -1, nil, []byte("c"))))
			require.NoError(t, err)
			inner, err := w.Inner()
			require.NoError(t, err)
			require.Equal(t, []int64{100, 101, 102}, offsetsOf(inner))
		})
		t.Run(c.String()+"/v1 relative", func(t *testing.T) {
			w, err := ParseLegacy(wrapper(t, 52, MagicV1, c, false, 30,
				legacyMessage(0, 1, 0, 10, nil, []byte("a")),
				legacyMessage(1, 1, 0, 30, nil, []byte("b")),
				legacyMessage(2, 1, 0, 20, nil, []byte("c"))))
			require.NoError(t, err)
			inner, err := w.Inner()
			require.NoError(t, err)
			require.Equal(t, []int64{50, 51, 52}, offsetsOf(inner))
			for i, ts := range []int64{10, 30, 20} {
				require.Equal(t, ts, inner[i].Timestamp)
				require.Equal(t, CreateTime, inner[i].TimestampType())
				require.True(t, inner[i].IsValid())
			}
		})
		t.Run(c.String()+"/v1 log append time", func(t *testing.T) {
			w, err := ParseLegacy(wrapper(t, 1, MagicV1, c, true, 9999,
				legacyMessage(0, 1, 0, 10, nil, []byte("a")),
				legacyMessage(1, 1, 0, 30, nil, []byte("b"))))
			require.NoError(t, err)
			inner, err := w.Inner()
			require.NoError(t, err)
			for _, m := range inner {
				require.Equal(t, int64(9999), m.Timestamp)
				require.Equal(t, LogAppendTime, m.TimestampType())
				require.True(t, m.IsValid(), "the override must not change the CRC check")
			}
		})
	}

	bad := []struct {
		name string
		msg  []byte
		want error
	}{
		{"null value", legacyMessage(0, 0, int8(CodecGzip), -1, nil, nil), ErrInvalidRecord},
		{"zstd in magic 1", legacyMessage(0, 1, int8(CodecZstd), 0, nil, mustCompress(CodecZstd, legacyMessage(0, 1, 0, 0, nil, nil))), ErrBadCodec},
		{"codec 7", legacyMessage(0, 0, 7, -1, nil, []byte("x")), ErrBadCodec},
		{"garbage value", legacyMessage(0, 0, int8(CodecGzip), -1, nil, []byte("garbage")), ErrBadCodec},
		{"empty inner set", wrapper(t, 0, 0, CodecGzip, false, -1), ErrInvalidRecord},
		{"nested compression", wrapper(t, 0, 0, CodecGzip, false, -1, legacyMessage(0, 0, int8(CodecGzip), -1, nil, []byte("x"))), ErrInvalidRecord},
		{"magic mismatch", wrapper(t, 0, 1, CodecGzip, false, 0, legacyMessage(0, 0, 0, -1, nil, []byte("x"))), ErrInvalidRecord},
		{"torn inner set", legacyMessage(0, 0, int8(CodecGzip), -1, nil, mustCompress(CodecGzip, legacyMessage(0, 0, 0, -1, nil, []byte("xyz"))[:20])), ErrShortBuffer},
		{"wrapper offset below last inner", wrapper(t, 1, 1, CodecGzip, false, 0,
			legacyMessage(0, 1, 0, 0, nil, nil), legacyMessage(1, 1, 0, 0, nil, nil), legacyMessage(2, 1, 0, 0, nil, nil)), ErrInvalidRecord},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseLegacy(tc.msg)
			require.NoError(t, err)
			_, err = m.Inner()
			requireCorrupt(t, err, tc.want)
		})
	}
}

// TestLegacyCorruptEveryByte flips every byte of a gzip wrapper: the CRC
// notices changes from the magic byte on, and nothing panics.
func TestLegacyCorruptEveryByte(t *testing.T) {
	for _, magic := range []int8{MagicV0, MagicV1} {
		t.Run(fmt.Sprint("magic", magic), func(t *testing.T) {
			orig := wrapper(t, 2, magic, CodecGzip, false, 5,
				legacyMessage(0, magic, 0, 5, []byte("k"), []byte("v")),
				legacyMessage(1, magic, 0, 5, nil, nil))
			for i := range orig {
				b := bytes.Clone(orig)
				b[i] ^= 0x41
				exercise(t, b)
				if m, err := ParseLegacy(b); err == nil && i >= legacyMagicOffset-4 {
					require.False(t, m.IsValid(), "byte %d", i)
				}
			}
		})
	}
}
