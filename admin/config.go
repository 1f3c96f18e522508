package admin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Resource names a topic or a broker whose configs are read or changed.
type Resource struct {
	Topic  string
	Broker int32
}

func (r Resource) String() string {
	if r.Topic != "" {
		return "topic " + r.Topic
	}
	return "broker " + strconv.Itoa(int(r.Broker))
}

// ConfigList is the view of `qk config describe`.
type ConfigList []ConfigView

// Text implements View.
func (l ConfigList) Text(w *tabwriter.Writer) {
	row(w, "NAME", "VALUE", "SOURCE")
	for _, c := range l {
		row(w, c.Name, c.Value, c.Source)
	}
}

// DescribeConfigs returns a resource's configs; without all, only those
// set for it (not defaults).
func (c *Client) DescribeConfigs(ctx context.Context, r Resource, all bool) (ConfigList, error) {
	var (
		rc  kadm.ResourceConfigs
		err error
	)
	if r.Topic != "" {
		rc, err = c.Client.DescribeTopicConfigs(ctx, r.Topic)
	} else {
		rc, err = c.Client.DescribeBrokerConfigs(ctx, r.Broker)
	}
	if err != nil {
		return nil, fmt.Errorf("describe %s configs: %w", r, err)
	}
	if len(rc) != 1 {
		return nil, fmt.Errorf("describe %s configs: no answer", r)
	}
	if rc[0].Err != nil {
		return nil, fmt.Errorf("describe %s configs: %w", r, kafkaErr(rc[0].Err, rc[0].ErrMessage))
	}
	return configViews(rc[0].Configs, all), nil
}

// ConfigAltered is the view of `qk config alter`.
type ConfigAltered struct {
	Resource string `json:"resource" yaml:"resource"`
	Status   string `json:"status" yaml:"status"`
}

// Text implements View.
func (a ConfigAltered) Text(w *tabwriter.Writer) {
	row(w, "RESOURCE", "STATUS")
	row(w, a.Resource, a.Status)
}

// AlterConfigs sets and deletes a resource's configs with
// IncrementalAlterConfigs, or, on a cluster whose brokers do not serve it
// (Kafka before 2.3), with the older AlterConfigs, as kafka-configs.sh does.
func (c *Client) AlterConfigs(ctx context.Context, r Resource, set map[string]string, del []string, dryRun bool) (ConfigAltered, error) {
	alter := c.alterConfigs
	if c.legacyAlter || !c.servesIncrementalAlter(ctx) {
		alter = c.alterConfigsState
	}
	if err := alter(ctx, r, set, del, dryRun); err != nil {
		return ConfigAltered{}, err
	}
	return ConfigAltered{Resource: r.String(), Status: "altered" + dry(dryRun)}, nil
}

// servesIncrementalAlter reports whether every broker lists
// IncrementalAlterConfigs (key 44) in ApiVersions. When the question cannot
// be answered it says yes, so the incremental request reports the problem.
func (c *Client) servesIncrementalAlter(ctx context.Context) bool {
	vs, err := c.Client.ApiVersions(ctx)
	if err != nil {
		return true
	}
	ok := true
	vs.Each(func(v kadm.BrokerApiVersions) {
		if v.Err != nil {
			return
		}
		if _, exists := v.KeyMaxVersion(44); !exists {
			ok = false
		}
	})
	return ok
}

// alterConfigsState is the fallback: AlterConfigs replaces a resource's
// whole dynamic config, so the current dynamic values are read first and
// the change is applied to them.
func (c *Client) alterConfigsState(ctx context.Context, r Resource, set map[string]string, del []string, dryRun bool) error {
	current, err := c.DescribeConfigs(ctx, r, false)
	if err != nil {
		return err
	}
	state := mergeConfigState(current, set, del)
	var acs []kadm.AlterConfig
	for _, k := range slices.Sorted(maps.Keys(state)) {
		v := state[k]
		acs = append(acs, kadm.AlterConfig{Name: k, Value: &v})
	}
	return alterCalls{
		topic: c.Client.AlterTopicConfigsState, validateTopic: c.Client.ValidateAlterTopicConfigsState,
		broker: c.Client.AlterBrokerConfigsState, validateBroker: c.Client.ValidateAlterBrokerConfigsState,
	}.send(ctx, r, acs, dryRun)
}

// alterCalls are one alter API's kadm calls (AlterConfigs' "State" ones or
// IncrementalAlterConfigs'), for a topic or a broker, applying or only
// validating, so both APIs pick theirs the same way.
type alterCalls struct {
	topic, validateTopic   func(context.Context, []kadm.AlterConfig, ...string) (kadm.AlterConfigsResponses, error)
	broker, validateBroker func(context.Context, []kadm.AlterConfig, ...int32) (kadm.AlterConfigsResponses, error)
}

// send alters r with acs, or only validates them when dryRun, and returns
// the first error of the answer, if any.
func (a alterCalls) send(ctx context.Context, r Resource, acs []kadm.AlterConfig, dryRun bool) error {
	var (
		resp kadm.AlterConfigsResponses
		err  error
	)
	switch {
	case r.Topic != "" && dryRun:
		resp, err = a.validateTopic(ctx, acs, r.Topic)
	case r.Topic != "":
		resp, err = a.topic(ctx, acs, r.Topic)
	case dryRun:
		resp, err = a.validateBroker(ctx, acs, r.Broker)
	default:
		resp, err = a.broker(ctx, acs, r.Broker)
	}
	if err != nil {
		return fmt.Errorf("alter %s configs: %w", r, err)
	}
	for _, ar := range resp {
		if ar.Err != nil {
			return fmt.Errorf("alter %s configs: %w", r, kafkaErr(ar.Err, ar.ErrMessage))
		}
	}
	return nil
}

// mergeConfigState applies set and del to the dynamic configs of a
// resource (sensitive values, which describe hides, cannot be carried over
// and are dropped unless set again).
func mergeConfigState(current ConfigList, set map[string]string, del []string) map[string]string {
	state := map[string]string{}
	for _, cv := range current {
		if !strings.HasPrefix(cv.Source, "DYNAMIC") || cv.Sensitive {
			continue
		}
		state[cv.Name] = cv.Value
	}
	for _, k := range del {
		delete(state, k)
	}
	for k, v := range set {
		state[k] = v
	}
	return state
}

func (c *Client) alterConfigs(ctx context.Context, r Resource, set map[string]string, del []string, dryRun bool) error {
	var acs []kadm.AlterConfig
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := set[k]
		acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range del {
		acs = append(acs, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return alterCalls{
		topic: c.Client.AlterTopicConfigs, validateTopic: c.Client.ValidateAlterTopicConfigs,
		broker: c.Client.AlterBrokerConfigs, validateBroker: c.Client.ValidateAlterBrokerConfigs,
	}.send(ctx, r, acs, dryRun)
}

// BrokerView is one broker of `qk cluster info`.
type BrokerView struct {
	ID         int32  `json:"id" yaml:"id"`
	Host       string `json:"host" yaml:"host"`
	Port       int32  `json:"port" yaml:"port"`
	Rack       string `json:"rack,omitempty" yaml:"rack,omitempty"`
	Controller bool   `json:"controller" yaml:"controller"`
}

// ClusterInfo is the view of `qk cluster info`.
type ClusterInfo struct {
	ClusterID  string       `json:"cluster_id" yaml:"cluster_id"`
	Controller int32        `json:"controller" yaml:"controller"`
	Brokers    []BrokerView `json:"brokers" yaml:"brokers"`
}

// Text implements View.
func (ci ClusterInfo) Text(w *tabwriter.Writer) {
	row(w, "CLUSTER", ci.ClusterID)
	row(w, "CONTROLLER", ci.Controller)
	row(w)
	row(w, "ID", "HOST:PORT", "RACK")
	for _, b := range ci.Brokers {
		id := strconv.Itoa(int(b.ID))
		if b.Controller {
			id += "*"
		}
		rack := b.Rack
		if rack == "" {
			rack = "-"
		}
		row(w, id, fmt.Sprintf("%s:%d", b.Host, b.Port), rack)
	}
}

// ClusterInfo describes the cluster: id, controller and brokers.
func (c *Client) ClusterInfo(ctx context.Context) (ClusterInfo, error) {
	m, err := c.Client.BrokerMetadata(ctx)
	if err != nil {
		return ClusterInfo{}, fmt.Errorf("cluster metadata: %w", err)
	}
	ci := ClusterInfo{ClusterID: m.Cluster, Controller: m.Controller, Brokers: []BrokerView{}}
	for _, b := range m.Brokers {
		bv := BrokerView{ID: b.NodeID, Host: b.Host, Port: b.Port, Controller: b.NodeID == m.Controller}
		if b.Rack != nil {
			bv.Rack = *b.Rack
		}
		ci.Brokers = append(ci.Brokers, bv)
	}
	sort.Slice(ci.Brokers, func(i, j int) bool { return ci.Brokers[i].ID < ci.Brokers[j].ID })
	return ci, nil
}
