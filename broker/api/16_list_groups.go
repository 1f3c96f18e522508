package api

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// ListGroups: v0-5
//
// Behavior:
// * The groups this broker coordinates (clients ask every broker)
// * COORDINATOR_LOAD_IN_PROGRESS while a partition is loading, with the
//   groups loaded so far
// * v4+: states filter (case-insensitive); v5+: types filter: every
//   group here is "classic" (KIP-848 consumer groups are not served)
//
// Version notes:
// * v1: throttle; v3: flexible; v4: states; v5: types

func (h *Handler) handleListGroups(c *call) {
	req := c.req.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	groups, loading := h.cfg.Groups.ListGroups()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	// DESCRIBE on the cluster lists every group, else those the principal
	// may DESCRIBE, as Kafka does.
	everyGroup := c.allowed(acl.Describe, acl.Cluster, acl.ClusterName, false)
	for _, g := range groups {
		if !everyGroup && !c.allowed(acl.Describe, acl.Group, g.ID, false) {
			continue
		}
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, g.State.String()) }) {
			continue
		}
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(s string) bool { return strings.EqualFold(s, "classic") }) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.ID, g.ProtocolType, g.State.String(), "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	c.respond(resp)
}
