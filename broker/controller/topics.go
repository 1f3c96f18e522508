package controller

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/qk-project/qk/broker/controller/statemachine"
	"github.com/qk-project/qk/broker/metadata"
)

// processTopicChange picks up topics created in the store, by this
// controller, another broker's auto-creation or another tool, and those
// removed behind its back (Kafka's TopicChange).
func (c *Controller) processTopicChange() {
	ctx, cancel := c.opCtx()
	defer cancel()
	if err := c.watch(metadata.BrokerTopicsPath, metadata.WatchChildren, c.processTopicChange); err != nil {
		c.retryLater("watch topics", err, c.processTopicChange)
		return
	}
	names, _, err := c.store.Children(ctx, metadata.BrokerTopicsPath)
	if err != nil {
		c.retryLater("list topics", err, c.processTopicChange)
		return
	}
	cc := c.cc
	b := newBatch()
	for _, name := range slices.Sorted(maps.Keys(cc.topics)) {
		if !slices.Contains(names, name) {
			c.lg.Warn("topic removed from the store by another tool", "topic", name)
			c.dropFromBrokers(name)
			c.forgetTopic(name)
		}
	}
	var created []TP
	for _, name := range names {
		if _, ok := cc.topics[name]; ok {
			continue
		}
		if err := c.watchTopic(name); err != nil {
			c.retryLater("watch topic", err, c.processTopicChange)
			return
		}
		t, err := readTopicInfo(ctx, c.store, name)
		if errors.Is(err, metadata.ErrNoNode) {
			continue
		}
		if err != nil {
			c.lg.Error("cannot read new topic", "topic", name, "err", err)
			continue
		}
		cc.topics[name] = t
		// A state node may exist already (written by the broker that
		// created the topic before a failover): read it.
		for _, tp := range cc.partitions(name) {
			if s, ok, err := readState(ctx, c.store, tp); err == nil && ok {
				cc.states[tp] = s
			}
		}
		created = append(created, cc.partitions(name)...)
	}
	c.onNewPartitionCreation(ctx, b, created)
	c.send(b)
}

// dropFromBrokers tells every broker to drop a topic from its metadata
// (UpdateMetadata with LeaderDuringDelete), now, while the context still
// knows its partitions.
func (c *Controller) dropFromBrokers(name string) {
	cc := c.cc
	was := cc.toDelete[name]
	cc.toDelete[name] = true
	b := newBatch()
	b.addUpdateMetadata(cc.liveIDs(), cc.partitions(name)...)
	c.send(b)
	if !was {
		delete(cc.toDelete, name)
	}
}

// forgetTopic drops a topic from the context, returning its partitions.
func (c *Controller) forgetTopic(name string) []TP {
	cc := c.cc
	tps := cc.partitions(name)
	delete(cc.topics, name)
	delete(cc.toDelete, name)
	for _, tp := range tps {
		delete(cc.states, tp)
	}
	cc.sm.Forget(name)
	cc.offlineDirs.ForgetTopic(name)
	c.deleted.Broadcast()
	return tps
}

// processPartitionModification picks up partitions added to a topic's
// assignment (Kafka's PartitionModifications).
func (c *Controller) processPartitionModification(name string) {
	ctx, cancel := c.opCtx()
	defer cancel()
	cc := c.cc
	old, ok := cc.topics[name]
	if !ok {
		return
	}
	if err := c.watchTopic(name); err != nil {
		c.retryLater("watch topic", err, func() { c.processPartitionModification(name) })
		return
	}
	t, err := readTopicInfo(ctx, c.store, name)
	if errors.Is(err, metadata.ErrNoNode) {
		return // deleted: TopicChange handles it
	}
	if err != nil {
		c.lg.Error("cannot read topic", "topic", name, "err", err)
		return
	}
	if cc.toDelete[name] {
		return
	}
	var added []TP
	for p := int32(len(old.assignment)); p < int32(len(t.assignment)); p++ {
		old.assignment[p] = t.assignment[p]
		added = append(added, TP{Topic: name, Partition: p})
	}
	if len(added) == 0 {
		return
	}
	b := newBatch()
	c.onNewPartitionCreation(ctx, b, added)
	c.send(b)
}

// onNewPartitionCreation moves new partitions and their replicas through
// New to Online: each partition gets its first state (created in the
// store), and its replicas their roles (Kafka's onNewPartitionCreation).
func (c *Controller) onNewPartitionCreation(ctx context.Context, b *requestBatch, tps []TP) {
	if len(tps) == 0 {
		return
	}
	cc := c.cc
	for _, tp := range tps {
		c.setPartition(tp, statemachine.NewPartition)
		for _, r := range cc.replicas(tp) {
			c.setReplica(statemachine.PartitionReplica{TopicPartition: tp, Replica: r}, statemachine.NewReplica)
		}
	}
	c.electLeaders(ctx, b, tps)
	for _, tp := range tps {
		for _, r := range cc.replicas(tp) {
			pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: r}
			if cc.isLive(r) {
				c.setReplica(pr, statemachine.OnlineReplica)
			}
		}
	}
}

// processTopicDeletion starts or continues the deletions asked under
// /admin/delete_topics (Kafka's TopicDeletion and TopicDeletionManager):
// every broker drops the topic from its metadata at once; each replica is
// stopped and deleted by its broker (StopReplica), and once all are, the
// topic's nodes go from the store. Replicas on brokers that are down
// wait for them (ReplicaDeletionIneligible).
func (c *Controller) processTopicDeletion() {
	ctx, cancel := c.opCtx()
	defer cancel()
	if err := c.watch(metadata.DeleteTopicsPath, metadata.WatchChildren, c.processTopicDeletion); err != nil {
		c.retryLater("watch topic deletions", err, c.processTopicDeletion)
		return
	}
	names, _, err := c.store.Children(ctx, metadata.DeleteTopicsPath)
	if err != nil {
		c.retryLater("list topic deletions", err, c.processTopicDeletion)
		return
	}
	cc := c.cc
	b := newBatch()
	for _, name := range names {
		if _, ok := cc.topics[name]; !ok || !c.deletionEnabled() {
			if ok {
				c.lg.Warn("topic deletion asked but delete.topic.enable is false; ignored", "topic", name)
				if cc.toDelete[name] {
					delete(cc.toDelete, name)
					b.addUpdateMetadata(cc.liveIDs(), cc.partitions(name)...) // back on the brokers
				}
			}
			_ = c.store.Delete(ctx, metadata.DeleteTopicPath(name), metadata.AnyVersion)
			continue
		}
		if !cc.toDelete[name] {
			cc.toDelete[name] = true
			c.lg.Info("deleting topic", "topic", name)
			c.abandonReassignments(ctx, name)
			// Every broker drops it now (LeaderDuringDelete).
			b.addUpdateMetadata(cc.liveIDs(), cc.partitions(name)...)
		}
		// Offline from now on (also when the deletion resumes after a
		// failover, which loaded it online).
		for _, tp := range cc.partitions(name) {
			if cc.sm.Partition(tp) != statemachine.OfflinePartition {
				c.setPartition(tp, statemachine.OfflinePartition)
			}
		}
		c.startReplicaDeletion(b, name)
	}
	c.send(b)
	for _, name := range names {
		if cc.toDelete[name] {
			c.maybeCompleteDeletion(ctx, name)
		}
	}
}

func (c *Controller) deletionEnabled() bool { return c.deleteEnabled == nil || c.deleteEnabled() }

// startReplicaDeletion sends StopReplica with delete to the live brokers
// holding replicas of topic that are not deleted yet.
func (c *Controller) startReplicaDeletion(b *requestBatch, topic string) {
	cc := c.cc
	for _, tp := range cc.partitions(topic) {
		for _, r := range cc.replicas(tp) {
			pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: r}
			st := cc.sm.Replica(pr)
			switch {
			case st == statemachine.ReplicaDeletionSuccessful || st == statemachine.ReplicaDeletionStarted:
				continue
			case !cc.isLive(r):
				c.deletionIneligible(pr)
				continue
			}
			if st != statemachine.OfflineReplica {
				c.setReplica(pr, statemachine.OfflineReplica)
			}
			c.setReplica(pr, statemachine.ReplicaDeletionStarted)
			b.addStopReplica(r, tp, true)
		}
	}
}

// onReplicasDeleted records a StopReplica's answer from broker id.
func (c *Controller) onReplicasDeleted(id int32, parts map[TP]bool, failed map[TP]bool) {
	cc := c.cc
	topics := map[string]bool{}
	for tp, del := range parts {
		if !del || !cc.toDelete[tp.Topic] {
			continue
		}
		pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: id}
		if cc.sm.Replica(pr) != statemachine.ReplicaDeletionStarted {
			continue
		}
		if failed[tp] {
			c.setReplica(pr, statemachine.ReplicaDeletionIneligible)
			c.deleted.Broadcast() // a DeleteTopic waiting for completion stops waiting
		} else {
			c.setReplica(pr, statemachine.ReplicaDeletionSuccessful)
		}
		topics[tp.Topic] = true
	}
	ctx, cancel := c.opCtx()
	defer cancel()
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		c.maybeCompleteDeletion(ctx, name)
	}
}

// maybeCompleteDeletion removes a topic's nodes once every replica is
// deleted.
func (c *Controller) maybeCompleteDeletion(ctx context.Context, name string) {
	cc := c.cc
	for _, tp := range cc.partitions(name) {
		for _, r := range cc.replicas(tp) {
			if cc.sm.Replica(statemachine.PartitionReplica{TopicPartition: tp, Replica: r}) != statemachine.ReplicaDeletionSuccessful {
				return
			}
		}
	}
	if err := c.deleteTopicNodes(ctx, name); err != nil {
		c.retryLater("delete topic "+name, err, c.processTopicDeletion)
		return
	}
	for _, tp := range cc.partitions(name) {
		for _, r := range cc.replicas(tp) {
			c.setReplica(statemachine.PartitionReplica{TopicPartition: tp, Replica: r}, statemachine.NonExistentReplica)
		}
		c.setPartition(tp, statemachine.NonExistentPartition)
	}
	id := cc.topics[name].id
	c.forgetTopic(name)
	c.lg.Info("deleted topic", "topic", name, "topic_id", metadata.FormatUUID(id))
}

// deleteTopicNodes removes a topic's nodes (states, partitions,
// assignment, config, deletion request) in one fenced Multi.
func (c *Controller) deleteTopicNodes(ctx context.Context, topic string) error {
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
	for _, path := range []string{metadata.TopicPath(topic), metadata.EntityConfigPath(metadata.ConfigTopics, topic), metadata.DeleteTopicPath(topic)} {
		if _, ok, err := c.store.Exists(ctx, path); err != nil {
			return err
		} else if ok {
			ops = append(ops, metadata.DeleteOp(path, metadata.AnyVersion))
		}
	}
	// In order, children first, in Multis ZooKeeper accepts (a request
	// is at most jute.maxbuffer, ~1 MiB: a 10,000-partition topic's
	// 20,000 deletes are not one request). The topic node and the
	// deletion request go in the last one, so an interrupted deletion is
	// resumed from /admin/delete_topics.
	for len(ops) > 0 {
		n := min(len(ops), writeBatch)
		if _, err := c.multi(ctx, ops[:n]...); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// ControlledShutdown moves leadership off a broker that is shutting down
// (Kafka's doControlledShutdown) and returns the partitions it still
// leads: those with other replicas that could not take over. A partition
// whose only replica is on the broker keeps it as leader until it is
// gone. brokerEpoch must be the broker's current registration.
func (c *Controller) ControlledShutdown(ctx context.Context, id int32, brokerEpoch int64) ([]TP, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active.Load() || c.cc == nil {
		return nil, ErrNotController
	}
	cc := c.cc
	lb, ok := cc.live[id]
	if !ok {
		return nil, ErrBrokerNotAvailable
	}
	if brokerEpoch != -1 && brokerEpoch < lb.epoch {
		return nil, ErrStaleBrokerEpoch
	}
	cc.shuttingDown[id] = true
	c.lg.Info("controlled shutdown", "broker_id", id)
	b := newBatch()
	var writes []stateWrite
	var follower []statemachine.PartitionReplica
	for _, tp := range cc.partitionsOn(id) {
		if cc.toDelete[tp.Topic] {
			continue
		}
		s, ok := cc.states[tp]
		if !ok || len(cc.replicas(tp)) < 2 {
			continue
		}
		if s.Leader == id {
			leader, isr, ok := statemachine.ControlledShutdownLeader(cc.replicas(tp), s.ISR, cc.liveReplicas(tp),
				func(b int32) bool { return cc.shuttingDown[b] })
			if ok {
				writes = append(writes, stateWrite{tp: tp, state: s.WithLeader(leader, isr)})
			}
			continue
		}
		follower = append(follower, statemachine.PartitionReplica{TopicPartition: tp, Replica: id})
	}
	for _, w := range c.writeStates(ctx, writes) {
		c.tellReplicas(b, w.tp, false)
	}
	for _, pr := range follower {
		b.addStopReplica(id, pr.TopicPartition, false)
	}
	c.replicasOffline(ctx, b, follower)
	c.send(b)
	var remaining []TP
	for _, tp := range cc.partitionsOn(id) {
		if s, ok := cc.states[tp]; ok && s.Leader == id && len(cc.replicas(tp)) > 1 {
			remaining = append(remaining, tp)
		}
	}
	return remaining, nil
}
