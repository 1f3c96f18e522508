package controller

import (
	"context"
	"errors"
	"log/slog"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/metadata"
)

// ClientQuotas returns the client quota entities of /config/users and
// /config/clients (never nil; do not modify it). Like the other configs
// it follows /config/changes: an AlterClientQuotas on any broker shows
// here within a watch's round trip.
func (s *Snapshot) ClientQuotas() clientquota.Quotas {
	if s.clientQuotas == nil {
		return clientquota.Quotas{}
	}
	return s.clientQuotas
}

// ClientQuota resolves the quota of type t for a connection of user and
// clientID in Kafka's order; ok is false when it is unlimited.
func (s *Snapshot) ClientQuota(t clientquota.Type, user, clientID string) (clientquota.Match, bool) {
	return s.clientQuotas.Resolve(t, user, clientID)
}

// readClientQuotas is the cache's read of the quotas; c.mu is held.
func (c *Cache) readClientQuotas(ctx context.Context) (clientquota.Quotas, error) {
	return ReadClientQuotas(ctx, c.store, c.lg)
}

// ReadClientQuotas reads every client quota entity from the store:
// /config/users/<user>, /config/users/<user>/clients/<client-id> and
// /config/clients/<client-id>, defaults included. Entities with no quota
// key (a user with SCRAM credentials only) are left out. A node whose
// name or value is not in Kafka's format is skipped with a warning, so
// one bad node does not stop the others from applying.
func ReadClientQuotas(ctx context.Context, st metadata.Store, lg *slog.Logger) (clientquota.Quotas, error) {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	q := clientquota.Quotas{}
	add := func(entityType, entity string) error {
		e, err := clientquota.ParsePath(entityType, entity)
		if err != nil {
			lg.Warn("skipped client quota config", "entity", entityType+"/"+entity, "err", err)
			return nil
		}
		cfg, err := metadata.ReadEntityConfig(ctx, st, entityType, entity)
		if errors.Is(err, metadata.ErrMalformed) {
			lg.Warn("skipped client quota config", "entity", entityType+"/"+entity, "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		vals, bad := clientquota.ParseValues(cfg)
		if len(bad) > 0 {
			lg.Warn("skipped client quota values that are not numbers", "entity", entityType+"/"+entity, "keys", bad)
		}
		if len(vals) > 0 {
			q[e] = vals
		}
		return nil
	}
	children := func(path string) ([]string, error) {
		names, _, err := st.Children(ctx, path)
		if errors.Is(err, metadata.ErrNoNode) {
			return nil, nil
		}
		return names, err
	}
	users, err := children("/config/" + metadata.ConfigUsers)
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if err := add(metadata.ConfigUsers, u); err != nil {
			return nil, err
		}
		clients, err := children(metadata.EntityConfigPath(metadata.ConfigUsers, u) + "/" + metadata.ConfigClients)
		if err != nil {
			return nil, err
		}
		for _, cl := range clients {
			if err := add(metadata.ConfigUsers, u+"/"+metadata.ConfigClients+"/"+cl); err != nil {
				return nil, err
			}
		}
	}
	clients, err := children("/config/" + metadata.ConfigClients)
	if err != nil {
		return nil, err
	}
	for _, cl := range clients {
		if err := add(metadata.ConfigClients, cl); err != nil {
			return nil, err
		}
	}
	return q, nil
}
