package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/qk-project/qk/broker/metadata"
)

// File names inside the store's directory (see doc.go for their layout).
const (
	LogFile      = "metadata.log"
	SnapshotFile = "metadata.snapshot"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	recordHeaderLen = 8               // length u32 + crc u32
	recordTxn       = 1               // the only record type
	minRecordBody   = 1 + 8 + 8 + 4   // type, zxid, time, effect count
	snapshotMagic   = "QKMS"          // qk metadata snapshot
	snapshotVersion = 1               // bumped on any layout change
	snapshotHeader  = 4 + 1 + 8 + 4   // magic, version, zxid, node count
	maxPathLen      = 1 << 16         // sanity bound when decoding
	maxDataLen      = 1 << 30         // sanity bound when decoding
	statLen         = 5*8 + 2*4       // czxid mzxid pzxid ctime mtime version cversion
	effectMinLen    = 1 + 4           // kind, path length
	nodeMinLen      = 4 + statLen + 4 // path length, stat, data length
)

// effectKind is the kind of one persistent change inside a log record.
type effectKind uint8

const (
	effectPut    effectKind = 1 // create or replace a node: path, stat, data
	effectStat   effectKind = 2 // replace a node's stat (children changed): path, stat
	effectDelete effectKind = 3 // delete a childless node: path
)

// effect is one change to the persistent tree. Records hold effects, not
// requests, so replay needs no logic of its own: sequential names, versions
// and zxids are already resolved.
type effect struct {
	kind effectKind
	path string
	stat metadata.Stat // persistent fields only
	data []byte
}

// ErrCorrupt is matched by a *CorruptError: a metadata file is damaged
// somewhere other than at the torn tail of the log.
var ErrCorrupt = errors.New("embedded: corrupt metadata file")

// CorruptError says where a metadata file is damaged. Open returns it when
// the snapshot fails its checksum or a record in the middle of the log
// does: the store would otherwise silently lose committed changes, so an
// operator must look (a torn tail, by contrast, is truncated with a
// warning).
type CorruptError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: %s at byte %d: %s", ErrCorrupt, e.Path, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func appendI64(b []byte, v int64) []byte  { return binary.BigEndian.AppendUint64(b, uint64(v)) }

func appendBytes(b, v []byte) []byte {
	b = appendU32(b, uint32(len(v)))
	return append(b, v...)
}

func appendStat(b []byte, st *metadata.Stat) []byte {
	b = appendI64(b, st.Czxid)
	b = appendI64(b, st.Mzxid)
	b = appendI64(b, st.Pzxid)
	b = appendI64(b, st.Ctime)
	b = appendI64(b, st.Mtime)
	b = appendU32(b, uint32(st.Version))
	return appendU32(b, uint32(st.CVersion))
}

// encodeRecord returns a framed log record for one committed transaction.
func encodeRecord(zxid, timeMs int64, effects []effect) []byte {
	b := make([]byte, recordHeaderLen, 256)
	b = append(b, recordTxn)
	b = appendI64(b, zxid)
	b = appendI64(b, timeMs)
	b = appendU32(b, uint32(len(effects)))
	for i := range effects {
		e := &effects[i]
		b = append(b, byte(e.kind))
		b = appendBytes(b, []byte(e.path))
		switch e.kind {
		case effectPut:
			b = appendStat(b, &e.stat)
			b = appendBytes(b, e.data)
		case effectStat:
			b = appendStat(b, &e.stat)
		}
	}
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-recordHeaderLen))
	binary.BigEndian.PutUint32(b[4:8], recordCRC(b[0:4], b[recordHeaderLen:]))
	return b
}

// recordCRC is the CRC-32C of a record's length field and body, so that a
// damaged length is caught as surely as a damaged body.
func recordCRC(length, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(length, castagnoli), castagnoli, body)
}

// decoder reads big-endian fields and remembers the first error.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.b)-d.off < n {
		d.fail("need %d bytes at %d, have %d", n, d.off, len(d.b)-d.off)
		return false
	}
	return true
}

func (d *decoder) u8() uint8 {
	if !d.need(1) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) i64() int64 {
	if !d.need(8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return v
}

func (d *decoder) bytes(limit int) []byte {
	n := d.u32()
	if d.err == nil && n > uint32(limit) {
		d.fail("length %d over limit %d", n, limit)
	}
	if !d.need(int(n)) {
		return nil
	}
	if n == 0 {
		return nil
	}
	v := make([]byte, n)
	copy(v, d.b[d.off:])
	d.off += int(n)
	return v
}

func (d *decoder) path() string {
	p := string(d.bytes(maxPathLen))
	if d.err == nil {
		if err := metadata.ValidatePath(p); err != nil {
			d.fail("%v", err)
		}
	}
	return p
}

func (d *decoder) stat() metadata.Stat {
	var st metadata.Stat
	st.Czxid = d.i64()
	st.Mzxid = d.i64()
	st.Pzxid = d.i64()
	st.Ctime = d.i64()
	st.Mtime = d.i64()
	st.Version = int32(d.u32())
	st.CVersion = int32(d.u32())
	return st
}

// decodeBody parses the body of a record whose CRC matched.
func decodeBody(body []byte) (zxid int64, effects []effect, err error) {
	d := &decoder{b: body}
	if t := d.u8(); d.err == nil && t != recordTxn {
		return 0, nil, fmt.Errorf("unknown record type %d", t)
	}
	zxid = d.i64()
	_ = d.i64() // commit time, for people reading the file
	n := d.u32()
	if d.err == nil && uint64(n)*effectMinLen > uint64(len(body)-d.off) {
		d.fail("%d effects cannot fit in %d bytes", n, len(body)-d.off)
	}
	for i := uint32(0); i < n && d.err == nil; i++ {
		e := effect{kind: effectKind(d.u8())}
		e.path = d.path()
		switch e.kind {
		case effectPut:
			e.stat = d.stat()
			e.data = d.bytes(maxDataLen)
		case effectStat:
			e.stat = d.stat()
		case effectDelete:
		default:
			d.fail("unknown effect kind %d", e.kind)
		}
		effects = append(effects, e)
	}
	if d.err == nil && d.off != len(body) {
		d.fail("%d trailing bytes", len(body)-d.off)
	}
	return zxid, effects, d.err
}

// encodeSnapshot serialises the persistent nodes of a tree (visited in
// pre-order, so every parent comes before its children) at zxid.
func encodeSnapshot(zxid int64, count int, visit func(fn func(path string, st *metadata.Stat, data []byte))) []byte {
	b := make([]byte, 0, 4096)
	b = append(b, snapshotMagic...)
	b = append(b, snapshotVersion)
	b = appendI64(b, zxid)
	b = appendU32(b, uint32(count))
	visit(func(path string, st *metadata.Stat, data []byte) {
		b = appendBytes(b, []byte(path))
		b = appendStat(b, st)
		b = appendBytes(b, data)
	})
	return appendU32(b, crc32.Checksum(b, castagnoli))
}

// decodeSnapshot checks and parses a snapshot file, calling fn for every
// node in file order.
func decodeSnapshot(b []byte, fn func(path string, st metadata.Stat, data []byte) error) (zxid int64, err error) {
	if len(b) < snapshotHeader+4 {
		return 0, fmt.Errorf("%d bytes, shorter than a header", len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return 0, fmt.Errorf("checksum %08x, want %08x", got, sum)
	}
	if string(body[:4]) != snapshotMagic {
		return 0, fmt.Errorf("magic %q, want %q", body[:4], snapshotMagic)
	}
	if body[4] != snapshotVersion {
		return 0, fmt.Errorf("version %d, want %d", body[4], snapshotVersion)
	}
	d := &decoder{b: body, off: 5}
	zxid = d.i64()
	n := d.u32()
	if d.err == nil && uint64(n)*nodeMinLen > uint64(len(body)-d.off) {
		d.fail("%d nodes cannot fit in %d bytes", n, len(body)-d.off)
	}
	for i := uint32(0); i < n && d.err == nil; i++ {
		path := d.path()
		st := d.stat()
		data := d.bytes(maxDataLen)
		if d.err == nil {
			if err := fn(path, st, data); err != nil {
				d.fail("node %s: %v", path, err)
			}
		}
	}
	if d.err == nil && d.off != len(body) {
		d.fail("%d trailing bytes", len(body)-d.off)
	}
	return zxid, d.err
}
