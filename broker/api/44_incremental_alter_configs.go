package api

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/security/acl"
)

// IncrementalAlterConfigs: v0-1
//
// Behavior:
// * Applies operations to a resource's current overrides: SET (0), DELETE
//   (1: back to the default), APPEND (2) and SUBTRACT (3) for list
//   settings (starting from the effective value; INVALID_CONFIG for other
//   types)
// * A key twice in one resource, a null value for SET/APPEND/SUBTRACT or
//   an unknown operation: INVALID_REQUEST
// * Validation, storage and live application as AlterConfigs
//   (33_alter_configs.go); validate_only changes nothing
//
// Version notes:
// * v1: flexible

func (h *Handler) handleIncrementalAlterConfigs(c *call) {
	req := c.req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := func() error {
			if err := c.configAuthorized(acl.AlterConfigs, int8(rr.ResourceType), rr.ResourceName); err != nil {
				return err
			}
			cfg, err := h.currentConfig(int8(rr.ResourceType), rr.ResourceName)
			if err != nil {
				return err
			}
			seen := map[string]bool{}
			for _, e := range rr.Configs {
				if seen[e.Name] {
					return fmt.Errorf("%w: error due to duplicate config keys: %s", errInvalidRequest, e.Name)
				}
				seen[e.Name] = true
				if err := h.applyIncremental(cfg, int8(rr.ResourceType), rr.ResourceName, e); err != nil {
					return err
				}
			}
			return h.storeConfig(ctx, int8(rr.ResourceType), rr.ResourceName, cfg, req.ValidateOnly)
		}()
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	c.respond(resp)
}

func (h *Handler) applyIncremental(cfg map[string]string, resourceType int8, name string, e kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	op := e.Op
	if op != kmsg.IncrementalAlterConfigOpDelete && e.Value == nil {
		return fmt.Errorf("%w: null value not supported for: %s", errInvalidRequest, e.Name)
	}
	switch op {
	case kmsg.IncrementalAlterConfigOpSet:
		cfg[e.Name] = *e.Value
		return nil
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(cfg, e.Name)
		return nil
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
	default:
		return fmt.Errorf("%w: unknown config operation %d", errInvalidRequest, op)
	}
	var key *config.Key
	var ok bool
	if resourceType == resourceTopic {
		key, ok = config.TopicKey(e.Name)
	} else {
		key, ok = config.BrokerKey(e.Name)
	}
	if !ok {
		if resourceType == resourceTopic {
			return config.ValidateTopicConfig(e.Name, *e.Value)
		}
		return config.ValidateBrokerConfig(e.Name, *e.Value, true)
	}
	if key.Type != config.TypeList {
		return fmt.Errorf("%w: config value append/subtract is not allowed for config key %s, which is not a list", errInvalidConfig, e.Name)
	}
	cur, have := cfg[e.Name]
	if !have {
		cur = h.effectiveValue(resourceType, name, e.Name, key)
	}
	items := splitList(cur)
	for _, v := range splitList(*e.Value) {
		if op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(items, v) {
				items = append(items, v)
			}
		} else {
			items = slices.DeleteFunc(items, func(x string) bool { return x == v })
		}
	}
	cfg[e.Name] = strings.Join(items, ",")
	return nil
}

// effectiveValue is the value a list setting has without an override.
func (h *Handler) effectiveValue(resourceType int8, name, key string, k *config.Key) string {
	b := h.broker()
	if resourceType == resourceTopic {
		for _, e := range config.DescribeTopic(nil, b) {
			if e.Name == key && e.Value != nil {
				return *e.Value
			}
		}
		return k.Default
	}
	if v, _, ok := b.Value(key); ok {
		return v
	}
	return ""
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
