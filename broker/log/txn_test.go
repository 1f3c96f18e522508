package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// txnBatch builds a transactional batch of n records of producer pid.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
	opts.Transactional = true
	b := record.NewBuilder(opts)
	for i := range n {
		b.Append(ts+int64(i), fmt.Appendf(nil, "p%d-s%d", pid, int64(seq)+int64(i)), []byte("txn-value"), nil)
	}
	out, err := b.Build()
	require.NoError(t, err)
	return out
}

// txnLog drives a log with transactional producers, remembering each
// producer's epoch and next sequence.
type txnLog struct {
	*testLog
	epoch map[int64]int16
	seq   map[int64]int32
	ts    int64
}

func newTxnLog(t *testing.T, fsys vfs.FS, cfg Config) *txnLog {
	return &txnLog{testLog: openTestLog(t, fsys, cfg), epoch: map[int64]int16{}, seq: map[int64]int32{}, ts: 1_700_000_000_000}
}

// data appends a transactional batch of n records of pid and returns its
// offsets.
func (x *txnLog) data(pid int64, n int) AppendInfo {
	x.t.Helper()
	x.ts += 10
	info, err := x.Append(txnBatch(x.t, pid, x.epoch[pid], x.seq[pid], n, x.ts), 0)
	require.NoError(x.t, err)
	x.seq[pid] += int32(n)
	return info
}

// plain appends a non-idempotent batch of n records.
func (x *txnLog) plain(n int) AppendInfo {
	x.t.Helper()
	x.ts += 10
	info, err := x.Append(makeBatch(x.t, n, x.ts, 8), 0)
	require.NoError(x.t, err)
	return info
}

// end writes a marker for pid with coordinator epoch 5.
func (x *txnLog) end(pid int64, commit bool) AppendInfo {
	x.t.Helper()
	x.ts += 10
	info, err := x.AppendMarker(pid, x.epoch[pid], 5, commit, 0, x.ts)
	require.NoError(x.t, err)
	return info
}

// hwToEnd moves the high watermark to the log end offset.
func (x *txnLog) hwToEnd() { x.SetHighWatermark(x.LogEndOffset()) }

func TestTransactionOpensAndMarkerCompletes(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.plain(2)            // 0-1
	first := x.data(7, 3) // 2-4: opens the transaction
	x.data(7, 2)          // 5-6: same transaction
	e, ok := x.Producer(7)
	require.True(t, ok)
	require.Equal(t, first.FirstOffset, e.CurrentTxnFirstOffset)
	require.Equal(t, int32(-1), e.CoordinatorEpoch)
	require.Equal(t, []OpenTxn{{ProducerID: 7, FirstOffset: 2}}, x.OngoingTransactions())

	m := x.end(7, true) // 7
	require.Equal(t, int64(7), m.FirstOffset)
	require.Equal(t, int64(7), m.LastOffset)
	e, _ = x.Producer(7)
	require.Equal(t, int64(-1), e.CurrentTxnFirstOffset)
	require.Equal(t, int32(5), e.CoordinatorEpoch)
	require.Empty(t, x.OngoingTransactions())
	// The marker is not a batch of the producer: its sequence state is the
	// last data batch's.
	require.Equal(t, int32(4), e.LastSequence())

	// The next transactional batch opens a new transaction.
	next := x.data(7, 1)
	e, _ = x.Producer(7)
	require.Equal(t, next.FirstOffset, e.CurrentTxnFirstOffset)
}

// TestMarkerBytes checks AppendMarker's batch against Kafka's layout with
// encoding/binary only.
func TestMarkerBytes(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.plain(3)
	info, err := x.AppendMarker(42, 3, 9, false, 4, 1_700_000_000_123)
	require.NoError(t, err)
	require.Equal(t, int64(3), info.FirstOffset)
	require.Equal(t, int64(1), info.NumRecords)
	batches := logBatches(t, x.Log)
	require.Len(t, batches, 2)
	b := []byte(batches[1])
	be := binary.BigEndian
	require.Equal(t, uint64(3), be.Uint64(b[0:]), "baseOffset")
	require.Equal(t, uint32(4), be.Uint32(b[12:]), "partitionLeaderEpoch")
	require.Equal(t, byte(2), b[16], "magic")
	require.Equal(t, uint16(0x30), be.Uint16(b[21:]), "attributes: transactional | control, no codec")
	require.Equal(t, uint32(0), be.Uint32(b[23:]), "lastOffsetDelta")
	require.Equal(t, uint64(1_700_000_000_123), be.Uint64(b[27:]), "baseTimestamp")
	require.Equal(t, uint64(1_700_000_000_123), be.Uint64(b[35:]), "maxTimestamp")
	require.Equal(t, uint64(42), be.Uint64(b[43:]), "producerId")
	require.Equal(t, uint16(3), be.Uint16(b[51:]), "producerEpoch")
	require.Equal(t, uint32(0xffffffff), be.Uint32(b[53:]), "baseSequence -1")
	require.Equal(t, uint32(1), be.Uint32(b[57:]), "record count")
	// One record: length, attributes 0, timestamp delta 0, offset delta 0,
	// key (4 bytes: version 0, type ABORT 0), value (6 bytes: version 0,
	// coordinator epoch 9), no headers.
	rec := b[61:]
	require.Equal(t, []byte{
		0x20,    // length 16 (zigzag)
		0, 0, 0, // attributes, timestampDelta, offsetDelta
		0x08,       // key length 4
		0, 0, 0, 0, // version 0, ABORT
		0x0c,             // value length 6
		0, 0, 0, 0, 0, 9, // version 0, coordinator epoch 9
		0, // no headers
	}, rec)
	require.Equal(t, len(b), 61+len(rec))
	_, err = record.Validate(b)
	require.NoError(t, err)
}

func TestMarkerFencing(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.epoch[7] = 2
	x.data(7, 2)
	_, err := x.AppendMarker(7, 2, 5, false, 0, 1)
	require.NoError(t, err)
	leo := x.LogEndOffset()

	// A coordinator epoch older than the last marker's: a zombie
	// coordinator.
	_, err = x.AppendMarker(7, 2, 4, true, 0, 1)
	require.ErrorIs(t, err, ErrTransactionCoordinatorFenced)
	// A producer epoch older than the producer's.
	_, err = x.AppendMarker(7, 1, 5, true, 0, 1)
	require.ErrorIs(t, err, ErrInvalidProducerEpoch)
	require.Equal(t, leo, x.LogEndOffset(), "refused markers append nothing")

	// A marker may carry a bumped epoch (the coordinator fenced the
	// producer); data of the old epoch is then fenced.
	x.data(7, 1)
	_, err = x.AppendMarker(7, 3, 6, false, 0, 1)
	require.NoError(t, err)
	e, _ := x.Producer(7)
	require.Equal(t, int16(3), e.Epoch)
	require.Equal(t, int32(6), e.CoordinatorEpoch)
	require.Equal(t, int64(-1), e.CurrentTxnFirstOffset)
	_, err = x.Append(txnBatch(t, 7, 2, x.seq[7], 1, 5), 0)
	require.ErrorIs(t, err, ErrInvalidProducerEpoch)
	// The new epoch starts at sequence 0.
	_, err = x.Append(txnBatch(t, 7, 3, 5, 1, 5), 0)
	require.ErrorIs(t, err, ErrOutOfOrderSequence)
	_, err = x.Append(txnBatch(t, 7, 3, 0, 1, 5), 0)
	require.NoError(t, err)
}

func TestMarkerForUnknownProducerOpensNothing(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	info, err := x.AppendMarker(9, 0, 3, false, 0, 100)
	require.NoError(t, err)
	require.Equal(t, int64(0), info.FirstOffset)
	require.Equal(t, int64(1), x.LogEndOffset())
	e, ok := x.Producer(9)
	require.True(t, ok)
	require.Equal(t, int32(3), e.CoordinatorEpoch)
	require.Equal(t, int64(-1), e.CurrentTxnFirstOffset)
	require.Empty(t, x.OngoingTransactions())
	require.False(t, x.exists(FileName(x.dir, 0, TxnIndexSuffix)), "an abort of nothing is not indexed")
	x.hwToEnd()
	require.Equal(t, int64(1), x.LastStableOffset())
}

func TestTransactionalBatchRules(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	first := x.data(7, 2)
	// A retry of the batch is answered with its offsets.
	info, err := x.Append(txnBatch(t, 7, 0, 0, 2, 5), 0)
	require.NoError(t, err)
	require.True(t, info.Duplicate)
	require.Equal(t, first.FirstOffset, info.FirstOffset)
	// A gap.
	_, err = x.Append(txnBatch(t, 7, 0, 5, 1, 5), 0)
	require.ErrorIs(t, err, ErrOutOfOrderSequence)
	// A non-transactional batch while the transaction is open.
	_, err = x.Append(idemBatch(t, 7, 0, 2, 1, 5), 0)
	require.ErrorIs(t, err, ErrInvalidTxnState)
	// Clients may not write control batches.
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch = 7, 0
	marker, err := record.BuildControlBatch(opts, 5, record.ControlCommit, 1)
	require.NoError(t, err)
	_, err = x.Append(marker, 0)
	require.ErrorIs(t, err, ErrInvalidBatch)
	require.Equal(t, int64(2), x.LogEndOffset())
	// After the marker an idempotent batch is fine again.
	x.end(7, true)
	_, err = x.Append(idemBatch(t, 7, 0, 2, 1, 5), 0)
	require.NoError(t, err)
}

func TestLastStableOffset(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.plain(2) // 0-1
	x.hwToEnd()
	require.Equal(t, int64(2), x.LastStableOffset(), "no transaction: LSO = HW")

	x.data(7, 2) // 2-3
	x.plain(3)   // 4-6
	x.hwToEnd()
	require.Equal(t, int64(2), x.LastStableOffset(), "stuck at the open transaction")
	fuo, ok := x.FirstUnstableOffset()
	require.True(t, ok)
	require.Equal(t, int64(2), fuo)

	x.SetHighWatermark(1)
	require.Equal(t, int64(1), x.LastStableOffset(), "never above the HW")
	x.hwToEnd()

	m := x.end(7, true) // 7
	require.Equal(t, int64(2), x.LastStableOffset(), "the marker is not replicated yet")
	x.SetHighWatermark(m.LastOffset)
	require.Equal(t, int64(2), x.LastStableOffset(), "HW at the marker: not below it")
	x.SetHighWatermark(m.LastOffset + 1)
	require.Equal(t, int64(8), x.LastStableOffset(), "HW past the marker: the transaction is stable")
	_, ok = x.FirstUnstableOffset()
	require.False(t, ok)
	snap := x.FetchOffsetSnapshot()
	require.Equal(t, OffsetSnapshot{LogStartOffset: 0, LogEndOffset: 8, HighWatermark: 8, LastStableOffset: 8}, snap)
}

func TestLastStableOffsetInterleaved(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.data(1, 1) // 0  P1 opens
	x.data(2, 1) // 1  P2 opens
	x.data(1, 1) // 2
	x.data(3, 1) // 3  P3 opens
	x.hwToEnd()
	require.Equal(t, int64(0), x.LastStableOffset())
	require.Equal(t, []OpenTxn{{1, 0}, {2, 1}, {3, 3}}, x.OngoingTransactions())

	x.end(2, false) // 4: P2 aborts; P1 still holds the LSO
	x.hwToEnd()
	require.Equal(t, int64(0), x.LastStableOffset())
	x.end(1, true) // 5
	x.hwToEnd()
	require.Equal(t, int64(3), x.LastStableOffset(), "P3 is now the oldest open transaction")
	x.data(1, 1)   // 6: P1's next transaction
	x.end(3, true) // 7
	x.hwToEnd()
	require.Equal(t, int64(6), x.LastStableOffset())
	x.end(1, false) // 8
	require.Equal(t, int64(6), x.LastStableOffset(), "completed but not replicated")
	x.hwToEnd()
	require.Equal(t, int64(9), x.LastStableOffset())
}

func TestLastStableOffsetAtLogStart(t *testing.T) {
	cfg := smallConfig()
	x := newTxnLog(t, nil, cfg)
	x.plain(2)   // 0-1
	x.data(7, 2) // 2-3
	x.plain(2)   // 4-5
	x.hwToEnd()
	_, err := x.DeleteRecordsBefore(3)
	require.NoError(t, err)
	require.Equal(t, int64(3), x.LastStableOffset(), "the first unstable offset is raised to the log start")
	x.end(7, false) // 6
	_, err = x.DeleteRecordsBefore(6)
	require.NoError(t, err)
	require.Equal(t, int64(6), x.LastStableOffset(), "HW 6 is at the marker")
	x.hwToEnd()
	require.Equal(t, int64(7), x.LastStableOffset())
}

func TestAppendMarkerOnClosedLog(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.closeLog()
	l, err := Open(x.dir, x.cfg, WithFS(x.fsys))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = l.AppendMarker(1, 0, 0, true, 0, 1)
	require.True(t, errors.Is(err, ErrClosed), "%v", err)
}

// TestMarkerMatchesKafka compares AppendMarker's batches with two COMMIT
// markers Apache Kafka 3.0 wrote, as its dump tool printed them
// (tombentley/klog's SegmentDumpReaderTest: producerId 0, producerEpoch
// 0, partitionLeaderEpoch 0, coordinatorEpoch 4, size 78): the CRC covers
// every byte from the attributes on, so equal CRCs and sizes mean equal
// batches but for the base offset.
func TestMarkerMatchesKafka(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	for _, m := range []struct {
		createTime int64
		crc        uint32
	}{{1632840911601, 4234329125}, {1632840912595, 1079808135}} {
		info, err := x.AppendMarker(0, 0, 4, true, 0, m.createTime)
		require.NoError(t, err)
		ri, err := x.Read(info.FirstOffset, 1000, -1)
		require.NoError(t, err)
		b := record.Batch(regionBytes(t, ri.Region))
		require.Equal(t, 78, b.Size())
		require.Equal(t, m.crc, b.CRC())
	}
}

// BenchmarkAppendTransactional compares leader appends of 1 KiB
// idempotent batches with the same batches in transactions of 10
// batches, each closed by a COMMIT marker (the partition's share of a
// transaction's cost).
func BenchmarkAppendTransactional(b *testing.B) {
	for _, txn := range []bool{false, true} {
		b.Run(fmt.Sprintf("transactional=%v", txn), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.MaxIndexSize = 1 << 20
			l, err := Open(b.TempDir()+"/t-0", cfg, WithFS(vfs.NewMem()))
			require.NoError(b, err)
			defer l.Close()
			opts := record.DefaultBatchOptions()
			opts.ProducerID, opts.ProducerEpoch, opts.Transactional = 1, 0, txn
			bl := record.NewBuilder(opts)
			bl.Append(1, []byte("key"), make([]byte, 1024), nil)
			batch, err := bl.Build()
			require.NoError(b, err)
			seq := int32(0)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				binary.BigEndian.PutUint32(batch[record.BaseSequenceOffset:], uint32(seq))
				record.Batch(batch).UpdateCRC()
				if _, err := l.Append(batch, 0); err != nil {
					b.Fatal(err)
				}
				seq++
				if txn && seq%10 == 0 {
					if _, err := l.AppendMarker(1, 0, 0, true, 0, 1); err != nil {
						b.Fatal(err)
					}
				}
				l.SetHighWatermark(l.LogEndOffset())
			}
		})
	}
}

func TestOngoingTxnStartsAtFirstAppend(t *testing.T) {
	x := newTxnLog(t, nil, smallConfig())
	x.ts = 5 // the batches' own (event) timestamps play no part
	start7 := x.clock.Now().UnixMilli()
	x.data(7, 3) // 0-2
	x.clock.Advance(time.Second)
	start8 := x.clock.Now().UnixMilli()
	x.data(8, 1) // 3
	x.clock.Advance(time.Second)
	x.data(7, 2) // 4-5: same transaction, its start stays
	require.Equal(t, []TxnStart{{ProducerID: 7, FirstOffset: 0, StartTimestamp: start7},
		{ProducerID: 8, FirstOffset: 3, StartTimestamp: start8}}, x.OngoingTxnStarts())

	x.end(7, false) // 6
	x.clock.Advance(time.Second)
	x.data(7, 1) // 7: a new transaction of 7, started now
	now := x.clock.Now().UnixMilli()
	require.Equal(t, []TxnStart{{ProducerID: 8, FirstOffset: 3, StartTimestamp: start8},
		{ProducerID: 7, FirstOffset: 7, StartTimestamp: now}}, x.OngoingTxnStarts())

	// Reopened (recovery or a snapshot), the open transactions start when
	// the log is opened.
	x.closeLog()
	x.clock.Advance(time.Minute)
	x.reopen()
	reopened := x.clock.Now().UnixMilli()
	require.Equal(t, []TxnStart{{ProducerID: 8, FirstOffset: 3, StartTimestamp: reopened},
		{ProducerID: 7, FirstOffset: 7, StartTimestamp: reopened}}, x.OngoingTxnStarts())
}
