//go:build linux

package broker_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
)

// fetchReq builds a Fetch request of one partition per topic entry.
func fetchReq(version int16, topic string, id [16]byte, offset int64, partMax, max int32, minBytes, wait int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = wait, minBytes, max
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, partMax
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestFetchWireBytesEqualSegment reads the record bytes of Fetch
// responses straight off the socket and compares them with the segment
// file: the broker sends the file's bytes (with sendfile), for every
// framing of the response.
func TestFetchWireBytesEqualSegment(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "wire", 1, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("wire"), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	for i := range 8 {
		rs := make([]*kgo.Record, 1+i%3)
		for j := range rs {
			rs[j] = &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: bytes.Repeat([]byte{byte(i)}, 100+j)}
		}
		require.NoError(t, cl.ProduceSync(testCtx(t), rs...).FirstErr())
	}
	seg, err := os.ReadFile(filepath.Join(b.Dir, "wire-0", "00000000000000000000.log"))
	require.NoError(t, err)
	topics, err := adm.ListTopics(testCtx(t))
	require.NoError(t, err)
	id := [16]byte(topics["wire"].ID)

	// Byte position of each batch, and its base offset.
	type pos struct{ at, base int64 }
	var batches []pos
	it := record.NewIterator(seg)
	for it.Next() {
		batches = append(batches, pos{it.Entry().Position, it.Entry().Batch.BaseOffset()})
	}
	require.GreaterOrEqual(t, len(batches), 8)
	third := batches[2]

	c := dialRaw(t, b.Addr)
	for _, v := range []int16{4, 5, 7, 11, 12, 13, 15, 16, 18} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			resp := kmsg.NewPtrFetchResponse()
			c.roundTrip(fetchReq(v, "wire", id, 0, 1<<20, 1<<20, 1, 100), resp)
			require.Len(t, resp.Topics, 1)
			p := resp.Topics[0].Partitions[0]
			require.Equal(t, int16(0), p.ErrorCode)
			require.Equal(t, seg, p.RecordBatches, "record bytes on the wire differ from the segment file")
			end := batches[len(batches)-1].base
			require.Greater(t, p.HighWatermark, end)
			if v >= 13 {
				require.Equal(t, id, resp.Topics[0].TopicID)
			}

			// From the middle: the region starts at the batch holding the offset.
			resp = kmsg.NewPtrFetchResponse()
			c.roundTrip(fetchReq(v, "wire", id, third.base, 1<<20, 1<<20, 1, 100), resp)
			require.Equal(t, seg[third.at:], resp.Topics[0].Partitions[0].RecordBatches)

			// A partition limit below one batch still returns that batch whole.
			resp = kmsg.NewPtrFetchResponse()
			c.roundTrip(fetchReq(v, "wire", id, 0, 10, 10, 1, 100), resp)
			require.Equal(t, seg[:batches[1].at], resp.Topics[0].Partitions[0].RecordBatches)
		})
	}

	// Errors: out of range, unknown topic, unknown topic id.
	resp := kmsg.NewPtrFetchResponse()
	c.roundTrip(fetchReq(12, "wire", id, 1000, 1<<20, 1<<20, 1, 100), resp)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, kerr.OffsetOutOfRange.Code, p.ErrorCode)
	require.Equal(t, int64(-1), p.HighWatermark)
	resp = kmsg.NewPtrFetchResponse()
	c.roundTrip(fetchReq(12, "nope", id, 0, 1<<20, 1<<20, 1, 100), resp)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
	resp = kmsg.NewPtrFetchResponse()
	c.roundTrip(fetchReq(13, "", [16]byte{9, 9}, 0, 1<<20, 1<<20, 1, 100), resp)
	require.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, [16]byte{9, 9}, resp.Topics[0].TopicID)
	// A session the broker never gave.
	req := fetchReq(12, "wire", id, 0, 1<<20, 1<<20, 1, 100)
	req.SessionID, req.SessionEpoch = 77, 1
	resp = kmsg.NewPtrFetchResponse()
	c.roundTrip(req, resp)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode)
	require.Equal(t, int32(0), resp.SessionID)
}

// TestFetchLongPoll: a fetch with nothing to read waits in the purgatory
// and is answered by the next produce, long before its max wait; one that
// gets nothing is answered when the wait ends.
func TestFetchLongPoll(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "poll", 1, nil)
	c := dialRaw(t, b.Addr)

	start := time.Now()
	resp := kmsg.NewPtrFetchResponse()
	c.roundTrip(fetchReq(12, "poll", [16]byte{}, 0, 1<<20, 1<<20, 1, 300), resp)
	waited := time.Since(start)
	require.Empty(t, resp.Topics[0].Partitions[0].RecordBatches)
	require.GreaterOrEqual(t, waited, 250*time.Millisecond, "answered before max wait with nothing to read")

	done := make(chan *kmsg.FetchResponse, 1)
	c2 := dialRaw(t, b.Addr)
	c2.writeFrame(c2.request(fetchReq(12, "poll", [16]byte{}, 0, 1<<20, 1<<20, 1, 30000)))
	go func() {
		resp := kmsg.NewPtrFetchResponse()
		body, err := c2.readFrame()
		if err == nil {
			resp.Version = 12
			err = resp.ReadFrom(body[5:])
		}
		if err != nil {
			resp = nil
		}
		done <- resp
	}()
	// Produce once the fetch is waiting (a produce before it was read
	// would answer it at once, which proves nothing).
	waitFor(t, 10*time.Second, "the fetch to wait in the purgatory", func() bool {
		return b.FetchPurgatory().Delayed() == 1
	})
	start = time.Now()
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("poll"))
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("wake up")}).FirstErr())
	select {
	case r := <-done:
		require.NotNil(t, r)
		require.NotEmpty(t, r.Topics[0].Partitions[0].RecordBatches)
		require.Less(t, time.Since(start), 10*time.Second)
	case <-time.After(20 * time.Second):
		t.Fatal("waiting fetch not answered by the produce")
	}
}

// TestFetchMaxBytesAcrossPartitions: the first partition with data gets
// its first batch whole, later partitions only what is left of max_bytes
// (possibly nothing); read_committed gets an empty aborted list.
func TestFetchMaxBytesAcrossPartitions(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "split", 2, nil)
	cl := newClient(t, []string{b.Addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for p := range int32(2) {
		for range 3 {
			require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "split", Partition: p, Value: bytes.Repeat([]byte{'x'}, 500)}).FirstErr())
		}
	}
	seg0, err := os.ReadFile(filepath.Join(b.Dir, "split-0", "00000000000000000000.log"))
	require.NoError(t, err)
	batchSize := len(seg0) / 3

	req := fetchReq(11, "split", [16]byte{}, 0, 1<<20, int32(batchSize+100), 1, 100)
	rp := req.Topics[0].Partitions[0]
	rp.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	req.IsolationLevel = 1
	resp := kmsg.NewPtrFetchResponse()
	dialRaw(t, b.Addr).roundTrip(req, resp)
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	require.Equal(t, seg0[:batchSize+100], p0.RecordBatches, "cut at max_bytes, inside the second batch")
	require.Empty(t, p1.RecordBatches, "nothing left for the second partition")
	require.Equal(t, int64(3), p1.HighWatermark)
	require.NotNil(t, p0.AbortedTransactions)
	require.Empty(t, p0.AbortedTransactions)

	// A max_bytes below one batch still returns the first batch whole.
	req.MaxBytes = 10
	resp = kmsg.NewPtrFetchResponse()
	dialRaw(t, b.Addr).roundTrip(req, resp)
	require.Equal(t, seg0[:batchSize], resp.Topics[0].Partitions[0].RecordBatches)
	require.Empty(t, resp.Topics[0].Partitions[1].RecordBatches)
}

// TestFetchLongPollAnsweredWhenTopicDeleted: a long poll waiting on a
// partition is answered when the partition stops being hosted here
// (topic deletion), not at its max_wait, as Kafka's stopReplicas
// completes the delayed fetches of a partition it stops. Before, the
// fetch waited its whole max_wait for a partition that was gone, and
// every later request of its connection (a consumer's session-closing
// fetch) behind it.
func TestFetchLongPollAnsweredWhenTopicDeleted(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "doomed-poll", 1, nil)
	c := dialRaw(t, b.Addr)
	const maxWait = 60_000
	c.writeFrame(c.request(fetchReq(12, "doomed-poll", [16]byte{}, 0, 1<<20, 1<<20, 1, maxWait)))
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp := kmsg.NewPtrFetchResponse()
		body, err := c.readFrame()
		if err == nil {
			resp.Version = 12
			err = resp.ReadFrom(body[5:])
		}
		if err != nil {
			resp = nil
		}
		done <- resp
	}()
	waitFor(t, 10*time.Second, "the fetch to wait in the purgatory", func() bool {
		return b.FetchPurgatory().Delayed() == 1
	})
	start := time.Now()
	resp, err := adm.DeleteTopics(testCtx(t), "doomed-poll")
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	select {
	case r := <-done:
		require.NotNil(t, r, "no answer within the connection's read deadline")
		require.Len(t, r.Topics, 1)
		require.NotZero(t, r.Topics[0].Partitions[0].ErrorCode, "the partition is gone: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
		require.Less(t, time.Since(start), 10*time.Second)
	case <-time.After(30 * time.Second):
		t.Fatalf("the long poll was not answered when its topic was deleted (max wait %d ms)", maxWait)
	}
}
