package api

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/security/acl"
)

// DescribeConfigs: v0-4
//
// Behavior:
// * Topic (2): every topic config with its effective value and source
//   (config.DescribeTopic: the override, else the broker setting that
//   supplies the default); UNKNOWN_TOPIC_OR_PARTITION for an unknown topic
// * Broker (4): this broker's id describes every broker setting
//   (config.DescribeBroker); "" the cluster-wide dynamic defaults
//   (config.DescribeBrokerDefaults); another id INVALID_REQUEST
// * Broker logger (8): INVALID_REQUEST (no loggers to configure)
// * config_names filters (null: all); synonyms only with include_synonyms,
//   documentation only with include_documentation; sensitive values null
//
// Version notes:
// * v0: is_default; v1: source, synonyms; v2: no change
// * v3: config type, documentation; v4: flexible

func (h *Handler) handleDescribeConfigs(c *call) {
	req := c.req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	// The configs as the store holds them now, not as this broker last
	// heard of them: a client that changed a config through another
	// broker reads its write here (Kafka's ZooKeeper-mode brokers answer
	// from ZooKeeper too).
	syncErr := h.syncCache(c)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		entries, err := h.describeConfigs(rr)
		if syncErr != nil {
			entries, err = nil, syncErr
		}
		if aerr := c.configAuthorized(acl.DescribeConfigs, int8(rr.ResourceType), rr.ResourceName); aerr != nil {
			entries, err = nil, aerr
		}
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			ce := kmsg.NewDescribeConfigsResponseResourceConfig()
			ce.Name, ce.Value, ce.ReadOnly, ce.IsSensitive = e.Name, e.Value, e.ReadOnly, e.Sensitive
			ce.Source = kmsg.ConfigSource(e.Source)
			ce.IsDefault = e.Source == config.ConfigSourceDefault
			if c.version >= 1 && req.IncludeSynonyms {
				for _, s := range e.Synonyms {
					cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					cs.Name, cs.Value, cs.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
					ce.ConfigSynonyms = append(ce.ConfigSynonyms, cs)
				}
			}
			if c.version >= 3 {
				ce.ConfigType = kmsg.ConfigType(e.Type)
				if req.IncludeDocumentation {
					doc := e.Doc
					ce.Documentation = &doc
				}
			}
			sr.Configs = append(sr.Configs, ce)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	c.respond(resp)
}

func (h *Handler) describeConfigs(rr kmsg.DescribeConfigsRequestResource) ([]config.Entry, error) {
	overrides, err := h.currentConfig(int8(rr.ResourceType), rr.ResourceName)
	if err != nil {
		return nil, err
	}
	b := h.broker()
	switch rr.ResourceType {
	case resourceTopic:
		return config.DescribeTopic(overrides, b), nil
	case resourceBroker:
		if rr.ResourceName == "" {
			return config.DescribeBrokerDefaults(b), nil
		}
		return config.DescribeBroker(b), nil
	}
	return nil, nil
}
