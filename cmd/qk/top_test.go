//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/tui"
)

// topOnce runs `qk top --once --format json` and decodes the snapshot.
func topOnce(t *testing.T, addrs []string) *tui.Snapshot {
	t.Helper()
	out, stderr, err := runQK(t, "top", "--once", "--format", "json", "-b", strings.Join(addrs, ","))
	require.NoError(t, err, "stderr %s", stderr)
	var s tui.Snapshot
	require.NoError(t, json.Unmarshal([]byte(out), &s), "stdout %q", out)
	return &s
}

func produceN(t *testing.T, addrs []string, topic string, perPartition map[int32]int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p, n := range perPartition {
		for i := range n {
			r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v%d", i)}
			require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
		}
	}
}

func partitionOf(s *tui.Snapshot, topic string, p int32) *tui.Partition {
	for i := range s.Partitions {
		if s.Partitions[i].Topic == topic && s.Partitions[i].Partition == p {
			return &s.Partitions[i]
		}
	}
	return nil
}

// TestTopOnceKfake: against franz-go's kfake, a Kafka that is not qk, the
// snapshot has what the Kafka protocol gives (brokers up, leader,
// replicas, ISR, HW from ListOffsets, group lag) and every replica's LEO
// unavailable (null), without failing.
func TestTopOnceKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"), kfake.DefaultNumPartitions(2))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	produceN(t, addrs, "orders", map[int32]int{0: 5, 1: 3})
	adm, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	defer adm.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 2, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 3, LeaderEpoch: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kadm.NewClient(adm).CommitOffsets(ctx, "billing", offs)
	require.NoError(t, err)

	s := topOnce(t, addrs)
	require.Len(t, s.Brokers, 3)
	for _, b := range s.Brokers {
		require.True(t, b.Up, "broker %d up", b.ID)
		require.Empty(t, b.HTTP, "kfake advertises no qk endpoint")
	}
	for p, hw := range map[int32]int64{0: 5, 1: 3} {
		got := partitionOf(s, "orders", p)
		require.NotNil(t, got, "orders-%d", p)
		require.GreaterOrEqual(t, got.Leader, int32(0))
		require.NotEmpty(t, got.Replicas)
		require.Equal(t, len(got.Replicas), len(got.ISR))
		require.NotNil(t, got.HighWatermark)
		require.Equal(t, hw, *got.HighWatermark)
		require.Len(t, got.LogEndOffsets, len(got.Replicas))
		for _, r := range got.LogEndOffsets {
			require.Nil(t, r.LogEndOffset, "LEO of replica %d is unavailable on a cluster that is not qk", r.Broker)
		}
		require.Nil(t, got.MaxFollowerLag)
		require.Equal(t, tui.StatusOK, got.Status)
		require.NotNil(t, got.SizeBytes, "size from DescribeLogDirs")
		require.Positive(t, *got.SizeBytes)
	}
	require.Len(t, s.Groups, 1)
	require.Equal(t, "billing", s.Groups[0].ID)
	require.Equal(t, int64(3), s.Groups[0].TotalLag, "orders-0 5-2, orders-1 3-3")

	out, _, err := runQK(t, "top", "--once", "-b", strings.Join(addrs, ","))
	require.NoError(t, err)
	require.Contains(t, out, "brokers 3/3 up")
	require.Regexp(t, `(?m)^orders\s+0\s+\d\s+\S+\s+\S+\s+5\s+5\s+unavailable\s`, out)
}

// TestTopOnceEndpoint: a broker that advertises qk.http.advertised.listener
// is read for the replicas' LEOs (its own and the leader's view of its
// followers) and for its counters. kfake plays the Kafka side with the
// config set, an httptest server the endpoint.
func TestTopOnceEndpoint(t *testing.T) {
	// kfake's one broker is broker 0.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/partitions":
			fmt.Fprint(w, `{"broker_id":0,"partitions":[{"topic":"orders","partition":0,"role":"leader","leader_id":0,
				"leader_epoch":0,"log_start_offset":0,"log_end_offset":7,"high_watermark":7,"last_stable_offset":4,"size_bytes":700,
				"open_transactions":[{"producer_id":9,"first_offset":4,"start_timestamp":1,"age_ms":125000}],
				"followers":[{"broker_id":42,"log_end_offset":4,"lag":3,"last_caught_up_ms_ago":50,"in_isr":false}]}]}`)
		case "/metrics":
			fmt.Fprintln(w, "# TYPE kafka_server_brokertopicmetrics_bytesin_total counter")
			fmt.Fprintln(w, `kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 1000`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"),
		kfake.BrokerConfigs(map[string]string{tui.AdvertisedListenerKey: strings.TrimPrefix(srv.URL, "http://")}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	produceN(t, addrs, "orders", map[int32]int{0: 7})
	s := topOnce(t, addrs)
	require.Len(t, s.Brokers, 1)
	require.Equal(t, int32(0), s.Brokers[0].ID)
	require.Equal(t, strings.TrimPrefix(srv.URL, "http://"), s.Brokers[0].HTTP)
	p := partitionOf(s, "orders", 0)
	require.NotNil(t, p)
	require.Len(t, p.LogEndOffsets, 1)
	require.NotNil(t, p.LogEndOffsets[0].LogEndOffset, "the leader's own LEO from its endpoint")
	require.Equal(t, int64(7), *p.LogEndOffsets[0].LogEndOffset)
	require.Equal(t, int64(700), *p.SizeBytes)
	require.Equal(t, int64(7), *p.LastStableOffset, "the LSO from ListOffsets read_committed, over the endpoint's")
	require.Equal(t, []tui.OpenTxn{{ProducerID: 9, FirstOffset: 4, AgeMs: 125000}}, p.OpenTransactions)
	require.Equal(t, tui.StatusOK, p.Status, "open 2 minutes: not stuck by the default 15")

	out, stderr, err := runQK(t, "top", "--once", "--txn-stuck-after", "1m", "-b", strings.Join(addrs, ","))
	require.NoError(t, err, stderr)
	require.Regexp(t, `(?m)^orders\s+0\s+0\s+\S+\s+\S+\s+7\s+7\s+7\s.*TXN-STUCK$`, out)
	require.Regexp(t, `(?m)^TOPIC\s+PARTITION\s+PRODUCER ID\s+FIRST OFFSET\s+OPEN FOR$`, out)
	require.Regexp(t, `(?m)^orders\s+0\s+9\s+4\s+2m5s$`, out)
}

// qkEndpointAdvertised reports whether broker id of a qk cluster
// advertises its admin endpoint through DescribeConfigs; until the
// broker's HTTP endpoint is built, it does not.
func qkEndpointAdvertised(t *testing.T, addrs []string, id int32) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.ResourceName = fmt.Sprint(id)
	res.ConfigNames = []string{tui.AdvertisedListenerKey}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		// The client learns the broker from its first metadata.
		_, _ = kadm.NewClient(cl).BrokerMetadata(ctx)
		resp, err = cl.Broker(int(id)).Request(ctx, req)
	}
	require.NoError(t, err)
	for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		for _, c := range r.Configs {
			if c.Name == tui.AdvertisedListenerKey && c.Value != nil && *c.Value != "" {
				return true
			}
		}
	}
	return false
}

// TestTopOnceQk: against a three-broker qk cluster with a replicated
// topic, the snapshot names the three brokers up and, per partition, the
// leader, replicas, ISR and HW the test produced. Once the brokers serve
// their admin endpoint (qk.http.advertised.listener in DescribeConfigs),
// every replica's LEO is there and reaches the HW; until then it is
// unavailable, as against any Kafka.
func TestTopOnceQk(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("qk.http.listener", "127.0.0.1:0"),
		brokertest.WithConfig("offsets.topic.replication.factor", "1"))
	addrs := c.Addrs()
	_, stderr, err := runQK(t, "topic", "create", "orders", "-p", "2", "-r", "3", "-b", addrs[0])
	require.NoError(t, err, stderr)
	produceN(t, addrs, "orders", map[int32]int{0: 10, 1: 4})
	endpoint := qkEndpointAdvertised(t, addrs, c.Brokers[0].ID)
	t.Logf("qk admin endpoint advertised: %v", endpoint)

	var s *tui.Snapshot
	want := map[int32]int64{0: 10, 1: 4}
	waitFor(t, 20*time.Second, "every replica in the ISR and, with the endpoint, at the HW", func() bool {
		s = topOnce(t, addrs)
		for p, hw := range want {
			got := partitionOf(s, "orders", p)
			if got == nil || len(got.ISR) != 3 || got.HighWatermark == nil || *got.HighWatermark != hw {
				return false
			}
			if endpoint {
				for _, r := range got.LogEndOffsets {
					if r.LogEndOffset == nil || *r.LogEndOffset != hw {
						return false
					}
				}
			}
		}
		return true
	})
	require.Len(t, s.Brokers, 3)
	for _, b := range s.Brokers {
		require.True(t, b.Up, "broker %d", b.ID)
		require.Equal(t, endpoint, b.HTTP != "", "broker %d endpoint", b.ID)
	}
	for p := range want {
		got := partitionOf(s, "orders", p)
		require.Len(t, got.Replicas, 3)
		require.Contains(t, got.Replicas, got.Leader)
		require.ElementsMatch(t, got.Replicas, got.ISR)
		require.Equal(t, tui.StatusOK, got.Status)
		require.Len(t, got.LogEndOffsets, 3)
		for i, r := range got.LogEndOffsets {
			require.Equal(t, got.Replicas[i], r.Broker, "LEOs in replica order")
			if !endpoint {
				require.Nil(t, r.LogEndOffset, "no endpoint: LEO unavailable")
			}
		}
		if endpoint {
			require.NotNil(t, got.MaxFollowerLag)
			require.Equal(t, int64(0), *got.MaxFollowerLag)
		}
	}

	// A stopped broker is down within the request timeout, and the
	// snapshot still comes.
	c.Brokers[2].Stop()
	waitFor(t, 20*time.Second, "broker 2 down", func() bool {
		s = topOnce(t, addrs[:2])
		for _, b := range s.Brokers {
			if b.ID == c.Brokers[2].ID {
				return !b.Up
			}
		}
		return false
	})
}
