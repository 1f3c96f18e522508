package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// CreatePartitions: v0-3
//
// Behavior:
// * Served by the controller; other brokers answer NOT_CONTROLLER
// * A topic asked twice: INVALID_REQUEST; unknown: UNKNOWN_TOPIC_OR_PARTITION
// * A count not above the current one: INVALID_PARTITIONS
// * Assignments for the new partitions are honoured (one per new
//   partition, INVALID_REPLICA_ASSIGNMENT otherwise); without them the new
//   partitions are spread like a new topic's, with the topic's replication
//   factor
// * validate_only checks and changes nothing
//
// Version notes:
// * v1: no change; v2: flexible; v3: no change on the wire

func (h *Handler) handleCreatePartitions(c *call) {
	req := c.req.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := c.ctx(req.TimeoutMillis)
	defer cancel()
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	for _, t := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = t.Topic
		var err error
		if count[t.Topic] > 1 {
			err = fmt.Errorf("%w: duplicate topic in request", errInvalidRequest)
		} else if !c.authorize(acl.Alter, acl.Topic, t.Topic) {
			err = kerr.TopicAuthorizationFailed
		} else {
			var assignment [][]int32
			if t.Assignment != nil {
				for _, a := range t.Assignment {
					assignment = append(assignment, a.Replicas)
				}
			}
			var before int32
			if old := h.cfg.Cache.Snapshot().Topics[t.Topic]; old != nil {
				before = int32(len(old.Partitions))
			}
			err = h.cfg.Controller.CreatePartitions(ctx, t.Topic, t.Count, assignment, req.ValidateOnly)
			if err == nil && !req.ValidateOnly {
				err = h.offlineHere(h.cfg.Cache.Snapshot().Topics[t.Topic], before)
			}
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.respond(resp)
}
