package checkpoint

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/qk-project/qk/broker/vfs"
)

// Producer-state snapshot layout (ProducerSnapshot.json, version 1).
const (
	ProducerSnapshotVersion    = 1
	ProducerSnapshotHeaderSize = 10 // version int16, crc uint32, count int32
	ProducerSnapshotEntrySize  = 46
	snapshotCRCOffset          = 2
	snapshotCountOffset        = 6 // the CRC covers [6, end)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ProducerSnapshotEntry is the state of one producer ID as of a snapshot:
// enough to deduplicate its retries and to know its open transaction
// without replaying the log.
type ProducerSnapshotEntry struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32 // sequence of the last record of the last batch
	LastOffset            int64 // offset of the last record of the last batch
	OffsetDelta           int32 // lastOffset - baseOffset of the last batch
	Timestamp             int64 // max timestamp of the last batch
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64 // -1 when no transaction is open
}

// FirstSequence is the sequence of the first record of the producer's last
// batch. Sequences wrap from math.MaxInt32 to 0, so a batch may straddle
// the wrap; the arithmetic is Kafka's DefaultRecordBatch.decrementSequence.
func (e ProducerSnapshotEntry) FirstSequence() int32 {
	if e.LastSequence < e.OffsetDelta {
		return math.MaxInt32 - (e.OffsetDelta - e.LastSequence) + 1
	}
	return e.LastSequence - e.OffsetDelta
}

// ReadProducerSnapshot reads and decodes a <offset>.snapshot file.
func ReadProducerSnapshot(fsys vfs.FS, path string) ([]ProducerSnapshotEntry, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	entries, err := DecodeProducerSnapshot(b)
	return entries, withPath(err, path)
}

// EncodeProducerSnapshot returns the version-1 snapshot bytes for entries.
func EncodeProducerSnapshot(entries []ProducerSnapshotEntry) []byte {
	b := make([]byte, ProducerSnapshotHeaderSize, ProducerSnapshotHeaderSize+len(entries)*ProducerSnapshotEntrySize)
	binary.BigEndian.PutUint16(b, ProducerSnapshotVersion)
	binary.BigEndian.PutUint32(b[snapshotCountOffset:], uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.ProducerEpoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.LastSequence))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.OffsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[snapshotCRCOffset:], crc32.Checksum(b[snapshotCountOffset:], castagnoli))
	return b
}

// DecodeProducerSnapshot decodes a version-1 producer-state snapshot. It
// checks, in Kafka's order, the version, then the CRC-32C over bytes
// [6, end), then that the entry count matches the length exactly. A
// snapshot that fails is useless (Kafka deletes it and rebuilds producer
// state from the log), so the error names the reason but nothing partial
// is returned. It never panics.
func DecodeProducerSnapshot(b []byte) ([]ProducerSnapshotEntry, error) {
	fail := func(err error, detail string, args ...any) ([]ProducerSnapshotEntry, error) {
		return nil, &CorruptError{Format: "producer snapshot", Err: err, Detail: fmt.Sprintf(detail, args...)}
	}
	if len(b) < 2 {
		return fail(ErrTruncated, "%d bytes, header needs %d", len(b), ProducerSnapshotHeaderSize)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != ProducerSnapshotVersion {
		return fail(ErrUnsupportedVersion, "version %d, want %d", v, ProducerSnapshotVersion)
	}
	if len(b) < ProducerSnapshotHeaderSize {
		return fail(ErrTruncated, "%d bytes, header needs %d", len(b), ProducerSnapshotHeaderSize)
	}
	stored := binary.BigEndian.Uint32(b[snapshotCRCOffset:])
	if computed := crc32.Checksum(b[snapshotCountOffset:], castagnoli); stored != computed {
		return fail(ErrChecksum, "stored 0x%08X, computed 0x%08X", stored, computed)
	}
	count := int64(int32(binary.BigEndian.Uint32(b[snapshotCountOffset:])))
	body := int64(len(b) - ProducerSnapshotHeaderSize)
	switch {
	case count < 0:
		return fail(ErrMalformed, "negative entry count %d", count)
	case count*ProducerSnapshotEntrySize > body:
		return fail(ErrTruncated, "%d entries need %d bytes, have %d", count, count*ProducerSnapshotEntrySize, body)
	case count*ProducerSnapshotEntrySize < body:
		return fail(ErrMalformed, "%d trailing bytes after %d entries", body-count*ProducerSnapshotEntrySize, count)
	}
	entries := make([]ProducerSnapshotEntry, count)
	p := b[ProducerSnapshotHeaderSize:]
	for i := range entries {
		e := p[i*ProducerSnapshotEntrySize : (i+1)*ProducerSnapshotEntrySize]
		entries[i] = ProducerSnapshotEntry{
			ProducerID:            int64(binary.BigEndian.Uint64(e[0:])),
			ProducerEpoch:         int16(binary.BigEndian.Uint16(e[8:])),
			LastSequence:          int32(binary.BigEndian.Uint32(e[10:])),
			LastOffset:            int64(binary.BigEndian.Uint64(e[14:])),
			OffsetDelta:           int32(binary.BigEndian.Uint32(e[22:])),
			Timestamp:             int64(binary.BigEndian.Uint64(e[26:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(e[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(e[38:])),
		}
	}
	return entries, nil
}
