package log

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/internal/fixtures"
)

// rebuildFixture copies a Kafka-written .log into a temp partition dir,
// runs segment recovery on it with index.interval.bytes 4096 and returns
// the rebuilt (trimmed) .index and .timeindex bytes.
func rebuildFixture(t *testing.T, logRel string) (index, timeIndex []byte, res recoverResult) {
	t.Helper()
	data := fixture(t, logRel)
	dir := t.TempDir() + "/fixture-0"
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(FileName(dir, 0, LogSuffix), data, 0o644))
	cfg := segmentConfig{indexIntervalBytes: 4096, maxIndexSize: 10 << 20}
	seg, err := openSegment(vfs.OS, dir, 0, cfg, 0, testLogger(t))
	require.NoError(t, err)
	res, err = seg.recover(nil)
	require.NoError(t, err)
	require.NoError(t, seg.close())
	index, err = os.ReadFile(FileName(dir, 0, IndexSuffix))
	require.NoError(t, err)
	timeIndex, err = os.ReadFile(FileName(dir, 0, TimeIndexSuffix))
	require.NoError(t, err)
	return index, timeIndex, res
}

// TestRecoverRebuildsKafkaLeaderIndex: recovery of a 999 252-byte segment
// Kafka rolled as leader reproduces Kafka's 848-byte .index exactly. Its
// .timeindex does not match: that Kafka (< 3.8) keyed time entries by the
// record holding the max timestamp, recovery keys them by batch last
// offset; the timestamps and entry count still agree.
func TestRecoverRebuildsKafkaLeaderIndex(t *testing.T) {
	const dir = "cp-zk-3broker-rolled-segments/broker2/invoice-0/"
	index, timeIndex, res := rebuildFixture(t, dir+"00000000000000000000.log")
	require.Zero(t, res.truncated)
	want := fixture(t, dir+"00000000000000000000.index")
	require.Len(t, want, 848)
	require.Equal(t, want, index)

	wantT := fixture(t, dir+"00000000000000000000.timeindex")
	got, exp := DecodeTimeIndex(timeIndex, 0), DecodeTimeIndex(wantT, 0)
	require.Len(t, got, len(exp))
	for i := range got {
		require.Equal(t, exp[i].Timestamp, got[i].Timestamp, "entry %d timestamp", i)
		require.GreaterOrEqual(t, got[i].Offset, exp[i].Offset, "entry %d: batch last offset ≥ record offset", i)
	}
}

// TestRecoverRebuildsKafkaCleanShutdownIndexes: the cleanly closed active
// segment of Kafka 3.6 — both the 272-byte .index and the 420-byte
// .timeindex (34 entries plus the entry appended at close) are reproduced
// byte for byte.
func TestRecoverRebuildsKafkaCleanShutdownIndexes(t *testing.T) {
	const dir = "cp760-zk-clean-shutdown/kafka-data/stock-market-realtime-0/"
	index, timeIndex, res := rebuildFixture(t, dir+"00000000000000000000.log")
	require.Zero(t, res.truncated)
	require.Equal(t, fixture(t, dir+"00000000000000000000.index"), index)
	require.Len(t, index, 272)
	require.Equal(t, fixture(t, dir+"00000000000000000000.timeindex"), timeIndex)
	require.Len(t, timeIndex, 420)
}

// copyFixtureDir copies a Kafka partition directory into a temp log dir.
func copyFixtureDir(t *testing.T, rel string) string {
	t.Helper()
	src := fixtures.Path(t, rel)
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.MkdirAll(dst, 0o755))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// TestOpenKafkaPartitionDir opens the partition a Kafka 3.6 broker shut
// down cleanly: the log end offset, leader epochs, reads and timestamp
// lookups come from Kafka's files, appends continue them, and Kafka's index
// entries stay as they were.
func TestOpenKafkaPartitionDir(t *testing.T) {
	const rel = "cp760-zk-clean-shutdown/kafka-data/stock-market-realtime-0"
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			dir := copyFixtureDir(t, rel)
			kafkaIndex := fixture(t, rel+"/00000000000000000000.index")
			kafkaTimeIndex := fixture(t, rel+"/00000000000000000000.timeindex")
			l, err := Open(dir, DefaultConfig(), WithCleanShutdown(clean), WithRecoveryPoint(1120), WithHighWatermark(1120), WithLogger(testLogger(t)))
			require.NoError(t, err)
			require.Equal(t, "stock-market-realtime", l.Topic())
			require.Equal(t, int64(1120), l.LogEndOffset())
			require.Equal(t, int64(1120), l.HighWatermark())
			require.Equal(t, []EpochEntry{{Epoch: 0, StartOffset: 0}}, l.LeaderEpochs())
			if clean {
				require.Zero(t, l.RecoveryStats().RecoveredSegments)
			} else {
				require.Equal(t, 1, l.RecoveryStats().RecoveredSegments)
			}

			// Every index entry resolves to a batch with that last offset.
			for _, e := range DecodeOffsetIndex(kafkaIndex, 0) {
				ri, err := l.Read(e.Offset, 1, -1)
				require.NoError(t, err)
				require.Equal(t, int64(e.Position), ri.Region.Position)
				bt, err := record.Validate(regionBytes(t, ri.Region))
				require.NoError(t, err)
				require.Equal(t, e.Offset, bt.LastOffset())
			}
			// Timestamp lookups land on the first record at or after the time.
			for _, e := range DecodeTimeIndex(kafkaTimeIndex, 0) {
				res, ok, err := l.FetchOffsetByTimestamp(e.Timestamp)
				require.NoError(t, err)
				require.True(t, ok)
				require.GreaterOrEqual(t, res.Timestamp, e.Timestamp)
				require.LessOrEqual(t, res.Offset, e.Offset)
			}

			info, err := l.Append(makeBatch(t, 3, 1755049200000, 2000), 1)
			require.NoError(t, err)
			require.Equal(t, int64(1120), info.FirstOffset)
			require.NoError(t, l.Close())
			gotIndex, err := os.ReadFile(FileName(dir, 0, IndexSuffix))
			require.NoError(t, err)
			require.Equal(t, kafkaIndex, gotIndex[:len(kafkaIndex)], "Kafka's entries kept")
			gotTime, err := os.ReadFile(FileName(dir, 0, TimeIndexSuffix))
			require.NoError(t, err)
			require.Equal(t, kafkaTimeIndex, gotTime[:len(kafkaTimeIndex)])
			require.Len(t, gotTime, len(kafkaTimeIndex)+TimeIndexEntrySize, "one final entry for the new batch")
			checkDir(t, vfs.OS, dir, dirCheck{})
		})
	}
}
