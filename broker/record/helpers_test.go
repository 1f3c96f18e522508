package record

import (
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/internal/fixtures"
)

// fixture reads a fixture file by its path under testdata/fixtures.
func fixture(t testing.TB, rel string) []byte { return fixtures.Read(t, rel) }

// fixtureFiles lists fixture files matching a glob under testdata/fixtures,
// as paths relative to it; a pattern that matches nothing fails, as it
// means the checked-in tree changed under the test.
func fixtureFiles(t testing.TB, pattern string) []string {
	t.Helper()
	dir := fixtures.Dir(t)
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	require.NotEmpty(t, m, "no fixtures match %s", pattern)
	for i := range m {
		m[i], err = filepath.Rel(dir, m[i])
		require.NoError(t, err)
	}
	return m
}

// requireCorrupt asserts err is a *CorruptError wrapping sentinel.
func requireCorrupt(t testing.TB, err error, sentinel error) *CorruptError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, sentinel)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	return ce
}

// rawBatch frames a records section (already compressed when codec is
// set) in a v2 header with a correct CRC, so tests can feed Iterate record
// bytes no Builder would produce.
func rawBatch(count int32, codec Codec, records []byte) Batch {
	b := make([]byte, RecordsOffset, RecordsOffset+len(records))
	b = append(b, records...)
	be := binary.BigEndian
	be.PutUint32(b[BatchLengthOffset:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[PartitionLeaderEpochOffset:], 0xffffffff)
	b[MagicOffset] = MagicV2
	be.PutUint16(b[AttributesOffset:], uint16(codec))
	be.PutUint32(b[LastOffsetDeltaOffset:], uint32(max(count-1, 0)))
	be.PutUint64(b[ProducerIDOffset:], 0xffffffffffffffff)
	be.PutUint16(b[ProducerEpochOffset:], 0xffff)
	be.PutUint32(b[BaseSequenceOffset:], 0xffffffff)
	be.PutUint32(b[RecordsCountOffset:], uint32(count))
	Batch(b).UpdateCRC()
	return b
}

// rawRecord encodes one record from already-chosen varint fields; lengths
// are written as given so tests can lie about them.
type rawRecord struct {
	length   *int64 // nil: the true body length
	tsDelta  int64
	offDelta int64
	key      []byte
	keyLen   *int64 // nil: len(key) or -1 for nil
	value    []byte
	hdrCount *int64
	headers  [][2][]byte
	trailing []byte // bytes after the headers, inside the declared length
}

func (r rawRecord) encode() []byte {
	var body []byte
	body = append(body, 0)
	body = binary.AppendVarint(body, r.tsDelta)
	body = binary.AppendVarint(body, r.offDelta)
	switch {
	case r.keyLen != nil:
		body = binary.AppendVarint(body, *r.keyLen)
		body = append(body, r.key...)
	default:
		body = appendBytes(body, r.key)
	}
	body = appendBytes(body, r.value)
	hc := int64(len(r.headers))
	if r.hdrCount != nil {
		hc = *r.hdrCount
	}
	body = binary.AppendVarint(body, hc)
	for _, h := range r.headers {
		body = appendBytes(body, h[0])
		body = appendBytes(body, h[1])
	}
	body = append(body, r.trailing...)
	l := int64(len(body))
	if r.length != nil {
		l = *r.length
	}
	return append(binary.AppendVarint(nil, l), body...)
}

func ptr[T any](v T) *T { return &v }

// legacyMessage encodes a magic 0/1 message with a correct CRC (the
// package itself only reads these formats).
func legacyMessage(offset int64, magic int8, attrs int8, ts int64, key, value []byte) []byte {
	m := LegacyMessage{Magic: magic, Attributes: attrs, Timestamp: ts, Key: key, Value: value}
	body := m.appendBody(nil)
	b := binary.BigEndian.AppendUint64(nil, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, uint32(4+len(body)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(body))
	return append(b, body...)
}
