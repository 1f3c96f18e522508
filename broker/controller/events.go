package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/qk-project/qk/broker/controller/statemachine"
	"github.com/qk-project/qk/broker/metadata"
)

// The active controller works as Kafka's: one event at a time (here: under
// c.mu), each reading what it needs from the context, writing its
// decisions to the store with compare-and-set (every write also fenced by
// the controller epoch), applying them to the context only once written,
// and ending with one batch of requests to the brokers.

// enqueue runs f later on the event loop, under c.mu, if the controller
// term that was current when enqueue was called is still the current one.
func (c *Controller) enqueue(f func()) { c.enqueueGen(c.gen.Load(), f) }

// enqueueGen runs f on the event loop if term gen is still the current
// one: for answers to requests, the term that sent them.
func (c *Controller) enqueueGen(gen uint64, f func()) {
	c.qmu.Lock()
	c.queue = append(c.queue, queued{gen: gen, f: f})
	c.qmu.Unlock()
	select {
	case c.qnotify <- struct{}{}:
	default:
	}
}

type queued struct {
	gen uint64
	f   func()
}

// eventLoop runs the queued events until the controller stops.
func (c *Controller) eventLoop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.qnotify:
		}
		for {
			c.qmu.Lock()
			q := c.queue
			c.queue = nil
			c.qmu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, e := range q {
				c.mu.Lock()
				if c.cc != nil && c.active.Load() && c.gen.Load() == e.gen {
					e.f()
				}
				c.mu.Unlock()
			}
		}
	}
}

// watch registers a one-shot watch for the current term, unless one is
// pending, and queues ev when it fires.
func (c *Controller) watch(path string, kind metadata.WatchKind, ev func()) error {
	k := watchKey{path, kind}
	if c.watching[k] {
		return nil
	}
	ch, err := c.store.Watch(c.termCtx, path, kind)
	if err != nil {
		return err
	}
	c.watching[k] = true
	gen := c.gen.Load()
	go func() {
		e, ok := <-ch
		c.mu.Lock()
		if c.gen.Load() == gen {
			delete(c.watching, k)
		}
		c.mu.Unlock()
		if ok && e.Type != metadata.EventNotWatching {
			c.enqueueGen(gen, ev)
		}
	}()
	return nil
}

// opTimeout bounds the store calls of one event.
const opTimeout = 30 * time.Second

func (c *Controller) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.termCtx, opTimeout)
}

// onControllerFailover reads the cluster's state and tells every broker
// what it is (Kafka's onControllerFailover): the metadata to all, each
// broker its partitions; replicas on dead brokers leave their ISRs, and
// partitions without a leader get one where they can. Called by elect,
// with c.mu held.
func (c *Controller) onControllerFailover(ctx context.Context) error {
	c.applied.reset(c.gen.Add(1))
	c.termCtx, c.termCancel = context.WithCancel(c.ctx)
	c.watching = map[watchKey]bool{}
	// Watches first, then the reads: a change in between fires them.
	for _, w := range []struct {
		path string
		ev   func()
	}{
		{metadata.BrokerIDsPath, c.processBrokerChange},
		{metadata.BrokerTopicsPath, c.processTopicChange},
		{metadata.DeleteTopicsPath, c.processTopicDeletion},
	} {
		if err := c.watch(w.path, metadata.WatchChildren, w.ev); err != nil {
			return err
		}
	}
	if err := c.watchLogDirEvents(ctx); err != nil {
		return err
	}
	start := c.now()
	cc, err := loadContext(ctx, c.store)
	if cc == nil {
		return err
	}
	if err != nil {
		c.lg.Error("some topics are unreadable and left out", "err", err)
	}
	c.cc = cc
	if !c.deletionEnabled() && len(cc.toDelete) > 0 {
		// As Kafka's controller: with delete.topic.enable=false the
		// requests are dropped, the topics kept.
		for name := range cc.toDelete {
			c.lg.Warn("topic deletion asked but delete.topic.enable is false; ignored", "topic", name)
			_ = c.store.Delete(ctx, metadata.DeleteTopicPath(name), metadata.AnyVersion)
		}
		clear(cc.toDelete)
	}
	for name := range cc.topics {
		if err := c.watchTopic(name); err != nil {
			return err
		}
	}
	c.ch = c.newChannel()
	for _, id := range cc.liveIDs() {
		c.addBroker(cc.live[id])
	}
	b := newBatch()
	live := cc.liveIDs()
	b.addUpdateMetadataFull(live)
	// Replicas: those on live brokers online (each broker is told its
	// partitions), the others offline (out of their ISRs).
	var offline []statemachine.PartitionReplica
	for _, tp := range cc.allPartitions() {
		for _, r := range cc.replicas(tp) {
			pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: r}
			if cc.isLive(r) {
				c.replicaOnline(b, pr)
			} else if !cc.toDelete[tp.Topic] {
				offline = append(offline, pr)
			}
		}
	}
	c.replicasOffline(ctx, b, offline)
	c.reelectRestartedLeaders(ctx, b)
	c.triggerOnlinePartitionStateChange(ctx, b)
	c.resumeReassignments(ctx, b)
	c.send(b)
	c.lg.Info("controller state loaded", "brokers", len(cc.live), "topics", len(cc.topics),
		"partitions", len(cc.allPartitions()), "took", c.now().Sub(start).Round(time.Millisecond))
	if len(cc.toDelete) > 0 {
		c.enqueue(c.processTopicDeletion)
	}
	// Notifications written while no controller ran (the watch fires only
	// for later ones).
	c.enqueue(c.processLogDirEventNotification)
	return nil
}

// onResign forgets the term: its watches, its channel, its context.
// Called with c.mu held.
func (c *Controller) onResign() {
	if c.termCancel != nil {
		c.termCancel()
	}
	c.applied.reset(c.gen.Add(1))
	if c.ch != nil {
		c.ch.Close()
		c.ch = nil
	}
	c.cc = nil
	c.deleted.Broadcast() // DeleteTopic waiters look again
}

// reelectRestartedLeaders gives a new leader epoch to the partitions
// whose leader registered after their state was last written: it
// restarted while no controller ran (a whole cluster restarted, or its
// data was taken over), so its log may have lost what it had at the old
// epoch, and continuing under that epoch would hide the difference from
// the replicas that saw it. Kafka's controller re-elects a bounced
// broker's partitions the same way when it sees the bounce.
func (c *Controller) reelectRestartedLeaders(ctx context.Context, b *requestBatch) {
	cc := c.cc
	var writes []stateWrite
	for _, tp := range cc.allPartitions() {
		s, ok := cc.states[tp]
		lb, live := cc.live[s.Leader]
		if !ok || !live || cc.toDelete[tp.Topic] || lb.epoch < cc.stateMzxid[tp] {
			continue
		}
		var isr []int32
		for _, r := range s.ISR {
			if cc.isLive(r) {
				isr = append(isr, r)
			}
		}
		n := s.WithLeader(s.Leader, isr)
		n.LeaderRecoveryState = s.LeaderRecoveryState
		writes = append(writes, stateWrite{tp: tp, state: n})
	}
	if len(writes) == 0 {
		return
	}
	done := c.writeStates(ctx, writes)
	for _, w := range done {
		c.tellReplicas(b, w.tp, false)
	}
	c.lg.Info("new leader epochs for partitions whose leader restarted unseen", "partitions", len(done))
}

func (c *Controller) addBroker(lb liveBroker) {
	if lb.id == c.id && c.local != nil {
		c.ch.AddLocal(lb.id, c.local)
		return
	}
	e, ok := lb.endpoint(c.listener)
	if !ok {
		c.lg.Error("broker has no endpoint on the inter-broker listener; the controller cannot reach it",
			"broker_id", lb.id, "listener", c.listener)
		return
	}
	c.ch.AddBroker(lb.id, e.Host+":"+strconv.Itoa(int(e.Port)))
}

func (lb liveBroker) endpoint(listener string) (metadata.Endpoint, bool) {
	for _, e := range lb.reg.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	if listener == "" && len(lb.reg.Endpoints) > 0 {
		return lb.reg.Endpoints[0], true
	}
	return metadata.Endpoint{}, false
}

func (c *Controller) watchTopic(name string) error {
	err := c.watch(metadata.TopicPath(name), metadata.WatchData, func() { c.processPartitionModification(name) })
	if errors.Is(err, metadata.ErrNoNode) {
		return nil
	}
	return err
}

// processBrokerChange compares the registrations with the live brokers:
// gone and re-registered (bounced) brokers failed, new and re-registered
// ones started (Kafka's BrokerChange).
func (c *Controller) processBrokerChange() {
	ctx, cancel := c.opCtx()
	defer cancel()
	if err := c.watch(metadata.BrokerIDsPath, metadata.WatchChildren, c.processBrokerChange); err != nil {
		c.retryLater("watch brokers", err, c.processBrokerChange)
		return
	}
	now, err := readLiveBrokers(ctx, c.store)
	if err != nil {
		c.retryLater("read brokers", err, c.processBrokerChange)
		return
	}
	cc := c.cc
	var dead, started []int32
	for id, lb := range cc.live {
		n, ok := now[id]
		if !ok || n.epoch != lb.epoch {
			dead = append(dead, id)
		}
	}
	for id, n := range now {
		if lb, ok := cc.live[id]; !ok || lb.epoch != n.epoch {
			started = append(started, id)
		}
	}
	slices.Sort(dead)
	slices.Sort(started)
	if len(dead) == 0 && len(started) == 0 {
		return
	}
	c.lg.Info("broker change", "dead_or_bounced", fmt.Sprint(dead), "new_or_bounced", fmt.Sprint(started),
		"live", fmt.Sprint(slices.Sorted(maps.Keys(now))))
	b := newBatch()
	for _, id := range dead {
		delete(cc.live, id)
		delete(cc.shuttingDown, id)
		cc.offlineDirs.Forget(id) // its directories are what it finds when it starts again
		c.ch.RemoveBroker(id)
		c.applied.forget(id)
	}
	if len(dead) > 0 {
		c.onBrokerFailure(ctx, b, dead)
	}
	for _, id := range started {
		cc.offlineDirs.Forget(id)
		cc.live[id] = now[id]
		c.addBroker(now[id])
	}
	if len(started) > 0 {
		c.onBrokerStartup(ctx, b, started)
	}
	// Every broker learns the new set of live brokers.
	b.addUpdateMetadata(cc.liveIDs())
	c.send(b)
}

// retryLater queues ev again after a failed store call.
func (c *Controller) retryLater(what string, err error, ev func()) {
	if c.termCtx.Err() != nil {
		return
	}
	c.lg.Warn("controller: "+what+" failed; retrying", "err", err)
	gen := c.gen.Load()
	time.AfterFunc(time.Second, func() {
		if c.gen.Load() == gen {
			c.enqueue(ev)
		}
	})
}

// onBrokerFailure takes the dead brokers' leaderships away and their
// replicas out of the ISRs (Kafka's onBrokerFailure).
func (c *Controller) onBrokerFailure(ctx context.Context, b *requestBatch, dead []int32) {
	cc := c.cc
	var offline []statemachine.PartitionReplica
	var leaderless []TP
	for _, tp := range cc.allPartitions() {
		if cc.toDelete[tp.Topic] {
			for _, r := range cc.replicas(tp) {
				if slices.Contains(dead, r) {
					c.deletionIneligible(statemachine.PartitionReplica{TopicPartition: tp, Replica: r})
				}
			}
			continue
		}
		if s, ok := cc.states[tp]; ok && slices.Contains(dead, s.Leader) && cc.sm.Partition(tp) != statemachine.NewPartition {
			leaderless = append(leaderless, tp)
		}
		for _, r := range cc.replicas(tp) {
			if slices.Contains(dead, r) {
				offline = append(offline, statemachine.PartitionReplica{TopicPartition: tp, Replica: r})
			}
		}
	}
	for _, tp := range leaderless {
		c.setPartition(tp, statemachine.OfflinePartition)
	}
	c.triggerOnlinePartitionStateChange(ctx, b)
	c.replicasOffline(ctx, b, offline)
}

// onBrokerStartup tells new brokers everything and their partitions, and
// elects leaders where they were missing (Kafka's onBrokerStartup).
func (c *Controller) onBrokerStartup(ctx context.Context, b *requestBatch, started []int32) {
	cc := c.cc
	b.addUpdateMetadataFull(started)
	resume := false
	for _, id := range started {
		for _, tp := range cc.partitionsOn(id) {
			pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: id}
			if cc.toDelete[tp.Topic] {
				resume = true
				continue
			}
			c.replicaOnline(b, pr)
		}
	}
	c.triggerOnlinePartitionStateChange(ctx, b)
	if resume {
		c.enqueue(c.processTopicDeletion)
	}
}

// replicaOnline starts a replica: its broker is told its role, and every
// broker the partition's metadata (as Kafka's
// addLeaderAndIsrRequestForBrokers adds it), so that their
// OfflineReplicas no longer list a replica that is back.
func (c *Controller) replicaOnline(b *requestBatch, pr statemachine.PartitionReplica) {
	if _, ok := c.cc.states[pr.TopicPartition]; ok {
		b.addLeaderAndIsr([]int32{pr.Replica}, pr.TopicPartition, false)
		b.addUpdateMetadata(c.cc.liveIDs(), pr.TopicPartition)
	}
	c.setReplica(pr, statemachine.OnlineReplica)
}

// replicasOffline takes replicas whose broker died out of their
// partitions' ISRs (statemachine.RemoveReplicaFromIsr), and tells the
// other replicas and every broker.
func (c *Controller) replicasOffline(ctx context.Context, b *requestBatch, prs []statemachine.PartitionReplica) {
	cc := c.cc
	next := map[TP]statemachine.LeaderAndIsr{}
	for _, pr := range prs {
		c.setReplica(pr, statemachine.OfflineReplica)
		s, ok := next[pr.TopicPartition]
		if !ok {
			if s, ok = cc.states[pr.TopicPartition]; !ok {
				continue
			}
		}
		if n, changed := statemachine.RemoveReplicaFromIsr(s, pr.Replica); changed {
			next[pr.TopicPartition] = n
		}
	}
	var writes []stateWrite
	for _, tp := range sortedTPs(next) {
		writes = append(writes, stateWrite{tp: tp, state: next[tp]})
	}
	for _, w := range c.writeStates(ctx, writes) {
		c.tellReplicas(b, w.tp, false)
	}
}

// tellReplicas sends tp's state to its online replicas (LeaderAndIsr) and
// to every live broker (UpdateMetadata). A replica on a failed log
// directory is not told: it cannot serve, and its broker would only
// answer KAFKA_STORAGE_ERROR again (Kafka's OfflineReplica transition
// leaves it out of its LeaderAndIsr too; its elections do not, to no
// effect).
func (c *Controller) tellReplicas(b *requestBatch, tp TP, isNew bool) {
	cc := c.cc
	var live []int32
	for _, r := range cc.replicas(tp) {
		if cc.isReplicaOnline(tp, r) {
			live = append(live, r)
		}
	}
	b.addLeaderAndIsr(live, tp, isNew)
	b.addUpdateMetadata(cc.liveIDs(), tp)
}

// processElections is an event of its own: the elections that a failed
// write left undone.
func (c *Controller) processElections() {
	ctx, cancel := c.opCtx()
	defer cancel()
	b := newBatch()
	c.triggerOnlinePartitionStateChange(ctx, b)
	c.send(b)
}

// triggerOnlinePartitionStateChange elects leaders for the partitions
// that are new or offline (Kafka's triggerOnlinePartitionStateChange).
func (c *Controller) triggerOnlinePartitionStateChange(ctx context.Context, b *requestBatch) {
	cc := c.cc
	var tps []TP
	for _, tp := range cc.sm.PartitionsIn(statemachine.NewPartition, statemachine.OfflinePartition) {
		if !cc.toDelete[tp.Topic] {
			tps = append(tps, tp)
		}
	}
	c.electLeaders(ctx, b, tps)
}

// electLeaders moves partitions to OnlinePartition: new ones get their
// first state, offline ones a leader from their live ISR (or, with
// unclean.leader.election.enable, any live replica). Those nobody can
// lead stay where they are, and are logged.
func (c *Controller) electLeaders(ctx context.Context, b *requestBatch, tps []TP) {
	cc := c.cc
	var writes []stateWrite
	unclean := map[string]bool{}
	var noLeader []TP
	for _, tp := range tps {
		assignment := cc.replicas(tp)
		s, has := cc.states[tp]
		if !has {
			first, ok := statemachine.InitialLeaderAndIsr(assignment, cc.liveReplicas(tp))
			if !ok {
				noLeader = append(noLeader, tp)
				continue
			}
			writes = append(writes, stateWrite{tp: tp, state: first, create: true})
			continue
		}
		if cc.isReplicaLive(tp, s.Leader) {
			// It has a live leader (a new partition whose state node was
			// written before a failover): nothing to elect.
			writes = append(writes, stateWrite{tp: tp, state: s, unchanged: true})
			continue
		}
		allow, ok := unclean[tp.Topic]
		if !ok {
			allow = c.uncleanAllowed(ctx, tp.Topic)
			unclean[tp.Topic] = allow
		}
		leader, isr, wasUnclean, ok := statemachine.OfflinePartitionLeader(assignment, s.ISR, cc.onlineReplicas(tp), allow)
		if !ok {
			noLeader = append(noLeader, tp)
			continue
		}
		n := s.WithLeader(leader, isr)
		if wasUnclean {
			n.LeaderRecoveryState = 1
			c.lg.Warn("unclean leader election: records acknowledged by the old ISR may be lost",
				"topic", tp.Topic, "partition", tp.Partition, "leader", leader)
		}
		writes = append(writes, stateWrite{tp: tp, state: n})
	}
	for _, w := range c.writeStates(ctx, writes) {
		c.setPartition(w.tp, statemachine.OnlinePartition)
		c.tellReplicas(b, w.tp, w.create)
	}
	if len(noLeader) > 0 {
		c.lg.Warn("partitions left without a leader: no live replica can lead them", "count", len(noLeader),
			"first", noLeader[0].String())
	}
}

// uncleanAllowed reads unclean.leader.election.enable for a topic: its
// override, else the broker's setting.
func (c *Controller) uncleanAllowed(ctx context.Context, topic string) bool {
	cfg, err := metadata.ReadEntityConfig(ctx, c.store, metadata.ConfigTopics, topic)
	if err == nil {
		if v, ok := cfg["unclean.leader.election.enable"]; ok {
			return v == "true"
		}
	}
	return c.uncleanDefault != nil && c.uncleanDefault()
}

// stateWrite is a partition state the controller wants in the store.
type stateWrite struct {
	tp     TP
	state  statemachine.LeaderAndIsr
	create bool // the state node (and its parents) does not exist yet
	// unchanged: already in the store as it is; nothing to write.
	unchanged bool
}

// writeBatch bounds the ops of one Multi (ZooKeeper's jute.maxbuffer
// limits a request to about 1 MiB).
const writeBatch = 500

// writeStates writes partition states, each a compare-and-set on the
// state node's version, in Multis fenced by the controller epoch, and
// returns the writes that succeeded, after applying them to the context.
// A write whose version check failed (someone else changed the node) is
// dropped and the node read again into the context.
func (c *Controller) writeStates(ctx context.Context, writes []stateWrite) []stateWrite {
	cc := c.cc
	var done []stateWrite
	var todo []stateWrite
	for _, w := range writes {
		if w.unchanged {
			done = append(done, w)
		} else {
			todo = append(todo, w)
		}
	}
	// existing are parent nodes known to exist: a partition's node, or a
	// topic's partitions node (a topic written by another tool has
	// neither; a write cut short may have left some).
	existing := map[string]bool{}
	for len(todo) > 0 && c.active.Load() {
		n := min(len(todo), writeBatch/3)
		chunk := todo[:n]
		var ops []metadata.Op
		var owner []int // ops index -> chunk index (-1: a parent node)
		parent := func(path string) {
			if !existing[path] {
				existing[path] = true // once per chunk; unset if the Multi fails
				ops = append(ops, metadata.CreateOp(path, nil, 0))
				owner = append(owner, -1)
			}
		}
		for i, w := range chunk {
			ps := metadata.PartitionState{Leader: w.state.Leader, LeaderEpoch: w.state.LeaderEpoch, ISR: w.state.ISR,
				ControllerEpoch: c.epoch.Load(), LeaderRecoveryState: w.state.LeaderRecoveryState}
			data := metadata.MarshalPartitionState(ps)
			if w.create {
				parent(metadata.TopicPartitionsPath(w.tp.Topic))
				parent(metadata.PartitionPath(w.tp.Topic, w.tp.Partition))
				ops = append(ops, metadata.CreateOp(metadata.PartitionStatePath(w.tp.Topic, w.tp.Partition), data, 0))
			} else {
				ops = append(ops, metadata.SetOp(metadata.PartitionStatePath(w.tp.Topic, w.tp.Partition), data, w.state.PartitionEpoch))
			}
			owner = append(owner, i)
		}
		res, err := c.multi(ctx, ops...)
		if err != nil {
			// Nothing was created: only what the store has is known.
			for j, op := range ops {
				if owner[j] < 0 {
					delete(existing, op.Path)
				}
			}
		}
		var me *metadata.MultiError
		switch {
		case err == nil:
			for j, r := range res {
				if owner[j] < 0 {
					continue
				}
				w := chunk[owner[j]]
				if w.create {
					w.state.PartitionEpoch = 0
				} else {
					w.state.PartitionEpoch = r.Stat.Version
				}
				cc.states[w.tp] = w.state
				done = append(done, w)
			}
			todo = todo[n:]
		case errors.As(err, &me) && owner[me.Index] < 0 && errors.Is(me.Err, metadata.ErrNodeExists):
			existing[me.Op.Path] = true
		case errors.As(err, &me) && owner[me.Index] >= 0:
			w := chunk[owner[me.Index]]
			c.lg.Warn("partition state changed under the controller; re-reading it", "topic", w.tp.Topic,
				"partition", w.tp.Partition, "err", me.Err)
			if s, ok, rerr := readState(ctx, c.store, w.tp); rerr == nil && ok {
				cc.states[w.tp] = s
			}
			todo = slices.Delete(slices.Clone(todo), owner[me.Index], owner[me.Index]+1)
		default:
			if !errors.Is(err, ErrFenced) {
				c.lg.Error("cannot write partition states", "count", len(todo), "err", err)
				// New and offline partitions stay so: elect them again
				// once the store answers (a write whose reply was lost is
				// found by the version check and re-read).
				c.retryLater("write partition states", err, c.processElections)
			}
			return done
		}
	}
	return done
}

// deletionIneligible parks a replica of a topic being deleted whose
// broker is down: its deletion is retried when the broker returns.
func (c *Controller) deletionIneligible(pr statemachine.PartitionReplica) {
	switch c.cc.sm.Replica(pr) {
	case statemachine.ReplicaDeletionSuccessful, statemachine.ReplicaDeletionIneligible:
		return
	case statemachine.ReplicaDeletionStarted, statemachine.OfflineReplica:
	default:
		c.setReplica(pr, statemachine.OfflineReplica)
	}
	c.setReplica(pr, statemachine.ReplicaDeletionIneligible)
}

func (c *Controller) setPartition(tp TP, to statemachine.PartitionState) {
	if err := c.cc.sm.SetPartition(tp, to); err != nil {
		c.lg.Error("controller state machine", "err", err)
	}
}

func (c *Controller) setReplica(pr statemachine.PartitionReplica, to statemachine.ReplicaState) {
	if err := c.cc.sm.SetReplica(pr, to); err != nil {
		c.lg.Error("controller state machine", "err", err)
	}
}
