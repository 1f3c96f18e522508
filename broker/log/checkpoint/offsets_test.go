package checkpoint

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
)

// newDir returns a MemFS with a durable directory /logs.
func newDir(t *testing.T) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	require.NoError(t, vfs.MkdirAllSync(m, "/logs", 0o755))
	return m
}

func TestOffsetsRoundTrip(t *testing.T) {
	m := newDir(t)
	want := map[TopicPartition]int64{
		{"invoice", 2}:             90808,
		{"invoice", 0}:             90867,
		{"__consumer_offsets", 17}: 1,
		{"a.b-c_d", 10}:            0,
		{"invoice", 10}:            -1,
	}
	require.NoError(t, WriteOffsets(m, "/logs", RecoveryPointFile, want))
	got, err := ReadOffsets(m, "/logs/"+RecoveryPointFile)
	require.NoError(t, err)
	require.Equal(t, want, got)

	b, err := vfs.ReadFile(m, "/logs/"+RecoveryPointFile)
	require.NoError(t, err)
	require.Equal(t, "0\n5\n__consumer_offsets 17 1\na.b-c_d 10 0\ninvoice 0 90867\ninvoice 2 90808\ninvoice 10 -1\n", string(b),
		"sorted by topic, then numerically by partition")

	require.NoError(t, WriteOffsets(m, "/logs", RecoveryPointFile, nil))
	got, err = ReadOffsets(m, "/logs/"+RecoveryPointFile)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NotNil(t, got)
	b, err = vfs.ReadFile(m, "/logs/"+RecoveryPointFile)
	require.NoError(t, err)
	require.Equal(t, "0\n0\n", string(b))
}

func TestOffsetsMissingFile(t *testing.T) {
	_, err := ReadOffsets(vfs.NewMem(), "/logs/"+ReplicationOffsetFile)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "checkpoint: ")
}

func TestEncodeOffsetsRejectsBadTopics(t *testing.T) {
	for _, topic := range []string{"", "a b", "a\tb", "a\nb", "a\u00a0b"} {
		_, err := EncodeOffsets(map[TopicPartition]int64{{topic, 0}: 1})
		require.Error(t, err, "%q", topic)
		require.ErrorContains(t, err, "checkpoint: ")
		require.Error(t, WriteOffsets(vfs.NewMem(), "/", CleanerOffsetFile, map[TopicPartition]int64{{topic, 0}: 1}))
	}
}

func TestDecodeOffsets(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[TopicPartition]int64
	}{
		{"empty file", "", map[TopicPartition]int64{}},
		{"no entries", "0\n0\n", map[TopicPartition]int64{}},
		{"no final newline", "0\n1\nt 3 5", map[TopicPartition]int64{{"t", 3}: 5}},
		{"CRLF", "0\r\n1\r\nt 3 5\r\n", map[TopicPartition]int64{{"t", 3}: 5}},
		{"tabs and runs of spaces", "0\n1\nt\t3   5\n", map[TopicPartition]int64{{"t", 3}: 5}},
		{"plus signs, as Java parses", "+0\n+1\nt +3 +5\n", map[TopicPartition]int64{{"t", 3}: 5}},
		{"extremes", "0\n2\nt 2147483647 9223372036854775807\nt -2147483648 -9223372036854775808\n",
			map[TopicPartition]int64{{"t", 2147483647}: 9223372036854775807, {"t", -2147483648}: -9223372036854775808}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeOffsets([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// corruptCase is one rejected input and what the error must say.
type corruptCase struct {
	name string
	in   string
	want error  // the sentinel reason
	line int    // the line reported, 0 if none
	text string // a substring of the message
}

func requireCorrupt(t *testing.T, tc corruptCase, err error) {
	t.Helper()
	require.ErrorIs(t, err, tc.want)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, tc.line, ce.Line, "line in %q", err)
	require.ErrorContains(t, err, tc.text)
	require.Regexp(t, `^checkpoint: `, err.Error())
}

func TestDecodeOffsetsCorrupt(t *testing.T) {
	for _, tc := range []corruptCase{
		{"version 1", "1\n0\n", ErrUnsupportedVersion, 1, "version 1, want 0"},
		{"version not a number", "v0\n0\n", ErrMalformed, 1, `version "v0"`},
		{"version with space", " 0\n0\n", ErrMalformed, 1, "version"},
		{"missing count", "0\n", ErrMalformed, 2, "missing entry count"},
		{"count not a number", "0\nthree\n", ErrMalformed, 2, `entry count "three"`},
		{"negative count", "0\n-1\n", ErrMalformed, 2, "non-negative"},
		{"more entries than the count", "0\n1\na 0 1\nb 0 1\n", ErrCountMismatch, 2, "header says 1 entries, file has 2"},
		{"fewer entries than the count", "0\n3\na 0 1\n", ErrCountMismatch, 2, "header says 3 entries, file has 1"},
		{"two fields", "0\n1\na 0\n", ErrMalformed, 3, `want 3 fields (topic partition offset), got "a 0"`},
		{"four fields", "0\n1\na 0 1 2\n", ErrMalformed, 3, "want 3 fields"},
		{"partition not a number", "0\n1\na x 1\n", ErrMalformed, 3, `partition "x" is not an int32`},
		{"partition overflows int32", "0\n1\na 2147483648 1\n", ErrMalformed, 3, "int32"},
		{"offset not a number", "0\n2\na 0 1\na 1 1.5\n", ErrMalformed, 4, `offset "1.5" is not an int64`},
		{"offset overflows int64", "0\n1\na 0 9223372036854775808\n", ErrMalformed, 3, "int64"},
		{"blank line", "0\n1\n\na 0 1\n", ErrMalformed, 3, "got \"\""},
		{"trailing blank line", "0\n1\na 0 1\n\n", ErrMalformed, 4, "want 3 fields"},
		{"duplicate partition", "0\n2\na 0 1\na 0 2\n", ErrMalformed, 4, "duplicate entry for a-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeOffsets([]byte(tc.in))
			require.Nil(t, got)
			requireCorrupt(t, tc, err)
		})
	}
}

func TestReadOffsetsErrorNamesFile(t *testing.T) {
	m := newDir(t)
	require.NoError(t, vfs.WriteFileAtomic(m, "/logs", LogStartOffsetFile, []byte("0\n1\nt 0 x\n")))
	_, err := ReadOffsets(m, "/logs/"+LogStartOffsetFile)
	require.EqualError(t, err, `checkpoint: /logs/log-start-offset-checkpoint:3: malformed: offset "x" is not an int64`)
	require.True(t, errors.Is(err, ErrMalformed))
}

func TestLeaderEpochs(t *testing.T) {
	m := newDir(t)
	want := []EpochEntry{{0, 0}, {2, 7}, {5, 1 << 40}}
	require.NoError(t, WriteLeaderEpochs(m, "/logs", want))
	b, err := vfs.ReadFile(m, "/logs/leader-epoch-checkpoint")
	require.NoError(t, err)
	require.Equal(t, "0\n3\n0 0\n2 7\n5 1099511627776\n", string(b))
	got, err := ReadLeaderEpochs(m, "/logs/"+LeaderEpochFile)
	require.NoError(t, err)
	require.Equal(t, want, got)

	require.NoError(t, WriteLeaderEpochs(m, "/logs", nil))
	got, err = ReadLeaderEpochs(m, "/logs/"+LeaderEpochFile)
	require.NoError(t, err)
	require.Empty(t, got)

	got, err = DecodeLeaderEpochs(nil)
	require.NoError(t, err)
	require.Empty(t, got)

	_, err = ReadLeaderEpochs(m, "/logs/nope/"+LeaderEpochFile)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestDecodeLeaderEpochsCorrupt(t *testing.T) {
	for _, tc := range []corruptCase{
		{"version 1", "1\n0\n", ErrUnsupportedVersion, 1, "version 1, want 0"},
		{"count mismatch", "0\n2\n0 0\n", ErrCountMismatch, 2, "header says 2 entries, file has 1"},
		{"three fields", "0\n1\n0 0 0\n", ErrMalformed, 3, "want 2 fields (epoch startOffset)"},
		{"epoch overflows int32", "0\n1\n2147483648 0\n", ErrMalformed, 3, `epoch "2147483648" is not an int32`},
		{"offset not a number", "0\n1\n0 zero\n", ErrMalformed, 3, `start offset "zero"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeLeaderEpochs([]byte(tc.in))
			require.Nil(t, got)
			requireCorrupt(t, tc, err)
		})
	}
	m := newDir(t)
	require.NoError(t, vfs.WriteFileAtomic(m, "/logs", LeaderEpochFile, []byte("0\n1\n0\n")))
	_, err := ReadLeaderEpochs(m, "/logs/"+LeaderEpochFile)
	require.ErrorContains(t, err, "checkpoint: /logs/leader-epoch-checkpoint:3: malformed")
}
