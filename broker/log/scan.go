package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// batchHeader is what the log needs to know about one batch on disk
// without reading its records. For legacy (magic 0/1) entries baseOffset
// equals lastOffset: the wrapper carries only its last offset.
type batchHeader struct {
	baseOffset   int64
	lastOffset   int64
	size         int32 // total bytes on disk, LogOverhead included
	magic        int8
	maxTimestamp int64 // -1 when the batch carries none (magic 0)
	leaderEpoch  int32 // -1 for legacy entries
	records      int32 // record count (v2), 1 for legacy entries
}

func (h batchHeader) nextOffset() int64 { return h.lastOffset + 1 }

// headerBufSize is the most a header read needs: a whole v2 header.
const headerBufSize = record.BatchHeaderSize

var headerBufs = sync.Pool{New: func() any { return new([headerBufSize]byte) }}

// parseHeader decodes a batch header from b, which holds the first bytes of
// the batch (up to headerBufSize). It checks only what it needs to step to
// the next batch safely.
func parseHeader(b []byte) (batchHeader, error) {
	size, magic, err := record.PeekSize(b)
	if err != nil {
		return batchHeader{}, err
	}
	if size > 1<<31-1 {
		return batchHeader{}, &record.CorruptError{Offset: record.BatchLengthOffset, Reason: fmt.Sprintf("batch size %d overflows", size), Err: record.ErrBadSize}
	}
	h := batchHeader{
		baseOffset:   int64(binary.BigEndian.Uint64(b)),
		size:         int32(size),
		magic:        magic,
		maxTimestamp: -1,
		leaderEpoch:  -1,
		records:      1,
	}
	switch magic {
	case record.MagicV2:
		if size < record.BatchHeaderSize {
			return batchHeader{}, &record.CorruptError{Offset: record.BatchLengthOffset, Reason: fmt.Sprintf("batch size %d smaller than the v2 header (%d)", size, record.BatchHeaderSize), Err: record.ErrBadSize}
		}
		if len(b) < record.BatchHeaderSize {
			return batchHeader{}, &record.CorruptError{Offset: int64(len(b)), Reason: "v2 header cut short", Err: record.ErrShortBuffer}
		}
		bt := record.Batch(b)
		if bt.LastOffsetDelta() < 0 {
			return batchHeader{}, &record.CorruptError{Offset: record.LastOffsetDeltaOffset, Reason: fmt.Sprintf("negative lastOffsetDelta %d", bt.LastOffsetDelta()), Err: record.ErrBadSize}
		}
		h.lastOffset = h.baseOffset + int64(bt.LastOffsetDelta())
		h.maxTimestamp = bt.MaxTimestamp()
		h.leaderEpoch = bt.PartitionLeaderEpoch()
		h.records = bt.NumRecords()
	case record.MagicV0, record.MagicV1:
		h.lastOffset = h.baseOffset
		if magic == record.MagicV1 {
			if size < legacyV1MinSize || len(b) < legacyV1MinSize {
				return batchHeader{}, &record.CorruptError{Offset: record.BatchLengthOffset, Reason: fmt.Sprintf("v1 message size %d too small", size), Err: record.ErrBadSize}
			}
			h.maxTimestamp = int64(binary.BigEndian.Uint64(b[legacyTimestampOffset:]))
		}
	default:
		return batchHeader{}, &record.CorruptError{Offset: record.MagicOffset, Reason: fmt.Sprintf("magic %d", magic), Err: record.ErrBadMagic}
	}
	return h, nil
}

// Legacy message layout after the 12-byte log overhead: crc(4) magic(1)
// attributes(1) [timestamp(8) for v1] key value.
const (
	legacyCRCOffset       = 12
	legacyTimestampOffset = 18
	legacyV1MinSize       = record.LogOverhead + 22
)

// validateBatch fully checks one on-disk batch (raw holds exactly its
// bytes): v2 structure and CRC-32C, or the CRC-32 of a legacy message.
func validateBatch(raw []byte, h batchHeader) error {
	if h.magic == record.MagicV2 {
		_, err := record.Validate(raw)
		return err
	}
	want := binary.BigEndian.Uint32(raw[legacyCRCOffset:])
	if got := crc32.ChecksumIEEE(raw[record.MagicOffset:]); got != want {
		return &record.CorruptError{Offset: legacyCRCOffset, Reason: fmt.Sprintf("stored crc %d, computed %d", want, got), Err: record.ErrBadCRC}
	}
	return nil
}

// readHeaderAt reads and parses the header of the batch at pos in a file of
// the given size. done is true when fewer bytes than a header prefix remain
// or the batch extends past size (a torn tail): Kafka's file iterator stops
// there without error. A malformed header is an error.
func readHeaderAt(f vfs.File, pos, size int64) (h batchHeader, done bool, err error) {
	if size-pos < record.HeaderPrefixSize {
		return batchHeader{}, true, nil
	}
	bp := headerBufs.Get().(*[headerBufSize]byte)
	defer headerBufs.Put(bp)
	n := min(int64(headerBufSize), size-pos)
	if _, err := f.ReadAt(bp[:n], pos); err != nil && !errors.Is(err, io.EOF) {
		return batchHeader{}, false, err
	}
	h, err = parseHeader(bp[:n])
	if err != nil {
		if errors.Is(err, record.ErrShortBuffer) {
			return batchHeader{}, true, nil
		}
		return batchHeader{}, false, err
	}
	if pos+int64(h.size) > size {
		return batchHeader{}, true, nil
	}
	return h, false, nil
}

// headerWindow is how much a headerScanner reads at once: the default index
// interval, so that the scan from an index entry to the batch wanted
// usually costs one ReadAt (a larger window costs more in copying than it
// saves in syscalls).
const headerWindow = 4 << 10

var headerWindows = sync.Pool{New: func() any { return new([headerWindow]byte) }}

// headerScanner reads batch headers of a .log through a window buffer:
// consecutive headers that fit in the window cost one ReadAt. Call release
// when done.
type headerScanner struct {
	f     vfs.File
	size  int64
	buf   *[headerWindow]byte
	start int64
	n     int
}

func newHeaderScanner(f vfs.File, size int64) *headerScanner {
	return &headerScanner{f: f, size: size, buf: headerWindows.Get().(*[headerWindow]byte)}
}

func (hs *headerScanner) release() {
	headerWindows.Put(hs.buf)
	hs.buf = nil
}

// at parses the header of the batch at pos, with readHeaderAt's results.
func (hs *headerScanner) at(pos int64) (h batchHeader, done bool, err error) {
	if hs.size-pos < record.HeaderPrefixSize {
		return batchHeader{}, true, nil
	}
	need := min(int64(headerBufSize), hs.size-pos)
	if pos < hs.start || pos+need > hs.start+int64(hs.n) {
		want := min(int64(headerWindow), hs.size-pos)
		m, err := hs.f.ReadAt(hs.buf[:want], pos)
		if err != nil && !(errors.Is(err, io.EOF) && int64(m) >= need) {
			return batchHeader{}, false, err
		}
		hs.start, hs.n = pos, m
	}
	off := int(pos - hs.start)
	h, err = parseHeader(hs.buf[off : off+int(need)])
	if err != nil {
		if errors.Is(err, record.ErrShortBuffer) {
			return batchHeader{}, true, nil
		}
		return batchHeader{}, false, err
	}
	if pos+int64(h.size) > hs.size {
		return batchHeader{}, true, nil
	}
	return h, false, nil
}

// header returns the bytes of the header that the last successful at(pos)
// parsed (up to a whole v2 header), valid until the next call of at.
func (hs *headerScanner) header(pos int64) []byte {
	off := int(pos - hs.start)
	return hs.buf[off : off+int(min(int64(headerBufSize), hs.size-pos))]
}

// batchScanner walks a .log file batch by batch through a large read buffer,
// handing out each whole batch's bytes (valid until the next call). It is
// used by recovery, which must checksum every byte.
type batchScanner struct {
	f        vfs.File
	size     int64
	pos      int64 // position of the next batch
	buf      []byte
	bufStart int64
	bufLen   int
}

const scanBufSize = 1 << 20

func newBatchScanner(f vfs.File, size, from int64) *batchScanner {
	return &batchScanner{f: f, size: size, pos: from, buf: make([]byte, min(scanBufSize, max(size-from, 64)))}
}

// window makes [pos, pos+n) buffered and returns it.
func (s *batchScanner) window(pos int64, n int) ([]byte, error) {
	if pos >= s.bufStart && pos+int64(n) <= s.bufStart+int64(s.bufLen) {
		off := int(pos - s.bufStart)
		return s.buf[off : off+n], nil
	}
	if n > len(s.buf) {
		s.buf = make([]byte, n)
	}
	want := int(min(int64(len(s.buf)), s.size-pos))
	m, err := s.f.ReadAt(s.buf[:want], pos)
	if err != nil && !(errors.Is(err, io.EOF) && m >= n) {
		return nil, err
	}
	s.bufStart, s.bufLen = pos, m
	return s.buf[:n], nil
}

// errScanEnd marks a normal end of the scan.
var errScanEnd = errors.New("end of log")

// next returns the next batch. At a clean end it returns errScanEnd. A torn
// tail (bytes that do not form a whole batch) returns a *record.CorruptError
// wrapping record.ErrShortBuffer; a malformed or corrupt batch returns the
// validation error. I/O errors are returned as they are.
func (s *batchScanner) next() (batchHeader, []byte, error) {
	rem := s.size - s.pos
	if rem == 0 {
		return batchHeader{}, nil, errScanEnd
	}
	if rem < record.HeaderPrefixSize {
		return batchHeader{}, nil, &record.CorruptError{Offset: 0, Reason: fmt.Sprintf("%d trailing bytes do not hold a batch header", rem), Err: record.ErrShortBuffer}
	}
	hb, err := s.window(s.pos, int(min(rem, headerBufSize)))
	if err != nil {
		return batchHeader{}, nil, err
	}
	h, err := parseHeader(hb)
	if err != nil {
		return batchHeader{}, nil, err
	}
	if int64(h.size) > rem {
		return batchHeader{}, nil, &record.CorruptError{Offset: record.BatchLengthOffset, Reason: fmt.Sprintf("batch declares %d bytes, %d remain in the file", h.size, rem), Err: record.ErrShortBuffer}
	}
	raw, err := s.window(s.pos, int(h.size))
	if err != nil {
		return batchHeader{}, nil, err
	}
	if err := validateBatch(raw, h); err != nil {
		return batchHeader{}, nil, err
	}
	s.pos += int64(h.size)
	return h, raw, nil
}
