package checkpoint

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/internal/fixtures"
	"github.com/qk-project/qk/internal/javaprops"
)

// fixture returns the path of a file or directory under testdata/fixtures,
// the files real Kafka brokers wrote (see its README.md).
func fixture(t *testing.T, rel string) string { return fixtures.Path(t, rel) }

// fixtureFiles lists every fixture file with the given base name pattern.
func fixtureFiles(t testing.TB, pattern string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(fixtures.Dir(t), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ok, _ := filepath.Match(pattern, d.Name()); ok && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out, "no fixture is named %s", pattern)
	return out
}

// fixtureName is p relative to the fixture tree, for subtest names.
func fixtureName(t *testing.T, p string) string {
	rel, err := filepath.Rel(fixtures.Dir(t), p)
	require.NoError(t, err)
	return filepath.ToSlash(rel)
}

func TestFixtureRecoveryPoint(t *testing.T) {
	p := fixture(t, "kafka271-zk-single-broker/kafka-logs/recovery-point-offset-checkpoint")
	got, err := ReadOffsets(vfs.OS, p)
	require.NoError(t, err)
	require.Len(t, got, 53)
	require.Equal(t, int64(38), got[TopicPartition{"myTopic", 0}])
	require.Equal(t, int64(0), got[TopicPartition{"__consumer_offsets", 13}])
}

func TestFixtureCleanerOffsets(t *testing.T) {
	got, err := ReadOffsets(vfs.OS, fixture(t, "kafka271-zk-single-broker/kafka-logs/cleaner-offset-checkpoint"))
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition]int64{
		{"__consumer_offsets", 28}: 2,
		{"__consumer_offsets", 17}: 1,
		{"__consumer_offsets", 39}: 18,
	}, got)

	got, err = ReadOffsets(vfs.OS, fixture(t, "cp760-zk-clean-shutdown/kafka-data/cleaner-offset-checkpoint"))
	require.NoError(t, err, "a 0-byte file")
	require.Empty(t, got)
}

// TestFixtureOffsetFiles decodes every offset checkpoint in the fixtures
// and checks that qk's encoding of it reads back the same.
func TestFixtureOffsetFiles(t *testing.T) {
	var files []string
	for _, name := range []string{RecoveryPointFile, ReplicationOffsetFile, LogStartOffsetFile, CleanerOffsetFile} {
		files = append(files, fixtureFiles(t, name)...)
	}
	require.GreaterOrEqual(t, len(files), 20)
	for _, p := range files {
		t.Run(fixtureName(t, p), func(t *testing.T) {
			got, err := ReadOffsets(vfs.OS, p)
			require.NoError(t, err)
			b, err := EncodeOffsets(got)
			require.NoError(t, err)
			again, err := DecodeOffsets(b)
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

func TestFixtureLeaderEpochs(t *testing.T) {
	got, err := ReadLeaderEpochs(vfs.OS, fixture(t, "kafka300-zk-zookeeper-snapshot/data/kafka/my-first-topic-2/leader-epoch-checkpoint"))
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{0, 0}, {2, 7}}, got)

	got, err = ReadLeaderEpochs(vfs.OS, fixture(t, "kafka271-zk-single-broker/kafka-logs/myTopic-0/leader-epoch-checkpoint"))
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{0, 38}}, got)

	files := fixtureFiles(t, LeaderEpochFile)
	require.GreaterOrEqual(t, len(files), 10)
	for _, p := range files {
		t.Run(fixtureName(t, p), func(t *testing.T) {
			got, err := ReadLeaderEpochs(vfs.OS, p)
			require.NoError(t, err)
			require.NotEmpty(t, got)
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, string(raw), string(EncodeLeaderEpochs(got)), "byte-exact re-encoding")
		})
	}
}

func TestFixturePartitionMetadata(t *testing.T) {
	dir := fixture(t, "kafka280-zk-snappy-offsets/kafka-logs/some-topic-0")
	got, err := ReadPartitionMetadata(vfs.OS, dir)
	require.NoError(t, err)
	require.Equal(t, testTopicID, got)

	// Kafka 2.8 left this one empty: it had not learnt the topic ID yet.
	_, err = ReadPartitionMetadata(vfs.OS, fixture(t, "kafka280-zk-snappy-offsets/kafka-logs/__consumer_offsets-16"))
	require.ErrorIs(t, err, ErrNoTopicID)

	for _, p := range fixtureFiles(t, PartitionMetadataFile) {
		t.Run(fixtureName(t, p), func(t *testing.T) {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			if len(raw) == 0 { // Kafka 2.8's, checked above
				_, err := ReadPartitionMetadata(vfs.OS, filepath.Dir(p))
				require.ErrorIs(t, err, ErrNoTopicID)
				return
			}
			id, err := ReadPartitionMetadata(vfs.OS, filepath.Dir(p))
			require.NoError(t, err)
			enc, err := EncodePartitionMetadata(id)
			require.NoError(t, err)
			require.Equal(t, string(raw), string(enc), "byte-exact re-encoding")
		})
	}
}

func TestFixtureMetaProperties(t *testing.T) {
	mp, err := ReadMetaProperties(vfs.OS, fixture(t, "kafka271-zk-single-broker/kafka-logs"))
	require.NoError(t, err)
	require.Equal(t, MetaProperties{Version: 0, BrokerID: 0, ClusterID: "d0053poFTbGwSWThjV1DEg"}, mp)

	mp, err = ReadMetaProperties(vfs.OS, fixture(t, "cp-zk-3broker-rolled-segments/broker2"))
	require.NoError(t, err)
	require.Equal(t, MetaProperties{Version: 0, BrokerID: 2, ClusterID: "me8yH9c8R6mtXeFUcVEoWQ"}, mp)

	files := fixtureFiles(t, MetaPropertiesFile)
	require.GreaterOrEqual(t, len(files), 7)
	for _, p := range files {
		t.Run(fixtureName(t, p), func(t *testing.T) {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			mp, err := DecodeMetaProperties(raw)
			require.NoError(t, err)
			require.Equal(t, MetaVersionZK, mp.Version)
			require.Len(t, mp.ClusterID, 22)

			// qk writes what Kafka wrote: the same header, date line
			// included, and the same key=value lines. Their order is Java's
			// hash order, which for most Kafka 3.x brokers is qk's; compare
			// them as a set so the other orders are checked too.
			lines := strings.Split(string(raw), "\n")
			require.GreaterOrEqual(t, len(lines), 3, "header and entries")
			when, err := time.Parse(javaprops.DateLayout, strings.TrimPrefix(lines[1], "#"))
			require.NoError(t, err)
			enc, err := EncodeMetaProperties(mp, when)
			require.NoError(t, err)
			encLines := strings.Split(string(enc), "\n")
			require.Equal(t, lines[:2], encLines[:2], "header")
			require.ElementsMatch(t, lines[2:], encLines[2:], "entries")
			if lines[2] == encLines[2] && lines[3] == encLines[3] {
				require.Equal(t, string(raw), string(enc), "in qk's order, byte for byte")
			}
		})
	}
}

func TestFixtureCleanShutdown(t *testing.T) {
	present, epoch, err := ReadCleanShutdown(vfs.OS, fixture(t, "cp760-zk-clean-shutdown/kafka-data"))
	require.NoError(t, err)
	require.True(t, present)
	require.Equal(t, NoBrokerEpoch, epoch)

	present, _, err = ReadCleanShutdown(vfs.OS, fixture(t, "kafka271-zk-single-broker/kafka-logs"))
	require.NoError(t, err)
	require.False(t, present)
}

func TestFixtureProducerSnapshot(t *testing.T) {
	p := fixture(t, "kafka271-zk-single-broker/kafka-logs/myTopic-0/00000000000000000038.snapshot")
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Len(t, raw, 148)
	require.Equal(t, uint32(0x1A3A695A), binary.BigEndian.Uint32(raw[2:]))

	got, err := ReadProducerSnapshot(vfs.OS, p)
	require.NoError(t, err)
	require.Len(t, got, 3)
	first := got[0]
	require.Equal(t, ProducerSnapshotEntry{
		ProducerID: 4001, ProducerEpoch: 0, LastSequence: 11, LastOffset: 11, OffsetDelta: 2,
		Timestamp: 1670068129797, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1,
	}, first)
	require.Equal(t, int32(9), first.FirstSequence(), "as kafka-dump-log prints it")
	require.Equal(t, []int64{4001, 4002, 4003}, []int64{got[0].ProducerID, got[1].ProducerID, got[2].ProducerID})
	require.Equal(t, raw, EncodeProducerSnapshot(got), "byte-exact re-encoding")

	empty := []byte{0x00, 0x01, 0x48, 0x67, 0x4b, 0xc7, 0x00, 0x00, 0x00, 0x00}
	files := fixtureFiles(t, "*.snapshot")
	require.GreaterOrEqual(t, len(files), 10)
	for _, p := range files {
		t.Run(fixtureName(t, p), func(t *testing.T) {
			raw, err := os.ReadFile(p)
			require.NoError(t, err)
			entries, err := DecodeProducerSnapshot(raw)
			require.NoError(t, err)
			require.Equal(t, raw, EncodeProducerSnapshot(entries))
			if len(entries) == 0 {
				require.Equal(t, empty, raw)
			}
		})
	}
}
