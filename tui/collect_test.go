package tui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeEndpoint serves /v1/partitions for n partitions of topic "big" led
// by broker 0 with one follower (broker 7) lagging by lag records, and
// /metrics whose counters grow by step each scrape.
func fakeEndpoint(t testing.TB, n int, lag int64, step float64) *httptest.Server {
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/partitions":
			var b strings.Builder
			b.WriteString(`{"broker_id":0,"partitions":[`)
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				// Partition 1 has a transaction open for 2 minutes,
				// partition 2 one open for a second.
				lso, open := 100, `[]`
				switch i {
				case 1:
					lso, open = 90, `[{"producer_id":5,"first_offset":90,"start_timestamp":1,"age_ms":120000}]`
				case 2:
					lso, open = 95, `[{"producer_id":6,"first_offset":95,"start_timestamp":1,"age_ms":1000}]`
				}
				fmt.Fprintf(&b, `{"topic":"big","partition":%d,"role":"leader","leader_id":0,"leader_epoch":1,"replicas":[0],"isr":[0],`+
					`"log_start_offset":0,"log_end_offset":100,"high_watermark":100,"last_stable_offset":%d,"size_bytes":4096,"open_transactions":%s,`+
					`"followers":[{"broker_id":7,"log_end_offset":%d,"lag":%d,"last_caught_up_ms_ago":10,"in_isr":true}]}`, i, lso, open, 100-lag, lag)
			}
			b.WriteString(`]}`)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(b.String()))
		case "/metrics":
			v := float64(scrapes.Add(1)) * step
			fmt.Fprintf(w, "# HELP x\n# TYPE kafka_server_brokertopicmetrics_bytesin_total counter\n")
			fmt.Fprintf(w, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"big\"} %g\n", v)
			fmt.Fprintf(w, "kafka_server_brokertopicmetrics_bytesout_total{topic=\"big\"} %g\n", 2*v)
			fmt.Fprintf(w, "kafka_server_brokertopicmetrics_messagesin_total{topic=\"big\"} %g\n", v/100)
			fmt.Fprintf(w, "kafka_network_requestmetrics_requests_total{request=\"Produce\"} 5\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newFakeCluster(t testing.TB, partitions int32, endpoint string) *kgo.Client {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(partitions, "big")}
	if endpoint != "" {
		opts = append(opts, kfake.BrokerConfigs(map[string]string{AdvertisedListenerKey: strings.TrimPrefix(endpoint, "http://")}))
	}
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestCollectEndpoint: the second round's rates come from the counters'
// deltas over the rounds' times; the leader's LEO comes from its
// endpoint.
func TestCollectEndpoint(t *testing.T) {
	srv := fakeEndpoint(t, 4, 0, 1000)
	col := NewCollector(newFakeCluster(t, 4, srv.URL), time.Second)
	at := time.Unix(1000, 0)
	col.now = func() time.Time { return at }
	s1, err := col.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, "", s1.RateSource)
	require.Nil(t, s1.Rates.BytesIn)
	at = at.Add(2 * time.Second)
	s2, err := col.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, "metrics", s2.RateSource)
	require.InDelta(t, 500, *s2.Rates.BytesIn, 0.001, "1000 bytes in 2 s")
	require.InDelta(t, 1000, *s2.Rates.BytesOut, 0.001)
	require.InDelta(t, 5, *s2.Rates.MessagesIn, 0.001)
	require.Len(t, s2.Topics, 1)
	require.InDelta(t, 500, *s2.Topics[0].BytesIn, 0.001)
	require.InDelta(t, 500, *s2.Brokers[0].BytesIn, 0.001)
	for _, p := range s2.Partitions {
		require.Len(t, p.LogEndOffsets, 1)
		require.Equal(t, int64(100), *p.LogEndOffsets[0].LogEndOffset)
		require.Equal(t, int64(4096), *p.SizeBytes)
	}
	require.Equal(t, int64(4*4096), *s2.Topics[0].SizeBytes)

	// The LSO comes from ListOffsets read_committed, with the HW (kfake's
	// empty partitions: 0), not from the endpoint; the open transactions
	// from the leader's endpoint; the one open longer than the
	// stuck-after age marks its partition.
	for _, p := range s2.Partitions {
		require.Equal(t, *p.HighWatermark, *p.LastStableOffset)
	}
	require.Equal(t, []OpenTxn{}, s2.Partitions[0].OpenTransactions)
	require.Equal(t, StatusOK, s2.Partitions[0].Status)
	require.Equal(t, []OpenTxn{{ProducerID: 5, FirstOffset: 90, AgeMs: 120000}}, s2.Partitions[1].OpenTransactions)
	require.Equal(t, StatusOK, s2.Partitions[1].Status, "2 minutes is not stuck by the default 15")
	col = NewCollector(newFakeCluster(t, 4, srv.URL), time.Second, WithTxnStuckAfter(time.Minute))
	s3, err := col.Collect(context.Background())
	require.NoError(t, err)
	require.Equal(t, StatusTxnStuck, s3.Partitions[1].Status)
	require.Equal(t, StatusOK, s3.Partitions[2].Status)
}

// TestCollectWithoutEndpoint: without a qk endpoint the LSO is still
// there (ListOffsets read_committed) and the open transactions are
// unknown (null), not none.
func TestCollectWithoutEndpoint(t *testing.T) {
	s, err := NewCollector(newFakeCluster(t, 2, ""), time.Second).Collect(context.Background())
	require.NoError(t, err)
	require.Len(t, s.Partitions, 2)
	for _, p := range s.Partitions {
		require.NotNil(t, p.LastStableOffset)
		require.Equal(t, *p.HighWatermark, *p.LastStableOffset)
		require.Nil(t, p.OpenTransactions)
	}
}

func TestParseCounters(t *testing.T) {
	in := `# HELP kafka_server_brokertopicmetrics_bytesin_total bytes in
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 10
kafka_server_brokertopicmetrics_bytesin_total{partition="1",topic="b"} 2.5e+01 1700000000000
kafka_server_brokertopicmetrics_bytesin_total 99
kafka_server_brokertopicmetrics_bytesout_total{topic="a"} 7
kafka_server_brokertopicmetrics_bytesinfoo_total{topic="a"} 1
kafka_server_brokertopicmetrics_messagesin_total{topic="a"} NaN
other_metric 3
`
	got, err := parseCounters(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"a": 10, "b": 25, "": 99}, got[metricBytesIn])
	require.Equal(t, map[string]float64{"a": 7}, got[metricBytesOut])
	total, ok := got.total(metricBytesIn)
	require.True(t, ok)
	require.Equal(t, 99.0, total, "the unlabelled all-topics series wins")
	total, _ = got.total(metricBytesOut)
	require.Equal(t, 7.0, total)
}

// BenchmarkCollect is one refresh of a 1,000-partition cluster whose
// broker serves the endpoint: Metadata, DescribeConfigs, ListOffsets,
// groups, /v1/partitions and /metrics, decoded and merged. It runs kfake
// and the endpoint in the same process, so it is an upper bound of the
// collector's own CPU per round.
func BenchmarkCollect(b *testing.B) {
	for _, tc := range []struct {
		name     string
		endpoint bool
	}{{"partitions=1000/endpoint=false", false}, {"partitions=1000/endpoint=true", true}} {
		b.Run(tc.name, func(b *testing.B) {
			url := ""
			if tc.endpoint {
				url = fakeEndpoint(b, 1000, 3, 1000).URL
			}
			col := NewCollector(newFakeCluster(b, 1000, url), 2*time.Second)
			b.ReportAllocs()
			for b.Loop() {
				s, err := col.Collect(context.Background())
				if err != nil || len(s.Partitions) != 1000 {
					b.Fatalf("%v, %d partitions", err, len(s.Partitions))
				}
			}
		})
	}
}

// BenchmarkView renders the Partitions view of 1,000 partitions at
// 120x40, which the UI does once per refresh and per key.
func BenchmarkView(b *testing.B) {
	col := NewCollector(newFakeCluster(b, 1000, ""), 2*time.Second)
	s, err := col.Collect(context.Background())
	require.NoError(b, err)
	m := New(nil, DefaultInterval)
	m.width, m.height = 120, 40
	m.Update(SnapshotMsg{Snapshot: s})
	m.view = viewPartitions
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// TestCollectOfflineLogDir: a broker whose DescribeLogDirs answers
// KAFKA_STORAGE_ERROR for a dir (KIP-112) is shown "UP, DIR OFFLINE" with
// the dir, and an error line names it; with or without a qk endpoint.
func TestCollectOfflineLogDir(t *testing.T) {
	for _, withEndpoint := range []bool{false, true} {
		endpoint := ""
		if withEndpoint {
			endpoint = fakeEndpoint(t, 2, 0, 1).URL
		}
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "big"),
			kfake.BrokerConfigs(map[string]string{AdvertisedListenerKey: strings.TrimPrefix(endpoint, "http://")}))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		c.ControlKey(int16(kmsg.DescribeLogDirs), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			resp := kreq.(*kmsg.DescribeLogDirsRequest).ResponseKind().(*kmsg.DescribeLogDirsResponse)
			for _, d := range []struct {
				dir  string
				code int16
			}{{"/data/a", 0}, {"/data/b", kerr.KafkaStorageError.Code}} {
				rd := kmsg.NewDescribeLogDirsResponseDir()
				rd.Dir, rd.ErrorCode = d.dir, d.code
				resp.Dirs = append(resp.Dirs, rd)
			}
			return resp, nil, true
		})
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		s, err := NewCollector(cl, time.Second).Collect(context.Background())
		require.NoError(t, err)
		require.Len(t, s.Brokers, 1)
		require.Equal(t, []string{"/data/b"}, s.Brokers[0].OfflineLogDirs)
		require.Equal(t, "UP, DIR OFFLINE", upDown(s.Brokers[0]))
		require.Contains(t, s.Errors, "broker 0: log dir /data/b offline (KAFKA_STORAGE_ERROR): its partitions are offline there until the broker restarts")
	}
}
