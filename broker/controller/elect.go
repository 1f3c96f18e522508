package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/controller/statemachine"
)

// Election types of ElectLeaders.
const (
	ElectPreferred int8 = 0
	ElectUnclean   int8 = 1
)

// ElectLeaders elects leaders as the ElectLeaders API asks (Kafka's
// onReplicaElection): preferred, the first assigned replica where it is
// online (cc.onlineReplicas: live, not shutting down, its log directory
// not failed), in the ISR and not leading already; unclean, any online
// replica for a partition without an online leader. tps nil means every
// partition. Each partition gets nil (elected) or Kafka's error for it:
// ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION.
func (c *Controller) ElectLeaders(ctx context.Context, typ int8, tps []TP) (map[TP]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.electLeadersLocked(ctx, typ, tps)
}

func (c *Controller) electLeadersLocked(ctx context.Context, typ int8, tps []TP) (map[TP]error, error) {
	if !c.active.Load() || c.cc == nil {
		return nil, ErrNotController
	}
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("%w: election type %d", kerr.InvalidRequest, typ)
	}
	cc := c.cc
	if tps == nil {
		tps = cc.allPartitions()
	}
	out := make(map[TP]error, len(tps))
	var writes []stateWrite
	for _, tp := range tps {
		s, ok := cc.states[tp]
		assignment := cc.replicas(tp)
		if !ok || assignment == nil || cc.toDelete[tp.Topic] {
			out[tp] = kerr.UnknownTopicOrPartition
			continue
		}
		switch typ {
		case ElectPreferred:
			if s.Leader == assignment[0] {
				out[tp] = kerr.ElectionNotNeeded
				continue
			}
			leader, ok := statemachine.PreferredReplicaLeader(assignment, s.ISR, cc.onlineReplicas(tp))
			if !ok {
				out[tp] = kerr.PreferredLeaderNotAvailable
				continue
			}
			writes = append(writes, stateWrite{tp: tp, state: s.WithLeader(leader, s.ISR)})
		case ElectUnclean:
			if cc.isReplicaOnline(tp, s.Leader) {
				out[tp] = kerr.ElectionNotNeeded
				continue
			}
			leader, isr, unclean, ok := statemachine.OfflinePartitionLeader(assignment, s.ISR, cc.onlineReplicas(tp), true)
			if !ok {
				out[tp] = kerr.EligibleLeadersNotAvailable
				continue
			}
			n := s.WithLeader(leader, isr)
			if unclean {
				n.LeaderRecoveryState = 1
			}
			writes = append(writes, stateWrite{tp: tp, state: n})
		}
	}
	b := newBatch()
	done := map[TP]bool{}
	for _, w := range c.writeStates(ctx, writes) {
		done[w.tp] = true
		c.setPartition(w.tp, statemachine.OnlinePartition)
		c.tellReplicas(b, w.tp, false)
		out[w.tp] = nil
	}
	for _, w := range writes {
		if !done[w.tp] {
			out[w.tp] = kerr.EligibleLeadersNotAvailable
		}
	}
	c.send(b)
	if len(done) > 0 {
		c.lg.Info("elected leaders", "type", map[int8]string{0: "preferred", 1: "unclean"}[typ], "partitions", len(done))
	}
	return out, nil
}

// rebalanceLoop is auto.leader.rebalance.enable: every
// leader.imbalance.check.interval.seconds the active controller moves
// leadership back to preferred replicas for each broker whose share of
// partitions led by someone else (of those it prefers) is above
// leader.imbalance.per.broker.percentage (Kafka's
// checkAndTriggerAutoLeaderRebalance).
func (c *Controller) rebalanceLoop(every time.Duration, pct func() int, enabled func() bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		if enabled != nil && !enabled() {
			continue
		}
		c.enqueue(func() { c.autoRebalance(pct()) })
	}
}

// autoRebalance runs on the event loop (c.mu held).
func (c *Controller) autoRebalance(pct int) {
	cc := c.cc
	preferring := map[int32][]TP{}
	for _, tp := range cc.allPartitions() {
		r := cc.replicas(tp)
		if len(r) == 0 || cc.toDelete[tp.Topic] || cc.assignmentOf(tp).IsBeingReassigned() {
			continue
		}
		preferring[r[0]] = append(preferring[r[0]], tp)
	}
	var elect []TP
	for _, id := range slices.Sorted(maps.Keys(preferring)) {
		if !cc.isOnline(id) {
			continue
		}
		var imbalanced []TP
		for _, tp := range preferring[id] {
			if s, ok := cc.states[tp]; ok && s.Leader != id {
				imbalanced = append(imbalanced, tp)
			}
		}
		if len(imbalanced)*100 > pct*len(preferring[id]) {
			for _, tp := range imbalanced {
				// A sole replica on a failed log directory stays in its
				// ISR but cannot lead: not asked for every interval.
				if s := cc.states[tp]; slices.Contains(s.ISR, id) && cc.isReplicaOnline(tp, id) {
					elect = append(elect, tp)
				}
			}
		}
	}
	if len(elect) == 0 {
		return
	}
	c.lg.Info("leader imbalance above leader.imbalance.per.broker.percentage; electing preferred leaders", "partitions", len(elect))
	ctx, cancel := c.opCtx()
	defer cancel()
	_, _ = c.electLeadersLocked(ctx, ElectPreferred, elect)
}

// EnableUncleanLeaderElection is Kafka's TopicUncleanLeaderElectionEnable
// event: the operator just allowed unclean elections for topic (by its
// config or the cluster-wide default), so its offline partitions may now
// be led by an out-of-sync replica. The offline
// partitions are elected at once, as Kafka's controller does; without the
// event they would wait for the next broker change, which may never come
// when the only in-sync replica is gone for good. Every broker calls it
// when it sees the config change; only the active controller acts.
func (c *Controller) EnableUncleanLeaderElection(topic string) {
	if !c.active.Load() {
		return
	}
	c.enqueue(func() {
		cc := c.cc
		var tps []TP
		for _, tp := range cc.sm.PartitionsIn(statemachine.OfflinePartition) {
			if tp.Topic == topic && !cc.toDelete[tp.Topic] {
				tps = append(tps, tp)
			}
		}
		if len(tps) == 0 {
			return
		}
		c.lg.Info("unclean leader election enabled; electing offline partitions", "topic", topic, "partitions", len(tps))
		ctx, cancel := c.opCtx()
		defer cancel()
		b := newBatch()
		c.electLeaders(ctx, b, tps)
		c.send(b)
	})
}
