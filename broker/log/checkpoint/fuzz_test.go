package checkpoint

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// addFixtureSeeds adds every fixture file matching the patterns to the
// corpus.
func addFixtureSeeds(f *testing.F, patterns ...string) {
	for _, pattern := range patterns {
		for _, p := range fixtureFiles(f, pattern) {
			b, err := os.ReadFile(p)
			require.NoError(f, err)
			f.Add(b)
		}
	}
}

var testTime = time.Date(2024, time.January, 2, 3, 4, 5, 0, time.UTC)

func utf8Valid(mp MetaProperties) bool {
	return utf8.ValidString(mp.ClusterID) && utf8.ValidString(mp.DirectoryID)
}

// FuzzDecodeProducerSnapshot checks that decoding never panics and that
// whatever decodes re-encodes to the same bytes. Random input almost never
// passes the CRC, so each input is also tried with its header repaired
// (version 1, correct CRC) to let the fuzzer reach the entry parsing.
func FuzzDecodeProducerSnapshot(f *testing.F) {
	f.Add([]byte{})
	f.Add(EncodeProducerSnapshot(nil))
	f.Add(EncodeProducerSnapshot(testSnapshotEntries))
	addFixtureSeeds(f, "*.snapshot")
	table := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, b []byte) {
		try := func(in []byte) {
			entries, err := DecodeProducerSnapshot(in)
			if err != nil {
				var ce *CorruptError
				require.ErrorAs(t, err, &ce)
				return
			}
			require.Equal(t, in, EncodeProducerSnapshot(entries))
		}
		try(b)
		if len(b) >= ProducerSnapshotHeaderSize {
			fixed := bytes.Clone(b)
			binary.BigEndian.PutUint16(fixed, ProducerSnapshotVersion)
			binary.BigEndian.PutUint32(fixed[2:], crc32.Checksum(fixed[6:], table))
			try(fixed)
		}
	})
}

// FuzzDecodeOffsets checks that offset checkpoint parsing never panics and
// that anything it accepts survives an encode/decode round trip. The
// leader-epoch parser shares the text layer and is exercised alongside.
func FuzzDecodeOffsets(f *testing.F) {
	for _, s := range []string{
		"", "0\n0\n", "0\n1\nt 0 5\n", "0\n2\na 0 1\nb 3 -1", "1\n0\n", "0\n1\nt 0\n", "0\r\n1\r\nt\t0  5\r\n",
		"0\n2\n0 0\n2 7\n",
	} {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f, RecoveryPointFile, ReplicationOffsetFile, LeaderEpochFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeOffsets(b)
		if err == nil {
			enc, err := EncodeOffsets(m)
			require.NoError(t, err, "decoded topics must be encodable")
			again, err := DecodeOffsets(enc)
			require.NoError(t, err)
			require.Equal(t, m, again)
		} else {
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
		}

		epochs, err := DecodeLeaderEpochs(b)
		if err == nil {
			again, err := DecodeLeaderEpochs(EncodeLeaderEpochs(epochs))
			require.NoError(t, err)
			require.Equal(t, epochs, again)
		}
	})
}

// FuzzDecodeMetaProperties checks the Properties parser never panics and
// that accepted content survives a round trip.
func FuzzDecodeMetaProperties(f *testing.F) {
	for _, s := range []string{
		"version=0\nbroker.id=1\n", "version=1\nnode.id=1\ncluster.id=x\n", "a\\\nb", "\\u00", "version=0\nbroker.id=1\ncluster.id=\\uD83D\\uDE00\\",
	} {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f, MetaPropertiesFile, PartitionMetadataFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodePartitionMetadata(b)
		_, _ = DecodeCleanShutdown(b)
		mp, err := DecodeMetaProperties(b)
		if err != nil {
			return
		}
		enc, err := EncodeMetaProperties(mp, testTime)
		require.NoError(t, err)
		again, err := DecodeMetaProperties(enc)
		require.NoError(t, err)
		if !utf8Valid(mp) {
			return // invalid UTF-8 is carried byte-wise but escaped as U+FFFD
		}
		require.Equal(t, mp, again)
	})
}
