package txn

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ConsumerOffsetsTopic is the topic AddOffsetsToTxn adds a partition of.
const ConsumerOffsetsTopic = "__consumer_offsets"

// Defaults of the coordinator's settings.
const (
	DefaultTransactionMaxTimeoutMs     = 900000    // transaction.max.timeout.ms
	DefaultTransactionalIDExpirationMs = 604800000 // transactional.id.expiration.ms
)

// Config is the coordinator's settings.
type Config struct {
	TransactionMaxTimeoutMs     int32 // transaction.max.timeout.ms
	TransactionalIDExpirationMs int64 // transactional.id.expiration.ms
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{TransactionMaxTimeoutMs: DefaultTransactionMaxTimeoutMs, TransactionalIDExpirationMs: DefaultTransactionalIDExpirationMs}
}

// Op is what a write to __transaction_state is for; it decides what
// AppendDone does with the result.
type Op int8

const (
	OpInitProducerID Op = iota // InitProducerId's epoch bump or new producer id (Empty)
	OpAddPartitions            // AddPartitionsToTxn or AddOffsetsToTxn (Ongoing)
	OpEndTxn                   // EndTxn (PrepareCommit or PrepareAbort)
	OpFenceAbort               // InitProducerId during Ongoing: abort with a bumped epoch (PrepareAbort)
	OpTimeoutAbort             // a timed-out transaction: abort with a bumped epoch (PrepareAbort)
	OpComplete                 // markers written (CompleteCommit or CompleteAbort)
	OpExpire                   // transactional.id.expiration.ms: tombstone (Dead)
)

var opNames = [...]string{"InitProducerId", "AddPartitionsToTxn", "EndTxn", "FenceAbort", "TimeoutAbort", "Complete", "Expire"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int8(o))
}

// Append is one record to write to __transaction_state with acks=all.
// The driver writes Record(), then calls Partition.AppendDone with it.
type Append struct {
	Op               Op
	TransactionalID  string
	CoordinatorEpoch int32
	Transit          TransitMetadata
	// RequestVersion is the version of the client request waiting on the
	// write, for the PRODUCER_FENCED/INVALID_PRODUCER_EPOCH choice.
	RequestVersion int16
}

// Record is the key and value to write (a nil value: a tombstone) in value
// version 0, as Kafka writes unless transaction.version >= 1.
func (a *Append) Record() (key, value []byte) {
	return Record(a.TransactionalID, a.Transit, ValueVersion0)
}

// Markers are WriteTxnMarkers entries to send to the partitions' leaders
// (batched per broker by the driver), retried until written. Each reply
// goes back through Partition.MarkersWritten.
type Markers struct {
	TransactionalID  string
	CoordinatorEpoch int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool // COMMIT, else ABORT
	Partitions       []TopicPartition
}

func (mk *Markers) String() string {
	r := "ABORT"
	if mk.Commit {
		r = "COMMIT"
	}
	return fmt.Sprintf("%s %s pid=%d epoch=%d coordinator-epoch=%d %v", r, mk.TransactionalID, mk.ProducerID,
		mk.ProducerEpoch, mk.CoordinatorEpoch, mk.Partitions)
}

// Result is what a call decided. If Append is set, write it and the
// answer to the request comes from AppendDone; otherwise Err (with
// ProducerID and ProducerEpoch for InitProducerId, PartitionErrs for a
// verification) is the answer now. Markers are to be sent (after the
// write succeeded). Invariant is a broken invariant to log at Error.
type Result struct {
	Err            *kerr.Error
	ProducerID     int64
	ProducerEpoch  int16
	NeedProducerID bool // allocate a producer id and call again with it
	PartitionErrs  map[TopicPartition]*kerr.Error
	Append         *Append
	Markers        *Markers
	Invariant      error
}

// Partition holds the transactional ids of one __transaction_state
// partition that this broker leads, at one coordinator epoch (the
// partition's leader epoch). It is not safe for concurrent use: the driver
// calls it from one goroutine, or under one lock.
type Partition struct {
	id               int32
	coordinatorEpoch int32
	cfg              Config
	txns             map[string]*Metadata
	state            partitionState
}

type partitionState int8

const (
	loading partitionState = iota
	loaded
	unloaded
)

// NewPartition is a partition being loaded: Replay its records, then call
// Loaded. Until then requests get COORDINATOR_LOAD_IN_PROGRESS.
func NewPartition(id, coordinatorEpoch int32, cfg Config) *Partition {
	return &Partition{id: id, coordinatorEpoch: coordinatorEpoch, cfg: cfg, txns: map[string]*Metadata{}}
}

// Unload is the loss of leadership: from now on requests and late
// write or marker answers get NOT_COORDINATOR, and nothing more is
// decided; the driver drops the partition's markers in flight.
func (p *Partition) Unload() { p.state = unloaded }

// Loading reports whether the load has not finished (ListTransactions
// answers COORDINATOR_LOAD_IN_PROGRESS while any partition is loading).
func (p *Partition) Loading() bool { return p.state == loading }

// unavailable is the error for a request the partition cannot serve.
func (p *Partition) unavailable() *kerr.Error {
	switch p.state {
	case loading:
		return kerr.CoordinatorLoadInProgress
	case unloaded:
		return kerr.NotCoordinator
	}
	return nil
}

// ID is the __transaction_state partition.
func (p *Partition) ID() int32 { return p.id }

// CoordinatorEpoch is the leader epoch this partition was loaded at.
func (p *Partition) CoordinatorEpoch() int32 { return p.coordinatorEpoch }

// Len is the number of transactional ids.
func (p *Partition) Len() int { return len(p.txns) }

// Get is a copy of a transactional id's metadata.
func (p *Partition) Get(transactionalID string) (*Metadata, bool) {
	m, ok := p.txns[transactionalID]
	if !ok {
		return nil, false
	}
	return m.Clone(), true
}

// TransactionalIDs are the ids, sorted.
func (p *Partition) TransactionalIDs() []string {
	return slices.Sorted(maps.Keys(p.txns))
}

// fenced is PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for the request
// versions that predate PRODUCER_FENCED (KafkaApis: InitProducerId < 4,
// AddPartitionsToTxn, AddOffsetsToTxn and EndTxn < 2).
func fenced(op Op, version int16) *kerr.Error {
	if (op == OpInitProducerID || op == OpFenceAbort) && version < 4 || (op == OpAddPartitions || op == OpEndTxn) && version < 2 {
		return kerr.InvalidProducerEpoch
	}
	return kerr.ProducerFenced
}

func answer(op Op, version int16, err *kerr.Error) Result {
	if err == kerr.ProducerFenced {
		err = fenced(op, version)
	}
	return Result{Err: err, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
}

func invariant(err error) Result {
	return Result{Err: kerr.UnknownServerError, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch, Invariant: err}
}

func (p *Partition) append(op Op, m *Metadata, t TransitMetadata, version int16) Result {
	return Result{ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch,
		Append: &Append{Op: op, TransactionalID: m.TransactionalID, CoordinatorEpoch: p.coordinatorEpoch, Transit: t, RequestVersion: version}}
}

// InitProducerIDRequest is InitProducerId with a transactional id (the
// driver handles a null id: idempotent producers need no coordinator).
type InitProducerIDRequest struct {
	Version         int16
	TransactionalID string
	TimeoutMs       int32
	// ProducerID and ProducerEpoch are KIP-360's (v3+): the producer's
	// current id and epoch, or -1 and -1.
	ProducerID    int64
	ProducerEpoch int16
	// NewProducerID is a producer id the driver allocated after a Result
	// with NeedProducerID; -1 otherwise.
	NewProducerID int64
}

// ValidateTransactionTimeoutMs: 0 < timeout <= transaction.max.timeout.ms.
func (p *Partition) ValidateTransactionTimeoutMs(timeoutMs int32) bool {
	return timeoutMs > 0 && timeoutMs <= p.cfg.TransactionMaxTimeoutMs
}

// InitProducerID is Kafka's handleInitProducerId for a transactional id.
// A new id, or an exhausted epoch, needs a producer id: the Result says
// NeedProducerID and the driver calls again with NewProducerID. During an
// Ongoing transaction it fences the producer: the Append aborts the
// transaction with a bumped epoch and the caller gets
// CONCURRENT_TRANSACTIONS to retry.
func (p *Partition) InitProducerID(req InitProducerIDRequest, nowMs int64) Result {
	ans := func(err *kerr.Error) Result { return answer(OpInitProducerID, req.Version, err) }
	hasExpected := req.ProducerID != NoProducerID || req.ProducerEpoch != NoProducerEpoch
	if req.TransactionalID == "" || hasExpected && (req.ProducerID == NoProducerID || req.ProducerEpoch == NoProducerEpoch) {
		// KafkaApis: a producer id without an epoch, or the reverse.
		return ans(kerr.InvalidRequest)
	}
	if !p.ValidateTransactionTimeoutMs(req.TimeoutMs) {
		return ans(kerr.InvalidTransactionTimeout)
	}
	if err := p.unavailable(); err != nil {
		return ans(err)
	}
	m, ok := p.txns[req.TransactionalID]
	if !ok {
		if req.NewProducerID < 0 {
			return Result{NeedProducerID: true, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
		}
		m = newMetadata(req.TransactionalID, req.NewProducerID, req.TimeoutMs, nowMs)
		p.txns[req.TransactionalID] = m
		req.NewProducerID = NoProducerID
	}
	// KIP-360: the request's producer id must be the current one (its
	// epoch is checked below), or the previous one with an exhausted epoch
	// (a retry of a rotation), or the id must be brand new.
	validProducerID := m.ProducerEpoch == NoProducerEpoch || req.ProducerID == m.ProducerID ||
		(req.ProducerID == m.PreviousProducerID && IsEpochExhausted(req.ProducerEpoch))
	switch {
	case m.PendingTransitionInProgress():
		return ans(kerr.ConcurrentTransactions)
	case hasExpected && !validProducerID:
		return ans(kerr.ProducerFenced)
	}
	switch m.State {
	case PrepareAbort, PrepareCommit:
		return ans(kerr.ConcurrentTransactions)
	case CompleteAbort, CompleteCommit, Empty:
		var (
			t   TransitMetadata
			err error
		)
		if m.IsProducerEpochExhausted() && (!hasExpected || req.ProducerEpoch == m.ProducerEpoch) {
			if req.NewProducerID < 0 {
				return Result{NeedProducerID: true, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
			}
			t, err = m.prepareProducerIDRotation(req.NewProducerID, req.TimeoutMs, nowMs, hasExpected)
		} else {
			var isFenced bool
			t, isFenced, err = m.prepareIncrementProducerEpoch(req.TimeoutMs, req.ProducerEpoch, hasExpected, nowMs)
			if isFenced {
				return ans(kerr.ProducerFenced)
			}
		}
		if err != nil {
			return invariant(err)
		}
		return p.append(OpInitProducerID, m, t, req.Version)
	case Ongoing:
		// Fence: abort with a bumped epoch that is never returned; the
		// client retries and its next InitProducerId bumps again (or
		// rotates the producer id if this exhausted the epochs).
		fence, err := m.prepareFenceProducerEpoch()
		if err != nil {
			return invariant(err)
		}
		return p.endTransaction(m, fence.ProducerID, fence.ProducerEpoch, false, false, OpFenceAbort, req.Version, nowMs)
	default: // Dead, PrepareEpochFence
		return invariant(illegal("%s: InitProducerId found state %s, which should never be reached", m.TransactionalID, m.State))
	}
}

// AddPartitionsRequest is AddPartitionsToTxn v0-v3 (from a client) for
// one transaction, or AddOffsetsToTxn with the group's __consumer_offsets
// partition (see AddOffsets). Authorization and unknown partitions are the
// driver's (Kafka answers them before the coordinator sees the request).
type AddPartitionsRequest struct {
	Version         int16
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []TopicPartition
}

// AddPartitions is Kafka's handleAddPartitionsToTransaction.
func (p *Partition) AddPartitions(req AddPartitionsRequest, nowMs int64) Result {
	ans := func(err *kerr.Error) Result { return answer(OpAddPartitions, req.Version, err) }
	if req.TransactionalID == "" {
		return ans(kerr.InvalidRequest)
	}
	if err := p.unavailable(); err != nil {
		return ans(err)
	}
	m, ok := p.txns[req.TransactionalID]
	parts := sortPartitions(slices.Clone(req.Partitions))
	switch {
	case !ok || m.ProducerID != req.ProducerID:
		return ans(kerr.InvalidProducerIDMapping)
	case m.ProducerEpoch == NoProducerEpoch:
		// The id's first InitProducerId never completed, so nobody holds
		// this producer id (Kafka would fail with an internal error).
		return ans(kerr.InvalidProducerIDMapping)
	case m.ProducerEpoch != req.ProducerEpoch:
		return ans(kerr.ProducerFenced)
	case m.PendingTransitionInProgress():
		return ans(kerr.ConcurrentTransactions)
	case m.State == PrepareCommit || m.State == PrepareAbort:
		return ans(kerr.ConcurrentTransactions)
	case m.State == Ongoing && isSubset(parts, m.Partitions):
		return ans(nil) // nothing new: answer at once
	}
	t, err := m.prepareAddPartitions(parts, nowMs)
	if err != nil {
		return invariant(err)
	}
	return p.append(OpAddPartitions, m, t, req.Version)
}

// AddOffsetsRequest is AddOffsetsToTxn: OffsetsPartition is the group's
// partition of __consumer_offsets (group.PartitionFor).
type AddOffsetsRequest struct {
	Version          int16
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	OffsetsPartition int32
}

// AddOffsets adds the group's __consumer_offsets partition, as Kafka's
// handleAddOffsetsToTxnRequest does.
func (p *Partition) AddOffsets(req AddOffsetsRequest, nowMs int64) Result {
	return p.AddPartitions(AddPartitionsRequest{Version: req.Version, TransactionalID: req.TransactionalID,
		ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
		Partitions: []TopicPartition{{ConsumerOffsetsTopic, req.OffsetsPartition}}}, nowMs)
}

// VerifyRequest is one transaction of a verify-only AddPartitionsToTxn
// (v4+, broker to coordinator, KIP-890 part 1).
type VerifyRequest struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []TopicPartition
}

// VerifyPartitions is Kafka's handleVerifyPartitionsInTransaction: per
// partition, NONE if it is in the transaction of that producer id and
// epoch, INVALID_TXN_STATE if not (Kafka 3.6 and 3.7; 3.8+ say
// TRANSACTION_ABORTABLE, which the leader maps back to INVALID_TXN_STATE
// for produce versions that predate it). The pending state is not looked
// at: partitions are added when their write completes and removed when
// their marker is written, and the leader guards the append. Nothing is
// written.
func (p *Partition) VerifyPartitions(req VerifyRequest) Result {
	all := func(err *kerr.Error) Result {
		r := Result{PartitionErrs: map[TopicPartition]*kerr.Error{}, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
		for _, tp := range req.Partitions {
			r.PartitionErrs[tp] = err
		}
		return r
	}
	if req.TransactionalID == "" {
		return all(kerr.InvalidRequest)
	}
	if err := p.unavailable(); err != nil {
		return all(err)
	}
	m, ok := p.txns[req.TransactionalID]
	switch {
	case !ok || m.ProducerID != req.ProducerID:
		return all(kerr.InvalidProducerIDMapping)
	case m.ProducerEpoch != req.ProducerEpoch:
		return all(kerr.ProducerFenced)
	case m.State == PrepareCommit || m.State == PrepareAbort:
		return all(kerr.ConcurrentTransactions)
	}
	r := all(nil)
	for _, tp := range req.Partitions {
		if !contains(m.Partitions, tp) {
			r.PartitionErrs[tp] = kerr.InvalidTxnState
		}
	}
	return r
}

// EndTxnRequest is EndTxn.
type EndTxnRequest struct {
	Version         int16
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
}

// EndTxn is Kafka's handleEndTransaction: from Ongoing it writes
// PrepareCommit or PrepareAbort; after that write (AppendDone) the client
// gets its answer and the markers go out. A retry of a completed (or
// completing) EndTxn gets OK (or CONCURRENT_TRANSACTIONS); the other
// result, or no transaction, is INVALID_TXN_STATE.
func (p *Partition) EndTxn(req EndTxnRequest, nowMs int64) Result {
	if req.TransactionalID == "" {
		return answer(OpEndTxn, req.Version, kerr.InvalidRequest)
	}
	if err := p.unavailable(); err != nil {
		return answer(OpEndTxn, req.Version, err)
	}
	m, ok := p.txns[req.TransactionalID]
	if !ok {
		return answer(OpEndTxn, req.Version, kerr.InvalidProducerIDMapping)
	}
	return p.endTransaction(m, req.ProducerID, req.ProducerEpoch, req.Commit, true, OpEndTxn, req.Version, nowMs)
}

// endTransaction is Kafka's endTransaction, from a client (EndTxn) or not
// (a fence, with the bumped epoch).
func (p *Partition) endTransaction(m *Metadata, pid int64, epoch int16, commit, fromClient bool, op Op, version int16, nowMs int64) Result {
	ans := func(err *kerr.Error) Result { return answer(op, version, err) }
	switch {
	case m.ProducerID != pid:
		return ans(kerr.InvalidProducerIDMapping)
	case fromClient && epoch != m.ProducerEpoch || epoch < m.ProducerEpoch:
		// A client never bumps the epoch: strict equality.
		return ans(kerr.ProducerFenced)
	case m.PendingTransitionInProgress() && m.PendingState() != PrepareEpochFence:
		return ans(kerr.ConcurrentTransactions)
	}
	switch m.State {
	case Ongoing:
		next := PrepareAbort
		if commit {
			next = PrepareCommit
		}
		if m.PendingState() == PrepareEpochFence {
			if next != PrepareAbort {
				return invariant(illegal("%s: commit while fencing the epoch", m.TransactionalID))
			}
			// The fence takes effect now, in memory: the old epoch is
			// refused from here on, even if the write fails.
			m.Pending = nil
			m.ProducerEpoch = epoch
			m.LastProducerEpoch = NoProducerEpoch
		}
		t, err := m.prepareAbortOrCommit(next, nowMs)
		if err != nil {
			return invariant(err)
		}
		return p.append(op, m, t, version)
	case CompleteCommit, CompleteAbort, PrepareCommit, PrepareAbort:
		if commit != (m.State == CompleteCommit || m.State == PrepareCommit) {
			return ans(kerr.InvalidTxnState)
		}
		if m.State == CompleteCommit || m.State == CompleteAbort {
			return ans(nil) // a retry of an EndTxn that completed
		}
		return ans(kerr.ConcurrentTransactions)
	case Empty:
		return ans(kerr.InvalidTxnState)
	default: // Dead, PrepareEpochFence
		return invariant(illegal("%s: EndTxn found state %s, which should never be reached", m.TransactionalID, m.State))
	}
}

// coordinatorError is Kafka's mapping of a log append error to what the
// coordinator answers.
func coordinatorError(err *kerr.Error) *kerr.Error {
	switch err {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return kerr.UnknownServerError
	}
	return err
}

// AppendDone is the result of writing a's record: appendErr nil when it
// was written with acks=all, else the produce error. The driver must call
// it on the Partition at the coordinator epoch it wrote with, or on its
// successor after a reload (which answers NOT_COORDINATOR). On success the
// transition completes (Kafka's completeTransitionTo); on failure the
// pending transition is dropped, or, for OpComplete, the same Append is
// returned to write again (the driver backs off first).
func (p *Partition) AppendDone(a *Append, appendErr *kerr.Error, nowMs int64) Result {
	err := coordinatorError(appendErr)
	ans := func(err *kerr.Error) Result { return answer(a.Op, a.RequestVersion, err) }
	m, ok := p.txns[a.TransactionalID]
	if !ok || a.CoordinatorEpoch != p.coordinatorEpoch || p.state != loaded {
		// Reloaded (or unloaded) since: the new load redoes what is owed.
		if err == nil {
			err = kerr.NotCoordinator
		}
		return ans(err)
	}
	if a.Op == OpExpire {
		if err == nil && m.PendingState() == Dead && m.ProducerEpoch == a.Transit.ProducerEpoch {
			delete(p.txns, a.TransactionalID)
			return ans(nil)
		}
		m.AbortPendingTransition()
		return ans(err)
	}
	if err != nil {
		switch {
		case a.Op == OpComplete && err != kerr.NotCoordinator && err != kerr.CoordinatorLoadInProgress:
			// Kafka retries COORDINATOR_NOT_AVAILABLE and gives up (with a
			// fatal log) on others, which would leave the transaction
			// stuck in Prepare*; qk retries every error but a lost
			// leadership, whose new coordinator completes it on load.
			return Result{Append: a, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
		case a.Op == OpComplete:
			return ans(err)
		}
		m.AbortPendingTransition()
		if a.Op == OpFenceAbort || a.Op == OpTimeoutAbort {
			// The bumped epoch is in memory but maybe not in the log: the
			// next fence must not bump again.
			m.HasFailedEpochFence = true
		}
		return ans(err)
	}
	if perr := m.CompleteTransitionTo(a.Transit); perr != nil {
		m.AbortPendingTransition()
		return invariant(perr)
	}
	switch a.Op {
	case OpInitProducerID:
		return Result{ProducerID: a.Transit.ProducerID, ProducerEpoch: a.Transit.ProducerEpoch}
	case OpEndTxn, OpFenceAbort, OpTimeoutAbort:
		// Kafka's sendTxnMarkersCallback: the metadata may have moved on.
		commit := a.Transit.State == PrepareCommit
		switch {
		case m.ProducerID != a.Transit.ProducerID:
			return ans(kerr.InvalidProducerIDMapping)
		case m.ProducerEpoch != a.Transit.ProducerEpoch:
			return ans(kerr.ProducerFenced)
		case m.PendingTransitionInProgress():
			return ans(kerr.ConcurrentTransactions)
		case m.State != PrepareCommit && m.State != PrepareAbort || (m.State == PrepareCommit) != commit:
			return ans(kerr.InvalidTxnState)
		}
		r := p.prepareMarkers(m, nowMs)
		if a.Op == OpFenceAbort && r.Invariant == nil {
			r.Err = kerr.ConcurrentTransactions // the InitProducerId caller retries
		}
		return r
	}
	return Result{ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
}

// prepareMarkers prepares the Complete* transition for m in PrepareCommit
// or PrepareAbort and returns the markers to send (or, with no partitions
// left, the completion to write).
func (p *Partition) prepareMarkers(m *Metadata, nowMs int64) Result {
	commit := m.State == PrepareCommit
	if _, err := m.prepareComplete(nowMs); err != nil {
		return invariant(err)
	}
	r := Result{ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
	if len(m.Partitions) == 0 {
		r.Append = p.completion(m)
		return r
	}
	r.Markers = &Markers{TransactionalID: m.TransactionalID, CoordinatorEpoch: p.coordinatorEpoch,
		ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: commit, Partitions: slices.Clone(m.Partitions)}
	return r
}

func (p *Partition) completion(m *Metadata) *Append {
	return &Append{Op: OpComplete, TransactionalID: m.TransactionalID, CoordinatorEpoch: p.coordinatorEpoch, Transit: *m.Pending}
}

// MarkersWritten is the WriteTxnMarkers answer for markers mk: an error
// per partition (nil: written). A partition whose leader is unknown (the
// topic is likely deleted) is reported as written, as Kafka skips it.
// Retriable errors return Markers for those partitions to send again
// (their leaders may have moved); once every partition is done the Result
// has the CompleteCommit/CompleteAbort Append. INVALID_PRODUCER_EPOCH and
// TRANSACTION_COORDINATOR_FENCED cancel the rest: another coordinator or
// epoch owns the transaction now. A partition of mk missing from errs is
// sent again. A disconnection is not reported: resend.
func (p *Partition) MarkersWritten(mk *Markers, errs map[TopicPartition]*kerr.Error) Result {
	r := Result{ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
	m, ok := p.txns[mk.TransactionalID]
	want := CompleteAbort
	if mk.Commit {
		want = CompleteCommit
	}
	if !ok || mk.CoordinatorEpoch != p.coordinatorEpoch || p.state != loaded || m.PendingState() != want ||
		m.ProducerID != mk.ProducerID || m.ProducerEpoch != mk.ProducerEpoch {
		return r // cancelled: not the transaction these markers were for
	}
	var (
		retry     []TopicPartition
		cancelled bool
		problems  []error
	)
	for _, tp := range mk.Partitions {
		if _, ok := errs[tp]; !ok {
			retry = append(retry, tp) // not answered: Kafka would never resend it
		}
	}
	for _, tp := range sortPartitions(slices.Collect(maps.Keys(errs))) {
		switch err := errs[tp]; err {
		case nil, kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
			// Written, or the producer could not have written there.
			if err := m.removePartition(tp); err != nil {
				problems = append(problems, err)
			}
		case kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition, kerr.NotEnoughReplicas,
			kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut, kerr.KafkaStorageError:
			retry = append(retry, tp)
		case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
			cancelled = true
		default:
			// Kafka throws on these (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE,
			// ...); qk reports them and retries rather than hang.
			problems = append(problems, fmt.Errorf("txn: %s: unexpected marker error for %s: %s", mk.TransactionalID, tp, err.Message))
			retry = append(retry, tp)
		}
	}
	r.Invariant = errors.Join(problems...)
	switch {
	case cancelled:
	case len(retry) > 0:
		again := *mk
		again.Partitions = sortPartitions(retry)
		r.Markers = &again
	case len(m.Partitions) == 0:
		r.Append = p.completion(m)
	}
	return r
}

// TimedOut names an Ongoing transaction past its timeout.
type TimedOut struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
}

// TimedOutTransactions are the Ongoing transactions with no transition in
// flight whose start + timeout is before now (Kafka's
// timedOutTransactions), by id.
func (p *Partition) TimedOutTransactions(nowMs int64) []TimedOut {
	var out []TimedOut
	if p.state != loaded {
		return nil
	}
	for _, id := range p.TransactionalIDs() {
		m := p.txns[id]
		if !m.PendingTransitionInProgress() && m.State == Ongoing && m.StartMs+int64(m.TimeoutMs) < nowMs {
			out = append(out, TimedOut{id, m.ProducerID, m.ProducerEpoch})
		}
	}
	return out
}

// AbortTimedOut aborts one timed-out transaction with a bumped epoch, so
// that the stalled producer is fenced (Kafka's abortTimedOutTransactions:
// prepareFenceProducerEpoch, then endTransaction). ok is false if the
// transaction moved on since it was listed.
func (p *Partition) AbortTimedOut(t TimedOut, nowMs int64) (r Result, ok bool) {
	m, found := p.txns[t.TransactionalID]
	if !found || p.state != loaded || m.ProducerID != t.ProducerID || m.PendingTransitionInProgress() || m.State != Ongoing {
		return Result{}, false
	}
	fence, err := m.prepareFenceProducerEpoch()
	if err != nil {
		return invariant(err), true
	}
	return p.endTransaction(m, fence.ProducerID, fence.ProducerEpoch, false, false, OpTimeoutAbort, 0, nowMs), true
}

// AbortTimedOutTransactions aborts every timed-out transaction; run it
// every transaction.abort.timed.out.transaction.cleanup.interval.ms.
func (p *Partition) AbortTimedOutTransactions(nowMs int64) []Result {
	var out []Result
	for _, t := range p.TimedOutTransactions(nowMs) {
		if r, ok := p.AbortTimedOut(t, nowMs); ok {
			out = append(out, r)
		}
	}
	return out
}

// ExpireTransactionalIDs marks Dead the ids idle for
// transactional.id.expiration.ms (Empty, CompleteCommit or CompleteAbort,
// last updated at or before now - expiration, nothing in flight) and
// returns their tombstones, which the driver may write in one batch. An id
// is removed when its tombstone's AppendDone succeeds. Run it every
// transaction.remove.expired.transaction.cleanup.interval.ms.
func (p *Partition) ExpireTransactionalIDs(nowMs int64) []*Append {
	var out []*Append
	if p.state != loaded {
		return nil
	}
	for _, id := range p.TransactionalIDs() {
		m := p.txns[id]
		if m.PendingTransitionInProgress() || !m.State.IsExpirationAllowed() || m.LastUpdateMs > nowMs-p.cfg.TransactionalIDExpirationMs {
			continue
		}
		t, err := m.prepareDead()
		if err != nil {
			continue // cannot happen: checked above
		}
		out = append(out, &Append{Op: OpExpire, TransactionalID: id, CoordinatorEpoch: p.coordinatorEpoch, Transit: t})
	}
	return out
}

// Replay applies one __transaction_state record while loading: the latest
// value of a key wins and a tombstone (nil value) removes the id. A record
// that does not decode is an error (ErrBadRecord, or ErrUnknownKey for a
// key version Kafka skips too); the driver logs it with its offset and
// goes on, and the id keeps its previous value.
func (p *Partition) Replay(key, value []byte) error {
	if p.state != loading {
		return errors.New("txn: replay after the load")
	}
	id, err := ParseKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		delete(p.txns, id)
		return nil
	}
	v, err := ParseValue(value)
	if err != nil {
		return fmt.Errorf("transactional id %q: %w", id, err)
	}
	p.txns[id] = metadataFromValue(id, v)
	return nil
}

// Loaded ends the load: transactions in PrepareCommit or PrepareAbort
// had their markers interrupted, so each gets its Complete* transition
// prepared and its markers to send again (Kafka's
// loadTransactionsForTxnTopicPartition). Ongoing ones are left to time
// out; nothing else is owed. PrepareEpochFence and Dead are never written
// by Kafka; if found they stay as they are.
func (p *Partition) Loaded(nowMs int64) []Result {
	var out []Result
	if p.state != loading {
		return nil
	}
	p.state = loaded
	for _, id := range p.TransactionalIDs() {
		m := p.txns[id]
		if m.State == PrepareCommit || m.State == PrepareAbort {
			out = append(out, p.prepareMarkers(m, nowMs))
		}
	}
	return out
}

// TransactionState is one transaction as ListTransactions and
// DescribeTransactions show it.
type TransactionState struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	State           State
	TimeoutMs       int32
	StartMs         int64
	Partitions      []TopicPartition
}

// Describe is DescribeTransactions for one id: TRANSACTIONAL_ID_NOT_FOUND
// if unknown or Dead (being expired).
func (p *Partition) Describe(transactionalID string) (TransactionState, *kerr.Error) {
	if err := p.unavailable(); err != nil {
		return TransactionState{TransactionalID: transactionalID}, err
	}
	if transactionalID == "" {
		return TransactionState{}, kerr.InvalidRequest
	}
	m, ok := p.txns[transactionalID]
	if !ok || m.State == Dead {
		return TransactionState{TransactionalID: transactionalID}, kerr.TransactionalIDNotFound
	}
	return TransactionState{TransactionalID: transactionalID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		State: m.State, TimeoutMs: m.TimeoutMs, StartMs: m.StartMs, Partitions: slices.Clone(m.Partitions)}, nil
}

// List is ListTransactions' filter: Dead ids are left out; producerIDs and
// states (when not empty) must match; with durationMs >= 0 (v1) only
// transactions running longer than that are kept.
func (p *Partition) List(producerIDs []int64, states []State, durationMs, nowMs int64) []TransactionState {
	var out []TransactionState
	for _, id := range p.TransactionalIDs() {
		m := p.txns[id]
		switch {
		case m.State == Dead,
			len(producerIDs) > 0 && !slices.Contains(producerIDs, m.ProducerID),
			len(states) > 0 && !slices.Contains(states, m.State),
			durationMs >= 0 && nowMs-m.StartMs <= durationMs:
			continue
		}
		d, _ := p.Describe(id)
		out = append(out, d)
	}
	return out
}
