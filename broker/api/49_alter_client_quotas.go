package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
)

// AlterClientQuotas: v0-1
//
// Behavior:
// * Served by any broker, as Kafka's ZK-mode brokers write through
//   AdminZkClient and its clients send it to any broker, and as qk's
//   AlterConfigs writes topic and broker configs: the write is a
//   versioned read-modify-write of one node (metadata.UpdateEntityConfig),
//   so two brokers altering the same entity never lose either change,
//   and no controller state is involved
// * Each entry's entity is a user, a client id, or a user and a client id,
//   each named or the default (a null name): stored at
//   /config/users/<user>, /config/users/<user>/clients/<client-id> or
//   /config/clients/<client-id>, sanitized as Kafka's Sanitizer, with a
//   /config/changes notification naming the entity path so every broker's
//   cache reloads the quotas. Other keys of the node (a user's SCRAM
//   credentials) are kept
// * Keys: producer_byte_rate and consumer_byte_rate (whole numbers,
//   stored as longs), request_percentage and controller_mutation_rate
//   (stored as doubles). Per entry, INVALID_REQUEST for: no entity, an
//   empty name, an entity type given twice, an unknown entity type, an
//   "ip" entity (qk stores no ip quotas), an unknown key (for removals
//   too: Kafka's ZK mode would remove any key, a SCRAM credential
//   included), a byte rate that is not whole, a negative or non-finite
//   value. A failing entry changes nothing; the others are applied
// * validate_only checks everything and writes nothing
//
// Version notes:
// * v1: flexible

func (h *Handler) handleAlterClientQuotas(c *call) {
	req := c.req.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	wrote := false
	authErr := c.clusterAuthorized(acl.AlterConfigs)
	for _, entry := range req.Entries {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		for _, e := range entry.Entity {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = e.Type, e.Name
			r.Entity = append(r.Entity, re)
		}
		var w bool
		err := authErr
		if err == nil {
			w, err = h.alterClientQuota(ctx, entry, req.ValidateOnly)
		}
		wrote = wrote || w
		if err != nil {
			r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Entries = append(resp.Entries, r)
	}
	if wrote {
		if err := h.cfg.Cache.Sync(ctx); err != nil {
			h.lg.Warn("cache sync after client quota change", "err", err)
		}
	}
	c.respond(resp)
}

// quotaEntity parses a request's entity as Kafka's
// parseAndSanitizeQuotaEntity.
func quotaEntity(components []kmsg.AlterClientQuotasRequestEntryEntity) (clientquota.Entity, error) {
	var e clientquota.Entity
	for _, comp := range components {
		p := clientquota.Default
		if comp.Name != nil {
			if *comp.Name == "" {
				return e, invalidRequest(fmt.Sprintf("Empty %s not supported", comp.Type))
			}
			p = clientquota.Named(*comp.Name)
		}
		var dst *clientquota.Part
		switch comp.Type {
		case quotaEntityUser:
			dst = &e.User
		case quotaEntityClientID:
			dst = &e.Client
		case quotaEntityIP:
			return e, invalidRequest("qk does not support ip quota entities")
		default:
			return e, invalidRequest(fmt.Sprintf("Unhandled client quota entity type: %s", comp.Type))
		}
		if dst.Present() {
			return e, invalidRequest(fmt.Sprintf("Duplicate %s entity type in client quota entity", comp.Type))
		}
		*dst = p
	}
	if err := e.Valid(); err != nil {
		return e, quotaRequestError(err)
	}
	return e, nil
}

// alterClientQuota validates one entry and, unless validateOnly, writes
// it; wrote says whether the store changed.
func (h *Handler) alterClientQuota(ctx context.Context, entry kmsg.AlterClientQuotasRequestEntry, validateOnly bool) (wrote bool, err error) {
	e, err := quotaEntity(entry.Entity)
	if err != nil {
		return false, err
	}
	type op struct {
		key, value string
		remove     bool
	}
	var ops []op
	for _, o := range entry.Ops {
		if o.Remove {
			if !clientquota.IsQuotaKey(o.Key) {
				return false, invalidRequest("Invalid configuration key " + o.Key)
			}
			ops = append(ops, op{key: o.Key, remove: true})
			continue
		}
		v, err := clientquota.CheckValue(o.Key, o.Value)
		if err != nil {
			return false, quotaRequestError(err)
		}
		ops = append(ops, op{key: o.Key, value: v})
	}
	if validateOnly {
		return false, nil
	}
	entityType, entity := e.Path()
	if _, err := metadata.UpdateEntityConfig(ctx, h.cfg.Store, entityType, entity, func(cfg map[string]string) error {
		for _, o := range ops {
			if o.remove {
				delete(cfg, o.key)
			} else {
				cfg[o.key] = o.value
			}
		}
		return nil
	}); err != nil {
		return false, err
	}
	h.lg.Info("altered client quotas", "entity", entityType+"/"+entity, "ops", len(ops))
	return true, nil
}
