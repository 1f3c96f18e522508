package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/security/acl"
)

// FindCoordinator: v0-6
//
// Behavior:
// * Key type 0 (group): the leader of the group's __consumer_offsets
//   partition, abs(javaHashCode(group)) % offsets.topic.num.partitions;
//   the topic is created on first use (compacted, internal)
// * Key type 1 (transaction) and others: COORDINATOR_NOT_AVAILABLE (qk
//   has no transaction coordinator yet)
// * No coordinator yet (no leader, topic being created elsewhere):
//   COORDINATOR_NOT_AVAILABLE, which clients retry
//
// Version notes:
// * v1: key type, error message; v3: flexible
// * v4: batched keys (coordinators array); v6: share key type (refused)

func (h *Handler) handleFindCoordinator(c *call) {
	req := c.req.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	if c.version < 4 {
		b, err := c.coordinator(ctx, req.CoordinatorKey, req.CoordinatorType)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			resp.ErrorMessage = errorMessage(err)
			resp.NodeID = -1
		} else {
			e, _ := b.Endpoint(c.r.Listener)
			resp.NodeID, resp.Host, resp.Port = b.ID, e.Host, e.Port
		}
		c.respond(resp)
		return
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		b, err := c.coordinator(ctx, key, req.CoordinatorType)
		if err != nil {
			rc.ErrorCode = errorCode(err)
			rc.ErrorMessage = errorMessage(err)
			rc.NodeID = -1
		} else {
			e, _ := b.Endpoint(c.r.Listener)
			rc.NodeID, rc.Host, rc.Port = b.ID, e.Host, e.Port
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	c.respond(resp)
}

// coordinator is the handler's coordinator lookup behind Kafka's check:
// DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func (c *call) coordinator(ctx context.Context, key string, typ int8) (controller.Broker, error) {
	switch typ {
	case 0:
		if !c.authorize(acl.Describe, acl.Group, key) {
			return controller.Broker{}, kerr.GroupAuthorizationFailed
		}
	case 1:
		if !c.authorize(acl.Describe, acl.TransactionalID, key) {
			return controller.Broker{}, kerr.TransactionalIDAuthorizationFailed
		}
	}
	return c.h.coordinator(ctx, key, typ, c.r.Listener)
}
