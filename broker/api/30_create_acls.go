package api

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
)

// CreateAcls: v0-3
//
// Behavior:
// * Served by any broker, which writes the metadata store itself, as a
//   ZooKeeper-mode Kafka's AclAuthorizer does: per resource pattern,
//   read /kafka-acl/<Type>/<name> (or /kafka-acl-extended/prefixed/...),
//   add the entries, write it back with a conditional set on the version
//   read (retrying on a conflict), then create a change notification in
//   /kafka-acl-changes or /kafka-acl-extended-changes, which every
//   broker's cache follows. The broker's own cache has the ACLs before
//   it answers
// * Without an authorizer: SECURITY_DISABLED for every creation
// * Each creation is checked as Kafka does (acl.Validate):
//   INVALID_REQUEST for an unknown or ANY resource type, a pattern type
//   other than LITERAL or PREFIXED, an unknown or ANY operation or
//   permission, an empty name or one with "/", a cluster not named
//   kafka-cluster, a principal without "type:"
// * Creating an ACL that exists succeeds and changes nothing
//
// Version notes:
// * v1: resource pattern types (v0 creations are LITERAL)
// * v2: flexible
// * v3: no change (USER resources, KIP-373)

func (h *Handler) handleCreateACLs(c *call) {
	req := c.req.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
	}
	if code, msg := c.aclWriteRefused(); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		c.respond(resp)
		return
	}
	type pending struct {
		entries []acl.Entry
		index   []int
	}
	byResource := map[acl.Resource]*pending{}
	var order []acl.Resource
	for i, cr := range req.Creations {
		b := acl.Binding{
			Resource: acl.Resource{Type: acl.ResourceType(cr.ResourceType), Name: cr.ResourceName, Pattern: acl.PatternType(cr.ResourcePatternType)},
			Entry:    acl.Entry{Principal: cr.Principal, Host: cr.Host, Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.PermissionType)},
		}
		if err := acl.Validate(b); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclError(err)
			continue
		}
		p := byResource[b.Resource]
		if p == nil {
			p = &pending{}
			byResource[b.Resource] = p
			order = append(order, b.Resource)
		}
		p.entries = append(p.entries, b.Entry)
		p.index = append(p.index, i)
	}
	if len(order) == 0 {
		c.respond(resp)
		return
	}
	ctx, cancel := c.ctx(0)
	defer cancel()
	for _, r := range order {
		p := byResource[r]
		before, after, err := metadata.UpdateACLs(ctx, h.cfg.Store, r, func(cur []acl.Entry) []acl.Entry { return append(cur, p.entries...) })
		if err != nil {
			h.lg.Warn("create acls failed", "resource", r.String(), "err", err)
			for _, i := range p.index {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclError(err)
			}
			continue
		}
		if len(after) != len(before) {
			h.lg.Info("created acls", "resource", r.String(), "acls", len(after)-len(before))
		}
	}
	if err := h.cfg.Cache.Sync(ctx); err != nil {
		h.lg.Warn("cache sync after acl change", "err", err)
	}
	c.respond(resp)
}
