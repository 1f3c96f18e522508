package checkpoint

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
)

var testTopicID = [16]byte{0xbe, 0xa4, 0xa6, 0x10, 0x12, 0x2e, 0x4b, 0x09, 0xb7, 0xdd, 0xb8, 0x7c, 0x9e, 0x9c, 0xe3, 0x33}

func TestPartitionMetadata(t *testing.T) {
	m := newDir(t)
	require.NoError(t, WritePartitionMetadata(m, "/logs", testTopicID))
	b, err := vfs.ReadFile(m, "/logs/partition.metadata")
	require.NoError(t, err)
	require.Equal(t, "version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw", string(b))
	got, err := ReadPartitionMetadata(m, "/logs")
	require.NoError(t, err)
	require.Equal(t, testTopicID, got)

	require.Error(t, WritePartitionMetadata(m, "/logs", [16]byte{}), "zero id")

	_, err = ReadPartitionMetadata(m, "/nope")
	require.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, vfs.WriteFileAtomic(m, "/logs", PartitionMetadataFile, nil))
	_, err = ReadPartitionMetadata(m, "/logs")
	require.ErrorIs(t, err, ErrNoTopicID)
	require.ErrorContains(t, err, "/logs/partition.metadata")
}

func TestDecodePartitionMetadata(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"as written", "version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw"},
		{"final newline", "version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw\n"},
		{"CRLF", "version: 0\r\ntopic_id: vqSmEBIuSwm33bh8npzjMw\r\n"},
		{"padding", "version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw=="},
		{"more white space", "version:\t 0\ntopic_id:   vqSmEBIuSwm33bh8npzjMw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodePartitionMetadata([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, testTopicID, got)
		})
	}
	for _, tc := range []corruptCase{
		{"version 1", "version: 1\ntopic_id: vqSmEBIuSwm33bh8npzjMw", ErrUnsupportedVersion, 1, "version 1, want 0"},
		{"no space after colon", "version:0\ntopic_id: vqSmEBIuSwm33bh8npzjMw", ErrMalformed, 1, `want "version: 0"`},
		{"version not a number", "version: zero\ntopic_id: vqSmEBIuSwm33bh8npzjMw", ErrMalformed, 1, `version "zero"`},
		{"wrong key", "version: 0\ntopicId: vqSmEBIuSwm33bh8npzjMw", ErrMalformed, 2, `want "topic_id: <id>"`},
		{"short id", "version: 0\ntopic_id: vqSmEBIuSwm33bh8npzj", ErrMalformed, 2, "not 16 bytes"},
		{"standard base64", "version: 0\ntopic_id: vqSmEBIuSwm33bh8npz+Mw", ErrMalformed, 2, "URL-safe base64"},
		{"zero id", "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", ErrMalformed, 2, "all zeros"},
		{"one line", "version: 0\n", ErrMalformed, 0, "want 2 lines, got 1"},
		{"three lines", "version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw\nx\n", ErrMalformed, 0, "want 2 lines, got 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePartitionMetadata([]byte(tc.in))
			requireCorrupt(t, tc, err)
		})
	}
}

func TestMetaProperties(t *testing.T) {
	now := time.Date(2024, time.June, 15, 15, 20, 35, 0, time.UTC)
	for _, tc := range []struct {
		name string
		mp   MetaProperties
		want string
	}{
		{"zk", MetaProperties{Version: 0, BrokerID: 1, ClusterID: "me8yH9c8R6mtXeFUcVEoWQ"},
			"#\n#Sat Jun 15 15:20:35 UTC 2024\nbroker.id=1\nversion=0\ncluster.id=me8yH9c8R6mtXeFUcVEoWQ\n"},
		{"zk without cluster id", MetaProperties{Version: 0, BrokerID: 7},
			"#\n#Sat Jun 15 15:20:35 UTC 2024\nbroker.id=7\nversion=0\n"},
		{"kraft", MetaProperties{Version: 1, BrokerID: 3, ClusterID: "me8yH9c8R6mtXeFUcVEoWQ", DirectoryID: "vqSmEBIuSwm33bh8npzjMw"},
			"#\n#Sat Jun 15 15:20:35 UTC 2024\nnode.id=3\nversion=1\ncluster.id=me8yH9c8R6mtXeFUcVEoWQ\ndirectory.id=vqSmEBIuSwm33bh8npzjMw\n"},
		{"escapes", MetaProperties{Version: 0, BrokerID: 0, ClusterID: " a=b:c#d!e\\f\tg\u00e9\U0001F600"},
			"#\n#Sat Jun 15 15:20:35 UTC 2024\nbroker.id=0\nversion=0\ncluster.id=\\ a\\=b\\:c\\#d\\!e\\\\f\\tg\\u00E9\\uD83D\\uDE00\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeMetaProperties(tc.mp, now)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
			got, err := DecodeMetaProperties(b)
			require.NoError(t, err)
			require.Equal(t, tc.mp, got)
		})
	}

	_, err := EncodeMetaProperties(MetaProperties{Version: 2}, now)
	require.Error(t, err)
	_, err = EncodeMetaProperties(MetaProperties{Version: 1, BrokerID: 1}, now)
	require.Error(t, err, "KRaft needs a cluster id")

	m := newDir(t)
	mp := MetaProperties{Version: 0, BrokerID: 2, ClusterID: "abc"}
	require.NoError(t, WriteMetaProperties(m, "/logs", mp))
	got, err := ReadMetaProperties(m, "/logs")
	require.NoError(t, err)
	require.Equal(t, mp, got)
	_, err = ReadMetaProperties(m, "/nope")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestDecodeMetaProperties(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want MetaProperties
	}{
		{"kafka 2.7 order", "#\n#Sat Jun 03 20:13:09 CST 2023\ncluster.id=d0053poFTbGwSWThjV1DEg\nversion=0\nbroker.id=0\n",
			MetaProperties{Version: 0, BrokerID: 0, ClusterID: "d0053poFTbGwSWThjV1DEg"}},
		{"no comments, CRLF", "version=0\r\nbroker.id=5\r\n", MetaProperties{Version: 0, BrokerID: 5}},
		{"colon and white space separators", "version : 0\nbroker.id:5\ncluster.id  abc\n",
			MetaProperties{Version: 0, BrokerID: 5, ClusterID: "abc"}},
		{"bang comment and blank lines", "! written by hand\n\n   \nversion=0\nbroker.id=5\n", MetaProperties{Version: 0, BrokerID: 5}},
		{"continuation line", "version=0\nbroker.id=5\ncluster.id=ab\\\n    cd\n", MetaProperties{Version: 0, BrokerID: 5, ClusterID: "abcd"}},
		{"escaped key", "version=0\nbroker.id=5\ncluster\\.id=x\n", MetaProperties{Version: 0, BrokerID: 5, ClusterID: "x"}},
		{"kraft", "#\n#Thu Feb 01 10:00:00 UTC 2024\nnode.id=1\ndirectory.id=vqSmEBIuSwm33bh8npzjMw\nversion=1\ncluster.id=q\n",
			MetaProperties{Version: 1, BrokerID: 1, ClusterID: "q", DirectoryID: "vqSmEBIuSwm33bh8npzjMw"}},
		{"kraft ignores broker.id", "version=1\nnode.id=4\nbroker.id=9\ncluster.id=q\n", MetaProperties{Version: 1, BrokerID: 4, ClusterID: "q"}},
		{"unknown keys ignored, last duplicate wins", "version=0\nbroker.id=1\nbroker.id=2\nfoo=bar\n", MetaProperties{Version: 0, BrokerID: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeMetaProperties([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	for _, tc := range []corruptCase{
		{"empty", "", ErrMalformed, 0, "no version key"},
		{"no version", "broker.id=1\n", ErrMalformed, 0, "no version key"},
		{"version 2", "version=2\nbroker.id=1\n", ErrUnsupportedVersion, 0, "version 2, want 0 or 1"},
		{"version not a number", "version=zero\n", ErrMalformed, 0, `version "zero"`},
		{"trailing space in value", "version=0 \nbroker.id=1\n", ErrMalformed, 0, `version "0 "`},
		{"zk without broker.id", "version=0\nnode.id=1\n", ErrMalformed, 0, "version 0 needs broker.id"},
		{"kraft without node.id", "version=1\nbroker.id=1\ncluster.id=x\n", ErrMalformed, 0, "version 1 needs node.id"},
		{"kraft without cluster.id", "version=1\nnode.id=1\n", ErrMalformed, 0, "version 1 needs cluster.id"},
		{"negative broker.id", "version=0\nbroker.id=-1\n", ErrMalformed, 0, `broker.id "-1"`},
		{"broker.id overflows", "version=0\nbroker.id=2147483648\n", ErrMalformed, 0, "int32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMetaProperties([]byte(tc.in))
			requireCorrupt(t, tc, err)
		})
	}
}

func TestCleanShutdown(t *testing.T) {
	m := newDir(t)
	present, epoch, err := ReadCleanShutdown(m, "/logs")
	require.NoError(t, err)
	require.False(t, present)
	require.Equal(t, NoBrokerEpoch, epoch)

	for _, want := range []int64{0, 42, math.MaxInt64, -1} {
		require.NoError(t, WriteCleanShutdown(m, "/logs", want))
		present, epoch, err = ReadCleanShutdown(m, "/logs")
		require.NoError(t, err)
		require.True(t, present)
		require.Equal(t, want, epoch)
	}
	b, err := vfs.ReadFile(m, "/logs/.kafka_cleanshutdown")
	require.NoError(t, err)
	require.Equal(t, `{"version":0,"brokerEpoch":-1}`, string(b))

	// The marker is durable once written...
	present, _, err = ReadCleanShutdown(m.CrashClone(), "/logs")
	require.NoError(t, err)
	require.True(t, present)
	// ...and its removal is durable once removed.
	require.NoError(t, RemoveCleanShutdown(m, "/logs"))
	present, _, err = ReadCleanShutdown(m.CrashClone(), "/logs")
	require.NoError(t, err)
	require.False(t, present)
	require.NoError(t, RemoveCleanShutdown(m, "/logs"), "already gone")

	require.NoError(t, WriteCleanShutdown(m, "/logs", 1))
	faulty := vfs.NewFaulty(m, vfs.FailNth(vfs.OpSyncDir, 1, nil))
	require.ErrorIs(t, RemoveCleanShutdown(faulty, "/logs"), vfs.ErrInjected)

	require.NoError(t, WriteCleanShutdown(m, "/logs", 1))
	faulty = vfs.NewFaulty(m, vfs.FailNth(vfs.OpRead, 1, nil))
	present, _, err = ReadCleanShutdown(faulty, "/logs")
	require.ErrorIs(t, err, vfs.ErrInjected)
	require.False(t, present, "unknown when unreadable")
}

func TestDecodeCleanShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want int64
	}{
		{"empty, Kafka 3.6 and earlier", "", NoBrokerEpoch},
		{"white space", " \n", NoBrokerEpoch},
		{"3.7+", `{"version":0,"brokerEpoch":25}`, 25},
		{"key order, spaces and newline", "{ \"brokerEpoch\": 25, \"version\": 0 }\n", 25},
		{"unknown fields", `{"version":0,"brokerEpoch":25,"extra":true}`, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeCleanShutdown([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	for _, tc := range []corruptCase{
		{"garbage", "clean", ErrMalformed, 0, "invalid character"},
		{"no version", `{"brokerEpoch":1}`, ErrMalformed, 0, "no version field"},
		{"no epoch", `{"version":0}`, ErrMalformed, 0, "no brokerEpoch field"},
		{"version 1", `{"version":1,"brokerEpoch":1}`, ErrUnsupportedVersion, 0, "version 1, want 0"},
		{"epoch not a number", `{"version":0,"brokerEpoch":"1"}`, ErrMalformed, 0, "brokerEpoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeCleanShutdown([]byte(tc.in))
			require.Equal(t, NoBrokerEpoch, got)
			requireCorrupt(t, tc, err)
		})
	}
	m := newDir(t)
	require.NoError(t, vfs.WriteFileAtomic(m, "/logs", CleanShutdownFile, []byte("{")))
	present, epoch, err := ReadCleanShutdown(m, "/logs")
	require.True(t, present, "a marker with a bad body is still a marker")
	require.Equal(t, NoBrokerEpoch, epoch)
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, "/logs/.kafka_cleanshutdown")
}

var testSnapshotEntries = []ProducerSnapshotEntry{
	{ProducerID: 4001, ProducerEpoch: 0, LastSequence: 11, LastOffset: 11, OffsetDelta: 2, Timestamp: 1670068129797, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
	{ProducerID: math.MaxInt64, ProducerEpoch: math.MaxInt16, LastSequence: math.MaxInt32, LastOffset: 1 << 50, OffsetDelta: 7, Timestamp: -1, CoordinatorEpoch: 12, CurrentTxnFirstOffset: 1 << 49},
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	require.Equal(t, []byte{0x00, 0x01, 0x48, 0x67, 0x4b, 0xc7, 0x00, 0x00, 0x00, 0x00}, EncodeProducerSnapshot(nil))
	got, err := DecodeProducerSnapshot(EncodeProducerSnapshot(nil))
	require.NoError(t, err)
	require.Empty(t, got)

	b := EncodeProducerSnapshot(testSnapshotEntries)
	require.Len(t, b, ProducerSnapshotHeaderSize+2*ProducerSnapshotEntrySize)
	got, err = DecodeProducerSnapshot(b)
	require.NoError(t, err)
	require.Equal(t, testSnapshotEntries, got)

	m := newDir(t)
	require.NoError(t, vfs.WriteFileAtomic(m, "/logs", "00000000000000000038.snapshot", b))
	got, err = ReadProducerSnapshot(m, "/logs/00000000000000000038.snapshot")
	require.NoError(t, err)
	require.Equal(t, testSnapshotEntries, got)
	_, err = ReadProducerSnapshot(m, "/logs/nope.snapshot")
	require.ErrorIs(t, err, fs.ErrNotExist)

	b[20] ^= 1
	require.NoError(t, vfs.WriteFileAtomic(m, "/logs", "00000000000000000038.snapshot", b))
	_, err = ReadProducerSnapshot(m, "/logs/00000000000000000038.snapshot")
	require.ErrorIs(t, err, ErrChecksum)
	require.ErrorContains(t, err, "checkpoint: /logs/00000000000000000038.snapshot: checksum mismatch: stored 0x")
}

// fixCRC recomputes a snapshot's CRC so that a corruption reaches the
// checks after it.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestDecodeProducerSnapshotCorrupt(t *testing.T) {
	valid := func() []byte { return EncodeProducerSnapshot(testSnapshotEntries) }
	for _, tc := range []struct {
		name    string
		corrupt func() []byte
		want    error
		text    string
	}{
		{"empty", func() []byte { return nil }, ErrTruncated, "0 bytes, header needs 10"},
		{"one byte", func() []byte { return []byte{0} }, ErrTruncated, "1 bytes"},
		{"version 0", func() []byte { b := valid(); b[1] = 0; return b }, ErrUnsupportedVersion, "version 0, want 1"},
		{"version -1", func() []byte { b := valid(); b[0], b[1] = 0xff, 0xff; return b }, ErrUnsupportedVersion, "version -1, want 1"},
		{"header cut short", func() []byte { return valid()[:7] }, ErrTruncated, "7 bytes, header needs 10"},
		{"flipped body bit", func() []byte { b := valid(); b[30] ^= 0x80; return b }, ErrChecksum, "stored 0x"},
		{"flipped crc bit", func() []byte { b := valid(); b[3] ^= 1; return b }, ErrChecksum, "computed 0x"},
		{"flipped count bit", func() []byte { b := valid(); b[9] ^= 1; return b }, ErrChecksum, ""},
		{"torn last entry", func() []byte { return valid()[:len(valid())-5] }, ErrChecksum, ""},
		{"torn last entry, crc fixed", func() []byte { return fixCRC(valid()[:len(valid())-5]) }, ErrTruncated, "2 entries need 92 bytes, have 87"},
		{"trailing byte, crc fixed", func() []byte { return fixCRC(append(valid(), 0)) }, ErrMalformed, "1 trailing bytes after 2 entries"},
		{"negative count, crc fixed", func() []byte {
			b := valid()
			binary.BigEndian.PutUint32(b[6:], 0x80000000)
			return fixCRC(b)
		}, ErrMalformed, "negative entry count -2147483648"},
		{"huge count, crc fixed", func() []byte {
			b := valid()
			binary.BigEndian.PutUint32(b[6:], math.MaxInt32)
			return fixCRC(b)
		}, ErrTruncated, "2147483647 entries need"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeProducerSnapshot(tc.corrupt())
			require.Nil(t, got)
			requireCorrupt(t, corruptCase{want: tc.want, text: tc.text}, err)
			require.ErrorContains(t, err, "checkpoint: producer snapshot: ")
		})
	}
}

func TestFirstSequence(t *testing.T) {
	for _, tc := range []struct {
		last, delta, want int32
	}{
		{11, 2, 9},
		{5, 0, 5},
		{0, 0, 0},
		{math.MaxInt32, math.MaxInt32, 0},
		{0, 1, math.MaxInt32},     // the batch was MaxInt32, 0
		{1, 3, math.MaxInt32 - 1}, // MaxInt32-1, MaxInt32, 0, 1
		{2, 5, math.MaxInt32 - 2}, // wraps by 3
		{100, 100, 0},             // starts at 0
		{math.MaxInt32, 0, math.MaxInt32},
	} {
		t.Run(fmt.Sprintf("%d-%d", tc.last, tc.delta), func(t *testing.T) {
			e := ProducerSnapshotEntry{LastSequence: tc.last, OffsetDelta: tc.delta}
			require.Equal(t, tc.want, e.FirstSequence())
		})
	}
}
