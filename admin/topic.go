package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicID prints a topic id as Kafka does (URL-safe base64, no padding).
func TopicID(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// TopicSummary is one row of `qk topic list`.
type TopicSummary struct {
	Name       string `json:"name" yaml:"name"`
	ID         string `json:"id" yaml:"id"`
	Partitions int    `json:"partitions" yaml:"partitions"`
	Replicas   int    `json:"replicas" yaml:"replicas"`
	Internal   bool   `json:"internal" yaml:"internal"`
}

// TopicList is the view of `qk topic list`.
type TopicList []TopicSummary

// Text implements View.
func (l TopicList) Text(w *tabwriter.Writer) {
	row(w, "NAME", "PARTITIONS", "REPLICAS")
	for _, t := range l {
		row(w, t.Name, t.Partitions, t.Replicas)
	}
}

// ListTopics lists the cluster's topics, internal ones too if asked.
func (c *Client) ListTopics(ctx context.Context, internal bool) (TopicList, error) {
	var (
		td  kadm.TopicDetails
		err error
	)
	if internal {
		td, err = c.Client.ListTopicsWithInternal(ctx)
	} else {
		td, err = c.Client.ListTopics(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	out := TopicList{}
	for _, t := range td.Sorted() {
		if t.Err != nil {
			return nil, fmt.Errorf("list topics: %s: %w", t.Topic, t.Err)
		}
		s := TopicSummary{Name: t.Topic, ID: TopicID(t.ID), Partitions: len(t.Partitions), Internal: t.IsInternal}
		if len(t.Partitions) > 0 {
			s.Replicas = len(t.Partitions[0].Replicas)
		}
		out = append(out, s)
	}
	return out, nil
}

// TopicResult is one topic's outcome of create, delete or alter.
type TopicResult = Result

// TopicResults is the view of create, delete and alter.
type TopicResults []TopicResult

// Text implements View.
func (l TopicResults) Text(w *tabwriter.Writer) {
	row(w, "TOPIC", "STATUS")
	for _, r := range l {
		row(w, r.Name, r.Status)
	}
}

// kafkaErr makes a per-resource error one line: the Kafka code name plus
// the broker's message when it adds anything.
func kafkaErr(err error, msg string) error {
	msg = strings.TrimPrefix(msg, err.Error()+": ")
	if msg != "" && msg != err.Error() {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return fmt.Errorf("%s: %s", ke.Message, msg)
		}
	}
	return err
}

// CreateTopic holds the settings of `qk topic create`.
type CreateTopic struct {
	Partitions  int32
	Replicas    int16
	Configs     map[string]*string
	IfNotExists bool
	DryRun      bool
}

// CreateTopics creates topics; the first failure is returned after the
// results of the others.
func (c *Client) CreateTopics(ctx context.Context, ct CreateTopic, topics ...string) (TopicResults, error) {
	create := c.Client.CreateTopics
	status := "created"
	if ct.DryRun {
		create, status = c.Client.ValidateCreateTopics, "validated"
	}
	resp, err := create(ctx, ct.Partitions, ct.Replicas, ct.Configs, topics...)
	if err != nil {
		return nil, fmt.Errorf("create topics: %w", err)
	}
	out, err := collectResults("create topic", topics, resp, func(r kadm.CreateTopicResponse) (string, error) {
		switch {
		case errors.Is(r.Err, kerr.TopicAlreadyExists) && ct.IfNotExists:
			return "exists", nil
		case r.Err != nil:
			return "", kafkaErr(r.Err, r.ErrMessage)
		}
		return status, nil
	})
	return TopicResults(out), err
}

// DeleteTopics deletes topics.
func (c *Client) DeleteTopics(ctx context.Context, topics ...string) (TopicResults, error) {
	resp, err := c.Client.DeleteTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("delete topics: %w", err)
	}
	out, err := collectResults("delete topic", topics, resp, func(r kadm.DeleteTopicResponse) (string, error) {
		if r.Err != nil {
			return "", kafkaErr(r.Err, r.ErrMessage)
		}
		return "deleted", nil
	})
	return TopicResults(out), err
}

// PartitionView is one partition of `qk topic describe`.
type PartitionView struct {
	Partition       int32   `json:"partition" yaml:"partition"`
	Leader          int32   `json:"leader" yaml:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch" yaml:"leader_epoch"`
	Replicas        []int32 `json:"replicas" yaml:"replicas,flow"`
	ISR             []int32 `json:"isr" yaml:"isr,flow"`
	OfflineReplicas []int32 `json:"offline_replicas" yaml:"offline_replicas,flow"`
	LogStartOffset  int64   `json:"log_start_offset" yaml:"log_start_offset"`
	HighWatermark   int64   `json:"high_watermark" yaml:"high_watermark"`
}

// ConfigView is one config entry with where its value comes from.
type ConfigView struct {
	Name      string `json:"name" yaml:"name"`
	Value     string `json:"value" yaml:"value"`
	Source    string `json:"source" yaml:"source"`
	Sensitive bool   `json:"sensitive,omitempty" yaml:"sensitive,omitempty"`
}

// TopicView is one topic of `qk topic describe`.
type TopicView struct {
	Name       string          `json:"name" yaml:"name"`
	ID         string          `json:"id" yaml:"id"`
	Internal   bool            `json:"internal" yaml:"internal"`
	Configs    []ConfigView    `json:"configs" yaml:"configs"`
	Partitions []PartitionView `json:"partitions" yaml:"partitions"`
}

// TopicDescriptions is the view of `qk topic describe`.
type TopicDescriptions []TopicView

func ints(is []int32) string {
	s := make([]string, len(is))
	for i, v := range is {
		s[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// Text implements View.
func (d TopicDescriptions) Text(w *tabwriter.Writer) {
	for i, t := range d {
		if i > 0 {
			row(w)
		}
		row(w, "NAME", t.Name)
		row(w, "ID", t.ID)
		row(w, "INTERNAL", t.Internal)
		row(w, "PARTITIONS", len(t.Partitions))
		row(w)
		row(w, "CONFIG", "VALUE", "SOURCE")
		for _, c := range t.Configs {
			row(w, c.Name, c.Value, c.Source)
		}
		row(w)
		row(w, "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "LOG-START-OFFSET", "HIGH-WATERMARK")
		for _, p := range t.Partitions {
			row(w, p.Partition, p.Leader, p.LeaderEpoch, ints(p.Replicas), ints(p.ISR), ints(p.OfflineReplicas), p.LogStartOffset, p.HighWatermark)
		}
	}
}

func configViews(cs []kadm.Config, all bool) []ConfigView {
	out := []ConfigView{}
	for _, c := range cs {
		src := strings.TrimSuffix(strings.ToUpper(c.Source.String()), "_CONFIG")
		if !all && (src == "DEFAULT" || src == "STATIC_BROKER") {
			continue
		}
		v := ""
		if c.Value != nil {
			v = *c.Value
		}
		if c.Sensitive {
			v = "(sensitive)"
		}
		out = append(out, ConfigView{Name: c.Key, Value: v, Source: src, Sensitive: c.Sensitive})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DescribeTopics describes topics: all their configs with sources, and per
// partition its leadership, replicas and offsets.
func (c *Client) DescribeTopics(ctx context.Context, topics ...string) (TopicDescriptions, error) {
	td, err := c.Client.ListTopicsWithInternal(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	for _, t := range topics {
		d, ok := td[t]
		if !ok {
			return nil, fmt.Errorf("describe topic %s: %w", t, kerr.UnknownTopicOrPartition)
		}
		if d.Err != nil {
			return nil, fmt.Errorf("describe topic %s: %w", t, d.Err)
		}
	}
	rc, err := c.Client.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	// A partition without a leader (its broker is down) cannot answer
	// ListOffsets: its offsets show as -1, the others are described (the
	// moment an operator needs describe most).
	var shard *kadm.ShardErrors
	starts, err := c.Client.ListStartOffsets(ctx, topics...)
	if err != nil && !errors.As(err, &shard) {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := c.Client.ListEndOffsets(ctx, topics...)
	if err != nil && !errors.As(err, &shard) {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var out TopicDescriptions
	for _, t := range topics {
		d := td[t]
		v := TopicView{Name: t, ID: TopicID(d.ID), Internal: d.IsInternal, Configs: []ConfigView{}}
		for _, r := range rc {
			if r.Name == t {
				if r.Err != nil {
					return nil, fmt.Errorf("describe topic %s configs: %w", t, r.Err)
				}
				v.Configs = configViews(r.Configs, true)
			}
		}
		for _, p := range d.Partitions.Sorted() {
			pv := PartitionView{
				Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), OfflineReplicas: nonNil(p.OfflineReplicas),
				LogStartOffset: -1, HighWatermark: -1,
			}
			if o, ok := starts.Lookup(t, p.Partition); ok && o.Err == nil {
				pv.LogStartOffset = o.Offset
			}
			if o, ok := ends.Lookup(t, p.Partition); ok && o.Err == nil {
				pv.HighWatermark = o.Offset
			}
			v.Partitions = append(v.Partitions, pv)
		}
		out = append(out, v)
	}
	return out, nil
}

func nonNil(is []int32) []int32 {
	if is == nil {
		return []int32{}
	}
	return is
}

// AlterTopic holds the settings of `qk topic alter`.
type AlterTopic struct {
	Partitions int // 0: unchanged
	Set        map[string]string
	Delete     []string
	DryRun     bool
}

// AlterTopic grows a topic's partitions and changes its configs.
func (c *Client) AlterTopic(ctx context.Context, topic string, at AlterTopic) (TopicResults, error) {
	var out TopicResults
	if at.Partitions > 0 {
		update := c.Client.UpdatePartitions
		if at.DryRun {
			update = c.Client.ValidateUpdatePartitions
		}
		resp, err := update(ctx, at.Partitions, topic)
		if err != nil {
			return nil, fmt.Errorf("alter topic %s partitions: %w", topic, err)
		}
		r, ok := resp[topic]
		if !ok {
			return nil, fmt.Errorf("alter topic %s partitions: no answer", topic)
		}
		if r.Err != nil {
			return nil, fmt.Errorf("alter topic %s partitions: %w", topic, kafkaErr(r.Err, r.ErrMessage))
		}
		out = append(out, TopicResult{topic, fmt.Sprintf("partitions=%d%s", at.Partitions, dry(at.DryRun))})
	}
	if len(at.Set)+len(at.Delete) > 0 {
		if err := c.alterConfigs(ctx, Resource{Topic: topic}, at.Set, at.Delete, at.DryRun); err != nil {
			return nil, err
		}
		out = append(out, TopicResult{topic, "configs altered" + dry(at.DryRun)})
	}
	return out, nil
}

func dry(d bool) string {
	if d {
		return " (dry run)"
	}
	return ""
}

// Len is how many topics succeeded, so a partial failure still prints them.
func (l TopicResults) Len() int { return len(l) }
