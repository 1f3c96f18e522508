package perf

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseProperties(t *testing.T) {
	in := `# a comment
! another
bootstrap.servers=a:9092,b:9092
acks : all
linger.ms 10
  client.id = my\
    client
key\=with\:seps=v\u0041\tx
empty=
`
	got, err := ParseProperties(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, Properties{
		"bootstrap.servers": "a:9092,b:9092",
		"acks":              "all",
		"linger.ms":         "10",
		"client.id":         "myclient",
		"key=with:seps":     "vA\tx",
		"empty":             "",
	}, got)

	_, err = ParseProperties(strings.NewReader(`k=\u00zz`))
	require.ErrorContains(t, err, `malformed \uxxxx escape`)
}

func TestProducerConfigSet(t *testing.T) {
	c := NewProducerConfig()
	require.NoError(t, c.SetAll(Properties{
		"acks": "-1", "linger.ms": "20", "batch.size": "16384", "compression.type": "lz4",
		"bootstrap.servers": "h1:1, h2:2", "retries": "0", "buffer.memory": "33554432",
		"value.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
	}))
	require.Equal(t, "all", c.Acks)
	require.Equal(t, 20*time.Millisecond, c.Linger)
	require.Equal(t, int32(16384), c.BatchMaxBytes)
	require.Equal(t, []string{"h1:1", "h2:2"}, c.Brokers)
	require.Equal(t, 0, c.Retries)

	for _, tc := range []struct{ key, value, err string }{
		{"foo.bar", "1", `unknown producer property "foo.bar"`},
		{"acks", "2", `producer property acks=2: acks "2"`},
		{"linger.ms", "soon", "producer property linger.ms=soon: want milliseconds >= 0"},
		{"batch.size", "0", "want an integer >= 1"},
		{"compression.type", "brotli", `compression "brotli"`},
		{"value.serializer", "StringSerializer", "qk sends raw bytes"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			c := NewProducerConfig()
			require.ErrorContains(t, c.Set(tc.key, tc.value), tc.err)
		})
	}
}

// TestProducerConfigIdempotence follows Kafka 3.x: idempotence is on with
// acks=all, silently off otherwise, and an explicit request that cannot be
// met is an error.
func TestProducerConfigIdempotence(t *testing.T) {
	opts := func(p Properties) error {
		c := NewProducerConfig()
		require.NoError(t, c.SetAll(p))
		_, err := c.Opts()
		return err
	}
	require.NoError(t, opts(Properties{"acks": "1"}))
	require.NoError(t, opts(Properties{"max.in.flight.requests.per.connection": "10"}))
	require.ErrorContains(t, opts(Properties{"acks": "1", "enable.idempotence": "true"}), "enable.idempotence=true needs acks=all")
	require.ErrorContains(t, opts(Properties{"enable.idempotence": "true", "max.in.flight.requests.per.connection": "6"}), "<= 5")
	require.ErrorContains(t, opts(Properties{"acks": "1", "transactional.id": "x"}), "transactional.id needs idempotence")

	// The options build a client.
	c := NewProducerConfig()
	o, err := c.Opts()
	require.NoError(t, err)
	cl, err := kgo.NewClient(append(o, kgo.SeedBrokers("127.0.0.1:1"))...)
	require.NoError(t, err)
	cl.Close()
}

func TestConsumerConfigSet(t *testing.T) {
	var c ConsumerConfig
	require.NoError(t, c.SetAll(Properties{"group.id": "g", "max.partition.fetch.bytes": "65536", "auto.offset.reset": "latest", "enable.auto.commit": "false"}))
	require.Equal(t, "g", c.Group)
	require.Equal(t, int32(65536), c.FetchPartitionMax)
	require.Equal(t, "latest", c.OffsetReset)
	require.ErrorContains(t, c.Set("auto.offset.reset", "none"), "want earliest or latest")
	require.ErrorContains(t, c.Set("socket.buffer", "1"), `unknown consumer property "socket.buffer"`)
	cl, err := kgo.NewClient(append(c.Opts(), kgo.SeedBrokers("127.0.0.1:1"), kgo.ConsumerGroup(c.Group), kgo.ConsumeTopics("t"))...)
	require.NoError(t, err)
	cl.Close()
}

// TestProducerDefaultsAreKafkas: the defaults that differ between Kafka's
// producer and franz-go are Kafka's; in particular five requests in flight
// without idempotence (franz-go's own default there is one).
func TestProducerDefaultsAreKafkas(t *testing.T) {
	c := NewProducerConfig()
	require.Equal(t, "all", c.Acks)
	require.Equal(t, 5, c.MaxInFlight)
	require.Equal(t, 5*time.Millisecond, c.Linger)
	require.NoError(t, c.Set("acks", "1"))
	_, err := c.Opts()
	require.NoError(t, err)
}
