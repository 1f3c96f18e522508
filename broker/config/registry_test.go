package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestRegistryDefaults: every default parses, passes its validator and is
// already in normalized form, so Print and DescribeConfigs show defaults
// exactly as the table spells them.
func TestRegistryDefaults(t *testing.T) {
	for _, k := range append(BrokerKeys(), TopicKeys()...) {
		t.Run(k.Kind.String()+"/"+k.Name, func(t *testing.T) {
			require.NotEmpty(t, k.Doc)
			require.NotZero(t, k.Type)
			if k.Null {
				require.Empty(t, k.Default, "a null default has no value")
				return
			}
			norm, err := k.Normalize(k.Default)
			require.NoError(t, err)
			require.Equal(t, k.Default, norm)
		})
	}
}

func TestRegistryLinks(t *testing.T) {
	linked := map[string]bool{}
	for _, tk := range TopicKeys() {
		require.Equal(t, KindTopic, tk.Kind)
		for _, s := range tk.Synonyms {
			bk, ok := BrokerKey(s)
			require.True(t, ok, "%s: synonym %s not a broker key", tk.Name, s)
			require.Equal(t, KindTopicDefault, bk.Kind, s)
			require.Equal(t, tk.Name, bk.Topic, s)
			require.Equal(t, ClusterWide, bk.Mode, s)
			linked[s] = true
		}
		if len(tk.Synonyms) > 0 {
			// The broker default has the topic config's type, so a value
			// moves between them unchanged. Groups differ in unit (hours).
			require.Equal(t, tk.Type, brokerKeys[tk.Synonyms[0]].Type, tk.Name)
		}
	}
	for _, bk := range BrokerKeys() {
		if bk.Kind == KindTopicDefault {
			require.True(t, linked[bk.Name], bk.Name)
		} else {
			require.Equal(t, KindBroker, bk.Kind, bk.Name)
			if bk.DynamicOnly {
				// Kafka's dynamic-only quota settings.
				require.Equal(t, ClusterWide, bk.Mode, bk.Name)
			} else {
				require.Equal(t, ReadOnly, bk.Mode, bk.Name)
			}
		}
		for _, s := range bk.Synonyms {
			require.Equal(t, bk.Synonyms, brokerKeys[s].Synonyms, "groups are shared")
		}
	}
	// The brief's pairs, spelled out.
	for broker, topic := range map[string]string{
		"log.retention.ms": "retention.ms", "log.retention.minutes": "retention.ms", "log.retention.hours": "retention.ms",
		"log.segment.bytes": "segment.bytes", "log.roll.ms": "segment.ms", "log.roll.hours": "segment.ms",
		"log.retention.bytes": "retention.bytes", "log.cleanup.policy": "cleanup.policy",
		"log.flush.interval.messages": "flush.messages", "log.flush.interval.ms": "flush.ms",
		"log.index.interval.bytes": "index.interval.bytes", "log.index.size.max.bytes": "segment.index.bytes",
		"message.max.bytes": "max.message.bytes", "min.insync.replicas": "min.insync.replicas",
		"compression.type": "compression.type", "log.message.timestamp.type": "message.timestamp.type",
		"log.cleaner.delete.retention.ms": "delete.retention.ms", "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
		"log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms", "log.segment.delete.delay.ms": "file.delete.delay.ms",
		"log.preallocate": "preallocate", "unclean.leader.election.enable": "unclean.leader.election.enable",
		"log.roll.jitter.ms": "segment.jitter.ms",
	} {
		require.Equal(t, topic, brokerKeys[broker].Topic, broker)
	}
}

// TestEnvNamesOneToOne keeps the QK_ mapping unambiguous: no name has an
// underscore, and no two names map to one variable.
func TestEnvNamesOneToOne(t *testing.T) {
	seen := map[string]string{}
	for _, k := range BrokerKeys() {
		require.NotContains(t, k.Name, "_", k.Name)
		require.Equal(t, strings.ToLower(k.Name), k.Name, "viper lower-cases keys")
		e := EnvName(k.Name)
		require.Empty(t, seen[e], "%s and %s both map to %s", k.Name, seen[e], e)
		seen[e] = k.Name
	}
	require.Equal(t, "QK_LOG_DIRS", EnvName("log.dirs"))
	require.Equal(t, "QK_NUM_IO_THREADS", EnvName("num.io.threads"))
}

// resolvedOnly are the broker settings with no field of their own: they
// feed a resolved field (LogRetentionMs, Listeners, ...).
var resolvedOnly = map[string]bool{
	"listeners": true, "advertised.listeners": true, "listener.security.protocol.map": true,
	"inter.broker.listener.name": true, "security.inter.broker.protocol": true,
	"log.dirs": true, "log.dir": true, "log.roll.ms": true, "log.roll.hours": true,
	"log.roll.jitter.ms": true, "log.roll.jitter.hours": true, "log.retention.ms": true,
	"log.retention.minutes": true, "log.retention.hours": true, "log.flush.interval.ms": true,
	"zookeeper.connection.timeout.ms": true, "max.connections.per.ip.overrides": true,
	"super.users": true,
}

// fieldless reports whether a broker setting has no Broker field: it feeds
// a resolved field, is read per listener (ListenerSecurity), or is not
// used by qk.
func fieldless(k *Key) bool { return resolvedOnly[k.Name] || k.PerListener || k.Unused != "" }

func TestStructTags(t *testing.T) {
	bt := tagged(reflect.TypeFor[Broker]())
	for name := range bt {
		_, ok := brokerKeys[name]
		require.True(t, ok, "Broker tag %s not in the registry", name)
		require.False(t, fieldless(brokerKeys[name]), name)
	}
	for name, k := range brokerKeys {
		_, tagged := bt[name]
		require.True(t, tagged || fieldless(k), "broker key %s has no Broker field", name)
	}
	tt := tagged(reflect.TypeFor[Topic]())
	require.Len(t, tt, len(topicKeys))
	for name := range tt {
		_, ok := topicKeys[name]
		require.True(t, ok, "Topic tag %s not in the registry", name)
	}
}

func TestTypeNumbers(t *testing.T) {
	// DescribeConfigs' ConfigType values (kmsg.ConfigType).
	for typ, want := range map[Type]int8{
		TypeBoolean: 1, TypeString: 2, TypeInt: 3, TypeShort: 4, TypeLong: 5,
		TypeDouble: 6, TypeList: 7, TypeClass: 8, TypePassword: 9,
	} {
		require.Equal(t, want, int8(typ), typ.String())
	}
}

func TestPrintGolden(t *testing.T) {
	tests := []struct {
		name string
		opts LoadOptions
	}{
		{"print_default", LoadOptions{}},
		{"print_layered", LoadOptions{
			ConfigFile: "testdata/server.properties",
			Env:        []string{"QK_LOG_DIRS=/var/lib/qk", "QK_NUM_IO_THREADS=16", "HOME=/root"},
			Sets:       []string{"num.io.threads=4", "log.retention.minutes=30", "advertised.listeners=PLAINTEXT://kafka.example:9092"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := load(t, tt.opts)
			var got bytes.Buffer
			require.NoError(t, b.Print(&got))
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, got.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), got.String())
		})
	}
}
