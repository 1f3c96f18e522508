package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedSize bounds the output of every decompression in this
// package. Iterate and Inner decompress a whole records section into memory
// (records alias it), so without a bound a few kilobytes of hostile gzip or
// zstd could demand gigabytes. 64 MiB is far above anything a producer
// builds: the producer fills batches up to batch.size (16 KiB default) of
// estimated compressed bytes and the broker caps a batch at
// message.max.bytes (1 MiB default) compressed, so only pathological ratios
// come near it. Output beyond the bound fails with ErrBadCodec.
const MaxDecompressedSize = 64 << 20

// Xerial (snappy-java) framing. Kafka's snappy codec is snappy-java's
// SnappyOutputStream, not Google's snappy framing format: a 16-byte header
// (magic, version, min compatible version) followed by chunks, each an int32
// big-endian length and one raw snappy block.
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	// xerialBlockSize is how much input goes into one chunk; snappy-java
	// has used 32 KiB since 1.1.x, which is what current Kafka writes.
	xerialBlockSize = 32 << 10
	// lz4BlockSize is the frame's max block size Kafka writes (BD 0x40).
	lz4BlockSize = lz4.Block64Kb
)

// Compress appends the compressed form of src to dst, as Kafka's producer
// writes it for codec c, and returns the extended slice. CodecNone appends
// src unchanged. Gzip produces one gzip member, snappy a xerial stream with
// 32 KiB blocks, lz4 a frame with 64 KiB independent blocks and no
// checksums, zstd one standard frame.
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return compressGzip(dst, src)
	case CodecSnappy:
		return compressXerial(dst, src), nil
	case CodecLZ4:
		return compressLZ4(dst, src)
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, corrupt(ErrBadCodec, 0, "unknown compression codec id %d", c)
}

// Decompress returns the decompressed form of src. The result is a new
// slice the caller owns (CodecNone returns src itself). Output larger than
// MaxDecompressedSize, a damaged stream or an unknown codec yield a
// *CorruptError wrapping ErrBadCodec.
func Decompress(c Codec, src []byte) ([]byte, error) {
	if c == CodecNone {
		return src, nil
	}
	return AppendDecompressed(c, nil, src)
}

// AppendDecompressed appends the decompressed form of src to dst; it is
// Decompress for callers that keep a buffer across calls (dst may come from
// a pool). The MaxDecompressedSize bound applies to the appended part;
// CodecNone appends src as is. On error dst is returned unchanged. dst's
// spare capacity must not overlap src.
func AppendDecompressed(c Codec, dst, src []byte) ([]byte, error) {
	orig := dst
	var err error
	if len(src) == 0 && c != CodecNone {
		// Every codec's stream has a header, so nothing at all is damage
		// (and not an empty records section, which compresses to bytes).
		return dst, corrupt(ErrBadCodec, 0, "empty %s stream", c)
	}
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		dst, err = decompressGzip(dst, src)
	case CodecSnappy:
		dst, err = decompressSnappy(dst, src)
	case CodecLZ4:
		dst, err = decompressLZ4(dst, src)
	case CodecZstd:
		dst, err = zstdDecoder().DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			err = errTooLarge
		}
	default:
		return dst, corrupt(ErrBadCodec, 0, "unknown compression codec id %d", c)
	}
	if err != nil {
		return orig, corrupt(ErrBadCodec, 0, "%s decompression failed: %v", c, err)
	}
	return dst, nil
}

var errTooLarge = fmt.Errorf("output exceeds the %d-byte decompression limit", MaxDecompressedSize)

// readCapped appends everything r produces to dst, failing with errTooLarge
// once more than MaxDecompressedSize bytes arrive. It grows dst itself
// rather than using io.ReadAll so the first guess (hint, typically a few
// times the compressed size) avoids most reallocations and the cap check
// happens before each growth, never after a huge one.
func readCapped(dst []byte, r io.Reader, hint int) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, min(max(hint, 512), MaxDecompressedSize+1))
	for {
		if len(dst) == cap(dst) {
			// Double what has been produced so far, but never past one
			// byte beyond the limit: enough to detect the overflow.
			produced := len(dst) - start
			dst = slices.Grow(dst, min(max(produced, 512), MaxDecompressedSize+1-produced))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > MaxDecompressedSize {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// decompressHint guesses the decompressed size of n compressed bytes; Kafka
// record data typically compresses 2-5x.
func decompressHint(n int) int { return 4 * n }

// --- pooled streams (gzip, lz4) ---

// sliceWriter appends to b; pooled codecs write through one so they need
// no bytes.Buffer per call and keep no reference to the caller's slice once
// b is cleared.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// resetWriter is a compressing stream that can be pointed at a new output,
// as gzip.Writer and lz4.Writer can; Reset keeps its options.
type resetWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// streamEncoder is a pooled compressing stream writing into out.
type streamEncoder[W resetWriter] struct {
	out sliceWriter
	w   W
}

// newEncoderPool pools streamEncoders built by newWriter, which gets the
// encoder's own out to write to.
func newEncoderPool[W resetWriter](newWriter func(io.Writer) W) *pool[streamEncoder[W]] {
	return newPool(
		func() *streamEncoder[W] {
			e := new(streamEncoder[W])
			e.w = newWriter(&e.out)
			return e
		},
		func(e *streamEncoder[W]) { e.out.b = nil },
	)
}

// compressStream appends src compressed by one of p's encoders to dst, as
// one complete stream (gzip member, lz4 frame).
func compressStream[W resetWriter](p *pool[streamEncoder[W]], dst, src []byte) ([]byte, error) {
	e := p.get()
	defer p.put(e)
	e.out.b = dst
	e.w.Reset(&e.out)
	if _, err := e.w.Write(src); err != nil {
		return dst, err
	}
	if err := e.w.Close(); err != nil {
		return dst, err
	}
	return e.out.b, nil
}

// --- gzip ---

type gzipDecoder struct {
	in bytes.Reader
	r  gzip.Reader
}

var (
	gzipEncoders = newEncoderPool(func(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) })
	gzipDecoders = newPool(
		func() *gzipDecoder { return new(gzipDecoder) },
		func(d *gzipDecoder) { d.in.Reset(nil) },
	)
)

func compressGzip(dst, src []byte) ([]byte, error) { return compressStream(gzipEncoders, dst, src) }

// decompressGzip reads every gzip member in src (Java's GZIPInputStream
// also continues across concatenated members).
func decompressGzip(dst, src []byte) ([]byte, error) {
	d := gzipDecoders.get()
	defer gzipDecoders.put(d)
	d.in.Reset(src)
	if err := d.r.Reset(&d.in); err != nil {
		return dst, err
	}
	return readCapped(dst, &d.r, decompressHint(len(src)))
}

// --- snappy (xerial framing) ---

// compressXerial writes the xerial header and one chunk per 32 KiB of
// input, encoding each block straight into dst's spare capacity.
func compressXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic[:]...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // min compatible version
	for len(src) > 0 {
		block := src[:min(len(src), xerialBlockSize)]
		src = src[len(block):]
		bound := snappy.MaxEncodedLen(len(block))
		at := len(dst)
		dst = append(dst, make([]byte, 4+bound)...)
		enc := snappy.Encode(dst[at+4:], block)
		// Encode returns a prefix of its dst argument when it fits, which
		// it always does here; copy covers the contract's other branch.
		n := copy(dst[at+4:], enc)
		binary.BigEndian.PutUint32(dst[at:], uint32(n))
		dst = dst[:at+4+n]
	}
	return dst
}

// decompressSnappy reads what snappy-java's SnappyInputStream reads: a
// xerial stream when the payload starts with the xerial magic (any
// chunking; concatenated streams, each with its own header, are accepted),
// otherwise the whole payload as a single raw snappy block, which some
// non-Java clients (kafkajs) produce.
func decompressSnappy(dst, src []byte) ([]byte, error) {
	if !isXerial(src) {
		return appendSnappyBlock(dst, src, MaxDecompressedSize)
	}
	start := len(dst)
	pos := 0
	for pos < len(src) {
		if isXerial(src[pos:]) {
			if v := int32(binary.BigEndian.Uint32(src[pos+8:])); v < 1 {
				return dst, fmt.Errorf("xerial stream version %d is not supported", v)
			}
			pos += xerialHeaderSize
			continue
		}
		if len(src)-pos < 4 {
			return dst, fmt.Errorf("truncated xerial chunk length at byte %d", pos)
		}
		n := int(binary.BigEndian.Uint32(src[pos:]))
		pos += 4
		if n > len(src)-pos {
			return dst, fmt.Errorf("xerial chunk of %d bytes at byte %d runs past the end (%d left)", n, pos-4, len(src)-pos)
		}
		var err error
		dst, err = appendSnappyBlock(dst, src[pos:pos+n], MaxDecompressedSize-(len(dst)-start))
		if err != nil {
			return dst, err
		}
		pos += n
	}
	return dst, nil
}

func isXerial(b []byte) bool {
	return len(b) >= xerialHeaderSize && bytes.Equal(b[:len(xerialMagic)], xerialMagic[:])
}

// appendSnappyBlock decodes one raw snappy block onto dst, checking the
// declared length against limit before allocating for it.
func appendSnappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, err
	}
	if n > limit {
		return dst, errTooLarge
	}
	at := len(dst)
	dst = append(dst, make([]byte, n)...)
	out, err := snappy.Decode(dst[at:], block)
	if err != nil {
		return dst[:at], err
	}
	if len(out) != n {
		return dst[:at], errors.New("snappy block length mismatch")
	}
	return dst, nil
}

// --- lz4 ---

type lz4Decoder struct {
	in bytes.Reader
	r  *lz4.Reader
}

var (
	lz4Encoders = newEncoderPool(func(out io.Writer) *lz4.Writer {
		w := lz4.NewWriter(out)
		// Kafka's frame: 64 KiB independent blocks, no block or content
		// checksum, no content size. Reset keeps these options.
		if err := w.Apply(
			lz4.BlockSizeOption(lz4BlockSize),
			lz4.BlockChecksumOption(false),
			lz4.ChecksumOption(false),
			lz4.ConcurrencyOption(1),
		); err != nil {
			panic(fmt.Sprintf("record: lz4 writer options: %v", err))
		}
		return w
	})
	lz4Decoders = newPool(
		func() *lz4Decoder {
			d := new(lz4Decoder)
			d.r = lz4.NewReader(&d.in)
			return d
		},
		func(d *lz4Decoder) { d.in.Reset(nil) },
	)
)

func compressLZ4(dst, src []byte) ([]byte, error) { return compressStream(lz4Encoders, dst, src) }

// decompressLZ4 reads an lz4 frame. It is more lenient than Kafka, which
// refuses block-dependent frames: any standard frame decodes.
func decompressLZ4(dst, src []byte) ([]byte, error) {
	d := lz4Decoders.get()
	defer lz4Decoders.put(d)
	d.in.Reset(src)
	d.r.Reset(&d.in)
	return readCapped(dst, d.r, decompressHint(len(src)))
}

// fixLZ4HeaderChecksum returns src with the frame descriptor's header
// checksum (HC) byte recomputed. Kafka clients before 0.10 computed HC over
// the 4 magic bytes as well as the descriptor, Kafka still writes that
// broken byte for magic-0 messages and skips the check when reading them;
// standard decoders reject it, so the legacy reader repairs it first. src is
// returned unchanged when it is not an lz4 frame it can repair.
func fixLZ4HeaderChecksum(src []byte) []byte {
	const magic = 0x184D2204
	if len(src) < 7 || binary.LittleEndian.Uint32(src) != magic {
		return src
	}
	flg := src[4]
	end := 6 // FLG, BD
	if flg&0x08 != 0 {
		end += 8 // content size
	}
	if flg&0x01 != 0 {
		end += 4 // dictionary id
	}
	if len(src) <= end {
		return src
	}
	hc := byte(xxh32Small(src[4:end]) >> 8)
	if src[end] == hc {
		return src
	}
	fixed := bytes.Clone(src)
	fixed[end] = hc
	return fixed
}

// xxh32Small is xxHash32 with seed 0 for inputs shorter than 16 bytes (a
// frame descriptor is at most 14), which need only the tail rounds.
func xxh32Small(b []byte) uint32 {
	const (
		p1 = 2654435761
		p2 = 2246822519
		p3 = 3266489917
		p4 = 668265263
		p5 = 374761393
	)
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

// --- zstd ---

// The zstd encoder and decoder are built on first use and shared: both are
// safe for concurrent EncodeAll/DecodeAll and expensive to create. The
// decoder caps output (and so the window it will allocate) at
// MaxDecompressedSize.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithEncoderCRC(false),
		)
		if err != nil {
			panic(fmt.Sprintf("record: zstd encoder: %v", err))
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxDecompressedSize),
			zstd.WithDecoderMaxWindow(MaxDecompressedSize),
		)
		if err != nil {
			panic(fmt.Sprintf("record: zstd decoder: %v", err))
		}
		return d
	})
)
