package log

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
)

// noProducerEpoch is RecordBatch.NO_PRODUCER_EPOCH.
const noProducerEpoch int16 = -1

// ProducerBatchesRetained is how many of a producer's last batches a
// partition remembers (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
// It matches the client's max.in.flight.requests.per.connection limit for
// idempotence, 5: a retry is always of one of the last five batches sent,
// so it is found here and answered with its original offsets.
const ProducerBatchesRetained = 5

// DefaultProducerIDExpirationMs is producer.id.expiration.ms: a producer
// whose last batch is older than this is forgotten.
const DefaultProducerIDExpirationMs = 86_400_000

// BatchMetadata is what the partition remembers of one appended
// idempotent batch: enough to recognise a retry of it and to answer the
// retry with the offsets the original got.
type BatchMetadata struct {
	FirstSeq    int32
	LastSeq     int32
	FirstOffset int64
	LastOffset  int64
	OffsetDelta int32 // LastOffset - FirstOffset (= LastSeq - FirstSeq with wrap)
	Timestamp   int64 // max timestamp of the batch as stored
}

// ProducerEntry is the state of one producer id in one partition, as
// DescribeProducers reports it. Batches are oldest first, at most
// ProducerBatchesRetained; after a restart from a snapshot only the last
// batch is known (the snapshot format keeps one), as in Kafka.
type ProducerEntry struct {
	ProducerID int64
	Epoch      int16
	Batches    []BatchMetadata
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker, -1 before the first.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the first offset of the producer's open
	// transaction, -1 when none.
	CurrentTxnFirstOffset int64
	LastTimestamp         int64
}

// LastSequence is the sequence of the last record of the last batch, or
// -1 when the producer has no batch (only a transaction marker).
func (e ProducerEntry) LastSequence() int32 {
	if len(e.Batches) == 0 {
		return record.NoSequence
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// LastOffset is the offset of the last record of the last batch, or -1.
func (e ProducerEntry) LastOffset() int64 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastOffset
}

// producerState is the mutable form of ProducerEntry: a fixed array of
// batches, so that an idempotent append allocates nothing for a known
// producer.
type producerState struct {
	epoch            int16
	coordinatorEpoch int32
	txnFirstOffset   int64
	lastTimestamp    int64
	n                int
	batches          [ProducerBatchesRetained]BatchMetadata // oldest first
}

func (s *producerState) last() (BatchMetadata, bool) {
	if s.n == 0 {
		return BatchMetadata{}, false
	}
	return s.batches[s.n-1], true
}

// setEpoch moves the producer to epoch; a different epoch forgets the
// batches (their sequences belong to the old epoch).
func (s *producerState) setEpoch(epoch int16) {
	if epoch != s.epoch {
		s.epoch = epoch
		s.n = 0
	}
}

func (s *producerState) addBatch(b BatchMetadata) {
	if s.n == ProducerBatchesRetained {
		copy(s.batches[:], s.batches[1:])
		s.n--
	}
	s.batches[s.n] = b
	s.n++
	s.lastTimestamp = b.Timestamp
}

func (s *producerState) entry(id int64) ProducerEntry {
	return ProducerEntry{
		ProducerID:            id,
		Epoch:                 s.epoch,
		Batches:               slices.Clone(s.batches[:s.n]),
		CoordinatorEpoch:      s.coordinatorEpoch,
		CurrentTxnFirstOffset: s.txnFirstOffset,
		LastTimestamp:         s.lastTimestamp,
	}
}

// ProducerStateManager is the producer state of one partition (Kafka's
// ProducerStateManager): for every producer id seen, its epoch and its
// last ProducerBatchesRetained batches. It is a pure state machine, not
// safe for concurrent use: a Log owns one and calls it under its lock,
// checking each idempotent batch before assigning offsets (CheckAppend)
// and recording it after the write (Update). The state is what the log
// implies: replaying the log's batches through Update from an empty
// manager, or from a snapshot taken at offset S and the batches from S on,
// rebuilds it exactly (minus batches older than the last per producer
// when starting from a snapshot).
//
// It also tracks transactions (txnstate.go): a transactional batch of a
// producer without an open transaction opens one at its base offset, a
// COMMIT or ABORT marker completes it, and the open ones (ongoing) and the
// completed ones whose marker the high watermark has not passed yet
// (unreplicated) give the first unstable offset.
type ProducerStateManager struct {
	producers map[int64]*producerState
	// ongoing are the open transactions, unreplicated the completed ones
	// whose marker is at or above the high watermark; both ordered by
	// first offset (Kafka's ongoingTxns and unreplicatedTxns).
	ongoing      []txnMetadata
	unreplicated []txnMetadata
}

// NewProducerStateManager returns an empty manager.
func NewProducerStateManager() *ProducerStateManager {
	return &ProducerStateManager{producers: map[int64]*producerState{}}
}

// Len is the number of producers with state.
func (m *ProducerStateManager) Len() int { return len(m.producers) }

// Producer returns a copy of one producer's state.
func (m *ProducerStateManager) Producer(id int64) (ProducerEntry, bool) {
	s, ok := m.producers[id]
	if !ok {
		return ProducerEntry{}, false
	}
	return s.entry(id), true
}

// Producers returns a copy of every producer's state, by producer id.
func (m *ProducerStateManager) Producers() []ProducerEntry {
	ids := slices.Sorted(maps.Keys(m.producers))
	out := make([]ProducerEntry, len(ids))
	for i, id := range ids {
		out[i] = m.producers[id].entry(id)
	}
	return out
}

// inSequence is Kafka's rule: next follows last, wrapping from MaxInt32
// to 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// CheckAppend validates an idempotent batch (ProducerID ≥ 0) a client
// sends to the leader, before it gets offsets. In Kafka's order:
//
//   - a batch of the producer's current epoch with the same first and last
//     sequence as one of the last ProducerBatchesRetained batches is a
//     retry: CheckAppend returns that batch's metadata and
//     ErrDuplicateSequence, and the caller answers with the original
//     offsets without appending;
//   - no state for the producer (never seen, expired, or its data deleted
//     by retention): accepted at any sequence, as Kafka does since 2.5
//     ("if there is no current producer epoch ... accept writes with any
//     sequence number"); UNKNOWN_PRODUCER_ID is no longer returned;
//   - an epoch below the current one: ErrInvalidProducerEpoch (fenced);
//   - a higher epoch must start at sequence 0, else ErrOutOfOrderSequence;
//   - the same epoch must continue at last sequence + 1 (MaxInt32 wraps to
//     0), else ErrOutOfOrderSequence: a gap, or a retry of a batch older
//     than the window;
//   - a non-transactional batch while the producer's transaction is open
//     is ErrInvalidTxnState (Kafka's InvalidTxnStateException).
//
// Transactional batches are checked like idempotent ones; a transactional
// batch of a producer without an open transaction opens one (Update).
func (m *ProducerStateManager) CheckAppend(bt record.Batch) (BatchMetadata, error) {
	id, epoch, firstSeq := bt.ProducerID(), bt.ProducerEpoch(), bt.BaseSequence()
	s, ok := m.producers[id]
	if !ok {
		return BatchMetadata{}, nil
	}
	if epoch == s.epoch {
		lastSeq := bt.LastSequence()
		for _, b := range s.batches[:s.n] {
			if b.FirstSeq == firstSeq && b.LastSeq == lastSeq {
				return b, ErrDuplicateSequence
			}
		}
	}
	switch {
	case epoch < s.epoch:
		return BatchMetadata{}, fmt.Errorf("%w: producer %d epoch %d is older than the current epoch %d",
			ErrInvalidProducerEpoch, id, epoch, s.epoch)
	case epoch != s.epoch:
		if firstSeq != 0 && s.epoch != noProducerEpoch {
			return BatchMetadata{}, fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d, not 0",
				ErrOutOfOrderSequence, id, epoch, firstSeq)
		}
	default:
		last := int32(record.NoSequence)
		if b, ok := s.last(); ok {
			last = b.LastSeq
		}
		if !inSequence(last, firstSeq) {
			return BatchMetadata{}, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d",
				ErrOutOfOrderSequence, id, epoch, firstSeq, nextSequence(last))
		}
	}
	if s.txnFirstOffset >= 0 && !bt.IsTransactional() {
		return BatchMetadata{}, fmt.Errorf("%w: producer %d sent a non-transactional batch while its transaction from offset %d is open",
			ErrInvalidTxnState, id, s.txnFirstOffset)
	}
	return BatchMetadata{}, nil
}

// CheckCoordinatorAppend validates a batch a coordinator wrote for a
// producer (Log.AppendAsCoordinator): only the epoch, as Kafka's
// ProducerAppendInfo does for AppendOrigin.COORDINATOR, and a plain batch
// inside an open transaction.
func (m *ProducerStateManager) CheckCoordinatorAppend(bt record.Batch) error {
	id, epoch := bt.ProducerID(), bt.ProducerEpoch()
	s, ok := m.producers[id]
	if !ok {
		return nil
	}
	if epoch < s.epoch {
		return fmt.Errorf("%w: producer %d epoch %d is older than the current epoch %d", ErrInvalidProducerEpoch, id, epoch, s.epoch)
	}
	if s.txnFirstOffset >= 0 && !bt.IsTransactional() {
		return fmt.Errorf("%w: producer %d sent a non-transactional batch while its transaction from offset %d is open",
			ErrInvalidTxnState, id, s.txnFirstOffset)
	}
	return nil
}

func nextSequence(last int32) int32 {
	if last == math.MaxInt32 {
		return 0
	}
	return last + 1
}

// Update records a batch that is in the log (ProducerID ≥ 0, offsets
// assigned): an appended one, a replicated one, or one replayed at load.
// It does not validate: whatever is in the log is the truth (Kafka's
// REPLICATION origin). A data batch is remembered for deduplication; a
// transactional one opens a transaction at its base offset if the
// producer has none open. A control batch must be whole (its first record
// is read): a COMMIT or ABORT marker moves the epoch, sets the
// coordinator epoch and closes the producer's open transaction, which is
// returned (ok) for the caller to index (an ABORT) and then hand to
// CompleteTxn. A marker for a producer without an open transaction
// completes nothing (Kafka writes it all the same). A control batch
// whose records cannot be read, or that holds none, changes nothing.
func (m *ProducerStateManager) Update(bt record.Batch) (done CompletedTxn, ok bool) {
	id := bt.ProducerID()
	var marker record.EndTxnMarker
	var typ record.ControlType
	if bt.IsControl() {
		var isMarker bool
		var err error
		typ, marker, isMarker, err = bt.TxnMarker()
		if err != nil || !isMarker {
			return CompletedTxn{}, false
		}
	}
	s, found := m.producers[id]
	if !found {
		s = &producerState{epoch: bt.ProducerEpoch(), coordinatorEpoch: -1, txnFirstOffset: -1}
		m.producers[id] = s
	}
	s.setEpoch(bt.ProducerEpoch())
	if bt.IsControl() {
		if s.txnFirstOffset >= 0 {
			done = CompletedTxn{ProducerID: id, FirstOffset: s.txnFirstOffset, LastOffset: bt.BaseOffset(), IsAborted: typ == record.ControlAbort}
			ok = true
		}
		s.coordinatorEpoch = marker.CoordinatorEpoch
		s.txnFirstOffset = -1
		s.lastTimestamp = bt.MaxTimestamp()
		return done, ok
	}
	s.addBatch(BatchMetadata{
		FirstSeq:    bt.BaseSequence(),
		LastSeq:     bt.LastSequence(),
		FirstOffset: bt.BaseOffset(),
		LastOffset:  bt.LastOffset(),
		OffsetDelta: bt.LastOffsetDelta(),
		Timestamp:   bt.MaxTimestamp(),
	})
	if bt.IsTransactional() && s.txnFirstOffset < 0 {
		s.txnFirstOffset = bt.BaseOffset()
		m.addOngoing(txnMetadata{producerID: id, firstOffset: s.txnFirstOffset, lastOffset: -1})
	}
	return CompletedTxn{}, false
}

// RemoveExpired forgets every producer whose last timestamp is at least
// expirationMs old (producer.id.expiration.ms; Kafka compares with the
// batch timestamps, so a producer writing with old CreateTime timestamps
// expires early there too) and returns how many were removed.
func (m *ProducerStateManager) RemoveExpired(nowMs, expirationMs int64) int {
	n := 0
	for id, s := range m.producers {
		if nowMs-s.lastTimestamp >= expirationMs && s.txnFirstOffset < 0 {
			delete(m.producers, id)
			n++
		}
	}
	return n
}

// Snapshot returns the snapshot entries of every producer, by producer id:
// its epoch and its last batch (the snapshot format keeps one batch).
func (m *ProducerStateManager) Snapshot() []checkpoint.ProducerSnapshotEntry {
	ids := slices.Sorted(maps.Keys(m.producers))
	out := make([]checkpoint.ProducerSnapshotEntry, len(ids))
	for i, id := range ids {
		s := m.producers[id]
		e := checkpoint.ProducerSnapshotEntry{
			ProducerID:            id,
			ProducerEpoch:         s.epoch,
			LastSequence:          record.NoSequence,
			LastOffset:            -1,
			Timestamp:             s.lastTimestamp,
			CoordinatorEpoch:      s.coordinatorEpoch,
			CurrentTxnFirstOffset: s.txnFirstOffset,
		}
		if b, ok := s.last(); ok {
			e.LastSequence, e.LastOffset, e.OffsetDelta = b.LastSeq, b.LastOffset, b.OffsetDelta
		}
		out[i] = e
	}
	return out
}

// LoadSnapshot replaces the state with a snapshot's entries, skipping
// producers already expired at nowMs (as Kafka's loadFromSnapshot does).
func (m *ProducerStateManager) LoadSnapshot(entries []checkpoint.ProducerSnapshotEntry, nowMs, expirationMs int64) {
	m.Reset()
	for _, e := range entries {
		if nowMs-e.Timestamp >= expirationMs && e.CurrentTxnFirstOffset < 0 {
			continue
		}
		s := &producerState{
			epoch:            e.ProducerEpoch,
			coordinatorEpoch: e.CoordinatorEpoch,
			txnFirstOffset:   e.CurrentTxnFirstOffset,
			lastTimestamp:    e.Timestamp,
		}
		if e.LastSequence >= 0 {
			s.addBatch(BatchMetadata{
				FirstSeq:    e.FirstSequence(),
				LastSeq:     e.LastSequence,
				FirstOffset: e.LastOffset - int64(e.OffsetDelta),
				LastOffset:  e.LastOffset,
				OffsetDelta: e.OffsetDelta,
				Timestamp:   e.Timestamp,
			})
		}
		m.producers[e.ProducerID] = s
		if s.txnFirstOffset >= 0 {
			m.ongoing = append(m.ongoing, txnMetadata{producerID: e.ProducerID, firstOffset: s.txnFirstOffset, lastOffset: -1,
				startTimestamp: nowMs})
		}
	}
	slices.SortFunc(m.ongoing, compareTxns)
}

// Reset forgets every producer and transaction.
func (m *ProducerStateManager) Reset() {
	clear(m.producers)
	m.ongoing = m.ongoing[:0]
	m.unreplicated = m.unreplicated[:0]
}
