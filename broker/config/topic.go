package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Topic is the effective configuration of one topic: the broker's
// defaults with the topic's overrides applied (ResolveTopic).
type Topic struct {
	CleanupPolicy                        CleanupPolicy `config:"cleanup.policy"`
	CompressionType                      string        `config:"compression.type"`
	DeleteRetentionMs                    int64         `config:"delete.retention.ms"`
	FileDeleteDelayMs                    int64         `config:"file.delete.delay.ms"`
	FlushMessages                        int64         `config:"flush.messages"`
	FlushMs                              int64         `config:"flush.ms"`
	FollowerReplicationThrottledReplicas []string      `config:"follower.replication.throttled.replicas"`
	IndexIntervalBytes                   int           `config:"index.interval.bytes"`
	LeaderReplicationThrottledReplicas   []string      `config:"leader.replication.throttled.replicas"`
	MaxCompactionLagMs                   int64         `config:"max.compaction.lag.ms"`
	MaxMessageBytes                      int           `config:"max.message.bytes"`
	MessageTimestampAfterMaxMs           int64         `config:"message.timestamp.after.max.ms"`
	MessageTimestampBeforeMaxMs          int64         `config:"message.timestamp.before.max.ms"`
	MessageTimestampType                 string        `config:"message.timestamp.type"` // CreateTime or LogAppendTime
	MinCleanableDirtyRatio               float64       `config:"min.cleanable.dirty.ratio"`
	MinCompactionLagMs                   int64         `config:"min.compaction.lag.ms"`
	MinInsyncReplicas                    int           `config:"min.insync.replicas"`
	Preallocate                          bool          `config:"preallocate"`
	RetentionBytes                       int64         `config:"retention.bytes"` // -1: no limit
	RetentionMs                          int64         `config:"retention.ms"`    // -1: no limit
	SegmentBytes                         int           `config:"segment.bytes"`
	SegmentIndexBytes                    int           `config:"segment.index.bytes"`
	SegmentJitterMs                      int64         `config:"segment.jitter.ms"`
	SegmentMs                            int64         `config:"segment.ms"`
	UncleanLeaderElectionEnable          bool          `config:"unclean.leader.election.enable"`
}

// CleanupPolicy is cleanup.policy as the two things it switches on.
type CleanupPolicy struct {
	Delete  bool // retention.ms and retention.bytes delete old segments
	Compact bool // the log cleaner keeps the last record of each key
}

func newCleanupPolicy(items []string) CleanupPolicy {
	return CleanupPolicy{Delete: slices.Contains(items, "delete"), Compact: slices.Contains(items, "compact")}
}

// String is the policy as cleanup.policy spells it.
func (p CleanupPolicy) String() string {
	var s []string
	if p.Compact {
		s = append(s, "compact")
	}
	if p.Delete {
		s = append(s, "delete")
	}
	return strings.Join(s, ",")
}

// TopicDefaults returns the configuration of a topic without overrides:
// the broker's effective defaults (log.retention.* resolved, dynamic
// cluster defaults applied).
func (b *Broker) TopicDefaults() Topic {
	return Topic{
		CleanupPolicy:               newCleanupPolicy(b.LogCleanupPolicy),
		CompressionType:             b.CompressionType,
		DeleteRetentionMs:           b.LogCleanerDeleteRetentionMs,
		FileDeleteDelayMs:           b.LogSegmentDeleteDelayMs,
		FlushMessages:               b.LogFlushIntervalMessages,
		FlushMs:                     b.LogFlushIntervalMs,
		IndexIntervalBytes:          b.LogIndexIntervalBytes,
		MaxCompactionLagMs:          b.LogCleanerMaxCompactionLagMs,
		MaxMessageBytes:             b.MessageMaxBytes,
		MessageTimestampAfterMaxMs:  b.LogMessageTimestampAfterMaxMs,
		MessageTimestampBeforeMaxMs: b.LogMessageTimestampBeforeMaxMs,
		MessageTimestampType:        b.LogMessageTimestampType,
		MinCleanableDirtyRatio:      b.LogCleanerMinCleanableRatio,
		MinCompactionLagMs:          b.LogCleanerMinCompactionLagMs,
		MinInsyncReplicas:           b.MinInsyncReplicas,
		Preallocate:                 b.LogPreallocate,
		RetentionBytes:              b.LogRetentionBytes,
		RetentionMs:                 b.LogRetentionMs,
		SegmentBytes:                b.LogSegmentBytes,
		SegmentIndexBytes:           b.LogIndexSizeMaxBytes,
		SegmentJitterMs:             b.LogRollJitterMs,
		SegmentMs:                   b.LogRollMs,
		UncleanLeaderElectionEnable: b.UncleanLeaderElectionEnable,
	}
}

// ValidateTopicConfig checks one topic config as CreateTopics and
// AlterConfigs receive it. An unknown name is an error wrapping
// ErrUnknownTopicConfig, a bad value a *ValueError (ErrInvalidValue); the
// API answers both with INVALID_CONFIG.
func ValidateTopicConfig(key, value string) error {
	k, ok := topicKeys[key]
	if !ok {
		return unknownTopicConfig(key)
	}
	_, err := k.Parse(value)
	return err
}

func unknownTopicConfig(key string) error {
	if bk, ok := brokerKeys[key]; ok && bk.Topic != "" {
		return fmt.Errorf("%w %q: it is a broker setting; the topic config is %s", ErrUnknownTopicConfig, key, bk.Topic)
	}
	return fmt.Errorf("%w %q", ErrUnknownTopicConfig, key)
}

// ResolveTopic applies a topic's overrides to the defaults, validating
// each, and checks what Kafka checks across topic configs
// (min.compaction.lag.ms ≤ max.compaction.lag.ms). Overrides are applied
// in name order so the error for several bad ones is always the same.
func ResolveTopic(defaults Topic, overrides map[string]string) (Topic, error) {
	t := defaults
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		k, ok := topicKeys[name]
		if !ok {
			return Topic{}, unknownTopicConfig(name)
		}
		v, err := k.Parse(overrides[name])
		if err != nil {
			return Topic{}, err
		}
		if err := setTagged(&t, name, v); err != nil {
			return Topic{}, err
		}
	}
	if t.MinCompactionLagMs > t.MaxCompactionLagMs {
		v, ok := overrides["min.compaction.lag.ms"]
		if !ok {
			v = fmt.Sprint(t.MinCompactionLagMs)
		}
		return Topic{}, &ValueError{Key: "min.compaction.lag.ms", Value: v,
			Problem: fmt.Sprintf("above max.compaction.lag.ms=%d", t.MaxCompactionLagMs),
			Want:    "at most max.compaction.lag.ms"}
	}
	return t, nil
}
