package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func entry(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

func syn(name, v string, src ConfigSource) Synonym {
	return Synonym{Name: name, Value: &v, Source: src}
}

func TestDescribeTopic(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(file, []byte("log.retention.hours=24\nlog.segment.bytes=1048576\n"), 0o644))
	b := load(t, LoadOptions{ConfigFile: file})
	b, err := b.WithDynamic(map[string]string{"compression.type": "zstd"}, map[string]string{"log.cleaner.delete.retention.ms": "5000"})
	require.NoError(t, err)

	entries := DescribeTopic(map[string]string{"retention.ms": " 1000", "cleanup.policy": "delete,compact"}, b)
	require.Len(t, entries, len(topicKeys))

	tests := []struct {
		name   string
		value  string
		source ConfigSource
		typ    Type
		syn    []Synonym
	}{
		{"retention.ms", "1000", ConfigSourceDynamicTopic, TypeLong, []Synonym{
			syn("retention.ms", "1000", ConfigSourceDynamicTopic),
			syn("log.retention.hours", "24", ConfigSourceStaticBroker),
			syn("log.retention.hours", "168", ConfigSourceDefault),
		}},
		{"cleanup.policy", "delete,compact", ConfigSourceDynamicTopic, TypeList, []Synonym{
			syn("cleanup.policy", "delete,compact", ConfigSourceDynamicTopic),
			syn("log.cleanup.policy", "delete", ConfigSourceDefault),
		}},
		{"segment.bytes", "1048576", ConfigSourceStaticBroker, TypeInt, []Synonym{
			syn("log.segment.bytes", "1048576", ConfigSourceStaticBroker),
			syn("log.segment.bytes", "1073741824", ConfigSourceDefault),
		}},
		{"segment.ms", "604800000", ConfigSourceDefault, TypeLong, []Synonym{
			syn("log.roll.hours", "168", ConfigSourceDefault),
		}},
		{"compression.type", "zstd", ConfigSourceDynamicDefaultBroker, TypeString, []Synonym{
			syn("compression.type", "zstd", ConfigSourceDynamicDefaultBroker),
			syn("compression.type", "producer", ConfigSourceDefault),
		}},
		{"delete.retention.ms", "5000", ConfigSourceDynamicBroker, TypeLong, []Synonym{
			syn("log.cleaner.delete.retention.ms", "5000", ConfigSourceDynamicBroker),
			syn("log.cleaner.delete.retention.ms", "86400000", ConfigSourceDefault),
		}},
		{"flush.ms", "9223372036854775807", ConfigSourceDefault, TypeLong, []Synonym{
			syn("log.flush.scheduler.interval.ms", "9223372036854775807", ConfigSourceDefault),
		}},
		{"min.cleanable.dirty.ratio", "0.5", ConfigSourceDefault, TypeDouble, []Synonym{
			syn("log.cleaner.min.cleanable.ratio", "0.5", ConfigSourceDefault),
		}},
		{"leader.replication.throttled.replicas", "", ConfigSourceDefault, TypeList, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := entry(t, entries, tt.name)
			require.NotNil(t, e.Value)
			require.Equal(t, tt.value, *e.Value)
			require.Equal(t, tt.source, e.Source)
			require.Equal(t, tt.typ, e.Type)
			require.Equal(t, tt.syn, e.Synonyms)
			require.False(t, e.ReadOnly)
			require.False(t, e.Sensitive)
			require.NotEmpty(t, e.Doc)
		})
	}
}

func TestDescribeBroker(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(file, []byte("log.retention.ms=1000\nnum.io.threads=4\n"), 0o644))
	b := load(t, LoadOptions{ConfigFile: file})
	b, err := b.WithDynamic(map[string]string{"message.max.bytes": "2000"}, map[string]string{"message.max.bytes": "3000"})
	require.NoError(t, err)
	entries := DescribeBroker(b)
	require.Len(t, entries, len(brokerKeys))

	str := func(s string) *string { return &s }
	tests := []struct {
		name     string
		value    *string
		source   ConfigSource
		readOnly bool
		syn      []Synonym
	}{
		{"num.io.threads", str("4"), ConfigSourceStaticBroker, true, []Synonym{
			syn("num.io.threads", "4", ConfigSourceStaticBroker),
			syn("num.io.threads", "8", ConfigSourceDefault),
		}},
		{"num.network.threads", str("3"), ConfigSourceDefault, true, []Synonym{
			syn("num.network.threads", "3", ConfigSourceDefault),
		}},
		// Kafka's order: the group's values by source, from the setting's
		// own name on.
		{"log.retention.ms", str("1000"), ConfigSourceStaticBroker, false, []Synonym{
			syn("log.retention.ms", "1000", ConfigSourceStaticBroker),
			syn("log.retention.hours", "168", ConfigSourceDefault),
		}},
		{"log.retention.hours", str("168"), ConfigSourceDefault, false, []Synonym{
			syn("log.retention.hours", "168", ConfigSourceDefault),
		}},
		{"log.retention.minutes", nil, ConfigSourceDefault, false, nil},
		{"message.max.bytes", str("3000"), ConfigSourceDynamicBroker, false, []Synonym{
			syn("message.max.bytes", "3000", ConfigSourceDynamicBroker),
			syn("message.max.bytes", "2000", ConfigSourceDynamicDefaultBroker),
			syn("message.max.bytes", "1048588", ConfigSourceDefault),
		}},
		{"zookeeper.connect", nil, ConfigSourceDefault, true, nil},
		{"listeners", str("PLAINTEXT://127.0.0.1:9092"), ConfigSourceDefault, true, []Synonym{
			syn("listeners", "PLAINTEXT://127.0.0.1:9092", ConfigSourceDefault),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := entry(t, entries, tt.name)
			require.Equal(t, tt.value, e.Value)
			require.Equal(t, tt.source, e.Source)
			require.Equal(t, tt.readOnly, e.ReadOnly)
			require.Equal(t, tt.syn, e.Synonyms)
			require.Equal(t, brokerKeys[tt.name].Type, e.Type)
		})
	}

	defaults := DescribeBrokerDefaults(b)
	require.Equal(t, []Entry{{
		Name: "message.max.bytes", Value: str("2000"), Source: ConfigSourceDynamicDefaultBroker,
		Synonyms: []Synonym{syn("message.max.bytes", "2000", ConfigSourceDynamicDefaultBroker)},
		Type:     TypeInt, Doc: brokerKeys["message.max.bytes"].Doc,
	}}, defaults)
}

func TestWithDynamic(t *testing.T) {
	b := load(t, LoadOptions{Sets: []string{"log.retention.hours=48"}})
	d, err := b.WithDynamic(map[string]string{"log.retention.ms": "60000", "log.segment.bytes": "2048"},
		map[string]string{"log.segment.bytes": "4096"})
	require.NoError(t, err)
	require.Equal(t, int64(60000), d.LogRetentionMs)
	require.Equal(t, 4096, d.LogSegmentBytes)
	require.Equal(t, int64(60000), d.TopicDefaults().RetentionMs)
	require.Equal(t, int64(48*3600*1000), b.LogRetentionMs, "the original is unchanged")
	_, src, _ := d.Value("log.segment.bytes")
	require.Equal(t, Source{Kind: SourceDynamicBroker}, src)

	var out strings.Builder
	require.NoError(t, d.Print(&out))
	require.Contains(t, out.String(), "log.retention.hours=48 (--set; overridden by log.retention.ms)\n")
	require.Contains(t, out.String(), "log.retention.ms=60000 (dynamic cluster default)\n")
	require.Contains(t, out.String(), "log.segment.bytes=4096 (dynamic broker config)\n")

	tests := []struct {
		name     string
		def, per map[string]string
		want     string
		is       error
	}{
		{"read-only", map[string]string{"num.io.threads": "2"}, nil,
			"config: read-only broker config num.io.threads: set it in the config file and restart", ErrReadOnly},
		{"unknown", nil, map[string]string{"retention.ms": "1"}, `config: unknown broker config "retention.ms"`, ErrUnknownBrokerConfig},
		{"invalid", map[string]string{"log.segment.bytes": "x"}, nil,
			"config: log.segment.bytes=x (from dynamic cluster default): not an int; want an integer ≥ 61", ErrInvalidValue},
		{"cross-setting", nil, map[string]string{"log.retention.ms": "0"},
			"config: log.retention.ms=0 (from dynamic broker config): retention of 0 ms; want -1 (no limit) or a positive retention", ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.WithDynamic(tt.def, tt.per)
			require.EqualError(t, err, tt.want)
			require.True(t, errors.Is(err, tt.is))
		})
	}
}

func TestValidateBrokerConfig(t *testing.T) {
	require.NoError(t, ValidateBrokerConfig("log.retention.ms", "1000", false))
	require.NoError(t, ValidateBrokerConfig("message.max.bytes", "1000", true))
	require.ErrorIs(t, ValidateBrokerConfig("listeners", "PLAINTEXT://:1", true), ErrReadOnly)
	require.ErrorIs(t, ValidateBrokerConfig("nope", "1", true), ErrUnknownBrokerConfig)
	require.ErrorIs(t, ValidateBrokerConfig("log.retention.ms", "x", true), ErrInvalidValue)
}

func TestConfigSourceNames(t *testing.T) {
	for s, want := range map[ConfigSource]string{
		0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
		4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
	} {
		require.Equal(t, want, s.String())
	}
}

// TestReplicationThrottledRates: Kafka's dynamic-only quota settings are
// accepted on both broker resources, win per broker over the cluster
// default, are described with their default, and are ignored (with a
// warning) in a config file, as Kafka's KafkaConfig does not know them.
func TestReplicationThrottledRates(t *testing.T) {
	b := load(t, LoadOptions{})
	require.Equal(t, int64(math.MaxInt64), b.LeaderReplicationThrottledRate)
	require.Equal(t, int64(math.MaxInt64), b.FollowerReplicationThrottledRate)
	for _, name := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, ValidateBrokerConfig(name, "1048576", true))
			require.NoError(t, ValidateBrokerConfig(name, "1048576", false))
			require.ErrorIs(t, ValidateBrokerConfig(name, "-1", true), ErrInvalidValue)
			require.ErrorIs(t, ValidateBrokerConfig(name, "1.5", true), ErrInvalidValue)
			e := entry(t, DescribeBroker(b), name)
			require.Equal(t, "9223372036854775807", *e.Value)
			require.Equal(t, ConfigSourceDefault, e.Source)
			require.False(t, e.ReadOnly)
			require.Equal(t, TypeLong, e.Type)
		})
	}
	d, err := b.WithDynamic(
		map[string]string{"leader.replication.throttled.rate": "2000", "follower.replication.throttled.rate": "3000"},
		map[string]string{"leader.replication.throttled.rate": "1000"})
	require.NoError(t, err)
	require.Equal(t, int64(1000), d.LeaderReplicationThrottledRate)
	require.Equal(t, int64(3000), d.FollowerReplicationThrottledRate)
	e := entry(t, DescribeBroker(d), "leader.replication.throttled.rate")
	require.Equal(t, ConfigSourceDynamicBroker, e.Source)
	require.Equal(t, []Synonym{
		syn("leader.replication.throttled.rate", "1000", ConfigSourceDynamicBroker),
		syn("leader.replication.throttled.rate", "2000", ConfigSourceDynamicDefaultBroker),
		syn("leader.replication.throttled.rate", "9223372036854775807", ConfigSourceDefault),
	}, e.Synonyms)
	require.Len(t, DescribeBrokerDefaults(d), 2)

	file := filepath.Join(t.TempDir(), "s.properties")
	require.NoError(t, os.WriteFile(file, []byte("leader.replication.throttled.rate=10\n"), 0o644))
	s, warns, err := Load(LoadOptions{ConfigFile: file, Env: []string{"QK_FOLLOWER_REPLICATION_THROTTLED_RATE=5"},
		Sets: []string{"leader.replication.throttled.rate=7"}})
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), s.LeaderReplicationThrottledRate)
	require.Equal(t, int64(math.MaxInt64), s.FollowerReplicationThrottledRate)
	require.Len(t, warns, 3)
	for _, w := range warns {
		require.Contains(t, w.Message, "dynamic-only setting, ignored")
	}
}

func TestDescribeHTTPAdvertisedListener(t *testing.T) {
	str := func(s string) *string { return &s }
	b := load(t, LoadOptions{Sets: []string{"qk.http.listener=127.0.0.1:0"}})
	e := entry(t, DescribeBroker(b), HTTPAdvertisedListenerKey)
	require.Equal(t, str(""), e.Value, "not bound yet")
	require.True(t, e.ReadOnly)

	b = b.WithHTTPAdvertisedListener("127.0.0.1:40123")
	// A dynamic config change keeps it.
	b, err := b.WithDynamic(nil, map[string]string{"message.max.bytes": "3000"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:40123", b.HTTPAdvertisedListener)
	e = entry(t, DescribeBroker(b), HTTPAdvertisedListenerKey)
	require.Equal(t, str("127.0.0.1:40123"), e.Value)
	require.Equal(t, ConfigSourceDefault, e.Source)
	require.True(t, e.ReadOnly)
	require.Equal(t, []Synonym{syn(HTTPAdvertisedListenerKey, "127.0.0.1:40123", ConfigSourceDefault)}, e.Synonyms)

	_, _, err = Load(LoadOptions{Sets: []string{"qk.http.advertised.listener=1.2.3.4:5"}})
	require.ErrorContains(t, err, "set by the broker")
}
