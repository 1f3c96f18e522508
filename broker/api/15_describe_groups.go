package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// DescribeGroups: v0-6
//
// Behavior:
// * State, protocol type, protocol (Stable groups only) and members;
//   member metadata and assignments only in a Stable group, as Kafka
// * A group that does not exist is answered as Kafka's classic
//   coordinator does, with state Dead and no error (v0-5); v6 (KIP-1043)
//   adds GROUP_ID_NOT_FOUND with a message
// * NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS per group
//
// Version notes:
// * v1: throttle; v3: authorized operations; v4: group instance id;
//   v5: flexible; v6: error message

func (h *Handler) handleDescribeGroups(c *call) {
	req := c.req.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group = id
		if !c.authorize(acl.Describe, acl.Group, id) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = groupOps
			if h.authorizer() != nil {
				g.AuthorizedOperations = c.authorizedOperations(acl.Group, id)
			}
		}
		d, ok, err := h.cfg.Groups.Describe(id)
		switch {
		case err != nil:
			g.ErrorCode = errorCode(err)
		case !ok:
			g.State = d.State.String()
			if c.version >= 6 {
				g.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " not found."
				g.ErrorMessage = &msg
			}
		default:
			g.State, g.ProtocolType, g.Protocol = d.State.String(), d.ProtocolType, d.Protocol
			for _, m := range d.Members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.ID, m.InstanceID, m.ClientID, m.ClientHost
				rm.ProtocolMetadata, rm.MemberAssignment = orEmpty(m.Metadata), orEmpty(m.Assignment)
				g.Members = append(g.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	c.respond(resp)
}

// groupOps are the group ACL operations reported as authorized: READ,
// DELETE, DESCRIBE (3, 6, 8).
const groupOps = 1<<3 | 1<<6 | 1<<8

func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
