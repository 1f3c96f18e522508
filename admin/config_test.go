//go:build linux

package admin

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestAlterConfigsFallback alters a topic's configs once with
// IncrementalAlterConfigs and once through the AlterConfigs fallback used
// for clusters older than Kafka 2.3; both must leave the same dynamic
// configs, and the fallback must keep the values it was not asked to touch.
func TestAlterConfigsFallback(t *testing.T) {
	b := brokertest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := &Options{Brokers: []string{b.Addr}, Timeout: 10 * time.Second}
	c, err := o.Dial(ctx)
	require.NoError(t, err)
	defer c.Close()
	require.True(t, c.servesIncrementalAlter(ctx))

	for _, legacy := range []bool{false, true} {
		topic := map[bool]string{false: "incremental", true: "legacy"}[legacy]
		_, err := c.CreateTopics(ctx, CreateTopic{Partitions: 1, Replicas: 1, Configs: map[string]*string{"cleanup.policy": ptr("compact")}}, topic)
		require.NoError(t, err)
		c.legacyAlter = legacy
		r := Resource{Topic: topic}
		_, err = c.AlterConfigs(ctx, r, map[string]string{"retention.ms": "3600000", "segment.ms": "60000"}, nil, false)
		require.NoError(t, err)
		_, err = c.AlterConfigs(ctx, r, map[string]string{"retention.bytes": "1000000"}, []string{"segment.ms"}, false)
		require.NoError(t, err)
		// A dry run changes nothing.
		_, err = c.AlterConfigs(ctx, r, map[string]string{"retention.ms": "1"}, nil, true)
		require.NoError(t, err)

		got, err := c.DescribeConfigs(ctx, r, false)
		require.NoError(t, err)
		values := map[string]string{}
		for _, cv := range got {
			values[cv.Name] = cv.Value
		}
		require.Equal(t, map[string]string{
			"cleanup.policy":  "compact",
			"retention.ms":    "3600000",
			"retention.bytes": "1000000",
		}, values, "topic %s (legacy=%v)", topic, legacy)
	}
}
