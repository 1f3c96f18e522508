package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/security/acl"
)

// LeaveGroup: v0-5
//
// Behavior:
// * Removes members (a rebalance follows for the rest); a static member
//   leaves by its instance id, FENCED_INSTANCE_ID when the member id is
//   not the instance's current one
// * Group errors (top level): UNKNOWN_MEMBER_ID for an unknown group,
//   NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS; v3+ member errors per
//   member (v0-2: the one member's error at the top level)
//
// Version notes:
// * v1: throttle; v3: batched members with instance ids; v4: flexible;
//   v5: reason (logged at Debug)

func (h *Handler) handleLeaveGroup(c *call) {
	req := c.req.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !c.authorize(acl.Read, acl.Group, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		c.respond(resp)
		return
	}
	var members []group.LeaveMember
	if c.version < 3 {
		members = []group.LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			members = append(members, group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
			if m.Reason != nil {
				h.lg.Debug("leave group", "group", req.Group, "member", m.MemberID, "reason", *m.Reason)
			}
		}
	}
	errs, err := h.cfg.Groups.Leave(req.Group, members)
	switch {
	case err != nil:
		resp.ErrorCode = errorCode(err)
	case c.version < 3:
		resp.ErrorCode = errorCode(errs[0])
	default:
		for i, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
			rm.ErrorCode = errorCode(errs[i])
			resp.Members = append(resp.Members, rm)
		}
	}
	c.respond(resp)
}
