package inspect

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// TestDumpQkTxnIndex writes a .txnindex with broker/log (two aborted
// transactions, one committed) and reads it back with the dump tool.
func TestDumpQkTxnIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := log.DefaultConfig()
	cfg.MaxIndexSize = 4096
	l, err := log.Open(dir, cfg)
	require.NoError(t, err)
	seq := map[int64]int32{}
	data := func(pid int64) {
		t.Helper()
		o := record.DefaultBatchOptions()
		o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, 0, seq[pid], true
		b := record.NewBuilder(o)
		b.Append(1700000000000, []byte("k"), []byte("v"), nil)
		raw, err := b.Build()
		require.NoError(t, err)
		_, err = l.Append(raw, 0)
		require.NoError(t, err)
		seq[pid]++
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		_, err := l.AppendMarker(pid, 0, 7, commit, 0, 1700000000100)
		require.NoError(t, err)
	}
	data(11)          // 0
	data(12)          // 1
	marker(11, false) // 2: LSO 1 (12 open)
	data(13)          // 3
	marker(12, true)  // 4
	marker(13, false) // 5: LSO 6
	require.NoError(t, l.Close())

	var out, errw bytes.Buffer
	d := New(vfs.OS, &out, &errw, Options{WorkDir: dir})
	txnPath := filepath.Join(dir, "00000000000000000000.txnindex")
	require.NoError(t, d.Dump(txnPath), errw.String())
	require.Equal(t, "Dumping "+txnPath+"\n"+
		"version: 0 producerId: 11 firstOffset: 0 lastOffset: 2 lastStableOffset: 1\n"+
		"version: 0 producerId: 13 firstOffset: 3 lastOffset: 5 lastStableOffset: 6\n", out.String())

	// The markers themselves, as Kafka's tool prints them.
	out.Reset()
	d = New(vfs.OS, &out, &errw, Options{WorkDir: dir, DeepIteration: true})
	require.NoError(t, d.Dump(filepath.Join(dir, "00000000000000000000.log")), errw.String())
	var markers []string
	for _, line := range strings.Split(out.String(), "\n") {
		if i := strings.Index(line, "endTxnMarker: "); i >= 0 {
			markers = append(markers, line[i:])
		}
	}
	require.Equal(t, []string{
		"endTxnMarker: ABORT coordinatorEpoch: 7",
		"endTxnMarker: COMMIT coordinatorEpoch: 7",
		"endTxnMarker: ABORT coordinatorEpoch: 7",
	}, markers, fmt.Sprint(out.String()))
}
