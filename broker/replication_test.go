//go:build linux

package broker_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/metadata"
)

// createReplicated writes a topic with the given assignment into the
// cluster's store, as Kafka's tools do (the controller picks it up).
func createReplicated(t *testing.T, c *brokertest.Cluster, topic string, assignment map[int32][]int32, config map[string]string) {
	t.Helper()
	sess, err := c.Store.NewSession()
	require.NoError(t, err)
	defer sess.Close()
	ctx := testCtx(t)
	_, err = sess.Create(ctx, metadata.EntityConfigPath(metadata.ConfigTopics, topic), metadata.MarshalEntityConfig(config), 0)
	require.NoError(t, err)
	_, err = sess.Create(ctx, metadata.TopicPath(topic), metadata.MarshalTopicAssignment(metadata.TopicAssignment{
		TopicID: metadata.NewUUID(), Partitions: assignment}), 0)
	require.NoError(t, err)
}

// TestReplication: a partition with three replicas on three in-process
// brokers. Followers fetch from the leader and join the ISR; acks=all
// writes are acknowledged once every ISR member has them; the followers'
// logs end byte for byte equal to the leader's; a stopped follower leaves
// the ISR and acks=all goes on with two; with one left, below
// min.insync.replicas=2, acks=all is refused with NOT_ENOUGH_REPLICAS
// while acks=1 still works.
func TestReplication(t *testing.T) {
	// The last broker standing leads a partition whose other replicas are
	// down: its controlled shutdown cannot move it (Kafka retries; here
	// the test does not wait for that).
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	createReplicated(t, c, "r3", map[int32][]int32{0: {0, 1, 2}}, map[string]string{"min.insync.replicas": "2"})
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the replicated topic on every broker", func() bool {
			tp := b.Cache().Snapshot().Topics["r3"]
			return tp != nil && len(tp.Partitions) == 1 && tp.Partitions[0].Leader == 0 && len(tp.Partitions[0].ISR) == 3
		})
	}
	leader := c.Brokers[0]
	cl := newClient(t, []string{leader.Addr}, kgo.DefaultProduceTopic("r3"), kgo.RequiredAcks(kgo.AllISRAcks()))
	var want []string
	for i := range 200 {
		v := fmt.Sprintf("v%03d", i)
		want = append(want, v)
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte(v)}).FirstErr())
	}
	lp, err := leader.Replicas().Partition("r3", 0)
	require.NoError(t, err)
	require.Equal(t, int64(200), lp.HighWatermark(), "acknowledged = committed")
	for _, b := range c.Brokers[1:] {
		waitFor(t, 10*time.Second, "the follower caught up", func() bool {
			p, err := b.Replicas().Partition("r3", 0)
			return err == nil && p.Log().LogEndOffset() == 200 && p.HighWatermark() == 200
		})
	}
	// Byte for byte: offsets, epochs, producer fields and CRCs as the
	// leader wrote them.
	segment := func(b *brokertest.Broker) []byte {
		data, err := os.ReadFile(filepath.Join(b.Dir, "r3-0", "00000000000000000000.log"))
		require.NoError(t, err)
		return data
	}
	ref := segment(leader)
	for _, b := range c.Brokers[1:] {
		require.True(t, bytes.Equal(ref, segment(b)), "broker %d's log differs from the leader's", b.ID)
	}
	got := consume(t, c.Addrs(), "r3", 200)
	var values []string
	for _, r := range got {
		values = append(values, string(r.Value))
	}
	require.Equal(t, want, values)

	// One follower goes: the ISR shrinks to two, acks=all goes on.
	c.Brokers[2].Stop()
	waitFor(t, 15*time.Second, "the ISR without broker 2", func() bool {
		return slices.Equal(lp.State().ISR, []int32{0, 1})
	})
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("two in sync")}).FirstErr())

	// Another: one in sync, below min.insync.replicas.
	c.Brokers[1].Stop()
	waitFor(t, 15*time.Second, "the ISR of the leader alone", func() bool {
		return slices.Equal(lp.State().ISR, []int32{0})
	})
	one := newClient(t, []string{leader.Addr}, kgo.DefaultProduceTopic("r3"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second))
	err = one.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("refused")}).FirstErr()
	require.ErrorIs(t, err, kerr.NotEnoughReplicas)
	acks1 := newClient(t, []string{leader.Addr}, kgo.DefaultProduceTopic("r3"), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite())
	require.NoError(t, acks1.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("acks=1")}).FirstErr())
}

// TestCreateReplicatedTopic: CreateTopics with replication factor 3 on
// three brokers: Kafka's assignment (three distinct replicas, leaders
// spread), every replica in the ISR, acks=all writes to every partition
// acknowledged and replicated.
func TestCreateReplicatedTopic(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	adm := newAdmin(t, c.Addrs()...)
	_, err := adm.CreateTopic(testCtx(t), 6, 3, nil, "rf3")
	require.NoError(t, err)
	leaders := map[int32]int{}
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the topic with its ISRs on every broker", func() bool {
			tp := b.Cache().Snapshot().Topics["rf3"]
			if tp == nil || len(tp.Partitions) != 6 {
				return false
			}
			for _, p := range tp.Partitions {
				if len(p.ISR) != 3 || p.Leader < 0 {
					return false
				}
			}
			return true
		})
	}
	for _, p := range c.Brokers[0].Cache().Snapshot().Topics["rf3"].Partitions {
		r := slices.Clone(p.Replicas)
		slices.Sort(r)
		require.Equal(t, []int32{0, 1, 2}, r)
		leaders[p.Leader]++
	}
	require.Equal(t, map[int32]int{0: 2, 1: 2, 2: 2}, leaders, "leaders spread")

	cl := newClient(t, c.Addrs(), kgo.DefaultProduceTopic("rf3"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range 120 {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr())
	}
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "every replica with every record", func() bool {
			for p := range int32(6) {
				rp, err := b.Replicas().Partition("rf3", p)
				if err != nil || rp.Log().LogEndOffset() != 20 || rp.HighWatermark() != 20 {
					return false
				}
			}
			return true
		})
	}
	require.Len(t, consume(t, c.Addrs(), "rf3", 120), 120)
}

// TestOffsetsReplicated: __consumer_offsets with Kafka's default
// offsets.topic.replication.factor (3) on three brokers. A commit is
// answered once its partition's ISR has it; the coordinator's broker
// stops; the new leader of that partition, from its ISR, becomes the
// group's coordinator, loads the group and serves the commit.
func TestOffsetsReplicated(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	adm := newAdmin(t, c.Addrs()...)
	createTopic(t, adm, "data", 2, nil)
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the topic on every broker", func() bool { return b.Cache().Snapshot().Topics["data"] != nil })
	}
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: "data", Partition: 0, At: 42, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "data", Partition: 1, At: 7, LeaderEpoch: -1})
	cr, err := adm.CommitOffsets(testCtx(t), "replicated-group", commit)
	require.NoError(t, err)
	require.NoError(t, cr.Error())

	off := c.Brokers[0].Cache().Snapshot().Topics["__consumer_offsets"]
	require.NotNil(t, off)
	require.Len(t, off.Partitions[0].Replicas, 3, "offsets.topic.replication.factor=3 is honoured")
	// The coordinator: the leader of the group's offsets partition.
	var coordinator *brokertest.Broker
	for _, b := range c.Brokers {
		p := group.PartitionFor("replicated-group", 50)
		if b.Cache().Snapshot().Topics["__consumer_offsets"].Partitions[p].Leader == b.ID {
			coordinator = b
		}
	}
	require.NotNil(t, coordinator)
	coordinator.Stop()
	var others []string
	for _, b := range c.Brokers {
		if b != coordinator {
			others = append(others, b.Addr)
		}
	}
	adm2 := newAdmin(t, others...)
	waitFor(t, 20*time.Second, "the commit served by the new coordinator", func() bool {
		fetched, err := adm2.FetchOffsets(testCtx(t), "replicated-group")
		if err != nil || fetched.Error() != nil {
			return false
		}
		o0, ok0 := fetched.Lookup("data", 0)
		o1, ok1 := fetched.Lookup("data", 1)
		return ok0 && ok1 && o0.At == 42 && o1.At == 7
	})
}

// TestElectLeaders: a partition's preferred replica (its first) stops and
// comes back as a follower; ElectLeaders (preferred) gives it the
// leadership back, and says ELECTION_NOT_NEEDED for partitions already
// led by their preferred replica; with auto.leader.rebalance.enable the
// controller does the same by itself every
// leader.imbalance.check.interval.seconds.
func TestElectLeaders(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("auto=%v", auto), func(t *testing.T) {
			sets := []brokertest.Option{brokertest.WithConfig("controlled.shutdown.max.retries", "0")}
			if auto {
				sets = append(sets, brokertest.WithConfig("leader.imbalance.check.interval.seconds", "1"))
			} else {
				sets = append(sets, brokertest.WithConfig("auto.leader.rebalance.enable", "false"))
			}
			c := brokertest.StartCluster(t, 3, sets...)
			createReplicated(t, c, "pref", map[int32][]int32{0: {1, 0, 2}, 1: {2, 0, 1}}, nil)
			led := func(b *brokertest.Broker, p int32, by int32) bool {
				tp := b.Cache().Snapshot().Topics["pref"]
				return tp != nil && len(tp.Partitions) == 2 && tp.Partitions[p].Leader == by && len(tp.Partitions[p].ISR) == 3
			}
			waitFor(t, 10*time.Second, "preferred leaders with full ISRs", func() bool { return led(c.Brokers[0], 0, 1) && led(c.Brokers[0], 1, 2) })
			c.Brokers[1].Restart() // leads partition 0 elsewhere meanwhile, comes back a follower
			waitFor(t, 15*time.Second, "broker 1 back in the ISR, not leading", func() bool {
				tp := c.Brokers[0].Cache().Snapshot().Topics["pref"]
				p := tp.Partitions[0]
				return p.Leader != 1 && len(p.ISR) == 3
			})
			if !auto {
				adm := newAdmin(t, c.Addrs()...)
				res, err := adm.ElectLeaders(testCtx(t), kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}, 1: {}}})
				require.NoError(t, err)
				require.NoError(t, res["pref"][0].Err)
				require.ErrorIs(t, res["pref"][1].Err, kerr.ElectionNotNeeded)
			}
			waitFor(t, 15*time.Second, "broker 1 leading partition 0 again", func() bool { return led(c.Brokers[0], 0, 1) })
		})
	}
}
