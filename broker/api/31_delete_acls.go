package api

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
)

// DeleteAcls: v0-3
//
// Behavior:
// * Served by any broker, which writes the metadata store itself, as
//   Kafka's AclAuthorizer.deleteAcls: the resource patterns are those of
//   the broker's cache plus those a filter names exactly (a type, a name,
//   LITERAL, PREFIXED or ANY), so ACLs another broker just created are
//   found by an exact filter; a MATCH or wildcard filter sees what the
//   cache has. Per pattern: read, drop the entries some filter matches,
//   write back with a conditional set (the node deleted when its last
//   entry goes), retry on conflict, then a change notification
// * Without an authorizer: SECURITY_DISABLED for every filter
// * Each filter's result lists the ACLs it removed (an ACL matched by
//   several filters is counted for the first); a filter with an unknown
//   element is INVALID_REQUEST; a store failure is the error of each ACL
//   it was removing
//
// Version notes:
// * v1: resource pattern types (v0 filters are LITERAL)
// * v2: flexible
// * v3: no change (USER resources, KIP-373)

func (h *Handler) handleDeleteACLs(c *call) {
	req := c.req.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	if code, msg := c.aclWriteRefused(); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		c.respond(resp)
		return
	}
	filters := make([]acl.Filter, len(req.Filters))
	valid := make([]bool, len(req.Filters))
	candidates := h.cfg.Cache.Snapshot().ACLs().Resources()
	for i, rf := range req.Filters {
		f := acl.Filter{Type: acl.ResourceType(rf.ResourceType), Name: rf.ResourceName, Pattern: acl.PatternType(rf.ResourcePatternType),
			Principal: rf.Principal, Host: rf.Host, Operation: acl.Operation(rf.Operation), Permission: acl.Permission(rf.PermissionType)}
		if err := f.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclError(err)
			continue
		}
		filters[i], valid[i] = f, true
		candidates = append(candidates, f.Resources()...)
	}
	slices.SortFunc(candidates, acl.CompareResources)
	candidates = slices.Compact(candidates)
	ctx, cancel := c.ctx(0)
	defer cancel()
	changed := false
	for _, r := range candidates {
		var matching []int
		for i, f := range filters {
			if valid[i] && f.MatchesResource(r) {
				matching = append(matching, i)
			}
		}
		if len(matching) == 0 {
			continue
		}
		var removed []acl.Entry
		var by []int // the filter that removed each
		_, _, err := metadata.UpdateACLs(ctx, h.cfg.Store, r, func(cur []acl.Entry) []acl.Entry {
			removed, by = removed[:0], by[:0]
			return slices.DeleteFunc(cur, func(e acl.Entry) bool {
				for _, i := range matching {
					if filters[i].MatchesEntry(e) {
						removed, by = append(removed, e), append(by, i)
						return true
					}
				}
				return false
			})
		})
		if err != nil {
			h.lg.Warn("delete acls failed", "resource", r.String(), "err", err)
		} else if len(removed) > 0 {
			changed = true
			h.lg.Info("deleted acls", "resource", r.String(), "acls", len(removed))
		}
		for k, e := range removed {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			if err != nil {
				m.ErrorCode, m.ErrorMessage = aclError(err)
			}
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(r.Type), r.Name, kmsg.ACLResourcePatternType(r.Pattern)
			m.Principal, m.Host = e.Principal, e.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(e.Operation), kmsg.ACLPermissionType(e.Permission)
			resp.Results[by[k]].MatchingACLs = append(resp.Results[by[k]].MatchingACLs, m)
		}
	}
	if changed {
		if err := h.cfg.Cache.Sync(ctx); err != nil {
			h.lg.Warn("cache sync after acl change", "err", err)
		}
	}
	c.respond(resp)
}
