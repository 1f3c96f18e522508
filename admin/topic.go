package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
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

// PartitionList is the view of `qk topic describe` with a partition
// filter. As kafka-topics.sh prints only the partition lines then, its text
// is one table of the matching partitions, each row naming its topic, and
// nothing at all when none match (so empty output means healthy); json and
// yaml are TopicDescriptions', keeping only the matching partitions and the
// topics that have some.
type PartitionList TopicDescriptions

// Text implements View.
func (l PartitionList) Text(w *tabwriter.Writer) {
	header := false
	for _, t := range l {
		for _, p := range t.Partitions {
			if !header {
				row(w, "TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "LOG-START-OFFSET", "HIGH-WATERMARK")
				header = true
			}
			row(w, t.Name, p.Partition, p.Leader, p.LeaderEpoch, ints(p.Replicas), ints(p.ISR), ints(p.OfflineReplicas), p.LogStartOffset, p.HighWatermark)
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

// DescribeFilter selects what `qk topic describe` shows, as the report
// options of kafka-topics.sh --describe. The partition filters add up: a
// partition is shown if it matches any of them.
type DescribeFilter struct {
	UnderReplicated bool // ISR smaller than the replica set
	UnderMinISR     bool // no leader, or ISR smaller than min.insync.replicas
	AtMinISR        bool // ISR size equal to min.insync.replicas
	Unavailable     bool // no leader, or a leader that is not a live broker
	ExcludeInternal bool // leave out internal topics
}

// Partitions reports whether a partition filter is set: then only the
// matching partitions are described, and topics without one not at all.
func (f DescribeFilter) Partitions() bool {
	return f.UnderReplicated || f.UnderMinISR || f.AtMinISR || f.Unavailable
}

// Any reports whether any filter is set; with one, describe may be given
// no topic names and describes every topic.
func (f DescribeFilter) Any() bool { return f.Partitions() || f.ExcludeInternal }

// Match reports whether partition p passes the partition filters (every
// partition does when none is set). minISR is the topic's effective
// min.insync.replicas, -1 if unknown (then only a partition without a
// leader is under it and none is at it); live holds the brokers in
// Metadata. These are kafka-topics.sh's tests (PartitionDescription):
// replication factor minus ISR size > 0, no leader or ISR size < minISR,
// ISR size == minISR, no leader or a leader not live. Kafka does not count
// replicas being added by a reassignment in the replication factor; qk
// has no reassignments and does not look them up.
func (f DescribeFilter) Match(p PartitionView, minISR int, live map[int32]bool) bool {
	if !f.Partitions() {
		return true
	}
	hasLeader := p.Leader >= 0
	isr := len(p.ISR)
	switch {
	case f.UnderReplicated && isr < len(p.Replicas):
	case f.UnderMinISR && (!hasLeader || minISR >= 0 && isr < minISR):
	case f.AtMinISR && minISR >= 0 && isr == minISR:
	case f.Unavailable && (!hasLeader || !live[p.Leader]):
	default:
		return false
	}
	return true
}

// internalTopics are Kafka's internal topics (Topic.isInternal), left out by
// --exclude-internal also where a broker does not flag them internal.
var internalTopics = map[string]bool{
	"__consumer_offsets":  true,
	"__transaction_state": true,
	"__share_group_state": true,
}

// minInsyncReplicas is the effective min.insync.replicas among a topic's
// configs, -1 if it is missing or not a number.
func minInsyncReplicas(cs []ConfigView) int {
	for _, c := range cs {
		if c.Name == "min.insync.replicas" {
			if n, err := strconv.Atoi(c.Value); err == nil {
				return n
			}
		}
	}
	return -1
}

// DescribeTopics describes topics: all their configs with sources, and per
// partition its leadership, replicas and offsets. With no names it
// describes every topic, internal ones too unless f.ExcludeInternal. With a
// partition filter only the matching partitions are kept, and only the
// topics that have some.
func (c *Client) DescribeTopics(ctx context.Context, f DescribeFilter, topics ...string) (TopicDescriptions, error) {
	md, err := c.Client.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	topics, err = selectTopics(md.Topics, topics, f.ExcludeInternal)
	if err != nil {
		return nil, err
	}
	out := TopicDescriptions{}
	if len(topics) == 0 {
		return out, nil
	}
	live := make(map[int32]bool, len(md.Brokers))
	for _, b := range md.Brokers {
		live[b.NodeID] = true
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
	for _, t := range topics {
		configs := []ConfigView{}
		for _, r := range rc {
			if r.Name == t {
				if r.Err != nil {
					return nil, fmt.Errorf("describe topic %s configs: %w", t, r.Err)
				}
				configs = configViews(r.Configs, true)
			}
		}
		if v, ok := describeTopic(md.Topics[t], configs, f, live, starts, ends); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// selectTopics checks that every named topic is in td and gives the names
// to describe: those, or with none every topic in td in name order, less
// the internal ones if excludeInternal (as kafka-topics.sh, also when
// named).
func selectTopics(td kadm.TopicDetails, names []string, excludeInternal bool) ([]string, error) {
	for _, t := range names {
		d, ok := td[t]
		if !ok {
			return nil, fmt.Errorf("describe topic %s: %w", t, kerr.UnknownTopicOrPartition)
		}
		if d.Err != nil {
			return nil, fmt.Errorf("describe topic %s: %w", t, d.Err)
		}
	}
	if len(names) == 0 {
		for _, d := range td.Sorted() {
			if d.Err != nil {
				return nil, fmt.Errorf("describe topic %s: %w", d.Topic, d.Err)
			}
			names = append(names, d.Topic)
		}
	}
	if excludeInternal {
		names = slices.DeleteFunc(slices.Clone(names), func(t string) bool {
			return td[t].IsInternal || internalTopics[t]
		})
	}
	return names, nil
}

// describeTopic is the view of topic d with its configs and offsets,
// keeping the partitions f matches (live: the brokers in Metadata). ok is
// false when a partition filter is set and no partition matches: the topic
// is left out.
func describeTopic(d kadm.TopicDetail, configs []ConfigView, f DescribeFilter, live map[int32]bool, starts, ends kadm.ListedOffsets) (v TopicView, ok bool) {
	v = TopicView{Name: d.Topic, ID: TopicID(d.ID), Internal: d.IsInternal, Configs: configs, Partitions: []PartitionView{}}
	minISR := minInsyncReplicas(configs)
	for _, p := range d.Partitions.Sorted() {
		pv := PartitionView{
			Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), OfflineReplicas: nonNil(p.OfflineReplicas),
			LogStartOffset: -1, HighWatermark: -1,
		}
		if !f.Match(pv, minISR, live) {
			continue
		}
		if o, ok := starts.Lookup(d.Topic, p.Partition); ok && o.Err == nil {
			pv.LogStartOffset = o.Offset
		}
		if o, ok := ends.Lookup(d.Topic, p.Partition); ok && o.Err == nil {
			pv.HighWatermark = o.Offset
		}
		v.Partitions = append(v.Partitions, pv)
	}
	return v, !f.Partitions() || len(v.Partitions) > 0
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
