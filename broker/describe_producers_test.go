//go:build linux

package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestDescribeProducersOpenTransaction: a transactional producer's open
// transaction shows in DescribeProducers with its first offset, its last
// sequence and no coordinator epoch yet; once committed (the marker
// written) the start offset is -1 and the coordinator epoch the marker's.
// Partitions the broker does not have and unknown topics get Kafka's
// codes.
func TestDescribeProducersOpenTransaction(t *testing.T) {
	b := brokertest.StartBroker(t)
	addrs := []string{b.Addr}
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "dp", 1, nil)
	ctx := testCtx(t)

	// Records before the transaction, from an idempotent producer, so the
	// transaction does not start at offset 0.
	idem := newClient(t, addrs, kgo.DefaultProduceTopic("dp"))
	require.NoError(t, idem.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr())

	p := newClient(t, addrs, kgo.TransactionalID("dp-txn"), kgo.DefaultProduceTopic("dp"),
		kgo.TransactionTimeout(time.Minute))
	require.NoError(t, p.BeginTransaction())
	for i := range 3 {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "t%d", i)}).FirstErr())
	}
	pid, epoch, err := p.ProducerID(ctx)
	require.NoError(t, err)

	describe := func() kadm.DescribedProducer {
		t.Helper()
		d, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"dp": {0: {}}})
		require.NoError(t, err)
		dp := d["dp"].Partitions[0]
		require.NoError(t, dp.Err)
		require.Len(t, dp.ActiveProducers, 2, "the idempotent and the transactional producer")
		got, ok := dp.ActiveProducers[pid]
		require.True(t, ok, "producer %d not among %v", pid, dp.ActiveProducers)
		return got
	}
	open := describe()
	require.Equal(t, epoch, open.ProducerEpoch)
	require.Equal(t, int64(1), open.CurrentTxnStartOffset, "the transaction's first offset")
	require.Equal(t, int32(2), open.LastSequence)
	require.Equal(t, int32(-1), open.CoordinatorEpoch, "no marker yet")
	require.Greater(t, open.LastTimestamp, int64(0))

	require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
	// EndTxn answers once PrepareCommit is logged; the marker follows.
	var done kadm.DescribedProducer
	waitFor(t, 20*time.Second, "commit marker", func() bool {
		done = describe()
		return done.CurrentTxnStartOffset == -1
	})
	require.GreaterOrEqual(t, done.CoordinatorEpoch, int32(0), "the marker's coordinator epoch")
	require.Equal(t, int32(2), done.LastSequence)

	// Errors, on a raw request: a partition the topic does not have, an
	// unknown topic and an invalid name.
	c := dialRaw(t, b.Addr)
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, tp := range []struct {
		topic string
		parts []int32
	}{{"dp", []int32{0, 7}}, {"nope", []int32{0}}, {"bad name", []int32{0}}} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = tp.topic, tp.parts
		req.Topics = append(req.Topics, rt)
	}
	resp := kmsg.NewPtrDescribeProducersResponse()
	c.roundTrip(req, resp)
	require.Len(t, resp.Topics, 3)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	require.Len(t, resp.Topics[0].Partitions[0].ActiveProducers, 2)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[1].ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].Partitions[0].ErrorCode)
	require.Equal(t, kerr.InvalidTopicException.Code, resp.Topics[2].Partitions[0].ErrorCode)
}

// TestDescribeProducersFollower: a follower answers DescribeProducers
// from its own producer state, rebuilt from the leader's log, as Kafka's
// replicas do (kafka-transactions.sh describe-producers --broker-id asks
// one replica): the same open transaction, at the same start offset.
func TestDescribeProducersFollower(t *testing.T) {
	c := brokertest.StartCluster(t, 2)
	adm := newAdmin(t, c.Addrs()...)
	ctx := testCtx(t)
	r, err := adm.CreateTopic(ctx, 1, 2, nil, "dpf")
	require.NoError(t, err)
	require.NoError(t, r.Err)
	p := newClient(t, c.Addrs(), kgo.TransactionalID("dpf-txn"), kgo.DefaultProduceTopic("dpf"),
		kgo.TransactionTimeout(time.Minute))
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr())
	pid, _, err := p.ProducerID(ctx)
	require.NoError(t, err)
	td, err := adm.ListTopics(ctx, "dpf")
	require.NoError(t, err)
	leader := td["dpf"].Partitions[0].Leader
	var follower *brokertest.Broker
	for _, b := range c.Brokers {
		if b.ID != leader {
			follower = b
		}
	}
	require.NotNil(t, follower)
	raw := dialRaw(t, follower.Addr)
	var got []kmsg.DescribeProducersResponseTopicPartitionActiveProducer
	waitFor(t, 20*time.Second, "follower's producer state", func() bool {
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "dpf", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrDescribeProducersResponse()
		raw.roundTrip(req, resp)
		require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
		got = resp.Topics[0].Partitions[0].ActiveProducers
		return len(got) == 1
	})
	require.Equal(t, pid, got[0].ProducerID)
	require.Equal(t, int64(0), got[0].CurrentTxnStartOffset)
	require.NoError(t, p.EndTransaction(ctx, kgo.TryAbort))
}
