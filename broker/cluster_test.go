//go:build linux

package broker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestClusterOfThree runs three in-process brokers on one metadata store:
// every broker sees every other, topics are spread over them, clients
// produce to and consume from each leader, only the controller creates
// topics, and when the controller stops another broker takes over.
func TestClusterOfThree(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	addrs := c.Addrs()
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "every broker to see all three", func() bool {
			return len(b.Cache().Snapshot().Brokers) == 3
		})
	}
	adm := newAdmin(t, addrs...)
	createTopic(t, adm, "spread", 6, nil)
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the topic on every broker", func() bool {
			_, ok := b.Cache().Snapshot().Topics["spread"]
			return ok
		})
	}
	topics, err := newAdmin(t, addrs...).ListTopics(testCtx(t))
	require.NoError(t, err)
	leaders := map[int32]int{}
	for _, p := range topics["spread"].Partitions {
		require.NoError(t, p.Err)
		leaders[p.Leader]++
	}
	require.Equal(t, map[int32]int{0: 2, 1: 2, 2: 2}, leaders, "round-robin leaders")

	cl := newClient(t, addrs, kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range 60 {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	got := consume(t, addrs, "spread", 60)
	parts := map[int32]bool{}
	for _, r := range got {
		parts[r.Partition] = true
	}
	require.Len(t, parts, 6)

	// Only the controller creates topics; not more replicas than brokers.
	raw := dialRaw(t, c.Brokers[1].Addr)
	require.Equal(t, kerr.NotController.Code, rawCreateTopics(t, raw, false, topicReq("elsewhere", 1, 1, nil))[0].ErrorCode)
	_, err = adm.CreateTopic(testCtx(t), 1, 4, nil, "replicated")
	require.ErrorIs(t, err, kerr.InvalidReplicationFactor, "more replicas than brokers")

	// The controller stops: another broker is elected, and the cluster
	// keeps creating topics.
	c.Brokers[0].Stop()
	survivor := c.Brokers[1]
	waitFor(t, 10*time.Second, "a new controller", func() bool {
		id := survivor.Cache().Snapshot().ControllerID
		return id == 1 || id == 2
	})
	adm2 := newAdmin(t, c.Brokers[1].Addr, c.Brokers[2].Addr)
	createTopic(t, adm2, "after-failover", 2, nil)
	topics, err = newAdmin(t, c.Brokers[1].Addr).ListTopics(testCtx(t))
	require.NoError(t, err)
	for _, p := range topics["after-failover"].Partitions {
		require.NoError(t, p.Err)
		require.NotEqual(t, int32(0), p.Leader, "a stopped broker got a partition")
	}
}

// TestAutoCreateFromAnyBroker: a producer that knows only a broker that
// is not the controller auto-creates its topic there (the broker writes
// the assignment for the controller to pick up, as Kafka's brokers do),
// and its records arrive; so does a group's first FindCoordinator, which
// creates __consumer_offsets.
func TestAutoCreateFromAnyBroker(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	var other *brokertest.Broker
	for _, b := range c.Brokers {
		if b.Cache().Snapshot().ControllerID != b.ID {
			other = b
			break
		}
	}
	require.NotNil(t, other)
	cl := newClient(t, []string{other.Addr}, kgo.DefaultProduceTopic("auto-here"), kgo.AllowAutoTopicCreation())
	for i := range 10 {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the auto-created topic on every broker", func() bool {
			_, ok := b.Cache().Snapshot().Topics["auto-here"]
			return ok
		})
	}
	require.Len(t, consume(t, []string{other.Addr}, "auto-here", 10), 10)

	g := newClient(t, []string{other.Addr}, kgo.ConsumeTopics("auto-here"), kgo.ConsumerGroup("g-anywhere"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	for n < 10 {
		fs := g.PollFetches(testCtx(t))
		require.NoError(t, fs.Err0())
		n += fs.NumRecords()
	}
	require.NoError(t, g.CommitUncommittedOffsets(testCtx(t)))
	offs, err := newAdmin(t, c.Addrs()...).FetchOffsets(testCtx(t), "g-anywhere")
	require.NoError(t, err)
	total := int64(0)
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	require.Equal(t, int64(10), total, "the group's commits are read through any broker")
}
