package log

import (
	"cmp"
	"slices"

	"github.com/qk-project/qk/broker/record"
)

// The cleaner's transaction rules, after Kafka's LogCleaner
// (CleanedTransactionMetadata, Cleaner.buildOffsetMapForSegment and the
// RecordFilter of cleanInto). A clean only covers offsets below the last
// stable offset, so every transaction it sees is decided:
//
//   - the batches of an aborted transaction (a producer's batches from the
//     aborted transaction's first offset up to its ABORT marker, the
//     ranges taken from the .txnindex entries of the segments being
//     cleaned) are removed, and are not put in the offset map, so an
//     aborted record never hides a key's committed value;
//   - committed transactional records are cleaned like any others;
//   - a marker (control batch) is kept while the log still holds a batch
//     of its transaction. The first clean that finds none sets the batch's
//     delete horizon (attribute bit 0x40, baseTimestamp = now +
//     delete.retention.ms, as KIP-534 does for tombstones), and a clean
//     after that horizon removes the marker: a read_committed consumer
//     that read the data had delete.retention.ms to read the marker too;
//   - an ABORT marker that is kept because batches of its transaction are
//     still in the log (a producer's last batch is kept empty) keeps its
//     .txnindex entry; once no batch of the transaction is left, the entry
//     is dropped (it describes no data) while the marker waits for its
//     horizon, as in Kafka;
//   - a batch that carries a producer's last sequence, or its last epoch
//     (a marker when the producer's last entry is one), is kept, empty if
//     need be (Kafka's isBatchLastRecordOfProducer), so the producer
//     state rebuilt from the log stays right.
//
// The producer state is not changed by a clean: it describes the log's
// end, and a rebuild from the cleaned log gives the same producers (their
// last batches and markers are kept).

// lastRecord is what a clean must keep of a producer (Kafka's
// LastRecord): the last offset of its last data batch (-1 when its last
// entry is a marker that moved its epoch) and its epoch.
type lastRecord struct {
	lastDataOffset int64
	epoch          int16
}

// isLastOfProducer reports whether bt must be kept, empty if need be,
// because it is the last batch of an active producer: the batch holding
// its last data offset, or, when the producer has none, a marker of its
// current epoch.
func (p *cleanPlan) isLastOfProducer(bt record.Batch) bool {
	pid := bt.ProducerID()
	if pid < 0 {
		return false
	}
	lr, ok := p.producerLast[pid]
	if !ok {
		return false
	}
	if lr.lastDataOffset >= 0 {
		return bt.LastOffset() == lr.lastDataOffset
	}
	return bt.IsControl() && bt.ProducerEpoch() == lr.epoch
}

// abortedTxnMetadata is an aborted transaction the clean is inside of
// (Kafka's AbortedTransactionMetadata): observed says a batch of it was
// read in this clean.
type abortedTxnMetadata struct {
	txn      AbortedTxn
	observed bool
}

// cleanedTxnMetadata follows the transactions through one clean, batch by
// batch in offset order (Kafka's CleanedTransactionMetadata). It is
// carried from one group of segments to the next.
type cleanedTxnMetadata struct {
	// ongoingCommitted holds the producers whose current transaction had
	// a batch read in this clean and is not aborted.
	ongoingCommitted map[int64]bool
	// ongoingAborted holds, per producer, the aborted transaction whose
	// first offset has been passed and whose marker has not.
	ongoingAborted map[int64]*abortedTxnMetadata
	// pending are aborted transactions not reached yet, by first offset;
	// added records the ones ever added (by marker offset), so the same
	// entry collected for two segments is queued once.
	pending []AbortedTxn
	added   map[int64]bool
	// cleanedIndex collects the entries the group being written keeps.
	cleanedIndex []AbortedTxn
}

func newCleanedTxnMetadata() *cleanedTxnMetadata {
	return &cleanedTxnMetadata{ongoingCommitted: map[int64]bool{}, ongoingAborted: map[int64]*abortedTxnMetadata{}, added: map[int64]bool{}}
}

// addAborted queues aborted transactions collected from the .txnindex.
func (m *cleanedTxnMetadata) addAborted(txns []AbortedTxn) {
	n := len(m.pending)
	for _, a := range txns {
		if !m.added[a.LastOffset] {
			m.added[a.LastOffset] = true
			m.pending = append(m.pending, a)
		}
	}
	if len(m.pending) > n {
		slices.SortStableFunc(m.pending, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	}
}

// consumeAbortedUpTo makes every queued aborted transaction that begins
// at or below offset ongoing for its producer.
func (m *cleanedTxnMetadata) consumeAbortedUpTo(offset int64) {
	i := 0
	for ; i < len(m.pending) && m.pending[i].FirstOffset <= offset; i++ {
		a := m.pending[i]
		if _, ok := m.ongoingAborted[a.ProducerID]; !ok {
			m.ongoingAborted[a.ProducerID] = &abortedTxnMetadata{txn: a}
		}
	}
	m.pending = m.pending[i:]
}

// onBatchRead takes a data batch and reports whether it belongs to an
// aborted transaction (and can be discarded).
func (m *cleanedTxnMetadata) onBatchRead(bt record.Batch) bool {
	m.consumeAbortedUpTo(bt.LastOffset())
	if !bt.IsTransactional() {
		return false
	}
	if a, ok := m.ongoingAborted[bt.ProducerID()]; ok {
		a.observed = true
		return true
	}
	m.ongoingCommitted[bt.ProducerID()] = true
	return false
}

// onControlBatchRead takes a control batch and reports whether it can be
// discarded (once its delete horizon has passed): a marker whose
// transaction left no batch in this clean, or an empty control batch (a
// marker already cleaned). An ABORT marker with batches of its
// transaction still read keeps its .txnindex entry in the cleaned
// segment.
func (m *cleanedTxnMetadata) onControlBatchRead(bt record.Batch) bool {
	m.consumeAbortedUpTo(bt.LastOffset())
	if bt.NumRecords() == 0 {
		return true
	}
	typ, _, _, err := bt.TxnMarker()
	if err != nil {
		return false // unreadable: keep it
	}
	pid := bt.ProducerID()
	switch typ {
	case record.ControlAbort:
		a, ok := m.ongoingAborted[pid]
		delete(m.ongoingAborted, pid)
		if ok && a.observed {
			m.cleanedIndex = append(m.cleanedIndex, a.txn)
			return false
		}
		return true
	case record.ControlCommit:
		had := m.ongoingCommitted[pid]
		delete(m.ongoingCommitted, pid)
		return !had
	}
	return false
}
