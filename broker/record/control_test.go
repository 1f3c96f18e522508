package record

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestControlTypeString(t *testing.T) {
	for typ, want := range map[ControlType]string{
		ControlAbort:          "ABORT",
		ControlCommit:         "COMMIT",
		ControlLeaderChange:   "LEADER_CHANGE",
		ControlSnapshotHeader: "SNAPSHOT_HEADER",
		ControlSnapshotFooter: "SNAPSHOT_FOOTER",
		ControlKRaftVersion:   "KRAFT_VERSION",
		ControlKRaftVoters:    "KRAFT_VOTERS",
		ControlUnknown:        "UNKNOWN",
		7:                     "UNKNOWN",
	} {
		require.Equal(t, want, typ.String())
	}
}

func TestParseControlKey(t *testing.T) {
	cases := []struct {
		name string
		key  []byte
		want ControlType
		err  bool
	}{
		{"abort", []byte{0, 0, 0, 0}, ControlAbort, false},
		{"commit", []byte{0, 0, 0, 1}, ControlCommit, false},
		{"leader change", []byte{0, 0, 0, 2}, ControlLeaderChange, false},
		{"kraft voters", []byte{0, 0, 0, 6}, ControlKRaftVoters, false},
		{"future version reads as 0", []byte{0, 3, 0, 1, 0xaa}, ControlCommit, false},
		{"unknown type", []byte{0, 0, 0, 7}, ControlUnknown, false},
		{"negative type", []byte{0, 0, 0xff, 0xfe}, ControlUnknown, false},
		{"negative version", []byte{0xff, 0xff, 0, 1}, ControlUnknown, true},
		{"short", []byte{0, 0, 0}, ControlUnknown, true},
		{"null", nil, ControlUnknown, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseControlKey(tc.key)
			require.Equal(t, tc.want, got)
			if tc.err {
				requireCorrupt(t, err, ErrInvalidRecord)
				return
			}
			require.NoError(t, err)
		})
	}
	require.Equal(t, []byte{0, 0, 0, 1}, AppendControlKey(nil, ControlCommit))
}

func TestParseEndTxnMarker(t *testing.T) {
	cases := []struct {
		name  string
		value []byte
		want  EndTxnMarker
		err   bool
	}{
		{"v0", []byte{0, 0, 0, 0, 0, 4}, EndTxnMarker{0, 4}, false},
		{"negative epoch", []byte{0, 0, 0xff, 0xff, 0xff, 0xff}, EndTxnMarker{0, -1}, false},
		{"future version with extra bytes", []byte{0, 1, 0, 0, 1, 0, 9, 9}, EndTxnMarker{1, 256}, false},
		{"negative version", []byte{0x80, 0, 0, 0, 0, 0}, EndTxnMarker{}, true},
		{"short", []byte{0, 0, 0, 0, 0}, EndTxnMarker{}, true},
		{"null", nil, EndTxnMarker{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEndTxnMarker(tc.value)
			if tc.err {
				requireCorrupt(t, err, ErrInvalidRecord)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	require.Equal(t, []byte{0, 0, 0, 0, 0, 4}, EndTxnMarker{Version: 3, CoordinatorEpoch: 4}.AppendTo(nil))
}

// TestBuildControlBatchKafka30 rebuilds two COMMIT marker batches from a
// real Kafka 3.0 dump (quoted in tombentley/klog's SegmentDumpReaderTest):
// producer 0, epoch 0, leader epoch 0, coordinator epoch 4, 78 bytes. The
// dump gives their CRCs, which cover everything but baseOffset and the
// leader epoch, so matching them shows the bytes are what Kafka wrote.
func TestBuildControlBatchKafka30(t *testing.T) {
	for _, tc := range []struct {
		baseOffset int64
		ts         int64
		crc        uint32
	}{
		{4, 1632840911601, 4234329125},
		{6, 1632840912595, 1079808135},
	} {
		opts := DefaultBatchOptions()
		opts.BaseOffset = tc.baseOffset
		opts.PartitionLeaderEpoch = 0
		opts.ProducerID, opts.ProducerEpoch = 0, 0
		opts.BaseSequence = 99 // overridden: markers carry no sequence
		raw, err := BuildControlBatch(opts, tc.ts, ControlCommit, 4)
		require.NoError(t, err)
		b, err := Validate(raw)
		require.NoError(t, err)
		require.Equal(t, 78, b.Size())
		require.Equal(t, tc.crc, b.CRC())
		require.True(t, b.IsControl())
		require.True(t, b.IsTransactional())
		require.Equal(t, int32(-1), b.BaseSequence())
		require.Equal(t, int32(-1), b.LastSequence())
		require.Equal(t, tc.ts, b.MaxTimestamp())

		recs, err := b.AllRecords()
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Len(t, recs[0].Key, ControlKeySize)
		require.Len(t, recs[0].Value, EndTxnMarkerSize)
		typ, err := ParseControlKey(recs[0].Key)
		require.NoError(t, err)
		require.Equal(t, ControlCommit, typ)
		m, err := ParseEndTxnMarker(recs[0].Value)
		require.NoError(t, err)
		require.Equal(t, EndTxnMarker{Version: 0, CoordinatorEpoch: 4}, m)
	}

	raw, err := BuildControlBatch(DefaultBatchOptions(), 1, ControlAbort, 0)
	require.NoError(t, err)
	recs, err := Batch(raw).AllRecords()
	require.NoError(t, err)
	typ, err := ParseControlKey(recs[0].Key)
	require.NoError(t, err)
	require.Equal(t, ControlAbort, typ)

	_, err = BuildControlBatch(DefaultBatchOptions(), 1, ControlLeaderChange, 0)
	require.Error(t, err)
}

func TestBatchTxnMarker(t *testing.T) {
	opts := DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch = 5, 2
	b, err := BuildControlBatch(opts, 100, ControlAbort, 17)
	if err != nil {
		t.Fatal(err)
	}
	typ, m, ok, err := Batch(b).TxnMarker()
	if err != nil || !ok || typ != ControlAbort || m.CoordinatorEpoch != 17 {
		t.Fatalf("TxnMarker = %v %+v %v %v", typ, m, ok, err)
	}
	// An emptied control batch (the cleaner's) and a non-marker control
	// record complete nothing.
	opts.Control, opts.Transactional = true, true
	empty, err := NewBuilder(opts).Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := Batch(empty).TxnMarker(); ok || err != nil {
		t.Fatalf("empty control batch: ok %v err %v", ok, err)
	}
	lb := NewBuilder(opts)
	lb.Append(100, AppendControlKey(nil, ControlLeaderChange), []byte{0, 0}, nil)
	leader, err := lb.Build()
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, ok, err := Batch(leader).TxnMarker(); ok || err != nil || typ != ControlLeaderChange {
		t.Fatalf("leader change: %v %v %v", typ, ok, err)
	}
	// A marker value too short is corrupt.
	cb := NewBuilder(opts)
	cb.Append(100, AppendControlKey(nil, ControlCommit), []byte{0, 0, 1}, nil)
	bad, err := cb.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Batch(bad).TxnMarker(); err == nil {
		t.Fatal("short marker value accepted")
	}
}
