package txn

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ErrIllegalState: a transition that Kafka's coordinator refuses with an
// IllegalStateException (a broken invariant: a bug, or a corrupt log). The
// coordinator answers UNKNOWN_SERVER_ERROR and the driver logs it at Error.
var ErrIllegalState = errors.New("txn: illegal transaction state transition")

// Kafka's RecordBatch.NO_PRODUCER_ID and NO_PRODUCER_EPOCH.
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
)

// State is a transaction's state, with Kafka's ids (the int8
// transaction_status of __transaction_state).
type State int8

const (
	Empty             State = 0 // no transaction yet, or an epoch bump
	Ongoing           State = 1 // partitions added
	PrepareCommit     State = 2 // EndTxn commit written; markers pending
	PrepareAbort      State = 3 // EndTxn abort (or a fence) written; markers pending
	CompleteCommit    State = 4 // markers written
	CompleteAbort     State = 5 // markers written
	Dead              State = 6 // expiring: the tombstone is being written
	PrepareEpochFence State = 7 // bumping the epoch to fence a producer; never written

	// NoState is Metadata.PendingState when no transition is in flight.
	NoState State = -1
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// States are all states in Kafka's order.
var States = []State{Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence}

// String is Kafka's name, as DescribeTransactions and ListTransactions
// show it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	if s == NoState {
		return "None"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// ParseState is Kafka's TransactionState.fromName: exact names only.
func ParseState(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// validPreviousStates is Kafka's TransactionState.validPreviousStates.
var validPreviousStates = [...][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// ValidPreviousStates are the states s may be entered from.
func (s State) ValidPreviousStates() []State {
	if s < 0 || int(s) >= len(validPreviousStates) {
		return nil
	}
	return slices.Clone(validPreviousStates[s])
}

// CanTransitionFrom reports whether s may be entered from prev.
func (s State) CanTransitionFrom(prev State) bool {
	return s >= 0 && int(s) < len(validPreviousStates) && slices.Contains(validPreviousStates[s], prev)
}

// IsExpirationAllowed: transactional.id.expiration.ms may remove an id in
// this state (Empty, CompleteCommit, CompleteAbort).
func (s State) IsExpirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// hasPendingTransaction: markers may still be owed to partitions.
func (s State) hasPendingTransaction() bool {
	return s == Ongoing || s == PrepareAbort || s == PrepareCommit
}

// IsEpochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the
// epoch is at least Short.MaxValue-1, so that the coordinator can always
// bump it once more to fence the producer.
func IsEpochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// TopicPartition is one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func (tp TopicPartition) compare(o TopicPartition) int {
	if c := strings.Compare(tp.Topic, o.Topic); c != 0 {
		return c
	}
	return cmp.Compare(tp.Partition, o.Partition)
}

func isSubset(sub, set []TopicPartition) bool {
	for _, tp := range sub {
		if _, ok := slices.BinarySearchFunc(set, tp, TopicPartition.compare); !ok {
			return false
		}
	}
	return true
}

func contains(set []TopicPartition, tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(set, tp, TopicPartition.compare)
	return ok
}

// TransitMetadata is Kafka's TxnTransitMetadata: the target of one
// transition, what is written to __transaction_state. It is immutable;
// Partitions is sorted.
type TransitMetadata struct {
	ProducerID int64
	// PreviousProducerID is Kafka 3.x's lastProducerId: the producer id
	// before this transition (another one only after a rotation).
	PreviousProducerID       int64
	NextProducerID           int64 // transaction version 2 only; -1 here
	ProducerEpoch            int16
	LastProducerEpoch        int16
	TimeoutMs                int32
	State                    State
	Partitions               []TopicPartition
	StartMs                  int64 // txnStartTimestamp; -1: none
	LastUpdateMs             int64
	ClientTransactionVersion int16
}

func (t TransitMetadata) String() string {
	return fmt.Sprintf("%s pid=%d epoch=%d last-pid=%d last-epoch=%d timeout=%d parts=%v start=%d update=%d",
		t.State, t.ProducerID, t.ProducerEpoch, t.PreviousProducerID, t.LastProducerEpoch, t.TimeoutMs,
		t.Partitions, t.StartMs, t.LastUpdateMs)
}

// Metadata is Kafka's TransactionMetadata: one transactional id as the
// coordinator holds it in memory. Partitions is sorted. Pending is the
// transition prepared and not yet completed (its record is being written,
// or for a Complete* transition, its markers are being sent).
type Metadata struct {
	TransactionalID          string
	ProducerID               int64
	PreviousProducerID       int64 // Kafka 3.x lastProducerId
	NextProducerID           int64
	ProducerEpoch            int16
	LastProducerEpoch        int16 // not in the log: -1 after a load
	TimeoutMs                int32
	State                    State
	Partitions               []TopicPartition
	StartMs                  int64
	LastUpdateMs             int64
	ClientTransactionVersion int16

	// Pending is the transition in flight, nil if none; its State is
	// Kafka's pendingState.
	Pending *TransitMetadata
	// HasFailedEpochFence: a fence's bumped epoch may not have been
	// written; the next fence reuses it instead of bumping again.
	HasFailedEpochFence bool
}

// newMetadata is a fresh transactional id (Kafka creates it before the
// first InitProducerId's write, with epoch -1).
func newMetadata(id string, pid int64, timeoutMs int32, nowMs int64) *Metadata {
	return &Metadata{TransactionalID: id, ProducerID: pid, PreviousProducerID: NoProducerID, NextProducerID: NoProducerID,
		ProducerEpoch: NoProducerEpoch, LastProducerEpoch: NoProducerEpoch, TimeoutMs: timeoutMs, State: Empty,
		StartMs: -1, LastUpdateMs: nowMs}
}

// PendingState is the state of the transition in flight, NoState if none.
func (m *Metadata) PendingState() State {
	if m.Pending == nil {
		return NoState
	}
	return m.Pending.State
}

// PendingTransitionInProgress is Kafka's pendingTransitionInProgress.
func (m *Metadata) PendingTransitionInProgress() bool { return m.Pending != nil }

// IsProducerEpochExhausted: the epoch cannot be bumped for a client.
func (m *Metadata) IsProducerEpochExhausted() bool { return IsEpochExhausted(m.ProducerEpoch) }

// Clone is a deep copy.
func (m *Metadata) Clone() *Metadata {
	c := *m
	c.Partitions = slices.Clone(m.Partitions)
	if m.Pending != nil {
		p := *m.Pending
		c.Pending = &p
	}
	return &c
}

func (m *Metadata) String() string {
	s := fmt.Sprintf("%s %s pid=%d epoch=%d last-pid=%d last-epoch=%d timeout=%d parts=%v start=%d update=%d",
		m.TransactionalID, m.State, m.ProducerID, m.ProducerEpoch, m.PreviousProducerID, m.LastProducerEpoch,
		m.TimeoutMs, m.Partitions, m.StartMs, m.LastUpdateMs)
	if m.Pending != nil {
		s += " pending=" + m.Pending.State.String()
	}
	if m.HasFailedEpochFence {
		s += " failed-epoch-fence"
	}
	return s
}

func illegal(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrIllegalState, fmt.Sprintf(format, args...))
}

// prepareTransitionTo checks the transition and records it as pending.
func (m *Metadata) prepareTransitionTo(state State, pid int64, epoch, lastEpoch int16, timeoutMs int32,
	parts []TopicPartition, startMs, nowMs int64) (TransitMetadata, error) {
	if m.Pending != nil {
		return TransitMetadata{}, illegal("%s: preparing transition to %s while %s is pending", m.TransactionalID, state, m.Pending.State)
	}
	if pid < 0 {
		return TransitMetadata{}, illegal("%s: illegal new producer id %d", m.TransactionalID, pid)
	}
	if state != Dead && epoch < 0 {
		return TransitMetadata{}, illegal("%s: illegal new producer epoch %d", m.TransactionalID, epoch)
	}
	if !state.CanTransitionFrom(m.State) {
		return TransitMetadata{}, illegal("%s: %s cannot be entered from %s", m.TransactionalID, state, m.State)
	}
	t := TransitMetadata{ProducerID: pid, PreviousProducerID: m.ProducerID, NextProducerID: m.NextProducerID,
		ProducerEpoch: epoch, LastProducerEpoch: lastEpoch, TimeoutMs: timeoutMs, State: state,
		Partitions: slices.Clone(parts), StartMs: startMs, LastUpdateMs: nowMs,
		ClientTransactionVersion: m.ClientTransactionVersion}
	p := t
	p.Partitions = slices.Clone(parts)
	m.Pending = &p
	return t, nil
}

// prepareFenceProducerEpoch bumps the epoch (unless a previous fence's
// write failed) towards PrepareEpochFence.
func (m *Metadata) prepareFenceProducerEpoch() (TransitMetadata, error) {
	if m.ProducerEpoch == math.MaxInt16 {
		return TransitMetadata{}, illegal("%s: cannot fence producer epoch %d: it would overflow", m.TransactionalID, m.ProducerEpoch)
	}
	bumped := m.ProducerEpoch + 1
	if m.HasFailedEpochFence {
		bumped = m.ProducerEpoch
	}
	return m.prepareTransitionTo(PrepareEpochFence, m.ProducerID, bumped, NoProducerEpoch, m.TimeoutMs,
		m.Partitions, m.StartMs, m.LastUpdateMs)
}

// prepareIncrementProducerEpoch is InitProducerId's bump towards Empty.
// expected is the request's epoch (KIP-360), hasExpected false when the
// request carried none. A fenced expected epoch is PRODUCER_FENCED (ok
// false).
func (m *Metadata) prepareIncrementProducerEpoch(timeoutMs int32, expected int16, hasExpected bool, nowMs int64) (t TransitMetadata, fenced bool, err error) {
	next, last := m.ProducerEpoch+1, NoProducerEpoch
	if hasExpected {
		switch {
		case m.ProducerEpoch == NoProducerEpoch || expected == m.ProducerEpoch:
			// Resume after an error; nobody else has initialised since.
			next, last = m.ProducerEpoch+1, m.ProducerEpoch
		case expected == m.LastProducerEpoch:
			// A retry of a bump that succeeded: the same answer again.
			next, last = m.ProducerEpoch, m.LastProducerEpoch
		default:
			return TransitMetadata{}, true, nil
		}
	}
	// Kafka checks exhaustion before the retry case above; qk lets the
	// retry (which does not bump) through rather than fail it.
	if next != m.ProducerEpoch && m.IsProducerEpochExhausted() {
		return TransitMetadata{}, false, illegal("%s: no more producer epochs for producer id %d", m.TransactionalID, m.ProducerID)
	}
	t, err = m.prepareTransitionTo(Empty, m.ProducerID, next, last, timeoutMs, nil, -1, nowMs)
	return t, false, err
}

// prepareProducerIDRotation moves to a new producer id at epoch 0.
func (m *Metadata) prepareProducerIDRotation(pid int64, timeoutMs int32, nowMs int64, recordLastEpoch bool) (TransitMetadata, error) {
	if m.State.hasPendingTransaction() {
		return TransitMetadata{}, illegal("%s: cannot rotate producer ids while a transaction is %s", m.TransactionalID, m.State)
	}
	last := NoProducerEpoch
	if recordLastEpoch {
		last = m.ProducerEpoch
	}
	return m.prepareTransitionTo(Empty, pid, 0, last, timeoutMs, nil, -1, nowMs)
}

// prepareAddPartitions moves to Ongoing with parts added; the transaction
// starts now when it was not Ongoing.
func (m *Metadata) prepareAddPartitions(parts []TopicPartition, nowMs int64) (TransitMetadata, error) {
	start := m.StartMs
	switch m.State {
	case Empty, CompleteAbort, CompleteCommit:
		start = nowMs
	}
	all := sortPartitions(append(slices.Clone(m.Partitions), parts...))
	return m.prepareTransitionTo(Ongoing, m.ProducerID, m.ProducerEpoch, m.LastProducerEpoch, m.TimeoutMs, all, start, nowMs)
}

func (m *Metadata) prepareAbortOrCommit(state State, nowMs int64) (TransitMetadata, error) {
	return m.prepareTransitionTo(state, m.ProducerID, m.ProducerEpoch, m.LastProducerEpoch, m.TimeoutMs, m.Partitions, m.StartMs, nowMs)
}

// prepareComplete is the CompleteCommit or CompleteAbort to write once the
// markers are written.
func (m *Metadata) prepareComplete(nowMs int64) (TransitMetadata, error) {
	state := CompleteAbort
	if m.State == PrepareCommit {
		state = CompleteCommit
	}
	m.HasFailedEpochFence = false
	return m.prepareTransitionTo(state, m.ProducerID, m.ProducerEpoch, m.LastProducerEpoch, m.TimeoutMs, nil, m.StartMs, nowMs)
}

func (m *Metadata) prepareDead() (TransitMetadata, error) {
	return m.prepareTransitionTo(Dead, m.ProducerID, m.ProducerEpoch, m.LastProducerEpoch, m.TimeoutMs, nil, m.StartMs, m.LastUpdateMs)
}

// removePartition: the partition's marker is written.
func (m *Metadata) removePartition(tp TopicPartition) error {
	if m.State != PrepareCommit && m.State != PrepareAbort {
		return illegal("%s: removing %s whose marker was sent while %s (pending %s)", m.TransactionalID, tp, m.State, m.PendingState())
	}
	if i, ok := slices.BinarySearchFunc(m.Partitions, tp, TopicPartition.compare); ok {
		m.Partitions = slices.Delete(m.Partitions, i, i+1)
	}
	return nil
}

// AbortPendingTransition drops the pending transition: its write failed.
func (m *Metadata) AbortPendingTransition() { m.Pending = nil }

// CompleteTransitionTo applies t once its record is written (acks=all),
// validating it as Kafka's completeTransitionTo does: t must be the
// pending transition; the epoch stays, is bumped by one, or restarts at 0
// with a new producer id (Empty); partitions only grow (Ongoing) or stay
// (Prepare*). A refused transition leaves m unchanged.
func (m *Metadata) CompleteTransitionTo(t TransitMetadata) error {
	if m.Pending == nil {
		return illegal("%s: completing a transition to %s with none pending", m.TransactionalID, t.State)
	}
	fail := func() error {
		return illegal("%s: %s cannot complete transition to %s", m.TransactionalID, m, t)
	}
	if m.Pending.State != t.State {
		return fail()
	}
	sameEpoch := t.ProducerEpoch == m.ProducerEpoch && t.ProducerID == m.ProducerID
	switch t.State {
	case Empty: // InitProducerId
		bump := t.ProducerEpoch == m.ProducerEpoch+1 || (t.ProducerEpoch == 0 && t.ProducerID != m.ProducerID)
		if (m.ProducerEpoch != t.ProducerEpoch && !bump) || len(t.Partitions) > 0 || t.StartMs != -1 {
			return fail()
		}
		m.TimeoutMs = t.TimeoutMs
		m.ProducerEpoch = t.ProducerEpoch
		m.LastProducerEpoch = t.LastProducerEpoch
		m.ProducerID = t.ProducerID
		m.PreviousProducerID = t.PreviousProducerID
	case Ongoing: // AddPartitionsToTxn
		if !sameEpoch || !isSubset(m.Partitions, t.Partitions) || m.TimeoutMs != t.TimeoutMs {
			return fail()
		}
		m.StartMs = t.StartMs
		m.Partitions = sortPartitions(append(m.Partitions, t.Partitions...))
	case PrepareAbort, PrepareCommit: // EndTxn
		if !sameEpoch || !slices.Equal(m.Partitions, t.Partitions) || m.TimeoutMs != t.TimeoutMs || m.StartMs != t.StartMs {
			return fail()
		}
	case CompleteAbort, CompleteCommit: // markers written
		if !sameEpoch || m.TimeoutMs != t.TimeoutMs || t.StartMs == -1 {
			return fail()
		}
		m.StartMs = t.StartMs
		m.Partitions = nil
	case PrepareEpochFence:
		// Never completed: a fence goes on to PrepareAbort at once.
		return fail()
	case Dead:
		return illegal("%s: a transition to Dead completes by removing the id, not by a transition", m.TransactionalID)
	default:
		return fail()
	}
	m.LastUpdateMs = t.LastUpdateMs
	m.Pending = nil
	m.State = t.State
	return nil
}

// metadataFromValue is a loaded record (Kafka's readTxnRecordValue):
// the last epoch is not in the log; partitions are ignored for Empty.
func metadataFromValue(id string, v Value) *Metadata {
	m := &Metadata{TransactionalID: id, ProducerID: v.ProducerID, PreviousProducerID: v.PreviousProducerID,
		NextProducerID: v.NextProducerID, ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: NoProducerEpoch,
		TimeoutMs: v.TimeoutMs, State: v.State, StartMs: v.StartTimestampMs, LastUpdateMs: v.LastUpdateTimestampMs,
		ClientTransactionVersion: v.ClientTransactionVersion}
	if v.State != Empty {
		m.Partitions = v.TopicPartitionSet()
	}
	return m
}
