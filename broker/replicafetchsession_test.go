//go:build linux

package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestReplicaFetchSessions: a follower fetching eight partitions from one
// leader opens a fetch session with one full fetch, then fetches
// incrementally: records produced to one partition make its incremental
// fetches name that partition only, a topic created on the pair joins the
// session (no new full fetch), a deleted one is forgotten. When the
// leader stops, the follower leads; when the old leader returns it
// follows in a session of its own and the logs end equal.
func TestReplicaFetchSessions(t *testing.T) {
	c := brokertest.StartCluster(t, 2, brokertest.WithConfig("controlled.shutdown.max.retries", "0"),
		brokertest.WithConfig("replica.fetch.wait.max.ms", "100"))
	leader, follower := c.Brokers[0], c.Brokers[1]
	assignment := map[int32][]int32{}
	for p := range int32(8) {
		assignment[p] = []int32{0, 1}
	}
	createReplicated(t, c, "fs", assignment, nil)
	inSync := func(topic string, n int32) func() bool {
		return func() bool {
			for p := range n {
				rp, err := leader.Replicas().Partition(topic, p)
				if err != nil || !rp.IsLeader() || len(rp.State().ISR) != 2 {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 10*time.Second, "every partition in sync", inSync("fs", 8))
	// Settled: the session holds the eight partitions and its fetches
	// name none.
	before := follower.FetcherStats()
	waitFor(t, 10*time.Second, "incremental fetches that name nothing", func() bool {
		now := follower.FetcherStats()
		if now.IncrementalPartitions != before.IncrementalPartitions || now.FullFetches != before.FullFetches {
			before = now // not settled yet: start counting again
			return false
		}
		return now.IncrementalFetches >= before.IncrementalFetches+3
	})
	require.Positive(t, before.FullFetches)
	require.GreaterOrEqual(t, before.FullPartitions, int64(1))

	// Five records to partition 3: each changes only that partition's
	// fetch offset, so at most five partitions are named in all.
	cl := newClient(t, []string{leader.Addr}, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 5 {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "fs", Partition: 3, Value: []byte(fmt.Sprint(i))}).FirstErr())
	}
	waitFor(t, 10*time.Second, "the follower has them", func() bool {
		p, err := follower.Replicas().Partition("fs", 3)
		return err == nil && p.Log().LogEndOffset() == 5 && p.HighWatermark() == 5
	})
	after := follower.FetcherStats()
	require.Equal(t, before.FullFetches, after.FullFetches, "no new full fetch")
	named := after.IncrementalPartitions - before.IncrementalPartitions
	require.GreaterOrEqual(t, named, int64(1), "partition 3 was named")
	require.LessOrEqual(t, named, int64(5), "only partition 3 was named, once per change")
	require.Greater(t, after.IncrementalFetches, before.IncrementalFetches)

	// A new topic on the same pair: its partitions join the session.
	createReplicated(t, c, "fs2", map[int32][]int32{0: {0, 1}, 1: {0, 1}}, nil)
	waitFor(t, 10*time.Second, "the new partitions named in incremental fetches", func() bool {
		return follower.FetcherStats().IncrementalPartitions-after.IncrementalPartitions >= 2
	})
	waitFor(t, 10*time.Second, "the new topic in sync", inSync("fs2", 2))
	added := follower.FetcherStats()
	require.Equal(t, before.FullFetches, added.FullFetches, "the new partitions joined the session")

	// Deleted: forgotten.
	adm := newAdmin(t, leader.Addr)
	_, err := adm.DeleteTopics(testCtx(t), "fs2")
	require.NoError(t, err)
	waitFor(t, 10*time.Second, "the deleted partitions forgotten", func() bool {
		st := follower.FetcherStats()
		return st.ForgottenPartitions-added.ForgottenPartitions >= 2
	})
	require.Equal(t, before.FullFetches, follower.FetcherStats().FullFetches)

	// Leader change: the follower leads, the old leader follows it in a
	// new session and catches up with what was written meanwhile.
	leader.Stop()
	waitFor(t, 10*time.Second, "the follower leading", func() bool { return partitionOn(t, follower, "fs").IsLeader() })
	cl2 := newClient(t, []string{follower.Addr}, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 5 {
		require.NoError(t, cl2.ProduceSync(testCtx(t), &kgo.Record{Topic: "fs", Partition: 0, Value: []byte(fmt.Sprint(i))}).FirstErr())
	}
	leader.Restart()
	waitFor(t, 10*time.Second, "the old leader caught up", func() bool {
		p, err := leader.Replicas().Partition("fs", 0)
		return err == nil && p.Log().LogEndOffset() == 5
	})
	sameLogs(t, leader, follower, "fs")
	waitFor(t, 10*time.Second, "the old leader fetching incrementally", func() bool {
		st := leader.FetcherStats()
		return st.FullFetches >= 1 && st.IncrementalFetches >= 1
	})
}
