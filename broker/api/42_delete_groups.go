package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// DeleteGroups: v0-3
//
// Behavior:
// * An Empty group is deleted: tombstones for its offsets and its
//   metadata are appended to __consumer_offsets
// * Per group: GROUP_ID_NOT_FOUND (no such group), NON_EMPTY_GROUP (it
//   has members), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
//
// Version notes:
// * v1: throttle; v2: flexible; v3: error message

func (h *Handler) handleDeleteGroups(c *call) {
	req := c.req.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		if !c.authorize(acl.Delete, acl.Group, id) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else if err := h.cfg.Groups.DeleteGroup(id); err != nil {
			g.ErrorCode = errorCode(err)
			if c.version >= 3 {
				g.ErrorMessage = errorMessage(err)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	c.respond(resp)
}
