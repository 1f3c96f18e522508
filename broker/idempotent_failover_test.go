//go:build linux

package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
)

// TestIdempotentFailoverDeduplicates: followers rebuild the idempotent
// producers' state from the batches they replicate, so after a failover
// the new leader recognises a retry of a batch the old leader wrote (the
// producer never heard its answer) and answers it with the original
// offset instead of appending it again. A batch that skips a sequence is
// still refused (OUT_OF_ORDER_SEQUENCE_NUMBER), so the state is the
// producer's, not just "anything goes".
func TestIdempotentFailoverDeduplicates(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	createReplicated(t, c, "idem", map[int32][]int32{0: {0, 1, 2}}, map[string]string{"min.insync.replicas": "2"})
	waitFor(t, 10*time.Second, "the partition led by broker 0 with three in sync", func() bool {
		for _, b := range c.Brokers {
			tp := b.Cache().Snapshot().Topics["idem"]
			if tp == nil || tp.Partitions[0].Leader != 0 || len(tp.Partitions[0].ISR) != 3 {
				return false
			}
		}
		return true
	})
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 1
	initResp := kmsg.NewPtrInitProducerIDResponse()
	dialRaw(t, c.Brokers[1].Addr).roundTrip(init, initResp)
	require.Equal(t, int16(0), initResp.ErrorCode)
	pid, epoch := initResp.ProducerID, initResp.ProducerEpoch

	batch := func(seq int32, n int) []byte {
		opts := record.DefaultBatchOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
		b := record.NewBuilder(opts)
		for i := range n {
			b.Append(time.Now().UnixMilli(), nil, fmt.Appendf(nil, "seq-%d", int(seq)+i), nil)
		}
		data, err := b.Build()
		require.NoError(t, err)
		return data
	}
	produce := func(addr string, data []byte) kmsg.ProduceResponseTopicPartition {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 7, -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "idem"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = data
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrProduceResponse()
		dialRaw(t, addr).roundTrip(req, resp)
		return resp.Topics[0].Partitions[0]
	}
	// Three batches through the old leader, all acknowledged.
	var offsets []int64
	for i := range int32(3) {
		r := produce(c.Brokers[0].Addr, batch(i*5, 5))
		require.Equal(t, int16(0), r.ErrorCode, "%v", kerr.ErrorForCode(r.ErrorCode))
		offsets = append(offsets, r.BaseOffset)
	}
	require.Equal(t, []int64{0, 5, 10}, offsets)

	// The leader dies; another replica of the ISR takes over.
	c.Brokers[0].Stop()
	var leader *brokertest.Broker
	waitFor(t, 15*time.Second, "a new leader", func() bool {
		tp := c.Brokers[1].Cache().Snapshot().Topics["idem"]
		if l := tp.Partitions[0].Leader; l == 1 || l == 2 {
			leader = c.Brokers[l]
			return true
		}
		return false
	})
	waitFor(t, 10*time.Second, "the new leader serving", func() bool {
		p, err := leader.Replicas().Partition("idem", 0)
		return err == nil && p.IsLeader()
	})
	// The retry of the last batch: the original offset, nothing appended.
	r := produce(leader.Addr, batch(10, 5))
	require.Equal(t, int16(0), r.ErrorCode, "%v", kerr.ErrorForCode(r.ErrorCode))
	require.Equal(t, int64(10), r.BaseOffset, "a duplicate is answered with the offset it was written at")
	p, err := leader.Replicas().Partition("idem", 0)
	require.NoError(t, err)
	require.Equal(t, int64(15), p.Log().LogEndOffset(), "the retry was not appended again")
	// A gap in the sequence is refused; the next batch is taken.
	r = produce(leader.Addr, batch(20, 5))
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, r.ErrorCode, "%v", kerr.ErrorForCode(r.ErrorCode))
	r = produce(leader.Addr, batch(15, 5))
	require.Equal(t, int16(0), r.ErrorCode, "%v", kerr.ErrorForCode(r.ErrorCode))
	require.Equal(t, int64(15), r.BaseOffset)
	got := consume(t, []string{c.Brokers[1].Addr, c.Brokers[2].Addr}, "idem", 20)
	for i, rec := range got {
		require.Equal(t, fmt.Sprintf("seq-%d", i), string(rec.Value), "each record once, in order")
	}
}
