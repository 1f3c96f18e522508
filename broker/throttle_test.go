//go:build linux

package broker_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

const (
	throttleRate    = 1 << 20 // 1 MiB/s
	throttleBacklog = 4 << 20 // what the follower must catch up with
)

// throttleCluster starts two brokers with short quota windows (two
// samples of one second, so a fresh quota lets about one second's worth
// pass at once rather than Kafka's ten) and 256 KiB fetches, and a topic
// "thr" on both, led by broker 0, with topicConfig. Both replication
// rates are set as cluster defaults when rate is positive.
func throttleCluster(t *testing.T, topicConfig map[string]string, rate int64) (*brokertest.Cluster, *brokertest.Broker, *brokertest.Broker) {
	t.Helper()
	c := brokertest.StartCluster(t, 2, brokertest.WithConfig("controlled.shutdown.max.retries", "0"),
		brokertest.WithConfig("replication.quota.window.num", "2"),
		brokertest.WithConfig("replication.quota.window.size.seconds", "1"),
		brokertest.WithConfig("replica.fetch.max.bytes", strconv.Itoa(256<<10)))
	leader, follower := c.Brokers[0], c.Brokers[1]
	if rate > 0 {
		r := strconv.FormatInt(rate, 10)
		resp, err := newAdmin(t, leader.Addr).AlterBrokerConfigs(testCtx(t), []kadm.AlterConfig{
			{Name: "leader.replication.throttled.rate", Value: &r},
			{Name: "follower.replication.throttled.rate", Value: &r},
		})
		require.NoError(t, err)
		require.NoError(t, resp[0].Err)
	}
	createReplicated(t, c, "thr", map[int32][]int32{0: {0, 1}}, topicConfig)
	waitFor(t, 10*time.Second, "both in sync", func() bool {
		p, err := leader.Replicas().Partition("thr", 0)
		return err == nil && p.IsLeader() && len(p.State().ISR) == 2
	})
	if rate > 0 {
		waitFor(t, 10*time.Second, "the rates applied", func() bool {
			return follower.Config().FollowerReplicationThrottledRate == rate && leader.Config().LeaderReplicationThrottledRate == rate
		})
	}
	return c, leader, follower
}

// produceBacklog writes n bytes of incompressible records to "thr".
func produceBacklog(t *testing.T, addr string, n int, acks kgo.Acks) {
	t.Helper()
	opts := []kgo.Opt{kgo.DefaultProduceTopic("thr"), kgo.RequiredAcks(acks), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(256 << 10)}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := newClient(t, []string{addr}, opts...)
	const size = 16 << 10
	recs := make([]*kgo.Record, 0, n/size)
	for range n / size {
		v := make([]byte, size)
		for i := range v {
			v[i] = byte(rand.Uint32())
		}
		recs = append(recs, &kgo.Record{Value: v})
	}
	require.NoError(t, cl.ProduceSync(testCtx(t), recs...).FirstErr())
}

// catchUp stops the follower, writes the backlog on the leader alone and
// restarts the follower; it returns how long the follower took to catch
// up and the bytes it copied.
func catchUp(t *testing.T, leader, follower *brokertest.Broker) (time.Duration, int64) {
	t.Helper()
	follower.Stop()
	waitFor(t, 10*time.Second, "the leader alone in the ISR", func() bool {
		return len(partitionOn(t, leader, "thr").State().ISR) == 1
	})
	produceBacklog(t, leader.Addr, throttleBacklog, kgo.LeaderAck())
	lp := partitionOn(t, leader, "thr")
	end := lp.Log().LogEndOffset()
	start := time.Now()
	follower.Restart()
	waitFor(t, 60*time.Second, "the follower caught up", func() bool {
		p, err := follower.Replicas().Partition("thr", 0)
		return err == nil && p.Log().LogEndOffset() >= end
	})
	elapsed := time.Since(start)
	return elapsed, partitionOn(t, follower, "thr").Log().Size()
}

// TestReplicationThrottle: a follower catching up a 4 MiB backlog on a
// partition throttled at 1 MiB/s, by the leader's quota or by its own,
// copies it at about the rate (after the first window's worth); without
// a throttle it copies it at once. Bounds are generous: the quota is an
// average over the window and a fetch under way is never cut.
func TestReplicationThrottle(t *testing.T) {
	if testing.Short() {
		t.Skip("takes seconds by design")
	}
	// Copying B bytes at R bytes/s after a first window of R: (B-R)/R.
	minThrottled := time.Duration(float64(throttleBacklog-throttleRate)/throttleRate*float64(time.Second)) / 2
	tests := []struct {
		name   string
		config map[string]string
		rate   int64
	}{
		{"leader", map[string]string{"leader.replication.throttled.replicas": "0:0"}, throttleRate},
		{"leader star", map[string]string{"leader.replication.throttled.replicas": "*"}, throttleRate},
		{"follower", map[string]string{"follower.replication.throttled.replicas": "0:1"}, throttleRate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, leader, follower := throttleCluster(t, tt.config, tt.rate)
			elapsed, n := catchUp(t, leader, follower)
			t.Logf("copied %d bytes in %v: %.0f KiB/s", n, elapsed, float64(n)/elapsed.Seconds()/1024)
			require.GreaterOrEqual(t, n, int64(throttleBacklog))
			require.GreaterOrEqual(t, elapsed, minThrottled, "faster than the throttle allows")
			require.Less(t, elapsed, 30*time.Second)
			if tt.config["follower.replication.throttled.replicas"] != "" {
				st := follower.FetcherStats()
				require.GreaterOrEqual(t, st.ThrottledBytes, int64(throttleBacklog), "the fetched bytes were charged")
				require.Positive(t, st.ThrottledPartitions, "the partition was held back")
			}
		})
	}
	t.Run("unthrottled", func(t *testing.T) {
		// The rates are set, but no replica is listed.
		_, leader, follower := throttleCluster(t, nil, throttleRate)
		elapsed, n := catchUp(t, leader, follower)
		t.Logf("copied %d bytes in %v: %.0f KiB/s", n, elapsed, float64(n)/elapsed.Seconds()/1024)
		require.Less(t, elapsed, minThrottled, "slower than an unthrottled copy should be")
		require.Zero(t, follower.FetcherStats().ThrottledBytes)
	})
}

// TestReplicationThrottleSparesISR: with both sides throttled at 1 byte/s,
// a follower in the ISR still replicates acks=all writes at once (Kafka
// never throttles an in-sync replica).
func TestReplicationThrottleSparesISR(t *testing.T) {
	_, leader, follower := throttleCluster(t, map[string]string{
		"leader.replication.throttled.replicas":   "*",
		"follower.replication.throttled.replicas": "*",
	}, 1)
	start := time.Now()
	produceBacklog(t, leader.Addr, 1<<20, kgo.AllISRAcks())
	end := partitionOn(t, leader, "thr").Log().LogEndOffset()
	waitFor(t, 10*time.Second, "the follower has it all", func() bool {
		return partitionOn(t, follower, "thr").Log().LogEndOffset() == end
	})
	require.Less(t, time.Since(start), 10*time.Second)
	require.Len(t, partitionOn(t, leader, "thr").State().ISR, 2, "the follower stayed in sync")
	st := follower.FetcherStats()
	require.GreaterOrEqual(t, st.ThrottledBytes, int64(1<<20), "charged, but not held back")
}
