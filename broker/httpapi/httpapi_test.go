//go:build linux

package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker"
	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/metadata"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// get fetches path from the broker's admin HTTP server.
func get(t *testing.T, b *brokertest.Broker, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr().String() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// scrape parses /metrics with Prometheus' own text parser.
func scrape(t *testing.T, b *brokertest.Broker) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, b, "/metrics")
	require.Equal(t, http.StatusOK, code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	return fams
}

// value is the value of the family's sample whose labels include want
// (name=value pairs); ok false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	v, ok := value(fams, name, want...)
	require.True(t, ok, "no sample of %s %v", name, want)
	return v
}

// partitions is GET /v1/partitions as the contract with qk top has it.
type partitions struct {
	BrokerID   int32 `json:"broker_id"`
	Partitions []struct {
		Topic            string  `json:"topic"`
		Partition        int32   `json:"partition"`
		Role             string  `json:"role"`
		LeaderID         int32   `json:"leader_id"`
		LeaderEpoch      int32   `json:"leader_epoch"`
		Replicas         []int32 `json:"replicas"`
		ISR              []int32 `json:"isr"`
		LogStartOffset   int64   `json:"log_start_offset"`
		LogEndOffset     int64   `json:"log_end_offset"`
		HighWatermark    int64   `json:"high_watermark"`
		LastStableOffset int64   `json:"last_stable_offset"`
		SizeBytes        int64   `json:"size_bytes"`
		Followers        []struct {
			BrokerID          int32 `json:"broker_id"`
			LogEndOffset      int64 `json:"log_end_offset"`
			Lag               int64 `json:"lag"`
			LastCaughtUpMsAgo int64 `json:"last_caught_up_ms_ago"`
			InISR             bool  `json:"in_isr"`
		} `json:"followers"`
	} `json:"partitions"`
}

func getPartitions(t *testing.T, b *brokertest.Broker) partitions {
	t.Helper()
	code, body := get(t, b, "/v1/partitions")
	require.Equal(t, http.StatusOK, code)
	var p partitions
	require.NoError(t, json.Unmarshal(body, &p), string(body))
	return p
}

// TestAdminHTTP: a 3-broker cluster, an RF 3 topic led by broker 0 and
// 100 records produced with acks=all. /metrics (parsed by Prometheus'
// parser) counts the bytes, records and Produce requests on the leader,
// no under-replicated partition, one active controller; /v1/partitions
// shows the same LEO and HW on every replica and, on the leader, each
// follower caught up and in the ISR; /v1/health is ready; DescribeConfigs
// and the registration advertise the bound address. Then a follower
// stops: the leader reports one under-replicated partition, an ISR shrink
// and the follower out of the ISR.
func TestAdminHTTP(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"),
		brokertest.WithConfig("replica.lag.time.max.ms", "2000"))
	const topic = "m3"
	sess, err := c.Store.NewSession()
	require.NoError(t, err)
	defer sess.Close()
	_, err = sess.Create(testCtx(t), metadata.EntityConfigPath(metadata.ConfigTopics, topic),
		metadata.MarshalEntityConfig(map[string]string{"min.insync.replicas": "2"}), 0)
	require.NoError(t, err)
	_, err = sess.Create(testCtx(t), metadata.TopicPath(topic), metadata.MarshalTopicAssignment(metadata.TopicAssignment{
		TopicID: metadata.NewUUID(), Partitions: map[int32][]int32{0: {0, 1, 2}}}), 0)
	require.NoError(t, err)
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the topic with its ISR on every broker", func() bool {
			tp := b.Cache().Snapshot().Topics[topic]
			return tp != nil && len(tp.Partitions) == 1 && tp.Partitions[0].Leader == 0 && len(tp.Partitions[0].ISR) == 3
		})
		code, body := get(t, b, "/v1/health")
		require.Equal(t, http.StatusOK, code, string(body))
		require.JSONEq(t, `{"ready":true,"reasons":[]}`, string(body))
	}
	leader := c.Brokers[0]

	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.Addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // sizes comparable with the values
	require.NoError(t, err)
	defer cl.Close()
	const n = 100
	valueBytes := 0
	for i := range n {
		v := fmt.Sprintf("value-%03d-%s", i, strings.Repeat("x", 100))
		valueBytes += len(v)
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte(v)}).FirstErr())
	}

	// Every replica has the records and the high watermark.
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, fmt.Sprintf("broker %d at LEO and HW %d", b.ID, n), func() bool {
			ps := getPartitions(t, b)
			return len(ps.Partitions) > 0 && ps.Partitions[0].LogEndOffset == n && ps.Partitions[0].HighWatermark == n
		})
	}
	for _, b := range c.Brokers {
		ps := getPartitions(t, b)
		require.Equal(t, b.ID, ps.BrokerID)
		require.Len(t, ps.Partitions, 1)
		p := ps.Partitions[0]
		require.Equal(t, topic, p.Topic)
		require.Equal(t, int32(0), p.Partition)
		require.Equal(t, int32(0), p.LeaderID)
		require.Equal(t, []int32{0, 1, 2}, p.Replicas)
		require.ElementsMatch(t, []int32{0, 1, 2}, p.ISR)
		require.Equal(t, int64(0), p.LogStartOffset)
		require.Equal(t, int64(n), p.LastStableOffset)
		require.Greater(t, p.SizeBytes, int64(valueBytes))
		rp, err := b.Replicas().Partition(topic, 0)
		require.NoError(t, err)
		require.Equal(t, rp.LeaderEpoch(), p.LeaderEpoch)
		require.Equal(t, rp.Log().Size(), p.SizeBytes)
		if b.ID != 0 {
			require.Equal(t, "follower", p.Role)
			require.NotNil(t, p.Followers)
			require.Empty(t, p.Followers)
			continue
		}
		require.Equal(t, "leader", p.Role)
	}
	waitFor(t, 10*time.Second, "the leader seeing both followers at its LEO", func() bool {
		p := getPartitions(t, leader).Partitions[0]
		if len(p.Followers) != 2 {
			return false
		}
		for _, f := range p.Followers {
			if f.LogEndOffset != n || f.Lag != 0 || !f.InISR || f.LastCaughtUpMsAgo < 0 {
				return false
			}
		}
		return p.Followers[0].BrokerID == 1 && p.Followers[1].BrokerID == 2
	})

	// Consume from the leader, for bytes out.
	cons, err := kgo.NewClient(kgo.SeedBrokers(leader.Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cons.Close()
	for got := 0; got < n; {
		fs := cons.PollFetches(testCtx(t))
		require.NoError(t, fs.Err())
		got += fs.NumRecords()
	}

	fams := scrape(t, leader)
	require.GreaterOrEqual(t, mustValue(t, fams, "kafka_server_brokertopicmetrics_bytesin_total", "topic", topic), float64(valueBytes))
	require.Equal(t, float64(n), mustValue(t, fams, "kafka_server_brokertopicmetrics_messagesin_total", "topic", topic))
	require.GreaterOrEqual(t, mustValue(t, fams, "kafka_server_brokertopicmetrics_bytesout_total", "topic", topic), float64(valueBytes))
	produces := mustValue(t, fams, "kafka_network_requestmetrics_requests_total", "request", "Produce")
	require.GreaterOrEqual(t, produces, float64(n), "one ProduceSync, one request")
	require.Equal(t, produces, mustValue(t, fams, "kafka_network_requestmetrics_request_latency_seconds", "request", "Produce"))
	require.Equal(t, dto.MetricType_HISTOGRAM, fams["kafka_network_requestmetrics_request_latency_seconds"].GetType())
	require.Positive(t, mustValue(t, fams, "kafka_network_requestmetrics_requests_total", "request", "Fetch"), "followers' and the consumer's")
	require.Equal(t, 0.0, mustValue(t, fams, "kafka_server_replicamanager_underreplicatedpartitions"))
	require.Equal(t, 0.0, mustValue(t, fams, "kafka_server_replicamanager_underminisrpartitioncount"))
	require.Equal(t, 0.0, mustValue(t, fams, "kafka_controller_kafkacontroller_offlinepartitionscount"))
	require.Positive(t, mustValue(t, fams, "kafka_log_log_size", "topic", topic, "partition", "0"))
	for _, op := range []string{"Produce", "Fetch"} {
		mustValue(t, fams, "kafka_server_delayedoperationpurgatory_purgatorysize", "delayedOperation", op)
	}
	idle := mustValue(t, fams, "kafka_network_socketserver_networkprocessoravgidlepercent")
	require.True(t, idle >= 0 && idle <= 1, "idle ratio %v", idle)
	mustValue(t, fams, "kafka_network_requestchannel_requestqueuesize")
	require.Equal(t, 0.0, mustValue(t, fams, "qk_network_requests_overdue_total"), "every request answered in time")
	mustValue(t, fams, "kafka_server_replicamanager_isrshrinks_total")
	mustValue(t, fams, "kafka_server_replicamanager_isrexpands_total")
	active := 0.0
	for _, b := range c.Brokers {
		f := scrape(t, b)
		active += mustValue(t, f, "kafka_controller_kafkacontroller_activecontrollercount")
		// The partition gauges are on every broker.
		require.Equal(t, 0.0, mustValue(t, f, "kafka_server_replicamanager_underreplicatedpartitions"))
	}
	require.Equal(t, 1.0, active)

	// Discovery: DescribeConfigs of each broker and its registration.
	adm := kadm.NewClient(cl)
	for _, b := range c.Brokers {
		addr := b.HTTPAddr().String()
		rcs, err := adm.DescribeBrokerConfigs(testCtx(t), b.ID)
		require.NoError(t, err)
		rc, err := rcs.On(fmt.Sprint(b.ID), nil)
		require.NoError(t, err)
		require.NoError(t, rc.Err)
		found := false
		for _, cfg := range rc.Configs {
			if cfg.Key == config.HTTPAdvertisedListenerKey {
				found = true
				require.Equal(t, addr, cfg.MaybeValue())
			}
		}
		require.True(t, found, "DescribeConfigs has %s", config.HTTPAdvertisedListenerKey)
		data, _, err := sess.Get(testCtx(t), metadata.BrokerPath(b.ID))
		require.NoError(t, err)
		reg, err := metadata.UnmarshalBrokerRegistration(data)
		require.NoError(t, err)
		require.Equal(t, "http://"+addr, reg.HTTPEndpoint)
	}

	// A follower stops: the leader shrinks the ISR.
	c.Brokers[2].Stop()
	waitFor(t, 20*time.Second, "one under-replicated partition on the leader", func() bool {
		v, _ := value(scrape(t, leader), "kafka_server_replicamanager_underreplicatedpartitions")
		return v == 1
	})
	fams = scrape(t, leader)
	require.GreaterOrEqual(t, mustValue(t, fams, "kafka_server_replicamanager_isrshrinks_total"), 1.0)
	require.Equal(t, 0.0, mustValue(t, fams, "kafka_server_replicamanager_underminisrpartitioncount"), "ISR 2, min 2")
	p := getPartitions(t, leader).Partitions[0]
	require.ElementsMatch(t, []int32{0, 1}, p.ISR)
	require.Len(t, p.Followers, 2)
	require.True(t, p.Followers[0].InISR)
	require.False(t, p.Followers[1].InISR, "the stopped follower")
	require.Equal(t, 0.0, mustValue(t, scrape(t, c.Brokers[1]), "kafka_server_replicamanager_underreplicatedpartitions"),
		"a follower reports the partitions it leads only")
}

// TestAdminHTTPBindFailure: a taken qk.http.listener fails start-up with
// an error naming the setting.
func TestAdminHTTPBindFailure(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	cfg, _, err := config.Load(config.LoadOptions{Sets: []string{"log.dirs=" + t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0", "qk.http.listener=" + taken.Addr().String()}})
	require.NoError(t, err)
	s, err := broker.New(cfg)
	require.NoError(t, err)
	err = s.Start()
	require.ErrorContains(t, err, "qk.http.listener="+taken.Addr().String())
	require.ErrorContains(t, err, "address already in use")
	require.NoError(t, s.Close(context.Background()))
}

// TestAdminHTTPDisabled: an empty qk.http.listener starts no server and
// advertises nothing.
func TestAdminHTTPDisabled(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithConfig("qk.http.listener", ""))
	require.Nil(t, b.HTTPAddr())
	require.Empty(t, b.Config().HTTPAdvertisedListener)
}
