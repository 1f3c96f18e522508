// Package txncoord is the transaction coordinator's driver: the thin
// layer around broker/txn's pure core that does what the core decides.
// It writes the core's records to __transaction_state (acks=all, through
// the partition this broker leads), loads and drops partitions as their
// leadership comes and goes, sends the transaction markers to the
// partitions' leaders (markers.go) and runs the timeout and expiration
// timers (timers.go). Kafka's TransactionCoordinator,
// TransactionStateManager and TransactionMarkerChannelManager, in that
// order of files.
//
// Locking: mu guards the loaded partitions and every call into their
// txn.Partition (each call is pure and short). No I/O happens under it:
// a decision is taken under mu, the write or send is done without it,
// and its outcome is handed back under mu. A request's goroutine waits
// only for its own write (the API layer runs these requests detached
// from the handler goroutines).
package txncoord

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/txn"
)

// Topic is Kafka's transaction log.
const Topic = "__transaction_state"

// Config wires a Coordinator.
type Config struct {
	BrokerID int32
	// Partitions is transaction.state.log.num.partitions.
	Partitions int
	Txn        txn.Config
	Replicas   *replica.Manager
	// AllocateProducerID hands out a producer id unique in the cluster
	// (the broker's block from /latest_producer_id_block).
	AllocateProducerID func(ctx context.Context) (int64, error)
	// Markers sends WriteTxnMarkers to the partitions' leaders.
	Markers MarkerSender
	// WriteTimeout bounds a __transaction_state write until its ISR has
	// it (Kafka uses request.timeout.ms; 0: 30 s).
	WriteTimeout time.Duration
	// AbortInterval is transaction.abort.timed.out.transaction.cleanup.interval.ms
	// (0: 10 s); ExpireInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (0: 1 h).
	AbortInterval  time.Duration
	ExpireInterval time.Duration
	Logger         *slog.Logger
	Clock          func() time.Time
}

// Coordinator is the transaction coordinator of the __transaction_state
// partitions this broker leads.
type Coordinator struct {
	cfg Config
	lg  *slog.Logger
	now func() time.Time

	mu     sync.Mutex
	parts  map[int32]*txn.Partition
	closed bool

	markers *markerQueue
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New returns a coordinator that leads no partition yet and starts its
// timers.
func New(cfg Config) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.AbortInterval <= 0 {
		cfg.AbortInterval = 10 * time.Second
	}
	if cfg.ExpireInterval <= 0 {
		cfg.ExpireInterval = time.Hour
	}
	if cfg.Txn.TransactionMaxTimeoutMs == 0 {
		cfg.Txn = txn.DefaultConfig()
	}
	c := &Coordinator{cfg: cfg, lg: cfg.Logger.With("component", "txn-coordinator"), now: cfg.Clock,
		parts: map[int32]*txn.Partition{}, stop: make(chan struct{})}
	c.markers = newMarkerQueue(c)
	c.wg.Add(1)
	go c.timers()
	return c
}

// Close stops the timers and the marker sender; requests still waiting
// get NOT_COORDINATOR.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	for p, tp := range c.parts {
		tp.Unload()
		delete(c.parts, p)
	}
	c.mu.Unlock()
	close(c.stop)
	c.markers.close()
	c.wg.Wait()
}

// PartitionFor is the __transaction_state partition of a transactional id.
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return txn.PartitionFor(transactionalID, c.cfg.Partitions)
}

func (c *Coordinator) nowMs() int64 { return c.now().UnixMilli() }

// partition returns the loaded txn.Partition of p; c.mu is held.
func (c *Coordinator) partitionLocked(p int32) *txn.Partition {
	if c.closed {
		return nil
	}
	return c.parts[p]
}

// decide runs f on partition p's state under mu: NOT_COORDINATOR when
// this broker does not lead p.
func (c *Coordinator) decide(p int32, f func(*txn.Partition) txn.Result) txn.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	tp := c.partitionLocked(p)
	if tp == nil {
		return txn.Result{Err: kerr.NotCoordinator, ProducerID: txn.NoProducerID, ProducerEpoch: txn.NoProducerEpoch}
	}
	r := f(tp)
	if r.Invariant != nil {
		c.lg.Error("transaction coordinator invariant broken", "partition", p, "err", r.Invariant)
	}
	return r
}

// InitProducerID handles InitProducerId with a transactional id.
func (c *Coordinator) InitProducerID(ctx context.Context, req txn.InitProducerIDRequest) txn.Result {
	p := c.PartitionFor(req.TransactionalID)
	req.NewProducerID = txn.NoProducerID
	for range 3 {
		r := c.decide(p, func(tp *txn.Partition) txn.Result { return tp.InitProducerID(req, c.nowMs()) })
		if !r.NeedProducerID {
			return c.carry(ctx, p, r)
		}
		id, err := c.cfg.AllocateProducerID(ctx)
		if err != nil {
			c.lg.Warn("cannot allocate a producer id", "transactional_id", req.TransactionalID, "err", err)
			return txn.Result{Err: kerr.CoordinatorNotAvailable, ProducerID: txn.NoProducerID, ProducerEpoch: txn.NoProducerEpoch}
		}
		req.NewProducerID = id
	}
	return txn.Result{Err: kerr.ConcurrentTransactions, ProducerID: txn.NoProducerID, ProducerEpoch: txn.NoProducerEpoch}
}

// AddPartitions handles AddPartitionsToTxn from a client (v0-v3, or one
// non-verify transaction of v4+).
func (c *Coordinator) AddPartitions(ctx context.Context, req txn.AddPartitionsRequest) txn.Result {
	p := c.PartitionFor(req.TransactionalID)
	return c.carry(ctx, p, c.decide(p, func(tp *txn.Partition) txn.Result { return tp.AddPartitions(req, c.nowMs()) }))
}

// AddOffsets handles AddOffsetsToTxn: req.OffsetsPartition is the
// group's __consumer_offsets partition.
func (c *Coordinator) AddOffsets(ctx context.Context, req txn.AddOffsetsRequest) txn.Result {
	p := c.PartitionFor(req.TransactionalID)
	return c.carry(ctx, p, c.decide(p, func(tp *txn.Partition) txn.Result { return tp.AddOffsets(req, c.nowMs()) }))
}

// Verify handles a verify-only AddPartitionsToTxn (KIP-890 part 1).
func (c *Coordinator) Verify(req txn.VerifyRequest) txn.Result {
	p := c.PartitionFor(req.TransactionalID)
	return c.decide(p, func(tp *txn.Partition) txn.Result { return tp.VerifyPartitions(req) })
}

// EndTxn handles EndTxn: answered once PrepareCommit or PrepareAbort is
// written; the markers and the completion follow in the background.
func (c *Coordinator) EndTxn(ctx context.Context, req txn.EndTxnRequest) txn.Result {
	p := c.PartitionFor(req.TransactionalID)
	return c.carry(ctx, p, c.decide(p, func(tp *txn.Partition) txn.Result { return tp.EndTxn(req, c.nowMs()) }))
}

// Describe handles DescribeTransactions for one id.
func (c *Coordinator) Describe(transactionalID string) (txn.TransactionState, *kerr.Error) {
	p := c.PartitionFor(transactionalID)
	c.mu.Lock()
	defer c.mu.Unlock()
	tp := c.partitionLocked(p)
	if tp == nil {
		return txn.TransactionState{}, kerr.NotCoordinator
	}
	return tp.Describe(transactionalID)
}

// List handles ListTransactions over the partitions loaded here; loading
// reports whether some are still loading (COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) List(producerIDs []int64, states []txn.State, durationMs int64) (out []txn.TransactionState, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.nowMs()
	for _, p := range slices.Sorted(maps.Keys(c.parts)) {
		tp := c.parts[p]
		if tp.Loading() {
			loading = true
			continue
		}
		out = append(out, tp.List(producerIDs, states, durationMs, now)...)
	}
	return out, loading
}

// carry does what a request's Result asks: with an Append, it writes it
// and answers with AppendDone's Result; markers and later writes go on in
// the background (follow).
func (c *Coordinator) carry(ctx context.Context, p int32, r txn.Result) txn.Result {
	if r.Append == nil {
		c.follow(p, txn.Result{Markers: r.Markers})
		r.Markers = nil
		return r
	}
	a := r.Append
	werr := c.write(ctx, p, a)
	done := c.decide(p, func(tp *txn.Partition) txn.Result { return tp.AppendDone(a, werr, c.nowMs()) })
	answer := done
	answer.Append, answer.Markers = nil, nil
	c.follow(p, txn.Result{Append: done.Append, Markers: done.Markers})
	return answer
}

// follow carries out, in the background, the writes and markers that
// come after a request's answer: markers are queued; a completion write
// is retried with a back-off until it is done or the partition is lost.
func (c *Coordinator) follow(p int32, r txn.Result) {
	if r.Markers != nil {
		c.markers.send(p, r.Markers)
	}
	if r.Append == nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		backoff := 100 * time.Millisecond
		for r.Append != nil {
			select {
			case <-c.stop:
				return
			default:
			}
			a := r.Append
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.WriteTimeout)
			werr := c.write(ctx, p, a)
			cancel()
			r = c.decide(p, func(tp *txn.Partition) txn.Result { return tp.AppendDone(a, werr, c.nowMs()) })
			if r.Markers != nil {
				c.markers.send(p, r.Markers)
			}
			if werr != nil && r.Append != nil {
				c.lg.Warn("transaction log write failed; retrying", "partition", p, "transactional_id", a.TransactionalID,
					"op", a.Op, "err", werr)
				select {
				case <-c.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
			}
		}
	}()
}

// write appends a record to __transaction_state partition p as one
// uncompressed batch and waits until its ISR has it (acks=all). The
// error is the produce error the core expects.
func (c *Coordinator) write(ctx context.Context, p int32, a *txn.Append) *kerr.Error {
	part, err := c.cfg.Replicas.Partition(Topic, p)
	if err != nil {
		return produceError(err)
	}
	if part.LeaderEpoch() != a.CoordinatorEpoch {
		// Leadership moved since the decision: the new epoch's state
		// decides (AppendDone answers NOT_COORDINATOR).
		return kerr.NotLeaderForPartition
	}
	key, value := a.Record()
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(c.nowMs(), key, value, nil)
	batch, err := b.Build()
	if err != nil {
		return kerr.UnknownServerError
	}
	info, err := part.AppendAsLeader(batch, -1)
	if err != nil {
		return produceError(err)
	}
	wctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
	defer cancel()
	if err := part.WaitHighWatermark(wctx, info.LastOffset+1); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return kerr.RequestTimedOut
		}
		return produceError(err)
	}
	return nil
}

// produceError maps a replica or log error to the Kafka produce error
// the core translates for the client.
func produceError(err error) *kerr.Error {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, replica.ErrNotLeaderOrFollower):
		return kerr.NotLeaderForPartition
	case errors.Is(err, replica.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend
	}
	return kerr.UnknownServerError
}
