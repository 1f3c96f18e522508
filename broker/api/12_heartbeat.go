package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// Heartbeat: v0-4
//
// Behavior:
// * Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to
//   rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID
//   fence stale members; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
//
// Version notes:
// * v1: throttle; v3: group instance id; v4: flexible

func (h *Handler) handleHeartbeat(c *call) {
	req := c.req.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !c.authorize(acl.Read, acl.Group, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	} else if err := h.cfg.Groups.Heartbeat(req.Group, req.MemberID, req.InstanceID, req.Generation); err != nil {
		resp.ErrorCode = errorCode(err)
	}
	c.respond(resp)
}
