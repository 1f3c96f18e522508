package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
}

// Controller is this broker's controller role: it competes for
// /controller and, while it holds it, makes the topic changes.
type Controller struct {
	id    int32
	store metadata.Store
	cache *Cache
	lg    *slog.Logger
	now   func() time.Time

	mu      sync.Mutex // serialises topic changes
	canHost func(n int) error
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
	c := &Controller{id: cfg.BrokerID, store: cfg.Store, cache: cfg.Cache, now: cfg.Clock,
		lg: cfg.Logger.With("component", "controller"), canHost: cfg.CanHost, rejoin: make(chan struct{}, 1)}
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
	return nil
}

// Close resigns (the ephemeral node goes with the session) and stops.
func (c *Controller) Close() {
	c.cancel()
	c.wg.Wait()
	c.active.Store(false)
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
}

// Rejoin enters the election again on the store's new session.
func (c *Controller) Rejoin() {
	select {
	case c.rejoin <- struct{}{}:
	default:
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
		_, ok, err := c.store.Exists(c.ctx, metadata.ControllerPath)
		if err == nil && !ok {
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
			return c.onElected(ctx)
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
					return c.onElected(ctx)
				}
			}
			c.active.Store(false)
			return nil
		case errors.Is(err, metadata.ErrBadVersion):
			continue // the epoch moved: read it again
		default:
			return err
		}
	}
}

// onElected finishes what the previous controller left: topic deletions
// asked through /admin/delete_topics (Kafka's tools write there).
func (c *Controller) onElected(ctx context.Context) error {
	names, _, err := c.store.Children(ctx, metadata.DeleteTopicsPath)
	if errors.Is(err, metadata.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := c.deleteTopicLocked(ctx, name); err != nil && !errors.Is(err, ErrUnknownTopic) {
			return err
		}
		_ = c.store.Delete(ctx, metadata.DeleteTopicPath(name), metadata.AnyVersion)
	}
	if len(names) > 0 {
		return c.cache.Sync(ctx)
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
// validateOnly, creates the topic: its config, assignment (with a new
// topic id) and partition states (leader: the first replica; ISR: all
// replicas) in one Multi. It returns the topic as the cache then shows
// it (nil for validateOnly).
func (c *Controller) CreateTopic(ctx context.Context, spec TopicSpec, validateOnly bool) (*Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active.Load() {
		return nil, ErrNotController
	}
	snap := c.cache.Snapshot()
	if _, ok := snap.Topics[spec.Name]; ok {
		return nil, fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, spec.Name)
	}
	if other, ok := collides(snap, spec.Name); ok {
		return nil, fmt.Errorf("%w: topic '%s' collides with existing topic: %s", ErrTopicCollision, spec.Name, other)
	}
	live, err := c.liveBrokers(ctx)
	if err != nil {
		return nil, err
	}
	assignment := spec.Assignment
	if len(assignment) == 0 {
		if spec.NumPartitions <= 0 {
			return nil, fmt.Errorf("%w: number of partitions must be larger than 0", ErrInvalidPartitions)
		}
		if err := checkReplicationFactor(int(spec.ReplicationFactor), len(live)); err != nil {
			return nil, err
		}
		assignment = AssignReplicas(live, 0, int(spec.NumPartitions), int(spec.ReplicationFactor))
	} else if err := checkAssignment(assignment, 0, live); err != nil {
		return nil, err
	}
	if err := c.checkCapacity(assignment, 0); err != nil {
		return nil, err
	}
	if validateOnly {
		return nil, nil
	}

	id := metadata.NewUUID()
	var ops []metadata.Op
	cfgPath := metadata.EntityConfigPath(metadata.ConfigTopics, spec.Name)
	if _, ok, err := c.store.Exists(ctx, cfgPath); err != nil {
		return nil, err
	} else if ok {
		ops = append(ops, metadata.SetOp(cfgPath, metadata.MarshalEntityConfig(spec.Config), metadata.AnyVersion))
	} else {
		ops = append(ops, metadata.CreateOp(cfgPath, metadata.MarshalEntityConfig(spec.Config), 0))
	}
	ops = append(ops,
		metadata.CreateOp(metadata.TopicPath(spec.Name), metadata.MarshalTopicAssignment(metadata.TopicAssignment{TopicID: id, Partitions: assignment}), 0),
		metadata.CreateOp(metadata.TopicPartitionsPath(spec.Name), nil, 0))
	ops = append(ops, c.newPartitionOps(spec.Name, assignment, 0)...)
	if err := c.multi(ctx, ops...); err != nil {
		if errors.Is(err, metadata.ErrNodeExists) {
			return nil, fmt.Errorf("%w: topic '%s' already exists", ErrTopicExists, spec.Name)
		}
		return nil, fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	c.lg.Info("created topic", "topic", spec.Name, "partitions", len(assignment), "topic_id", metadata.FormatUUID(id))
	if err := c.cache.Sync(ctx); err != nil {
		// The topic exists; what did not finish in time is setting up its
		// partitions here, which goes on (a client that retries gets
		// TOPIC_ALREADY_EXISTS, and Metadata shows the partitions as they
		// come). Say so, rather than the store call the deadline cut.
		return nil, fmt.Errorf("topic %s was created, but its %d partitions were not all set up within the request's timeout (they still are being): %w",
			spec.Name, len(assignment), err)
	}
	return c.cache.Snapshot().Topics[spec.Name], nil
}

// checkCapacity asks CanHost about the replicas of partitions from..len-1
// that are assigned to this broker.
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

// multi applies the controller's ops behind a check that /controller_epoch
// is still the version this controller set when it won.
func (c *Controller) multi(ctx context.Context, ops ...metadata.Op) error {
	fenced := append([]metadata.Op{metadata.CheckOp(metadata.ControllerEpochPath, c.epochZkVersion.Load())}, ops...)
	_, err := c.store.Multi(ctx, fenced...)
	var me *metadata.MultiError
	if errors.As(err, &me) && me.Index == 0 {
		if c.active.Swap(false) {
			c.lg.Warn("resigned as controller: a newer controller epoch fenced a write", "controller_epoch", c.epoch.Load())
		}
		return fmt.Errorf("%w (%v)", ErrFenced, err)
	}
	if me != nil {
		// Report the caller's op, not the fence's position.
		me.Index--
	}
	return err
}

// newPartitionOps creates the nodes and states of partitions from..len-1.
func (c *Controller) newPartitionOps(topic string, assignment map[int32][]int32, from int32) []metadata.Op {
	var ops []metadata.Op
	for p := from; p < int32(len(assignment)); p++ {
		replicas := assignment[p]
		state := metadata.PartitionState{Leader: replicas[0], LeaderEpoch: 0, ISR: slices.Clone(replicas), ControllerEpoch: c.epoch.Load()}
		ops = append(ops,
			metadata.CreateOp(metadata.PartitionPath(topic, p), nil, 0),
			metadata.CreateOp(metadata.PartitionStatePath(topic, p), metadata.MarshalPartitionState(state), 0))
	}
	return ops
}

// CreatePartitions raises a topic's partition count to total. assignment,
// if not nil, gives the replicas of each new partition in order.
func (c *Controller) CreatePartitions(ctx context.Context, topic string, total int32, assignment [][]int32, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active.Load() {
		return ErrNotController
	}
	snap := c.cache.Snapshot()
	t, ok := snap.Topics[topic]
	if !ok {
		return fmt.Errorf("%w: topic '%s' does not exist", ErrUnknownTopic, topic)
	}
	cur := int32(len(t.Partitions))
	switch {
	case total < cur:
		return fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d", ErrInvalidPartitions, cur, total)
	case total == cur:
		return fmt.Errorf("%w: topic already has %d partitions", ErrInvalidPartitions, cur)
	}
	live, err := c.liveBrokers(ctx)
	if err != nil {
		return err
	}
	full := map[int32][]int32{}
	for _, p := range t.Partitions {
		full[p.Partition] = p.Replicas
	}
	if assignment != nil {
		if int32(len(assignment)) != total-cur {
			return fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided", ErrInvalidReplicaAssignment, total-cur, len(assignment))
		}
		for i, r := range assignment {
			full[cur+int32(i)] = r
		}
		if err := checkAssignment(full, cur, live); err != nil {
			return err
		}
	} else {
		rf := len(t.Partitions[0].Replicas)
		if err := checkReplicationFactor(rf, len(live)); err != nil {
			return err
		}
		maps.Copy(full, AssignReplicas(live, cur, int(total-cur), rf))
	}
	if err := c.checkCapacity(full, cur); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	data, stat, err := c.store.Get(ctx, metadata.TopicPath(topic))
	if err != nil {
		return err
	}
	a, err := metadata.UnmarshalTopicAssignment(data)
	if err != nil {
		return err
	}
	a.Partitions = full
	ops := []metadata.Op{metadata.SetOp(metadata.TopicPath(topic), metadata.MarshalTopicAssignment(a), stat.Version)}
	ops = append(ops, c.newPartitionOps(topic, full, cur)...)
	if err := c.multi(ctx, ops...); err != nil {
		return fmt.Errorf("create partitions of %s: %w", topic, err)
	}
	c.lg.Info("added partitions", "topic", topic, "partitions", total)
	return c.cache.Sync(ctx)
}

// DeleteTopic removes a topic's nodes (states, partitions, assignment,
// config) in one Multi; the brokers hosting it delete its logs when
// their cache sees it gone.
func (c *Controller) DeleteTopic(ctx context.Context, topic string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active.Load() {
		return ErrNotController
	}
	if err := c.deleteTopicLocked(ctx, topic); err != nil {
		return err
	}
	return c.cache.Sync(ctx)
}

func (c *Controller) deleteTopicLocked(ctx context.Context, topic string) error {
	path := metadata.TopicPath(topic)
	data, stat, err := c.store.Get(ctx, path)
	if errors.Is(err, metadata.ErrNoNode) {
		return fmt.Errorf("%w: topic '%s' does not exist", ErrUnknownTopic, topic)
	}
	if err != nil {
		return err
	}
	a, err := metadata.UnmarshalTopicAssignment(data)
	if err != nil {
		return err
	}
	var ops []metadata.Op
	parts, _, err := c.store.Children(ctx, metadata.TopicPartitionsPath(topic))
	if err != nil && !errors.Is(err, metadata.ErrNoNode) {
		return err
	}
	for _, p := range parts {
		pp := metadata.TopicPartitionsPath(topic) + "/" + p
		kids, _, err := c.store.Children(ctx, pp)
		if err != nil {
			return err
		}
		for _, k := range kids {
			ops = append(ops, metadata.DeleteOp(pp+"/"+k, metadata.AnyVersion))
		}
		ops = append(ops, metadata.DeleteOp(pp, metadata.AnyVersion))
	}
	if err == nil {
		ops = append(ops, metadata.DeleteOp(metadata.TopicPartitionsPath(topic), metadata.AnyVersion))
	}
	ops = append(ops, metadata.DeleteOp(path, stat.Version))
	cfgPath := metadata.EntityConfigPath(metadata.ConfigTopics, topic)
	if _, ok, err := c.store.Exists(ctx, cfgPath); err != nil {
		return err
	} else if ok {
		ops = append(ops, metadata.DeleteOp(cfgPath, metadata.AnyVersion))
	}
	if err := c.multi(ctx, ops...); err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	c.lg.Info("deleted topic", "topic", topic, "topic_id", metadata.FormatUUID(a.TopicID))
	return nil
}

// liveBrokers lists the registered brokers from the store itself, not the
// cache: a broker that registered a moment ago gets partitions too.
func (c *Controller) liveBrokers(ctx context.Context) ([]int32, error) {
	ids, _, err := c.store.Children(ctx, metadata.BrokerIDsPath)
	if err != nil {
		return nil, err
	}
	out := make([]int32, 0, len(ids))
	for _, s := range ids {
		if id, err := strconv.ParseInt(s, 10, 32); err == nil {
			out = append(out, int32(id))
		}
	}
	slices.Sort(out)
	return out, nil
}

// collides finds an existing topic whose name equals name once '.' and
// '_' are treated alike.
func collides(s *Snapshot, name string) (string, bool) {
	norm := func(n string) string { return strings.ReplaceAll(n, ".", "_") }
	want := norm(name)
	for _, t := range s.TopicNames() {
		if t != name && norm(t) == want {
			return t, true
		}
	}
	return "", false
}

// checkReplicationFactor checks rf against the live brokers. qk does not
// replicate yet, so a factor above 1 is refused with a clear message.
func checkReplicationFactor(rf, live int) error {
	switch {
	case rf <= 0:
		return fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
	case rf > live:
		return fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", ErrInvalidReplicationFactor, rf, live)
	case rf > 1:
		return fmt.Errorf("%w: replication factor %d: qk does not replicate partitions yet; use 1", ErrInvalidReplicationFactor, rf)
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

// AssignReplicas spreads n partitions, numbered from first, of rf
// replicas each over brokers as Kafka's rack-unaware assignment does: the
// leaders round-robin from a random broker, and each further replica is
// shifted by an amount that changes every len(brokers) partitions.
func AssignReplicas(brokers []int32, first int32, n, rf int) map[int32][]int32 {
	out := make(map[int32][]int32, n)
	nb := len(brokers)
	if nb == 0 || rf > nb {
		return out
	}
	start := rand.IntN(nb)
	shift := rand.IntN(nb)
	for i := range n {
		if i > 0 && i%nb == 0 {
			shift++
		}
		firstIdx := (i + start) % nb
		replicas := []int32{brokers[firstIdx]}
		for j := range rf - 1 {
			s := 1 + (shift+j)%(nb-1)
			replicas = append(replicas, brokers[(firstIdx+s)%nb])
		}
		out[first+int32(i)] = replicas
	}
	return out
}
