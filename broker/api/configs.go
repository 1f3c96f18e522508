package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/metadata"
)

// Config resource types of DescribeConfigs and the AlterConfigs APIs.
const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
)

// alterError gives a config validation error the code the AlterConfigs
// APIs answer: a bad value or a read-only or unknown broker setting is
// INVALID_REQUEST, an unknown topic config INVALID_CONFIG.
func alterError(err error) error {
	if errors.Is(err, config.ErrInvalidValue) {
		return fmt.Errorf("%w: invalid config value: %w", kerr.InvalidRequest, err)
	}
	return err
}

// brokerEntity checks a broker resource name: "" is the cluster-wide
// default, otherwise it must be this broker's id. It returns the store
// entity and whether it is per broker.
func (h *Handler) brokerEntity(name string) (string, bool, error) {
	if name == "" {
		return metadata.DefaultEntity, false, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || int32(id) != h.cfg.BrokerID {
		return "", false, fmt.Errorf("%w: unexpected broker id, expected %d or empty string, but received %s", errInvalidRequest, h.cfg.BrokerID, name)
	}
	return name, true, nil
}

// currentConfig returns the overrides stored for a resource.
func (h *Handler) currentConfig(resourceType int8, name string) (map[string]string, error) {
	snap := h.cfg.Cache.Snapshot()
	switch resourceType {
	case resourceTopic:
		t, ok := snap.Topics[name]
		if !ok {
			return nil, fmt.Errorf("%w: topic %s does not exist", kerr.UnknownTopicOrPartition, name)
		}
		return maps.Clone(t.Config), nil
	case resourceBroker:
		entity, _, err := h.brokerEntity(name)
		if err != nil {
			return nil, err
		}
		out := maps.Clone(snap.BrokerConfigs[entity])
		if out == nil {
			out = map[string]string{}
		}
		return out, nil
	case resourceBrokerLogger:
		return nil, fmt.Errorf("%w: qk has no broker loggers to configure", errInvalidRequest)
	}
	return nil, fmt.Errorf("%w: unsupported resource type %d", errInvalidRequest, resourceType)
}

// storeConfig validates a resource's complete new overrides and, unless
// validateOnly, writes them (with a change notification) and waits for
// this broker to apply them.
func (h *Handler) storeConfig(ctx context.Context, resourceType int8, name string, cfg map[string]string, validateOnly bool) error {
	var entityType, entity string
	switch resourceType {
	case resourceTopic:
		for k, v := range cfg {
			if err := config.ValidateTopicConfig(k, v); err != nil {
				return alterError(err)
			}
		}
		if _, err := config.ResolveTopic(h.broker().TopicDefaults(), cfg); err != nil {
			return alterError(err)
		}
		entityType, entity = metadata.ConfigTopics, name
	case resourceBroker:
		e, perBroker, err := h.brokerEntity(name)
		if err != nil {
			return err
		}
		for k, v := range cfg {
			if err := config.ValidateBrokerConfig(k, v, perBroker); err != nil {
				return alterError(err)
			}
		}
		snap := h.cfg.Cache.Snapshot()
		def, own := snap.BrokerConfigs[metadata.DefaultEntity], snap.BrokerConfigs[strconv.Itoa(int(h.cfg.BrokerID))]
		if perBroker {
			own = cfg
		} else {
			def = cfg
		}
		if _, err := h.broker().WithDynamic(def, own); err != nil {
			return alterError(err)
		}
		entityType, entity = metadata.ConfigBrokers, e
	default:
		_, err := h.currentConfig(resourceType, name)
		return err
	}
	if validateOnly {
		return nil
	}
	if _, err := metadata.WriteEntityConfig(ctx, h.cfg.Store, entityType, entity, cfg); err != nil {
		return err
	}
	h.lg.Info("altered config", "entity", entityType+"/"+entity, "config", cfg)
	return h.cfg.Cache.Sync(ctx)
}

// syncCache brings this broker's cache up to date with the store before
// a describe answers from it: the change notifications (/config/changes,
// the ACL change nodes) are listed, and whatever they announce that the
// cache has not applied is read, so a change another broker made and
// answered is seen here at once. When nothing changed it costs a few
// reads of the store and no re-read of the configs.
func (h *Handler) syncCache(c *call) error {
	ctx, cancel := c.ctx(0)
	defer cancel()
	if err := h.cfg.Cache.Sync(ctx); err != nil {
		h.lg.Warn("cannot read the metadata store for a describe", "err", err)
		return fmt.Errorf("cannot read the metadata store: %w", err)
	}
	return nil
}
