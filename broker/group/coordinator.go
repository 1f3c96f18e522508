package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/replica"
)

// Topic is the internal topic of committed offsets and group metadata.
const Topic = "__consumer_offsets"

// CoordinatorConfig wires a Coordinator.
type CoordinatorConfig struct {
	Replicas *replica.Manager
	// Partitions is offsets.topic.num.partitions.
	Partitions int
	Group      Config
	// Retention is offsets.retention.minutes; RetentionCheck is
	// offsets.retention.check.interval.ms.
	Retention      time.Duration
	RetentionCheck time.Duration
	// MaxMetadata is offset.metadata.max.bytes.
	MaxMetadata int
	// CommitTimeout is offsets.commit.timeout.ms: how long an offset
	// commit waits for the replicas of its __consumer_offsets partition
	// (0: 5 s).
	CommitTimeout time.Duration
	Logger        *slog.Logger
	Clock         func() time.Time
}

// Coordinator is the group coordinator of the __consumer_offsets
// partitions this broker leads. It drives the groups' state machines with
// one timer per group (no goroutine waits on a request: JoinGroup and
// SyncGroup answers go out through callbacks when the group completes
// them), writes offsets and group metadata to the partitions and rebuilds
// them from the log when it becomes leader.
type Coordinator struct {
	cfg CoordinatorConfig
	lg  *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	parts   map[int32]*offsetsPartition // led here
	groups  map[string]*entry
	closed  bool
	expirer *time.Timer
	// outbox holds answers to send once mu is released, and stored the
	// group metadata written meanwhile: the answers wait until the
	// offsets partition's ISR has it, and learn its error if it fails.
	outbox []func(storeErr error)
	stored *groupWrite

	wg sync.WaitGroup // loaders
}

type offsetsPartition struct {
	epoch   int32
	loading bool
}

type entry struct {
	g         *Group
	partition int32
	timer     *time.Timer
	deadline  time.Time
}

// NewCoordinator returns a coordinator that leads no partition yet.
func NewCoordinator(cfg CoordinatorConfig) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 50
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	if cfg.RetentionCheck <= 0 {
		cfg.RetentionCheck = 10 * time.Minute
	}
	c := &Coordinator{cfg: cfg, lg: cfg.Logger.With("component", "group"), now: cfg.Clock,
		parts: map[int32]*offsetsPartition{}, groups: map[string]*entry{}}
	// Assigned under mu, which expireLoop holds to reset it: a short
	// retention check could fire before the assignment otherwise.
	c.mu.Lock()
	c.expirer = time.AfterFunc(cfg.RetentionCheck, c.expireLoop)
	c.mu.Unlock()
	return c
}

// Close stops the timers; waiting joins and syncs are answered with
// NOT_COORDINATOR.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.expirer.Stop()
	for id, e := range c.groups {
		c.unloadLocked(id, e)
	}
	c.unlock()
	c.wg.Wait()
}

func (c *Coordinator) unloadLocked(id string, e *entry) {
	if e.timer != nil {
		e.timer.Stop()
	}
	// The members' callbacks are deferJoin/deferSync wrappers: calling
	// them here, under mu, queues the answers for the caller's unlock.
	for _, m := range e.g.members {
		m.failWaiting(kerr.NotCoordinator)
	}
	delete(c.groups, id)
}

// unlock releases mu, then sends the answers queued in the outbox while
// it was held: a callback answers a request and may call back into the
// coordinator, so none runs under mu.
//
// When the section wrote group metadata (a join or sync completed), the
// answers go once the offsets partition's ISR has it, as Kafka answers
// SyncGroup after its append with acks=-1: a member is never handed an
// assignment that a coordinator taking over from another replica would
// not know. Without replication that is at once; otherwise a goroutine
// waits (offsets.commit.timeout.ms at most), so the caller does not. If
// the write fails, syncs get Kafka's error for it and the group
// rebalances.
func (c *Coordinator) unlock() {
	out, w := c.outbox, c.stored
	c.outbox, c.stored = nil, nil
	c.mu.Unlock()
	switch {
	case w == nil:
		c.answer(out, nil, nil)
	case w.err != nil:
		c.answer(out, w, w.err)
	case len(out) == 0 || w.p.HighWatermark() >= w.required:
		c.answer(out, w, nil)
	default:
		go func() { c.answer(out, w, c.awaitCommitted(w.p, w.required)) }()
	}
}

// groupWrite is group metadata appended under mu: where, and the high
// watermark that commits it (or why it could not be appended).
type groupWrite struct {
	id       string
	e        *entry
	gen      int32
	p        *replica.Partition
	required int64
	err      error
}

// answer sends the queued answers with the outcome of the group write;
// a failed one drops the generation's assignments and rebalances.
func (c *Coordinator) answer(out []func(error), w *groupWrite, err error) {
	for _, f := range out {
		f(err)
	}
	if err == nil || w == nil {
		return
	}
	c.lg.Warn("group metadata not replicated; the group rebalances", "group", w.id, "generation", w.gen, "err", err)
	c.mu.Lock()
	if c.groups[w.id] == w.e {
		w.e.g.AssignmentNotStored(w.gen, c.now())
		c.scheduleLocked(w.id, w.e)
	}
	out, c.outbox, c.stored = c.outbox, nil, nil
	c.mu.Unlock()
	for _, f := range out {
		f(nil)
	}
}

// PartitionFor is the __consumer_offsets partition of a group.
func (c *Coordinator) PartitionFor(group string) int32 { return PartitionFor(group, c.cfg.Partitions) }

// OnLeader makes this broker coordinator of an offsets partition: its
// groups and offsets are loaded from the log in the background, and
// requests for them get COORDINATOR_LOAD_IN_PROGRESS until then.
func (c *Coordinator) OnLeader(partition, leaderEpoch int32) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if p, ok := c.parts[partition]; ok && (p.epoch == leaderEpoch || !p.loading) {
		// Still the leader, at a new epoch (the controller bumps it when
		// a follower leaves the ISR): what is in memory is the log, as
		// nobody else wrote to it. Kafka's makeLeader reloads only a
		// partition that was not led here before.
		p.epoch = leaderEpoch
		c.mu.Unlock()
		return
	}
	c.parts[partition] = &offsetsPartition{epoch: leaderEpoch, loading: true}
	c.mu.Unlock()
	c.wg.Go(func() { c.load(partition, leaderEpoch) })
}

// OnResign drops the groups of a partition this broker no longer leads.
func (c *Coordinator) OnResign(partition int32) {
	c.mu.Lock()
	if _, ok := c.parts[partition]; !ok {
		c.mu.Unlock()
		return
	}
	delete(c.parts, partition)
	for id, e := range c.groups {
		if e.partition == partition {
			c.unloadLocked(id, e)
		}
	}
	c.unlock()
	c.lg.Info("resigned as group coordinator", "partition", partition)
}

// load replays an offsets partition: the latest record per key wins, a
// null value deletes.
func (c *Coordinator) load(partition, epoch int32) {
	start := time.Now()
	groups := map[string]*Group{}
	get := func(id string) *Group {
		g, ok := groups[id]
		if !ok {
			g = New(id, c.cfg.Group, c.now())
			groups[id] = g
		}
		return g
	}
	// Transactional offsets wait for their producer's marker:
	// producer id -> group -> partition.
	pending := map[int64]map[string]map[TopicPartition]pendingTxnOffset{}
	onMarker := func(producerID int64, commit bool) {
		if commit {
			for id, offs := range pending[producerID] {
				get(id).commitTxnOffsets(offs)
			}
		}
		delete(pending, producerID)
	}
	n, err := c.replay(partition, onMarker, func(r replayed) {
		k, value := r.key, r.value
		switch {
		case k.IsOffset():
			tp := TopicPartition{Topic: k.Topic, Partition: k.Partition}
			if value == nil {
				if g, ok := groups[k.Group]; ok {
					g.DeleteOffset(tp)
				}
				return
			}
			v, err := ParseOffsetValue(value)
			if err != nil {
				c.lg.Warn("skipping offset record", "group", k.Group, "topic", k.Topic, "partition", k.Partition, "err", err)
				return
			}
			o := v.offset()
			if r.transactional {
				byGroup := pending[r.producerID]
				if byGroup == nil {
					byGroup = map[string]map[TopicPartition]pendingTxnOffset{}
					pending[r.producerID] = byGroup
				}
				if byGroup[k.Group] == nil {
					byGroup[k.Group] = map[TopicPartition]pendingTxnOffset{}
				}
				byGroup[k.Group][tp] = pendingTxnOffset{offset: o, logOffset: r.offset}
				return
			}
			get(k.Group).SetOffsetAt(tp, o, r.offset)
		case k.IsGroup():
			if value == nil {
				delete(groups, k.Group)
				return
			}
			v, err := ParseGroupValue(value)
			if err != nil {
				c.lg.Warn("skipping group record", "group", k.Group, "err", err)
				return
			}
			get(k.Group).Restore(v, c.now())
		}
	})
	c.mu.Lock()
	defer c.unlock()
	p, ok := c.parts[partition]
	if !ok || p.epoch != epoch || c.closed {
		return
	}
	if err != nil {
		c.lg.Error("cannot load offsets partition", "partition", partition, "err", err)
	}
	// Transactions still open at the end of the log keep their offsets
	// pending until their markers come.
	for producerID, byGroup := range pending {
		for id, offs := range byGroup {
			g := get(id)
			if g.txnOffsets == nil {
				g.txnOffsets = map[int64]map[TopicPartition]pendingTxnOffset{}
			}
			g.txnOffsets[producerID] = offs
		}
	}
	for id, g := range groups {
		if old, ok := c.groups[id]; ok {
			c.unloadLocked(id, old)
		}
		e := &entry{g: g, partition: partition}
		c.groups[id] = e
		c.scheduleLocked(id, e)
	}
	p.loading = false
	c.lg.Info("loaded offsets partition", "partition", partition, "records", n, "groups", len(groups),
		"took", time.Since(start).Round(time.Millisecond))
}

// replayed is one record of an offsets partition, read back.
type replayed struct {
	key    Key
	value  []byte
	offset int64
	// transactional: the record is a TxnOffsetCommit's, of producerID,
	// and counts only once its transaction's COMMIT marker follows.
	transactional bool
	producerID    int64
}

// replay calls fn for every data record of the partition's log, in
// order, and onMarker for every transaction marker.
func (c *Coordinator) replay(partition int32, onMarker func(producerID int64, commit bool), fn func(replayed)) (int, error) {
	p, err := c.cfg.Replicas.Partition(Topic, partition)
	if err != nil {
		return 0, err
	}
	from := p.Log().LogStartOffset()
	n := 0
	err = p.ScanLog(from, func(b record.Batch) error {
		if b.IsControl() {
			if b.BaseOffset() < from {
				return nil
			}
			return b.Iterate(func(r *record.Record) error {
				t, err := record.ParseControlKey(r.Key)
				if err != nil {
					c.lg.Warn("skipping control record with a bad key", "partition", partition, "offset", r.Offset(b), "err", err)
					return nil
				}
				if t.IsTxnMarker() {
					onMarker(b.ProducerID(), t == record.ControlCommit)
				}
				return nil
			})
		}
		return b.Iterate(func(r *record.Record) error {
			if r.Offset(b) < from {
				return nil
			}
			k, err := ParseKey(r.Key)
			if err != nil {
				c.lg.Warn("skipping record with a bad key", "partition", partition, "offset", r.Offset(b), "err", err)
				return nil
			}
			n++
			fn(replayed{key: k, value: r.Value, offset: r.Offset(b),
				transactional: b.IsTransactional(), producerID: b.ProducerID()})
			return nil
		})
	})
	return n, err
}

// groupLocked finds a group this broker coordinates, creating it when
// create is set.
func (c *Coordinator) groupLocked(id string, create bool) (*entry, error) {
	if c.closed {
		return nil, kerr.NotCoordinator
	}
	part := c.PartitionFor(id)
	p, ok := c.parts[part]
	switch {
	case !ok:
		return nil, kerr.NotCoordinator
	case p.loading:
		return nil, kerr.CoordinatorLoadInProgress
	}
	e, ok := c.groups[id]
	if !ok && create {
		e = &entry{g: New(id, c.cfg.Group, c.now()), partition: part}
		c.groups[id] = e
	}
	return e, nil
}

// Check tells whether this broker coordinates a group now: nil,
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) Check(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.groupLocked(id, false)
	if err != nil {
		return err
	}
	return nil
}

// afterLocked stores a changed group, re-arms its timer and forgets a
// dead group. It runs after every call into a group.
func (c *Coordinator) afterLocked(id string, e *entry) {
	if e.g.TakeDirty() {
		p, required, err := c.appendLockedAt(e.partition, []kv{{GroupKey(id).AppendTo(nil), e.g.Value().AppendTo(nil)}})
		if err != nil {
			c.lg.Error("cannot store group metadata", "group", id, "err", err)
		}
		if c.stored == nil || c.stored.err == nil {
			c.stored = &groupWrite{id: id, e: e, gen: e.g.Generation(), p: p, required: required, err: err}
		}
	}
	c.scheduleLocked(id, e)
}

func (c *Coordinator) scheduleLocked(id string, e *entry) {
	d, ok := e.g.Deadline()
	if !ok {
		if e.timer != nil {
			e.timer.Stop()
		}
		e.deadline = time.Time{}
		return
	}
	if e.timer != nil && d.Equal(e.deadline) {
		return
	}
	e.deadline = d
	wait := max(d.Sub(c.now()), 0)
	if e.timer == nil {
		e.timer = time.AfterFunc(wait, func() { c.fire(id, e) })
		return
	}
	e.timer.Reset(wait)
}

func (c *Coordinator) fire(id string, e *entry) {
	c.mu.Lock()
	if c.groups[id] != e || c.closed {
		c.mu.Unlock()
		return
	}
	e.deadline = time.Time{}
	e.g.Tick(c.now())
	c.afterLocked(id, e)
	c.unlock()
}

type kv struct{ key, value []byte }

// appendLocked writes records to an offsets partition as one batch,
// checking the ISR against min.insync.replicas as acks=all does. The
// caller that answers only once they are committed waits with
// awaitCommitted, after releasing the lock.
func (c *Coordinator) appendLocked(partition int32, recs []kv) error {
	_, _, err := c.appendLockedAt(partition, recs)
	return err
}

// appendLockedAt is appendLocked that returns the partition and the
// offset its high watermark must reach for the batch to be committed.
func (c *Coordinator) appendLockedAt(partition int32, recs []kv) (*replica.Partition, int64, error) {
	p, info, err := c.appendBatchLocked(partition, recs, record.DefaultBatchOptions())
	if err != nil {
		return nil, 0, err
	}
	return p, info.LastOffset + 1, nil
}

// appendBatchLocked writes recs as one batch with opts (a transactional
// producer's for TxnOffsetCommit) and returns where it went.
func (c *Coordinator) appendBatchLocked(partition int32, recs []kv, opts record.BatchOptions) (*replica.Partition, log.AppendInfo, error) {
	p, err := c.cfg.Replicas.Partition(Topic, partition)
	if err != nil {
		return nil, log.AppendInfo{}, err
	}
	b := record.NewBuilder(opts)
	ts := c.now().UnixMilli()
	for _, r := range recs {
		b.Append(ts, r.key, r.value, nil)
	}
	batch, err := b.Build()
	if err != nil {
		return nil, log.AppendInfo{}, err
	}
	var info log.AppendInfo
	if opts.ProducerID >= 0 {
		// In a transactional producer's name (TxnOffsetCommit).
		info, err = p.AppendAsCoordinator(batch)
	} else {
		info, err = p.AppendAsLeader(batch, -1)
	}
	if err != nil {
		return nil, log.AppendInfo{}, err
	}
	return p, info, nil
}

// awaitCommitted waits, without the lock, until the ISR has a batch
// appendLockedAt wrote (offsets.commit.timeout.ms at most), as Kafka's
// offset commits answer only once their records are replicated.
func (c *Coordinator) awaitCommitted(p *replica.Partition, required int64) error {
	timeout := c.cfg.CommitTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.WaitHighWatermark(ctx, required); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: the offsets partition's replicas did not all have the commit within %v", replica.ErrNotEnoughReplicasAfterAppend, timeout)
		}
		return err
	}
	return nil
}

// deferJoin wraps a join callback so the answer is sent after the lock
// is released.
func (c *Coordinator) deferJoin(cb func(JoinResult)) func(JoinResult) {
	return func(r JoinResult) { c.outbox = append(c.outbox, func(error) { cb(r) }) }
}

func (c *Coordinator) deferSync(cb func(SyncResult)) func(SyncResult) {
	return func(r SyncResult) {
		c.outbox = append(c.outbox, func(storeErr error) {
			if storeErr != nil && r.Err == nil {
				r = SyncResult{Err: asKerr(storeError(storeErr))}
			}
			cb(r)
		})
	}
}

// Join handles JoinGroup; cb gets the answer, possibly later.
func (c *Coordinator) Join(id string, req JoinRequest, cb func(JoinResult)) {
	c.mu.Lock()
	e, err := c.groupLocked(id, req.MemberID == "")
	if err == nil && e == nil {
		err = kerr.UnknownMemberID
	}
	if err != nil {
		c.mu.Unlock()
		cb(JoinResult{Err: asKerr(err), MemberID: req.MemberID, Generation: -1})
		return
	}
	e.g.Join(req, c.now(), c.deferJoin(cb))
	c.dropIfUnusedLocked(id, e)
	c.afterLocked(id, e)
	c.unlock()
}

// dropIfUnusedLocked forgets a group that a refused join created.
func (c *Coordinator) dropIfUnusedLocked(id string, e *entry) {
	g := e.g
	if g.state == Empty && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0 {
		if e.timer != nil {
			e.timer.Stop()
		}
		delete(c.groups, id)
	}
}

// Sync handles SyncGroup; cb gets the answer, possibly later.
func (c *Coordinator) Sync(id string, req SyncRequest, cb func(SyncResult)) {
	c.mu.Lock()
	e, err := c.groupLocked(id, false)
	if err == nil && e == nil {
		err = kerr.UnknownMemberID
	}
	if err != nil {
		c.mu.Unlock()
		cb(SyncResult{Err: asKerr(err)})
		return
	}
	e.g.Sync(req, c.now(), c.deferSync(cb))
	c.afterLocked(id, e)
	c.unlock()
}

// Heartbeat handles Heartbeat.
func (c *Coordinator) Heartbeat(id, member string, instance *string, generation int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.groupLocked(id, false)
	if err != nil {
		return err
	}
	if e == nil {
		return kerr.UnknownMemberID
	}
	if herr := e.g.Heartbeat(member, instance, generation, c.now()); herr != nil {
		return herr
	}
	c.scheduleLocked(id, e)
	return nil
}

// Leave handles LeaveGroup: one error per member, or a group error.
func (c *Coordinator) Leave(id string, members []LeaveMember) ([]error, error) {
	c.mu.Lock()
	e, err := c.groupLocked(id, false)
	if err != nil || e == nil {
		c.mu.Unlock()
		if err == nil {
			return nil, kerr.UnknownMemberID
		}
		return nil, err
	}
	if e.g.state == Dead {
		c.mu.Unlock()
		return nil, kerr.CoordinatorNotAvailable
	}
	var errs []error
	for _, le := range e.g.Leave(members, c.now()) {
		if le == nil {
			errs = append(errs, nil)
		} else {
			errs = append(errs, le)
		}
	}
	c.afterLocked(id, e)
	c.unlock()
	return errs, nil
}

// Commit is one offset to commit.
type Commit struct {
	TopicPartition
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
}

// ErrMetadataTooLarge: a commit's metadata is over offset.metadata.max.bytes.
var ErrMetadataTooLarge = kerr.OffsetMetadataTooLarge

// CommitOffsets validates and stores offsets. retention is the explicit
// retention of OffsetCommit v2-v4 (-1: the broker's); the per-partition
// errors come back in order, or a group error for all.
func (c *Coordinator) CommitOffsets(id, member string, instance *string, generation int32, retention time.Duration, commits []Commit) ([]error, error) {
	errs, p, required, stored, err := c.commitOffsets(id, member, instance, generation, retention, commits)
	if err != nil || p == nil {
		return errs, err
	}
	// Answered once committed: the ISR of the offsets partition has it.
	if werr := c.awaitCommitted(p, required); werr != nil {
		c.lg.Warn("offset commit not replicated", "group", id, "err", werr)
		for _, i := range stored {
			errs[i] = storeError(werr)
		}
	}
	return errs, nil
}

func (c *Coordinator) commitOffsets(id, member string, instance *string, generation int32, retention time.Duration, commits []Commit) (errs []error, p *replica.Partition, required int64, stored []int, err error) {
	c.mu.Lock()
	defer c.unlock()
	e, err := c.groupLocked(id, false)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	if e == nil {
		if generation >= 0 {
			return nil, nil, 0, nil, kerr.IllegalGeneration
		}
		e, _ = c.groupLocked(id, true)
	}
	now := c.now()
	if cerr := e.g.CheckCommit(member, instance, generation, now); cerr != nil {
		c.dropIfUnusedLocked(id, e)
		return nil, nil, 0, nil, cerr
	}
	errs = make([]error, len(commits))
	var recs []kv
	var vals []OffsetValue
	for i, cm := range commits {
		v, err := c.offsetValue(cm, now, retention)
		if err != nil {
			errs[i] = err
			continue
		}
		recs = append(recs, kv{OffsetKey(id, cm.Topic, cm.Partition).AppendTo(nil), v.AppendTo(nil)})
		vals = append(vals, v)
		stored = append(stored, i)
	}
	if len(recs) > 0 {
		var err error
		var info log.AppendInfo
		if p, info, err = c.appendBatchLocked(e.partition, recs, record.DefaultBatchOptions()); err != nil {
			c.lg.Warn("offset commit not stored", "group", id, "err", err)
			for _, i := range stored {
				errs[i] = storeError(err)
			}
		} else {
			required = info.LastOffset + 1
			for j, i := range stored {
				e.g.SetOffsetAt(commits[i].TopicPartition, vals[j].offset(), info.FirstOffset+int64(j))
			}
		}
	}
	c.dropIfUnusedLocked(id, e)
	c.scheduleLocked(id, e)
	return errs, p, required, stored, nil
}

// offsetValue is the record value of one commit: ErrMetadataTooLarge
// over offset.metadata.max.bytes; retention ≥ 0 is OffsetCommit v2-v4's
// explicit retention (a value v1 with its expiry), else value v3.
func (c *Coordinator) offsetValue(cm Commit, now time.Time, retention time.Duration) (OffsetValue, error) {
	md := ""
	if cm.Metadata != nil {
		md = *cm.Metadata
	}
	if c.cfg.MaxMetadata > 0 && len(md) > c.cfg.MaxMetadata {
		return OffsetValue{}, ErrMetadataTooLarge
	}
	v := OffsetValue{Version: 3, Offset: cm.Offset, LeaderEpoch: cm.LeaderEpoch, Metadata: md,
		CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1}
	if retention >= 0 {
		v.Version, v.ExpireTimestamp = 1, now.Add(retention).UnixMilli()
	}
	return v, nil
}

// offset is the committed offset a value carries.
func (v OffsetValue) offset() Offset {
	return Offset{Offset: v.Offset, LeaderEpoch: v.LeaderEpoch, Metadata: v.Metadata,
		CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: v.ExpireTimestamp}
}

func asKerr(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// storeError is the commit error Kafka answers when the append fails.
func storeError(err error) error {
	switch {
	case errors.Is(err, replica.ErrNotLeaderOrFollower), errors.Is(err, replica.ErrUnknownTopicOrPartition):
		return kerr.NotCoordinator
	case errors.Is(err, replica.ErrNotEnoughReplicas), errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		// Kafka's answer to a commit its replicas did not take.
		return kerr.CoordinatorNotAvailable
	}
	return kerr.UnknownServerError
}

// FetchOffsets returns a group's committed offsets: of tps, or all when
// tps is nil. A partition without an offset is absent from the map.
func (c *Coordinator) FetchOffsets(id string, tps []TopicPartition) (map[TopicPartition]Offset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.groupLocked(id, false)
	if err != nil {
		return nil, err
	}
	out := map[TopicPartition]Offset{}
	if e == nil {
		return out, nil
	}
	if tps == nil {
		for tp, o := range e.g.offsets {
			out[tp] = o
		}
		return out, nil
	}
	for _, tp := range tps {
		if o, ok := e.g.offsets[tp]; ok {
			out[tp] = o
		}
	}
	return out, nil
}

// Overview is a group as ListGroups shows it.
type Overview struct {
	ID           string
	ProtocolType string
	State        State
}

// ListGroups lists the groups of the partitions loaded here; loading is
// true while some partition is still loading.
func (c *Coordinator) ListGroups() (groups []Overview, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.parts {
		loading = loading || p.loading
	}
	for id, e := range c.groups {
		if e.g.state == Dead {
			continue
		}
		groups = append(groups, Overview{ID: id, ProtocolType: e.g.protocolType, State: e.g.state})
	}
	slices.SortFunc(groups, func(a, b Overview) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return groups, loading
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        State
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription is one member in a Description.
type MemberDescription struct {
	ID, ClientID, ClientHost string
	InstanceID               *string
	Metadata, Assignment     []byte
}

// Describe describes a group; a group that does not exist is Dead, with
// ok false.
func (c *Coordinator) Describe(id string) (d Description, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.groupLocked(id, false)
	if err != nil {
		return d, false, err
	}
	if e == nil || e.g.state == Dead {
		return Description{State: Dead}, false, nil
	}
	g := e.g
	d = Description{State: g.state, ProtocolType: g.protocolType}
	if g.state == Stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.Members() {
		md := MemberDescription{ID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost, InstanceID: m.InstanceID}
		if g.state == Stable {
			md.Metadata, md.Assignment = m.metadata(g.protocol), m.Assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, true, nil
}

// DeleteGroup deletes an empty group and its offsets with tombstones:
// GROUP_ID_NOT_FOUND for no such group, NON_EMPTY_GROUP for one with
// members.
func (c *Coordinator) DeleteGroup(id string) error {
	c.mu.Lock()
	defer c.unlock()
	e, err := c.groupLocked(id, false)
	if err != nil {
		return err
	}
	if e == nil || e.g.state == Dead {
		return kerr.GroupIDNotFound
	}
	if e.g.state != Empty {
		return kerr.NonEmptyGroup
	}
	recs := c.tombstones(id, e.g, nil)
	recs = append(recs, kv{GroupKey(id).AppendTo(nil), nil})
	if err := c.appendLocked(e.partition, recs); err != nil {
		c.lg.Warn("group deletion not stored", "group", id, "err", err)
		return storeError(err)
	}
	e.g.SetDead(c.now())
	c.unloadLocked(id, e)
	c.lg.Info("deleted group", "group", id)
	return nil
}

// tombstones are the offset tombstones of a group (of tps, or all).
func (c *Coordinator) tombstones(id string, g *Group, tps []TopicPartition) []kv {
	if tps == nil {
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
	}
	var out []kv
	for _, tp := range tps {
		out = append(out, kv{OffsetKey(id, tp.Topic, tp.Partition).AppendTo(nil), nil})
	}
	return out
}

// DeleteOffsets handles OffsetDelete: a per-partition error (nil,
// GROUP_SUBSCRIBED_TO_TOPIC) or a group error.
func (c *Coordinator) DeleteOffsets(id string, tps []TopicPartition) ([]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.groupLocked(id, false)
	if err != nil {
		return nil, err
	}
	if e == nil || e.g.state == Dead {
		return nil, kerr.GroupIDNotFound
	}
	g := e.g
	var subscribed map[string]bool
	if g.state != Empty {
		var ok bool
		if subscribed, ok = g.SubscribedTopics(); !ok {
			return nil, kerr.NonEmptyGroup
		}
	}
	errs := make([]error, len(tps))
	var del []TopicPartition
	for i, tp := range tps {
		if subscribed[tp.Topic] {
			errs[i] = kerr.GroupSubscribedToTopic
			continue
		}
		if _, ok := g.offsets[tp]; ok {
			del = append(del, tp)
		}
	}
	if len(del) > 0 {
		if err := c.appendLocked(e.partition, c.tombstones(id, g, del)); err != nil {
			return nil, storeError(err)
		}
		for _, tp := range del {
			g.DeleteOffset(tp)
		}
	}
	return errs, nil
}

func (c *Coordinator) expireLoop() {
	c.ExpireOffsets()
	c.mu.Lock()
	if !c.closed {
		c.expirer.Reset(c.cfg.RetentionCheck)
	}
	c.mu.Unlock()
}

// ExpireOffsets removes the offsets of empty groups older than
// offsets.retention.minutes (counted from when the group became empty,
// or for groups that never had members from the commit; an explicit
// expire timestamp wins), and then the empty groups left without
// offsets. It writes their tombstones.
func (c *Coordinator) ExpireOffsets() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	nowMs := now.UnixMilli()
	for id, e := range c.groups {
		g := e.g
		if c.parts[e.partition] == nil || c.parts[e.partition].loading || g.state != Empty {
			continue
		}
		var expired []TopicPartition
		for tp, o := range g.offsets {
			if g.UnstableOffset(tp) {
				continue // a transaction's offset is pending: Kafka keeps it
			}
			base := o.CommitTimestamp
			if g.protocolType != "" {
				base = g.stateTime.UnixMilli()
			}
			if (o.ExpireTimestamp >= 0 && nowMs >= o.ExpireTimestamp) ||
				(o.ExpireTimestamp < 0 && nowMs >= base+c.cfg.Retention.Milliseconds()) {
				expired = append(expired, tp)
			}
		}
		recs := c.tombstones(id, g, expired)
		dead := len(expired) == len(g.offsets) && len(g.txnOffsets) == 0
		if dead {
			recs = append(recs, kv{GroupKey(id).AppendTo(nil), nil})
		}
		if len(expired) == 0 && !dead {
			continue
		}
		if err := c.appendLocked(e.partition, recs); err != nil {
			c.lg.Warn("offset expiry not stored", "group", id, "err", err)
			continue
		}
		for _, tp := range expired {
			g.DeleteOffset(tp)
		}
		c.lg.Info("expired offsets", "group", id, "offsets", len(expired), "group_removed", dead)
		if dead {
			g.SetDead(now)
			c.unloadLocked(id, e)
		}
	}
}
