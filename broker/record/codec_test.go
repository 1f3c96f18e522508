package record

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/stretchr/testify/require"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// payload returns n bytes that compress moderately, like record data:
// repeated words with some noise.
func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	words := []string{"kafka ", "record ", "batch ", "offset ", "value-", "key-", "{\"id\":", "}"}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		if r.IntN(8) == 0 {
			b = append(b, byte(r.Uint32()))
			continue
		}
		b = append(b, words[r.IntN(len(words))]...)
	}
	return b[:n]
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, ^seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestCodecRoundTrip(t *testing.T) {
	inputs := map[string][]byte{
		"empty":        {},
		"one":          {42},
		"small":        []byte("hello, kafka"),
		"32KiB":        payload(32<<10, 1),
		"32KiB+1":      payload(32<<10+1, 2),
		"300KiB":       payload(300<<10, 3),
		"random-100K":  randomBytes(100<<10, 4),
		"zeros-1MiB":   make([]byte, 1<<20),
		"64KiB-blocks": payload(3*64<<10, 5),
	}
	for _, c := range allCodecs {
		for name, in := range inputs {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				prefix := []byte("prefix")
				enc, err := Compress(c, bytes.Clone(prefix), in)
				require.NoError(t, err)
				require.Equal(t, prefix, enc[:len(prefix)], "Compress appends to dst")
				got, err := Decompress(c, enc[len(prefix):])
				require.NoError(t, err)
				require.Equal(t, len(in), len(got))
				require.True(t, bytes.Equal(in, got))

				app, err := AppendDecompressed(c, bytes.Clone(prefix), enc[len(prefix):])
				require.NoError(t, err)
				require.Equal(t, append(bytes.Clone(prefix), in...), app)
			})
		}
	}
}

func TestCodecUnknown(t *testing.T) {
	for _, c := range []Codec{5, 6, 7, -1} {
		_, err := Compress(c, nil, []byte("x"))
		requireCorrupt(t, err, ErrBadCodec)
		_, err = Decompress(c, []byte("x"))
		requireCorrupt(t, err, ErrBadCodec)
	}
}

// TestCodecCorruptInput feeds each codec damaged streams: every failure
// must be a *CorruptError wrapping ErrBadCodec.
func TestCodecCorruptInput(t *testing.T) {
	in := payload(100<<10, 7)
	for _, c := range allCodecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			enc, err := Compress(c, nil, in)
			require.NoError(t, err)
			cases := map[string][]byte{
				"garbage":   []byte("definitely not a compressed stream"),
				"truncated": enc[:len(enc)/2],
				"header":    enc[:min(len(enc), 10)],
				"empty":     nil,
			}
			for name, src := range cases {
				t.Run(name, func(t *testing.T) {
					_, err := Decompress(c, src)
					requireCorrupt(t, err, ErrBadCodec)
					dst := make([]byte, 3, 1<<20)
					out, err := AppendDecompressed(c, dst, src)
					requireCorrupt(t, err, ErrBadCodec)
					require.Len(t, out, 3, "dst comes back unchanged")
				})
			}
			// Flipping bytes must never panic; gzip, lz4-with-no-checksum
			// and zstd may or may not notice.
			for i := range min(len(enc), 512) {
				bad := bytes.Clone(enc)
				bad[i] ^= 0x5a
				if _, err := Decompress(c, bad); err != nil {
					requireCorrupt(t, err, ErrBadCodec)
				}
			}
		})
	}
}

// TestXerialWriterFormat checks the snappy-java framing Kafka's consumers
// expect: the 16-byte header, then one chunk per 32 KiB of input.
func TestXerialWriterFormat(t *testing.T) {
	in := payload(100<<10, 9)
	enc, err := Compress(CodecSnappy, nil, in)
	require.NoError(t, err)
	require.Equal(t, []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}, enc[:16])
	chunks := xerialChunks(t, enc)
	require.Len(t, chunks, 4) // 32+32+32+4 KiB
	p := xerialHeaderSize
	var total int
	for _, n := range chunks {
		block := enc[p+4 : p+4+n]
		l, err := snappy.DecodedLen(block)
		require.NoError(t, err)
		require.LessOrEqual(t, l, xerialBlockSize)
		total += l
		p += 4 + n
	}
	require.Equal(t, len(in), total)
	require.Equal(t, len(enc), p)

	empty, err := Compress(CodecSnappy, nil, nil)
	require.NoError(t, err)
	require.Len(t, empty, xerialHeaderSize, "empty input is a bare header")
	got, err := Decompress(CodecSnappy, empty)
	require.NoError(t, err)
	require.Empty(t, got)
}

// xerialStream frames in as a xerial stream with the given input block size.
func xerialStream(in []byte, block int) []byte {
	out := append([]byte(nil), xerialMagic[:]...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(in) > 0 {
		n := min(block, len(in))
		enc := snappy.Encode(nil, in[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(enc)))
		out = append(out, enc...)
		in = in[n:]
	}
	return out
}

// TestSnappyReadVariants covers everything SnappyInputStream accepts:
// xerial with any chunking, concatenated xerial streams, and a bare snappy
// block when the header is absent.
func TestSnappyReadVariants(t *testing.T) {
	in := payload(50<<10, 11)
	half := len(in) / 2
	cases := map[string][]byte{
		"raw block":        snappy.Encode(nil, in),
		"xerial 1 chunk":   xerialStream(in, len(in)),
		"xerial 1KiB":      xerialStream(in, 1<<10),
		"xerial 7 bytes":   xerialStream(in, 7),
		"concatenated":     append(xerialStream(in[:half], 4<<10), xerialStream(in[half:], 32<<10)...),
		"with empty chunk": append(xerialStream(in, 64<<10), 0, 0, 0, 1, 0), // a chunk holding an empty block
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Decompress(CodecSnappy, src)
			require.NoError(t, err)
			require.True(t, bytes.Equal(in, got))
		})
	}

	bad := map[string][]byte{
		"chunk past end":      xerialStream(in, 1<<10)[:100],
		"torn length":         append(xerialStream(in, 1<<10), 0, 0),
		"version 0":           func() []byte { s := xerialStream(in, 1<<10); s[11] = 0; return s }(),
		"bad block":           append(xerialStream(nil, 1), 0, 0, 0, 3, 0xff, 0xff, 0xff),
		"raw garbage":         []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"negative chunk size": append(xerialStream(nil, 1), 0xff, 0, 0, 0),
	}
	for name, src := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := Decompress(CodecSnappy, src)
			requireCorrupt(t, err, ErrBadCodec)
		})
	}
}

// TestLZ4FrameFormat checks the frame Kafka writes for magic >= 1 (header
// 04 22 4D 18 60 40 82, 64 KiB independent blocks, no checksums, end mark).
func TestLZ4FrameFormat(t *testing.T) {
	in := payload(200<<10, 13)
	enc, err := Compress(CodecLZ4, nil, in)
	require.NoError(t, err)
	require.Equal(t, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}, enc[:7])
	require.Equal(t, []byte{0, 0, 0, 0}, enc[len(enc)-4:], "end mark, no content checksum")
	var blocks int
	p := 7
	for {
		n := binary.LittleEndian.Uint32(enc[p:])
		p += 4
		if n == 0 {
			break
		}
		n &^= 1 << 31 // stored-uncompressed flag
		require.LessOrEqual(t, int(n), 64<<10)
		p += int(n)
		blocks++
	}
	require.Equal(t, len(enc), p)
	require.Equal(t, 4, blocks) // 200 KiB in 64 KiB blocks
}

func TestXXH32(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"", 0x02cc5d05},
		{"a", 0x550d7456},
		{"abc", 0x32d153ff},
	} {
		require.Equal(t, tc.want, xxh32Small([]byte(tc.in)), "%q", tc.in)
	}
	// The lz4 header checksum byte Kafka writes, and the broken one.
	require.Equal(t, byte(0x82), byte(xxh32Small([]byte{0x60, 0x40})>>8))
	require.Equal(t, byte(0x1a), byte(xxh32Small([]byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40})>>8))
}

// TestLZ4LegacyHeaderChecksum reproduces Kafka's magic-0 LZ4 quirk: the
// frame's HC byte was computed over the magic too. Legacy magic-0 reading
// tolerates it; everything else rejects it.
func TestLZ4LegacyHeaderChecksum(t *testing.T) {
	inner := append(
		legacyMessage(0, MagicV0, 0, -1, []byte("k0"), []byte("v0")),
		legacyMessage(1, MagicV0, 0, -1, nil, []byte("v1"))...)
	frame, err := Compress(CodecLZ4, nil, inner)
	require.NoError(t, err)
	require.Equal(t, byte(0x82), frame[6])
	broken := bytes.Clone(frame)
	broken[6] = 0x1a
	require.Equal(t, frame, fixLZ4HeaderChecksum(broken))
	require.Equal(t, []byte{0x1a}, broken[6:7], "fix copies, never writes its input")

	_, err = Decompress(CodecLZ4, broken)
	requireCorrupt(t, err, ErrBadCodec)

	w, err := ParseLegacy(legacyMessage(1, MagicV0, int8(CodecLZ4), -1, nil, broken))
	require.NoError(t, err)
	require.True(t, w.IsValid())
	msgs, err := w.Inner()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1}, offsetsOf(msgs))
	require.Equal(t, "v1", string(msgs[1].Value))

	// Magic 1 had the fix: its reader checks HC.
	innerV1 := legacyMessage(0, MagicV1, 0, 5, nil, []byte("v"))
	f1, err := Compress(CodecLZ4, nil, innerV1)
	require.NoError(t, err)
	f1[6] = 0x1a
	w1, err := ParseLegacy(legacyMessage(0, MagicV1, int8(CodecLZ4), 5, nil, f1))
	require.NoError(t, err)
	_, err = w1.Inner()
	requireCorrupt(t, err, ErrBadCodec)
}

// TestDecompressLimit: no codec may produce more than MaxDecompressedSize,
// whatever the stream claims.
func TestDecompressLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 64 MiB per codec")
	}
	big := make([]byte, MaxDecompressedSize+1)
	exact := big[:MaxDecompressedSize]
	for _, c := range allCodecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			enc, err := Compress(c, nil, big)
			require.NoError(t, err)
			_, err = Decompress(c, enc)
			ce := requireCorrupt(t, err, ErrBadCodec)
			require.Contains(t, ce.Reason, "limit")

			enc, err = Compress(c, nil, exact)
			require.NoError(t, err)
			got, err := Decompress(c, enc)
			require.NoError(t, err)
			require.Len(t, got, MaxDecompressedSize)
		})
	}
	t.Run("snappy block header lies", func(t *testing.T) {
		// A tiny raw block declaring 1 GiB must fail before allocating.
		src := binary.AppendUvarint(nil, 1<<30)
		src = append(src, 0)
		_, err := Decompress(CodecSnappy, src)
		requireCorrupt(t, err, ErrBadCodec)
		_, err = Decompress(CodecSnappy, append(xerialStream(nil, 1), append([]byte{0, 0, 0, byte(len(src))}, src...)...))
		requireCorrupt(t, err, ErrBadCodec)
	})
}
