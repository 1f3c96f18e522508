package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/controller/statemachine"
	"github.com/qk-project/qk/broker/metadata"
)

// Partition reassignment, as Kafka's controller does it since KIP-455
// (onPartitionReassignment). With the origin replicas ORS and the target
// TRS, the partition's full replica set RS is TRS followed by the origin
// replicas leaving; AR = TRS - ORS are being added, RR = ORS - TRS
// removed.
//
//  1. RS, AR and RR go to /brokers/topics/<topic> (adding_replicas,
//     removing_replicas), so a controller that takes over resumes.
//  2. The leader epoch goes up and every replica of RS is told RS: the
//     replicas of AR start as followers and fetch from the leader.
//  3. When the leader has taken every replica of TRS into the ISR
//     (AlterPartition), the reassignment completes: RS becomes TRS; a
//     leader that is leaving (or down) is replaced by the first target
//     replica in the ISR, otherwise the leader epoch goes up again; the
//     replicas of RR leave the ISR and are stopped and deleted
//     (StopReplica); the assignment without AR and RR is written, the
//     partition removed from /admin/reassign_partitions, and every
//     broker's metadata told.
//
// Acknowledged records are never at risk: the ISR only grows until the
// targets are in it, and the replicas leaving are taken out of it only
// once the replicas staying hold everything it acknowledged.

// Reassignment is a partition being reassigned, as
// ListPartitionReassignments shows it.
type Reassignment struct {
	TP       TP
	Replicas []int32 // the full set, target replicas first
	Adding   []int32
	Removing []int32
}

// AlterPartitionReassignments starts, replaces or cancels reassignments
// (the AlterPartitionReassignments API): targets maps each partition to
// its target replicas, nil to cancel the reassignment in progress. With
// allowRFChange false (v1 of the API asks so), a target of another size
// than the current replica set is refused. Each partition gets nil
// (started) or Kafka's error for it.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, targets map[TP][]int32, allowRFChange bool) (map[TP]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active.Load() || c.cc == nil {
		return nil, ErrNotController
	}
	out := make(map[TP]error, len(targets))
	valid := map[TP][]int32{}
	for _, tp := range sortedTPs(targets) {
		target, err := c.checkReassignment(tp, targets[tp], allowRFChange)
		if err != nil {
			out[tp] = err
			continue
		}
		valid[tp] = target
	}
	b := newBatch()
	for tp, err := range c.triggerReassignments(ctx, b, valid) {
		out[tp] = err
	}
	c.send(b)
	// A reassignment asked through the API replaces one asked through
	// ZooKeeper for the same partition (as Kafka's).
	c.removeFromZKReassignment(ctx, slices.Collect(maps.Keys(valid)))
	return out, nil
}

// ListPartitionReassignments lists the reassignments in progress: of tps,
// or all when tps is nil (partitions not being reassigned are left out,
// unknown ones too, as Kafka's).
func (c *Controller) ListPartitionReassignments(tps []TP) ([]Reassignment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active.Load() || c.cc == nil {
		return nil, ErrNotController
	}
	cc := c.cc
	if tps == nil {
		tps = cc.reassigning()
	}
	var out []Reassignment
	for _, tp := range tps {
		a := cc.assignmentOf(tp)
		if !a.IsBeingReassigned() || cc.toDelete[tp.Topic] {
			continue
		}
		out = append(out, Reassignment{TP: tp, Replicas: slices.Clone(a.Replicas), Adding: slices.Clone(a.Adding),
			Removing: slices.Clone(a.Removing)})
	}
	slices.SortFunc(out, func(a, b Reassignment) int { return statemachine.Compare(a.TP, b.TP) })
	return out, nil
}

// checkReassignment validates one partition's target and returns the
// target to move to (for a cancellation, the origin replicas).
func (c *Controller) checkReassignment(tp TP, target []int32, allowRFChange bool) ([]int32, error) {
	cc := c.cc
	a := cc.assignmentOf(tp)
	switch {
	case cc.toDelete[tp.Topic]:
		return nil, fmt.Errorf("%w: cannot reassign partition %s: its topic is being deleted", kerr.UnknownTopicOrPartition, tp)
	case a.Replicas == nil:
		return nil, fmt.Errorf("%w: partition %s does not exist", kerr.UnknownTopicOrPartition, tp)
	case target == nil && !a.IsBeingReassigned():
		return nil, fmt.Errorf("%w: partition %s is not being reassigned", kerr.NoReassignmentInProgress, tp)
	case target == nil:
		return a.Origin(), nil
	case len(target) == 0:
		return nil, fmt.Errorf("%w: empty replica list specified in partition reassignment", kerr.InvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	var missing []int32
	for _, r := range target {
		if r < 0 {
			return nil, fmt.Errorf("%w: invalid broker id %d in the replica list of %s", kerr.InvalidReplicaAssignment, r, tp)
		}
		if seen[r] {
			return nil, fmt.Errorf("%w: duplicate replica ids in partition reassignment replica list: %v", kerr.InvalidReplicaAssignment, target)
		}
		seen[r] = true
		if !cc.isLive(r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: the proposed assignment contains non-existent brokerIDs: %v", kerr.InvalidReplicaAssignment, missing)
	}
	if origin := a.Origin(); !allowRFChange && len(target) != len(origin) {
		return nil, fmt.Errorf("%w: the replication factor of %s would change from %d to %d, and allowReplicationFactorChange is false",
			kerr.InvalidReplicationFactor, tp, len(origin), len(target))
	}
	return slices.Clone(target), nil
}

// triggerReassignments starts the reassignment of each partition to its
// target (Kafka's maybeTriggerPartitionReassignment); a partition whose
// assignment could not be written gets an error.
func (c *Controller) triggerReassignments(ctx context.Context, b *requestBatch, targets map[TP][]int32) map[TP]error {
	out := map[TP]error{}
	for _, tp := range sortedTPs(targets) {
		if err := c.onPartitionReassignment(ctx, b, tp, targets[tp]); err != nil {
			c.lg.Error("cannot reassign partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			out[tp] = err
		}
	}
	return out
}

// onPartitionReassignment moves tp towards target: the first phase, or,
// when the target replicas are all in the ISR, the completion.
func (c *Controller) onPartitionReassignment(ctx context.Context, b *requestBatch, tp TP, target []int32) error {
	cc := c.cc
	cur := cc.assignmentOf(tp)
	next := cur.ReassignTo(target)
	if !cur.Equal(next) {
		if err := c.writeAssignment(ctx, map[TP]statemachine.ReplicaAssignment{tp: next}); err != nil {
			return err
		}
		cc.setAssignment(tp, next)
		c.lg.Info("reassigning partition", "topic", tp.Topic, "partition", tp.Partition, "target", fmt.Sprint(target),
			"adding", fmt.Sprint(next.Adding), "removing", fmt.Sprint(next.Removing))
		// Replicas an earlier reassignment was adding that this one does
		// not want go at once.
		if unneeded := statemachine.Without(cur.Replicas, next.Replicas); len(unneeded) > 0 {
			c.stopRemovedReplicas(ctx, b, tp, unneeded)
		}
	}
	s, ok := cc.states[tp]
	if !ok {
		// No state yet (a new partition that nobody could lead): the
		// assignment is written; it completes once it is led.
		return nil
	}
	if !statemachine.ReassignmentComplete(next, s.ISR) {
		// Phase one: a new leader epoch, told to every replica of RS; the
		// replicas being added start as followers.
		if err := c.bumpLeaderEpoch(ctx, b, tp); err != nil {
			return err
		}
		for _, r := range next.Adding {
			pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: r}
			if cc.sm.Replica(pr) == statemachine.NonExistentReplica {
				c.setReplica(pr, statemachine.NewReplica)
			}
		}
		return nil
	}
	return c.completeReassignment(ctx, b, tp, next)
}

// completeReassignment is the second phase: every target replica is in
// the ISR.
func (c *Controller) completeReassignment(ctx context.Context, b *requestBatch, tp TP, a statemachine.ReplicaAssignment) error {
	cc := c.cc
	target := a.Target()
	s := cc.states[tp]
	// The leader first: a leader that is leaving or down hands over to a
	// target replica in the ISR; without one the reassignment waits.
	var leaderWrite *stateWrite
	if !slices.Contains(target, s.Leader) || !cc.isReplicaOnline(tp, s.Leader) {
		leader, ok := statemachine.ReassignPartitionLeader(target, s.ISR, cc.onlineReplicas(tp))
		if !ok {
			c.lg.Warn("reassignment cannot complete yet: no target replica is live and in the ISR",
				"topic", tp.Topic, "partition", tp.Partition, "target", fmt.Sprint(target), "isr", fmt.Sprint(s.ISR))
			return nil
		}
		leaderWrite = &stateWrite{tp: tp, state: s.WithLeader(leader, s.ISR)}
	} else {
		n := s.WithLeader(s.Leader, s.ISR)
		n.LeaderRecoveryState = s.LeaderRecoveryState
		leaderWrite = &stateWrite{tp: tp, state: n}
	}
	for _, r := range a.Adding {
		pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: r}
		if cc.isLive(r) {
			c.setReplica(pr, statemachine.OnlineReplica)
		}
	}
	done := statemachine.ReplicaAssignment{Replicas: target}
	cc.setAssignment(tp, done)
	if len(c.writeStates(ctx, []stateWrite{*leaderWrite})) == 0 {
		cc.setAssignment(tp, a) // retried on the next ISR change or failover
		return fmt.Errorf("reassignment of %s: cannot write its partition state", tp)
	}
	c.tellReplicas(b, tp, false)
	c.stopRemovedReplicas(ctx, b, tp, a.Removing)
	if err := c.writeAssignment(ctx, map[TP]statemachine.ReplicaAssignment{tp: done}); err != nil {
		// The store keeps AR and RR: a controller that takes over
		// finishes (the target replicas are in the ISR).
		return err
	}
	c.removeFromZKReassignment(ctx, []TP{tp})
	b.addUpdateMetadata(cc.liveIDs(), tp)
	c.lg.Info("reassignment completed", "topic", tp.Topic, "partition", tp.Partition, "replicas", fmt.Sprint(target),
		"leader", cc.states[tp].Leader, "leader_epoch", cc.states[tp].LeaderEpoch)
	if cc.toDelete[tp.Topic] {
		c.enqueue(c.processTopicDeletion)
	}
	return nil
}

// bumpLeaderEpoch writes tp's state with the next leader epoch (same
// leader and ISR) and tells every replica (Kafka's
// updateLeaderEpochAndSendRequest): the replicas learn the new replica
// set under an epoch of its own.
func (c *Controller) bumpLeaderEpoch(ctx context.Context, b *requestBatch, tp TP) error {
	cc := c.cc
	s := cc.states[tp]
	n := s.WithLeader(s.Leader, s.ISR)
	n.LeaderRecoveryState = s.LeaderRecoveryState
	if len(c.writeStates(ctx, []stateWrite{{tp: tp, state: n}})) == 0 {
		return fmt.Errorf("reassignment of %s: cannot write its partition state", tp)
	}
	c.tellReplicas(b, tp, false)
	return nil
}

// stopRemovedReplicas takes replicas that leave tp out of its ISR, stops
// them and deletes their logs (Kafka's
// stopRemovedReplicasOfReassignedPartition). A replica on a broker that is
// down is forgotten here; its log stays on that broker's disk.
func (c *Controller) stopRemovedReplicas(ctx context.Context, b *requestBatch, tp TP, removed []int32) {
	if len(removed) == 0 {
		return
	}
	cc := c.cc
	prs := make([]statemachine.PartitionReplica, 0, len(removed))
	for _, r := range removed {
		prs = append(prs, statemachine.PartitionReplica{TopicPartition: tp, Replica: r})
	}
	c.replicasOffline(ctx, b, prs)
	for _, pr := range prs {
		b.addStopReplica(pr.Replica, tp, true)
		if cc.isLive(pr.Replica) {
			c.setReplica(pr, statemachine.ReplicaDeletionStarted)
			c.setReplica(pr, statemachine.ReplicaDeletionSuccessful)
		} else {
			c.setReplica(pr, statemachine.ReplicaDeletionIneligible)
			c.lg.Warn("replica removed by a reassignment while its broker is down; its log stays there",
				"topic", tp.Topic, "partition", tp.Partition, "broker_id", pr.Replica)
			continue
		}
		c.setReplica(pr, statemachine.NonExistentReplica)
	}
}

// writeAssignment writes new assignments of partitions of one or more
// topics to /brokers/topics/<topic>, read-modify-write with
// compare-and-set (another tool may have added partitions meanwhile),
// fenced by the controller epoch.
func (c *Controller) writeAssignment(ctx context.Context, as map[TP]statemachine.ReplicaAssignment) error {
	byTopic := map[string][]TP{}
	for tp := range as {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		data, stat, err := c.store.Get(ctx, metadata.TopicPath(topic))
		if err != nil {
			return fmt.Errorf("read assignment of %s: %w", topic, err)
		}
		ta, err := metadata.UnmarshalTopicAssignment(data)
		if err != nil {
			return err
		}
		for _, tp := range byTopic[topic] {
			a := as[tp]
			ta.Partitions[tp.Partition] = a.Replicas
			ta.AddingReplicas[tp.Partition] = a.Adding
			ta.RemovingReplicas[tp.Partition] = a.Removing
		}
		if _, err := c.multi(ctx, metadata.SetOp(metadata.TopicPath(topic), metadata.MarshalTopicAssignment(ta), stat.Version)); err != nil {
			return fmt.Errorf("write assignment of %s: %w", topic, err)
		}
	}
	return nil
}

// processZKReassignment reads /admin/reassign_partitions, where Kafka's
// tools before 2.4 (and scripts) ask for reassignments, and starts them
// (Kafka's ZkPartitionReassignment). The node stays until every partition
// in it completed; one that cannot be reassigned is dropped from it.
func (c *Controller) processZKReassignment() {
	ctx, cancel := c.opCtx()
	defer cancel()
	if err := c.watch(metadata.ReassignPartitionsPath, metadata.WatchExists, c.processZKReassignment); err != nil {
		c.retryLater("watch reassignments", err, c.processZKReassignment)
		return
	}
	data, _, err := c.store.Get(ctx, metadata.ReassignPartitionsPath)
	if errors.Is(err, metadata.ErrNoNode) {
		return
	}
	if err != nil {
		c.retryLater("read reassignments", err, c.processZKReassignment)
		return
	}
	entries, err := metadata.UnmarshalReassignment(data)
	if err != nil {
		c.lg.Error("unreadable "+metadata.ReassignPartitionsPath+"; removed", "err", err)
		_ = c.deleteZKReassignment(ctx)
		return
	}
	cc := c.cc
	targets := map[TP][]int32{}
	var failed []TP
	for _, e := range entries {
		tp := TP{Topic: e.Topic, Partition: e.Partition}
		if e.Replicas == nil {
			e.Replicas = []int32{} // null replicas cannot cancel here: refused as empty
		}
		target, err := c.checkReassignment(tp, e.Replicas, true)
		if err != nil {
			c.lg.Warn("reassignment through ZooKeeper refused", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			failed = append(failed, tp)
			continue
		}
		// Asked again while already moving to the same target: nothing
		// to start (the node is written back by tools).
		if a := cc.assignmentOf(tp); a.IsBeingReassigned() && slices.Equal(a.Target(), target) {
			continue
		}
		targets[tp] = target
	}
	b := newBatch()
	for tp := range c.triggerReassignments(ctx, b, targets) {
		failed = append(failed, tp)
	}
	c.send(b)
	// Entries already complete (or refused) leave the node.
	for _, e := range entries {
		tp := TP{Topic: e.Topic, Partition: e.Partition}
		if _, asked := targets[tp]; !asked && !slices.Contains(failed, tp) && !cc.assignmentOf(tp).IsBeingReassigned() {
			failed = append(failed, tp)
		}
	}
	c.removeFromZKReassignment(ctx, failed)
}

// removeFromZKReassignment drops partitions from /admin/reassign_partitions
// (completed, refused, or overridden through the API), and the node once
// it is empty.
func (c *Controller) removeFromZKReassignment(ctx context.Context, tps []TP) {
	if len(tps) == 0 {
		return
	}
	data, stat, err := c.store.Get(ctx, metadata.ReassignPartitionsPath)
	if errors.Is(err, metadata.ErrNoNode) {
		return
	}
	if err != nil {
		c.lg.Warn("cannot read "+metadata.ReassignPartitionsPath, "err", err)
		return
	}
	entries, err := metadata.UnmarshalReassignment(data)
	if err != nil {
		_ = c.deleteZKReassignment(ctx)
		return
	}
	var keep []metadata.PartitionReassignment
	for _, e := range entries {
		if !slices.Contains(tps, TP{Topic: e.Topic, Partition: e.Partition}) {
			keep = append(keep, e)
		}
	}
	switch {
	case len(keep) == len(entries):
		return
	case len(keep) == 0:
		err = c.deleteZKReassignment(ctx)
	default:
		_, err = c.multi(ctx, metadata.SetOp(metadata.ReassignPartitionsPath, metadata.MarshalReassignment(keep), stat.Version))
	}
	if err != nil {
		c.lg.Warn("cannot update "+metadata.ReassignPartitionsPath, "err", err)
	}
}

func (c *Controller) deleteZKReassignment(ctx context.Context) error {
	_, err := c.multi(ctx, metadata.DeleteOp(metadata.ReassignPartitionsPath, metadata.AnyVersion))
	if errors.Is(err, metadata.ErrNoNode) {
		return nil
	}
	return err
}

// resumeReassignments continues, after a failover, the reassignments the
// assignments in the store show in progress and those asked through
// ZooKeeper meanwhile (Kafka's initializePartitionReassignments).
func (c *Controller) resumeReassignments(ctx context.Context, b *requestBatch) {
	cc := c.cc
	targets := map[TP][]int32{}
	for _, tp := range cc.reassigning() {
		if !cc.toDelete[tp.Topic] {
			targets[tp] = cc.assignmentOf(tp).Target()
		}
	}
	if len(targets) > 0 {
		c.lg.Info("resuming partition reassignments", "partitions", len(targets))
	}
	c.triggerReassignments(ctx, b, targets)
	c.enqueue(c.processZKReassignment)
}

// onReassigningISRChange completes the reassignments of partitions whose
// ISR now holds every target replica (Kafka's
// PartitionReassignmentIsrChange).
func (c *Controller) onReassigningISRChange(tps []TP) {
	cc := c.cc
	var ready []TP
	for _, tp := range tps {
		a := cc.assignmentOf(tp)
		if s, ok := cc.states[tp]; ok && a.IsBeingReassigned() && statemachine.ReassignmentComplete(a, s.ISR) {
			ready = append(ready, tp)
		}
	}
	if len(ready) == 0 {
		return
	}
	ctx, cancel := c.opCtx()
	defer cancel()
	b := newBatch()
	for _, tp := range ready {
		if err := c.completeReassignment(ctx, b, tp, cc.assignmentOf(tp)); err != nil {
			c.lg.Error("cannot complete reassignment", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
	}
	c.send(b)
}

// abandonReassignments ends the reassignments of a topic being deleted:
// every replica of the full set is deleted with it (Kafka instead holds
// the deletion until they complete; the outcome is the same, sooner).
func (c *Controller) abandonReassignments(ctx context.Context, topic string) {
	cc := c.cc
	var tps []TP
	for _, tp := range cc.partitions(topic) {
		if a := cc.assignmentOf(tp); a.IsBeingReassigned() {
			cc.setAssignment(tp, statemachine.ReplicaAssignment{Replicas: a.Replicas})
			tps = append(tps, tp)
		}
	}
	if len(tps) > 0 {
		c.lg.Info("reassignments abandoned: their topic is being deleted", "topic", topic, "partitions", len(tps))
		c.removeFromZKReassignment(ctx, tps)
	}
}
