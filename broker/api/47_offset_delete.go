package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/security/acl"
)

// OffsetDelete: v0
//
// Behavior:
// * Deletes committed offsets with tombstones; allowed for an Empty
//   group, and for partitions of topics the members of an active consumer
//   group do not subscribe to (else GROUP_SUBSCRIBED_TO_TOPIC per
//   partition)
// * Group errors: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (active, not a
//   "consumer" group), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS

func (h *Handler) handleOffsetDelete(c *call) {
	req := c.req.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// DELETE on the group, READ on each topic (Kafka's OffsetDelete);
	// refused topics are left out of the deletion.
	if !c.authorize(acl.Delete, acl.Group, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		c.respond(resp)
		return
	}
	ta := c.topicAuth(acl.Read)
	var tps []group.TopicPartition
	for _, t := range req.Topics {
		if !ta.ok(t.Topic) {
			continue
		}
		for _, p := range t.Partitions {
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	errs, err := h.cfg.Groups.DeleteOffsets(req.Group, tps)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		c.respond(resp)
		return
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		denied := !ta.ok(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if denied {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.ErrorCode = errorCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	c.respond(resp)
}
