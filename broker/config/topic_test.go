package config

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTopicDefaultsAreKafkas: with no configuration, every topic config's
// default as derived from the broker equals the topic table's own default,
// which is Kafka's. This ties the two tables and TopicDefaults together.
func TestTopicDefaultsAreKafkas(t *testing.T) {
	d := load(t, LoadOptions{}).TopicDefaults()
	for _, k := range TopicKeys() {
		got, ok := formatTagged(&d, k.Name)
		require.True(t, ok, k.Name)
		require.Equal(t, k.Default, got, k.Name)
	}
}

// TestTopicDefaultsFollowBroker sets each topic config's first broker
// synonym to a value other than the default and checks TopicDefaults
// picks it up, so every mapping in TopicDefaults is exercised.
func TestTopicDefaultsFollowBroker(t *testing.T) {
	for _, k := range TopicKeys() {
		if len(k.Synonyms) == 0 {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			bk := brokerKeys[k.Synonyms[0]]
			v := otherValue(t, bk)
			d := load(t, LoadOptions{Sets: []string{bk.Name + "=" + v}}).TopicDefaults()
			got, _ := formatTagged(&d, k.Name)
			require.Equal(t, v, got)
		})
	}
}

// otherValue returns a valid value of k different from its default.
func otherValue(t *testing.T, k *Key) string {
	t.Helper()
	var v string
	switch valid := k.Valid.(type) {
	case OneOf:
		v = valid[0]
		if v == k.Default {
			v = valid[1]
		}
	case ListOf:
		v = valid[0]
		if v == k.Default {
			v = valid[1]
		}
	default:
		switch k.Type {
		case TypeBoolean:
			v = "true"
			if k.Default == "true" {
				v = "false"
			}
		case TypeDouble:
			v = "0.75"
		default:
			v = "12345"
		}
	}
	require.NotEqual(t, k.Default, v)
	_, err := k.Parse(v)
	require.NoError(t, err)
	return v
}

func TestTopicDefaultsResolved(t *testing.T) {
	b := load(t, LoadOptions{Sets: []string{
		"log.retention.minutes=10", "log.roll.hours=2", "log.roll.jitter.hours=1",
		"log.flush.scheduler.interval.ms=777", "log.cleanup.policy=compact,delete",
	}})
	d := b.TopicDefaults()
	require.Equal(t, int64(600000), d.RetentionMs)
	require.Equal(t, int64(7200000), d.SegmentMs)
	require.Equal(t, int64(3600000), d.SegmentJitterMs)
	require.Equal(t, int64(777), d.FlushMs)
	require.Equal(t, CleanupPolicy{Delete: true, Compact: true}, d.CleanupPolicy)
	require.Equal(t, "compact,delete", d.CleanupPolicy.String())
}

func TestResolveTopic(t *testing.T) {
	defaults := load(t, LoadOptions{}).TopicDefaults()
	tests := []struct {
		name      string
		overrides map[string]string
		check     func(t *testing.T, got Topic)
	}{
		{"none", nil, func(t *testing.T, got Topic) { require.Equal(t, defaults, got) }},
		{"retention", map[string]string{"retention.ms": "1000", "retention.bytes": "2048"}, func(t *testing.T, got Topic) {
			require.Equal(t, int64(1000), got.RetentionMs)
			require.Equal(t, int64(2048), got.RetentionBytes)
			require.Equal(t, defaults.SegmentBytes, got.SegmentBytes)
		}},
		{"unlimited retention", map[string]string{"retention.ms": "-1"}, func(t *testing.T, got Topic) {
			require.Equal(t, int64(-1), got.RetentionMs)
		}},
		{"segments", map[string]string{"segment.bytes": "1024", "segment.ms": "60000", "segment.jitter.ms": "5", "segment.index.bytes": "4096"}, func(t *testing.T, got Topic) {
			require.Equal(t, 1024, got.SegmentBytes)
			require.Equal(t, int64(60000), got.SegmentMs)
			require.Equal(t, int64(5), got.SegmentJitterMs)
			require.Equal(t, 4096, got.SegmentIndexBytes)
		}},
		{"compact", map[string]string{"cleanup.policy": "compact"}, func(t *testing.T, got Topic) {
			require.Equal(t, CleanupPolicy{Compact: true}, got.CleanupPolicy)
		}},
		{"both policies, spaces", map[string]string{"cleanup.policy": " delete , compact "}, func(t *testing.T, got Topic) {
			require.Equal(t, CleanupPolicy{Delete: true, Compact: true}, got.CleanupPolicy)
		}},
		{"no policy", map[string]string{"cleanup.policy": ""}, func(t *testing.T, got Topic) {
			require.Equal(t, CleanupPolicy{}, got.CleanupPolicy)
		}},
		{"produce path", map[string]string{"max.message.bytes": "100", "compression.type": "lz4", "message.timestamp.type": "LogAppendTime", "min.insync.replicas": "2"}, func(t *testing.T, got Topic) {
			require.Equal(t, 100, got.MaxMessageBytes)
			require.Equal(t, "lz4", got.CompressionType)
			require.Equal(t, "LogAppendTime", got.MessageTimestampType)
			require.Equal(t, 2, got.MinInsyncReplicas)
		}},
		{"flush and cleaner", map[string]string{"flush.messages": "1", "flush.ms": "0", "min.cleanable.dirty.ratio": "0.1", "delete.retention.ms": "0", "min.compaction.lag.ms": "10", "max.compaction.lag.ms": "10"}, func(t *testing.T, got Topic) {
			require.Equal(t, int64(1), got.FlushMessages)
			require.Equal(t, int64(0), got.FlushMs)
			require.Equal(t, 0.1, got.MinCleanableDirtyRatio)
			require.Equal(t, int64(0), got.DeleteRetentionMs)
			require.Equal(t, int64(10), got.MinCompactionLagMs)
		}},
		{"bools and lists", map[string]string{"preallocate": "TRUE", "unclean.leader.election.enable": "true", "leader.replication.throttled.replicas": "0:1,1:2", "follower.replication.throttled.replicas": "*"}, func(t *testing.T, got Topic) {
			require.True(t, got.Preallocate)
			require.True(t, got.UncleanLeaderElectionEnable)
			require.Equal(t, []string{"0:1", "1:2"}, got.LeaderReplicationThrottledReplicas)
			require.Equal(t, []string{"*"}, got.FollowerReplicationThrottledReplicas)
		}},
		{"long max", map[string]string{"message.timestamp.before.max.ms": "9223372036854775807", "message.timestamp.after.max.ms": "3600000", "file.delete.delay.ms": "0", "index.interval.bytes": "0"}, func(t *testing.T, got Topic) {
			require.Equal(t, int64(math.MaxInt64), got.MessageTimestampBeforeMaxMs)
			require.Equal(t, int64(3600000), got.MessageTimestampAfterMaxMs)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveTopic(defaults, tt.overrides)
			require.NoError(t, err)
			tt.check(t, got)
		})
	}
}

func TestResolveTopicErrors(t *testing.T) {
	defaults := load(t, LoadOptions{}).TopicDefaults()
	tests := []struct {
		name      string
		overrides map[string]string
		want      string
		is        error
	}{
		{"unknown", map[string]string{"retention.days": "1"}, `config: unknown topic config "retention.days"`, ErrUnknownTopicConfig},
		{"broker name", map[string]string{"log.retention.ms": "1"}, `config: unknown topic config "log.retention.ms": it is a broker setting; the topic config is retention.ms`, ErrUnknownTopicConfig},
		{"not a long", map[string]string{"retention.ms": "abc"}, "config: retention.ms=abc: not a long; want an integer ≥ -1", ErrInvalidValue},
		{"retention below -1", map[string]string{"retention.ms": "-2"}, "config: retention.ms=-2: out of range; want an integer ≥ -1", ErrInvalidValue},
		{"segment too small", map[string]string{"segment.bytes": "10"}, "config: segment.bytes=10: out of range; want an integer ≥ 61", ErrInvalidValue},
		{"segment.ms 0", map[string]string{"segment.ms": "0"}, "config: segment.ms=0: out of range; want an integer ≥ 1", ErrInvalidValue},
		{"compression", map[string]string{"compression.type": "brotli"}, "config: compression.type=brotli: not allowed; want one of uncompressed, zstd, lz4, snappy, gzip, producer", ErrInvalidValue},
		{"cleanup policy", map[string]string{"cleanup.policy": "compact,forever"}, `config: cleanup.policy=compact,forever: "forever" not allowed; want a comma-separated list of compact, delete`, ErrInvalidValue},
		{"timestamp type", map[string]string{"message.timestamp.type": "NoTime"}, "config: message.timestamp.type=NoTime: not allowed; want one of CreateTime, LogAppendTime", ErrInvalidValue},
		{"ratio", map[string]string{"min.cleanable.dirty.ratio": "-0.1"}, "config: min.cleanable.dirty.ratio=-0.1: out of range; want a number in [0, 1]", ErrInvalidValue},
		{"bool", map[string]string{"preallocate": "1"}, "config: preallocate=1: not a boolean; want true or false", ErrInvalidValue},
		{"throttled", map[string]string{"leader.replication.throttled.replicas": "0-1"}, `config: leader.replication.throttled.replicas=0-1: "0-1" is not partition:brokerId; want "*" or a comma-separated list of partition:brokerId`, ErrInvalidValue},
		{"compaction lags", map[string]string{"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "10"}, "config: min.compaction.lag.ms=100: above max.compaction.lag.ms=10; want at most max.compaction.lag.ms", ErrInvalidValue},
		{"first in name order", map[string]string{"segment.ms": "x", "retention.ms": "y"}, "config: retention.ms=y: not a long; want an integer ≥ -1", ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ResolveTopic(defaults, tt.overrides)
			require.EqualError(t, err, tt.want)
			require.True(t, errors.Is(err, tt.is))
			for k, v := range tt.overrides {
				if len(tt.overrides) == 1 {
					require.EqualError(t, ValidateTopicConfig(k, v), tt.want)
				}
			}
		})
	}
}

func TestValidateTopicConfig(t *testing.T) {
	for _, k := range TopicKeys() {
		require.NoError(t, ValidateTopicConfig(k.Name, k.Default), k.Name)
	}
	require.NoError(t, ValidateTopicConfig("retention.ms", " 1000 "))
	err := ValidateTopicConfig("message.downconversion.enable", "true")
	require.ErrorIs(t, err, ErrUnknownTopicConfig)
	var ve *ValueError
	require.ErrorAs(t, ValidateTopicConfig("segment.bytes", "big"), &ve)
	require.Equal(t, ValueError{Key: "segment.bytes", Value: "big", Problem: "not an int", Want: "an integer ≥ 61"}, *ve)
}
