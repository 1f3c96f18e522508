package inspect

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/internal/fixtures"
)

// FuzzDumpSegment feeds arbitrary bytes to the .log dumper in every mode
// and, as index bytes, to the .index and .timeindex dumpers verifying
// against that log. Nothing may panic, whatever the input; the seeds are
// the Kafka-written fixtures plus the synthetic segment.
func FuzzDumpSegment(f *testing.F) {
	s := newTestSegment(f)
	idx := log.AppendOffsetIndexEntry(nil, 2, int32(s.positions[1]))
	f.Add(s.log, idx, uint8(0))
	f.Add(s.log, idx, uint8(0xff))
	err := filepath.WalkDir(fixtures.Dir(f), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		ext := filepath.Ext(p)
		if ext != ".log" && ext != ".records" && ext != ".messageset" {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && len(b) <= 16<<10 {
			f.Add(b, idx, uint8(len(b)))
		}
		return nil
	})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data, index []byte, mode uint8) {
		if len(data) > 1<<20 || len(index) > 1<<16 {
			return // size adds no new paths, only time
		}
		opts := Options{
			DeepIteration:      mode&1 != 0,
			PrintDataLog:       mode&2 != 0,
			OffsetsDecoder:     mode&4 != 0,
			JSON:               mode&8 != 0,
			SkipRecordMetadata: mode&16 != 0,
			VerifyIndexOnly:    mode&32 != 0,
			IndexSanityCheck:   mode&64 != 0,
			MaxMessageSize:     int(mode) * 4,
			WorkDir:            segDir,
		}
		if mode&128 != 0 {
			opts.MaxBytes = len(data) / 2
		}
		fsys := vfs.NewMem()
		writeFile(t, fsys, segDir+"/"+logName, data)
		writeFile(t, fsys, segDir+"/00000000000000000000.index", index)
		writeFile(t, fsys, segDir+"/00000000000000000000.timeindex", index)
		writeFile(t, fsys, segDir+"/00000000000000000000.snapshot", data)
		writeFile(t, fsys, segDir+"/00000000000000000000.txnindex", index)
		d := New(fsys, io.Discard, io.Discard, opts)
		_ = d.Dump(logName, "00000000000000000000.index", "00000000000000000000.timeindex",
			"00000000000000000000.snapshot", "00000000000000000000.txnindex")
	})
}
