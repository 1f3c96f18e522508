//go:build linux

package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestUncleanElectionOnConfigChange: the only in-sync replica (A) is
// gone and the out-of-sync one (B) is back; with
// unclean.leader.election.enable=false the partition stays offline. Once
// the topic's config, or the cluster-wide default, allows unclean
// elections the controller elects B at once (Kafka's
// TopicUncleanLeaderElectionEnable event and its broker-config
// counterpart), without waiting for a broker to come or go.
func TestUncleanElectionOnConfigChange(t *testing.T) {
	enable := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}
	for _, tc := range []struct {
		name  string
		topic map[string]string // the topic's overrides
		alter func(context.Context, *kadm.Client) (kadm.AlterConfigsResponses, error)
	}{
		{"topic", map[string]string{"unclean.leader.election.enable": "false"}, func(ctx context.Context, adm *kadm.Client) (kadm.AlterConfigsResponses, error) {
			return adm.AlterTopicConfigs(ctx, enable, "unclean")
		}},
		{"cluster default", nil, func(ctx context.Context, adm *kadm.Client) (kadm.AlterConfigsResponses, error) {
			return adm.AlterBrokerConfigs(ctx, enable) // no broker: the cluster-wide default
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testUncleanOnConfigChange(t, tc.topic, tc.alter) })
	}
}

func testUncleanOnConfigChange(t *testing.T, topicConfig map[string]string, alter func(context.Context, *kadm.Client) (kadm.AlterConfigsResponses, error)) {
	c := brokertest.StartCluster(t, 2, brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	a, b := c.Brokers[0], c.Brokers[1]
	createReplicated(t, c, "unclean", map[int32][]int32{0: {0, 1}}, topicConfig)
	waitFor(t, 10*time.Second, "A leading with both in sync", func() bool {
		p, err := a.Replicas().Partition("unclean", 0)
		return err == nil && p.IsLeader() && len(p.State().ISR) == 2
	})
	acks1 := func(addr string) *kgo.Client {
		return newClient(t, []string{addr}, kgo.DefaultProduceTopic("unclean"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	require.NoError(t, acks1(a.Addr).ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m1")}).FirstErr())
	waitFor(t, 10*time.Second, "B has m1", func() bool { return partitionOn(t, b, "unclean").Log().LogEndOffset() == 1 })
	b.Stop()
	waitFor(t, 10*time.Second, "A alone in the ISR", func() bool {
		return slices.Equal(partitionOn(t, a, "unclean").State().ISR, []int32{0})
	})
	require.NoError(t, acks1(a.Addr).ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m2")}).FirstErr())
	a.Stop()
	b.Restart()

	leads := func() bool {
		tp := b.Cache().Snapshot().Topics["unclean"]
		return tp != nil && len(tp.Partitions) == 1 && tp.Partitions[0].Leader == 1
	}
	// Offline, and staying so: B is out of sync and unclean elections
	// are off.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		require.False(t, leads(), "B elected with unclean.leader.election.enable=false")
	}
	resp, err := alter(testCtx(t), newAdmin(t, b.Addr))
	require.NoError(t, err)
	for _, r := range resp {
		require.NoError(t, r.Err)
	}
	waitFor(t, 10*time.Second, "B leading (unclean) after the config change", leads)
	require.NoError(t, acks1(b.Addr).ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m3")}).FirstErr())
	require.Equal(t, []string{"m1", "m3"}, values(consume(t, []string{b.Addr}, "unclean", 2)))
}
