package inspect

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// The synthetic segment used by the error-path and option tests: built with
// broker/record's Builder so every byte is known.
//
//	position 0    batch 0: offsets 0-1, two records ("k0"/"v0" with headers a,b; null key/"v1")
//	position P1   batch 1: offset 2, gzip, one tombstone record with key "k2"
//	position P2   batch 2: offset 5 (gap after compaction), COMMIT marker, coordinator epoch 7
const segDir = "/data/t-0"

type testSegment struct {
	log       []byte
	positions []int // batch positions
	sizes     []int
}

func buildBatch(t testing.TB, opts record.BatchOptions, recs func(b *record.Builder)) []byte {
	t.Helper()
	b := record.NewBuilder(opts)
	recs(b)
	out, err := b.Build()
	require.NoError(t, err)
	return out
}

func newTestSegment(t testing.TB) testSegment {
	t.Helper()
	o := record.DefaultBatchOptions()
	o.PartitionLeaderEpoch = 3
	b0 := buildBatch(t, o, func(b *record.Builder) {
		b.Append(1700000000000, []byte("k0"), []byte("v0"), []record.Header{{Key: "a", Value: []byte("1")}, {Key: "b"}})
		b.Append(1700000000005, nil, []byte("v1"), nil)
	})
	o.BaseOffset, o.Codec = 2, record.CodecGzip
	b1 := buildBatch(t, o, func(b *record.Builder) {
		b.Append(1700000000010, []byte("k2"), nil, nil)
	})
	o.BaseOffset, o.Codec, o.ProducerID, o.ProducerEpoch = 5, record.CodecNone, 42, 1
	b2, err := record.BuildControlBatch(o, 1700000000020, record.ControlCommit, 7)
	require.NoError(t, err)
	var s testSegment
	for _, b := range [][]byte{b0, b1, b2} {
		s.positions = append(s.positions, len(s.log))
		s.sizes = append(s.sizes, len(b))
		s.log = append(s.log, b...)
	}
	return s
}

func writeFile(t testing.TB, fsys vfs.FS, path string, b []byte) {
	t.Helper()
	require.NoError(t, fsys.MkdirAll(segDir, 0o755))
	f, err := fsys.Create(path)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// memDump writes files into a MemFS under segDir and dumps the named ones.
func memDump(t testing.TB, opts Options, files map[string][]byte, names ...string) dumpResult {
	t.Helper()
	fsys := vfs.NewMem()
	for name, b := range files {
		writeFile(t, fsys, segDir+"/"+name, b)
	}
	var out, errb bytes.Buffer
	opts.WorkDir = segDir
	d := New(fsys, &out, &errb, opts)
	err := d.Dump(names...)
	return dumpResult{stdout: out.String(), stderr: errb.String(), err: err}
}

const logName = "00000000000000000000.log"

func TestLogDeepIterationLines(t *testing.T) {
	s := newTestSegment(t)
	r := memDump(t, Options{PrintDataLog: true}, map[string][]byte{logName: s.log}, logName)
	require.NoError(t, r.err)
	lines := splitLines(r.stdout)
	require.Len(t, lines, 9)
	require.Equal(t, "Dumping "+logName, lines[0])
	require.Equal(t, "Log starting offset: 0", lines[1])
	require.Regexp(t, `^baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 size: \d+ magic: 2 compresscodec: none crc: \d+ isvalid: true$`, lines[2])
	require.Equal(t, "| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [a,b] key: k0 payload: v0", lines[3])
	require.Equal(t, "| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 2 sequence: -1 headerKeys: [] payload: v1", lines[4])
	require.Contains(t, lines[5], "baseOffset: 2 lastOffset: 2 count: 1 ")
	require.Contains(t, lines[5], " compresscodec: gzip ")
	// A tombstone prints its key and no payload.
	require.Equal(t, "| offset: 2 CreateTime: 1700000000010 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k2", lines[6])
	require.Contains(t, lines[7], "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: 42 producerEpoch: 1 partitionLeaderEpoch: 3 isTransactional: true isControl: true ")
	// Control records print the marker and never key or payload.
	require.Equal(t, "| offset: 5 CreateTime: 1700000000020 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7", lines[8])
	// The gap 2 -> 5 is reported on stderr, not failed.
	require.Equal(t, "Non-consecutive offsets in "+segDir+"/"+logName+"\n  2 is followed by 5\n", r.stderr)
}

func TestSkipRecordMetadata(t *testing.T) {
	s := newTestSegment(t)
	r := memDump(t, Options{PrintDataLog: true, SkipRecordMetadata: true}, map[string][]byte{logName: s.log}, logName)
	require.NoError(t, r.err)
	lines := splitLines(r.stdout)
	require.Equal(t, "| key: k0 payload: v0", lines[3])
	// Kafka prints the "| " prefix together with the key only: a null key
	// leaves the line starting with " payload:".
	require.Equal(t, " payload: v1", lines[4])
	require.Equal(t, "| key: k2", lines[6])
	require.Equal(t, "", lines[8], "a control record without metadata prints an empty line")
}

func TestLogTornTail(t *testing.T) {
	s := newTestSegment(t)
	cut := s.positions[2] + 30 // 30 bytes of the last batch's header
	r := memDump(t, Options{}, map[string][]byte{logName: s.log[:cut]}, logName)
	require.Error(t, r.err)
	lines := splitLines(r.stdout)
	require.Equal(t, "Found 30 invalid bytes at the end of "+logName, lines[len(lines)-1])
	require.Len(t, lines, 5, "two batches, then the trailer")
	want := "torn batch at position " + itoa(s.positions[2]) + " of " + logName + ": batch declares " + itoa(s.sizes[2]) + " bytes, only 30 remain"
	require.Equal(t, "Error: "+want+"\n", r.stderr)
	require.EqualError(t, r.err, want)

	// Fewer bytes than a header prefix.
	r = memDump(t, Options{}, map[string][]byte{logName: s.log[:s.positions[2]+10]}, logName)
	require.Equal(t, "Error: torn batch at position "+itoa(s.positions[2])+" of "+logName+": 10 bytes remain, fewer than a batch header (17)\n", r.stderr)

	// --max-bytes cutting a batch is not damage: no trailer, no error.
	r = memDump(t, Options{MaxBytes: cut}, map[string][]byte{logName: s.log}, logName)
	require.NoError(t, r.err)
	require.NotContains(t, r.stdout, "invalid bytes")
	require.Len(t, splitLines(r.stdout), 4)
}

func TestLogZeroedSizeField(t *testing.T) {
	s := newTestSegment(t)
	// A preallocated, zero-filled tail after the last batch.
	data := append(append([]byte(nil), s.log...), make([]byte, 64)...)
	r := memDump(t, Options{DeepIteration: true}, map[string][]byte{logName: data}, logName)
	want := "corrupt batch at position " + itoa(len(s.log)) + " of " + logName + ": record size 0 smaller than minimum record overhead (14)"
	require.EqualError(t, r.err, want)
	require.Contains(t, r.stderr, "Error: "+want+"\n")
	require.Len(t, splitLines(r.stdout), 9, "every batch and record before the damage is printed")

	// A zeroed size field in the middle stops the dump there.
	data = append([]byte(nil), s.log...)
	binary.BigEndian.PutUint32(data[s.positions[1]+8:], 0)
	r = memDump(t, Options{}, map[string][]byte{logName: data}, logName)
	require.EqualError(t, r.err, "corrupt batch at position "+itoa(s.positions[1])+" of "+logName+": record size 0 smaller than minimum record overhead (14)")
	require.Len(t, splitLines(r.stdout), 3)
}

func TestLogFlippedCRCByte(t *testing.T) {
	s := newTestSegment(t)
	data := append([]byte(nil), s.log...)
	data[s.positions[0]+record.RecordsOffset+3] ^= 0x01 // a byte of the first record's key
	r := memDump(t, Options{}, map[string][]byte{logName: data}, logName)
	lines := splitLines(r.stdout)
	require.Len(t, lines, 5, "all batches are still printed")
	require.True(t, bytes.HasSuffix([]byte(lines[2]), []byte(" isvalid: false")), lines[2])
	require.True(t, bytes.HasSuffix([]byte(lines[3]), []byte(" isvalid: true")), lines[3])
	want := "1 batch of " + logName + " failed the CRC check (isvalid: false)"
	require.Equal(t, "Error: "+want+"\n", r.stderr)
	require.EqualError(t, r.err, want)
}

func TestLogCorruptRecords(t *testing.T) {
	s := newTestSegment(t)
	data := append([]byte(nil), s.log...)
	// Claim three records in batch 0, which holds two (CRC fixed up so the
	// only fault is structural).
	binary.BigEndian.PutUint32(data[s.positions[0]+record.RecordsCountOffset:], 3)
	binary.BigEndian.PutUint32(data[s.positions[0]+record.LastOffsetDeltaOffset:], 2)
	record.Batch(data[:s.sizes[0]]).UpdateCRC()
	r := memDump(t, Options{DeepIteration: true}, map[string][]byte{logName: data}, logName)
	require.Error(t, r.err)
	require.Regexp(t, `^Error: corrupt batch at position 0 of `+logName+`: .+\n$`, r.stderr)
	lines := splitLines(r.stdout)
	require.Len(t, lines, 5, "the batch line and the two records that decode are printed")
}

func TestIndexErrors(t *testing.T) {
	s := newTestSegment(t)
	idx := log.AppendOffsetIndexEntry(nil, 2, int32(s.positions[1]))
	idx = log.AppendOffsetIndexEntry(idx, 5, int32(s.positions[2]))
	const idxName = "00000000000000000000.index"

	t.Run("healthy", func(t *testing.T) {
		r := memDump(t, Options{}, map[string][]byte{logName: s.log, idxName: idx}, idxName)
		require.NoError(t, r.err)
		require.Equal(t, "Dumping "+idxName+"\noffset: 2 position: "+itoa(s.positions[1])+"\noffset: 5 position: "+itoa(s.positions[2])+"\n", r.stdout)
		require.Empty(t, r.stderr)
	})
	t.Run("truncated", func(t *testing.T) {
		r := memDump(t, Options{}, map[string][]byte{logName: s.log, idxName: idx[:13]}, idxName)
		want := "corrupt index " + idxName + ": found 13 bytes which is not a multiple of 8 (5 trailing bytes at position 8)"
		require.EqualError(t, r.err, want)
		require.Equal(t, "Dumping "+idxName+"\noffset: 2 position: "+itoa(s.positions[1])+"\n", r.stdout)
		require.Equal(t, "Error: "+want+"\n", r.stderr)
	})
	t.Run("truncated sanity", func(t *testing.T) {
		r := memDump(t, Options{IndexSanityCheck: true}, map[string][]byte{idxName: idx[:13]}, idxName)
		want := "Index file " + segDir + "/" + idxName + " is corrupt, found 13 bytes which is neither positive nor a multiple of 8"
		require.EqualError(t, r.err, want)
		require.Equal(t, "Dumping "+idxName+"\n", r.stdout)
	})
	t.Run("sanity passes without the log", func(t *testing.T) {
		r := memDump(t, Options{IndexSanityCheck: true}, map[string][]byte{idxName: idx}, idxName)
		require.NoError(t, r.err)
		require.Equal(t, "Dumping "+idxName+"\n"+idxName+" passed sanity check.\n", r.stdout)
	})
	t.Run("sanity last offset below base", func(t *testing.T) {
		const name = "00000000000000000100.index"
		bad := log.AppendOffsetIndexEntry(nil, -1, 0)
		r := memDump(t, Options{IndexSanityCheck: true}, map[string][]byte{name: bad}, name)
		require.EqualError(t, r.err, "Corrupt index found, index file ("+segDir+"/"+name+") has non-zero size but the last offset is 99 which is less than the base offset 100")
	})
	t.Run("missing log", func(t *testing.T) {
		r := memDump(t, Options{}, map[string][]byte{idxName: idx}, idxName)
		want := "cannot verify " + idxName + ": log segment " + segDir + "/" + logName + " not found"
		require.EqualError(t, r.err, want)
		// The entries are still printed, unverified.
		require.Len(t, splitLines(r.stdout), 3)
		require.Equal(t, "Error: "+want+"\n", r.stderr)
	})
	t.Run("mismatch", func(t *testing.T) {
		// A follower-style entry: offset 4 at batch 1, whose last offset is 2.
		bad := log.AppendOffsetIndexEntry(nil, 4, int32(s.positions[1]))
		bad = log.AppendOffsetIndexEntry(bad, 5, int32(s.positions[2]))
		r := memDump(t, Options{VerifyIndexOnly: true}, map[string][]byte{logName: s.log, idxName: bad}, idxName)
		require.NoError(t, r.err, "mismatches are reports, not failures")
		require.Equal(t, "Dumping "+idxName+"\n", r.stdout)
		require.Equal(t, "Mismatches in :"+segDir+"/"+idxName+"\n  Index offset: 4, log offset: 2\n", r.stderr)
	})
	t.Run("position outside the log", func(t *testing.T) {
		bad := log.AppendOffsetIndexEntry(nil, 2, int32(len(s.log)+100))
		r := memDump(t, Options{}, map[string][]byte{logName: s.log, idxName: bad}, idxName)
		require.EqualError(t, r.err, "index entry offset: 2 position: "+itoa(len(s.log)+100)+" of "+idxName+" points at no whole batch within 5242880 bytes of "+segDir+"/"+logName+" (size "+itoa(len(s.log))+"); later entries were not verified")
	})
	t.Run("preallocated over an empty log", func(t *testing.T) {
		r := memDump(t, Options{}, map[string][]byte{logName: nil, idxName: make([]byte, 1024)}, idxName)
		require.NoError(t, r.err)
		require.Equal(t, "Dumping "+idxName+"\noffset: 0 position: 0\n", r.stdout)
		require.Empty(t, r.stderr)
	})
	t.Run("empty", func(t *testing.T) {
		r := memDump(t, Options{}, map[string][]byte{logName: s.log, idxName: nil}, idxName)
		require.NoError(t, r.err)
		require.Equal(t, "Dumping "+idxName+"\n"+idxName+" is empty.\n", r.stdout)
	})
}

func TestTimeIndexChecks(t *testing.T) {
	s := newTestSegment(t)
	const name = "00000000000000000000.timeindex"
	ti := log.AppendTimeIndexEntry(nil, 1700000000005, 1) // batch 0: last offset 1, max ts ...005
	ti = log.AppendTimeIndexEntry(ti, 1700000000009, 2)   // batch 1: max ts is ...010
	ti = log.AppendTimeIndexEntry(ti, 1700000000008, 4)   // no batch ends at 4
	ti = log.AppendTimeIndexEntry(ti, 1700000000008, 5)   // out of order
	r := memDump(t, Options{VerifyIndexOnly: true}, map[string][]byte{logName: s.log, name: ti}, name)
	require.NoError(t, r.err)
	require.Equal(t, "Dumping "+name+"\n", r.stdout)
	p := segDir + "/" + name
	require.Equal(t, "Found timestamp mismatch in :"+p+"\n"+
		"  Index timestamp: 1700000000009, log timestamp: 1700000000010\n"+
		"  Index timestamp: 1700000000008, log timestamp: 1700000000020\n"+
		"Found out of order timestamp in :"+p+"\n"+
		"  Index timestamp: 1700000000008, Previously indexed timestamp: 1700000000008\n"+
		"The following indexed offsets are not found in the log.\n"+
		"Indexed offset: 4, found log offset: 5\n", r.stderr)

	r = memDump(t, Options{}, map[string][]byte{name: ti[:30]}, name)
	require.EqualError(t, r.err, "corrupt index "+name+": found 30 bytes which is not a multiple of 12 (6 trailing bytes at position 24) (and 1 more problem)")
	require.Contains(t, r.stderr, "Error: cannot verify "+name+": log segment "+segDir+"/"+logName+" not found\n")
}

func TestUnknownAndMissingFiles(t *testing.T) {
	r := memDump(t, Options{}, map[string][]byte{"notes.txt": []byte("x")}, "notes.txt", "00000000000000000007.log")
	require.Equal(t, "Dumping notes.txt\nDumping 00000000000000000007.log\nLog starting offset: 7\n", r.stdout)
	require.Equal(t, "Ignoring unknown file notes.txt\nError: "+segDir+"/00000000000000000007.log: no such file\n", r.stderr)
	require.EqualError(t, r.err, segDir+"/00000000000000000007.log: no such file")
}

func TestJSONLines(t *testing.T) {
	s := newTestSegment(t)
	r := memDump(t, Options{JSON: true, PrintDataLog: true}, map[string][]byte{logName: s.log}, logName)
	require.NoError(t, r.err)
	lines := splitLines(r.stdout)
	require.Len(t, lines, 7, "no Dumping/Log starting offset lines in JSON mode")
	require.Regexp(t, `^\{"file":"`+logName+`","type":"batch","baseOffset":0,"lastOffset":1,"count":2,"baseSequence":-1,"lastSequence":-1,"producerId":-1,"producerEpoch":-1,"partitionLeaderEpoch":3,"isTransactional":false,"isControl":false,"deleteHorizonMs":null,"position":0,"timestampType":"CreateTime","maxTimestamp":1700000000005,"size":\d+,"magic":2,"compresscodec":"none","crc":\d+,"isvalid":true\}$`, lines[0])
	require.Equal(t, `{"file":"`+logName+`","type":"record","offset":0,"timestampType":"CreateTime","timestamp":1700000000000,"keySize":2,"valueSize":2,"sequence":-1,"headerKeys":["a","b"],"key":"k0","payload":"v0"}`, lines[1])
	require.Equal(t, `{"file":"`+logName+`","type":"record","offset":5,"timestampType":"CreateTime","timestamp":1700000000020,"keySize":4,"valueSize":6,"sequence":-1,"headerKeys":[],"endTxnMarker":"COMMIT","coordinatorEpoch":7}`, lines[6])
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestKRaftSnapshotName(t *testing.T) {
	s := newTestSegment(t)
	const name = "00000000000000000006-0000000003.checkpoint"
	r := memDump(t, Options{}, map[string][]byte{name: s.log}, name)
	require.NoError(t, r.err)
	lines := splitLines(r.stdout)
	require.Equal(t, []string{"Dumping " + name, "Snapshot end offset: 6, epoch: 3"}, lines[:2])
	require.Len(t, lines, 5)
}

func TestTxnIndex(t *testing.T) {
	const name = "00000000000000000000.txnindex"
	entry := func(pid, first, last, lso int64) []byte {
		b := binary.BigEndian.AppendUint16(nil, 0)
		for _, v := range []int64{pid, first, last, lso} {
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	data := append(entry(42, 3, 9, 3), entry(43, 10, 12, 10)...)
	r := memDump(t, Options{}, map[string][]byte{name: data}, name)
	require.NoError(t, r.err)
	require.Equal(t, "Dumping "+name+"\n"+
		"version: 0 producerId: 42 firstOffset: 3 lastOffset: 9 lastStableOffset: 3\n"+
		"version: 0 producerId: 43 firstOffset: 10 lastOffset: 12 lastStableOffset: 10\n", r.stdout)

	r = memDump(t, Options{}, map[string][]byte{name: data[:50]}, name)
	require.EqualError(t, r.err, "corrupt transaction index "+name+": 16 trailing bytes at position 34, entries are 34 bytes")
}

func TestTimeIndexSanity(t *testing.T) {
	const name = "00000000000000000010.timeindex"
	p := segDir + "/" + name
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"passes", log.AppendTimeIndexEntry(log.AppendTimeIndexEntry(nil, 5, 0), 6, 3), ""},
		{"empty passes", nil, ""},
		{"timestamps go back", log.AppendTimeIndexEntry(log.AppendTimeIndexEntry(nil, 5, 0), 4, 3),
			"Corrupt time index found, time index file (" + p + ") has non-zero size but the last timestamp is 4 which is less than the first timestamp 5"},
		{"offset below base", log.AppendTimeIndexEntry(nil, 5, -2),
			"Corrupt time index found, time index file (" + p + ") has non-zero size but the last offset is 8 which is less than the first offset 10"},
		{"partial entry", log.AppendTimeIndexEntry(nil, 5, 0)[:11],
			"Time index file " + p + " is corrupt, found 11 bytes which is neither positive nor a multiple of 12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := memDump(t, Options{IndexSanityCheck: true}, map[string][]byte{name: tc.data}, name)
			if tc.want == "" {
				require.NoError(t, r.err)
				require.Equal(t, "Dumping "+name+"\n"+name+" passed sanity check.\n", r.stdout)
				return
			}
			require.EqualError(t, r.err, tc.want)
			require.Equal(t, "Error: "+tc.want+"\n", r.stderr)
		})
	}
}

func TestMaxMessageSize(t *testing.T) {
	s := newTestSegment(t)
	const idxName = "00000000000000000000.index"
	idx := log.AppendOffsetIndexEntry(nil, 2, int32(s.positions[1]))
	// The batch at the entry is larger than the limit: Kafka's slice holds
	// no whole batch there.
	r := memDump(t, Options{MaxMessageSize: s.sizes[1] - 1}, map[string][]byte{logName: s.log, idxName: idx}, idxName)
	require.EqualError(t, r.err, "index entry offset: 2 position: "+itoa(s.positions[1])+" of "+idxName+" points at no whole batch within "+
		itoa(s.sizes[1]-1)+" bytes of "+segDir+"/"+logName+" (size "+itoa(len(s.log))+"); later entries were not verified")
	r = memDump(t, Options{MaxMessageSize: s.sizes[1]}, map[string][]byte{logName: s.log, idxName: idx}, idxName)
	require.NoError(t, r.err)
}

func TestProducerSnapshotErrors(t *testing.T) {
	const name = "00000000000000000038.snapshot"
	empty := []byte{0x00, 0x01, 0x48, 0x67, 0x4b, 0xc7, 0, 0, 0, 0} // the empty snapshot of §2.5
	r := memDump(t, Options{}, map[string][]byte{name: empty}, name)
	require.NoError(t, r.err)
	require.Equal(t, "Dumping "+name+"\n", r.stdout)

	bad := append([]byte(nil), empty...)
	bad[3] ^= 1
	r = memDump(t, Options{}, map[string][]byte{name: bad}, name)
	require.Error(t, r.err)
	require.Regexp(t, `^Error: corrupt producer snapshot `+name+`: .*checksum.*\n$`, r.stderr)
}

func TestControlRecordLines(t *testing.T) {
	o := record.DefaultBatchOptions()
	o.ProducerID, o.ProducerEpoch = 7, 0
	abort, err := record.BuildControlBatch(o, 1700000000000, record.ControlAbort, 12)
	require.NoError(t, err)
	o.BaseOffset, o.Control, o.Transactional = 1, true, true
	unknown := buildBatch(t, o, func(b *record.Builder) {
		b.Append(1700000000001, []byte{0, 0, 0, 9}, nil, nil)
		b.Append(1700000000001, []byte{0, 0, 0, 2}, []byte{1}, nil)
	})
	r := memDump(t, Options{PrintDataLog: true}, map[string][]byte{logName: append(abort, unknown...)}, logName)
	require.NoError(t, r.err)
	lines := splitLines(r.stdout)
	require.Equal(t, "| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 12", lines[3])
	require.Equal(t, "| offset: 1 CreateTime: 1700000000001 keySize: 4 valueSize: -1 sequence: -1 headerKeys: [] controlType: UNKNOWN(9)", lines[5])
	require.Equal(t, "| offset: 2 CreateTime: 1700000000001 keySize: 4 valueSize: 1 sequence: -1 headerKeys: [] controlType: LEADER_CHANGE(2)", lines[6])

	// A control key too short to hold a type is damage.
	bad := buildBatch(t, o, func(b *record.Builder) { b.Append(1700000000001, []byte{0}, nil, nil) })
	r = memDump(t, Options{DeepIteration: true}, map[string][]byte{logName: bad}, logName)
	require.EqualError(t, r.err, "corrupt batch at position 0 of "+logName+": record at offset 1: invalid control record key: control record key of 1 bytes, need at least 4")
}
