package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/controller/statemachine"
)

// ISRChange is one partition's ISR change asked by its leader
// (AlterPartition, KIP-497).
type ISRChange struct {
	TP             TP
	TopicID        [16]byte // AlterPartition v2+ names topics by id
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// ISRResult is the controller's answer for one partition: the state now
// in the store, or why the change was refused.
type ISRResult struct {
	TP    TP
	Err   error // a kerr error, nil when applied (or already so)
	State statemachine.LeaderAndIsr
}

// AlterPartition applies ISR changes from the leader broker (Kafka's
// processAlterPartition): each is checked against the controller's state
// (the broker leads at that leader epoch, the partition epoch is the
// current one, the new ISR holds the leader, only assigned replicas, and
// no broker that is down or shutting down, nor a replica on a failed log
// directory, joins), written with compare-and-set, and told to every
// broker's metadata. The leader learns its new ISR and partition epoch
// from the answer. Kafka chose this over leaders writing ZooKeeper
// themselves (/isr_change_notification) so that the controller stays the
// only writer of partition states, each write fenced by its epoch, and
// the leader knows at once whether its change took.
func (c *Controller) AlterPartition(ctx context.Context, brokerID int32, brokerEpoch int64, changes []ISRChange) ([]ISRResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active.Load() || c.cc == nil {
		return nil, ErrNotController
	}
	cc := c.cc
	lb, ok := cc.live[brokerID]
	if !ok || (brokerEpoch != -1 && brokerEpoch < lb.epoch) {
		return nil, ErrStaleBrokerEpoch
	}
	byID := map[[16]byte]string{}
	for name, t := range cc.topics {
		byID[t.id] = name
	}
	results := make([]ISRResult, len(changes))
	var writes []stateWrite
	index := map[TP]int{}
	for i, ch := range changes {
		tp := ch.TP
		if ch.TopicID != ([16]byte{}) {
			tp.Topic = byID[ch.TopicID]
		}
		results[i].TP = tp
		s, ok := cc.states[tp]
		switch {
		case !ok || cc.toDelete[tp.Topic]:
			results[i].Err = kerr.UnknownTopicOrPartition
		case s.Leader != brokerID:
			results[i].Err = kerr.NotLeaderForPartition
		case ch.LeaderEpoch < s.LeaderEpoch:
			results[i].Err = kerr.FencedLeaderEpoch
		case ch.LeaderEpoch > s.LeaderEpoch:
			results[i].Err = kerr.UnknownLeaderEpoch
		case ch.PartitionEpoch < s.PartitionEpoch:
			results[i].Err = kerr.InvalidUpdateVersion
		case ch.PartitionEpoch > s.PartitionEpoch:
			results[i].Err = kerr.InvalidUpdateVersion
		default:
			results[i].Err = c.checkNewISR(tp, s, ch.NewISR)
		}
		if results[i].Err != nil {
			results[i].State = s
			continue
		}
		if sameMembers(s.ISR, ch.NewISR) {
			results[i].State = s // already so: idempotent
			continue
		}
		n := s
		n.ISR = slices.Clone(ch.NewISR)
		writes = append(writes, stateWrite{tp: tp, state: n})
		index[tp] = i
	}
	b := newBatch()
	done := map[TP]bool{}
	for _, w := range c.writeStates(ctx, writes) {
		done[w.tp] = true
		results[index[w.tp]].State = cc.states[w.tp]
		b.addUpdateMetadata(cc.liveIDs(), w.tp)
		c.lg.Info("ISR changed", "topic", w.tp.Topic, "partition", w.tp.Partition, "isr", w.state.ISR,
			"leader", w.state.Leader, "leader_epoch", w.state.LeaderEpoch, "partition_epoch", cc.states[w.tp].PartitionEpoch)
	}
	var reassigning []TP
	for tp := range done {
		if cc.assignmentOf(tp).IsBeingReassigned() {
			reassigning = append(reassigning, tp)
		}
	}
	if len(reassigning) > 0 {
		slices.SortFunc(reassigning, statemachine.Compare)
		c.enqueue(func() { c.onReassigningISRChange(reassigning) })
	}
	for tp, i := range index {
		if !done[tp] {
			// The write failed (the state moved under it, or the store):
			// the leader retries with the state it learns.
			results[i].Err = kerr.InvalidUpdateVersion
			results[i].State = cc.states[tp]
		}
	}
	c.send(b)
	return results, nil
}

// checkNewISR validates a leader's proposed ISR.
func (c *Controller) checkNewISR(tp TP, s statemachine.LeaderAndIsr, isr []int32) error {
	cc := c.cc
	if !slices.Contains(isr, s.Leader) {
		return kerr.InvalidRequest
	}
	replicas := cc.replicas(tp)
	seen := map[int32]bool{}
	for _, r := range isr {
		if seen[r] || !slices.Contains(replicas, r) {
			return kerr.InvalidRequest
		}
		seen[r] = true
		// A replica joining must be up, not leaving and not on a failed
		// log directory (Kafka's isReplicaOnline; INELIGIBLE_REPLICA,
		// KIP-841).
		if !slices.Contains(s.ISR, r) && !cc.isReplicaOnline(tp, r) {
			return kerr.IneligibleReplica
		}
	}
	return nil
}

func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
