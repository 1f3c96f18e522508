package config

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// configDoc is the committed page, from the package directory.
const configDoc = "../../docs/config.md"

// TestKafkaDefaultDiffers: KafkaDefault and KafkaNull are set only where
// Kafka's default differs from qk's, and are set for the settings whose
// default qk changed on purpose.
func TestKafkaDefaultDiffers(t *testing.T) {
	for _, k := range append(BrokerKeys(), TopicKeys()...) {
		if k.KafkaDefault != "" {
			require.False(t, !k.Null && k.KafkaDefault == k.Default,
				"%s %s: KafkaDefault %q is qk's default; leave it empty", k.Kind, k.Name, k.KafkaDefault)
		}
		if k.KafkaNull {
			require.False(t, k.Null, "%s %s: KafkaNull, and qk has no default either", k.Kind, k.Name)
			require.Empty(t, k.KafkaDefault, "%s %s: KafkaNull and a KafkaDefault", k.Kind, k.Name)
		}
	}
	for name, want := range map[string]string{
		"broker.id": "-1",
		"listeners": "PLAINTEXT://:9092",
		"log.dir":   "/tmp/kafka-logs",
	} {
		k, ok := BrokerKey(name)
		require.True(t, ok, name)
		require.Equal(t, want, k.KafkaDefault, name)
	}
	k, _ := BrokerKey("log.dirs")
	require.True(t, k.KafkaNull, "log.dirs: Kafka has no default")
}

// TestConfigDocStale: docs/config.md is what WriteMarkdown writes, so the
// page never drifts from the registry.
func TestConfigDocStale(t *testing.T) {
	var got bytes.Buffer
	require.NoError(t, WriteMarkdown(&got))
	want, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	if d := firstDiff(want, got.Bytes()); d != "" {
		t.Fatalf("docs/config.md is out of date; run make docs\n%s", d)
	}
}

// TestConfigDocDetectsChange: the staleness check can fail. A copy of the
// registry writes the committed page byte for byte; the same copy with one
// doc changed does not.
func TestConfigDocDetectsChange(t *testing.T) {
	want, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	copyKeys := func(keys []*Key) []*Key {
		out := make([]*Key, len(keys))
		for i, k := range keys {
			c := *k
			out[i] = &c
		}
		return out
	}
	brokers, topics := copyKeys(BrokerKeys()), copyKeys(TopicKeys())
	var same bytes.Buffer
	require.NoError(t, writeMarkdown(&same, brokers, topics))
	require.Empty(t, firstDiff(want, same.Bytes()), "the copy must write the committed page")

	for i, k := range brokers {
		if k.Name == "num.io.threads" {
			brokers[i].Doc += " Changed."
		}
	}
	var changed bytes.Buffer
	require.NoError(t, writeMarkdown(&changed, brokers, topics))
	d := firstDiff(want, changed.Bytes())
	require.NotEmpty(t, d, "a changed doc must make the page stale")
	require.Contains(t, d, "Changed.")
}

// firstDiff describes the first line where got differs from want, or
// returns "" when they are equal.
func firstDiff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g || i >= len(wl) || i >= len(gl) {
			return fmt.Sprintf("first difference at line %d:\ncommitted: %q\ngenerated: %q", i+1, w, g)
		}
	}
	return "files differ"
}

// TestWriteMarkdown: a setting's section has its facts, and a doc's
// markup characters stay literal.
func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b))
	page := b.String()
	section := func(heading string) string {
		i := strings.Index(page, "\n"+heading+"\n")
		require.GreaterOrEqual(t, i, 0, heading)
		s := page[i+1:]
		if j := strings.Index(s[len(heading):], "\n### "); j >= 0 {
			s = s[:len(heading)+j]
		}
		return s
	}
	require.Less(t, strings.Index(page, "\n## Broker settings\n"), strings.Index(page, "\n## Topic configs\n"))
	for heading, want := range map[string][]string{
		"### broker.id": {"- Type: int\n", "- Default: `0`\n", "- Kafka's default: `-1`\n",
			"- Dynamic: read-only\n", "- Environment: `QK_BROKER_ID`\n"},
		"### log.dirs":         {"- Default: `./qk-data`\n", "- Kafka's default: none (null)\n"},
		"### log.retention.ms": {"- Default: none (unset)\n", "- Dynamic: cluster-wide\n", "- Default of the topic config: `retention.ms`\n"},
		"### retention.ms": {"- Dynamic: per topic\n",
			"- Broker default: `log.retention.ms`, `log.retention.minutes`, `log.retention.hours`\n"},
		"### leader.replication.throttled.rate": {"- Dynamic: cluster-wide; dynamic only"},
		"### qk.http.listener":                  {"- Kafka: none, a qk extension\n"},
		"### listener.security.protocol.map":    {`listener.name.\<listener name lower-cased>.ssl.\* and .sasl.\*`},
	} {
		s := section(heading)
		for _, w := range want {
			require.Contains(t, s, w, heading)
		}
	}
	require.NotContains(t, section("### num.io.threads"), "Kafka's default")
}

func TestEscapeMarkdown(t *testing.T) {
	for in, want := range map[string]string{
		"listener.name.<listener>.ssl.* and .sasl.*": `listener.name.\<listener>.ssl.\* and .sasl.\*`,
		"SASL_SSL and user_alice":                    "SASL_SSL and user_alice",
		"__consumer_offsets":                         `\_\_consumer_offsets`,
		"(_x_)":                                      `(\_x_)`,
		"a `b` c\\d":                                 "a \\`b\\` c\\\\d",
	} {
		require.Equal(t, want, escapeMarkdown(in), in)
	}
}
