//go:build linux

package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// BenchmarkProduce produces 1 KiB records one request at a time (acks=1)
// to a broker with the admin HTTP server on and off: the cost of the
// request metrics on the produce path (the per-topic counters are
// counted either way).
func BenchmarkProduce(b *testing.B) {
	b.Run("http=off", func(b *testing.B) { benchProduce(b, "") })
	b.Run("http=on", func(b *testing.B) { benchProduce(b, "127.0.0.1:0") })
}

func benchProduce(b *testing.B, listener string) {
	br := brokertest.StartBroker(b, brokertest.WithConfig("qk.http.listener", listener))
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr), kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	rec := make([]byte, 1024)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: rec}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: rec}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkScrape serves /metrics and /v1/partitions of a broker hosting
// 1,000 partitions, in process (the listener and curl excluded).
func BenchmarkScrape(b *testing.B) {
	br := brokertest.StartBroker(b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1000, 1, nil, "big"); err != nil {
		b.Fatal(err)
	}
	for len(br.Replicas().Partitions()) < 1000 {
		time.Sleep(10 * time.Millisecond)
	}
	for _, path := range []string{"/metrics", "/v1/partitions"} {
		b.Run("path="+path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Get("http://" + br.HTTPAddr().String() + path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				b.SetBytes(n)
			}
		})
	}
}
