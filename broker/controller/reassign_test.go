package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

// A controller that takes over finishes the reassignments its predecessor
// left in /brokers/topics: one whose target replicas are all in the ISR
// completes at once (the leader, leaving, hands over to the first target
// replica in the ISR; the leaving replica is stopped and deleted), one
// whose new replica has not caught up is listed until the leader's
// AlterPartition takes it into the ISR.
func TestReassignmentResumedAtFailover(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()
	a := startNode(t, st, 0)
	nodes := []*node{a, startNode(t, st, 1), startNode(t, st, 2)}
	sess, err := st.NewSession()
	require.NoError(t, err)
	defer sess.Close()
	// As a controller that died mid-reassignment left them: partition 0
	// moving from broker 0 to brokers 1 and 2 (both in sync already),
	// partition 1 gaining broker 2 (not in sync yet). Written while the
	// controller is held, then it loses /controller: the next one finds
	// them at its failover.
	a.ctrl.mu.Lock()
	_, err = sess.Create(ctx, metadata.TopicPath("mv"), metadata.MarshalTopicAssignment(metadata.TopicAssignment{
		TopicID: metadata.NewUUID(), Partitions: map[int32][]int32{0: {1, 2, 0}, 1: {0, 1, 2}},
		AddingReplicas: map[int32][]int32{0: {1, 2}, 1: {2}}, RemovingReplicas: map[int32][]int32{0: {0}}}), 0)
	require.NoError(t, err)
	for p, isr := range map[int32][]int32{0: {0, 1, 2}, 1: {0, 1}} {
		for _, path := range []string{metadata.TopicPartitionsPath("mv"), metadata.PartitionPath("mv", p)} {
			if _, err := sess.Create(ctx, path, nil, 0); err != nil {
				require.ErrorIs(t, err, metadata.ErrNodeExists)
			}
		}
		_, err = sess.Create(ctx, metadata.PartitionStatePath("mv", p), metadata.MarshalPartitionState(metadata.PartitionState{
			Leader: 0, LeaderEpoch: 3, ISR: isr, ControllerEpoch: 1}), 0)
		require.NoError(t, err)
	}
	require.NoError(t, sess.Delete(ctx, metadata.ControllerPath, metadata.AnyVersion))
	var x *node
	eventually(t, "another controller", func() bool {
		for _, n := range nodes[1:] {
			if n.ctrl.IsActive() {
				x = n
			}
		}
		return x != nil
	})
	a.ctrl.mu.Unlock()
	waitCache(t, x, "partition 0 on brokers 1 and 2, led by 1", func(s *Snapshot) bool {
		p := s.Topics["mv"] != nil && len(s.Topics["mv"].Partitions) == 2
		if !p {
			return false
		}
		p0 := s.Topics["mv"].Partitions[0]
		return len(p0.Replicas) == 2 && p0.Leader == 1 && len(p0.ISR) == 2
	})
	l, err := x.ctrl.ListPartitionReassignments(nil)
	require.NoError(t, err)
	require.Equal(t, []Reassignment{{TP: TP{Topic: "mv", Partition: 1}, Replicas: []int32{0, 1, 2}, Adding: []int32{2}}}, l)
	// The leader takes broker 2 into partition 1's ISR.
	ps, version := stateOf(t, a.sess, "mv", 1)
	res, err := x.ctrl.AlterPartition(ctx, 0, -1, []ISRChange{{TP: TP{Topic: "mv", Partition: 1}, LeaderEpoch: ps.LeaderEpoch,
		PartitionEpoch: version, NewISR: []int32{0, 1, 2}}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	eventually(t, "partition 1 reassigned", func() bool {
		l, err := x.ctrl.ListPartitionReassignments(nil)
		return err == nil && len(l) == 0
	})
	data, _, err := a.sess.Get(ctx, metadata.TopicPath("mv"))
	require.NoError(t, err)
	ta, err := metadata.UnmarshalTopicAssignment(data)
	require.NoError(t, err)
	require.Equal(t, map[int32][]int32{0: {1, 2}, 1: {0, 1, 2}}, ta.Partitions)
	require.Empty(t, ta.AddingReplicas)
	require.Empty(t, ta.RemovingReplicas)
	a.mu.Lock()
	var deleted bool
	for _, r := range a.stopped {
		for _, ts := range r.Topics {
			for _, p := range ts.PartitionStates {
				deleted = deleted || (ts.Topic == "mv" && p.Partition == 0 && p.Delete)
			}
		}
	}
	a.mu.Unlock()
	require.True(t, deleted, "broker 0's replica of partition 0 is deleted")
}
