//go:build linux

package httpapi_test

import (
	"context"
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
