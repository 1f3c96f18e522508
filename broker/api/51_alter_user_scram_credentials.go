package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
	"github.com/qk-project/qk/broker/security/scram"
)

// AlterUserScramCredentials: v0
//
// Behavior:
// * Served by the controller (NOT_CONTROLLER for every user elsewhere),
//   as Kafka's ZK-mode brokers do and as clients route it
// * Upsertions carry the salt and the salted password the client
//   computed (KIP-554); the broker stores salt, stored_key, server_key
//   and iterations in Kafka's format under the user's config key
//   (SCRAM-SHA-256 / SCRAM-SHA-512) in /config/users/<sanitized user>,
//   then announces the change in /config/changes so every broker's cache
//   reloads it
// * Per user, checked in Kafka's order: an empty name
//   UNACCEPTABLE_CREDENTIAL; an unknown mechanism
//   UNSUPPORTED_SASL_MECHANISM; iterations outside [4096, 16384]
//   UNACCEPTABLE_CREDENTIAL; the same user and mechanism twice in the
//   request DUPLICATE_RESOURCE; deleting a credential the user does not
//   have RESOURCE_NOT_FOUND. A failing user changes nothing; the others
//   are applied
// * Deleting a user's last credential leaves its (empty) config node, as
//   Kafka's changeConfigs does
//
// Version notes:
// * v0: flexible

// scramOp is one upsertion or deletion of the request.
type scramOp struct {
	user       string
	mechanism  scram.Mechanism
	delete     bool
	iterations int32
	salt       []byte
	salted     []byte
}

func (h *Handler) handleAlterUserScramCredentials(c *call) {
	req := c.req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	var ops []scramOp
	for _, u := range req.Upsertions {
		ops = append(ops, scramOp{user: u.Name, mechanism: scram.Mechanism(u.Mechanism),
			iterations: u.Iterations, salt: u.Salt, salted: u.SaltedPassword})
	}
	for _, d := range req.Deletions {
		ops = append(ops, scramOp{user: d.Name, mechanism: scram.Mechanism(d.Mechanism), delete: true})
	}
	var users []string // in first-appearance order
	seenUser := map[string]bool{}
	for _, op := range ops {
		if !seenUser[op.user] {
			seenUser[op.user] = true
			users = append(users, op.user)
		}
	}
	errs := map[string]error{}
	if err := c.clusterAuthorized(acl.Alter); err != nil {
		for _, u := range users {
			errs[u] = err
		}
	} else if h.cfg.Controller == nil || !h.cfg.Controller.IsActive() {
		for _, u := range users {
			errs[u] = kerr.NotController
		}
	} else {
		h.alterScram(ctx, ops, users, errs)
	}
	for _, u := range users {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = u
		if err := errs[u]; err != nil {
			r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Results = append(resp.Results, r)
	}
	c.respond(resp)
}

// alterScram validates and applies ops, setting errs for the users that
// fail.
func (h *Handler) alterScram(ctx context.Context, ops []scramOp, users []string, errs map[string]error) {
	for _, op := range ops {
		if errs[op.user] != nil {
			continue
		}
		switch {
		case op.user == "":
			errs[op.user] = fmt.Errorf("%w: Username must not be empty", kerr.UnacceptableCredential)
		case !op.mechanism.Known():
			errs[op.user] = fmt.Errorf("%w: Unknown SCRAM mechanism", kerr.UnsupportedSaslMechanism)
		case !op.delete && op.iterations < scram.MinIterations:
			errs[op.user] = fmt.Errorf("%w: Too few iterations", kerr.UnacceptableCredential)
		case !op.delete && op.iterations > scram.MaxIterations:
			errs[op.user] = fmt.Errorf("%w: Too many iterations", kerr.UnacceptableCredential)
		}
	}
	type um struct {
		user string
		m    scram.Mechanism
	}
	seen := map[um]bool{}
	for _, op := range ops {
		if errs[op.user] != nil {
			continue
		}
		k := um{op.user, op.mechanism}
		if seen[k] {
			errs[op.user] = fmt.Errorf("%w: A user credential cannot be altered twice in the same request", kerr.DuplicateResource)
		}
		seen[k] = true
	}
	for _, u := range users {
		if errs[u] != nil {
			continue
		}
		errs[u] = h.alterUserScram(ctx, u, ops)
	}
	if err := h.cfg.Cache.Sync(ctx); err != nil {
		h.lg.Warn("cache sync after scram change", "err", err)
	}
}

// alterUserScram applies one user's valid ops: read, change, write with
// a change notification. The write is over the version read
// (UpdateEntityConfig), so a client quota written to the same user node
// meanwhile is kept.
func (h *Handler) alterUserScram(ctx context.Context, user string, ops []scramOp) error {
	entity := scram.Sanitize(user)
	var changed []string
	_, err := metadata.UpdateEntityConfig(ctx, h.cfg.Store, metadata.ConfigUsers, entity, func(cfg map[string]string) error {
		changed = changed[:0]
		for _, op := range ops {
			if op.user == user && op.delete {
				if _, ok := cfg[op.mechanism.String()]; !ok {
					return fmt.Errorf("%w: Attempt to delete a user credential that does not exist", kerr.ResourceNotFound)
				}
			}
		}
		for _, op := range ops {
			if op.user != user {
				continue
			}
			key := op.mechanism.String()
			if op.delete {
				delete(cfg, key)
			} else {
				cfg[key] = op.mechanism.FromSaltedPassword(op.salt, op.salted, int(op.iterations)).String()
			}
			changed = append(changed, key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The user and the mechanisms only: never a credential.
	h.lg.Info("altered scram credentials", "user", user, "mechanisms", changed)
	return nil
}
