package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
)

// OffsetForLeaderEpoch: v0-4
//
// Behavior:
// * For each partition: the largest epoch <= the one asked for, and the
//   offset where the next epoch starts (the log end offset for the
//   current epoch), from the leader-epoch cache; -1 and -1 when the cache
//   knows nothing (UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET)
// * current_leader_epoch (v2+) fences stale requests:
//   FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
// * UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER as usual
//
// Version notes:
// * v1: leader epoch in the response; v2: current leader epoch, throttle
// * v3: replica id; v4: flexible

func (h *Handler) handleOffsetForLeaderEpoch(c *call) {
	req := c.req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	snap := h.cfg.Cache.Snapshot()
	// A follower (replica id ≥ 0, v3+) needs CLUSTER_ACTION, a client
	// DESCRIBE on each topic.
	follower := c.version >= 3 && req.ReplicaID >= 0
	clusterOK := !follower || c.authorizeCluster(acl.ClusterAction)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		denied := !clusterOK || (!follower && !c.authorize(acl.Describe, acl.Topic, rt.Topic))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := h.cfg.Replicas.Partition(rt.Topic, rp.Partition)
			if err != nil {
				if t, ok := snap.Topics[rt.Topic]; ok && rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions) {
					err = replica.ErrNotLeaderOrFollower
				}
			}
			epoch := int32(-1)
			if c.version >= 2 {
				epoch = rp.CurrentLeaderEpoch
			}
			if err == nil {
				err = p.CheckLeader(epoch)
			}
			if err == nil {
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			} else {
				sp.ErrorCode = errorCode(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.respond(resp)
}
