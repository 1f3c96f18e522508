package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// AlterConfigs: v0-2
//
// Behavior:
// * Replaces all overrides of a resource with the ones given (settings not
//   given return to their defaults), as the legacy API does
// * Topic: unknown names INVALID_CONFIG, bad values INVALID_REQUEST (as
//   Kafka's AlterConfigs); stored in /config/topics/<t> with a
//   /config/changes notification and applied to the topic's logs at once
// * Broker: "" (cluster-wide default) or this broker's id; read-only
//   settings and bad values INVALID_REQUEST; stored in /config/brokers/
// * A null value is INVALID_REQUEST; validate_only changes nothing
//
// Version notes:
// * v1: no change; v2: flexible

func (h *Handler) handleAlterConfigs(c *call) {
	req := c.req.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := func() error {
			if err := c.configAuthorized(acl.AlterConfigs, int8(rr.ResourceType), rr.ResourceName); err != nil {
				return err
			}
			if _, err := h.currentConfig(int8(rr.ResourceType), rr.ResourceName); err != nil {
				return err
			}
			cfg := map[string]string{}
			for _, e := range rr.Configs {
				if e.Value == nil {
					return fmt.Errorf("%w: null value not supported for: %s", errInvalidRequest, e.Name)
				}
				if _, dup := cfg[e.Name]; dup {
					return fmt.Errorf("%w: duplicate config key %s", errInvalidRequest, e.Name)
				}
				cfg[e.Name] = *e.Value
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
