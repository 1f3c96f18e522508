package api

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/security/acl"
)

// JoinGroup: v0-9
//
// Behavior:
// * The classic rebalance protocol (broker/group): the answer comes when
//   the join phase ends (all members rejoined, the rebalance timeout, or
//   group.initial.rebalance.delay.ms for a new group); no handler
//   goroutine waits, the group's timer or another member's request sends
//   it
// * v4+: a new dynamic member gets MEMBER_ID_REQUIRED with its member id
//   (clientId-uuid) and joins again with it
// * Static members (v5+ group instance id) that restart within their
//   session keep their assignment; the old member id is fenced
//   (FENCED_INSTANCE_ID)
// * Errors: INVALID_SESSION_TIMEOUT, INCONSISTENT_GROUP_PROTOCOL,
//   UNKNOWN_MEMBER_ID, GROUP_MAX_SIZE_REACHED, NOT_COORDINATOR,
//   COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID (empty group id)
//
// Version notes:
// * v1: rebalance timeout (v0: the session timeout); v2: throttle
// * v4: member id required; v5: group instance id; v6: flexible
// * v7: protocol type and name in the response; v8: reason (logged at
//   Debug); v9: skip assignment (a static leader rejoining a stable group)

func (h *Handler) handleJoinGroup(c *call) {
	req := c.req.(*kmsg.JoinGroupRequest)
	respond := func(r group.JoinResult) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.MemberID = r.MemberID
		resp.Generation = r.Generation
		if r.Err != nil {
			resp.ErrorCode = r.Err.Code
		} else {
			pt, p := r.ProtocolType, r.Protocol
			resp.ProtocolType, resp.Protocol = &pt, &p
			resp.LeaderID = r.Leader
			resp.SkipAssignment = r.SkipAssignment
			for _, m := range r.Members {
				rm := kmsg.NewJoinGroupResponseMember()
				rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
				resp.Members = append(resp.Members, rm)
			}
		}
		if c.version < 7 && resp.Protocol == nil {
			empty := ""
			resp.Protocol = &empty
		}
		c.respond(resp)
	}
	if !c.authorize(acl.Read, acl.Group, req.Group) {
		respond(group.JoinResult{Err: kerr.GroupAuthorizationFailed, MemberID: req.MemberID, Generation: -1})
		return
	}
	if req.Group == "" {
		respond(group.JoinResult{Err: errInvalidGroupID, MemberID: req.MemberID, Generation: -1})
		return
	}
	rebalance := req.RebalanceTimeoutMillis
	if c.version == 0 {
		rebalance = req.SessionTimeoutMillis
	}
	jr := group.JoinRequest{
		MemberID:             req.MemberID,
		InstanceID:           req.InstanceID,
		ClientID:             clientID(c.r),
		ClientHost:           "/" + hostOf(c),
		ProtocolType:         req.ProtocolType,
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:     time.Duration(rebalance) * time.Millisecond,
		RequireKnownMemberID: c.version >= 4,
	}
	if req.MemberID == "" {
		jr.NewMemberID = clientID(c.r) + "-" + uuidString()
		if req.InstanceID != nil {
			jr.NewMemberID = *req.InstanceID + "-" + uuidString()
		}
	}
	for _, p := range req.Protocols {
		// Request bytes alias the frame, which is reused after the
		// response; the group keeps them.
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	if req.Reason != nil {
		h.lg.Debug("join group", "group", req.Group, "member", req.MemberID, "reason", *req.Reason)
	}
	h.cfg.Groups.Join(req.Group, jr, respond)
}

// hostOf is the client's IP address, as Kafka records it (client host).
func hostOf(c *call) string { return remoteHost(c.r) }
