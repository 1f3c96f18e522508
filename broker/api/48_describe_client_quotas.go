package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/security/acl"
)

// DescribeClientQuotas: v0-1
//
// Behavior:
// * Served by any broker, from the metadata store (/config/users,
//   /config/users/<user>/clients, /config/clients) rather than the cache,
//   as Kafka's ZK-mode brokers read ZooKeeper, so a describe right after
//   an alter on another broker sees it
// * One filter component per entity type ("user", "client-id"): EXACT
//   (match is the name), DEFAULT (the <default> entity) or SPECIFIED (any
//   entity with that part); a type without a component matches entities
//   without that part, and with strict only those. Entities without a
//   quota key (a user with SCRAM credentials only) are never listed
// * Errors are the top-level error: an empty entity type, a type given
//   twice, a match string with DEFAULT or SPECIFIED (or none with EXACT),
//   an unknown match type, or "ip" with a user or client-id component are
//   INVALID_REQUEST; other entity types UNSUPPORTED_VERSION. qk stores no
//   ip quotas: an "ip" filter alone matches nothing
// * Entries in entity order (users by name, then the default, then
//   client-only entities), each entity user first; values sorted by key;
//   a default part has a null name
//
// Version notes:
// * v1: flexible

// Client quota entity types on the wire (ClientQuotaEntity).
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// codedError is a Kafka error code with Kafka's message, for the
// response's error message without the code's own text.
type codedError struct {
	code *kerr.Error
	msg  string
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// invalidRequest is INVALID_REQUEST with msg.
func invalidRequest(msg string) error { return &codedError{kerr.InvalidRequest, msg} }

// quotaRequestError turns clientquota's validation errors into
// INVALID_REQUEST with their message.
func quotaRequestError(err error) error {
	for _, s := range []error{clientquota.ErrInvalidEntity, clientquota.ErrInvalidValue} {
		if msg, ok := strings.CutPrefix(err.Error(), s.Error()+": "); ok {
			return invalidRequest(msg)
		}
	}
	return err
}

func (h *Handler) handleDescribeClientQuotas(c *call) {
	req := c.req.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	entries, err := func() ([]kmsg.DescribeClientQuotasResponseEntry, error) {
		if err := c.clusterAuthorized(acl.DescribeConfigs); err != nil {
			return nil, err
		}
		user, client, ipOnly, err := quotaFilters(req.Components)
		if err != nil || ipOnly {
			return nil, err
		}
		q, err := controller.ReadClientQuotas(ctx, h.cfg.Store, h.lg)
		if err != nil {
			return nil, err
		}
		var out []kmsg.DescribeClientQuotasResponseEntry
		for _, e := range q.Describe(user, client, req.Strict) {
			entry := kmsg.NewDescribeClientQuotasResponseEntry()
			for _, p := range []struct {
				typ  string
				part clientquota.Part
			}{{quotaEntityUser, e.User}, {quotaEntityClientID, e.Client}} {
				if !p.part.Present() {
					continue
				}
				re := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				re.Type = p.typ
				if p.part.Kind == clientquota.NamedPart {
					re.Name = kmsg.StringPtr(p.part.Name)
				}
				entry.Entity = append(entry.Entity, re)
			}
			vals := q[e]
			for _, k := range slices.Sorted(maps.Keys(vals)) {
				v := kmsg.NewDescribeClientQuotasResponseEntryValue()
				v.Key, v.Value = k, vals[k]
				entry.Values = append(entry.Values, v)
			}
			out = append(out, entry)
		}
		return out, nil
	}()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
	} else {
		resp.Entries = entries
	}
	c.respond(resp)
}

// quotaFilters checks a request's filter components as Kafka's
// DescribeClientQuotasRequest.filter and describeClientQuotas do, and
// returns the user and client-id filters (nil when absent); ipOnly is an
// "ip" filter alone, which matches nothing here.
func quotaFilters(components []kmsg.DescribeClientQuotasRequestComponent) (user, client *clientquota.Filter, ipOnly bool, err error) {
	ip := false
	for _, comp := range components {
		var f clientquota.Filter
		switch comp.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if comp.Match == nil {
				return nil, nil, false, invalidRequest("Request specified MATCH_TYPE_EXACT, but set match string to null")
			}
			f.Part = clientquota.Named(*comp.Match)
		case kmsg.QuotasMatchTypeDefault:
			if comp.Match != nil {
				return nil, nil, false, invalidRequest("Request specified MATCH_TYPE_DEFAULT, but also specified a match string")
			}
			f.Part = clientquota.Default
		case kmsg.QuotasMatchTypeAny:
			if comp.Match != nil {
				return nil, nil, false, invalidRequest("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string")
			}
			f.Any = true
		default:
			return nil, nil, false, invalidRequest(fmt.Sprintf("Unexpected match type: %d", comp.MatchType))
		}
		switch comp.EntityType {
		case quotaEntityUser:
			if user != nil {
				return nil, nil, false, invalidRequest("Duplicate user filter component entity type")
			}
			user = &f
		case quotaEntityClientID:
			if client != nil {
				return nil, nil, false, invalidRequest("Duplicate client filter component entity type")
			}
			client = &f
		case quotaEntityIP:
			if ip {
				return nil, nil, false, invalidRequest("Duplicate ip filter component entity type")
			}
			ip = true
		case "":
			return nil, nil, false, invalidRequest("Unexpected empty filter component entity type")
		default:
			return nil, nil, false, &codedError{kerr.UnsupportedVersion, fmt.Sprintf("Custom entity type '%s' not supported", comp.EntityType)}
		}
	}
	if ip && (user != nil || client != nil) {
		return nil, nil, false, invalidRequest("Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component.")
	}
	return user, client, ip, nil
}
