package log

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/qk-project/qk/broker/record"
)

// Transactions in the producer state (Kafka's ProducerStateManager and
// ProducerAppendInfo). A transaction of producer P in this partition is
// the span from P's first transactional batch after its previous marker
// (its first offset) to P's next COMMIT or ABORT marker (its last
// offset). While it is open it is "ongoing"; once its marker is in the
// log it is "unreplicated" until the high watermark passes the marker.
// The first unstable offset is the smallest first offset of both sets,
// and the last stable offset min(first unstable offset, high watermark):
// a read_committed consumer reads below it only, and the records of a
// transaction become readable when the marker is replicated, never
// before.
//
//	offsets:   10   11   12   13   14   15   16   17
//	P1:        d              d         ABORT
//	P2:             d    d         COMMIT
//	after 14 (HW 15): ongoing {P1@10}, unreplicated {} → LSO 10
//	after 16 (HW 17): ongoing {}, unreplicated {}     → LSO 17
//
// An ABORT adds an entry to the .txnindex of the marker's segment
// (txnindex.go) with the last stable offset as Kafka computes it for the
// index: the first offset of the oldest open transaction of another
// producer, or marker + 1.

// CompletedTxn is a transaction a marker closed (Kafka's CompletedTxn):
// FirstOffset is its first data offset, LastOffset the marker's offset.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	IsAborted   bool
}

// txnMetadata is one transaction in ongoing or unreplicated (Kafka's
// TxnMetadata); lastOffset is -1 while it is open. startTimestamp is when
// this replica learned the transaction was open, by the log's clock (ms):
// when it appended the first batch, or when recovery or a producer
// snapshot brought the transaction back. It is for the age of open
// transactions in metrics and status pages, not in Kafka's TxnMetadata,
// and not in the snapshot format. The batch's own timestamps would be
// wrong for it: a producer may write old event times (Kafka Streams
// forwarding a backlog), which would make every transaction look hung.
type txnMetadata struct {
	producerID     int64
	firstOffset    int64
	lastOffset     int64
	startTimestamp int64
}

func compareTxns(a, b txnMetadata) int { return cmp.Compare(a.firstOffset, b.firstOffset) }

// insertTxn adds t to the ordered set txns. New transactions almost
// always start above every other, so this is an append.
func insertTxn(txns []txnMetadata, t txnMetadata) []txnMetadata {
	if n := len(txns); n == 0 || txns[n-1].firstOffset < t.firstOffset {
		return append(txns, t)
	}
	i, _ := slices.BinarySearchFunc(txns, t, compareTxns)
	return slices.Insert(txns, i, t)
}

func (m *ProducerStateManager) addOngoing(t txnMetadata) { m.ongoing = insertTxn(m.ongoing, t) }

// CheckMarker validates a transaction marker the leader is asked to write
// (WriteTxnMarkers) for producerID, as Kafka's appendEndTxnMarker does: a
// producer epoch older than the producer's is ErrInvalidProducerEpoch (a
// marker may carry a newer, bumped epoch), and a coordinator epoch older
// than that of the producer's last marker is
// ErrTransactionCoordinatorFenced (a zombie coordinator). A producer the
// partition does not know passes.
func (m *ProducerStateManager) CheckMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32) error {
	s, ok := m.producers[producerID]
	if !ok {
		return nil
	}
	if producerEpoch < s.epoch {
		return fmt.Errorf("%w: marker for producer %d has epoch %d, older than the current epoch %d",
			ErrInvalidProducerEpoch, producerID, producerEpoch, s.epoch)
	}
	if coordinatorEpoch < s.coordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d has coordinator epoch %d, older than %d",
			ErrTransactionCoordinatorFenced, producerID, coordinatorEpoch, s.coordinatorEpoch)
	}
	return nil
}

// LastStableOffsetFor is the last stable offset to store in the
// transaction index for a transaction being completed (Kafka's
// lastStableOffset(CompletedTxn)): the first offset of the oldest open
// transaction of another producer, or the marker's offset + 1. Call it
// after Update returned done and before CompleteTxn.
func (m *ProducerStateManager) LastStableOffsetFor(done CompletedTxn) int64 {
	for _, t := range m.ongoing {
		if t.producerID != done.ProducerID {
			return t.firstOffset
		}
	}
	return done.LastOffset + 1
}

// CompleteTxn moves a transaction Update closed from the ongoing set to
// the unreplicated set, where it stays until OnHighWatermarkUpdated passes
// its marker.
func (m *ProducerStateManager) CompleteTxn(done CompletedTxn) {
	i, found := slices.BinarySearchFunc(m.ongoing, done.FirstOffset, func(t txnMetadata, off int64) int {
		return cmp.Compare(t.firstOffset, off)
	})
	if found && m.ongoing[i].producerID == done.ProducerID {
		m.ongoing = slices.Delete(m.ongoing, i, i+1)
	}
	m.unreplicated = insertTxn(m.unreplicated, txnMetadata{producerID: done.ProducerID, firstOffset: done.FirstOffset, lastOffset: done.LastOffset})
}

// OnHighWatermarkUpdated forgets the completed transactions whose marker
// lies below hw (Kafka's onHighWatermarkUpdated); the log start offset
// moving past a marker does the same (onLogStartOffsetIncremented).
func (m *ProducerStateManager) OnHighWatermarkUpdated(hw int64) {
	m.unreplicated = slices.DeleteFunc(m.unreplicated, func(t txnMetadata) bool { return t.lastOffset < hw })
}

// FirstUnstableOffset is the first offset of the oldest transaction that
// is open or whose marker is not replicated yet; ok is false when there
// is none.
func (m *ProducerStateManager) FirstUnstableOffset() (offset int64, ok bool) {
	switch {
	case len(m.ongoing) == 0 && len(m.unreplicated) == 0:
		return 0, false
	case len(m.ongoing) == 0:
		return m.unreplicated[0].firstOffset, true
	case len(m.unreplicated) == 0:
		return m.ongoing[0].firstOffset, true
	}
	return min(m.ongoing[0].firstOffset, m.unreplicated[0].firstOffset), true
}

// FirstUndecidedOffset is the first offset of the oldest open transaction
// (regardless of replication); ok is false when none is open.
func (m *ProducerStateManager) FirstUndecidedOffset() (offset int64, ok bool) {
	if len(m.ongoing) == 0 {
		return 0, false
	}
	return m.ongoing[0].firstOffset, true
}

// OpenTxn is one open transaction of a partition.
type OpenTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// OngoingTxns returns the open transactions, oldest first.
func (m *ProducerStateManager) OngoingTxns() []OpenTxn {
	out := make([]OpenTxn, len(m.ongoing))
	for i, t := range m.ongoing {
		out[i] = OpenTxn{ProducerID: t.producerID, FirstOffset: t.firstOffset}
	}
	return out
}

// TxnStart is an open transaction and when it started: StartTimestamp
// (ms, the log's clock) is when this replica appended its first batch
// (a follower: when it replicated it), or, for a transaction recovered
// from disk, when the log was opened. After a restart the age of a
// transaction that was open before it starts again from 0.
type TxnStart struct {
	ProducerID     int64
	FirstOffset    int64
	StartTimestamp int64
}

// OngoingTxnStarts returns the open transactions with their start
// timestamps, oldest (by first offset) first.
func (m *ProducerStateManager) OngoingTxnStarts() []TxnStart {
	out := make([]TxnStart, len(m.ongoing))
	for i, t := range m.ongoing {
		out[i] = TxnStart{ProducerID: t.producerID, FirstOffset: t.firstOffset, StartTimestamp: t.startTimestamp}
	}
	return out
}

// stampTxnStart records nowMs as the start of the transaction bt opened,
// if it opened one (it is its producer's transaction's first batch). Call
// it after Update with a transactional data batch.
func (m *ProducerStateManager) stampTxnStart(bt record.Batch, nowMs int64) {
	first := bt.BaseOffset()
	if s := m.producers[bt.ProducerID()]; s == nil || s.txnFirstOffset != first {
		return
	}
	for i := len(m.ongoing) - 1; i >= 0; i-- {
		if t := &m.ongoing[i]; t.firstOffset == first {
			t.startTimestamp = nowMs
			return
		}
	}
}
