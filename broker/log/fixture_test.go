package log

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
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
