package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
)

// writeSegment writes a two-batch segment (offsets 0-1 and 2) and a leader
// index for it into a temporary directory and returns the .log path.
func writeSegment(t *testing.T) (dir string, logBytes []byte, second int) {
	t.Helper()
	dir = t.TempDir()
	o := record.DefaultBatchOptions()
	b := record.NewBuilder(o)
	b.Append(1700000000000, []byte("k0"), []byte("v0"), nil)
	b.Append(1700000000001, []byte("k1"), []byte("v1"), nil)
	b0, err := b.Build()
	require.NoError(t, err)
	o.BaseOffset = 2
	b = record.NewBuilder(o)
	b.Append(1700000000002, nil, []byte("v2"), nil)
	b1, err := b.Build()
	require.NoError(t, err)
	logBytes = append(b0, b1...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), logBytes, 0o644))
	idx := log.AppendOffsetIndexEntry(nil, 2, int32(len(b0)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000000000.index"), idx, 0o644))
	return dir, logBytes, len(b0)
}

func TestDumpSegmentHelp(t *testing.T) {
	out, _, err := runQK(t, "dump-segment", "--help")
	require.NoError(t, err)
	require.Contains(t, out, "Examples:")
	for _, flag := range []string{"--deep-iteration", "--print-data-log", "--skip-record-metadata", "--verify-index-only",
		"--index-sanity-check", "--max-message-size", "--max-bytes", "--offsets-decoder", "--json", "--files"} {
		require.Contains(t, out, flag)
	}
}

func TestDumpSegmentFiles(t *testing.T) {
	dir, _, second := writeSegment(t)
	logPath := filepath.Join(dir, "00000000000000000000.log")
	idxPath := filepath.Join(dir, "00000000000000000000.index")

	out, errOut, err := runQK(t, "dump-segment", "--deep-iteration", logPath)
	require.NoError(t, err)
	require.Empty(t, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 7)
	require.Equal(t, "Dumping "+logPath, lines[0])
	require.Equal(t, "Log starting offset: 0", lines[1])
	require.True(t, strings.HasPrefix(lines[2], "baseOffset: 0 lastOffset: 1 count: 2 "), lines[2])
	require.Equal(t, "| offset: 1 CreateTime: 1700000000001 keySize: 2 valueSize: 2 sequence: -1 headerKeys: []", lines[4])

	// Kafka's --files a,b form, mixed with positional files.
	out, _, err = runQK(t, "dump-segment", "--files", logPath+","+idxPath, idxPath)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(out, "Dumping "))
	require.Contains(t, out, "offset: 2 position: "+itoa(second)+"\n")

	out, _, err = runQK(t, "dump-segment", "--print-data-log", "--skip-record-metadata", logPath)
	require.NoError(t, err)
	require.Contains(t, out, "\n| key: k0 payload: v0\n| key: k1 payload: v1\n")
	require.Contains(t, out, "\n payload: v2\n")

	out, _, err = runQK(t, "dump-segment", "--verify-index-only", idxPath)
	require.NoError(t, err)
	require.Equal(t, "Dumping "+idxPath+"\n", out)

	out, _, err = runQK(t, "dump-segment", "--index-sanity-check", idxPath)
	require.NoError(t, err)
	require.Equal(t, "Dumping "+idxPath+"\n"+idxPath+" passed sanity check.\n", out)

	out, _, err = runQK(t, "dump-segment", "--json", logPath)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(out, "\n"))
	require.True(t, strings.HasPrefix(out, `{"file":"`+logPath+`","type":"batch","baseOffset":0,`), out)

	// --max-bytes: only the first batch, no trailer for the cut one.
	out, _, err = runQK(t, "dump-segment", "--max-bytes", itoa(second+20), logPath)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(out, "baseOffset: "))
	require.NotContains(t, out, "invalid bytes")
}

func TestDumpSegmentExitStatus(t *testing.T) {
	dir, logBytes, second := writeSegment(t)
	logPath := filepath.Join(dir, "00000000000000000000.log")

	// A torn last batch: the readable batch is printed, the command fails.
	require.NoError(t, os.WriteFile(logPath, logBytes[:len(logBytes)-5], 0o644))
	out, errOut, err := runQK(t, "dump-segment", logPath)
	want := "torn batch at position " + itoa(second) + " of " + logPath + ": batch declares " + itoa(len(logBytes)-second) + " bytes, only " + itoa(len(logBytes)-second-5) + " remain"
	require.EqualError(t, err, want)
	require.Contains(t, out, "Found "+itoa(len(logBytes)-second-5)+" invalid bytes at the end of 00000000000000000000.log\n")
	require.Equal(t, "Error: "+want+"\n", errOut)

	// A CRC mismatch fails too, after printing isvalid: false.
	bad := append([]byte(nil), logBytes...)
	bad[record.RecordsOffset+4] ^= 0xff
	require.NoError(t, os.WriteFile(logPath, bad, 0o644))
	out, _, err = runQK(t, "dump-segment", logPath)
	require.EqualError(t, err, "1 batch of "+logPath+" failed the CRC check (isvalid: false)")
	require.Contains(t, out, " isvalid: false\n")

	// Unknown files are skipped, not failed.
	other := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(other, []byte("x"), 0o644))
	_, errOut, err = runQK(t, "dump-segment", other)
	require.NoError(t, err)
	require.Equal(t, "Ignoring unknown file "+other+"\n", errOut)

	_, _, err = runQK(t, "dump-segment")
	require.EqualError(t, err, "dump-segment: no files: give FILE arguments or --files a,b,...")
	_, _, err = runQK(t, "dump-segment", "--max-message-size", "0", logPath)
	require.Error(t, err)
}

func itoa(n int) string { return strconv.Itoa(n) }
