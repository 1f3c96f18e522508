package api

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/security/acl"
)

// ListPartitionReassignments: v0
//
// Behavior:
// * Served by the controller (NOT_CONTROLLER elsewhere)
// * Null topics: every partition being reassigned; otherwise those named
//   that are (others, and unknown ones, are left out, as Kafka's)
// * Each with its full replica set (target replicas first) and the
//   replicas being added and removed

func (h *Handler) handleListPartitionReassignments(c *call) {
	req := c.req.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var tps []controller.TP
	if req.Topics != nil {
		tps = []controller.TP{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, controller.TP{Topic: t.Topic, Partition: p})
			}
		}
	}
	err := c.clusterAuthorized(acl.Describe)
	var rs []controller.Reassignment
	if err == nil {
		rs, err = h.cfg.Controller.ListPartitionReassignments(tps)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		msg := err.Error()
		resp.ErrorMessage = &msg
		c.respond(resp)
		return
	}
	for _, r := range rs {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != r.TP.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = r.TP.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = r.TP.Partition, r.Replicas, r.Adding, r.Removing
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	c.respond(resp)
}
