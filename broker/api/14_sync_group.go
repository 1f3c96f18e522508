package api

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/security/acl"
)

// SyncGroup: v0-5
//
// Behavior:
// * The leader's assignments are handed to every member of the
//   generation at once and the group becomes Stable; followers' requests
//   wait for the leader's (no handler goroutine waits: the leader's
//   request or the group's timer answers them)
// * In a Stable group a member gets its current assignment again
// * Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
//   REBALANCE_IN_PROGRESS, INCONSISTENT_GROUP_PROTOCOL (v5 protocol
//   type/name that differ from the group's)
//
// Version notes:
// * v1: throttle; v3: group instance id; v4: flexible; v5: protocol type
//   and name in request and response

func (h *Handler) handleSyncGroup(c *call) {
	req := c.req.(*kmsg.SyncGroupRequest)
	if !c.authorize(acl.Read, acl.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode, resp.MemberAssignment = kerr.GroupAuthorizationFailed.Code, []byte{}
		c.respond(resp)
		return
	}
	sr := group.SyncRequest{MemberID: req.MemberID, InstanceID: req.InstanceID, Generation: req.Generation,
		ProtocolType: req.ProtocolType, Protocol: req.Protocol, Assignments: map[string][]byte{}}
	for _, a := range req.GroupAssignment {
		sr.Assignments[a.MemberID] = bytes.Clone(a.MemberAssignment) // aliases the frame
	}
	h.cfg.Groups.Sync(req.Group, sr, func(r group.SyncResult) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		if r.Err != nil {
			resp.ErrorCode = r.Err.Code
			resp.MemberAssignment = []byte{}
		} else {
			pt, p := r.ProtocolType, r.Protocol
			resp.ProtocolType, resp.Protocol = &pt, &p
			resp.MemberAssignment = r.Assignment
		}
		c.respond(resp)
	})
}
