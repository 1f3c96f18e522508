package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// DescribeAcls: v0-3
//
// Behavior:
// * Served by any broker from its metadata cache (Snapshot.ACLs), as
//   Kafka's AclAuthorizer.acls answers from its cache; the cache follows
//   /kafka-acl-changes and /kafka-acl-extended-changes
// * Without an authorizer: SECURITY_DISABLED, "No Authorizer is
//   configured on the broker"
// * The filter is Kafka's AclBindingFilter: ANY type, null name,
//   principal and host, ANY operation and permission match all; pattern
//   ANY matches both pattern types by exact name, MATCH the patterns that
//   apply to the name (itself, the literal "*", its prefixes). A filter
//   with an unknown element is INVALID_REQUEST
// * Resources come sorted by type, pattern type and name, entries by
//   principal, host, operation and permission
//
// Version notes:
// * v1: resource pattern types (v0 filters are LITERAL)
// * v2: flexible
// * v3: no change (USER resources, KIP-373)

func (h *Handler) handleDescribeACLs(c *call) {
	req := c.req.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if h.cfg.Authorizer == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, ptrString(securityDisabledMessage)
		c.respond(resp)
		return
	}
	if err := c.clusterAuthorized(acl.Describe); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		c.respond(resp)
		return
	}
	f := acl.Filter{Type: acl.ResourceType(req.ResourceType), Name: req.ResourceName, Pattern: acl.PatternType(req.ResourcePatternType),
		Principal: req.Principal, Host: req.Host, Operation: acl.Operation(req.Operation), Permission: acl.Permission(req.PermissionType)}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = aclError(err)
		c.respond(resp)
		return
	}
	// The ACLs as the store holds them now (see syncCache).
	if err := h.syncCache(c); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		c.respond(resp)
		return
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, b := range h.cfg.Cache.Snapshot().ACLs().Bindings(f) {
		r := b.Resource
		if cur == nil || acl.ResourceType(cur.ResourceType) != r.Type || cur.ResourceName != r.Name || acl.PatternType(cur.ResourcePatternType) != r.Pattern {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(r.Type), r.Name, kmsg.ACLResourcePatternType(r.Pattern)
			resp.Resources = append(resp.Resources, res)
			cur = &resp.Resources[len(resp.Resources)-1]
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = b.Entry.Principal, b.Entry.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
		cur.ACLs = append(cur.ACLs, a)
	}
	c.respond(resp)
}
