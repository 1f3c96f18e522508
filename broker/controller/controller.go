package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller/statemachine"
	"github.com/qk-project/qk/broker/metadata"
)

// Sentinel errors; broker/api maps them to Kafka codes.
var (
	// ErrNotController: this broker is not the active controller.
	ErrNotController = errors.New("controller: not the controller")
	// ErrTopicExists: TOPIC_ALREADY_EXISTS.
	ErrTopicExists = errors.New("controller: topic already exists")
	// ErrUnknownTopic: UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownTopic = errors.New("controller: unknown topic")
	// ErrTopicCollision: a topic name that differs from an existing one
	// only by '.' versus '_' (they would share metric names): Kafka's
	// INVALID_TOPIC_EXCEPTION.
	ErrTopicCollision = errors.New("controller: topic name collides with an existing topic")
	// ErrInvalidPartitions: INVALID_PARTITIONS.
	ErrInvalidPartitions = errors.New("controller: invalid number of partitions")
	// ErrInvalidReplicationFactor: INVALID_REPLICATION_FACTOR.
	ErrInvalidReplicationFactor = errors.New("controller: invalid replication factor")
	// ErrInvalidReplicaAssignment: INVALID_REPLICA_ASSIGNMENT.
	ErrInvalidReplicaAssignment = errors.New("controller: invalid replica assignment")
)

// Config wires a Controller.
type Config struct {
	BrokerID int32
	Store    metadata.Store
	Cache    *Cache
	Logger   *slog.Logger
	Clock    func() time.Time
	// CanHost, if set, is asked before a topic or partitions are created
	// whether this broker can host n more replicas (it has the file
	// descriptors for their logs); an error refuses the request before
	// anything is written, so no partition is left in the metadata that
	// the broker cannot serve. Other brokers' replicas are not checked:
	// they do not report their limits.
	CanHost func(n int) error
	// NewChannel makes the channel of a controller term (channel.New).
	NewChannel func() Channel
	// Local serves this broker's own control requests in-process (nil:
	// through the network like the others').
	Local func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	// Listener is the inter-broker listener the controller reaches
	// brokers on (inter.broker.listener.name).
	Listener string
	// UncleanLeaderElection is the broker's
	// unclean.leader.election.enable (topics may override it).
	UncleanLeaderElection func() bool
	// DeleteTopicEnable is delete.topic.enable.
	DeleteTopicEnable func() bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable; every
	// LeaderImbalanceCheckInterval (leader.imbalance.check.interval.seconds,
	// 0: never) the controller elects preferred leaders for brokers above
	// LeaderImbalancePerBrokerPct (leader.imbalance.per.broker.percentage).
	AutoLeaderRebalance          func() bool
	LeaderImbalanceCheckInterval time.Duration
	LeaderImbalancePerBrokerPct  func() int
}

// Controller is this broker's controller role: it competes for
// /controller and, while it holds it, makes the topic changes.
type Controller struct {
	cfg   Config
	id    int32
	store metadata.Store
	cache *Cache
	lg    *slog.Logger
	now   func() time.Time

	// mu serialises the controller's work: elections, every event of the
	// active controller and the API calls that change topics.
	mu             sync.Mutex
	canHost        func(n int) error
	newChannel     func() Channel
	local          func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	listener       string
	uncleanDefault func() bool
	deleteEnabled  func() bool

	// The active term (guarded by mu): its state, its channel to the
	// brokers, its watches; gen counts terms, so that a late event or
	// answer of an earlier one is dropped.
	cc         *controllerContext
	ch         Channel
	gen        atomic.Uint64
	termCtx    context.Context
	termCancel context.CancelFunc
	watching   map[watchKey]bool
	deleted    broadcaster // a topic's deletion completed
	// applied: which UpdateMetadata each broker has answered, for the
	// topic admin APIs to answer once every live broker shows their change.
	applied *applied

	qmu     sync.Mutex // guards queue
	queue   []queued
	qnotify chan struct{}
	// rejoin wakes the election loop after the store's session expired
	// and a new one is in place (Rejoin).
	rejoin chan struct{}
	active atomic.Bool
	epoch  atomic.Int32
	// epochZkVersion is the version of /controller_epoch this controller
	// set when it won: every write it makes is a Multi that checks it,
	// so that a deposed controller (a newer one bumped the epoch) writes
	// nothing, as Kafka's controller fences its ZooKeeper writes.
	epochZkVersion atomic.Int32

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a controller that is not running.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.NewChannel == nil {
		panic("controller: Config.NewChannel is required")
	}
	c := &Controller{cfg: cfg, id: cfg.BrokerID, store: cfg.Store, cache: cfg.Cache, now: cfg.Clock,
		lg: cfg.Logger.With("component", "controller"), canHost: cfg.CanHost, rejoin: make(chan struct{}, 1),
		newChannel: cfg.NewChannel, local: cfg.Local, listener: cfg.Listener,
		uncleanDefault: cfg.UncleanLeaderElection, deleteEnabled: cfg.DeleteTopicEnable,
		qnotify: make(chan struct{}, 1), applied: newApplied()}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// Start takes part in the election: it tries to become controller now
// and again whenever /controller disappears.
func (c *Controller) Start(ctx context.Context) error {
	if err := c.elect(ctx); err != nil {
		return err
	}
	c.wg.Go(c.run)
	c.wg.Go(c.eventLoop)
	if c.cfg.LeaderImbalanceCheckInterval > 0 && c.cfg.LeaderImbalancePerBrokerPct != nil {
		c.wg.Go(func() {
			c.rebalanceLoop(c.cfg.LeaderImbalanceCheckInterval, c.cfg.LeaderImbalancePerBrokerPct, c.cfg.AutoLeaderRebalance)
		})
	}
	return nil
}

// Close resigns (the ephemeral node goes with the session) and stops.
func (c *Controller) Close() {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	c.active.Store(false)
	c.onResign()
	c.mu.Unlock()
}

// IsActive reports whether this broker is the controller.
func (c *Controller) IsActive() bool { return c.active.Load() }

// Epoch is the controller epoch this broker won, while active.
func (c *Controller) Epoch() int32 { return c.epoch.Load() }

// Resign stops acting as controller at once: the store's session expired,
// and with it this broker's /controller node and its view (Kafka's
// controller resigns on a session expiry, before anything else). The
// election loop waits for Rejoin.
func (c *Controller) Resign() {
	if c.active.Swap(false) {
		c.lg.Warn("resigned as controller: zookeeper session expired", "controller_epoch", c.epoch.Load())
	}
	c.mu.Lock()
	c.onResign()
	c.mu.Unlock()
}

// Rejoin enters the election again on the store's new session.
func (c *Controller) Rejoin() {
	select {
	case c.rejoin <- struct{}{}:
	default:
	}
}

// resignIfActive ends the term when this broker no longer holds
// /controller.
func (c *Controller) resignIfActive(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active.Swap(false) || c.cc != nil {
		c.lg.Warn("resigned as controller: "+why, "controller_epoch", c.epoch.Load())
		c.onResign()
	}
}

// waitRejoin waits for Rejoin after a session expiry; false: stopped.
func (c *Controller) waitRejoin() bool {
	c.Resign()
	select {
	case <-c.ctx.Done():
		return false
	case <-c.rejoin:
		return true
	}
}

func (c *Controller) run() {
	backoff := time.Duration(0)
	// retry waits after a passing failure (a connection blip): the loop
	// must not stop taking part in elections, nor wait on a watch when no
	// election was won.
	retry := func(what string, err error) bool {
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		c.lg.Warn(what+"; retrying", "err", err, "retry_in", backoff)
		select {
		case <-c.ctx.Done():
			return false
		case <-time.After(backoff):
			return true
		}
	}
	for {
		ch, err := c.store.Watch(c.ctx, metadata.ControllerPath, metadata.WatchExists)
		if errors.Is(err, metadata.ErrSessionExpired) {
			if !c.waitRejoin() {
				return
			}
			continue
		}
		if err != nil {
			if c.ctx.Err() != nil || errors.Is(err, metadata.ErrClosed) || !retry("cannot watch the controller node", err) {
				return
			}
			continue
		}
		data, stat, err := c.store.Get(c.ctx, metadata.ControllerPath)
		ours := false
		if err == nil {
			ci, uerr := metadata.UnmarshalController(data)
			ours = uerr == nil && ci.BrokerID == c.id && stat.EphemeralOwner == c.store.SessionID()
		}
		switch {
		case errors.Is(err, metadata.ErrNoNode):
			err = c.elect(c.ctx)
		case err == nil && !ours:
			// Another broker is controller (an admin deleted /controller
			// and it won, as Kafka's tools move the controller): resign at
			// once, as Kafka's maybeResign does, rather than at the first
			// fenced write.
			c.resignIfActive("another broker is controller")
		case err == nil && !c.active.Load():
			// Ours but not active: a failover that failed could not delete
			// it. elect recognises it as ours and tries the failover again.
			err = c.elect(c.ctx)
		}
		if err != nil && c.ctx.Err() == nil && !errors.Is(err, metadata.ErrSessionExpired) {
			if !retry("controller election failed", err) {
				return
			}
			continue
		}
		backoff = 0
		select {
		case <-c.ctx.Done():
			return
		case ev := <-ch:
			if ev.Type == metadata.EventNotWatching {
				if errors.Is(ev.Err, metadata.ErrSessionExpired) && c.waitRejoin() {
					continue
				}
				return
			}
		}
	}
}

// elect tries to create /controller and bump /controller_epoch in one
// Multi, as Kafka's registerControllerAndIncrementControllerEpoch does.
func (c *Controller) elect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		data, stat, err := c.store.Get(ctx, metadata.ControllerEpochPath)
		epoch := int32(0)
		switch {
		case errors.Is(err, metadata.ErrNoNode):
			if _, err := c.store.Create(ctx, metadata.ControllerEpochPath, metadata.MarshalControllerEpoch(0), 0); err != nil && !errors.Is(err, metadata.ErrNodeExists) {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if epoch, err = metadata.UnmarshalControllerEpoch(data); err != nil {
			return err
		}
		info := metadata.MarshalController(metadata.ControllerInfo{BrokerID: c.id, Timestamp: c.now().UnixMilli()})
		_, err = c.store.Multi(ctx,
			metadata.CreateOp(metadata.ControllerPath, info, metadata.Ephemeral),
			metadata.SetOp(metadata.ControllerEpochPath, metadata.MarshalControllerEpoch(epoch+1), stat.Version))
		switch {
		case err == nil:
			c.epoch.Store(epoch + 1)
			c.epochZkVersion.Store(stat.Version + 1)
			c.active.Store(true)
			c.lg.Info("became controller", "controller_epoch", epoch+1)
			return c.onElected()
		case errors.Is(err, metadata.ErrNodeExists):
			// Someone else is controller, or we are: an earlier attempt
			// whose reply was lost with the connection created it.
			cdata, cstat, gerr := c.store.Get(ctx, metadata.ControllerPath)
			if gerr == nil && cstat.EphemeralOwner == c.store.SessionID() {
				if ci, uerr := metadata.UnmarshalController(cdata); uerr == nil && ci.BrokerID == c.id {
					edata, estat, eerr := c.store.Get(ctx, metadata.ControllerEpochPath)
					if eerr != nil {
						return eerr
					}
					e, eerr := metadata.UnmarshalControllerEpoch(edata)
					if eerr != nil {
						return eerr
					}
					c.epoch.Store(e)
					c.epochZkVersion.Store(estat.Version)
					c.active.Store(true)
					c.lg.Info("became controller", "controller_epoch", e)
					return c.onElected()
				}
			}
			if c.active.Swap(false) || c.cc != nil {
				c.lg.Warn("resigned as controller: another broker won the election", "controller_epoch", c.epoch.Load())
				c.onResign()
			}
			return nil
		case errors.Is(err, metadata.ErrBadVersion):
			continue // the epoch moved: read it again
		default:
			return err
		}
	}
}

// onElected starts the term: the whole state read, every broker told.
// A failure resigns (this broker could not act as controller) and deletes
// /controller, so that another broker, or this one, tries again.
func (c *Controller) onElected() error {
	c.onResign()
	ctx, cancel := context.WithTimeout(c.ctx, opTimeout)
	defer cancel()
	if err := c.onControllerFailover(ctx); err != nil {
		c.active.Store(false)
		c.onResign()
		c.lg.Error("controller failover failed; resigning", "err", err)
		// On a context of its own (the failover's may have run out); if
		// this fails too, the election loop finds /controller ours and
		// inactive, and tries the failover again.
		dctx, dcancel := context.WithTimeout(c.ctx, 10*time.Second)
		defer dcancel()
		if _, stat, gerr := c.store.Get(dctx, metadata.ControllerPath); gerr == nil && stat.EphemeralOwner == c.store.SessionID() {
			_ = c.store.Delete(dctx, metadata.ControllerPath, stat.Version)
		}
		return err
	}
	return nil
}

// TopicSpec is a topic to create.
type TopicSpec struct {
	Name              string
	NumPartitions     int32
	ReplicationFactor int16
	// Assignment, when not empty, gives every partition's replicas
	// (partitions 0..n-1); NumPartitions and ReplicationFactor are then
	// taken from it.
	Assignment map[int32][]int32
	Config     map[string]string
}

// CreateTopic validates spec against the cluster and, unless
// validateOnly, creates the topic as Kafka's controller does: its config
// and assignment (with a new topic id) in one fenced Multi, then its
// partitions through the state machines (their states written, their
// brokers told). It returns the topic as this broker's metadata then
// shows it (nil for validateOnly).
func (c *Controller) CreateTopic(ctx context.Context, spec TopicSpec, validateOnly bool) (*Topic, error) {
	c.mu.Lock()
	if !c.active.Load() || c.cc == nil {
		c.mu.Unlock()
		return nil, ErrNotController
	}
	assignment, err := c.validateTopic(spec, c.cc.liveIDs(), c.cc.racks(), c.cc.topics)
	if err == nil {
		err = c.checkCapacity(assignment, 0)
	}
	if err != nil || validateOnly {
		c.mu.Unlock()
		return nil, err
	}
	id := metadata.NewUUID()
	ops, err := topicOps(ctx, c.store, spec, id, assignment)
	if err == nil {
		_, err = c.multi(ctx, ops...)
	}
	if err != nil {
		c.mu.Unlock()
		if errors.Is(err, metadata.ErrNodeExists) {
			return nil, fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, spec.Name)
		}
		return nil, fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	c.lg.Info("created topic", "topic", spec.Name, "partitions", len(assignment), "topic_id", metadata.FormatUUID(id))
	c.cc.topics[spec.Name] = &topicInfo{id: id, assignment: assignment}
	if err := c.watchTopic(spec.Name); err != nil {
		c.lg.Warn("cannot watch topic", "topic", spec.Name, "err", err)
	}
	b := newBatch()
	c.onNewPartitionCreation(ctx, b, c.cc.partitions(spec.Name))
	c.send(b)
	applied := c.appliedBarrier()
	c.mu.Unlock()
	if err := c.waitApplied(ctx, applied, "topic "+spec.Name+" was created"); err != nil {
		return nil, err
	}
	return c.waitForTopic(ctx, spec.Name, len(assignment))
}

// CreateTopicInStore writes a new topic's config and assignment to the
// store without being the controller, as Kafka's brokers auto-create
// topics (AdminZkClient.createTopic): the controller picks it up through
// its watch. It waits for the topic to reach this broker's metadata.
func (c *Controller) CreateTopicInStore(ctx context.Context, spec TopicSpec) (*Topic, error) {
	snap := c.cache.Snapshot()
	topics := map[string]*topicInfo{}
	for name := range snap.Topics {
		topics[name] = nil
	}
	racks := map[int32]string{}
	for id, b := range snap.Brokers {
		racks[id] = b.Rack
	}
	assignment, err := c.validateTopic(spec, snap.BrokerIDs(), racks, topics)
	if err == nil {
		err = c.checkCapacity(assignment, 0)
	}
	if err != nil {
		return nil, err
	}
	ops, err := topicOps(ctx, c.store, spec, metadata.NewUUID(), assignment)
	if err == nil {
		_, err = c.store.Multi(ctx, ops...)
	}
	if errors.Is(err, metadata.ErrNodeExists) {
		return nil, fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, spec.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	c.lg.Info("wrote new topic for the controller", "topic", spec.Name, "partitions", len(assignment))
	return c.waitForTopic(ctx, spec.Name, len(assignment))
}

// validateTopic checks spec against the live brokers and the topics, and
// returns its assignment.
func (c *Controller) validateTopic(spec TopicSpec, live []int32, racks map[int32]string, topics map[string]*topicInfo) (map[int32][]int32, error) {
	if _, ok := topics[spec.Name]; ok {
		return nil, fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, spec.Name)
	}
	if other, ok := collides(slices.Sorted(maps.Keys(topics)), spec.Name); ok {
		return nil, fmt.Errorf("%w: topic '%s' collides with existing topic: %s", ErrTopicCollision, spec.Name, other)
	}
	assignment := spec.Assignment
	if len(assignment) == 0 {
		if spec.NumPartitions <= 0 {
			return nil, fmt.Errorf("%w: number of partitions must be larger than 0", ErrInvalidPartitions)
		}
		if err := checkReplicationFactor(int(spec.ReplicationFactor), len(live)); err != nil {
			return nil, err
		}
		if err := c.checkPartitionCount(spec.NumPartitions, spec.NumPartitions, int(spec.ReplicationFactor), len(live)); err != nil {
			return nil, err
		}
		return assign(live, racks, 0, int(spec.NumPartitions), int(spec.ReplicationFactor))
	}
	if err := checkAssignment(assignment, 0, live); err != nil {
		return nil, err
	}
	return assignment, nil
}

// topicOps are the writes that create a topic: its config and its
// assignment (Kafka writes nothing else; the controller adds the states).
func topicOps(ctx context.Context, st metadata.Store, spec TopicSpec, id [16]byte, assignment map[int32][]int32) ([]metadata.Op, error) {
	var ops []metadata.Op
	cfgPath := metadata.EntityConfigPath(metadata.ConfigTopics, spec.Name)
	if _, ok, err := st.Exists(ctx, cfgPath); err != nil {
		return nil, err
	} else if ok {
		ops = append(ops, metadata.SetOp(cfgPath, metadata.MarshalEntityConfig(spec.Config), metadata.AnyVersion))
	} else {
		ops = append(ops, metadata.CreateOp(cfgPath, metadata.MarshalEntityConfig(spec.Config), 0))
	}
	return append(ops, metadata.CreateOp(metadata.TopicPath(spec.Name),
		metadata.MarshalTopicAssignment(metadata.TopicAssignment{TopicID: id, Partitions: assignment}), 0)), nil
}

// appliedBarrier is the UpdateMetadata each live broker has been sent so
// far; c.mu is held.
func (c *Controller) appliedBarrier() appliedBarrier {
	if c.cc == nil {
		return appliedBarrier{}
	}
	return c.applied.barrier(c.gen.Load(), c.cc.liveIDs())
}

// waitApplied waits until every broker of b has answered the
// UpdateMetadata it was sent (Kafka answers once its own cache shows the
// change; qk waits for every live broker's, so that a client asking any
// broker next sees it). done says what did happen, for the error when
// the request's timeout passes first.
func (c *Controller) waitApplied(ctx context.Context, b appliedBarrier, done string) error {
	if err := c.applied.wait(ctx, b); err != nil {
		return fmt.Errorf("%s, but not every broker's metadata showed it within the request's timeout: %w", done, err)
	}
	return nil
}

// waitForTopic waits until this broker's metadata shows the topic with n
// partitions, each with a leader (or with no live replica to lead it).
func (c *Controller) waitForTopic(ctx context.Context, name string, n int) (*Topic, error) {
	err := c.cache.WaitFor(ctx, func(s *Snapshot) bool {
		t, ok := s.Topics[name]
		if !ok || len(t.Partitions) < n {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 && slices.ContainsFunc(p.Replicas, func(r int32) bool { _, live := s.Brokers[r]; return live }) {
				return false
			}
		}
		return true
	})
	if err != nil {
		// The topic exists; what did not finish in time is setting up its
		// partitions, which goes on (a client that retries gets
		// TOPIC_ALREADY_EXISTS, and Metadata shows the partitions as they
		// come). Say so, rather than the store call the deadline cut.
		return nil, fmt.Errorf("topic %s was created, but its %d partitions were not all set up within the request's timeout (they still are being): %w",
			name, n, err)
	}
	return c.cache.Snapshot().Topics[name], nil
}

// checkCapacity asks CanHost about the replicas of partitions from..len-1
// that are assigned to this broker.
// MaxPartitions is the most partitions qk gives one topic: the
// assignment of a count a client sends is built in memory before
// anything else can refuse it, so without a bound a CreateTopics or
// CreatePartitions of 2^31-1 partitions took the controller's lock and
// all the broker's memory. 2^20 is more than Kafka's guidance for a
// whole cluster.
const MaxPartitions = 1 << 20

// checkPartitionCount refuses, before any assignment is built, a topic
// of total partitions, n of them new, with rf replicas each over live
// brokers: over MaxPartitions, or when even an even spread (round robin
// puts at least n*rf/live new replicas on every broker, this one too)
// would not fit under this broker's descriptor limit (checkCapacity
// counts exactly once the assignment exists).
func (c *Controller) checkPartitionCount(total, n int32, rf, live int) error {
	if total > MaxPartitions {
		return fmt.Errorf("%w: %d partitions is more than the %d a topic may have", ErrInvalidPartitions, total, MaxPartitions)
	}
	if c.canHost == nil || live == 0 {
		return nil
	}
	if least := int(int64(n) * int64(rf) / int64(live)); least > 0 {
		return c.canHost(least)
	}
	return nil
}

func (c *Controller) checkCapacity(assignment map[int32][]int32, from int32) error {
	if c.canHost == nil {
		return nil
	}
	n := 0
	for p := from; p < int32(len(assignment)); p++ {
		if slices.Contains(assignment[p], c.id) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return c.canHost(n)
}

// ErrFenced: a newer controller has been elected (the controller epoch
// moved) and this one's write was refused; it has resigned.
var ErrFenced = fmt.Errorf("%w: fenced by a newer controller epoch", ErrNotController)

// Errors of ControlledShutdown.
var (
	// ErrBrokerNotAvailable: the broker is not registered.
	ErrBrokerNotAvailable = errors.New("controller: broker not available")
	// ErrStaleBrokerEpoch: the request names an earlier registration of
	// the broker (STALE_BROKER_EPOCH).
	ErrStaleBrokerEpoch = errors.New("controller: stale broker epoch")
)

// multi applies the controller's ops behind a check that /controller_epoch
// is still the version this controller set when it won, and returns the
// results of ops. Called with c.mu held.
func (c *Controller) multi(ctx context.Context, ops ...metadata.Op) ([]metadata.OpResult, error) {
	fenced := append([]metadata.Op{metadata.CheckOp(metadata.ControllerEpochPath, c.epochZkVersion.Load())}, ops...)
	res, err := c.store.Multi(ctx, fenced...)
	var me *metadata.MultiError
	if errors.As(err, &me) && me.Index == 0 {
		if c.active.Swap(false) {
			c.lg.Warn("resigned as controller: a newer controller epoch fenced a write", "controller_epoch", c.epoch.Load())
			// The term ends once the event or call that holds c.mu
			// returns (it still uses the context); nothing more is sent.
			go func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				if !c.active.Load() {
					c.onResign()
				}
			}()
		}
		return nil, fmt.Errorf("%w (%v)", ErrFenced, err)
	}
	if me != nil {
		// Report the caller's op, not the fence's position.
		me.Index--
	}
	if err != nil {
		return nil, err
	}
	return res[1:], nil
}

// CreatePartitions raises a topic's partition count to total. assignment,
// if not nil, gives the replicas of each new partition in order.
func (c *Controller) CreatePartitions(ctx context.Context, topic string, total int32, assignment [][]int32, validateOnly bool) error {
	c.mu.Lock()
	if !c.active.Load() || c.cc == nil {
		c.mu.Unlock()
		return ErrNotController
	}
	cc := c.cc
	t, ok := cc.topics[topic]
	if !ok || cc.toDelete[topic] {
		c.mu.Unlock()
		return fmt.Errorf("%w: topic '%s' does not exist", ErrUnknownTopic, topic)
	}
	full, err := c.validatePartitions(t, total, assignment, cc.liveIDs(), cc.racks())
	if err != nil || validateOnly {
		c.mu.Unlock()
		return err
	}
	cur := int32(len(t.assignment))
	data, stat, err := c.store.Get(ctx, metadata.TopicPath(topic))
	var a metadata.TopicAssignment
	if err == nil {
		a, err = metadata.UnmarshalTopicAssignment(data)
	}
	if err == nil {
		a.Partitions = full
		_, err = c.multi(ctx, metadata.SetOp(metadata.TopicPath(topic), metadata.MarshalTopicAssignment(a), stat.Version))
	}
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("create partitions of %s: %w", topic, err)
	}
	c.lg.Info("added partitions", "topic", topic, "partitions", total)
	var added []TP
	for p := cur; p < total; p++ {
		t.assignment[p] = full[p]
		added = append(added, TP{Topic: topic, Partition: p})
	}
	b := newBatch()
	c.onNewPartitionCreation(ctx, b, added)
	c.send(b)
	applied := c.appliedBarrier()
	c.mu.Unlock()
	if err := c.waitApplied(ctx, applied, fmt.Sprintf("partitions of %s were added", topic)); err != nil {
		return err
	}
	_, err = c.waitForTopic(ctx, topic, int(total))
	return err
}

// validatePartitions checks a partition increase and returns the full
// assignment.
func (c *Controller) validatePartitions(t *topicInfo, total int32, assignment [][]int32, live []int32, racks map[int32]string) (map[int32][]int32, error) {
	cur := int32(len(t.assignment))
	switch {
	case total < cur:
		return nil, fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d", ErrInvalidPartitions, cur, total)
	case total == cur:
		return nil, fmt.Errorf("%w: topic already has %d partitions", ErrInvalidPartitions, cur)
	}
	full := maps.Clone(t.assignment)
	if assignment != nil {
		if int32(len(assignment)) != total-cur {
			return nil, fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided", ErrInvalidReplicaAssignment, total-cur, len(assignment))
		}
		for i, r := range assignment {
			full[cur+int32(i)] = r
		}
		if err := checkAssignment(full, cur, live); err != nil {
			return nil, err
		}
	} else {
		rf := len(t.assignment[0])
		if err := checkReplicationFactor(rf, len(live)); err != nil {
			return nil, err
		}
		if err := c.checkPartitionCount(total, total-cur, rf, len(live)); err != nil {
			return nil, err
		}
		more, err := assign(live, racks, cur, int(total-cur), rf)
		if err != nil {
			return nil, err
		}
		maps.Copy(full, more)
	}
	if err := c.checkCapacity(full, cur); err != nil {
		return nil, err
	}
	return full, nil
}

// DeleteTopic asks for a topic's deletion as Kafka's controller does
// (/admin/delete_topics/<t>) and carries it out: every broker drops the
// topic from its metadata, each replica's broker deletes its log, then the
// topic's nodes go. It returns once the deletion completed, or, if some
// replica's broker is down (its deletion waits for it), once this
// broker's metadata no longer shows the topic.
func (c *Controller) DeleteTopic(ctx context.Context, topic string) error {
	c.mu.Lock()
	if !c.active.Load() || c.cc == nil {
		c.mu.Unlock()
		return ErrNotController
	}
	cc := c.cc
	if _, ok := cc.topics[topic]; !ok {
		c.mu.Unlock()
		return fmt.Errorf("%w: topic '%s' does not exist", ErrUnknownTopic, topic)
	}
	if !cc.toDelete[topic] {
		if _, err := c.store.Create(ctx, metadata.DeleteTopicPath(topic), nil, 0); err != nil && !errors.Is(err, metadata.ErrNodeExists) {
			c.mu.Unlock()
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
		c.processTopicDeletion()
	}
	c.mu.Unlock()
	// Until the deletion completes, while it can: every replica's broker
	// live and no replica's deletion failed. Otherwise it waits for them,
	// and the answer is what Kafka's is: the topic gone from this
	// broker's metadata.
	for {
		c.mu.Lock()
		pending := c.cc != nil && c.cc.topics[topic] != nil
		canFinish := pending && c.deletionCanFinish(topic)
		gone := c.deleted.wait()
		applied := c.appliedBarrier()
		c.mu.Unlock()
		if !pending || !canFinish {
			if err := c.waitApplied(ctx, applied, "topic "+topic+" is being deleted"); err != nil {
				return err
			}
			break
		}
		select {
		case <-gone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.cache.WaitFor(ctx, func(s *Snapshot) bool { _, ok := s.Topics[topic]; return !ok })
}

// deletionCanFinish: every replica of topic is on a live broker and none
// failed its deletion.
func (c *Controller) deletionCanFinish(topic string) bool {
	cc := c.cc
	for _, tp := range cc.partitions(topic) {
		for _, r := range cc.replicas(tp) {
			if !cc.isLive(r) || cc.sm.Replica(statemachine.PartitionReplica{TopicPartition: tp, Replica: r}) == statemachine.ReplicaDeletionIneligible {
				return false
			}
		}
	}
	return true
}

// broadcaster wakes every waiter at once: wait returns a channel closed
// at the next Broadcast.
type broadcaster struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcaster) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Broadcast wakes the waiters.
func (b *broadcaster) Broadcast() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// collides finds an existing topic whose name equals name once '.' and
// '_' are treated alike.
func collides(names []string, name string) (string, bool) {
	norm := func(n string) string { return strings.ReplaceAll(n, ".", "_") }
	want := norm(name)
	for _, t := range names {
		if t != name && norm(t) == want {
			return t, true
		}
	}
	return "", false
}

// checkReplicationFactor checks rf against the live brokers.
func checkReplicationFactor(rf, live int) error {
	switch {
	case rf <= 0:
		return fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
	case rf > live:
		return fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", ErrInvalidReplicationFactor, rf, live)
	}
	return nil
}

// checkAssignment validates partitions from..len-1 of a full assignment:
// consecutive partition numbers, the same non-zero number of distinct
// replicas each, every replica a live broker.
func checkAssignment(a map[int32][]int32, from int32, live []int32) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidReplicaAssignment, fmt.Sprintf(format, args...))
	}
	if len(a) == 0 {
		return bad("no partitions")
	}
	rf := -1
	for p := range int32(len(a)) {
		r, ok := a[p]
		if !ok {
			return bad("partitions should be a consecutive 0-based integer sequence")
		}
		if p < from {
			continue
		}
		if len(r) == 0 {
			return bad("partition %d has no replicas", p)
		}
		if rf >= 0 && len(r) != rf {
			return bad("all partitions should have the same number of replicas")
		}
		rf = len(r)
		seen := map[int32]bool{}
		for _, b := range r {
			if seen[b] {
				return bad("duplicate replica assignment found: %v", r)
			}
			seen[b] = true
			if !slices.Contains(live, b) {
				return bad("unknown broker %d in replica assignment", b)
			}
		}
	}
	return checkReplicationFactor(rf, len(live))
}
