package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
)

// DeleteRecords: v0-2
//
// Behavior:
// * Moves the log start offset of each partition to the given offset
//   (-1: the high watermark); segments wholly below it go at the next
//   retention pass. An offset above the high watermark is
//   OFFSET_OUT_OF_RANGE; a lower one than the current start changes
//   nothing
// * Answers the new low watermark (the leader's log start offset: on a
//   single node every replica is the leader)
// * UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER as usual
//
// Version notes:
// * v1: no change; v2: flexible

func (h *Handler) handleDeleteRecords(c *call) {
	req := c.req.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	snap := h.cfg.Cache.Snapshot()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		denied := !c.authorize(acl.Delete, acl.Topic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
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
			if err == nil {
				err = p.CheckLeader(-1)
			}
			if err == nil {
				off := rp.Offset
				if off == -1 {
					off = p.HighWatermark()
				}
				sp.LowWatermark, err = p.Log().DeleteRecordsBefore(off)
				if err == nil {
					h.lg.Info("deleted records", "topic", rt.Topic, "partition", rp.Partition, "offset", sp.LowWatermark)
				}
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				sp.LowWatermark = -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.respond(resp)
}
