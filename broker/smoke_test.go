//go:build linux

package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

func TestSmoke(t *testing.T) {
	b := brokertest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("smoke"), kgo.ConsumeTopics("smoke"))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	_, err = adm.CreateTopic(ctx, 3, 1, nil, "smoke")
	require.NoError(t, err)
	for i := range 10 {
		r := cl.ProduceSync(ctx, &kgo.Record{Key: []byte{byte(i)}, Value: []byte("hello")})
		require.NoError(t, r.FirstErr())
	}
	got := 0
	for got < 10 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err())
		got += fs.NumRecords()
	}
	require.Equal(t, 10, got)
}
