//go:build linux

package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
)

var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
	want  record.Codec
}{
	{"none", kgo.NoCompression(), record.CodecNone},
	{"gzip", kgo.GzipCompression(), record.CodecGzip},
	{"snappy", kgo.SnappyCompression(), record.CodecSnappy},
	{"lz4", kgo.Lz4Compression(), record.CodecLZ4},
	{"zstd", kgo.ZstdCompression(), record.CodecZstd},
}

// testRecords are records with every shape a record can have: null and
// empty keys and values, headers with null values, explicit timestamps.
func testRecords(topic string, n int) []*kgo.Record {
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]*kgo.Record, n)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Timestamp: base.Add(time.Duration(i) * time.Second)}
		switch i % 4 {
		case 0:
			r.Key, r.Value = []byte(fmt.Sprintf("key-%d", i)), []byte(fmt.Sprintf("value-%d", i))
		case 1:
			r.Key, r.Value = nil, []byte{} // null key, empty value
		case 2:
			r.Key, r.Value = []byte{}, nil // empty key, null value (a tombstone)
		case 3:
			r.Key, r.Value = []byte{0, 1, 2, 255}, make([]byte, 3000)
			r.Headers = []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "null", Value: nil}, {Key: "", Value: []byte{}}}
		}
		out[i] = r
	}
	return out
}

// sameRecord compares what a consumer must get back byte for byte.
func sameRecord(t *testing.T, want, got *kgo.Record) {
	t.Helper()
	require.Equal(t, want.Key == nil, got.Key == nil, "key nullness at offset %d", got.Offset)
	require.Equal(t, want.Value == nil, got.Value == nil, "value nullness at offset %d", got.Offset)
	require.Equal(t, string(want.Key), string(got.Key))
	require.Equal(t, string(want.Value), string(got.Value))
	require.Equal(t, want.Timestamp.UnixMilli(), got.Timestamp.UnixMilli())
	require.Equal(t, len(want.Headers), len(got.Headers))
	for i := range want.Headers {
		require.Equal(t, want.Headers[i].Key, got.Headers[i].Key)
		require.Equal(t, want.Headers[i].Value == nil, got.Headers[i].Value == nil, "header value nullness")
		require.Equal(t, string(want.Headers[i].Value), string(got.Headers[i].Value))
	}
}

// TestProduceConsumeCodecs produces records of every shape with each codec
// and reads them back byte for byte; the segment keeps the producer's codec
// (compression.type=producer).
func TestProduceConsumeCodecs(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			createTopic(t, adm, topic, 2, nil)
			cl := newClient(t, []string{b.Addr}, kgo.ProducerBatchCompression(c.codec), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			want := testRecords(topic, 40)
			require.NoError(t, cl.ProduceSync(testCtx(t), want...).FirstErr())

			got := consume(t, []string{b.Addr}, topic, len(want))
			byPos := map[[2]int64]*kgo.Record{}
			for _, r := range got {
				byPos[[2]int64{int64(r.Partition), r.Offset}] = r
			}
			require.Len(t, byPos, len(want))
			for _, w := range want {
				g, ok := byPos[[2]int64{int64(w.Partition), w.Offset}]
				require.True(t, ok, "record %d/%d missing", w.Partition, w.Offset)
				sameRecord(t, w, g)
			}
			require.Equal(t, []record.Codec{c.want}, segmentCodecs(t, b, topic, 0))
		})
	}
}

// segmentCodecs lists the distinct codecs of the batches in a
// partition's first segment.
func segmentCodecs(t *testing.T, b *brokertest.Broker, topic string, partition int) []record.Codec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.Dir, fmt.Sprintf("%s-%d", topic, partition), "00000000000000000000.log"))
	require.NoError(t, err)
	var out []record.Codec
	it := record.NewIterator(data)
	for it.Next() {
		bt := it.Entry().Batch
		if _, err := record.Validate(bt); err != nil {
			t.Fatalf("stored batch invalid: %v", err)
		}
		if len(out) == 0 || out[len(out)-1] != bt.Codec() {
			out = append(out, bt.Codec())
		}
	}
	require.NoError(t, it.Err())
	return out
}

// TestTopicCompressionRecompresses stores a topic's batches in its
// compression.type whatever the producer sent, and LogAppendTime stamps
// them with the broker's clock.
func TestTopicCompressionRecompresses(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	gz, lat := "gzip", "LogAppendTime"
	createTopic(t, adm, "recompress", 2, map[string]*string{"compression.type": &gz, "message.timestamp.type": &lat})
	cl := newClient(t, []string{b.Addr}, kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := testRecords("recompress", 20)
	before := time.Now().Add(-time.Second)
	require.NoError(t, cl.ProduceSync(testCtx(t), want...).FirstErr())
	after := time.Now().Add(time.Second)
	got := consume(t, []string{b.Addr}, "recompress", len(want))
	for _, g := range got {
		require.True(t, g.Timestamp.After(before) && g.Timestamp.Before(after), "LogAppendTime %v", g.Timestamp)
		w := want[0]
		for _, x := range want {
			if x.Partition == g.Partition && x.Offset == g.Offset {
				w = x
			}
		}
		wc := *w
		wc.Timestamp = g.Timestamp
		sameRecord(t, &wc, g)
	}
	require.Equal(t, []record.Codec{record.CodecGzip}, segmentCodecs(t, b, "recompress", 0))
}

// TestListOffsetsByTime finds offsets by timestamp, earliest, latest and
// max timestamp.
func TestListOffsetsByTime(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "times", 1, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("times"), kgo.MaxBufferedRecords(1))
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 10 {
		ts := base.Add(time.Duration(i) * time.Minute)
		if i == 7 {
			ts = base.Add(time.Hour) // the largest timestamp
		}
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte{byte(i)}, Timestamp: ts}).FirstErr())
	}
	ctx := testCtx(t)
	for _, tc := range []struct {
		ms   int64
		want int64
	}{
		{base.UnixMilli() - 1, 0},
		{base.UnixMilli(), 0},
		{base.Add(3*time.Minute).UnixMilli() - 1, 3},
		{base.Add(9 * time.Minute).UnixMilli(), 7}, // only the hour-late record is after it
		{base.Add(2 * time.Hour).UnixMilli(), -1},
	} {
		offs, err := adm.ListOffsetsAfterMilli(ctx, tc.ms, "times")
		require.NoError(t, err)
		o, ok := offs.Lookup("times", 0)
		require.True(t, ok)
		require.NoError(t, o.Err)
		if tc.want < 0 {
			require.Equal(t, int64(10), o.Offset, "no record at or after %d: the end offset", tc.ms)
			continue
		}
		require.Equal(t, tc.want, o.Offset, "first offset at or after %d", tc.ms)
	}
	start, err := adm.ListStartOffsets(ctx, "times")
	require.NoError(t, err)
	end, err := adm.ListEndOffsets(ctx, "times")
	require.NoError(t, err)
	s, _ := start.Lookup("times", 0)
	e, _ := end.Lookup("times", 0)
	require.Equal(t, int64(0), s.Offset)
	require.Equal(t, int64(10), e.Offset)
	require.Equal(t, int32(0), e.LeaderEpoch)
	maxTS, err := adm.ListMaxTimestampOffsets(ctx, "times")
	require.NoError(t, err)
	m, _ := maxTS.Lookup("times", 0)
	require.Equal(t, int64(7), m.Offset)
	require.Equal(t, base.Add(time.Hour).UnixMilli(), m.Timestamp)
}

// TestProduceAcksAllNotEnoughReplicas refuses acks=-1 writes when the ISR
// (the leader alone) is smaller than min.insync.replicas; acks=1 works.
func TestProduceAcksAllNotEnoughReplicas(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	two := "2"
	createTopic(t, adm, "strict", 1, map[string]*string{"min.insync.replicas": &two})
	// kgo retries NOT_ENOUGH_REPLICAS until its delivery timeout, so the
	// code itself is checked on a raw request.
	c := dialRaw(t, b.Addr)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "strict"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = idempotentBatch(t, -1, -1, 1)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	c.roundTrip(req, resp)
	require.Equal(t, kerr.NotEnoughReplicas.Code, resp.Topics[0].Partitions[0].ErrorCode)
	one := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("strict"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	require.NoError(t, one.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("x")}).FirstErr())
}

// TestProduceMessageTooLarge applies max.message.bytes, changed live.
func TestProduceMessageTooLarge(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "small", 1, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("small"), kgo.RecordRetries(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: make([]byte, 5000)}).FirstErr())
	limit := "2000"
	resp, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{{Name: "max.message.bytes", Value: &limit}}, "small")
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	err = cl.ProduceSync(testCtx(t), &kgo.Record{Value: make([]byte, 5000)}).FirstErr()
	require.ErrorIs(t, err, kerr.MessageTooLarge)
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: make([]byte, 100)}).FirstErr())
}

// TestProduceAcksZero writes without a response; the records are there.
func TestProduceAcksZero(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "fire", 1, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("fire"), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	for i := range 50 {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	got := consume(t, []string{b.Addr}, "fire", 50)
	require.Len(t, got, 50)
}

// TestRawProduceDuplicate sends the same idempotent batch twice: the
// second is answered with the first's offset and not stored again; a
// sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestRawProduceDuplicate(t *testing.T) {
	b := brokertest.StartBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "dups", 1, nil)
	c := dialRaw(t, b.Addr)
	pid := initProducerID(t, c)

	produce := func(seq int32) kmsg.ProduceResponseTopicPartition {
		return rawProduce(t, c, "dups", idempotentBatch(t, pid, seq, 3))
	}
	first := produce(0)
	require.Equal(t, int16(0), first.ErrorCode)
	require.Equal(t, int64(0), first.BaseOffset)
	second := produce(3)
	require.Equal(t, int64(3), second.BaseOffset)
	dup := produce(0)
	require.Equal(t, int16(0), dup.ErrorCode, "a retry is a success")
	require.Equal(t, int64(0), dup.BaseOffset, "with the original offset")
	gap := produce(9)
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, gap.ErrorCode)
	require.Len(t, consume(t, []string{b.Addr}, "dups", 6), 6)
	end, err := newAdmin(t, b.Addr).ListEndOffsets(testCtx(t), "dups")
	require.NoError(t, err)
	o, _ := end.Lookup("dups", 0)
	require.Equal(t, int64(6), o.Offset, "the duplicate was not stored")
}

func initProducerID(t *testing.T, c *rawConn) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	resp := kmsg.NewPtrInitProducerIDResponse()
	c.roundTrip(req, resp)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.GreaterOrEqual(t, resp.ProducerID, int64(0))
	return resp.ProducerID
}

// idempotentBatch builds a batch of n records for producer pid, epoch 0,
// starting at sequence seq.
func idempotentBatch(t *testing.T, pid int64, seq int32, n int) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, 0, seq
	bld := record.NewBuilder(opts)
	for i := range n {
		bld.Append(time.Now().UnixMilli(), nil, []byte(fmt.Sprintf("seq-%d", int(seq)+i)), nil)
	}
	batch, err := bld.Build()
	require.NoError(t, err)
	return batch
}

// rawProduce sends one batch to partition 0 with acks=1 (Produce v9).
func rawProduce(t *testing.T, c *rawConn, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	c.roundTrip(req, resp)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestInitProducerIDTransactional: a transactional InitProducerId goes
// to the id's coordinator (NOT_COORDINATOR before FindCoordinator has
// created __transaction_state); there it gets a producer id at epoch 0,
// and the same id again with the next epoch (fencing the first
// instance). Idempotent ids still come one after the other.
func TestInitProducerIDTransactional(t *testing.T) {
	b := brokertest.StartBroker(t)
	c := dialRaw(t, b.Addr)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID = ptr("txn-1")
	req.TransactionTimeoutMillis = 60000
	resp := kmsg.NewPtrInitProducerIDResponse()
	c.roundTrip(req, resp)
	require.Equal(t, kerr.NotCoordinator.Code, resp.ErrorCode)
	require.Equal(t, int64(-1), resp.ProducerID)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey, fc.CoordinatorType = 3, "txn-1", 1
	waitFor(t, 30*time.Second, "a transaction coordinator for txn-1", func() bool {
		fr := kmsg.NewPtrFindCoordinatorResponse()
		c.roundTrip(fc, fr)
		return fr.ErrorCode == 0 && fr.NodeID == 0
	})
	var first kmsg.InitProducerIDResponse
	waitFor(t, 30*time.Second, "InitProducerId answered by the coordinator", func() bool {
		first = kmsg.NewInitProducerIDResponse()
		c.roundTrip(req, &first)
		return first.ErrorCode != kerr.CoordinatorLoadInProgress.Code && first.ErrorCode != kerr.NotCoordinator.Code
	})
	require.Zero(t, first.ErrorCode, kerr.ErrorForCode(first.ErrorCode))
	require.GreaterOrEqual(t, first.ProducerID, int64(0))
	require.Equal(t, int16(0), first.ProducerEpoch)
	second := kmsg.NewPtrInitProducerIDResponse()
	c.roundTrip(req, second)
	require.Zero(t, second.ErrorCode)
	require.Equal(t, first.ProducerID, second.ProducerID)
	require.Equal(t, int16(1), second.ProducerEpoch, "a new instance of the id bumps the epoch")

	req.TransactionTimeoutMillis = 900001 // above transaction.max.timeout.ms
	bad := kmsg.NewPtrInitProducerIDResponse()
	c.roundTrip(req, bad)
	require.Equal(t, kerr.InvalidTransactionTimeout.Code, bad.ErrorCode)

	a, b2 := initProducerID(t, c), initProducerID(t, c)
	require.Equal(t, a+1, b2)
}

// TestProduceFlushMessagesGroupCommit: with flush.messages=1 every
// acknowledged batch is fsynced first; the acknowledgements of requests
// that carry several partitions wait for all their flushes, and records
// come back complete and in order.
func TestProduceFlushMessagesGroupCommit(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	one := "1"
	createTopic(t, adm, "durable", 3, map[string]*string{"flush.messages": &one})
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("durable"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
	const n = 3000
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Partition: int32(i % 3), Value: []byte(fmt.Sprintf("v%05d", i))})
	}
	res := cl.ProduceSync(testCtx(t), recs...)
	require.NoError(t, res.FirstErr())
	next := map[int32]int64{}
	for _, r := range res {
		require.Equal(t, next[r.Record.Partition], r.Record.Offset, "partition %d", r.Record.Partition)
		next[r.Record.Partition]++
	}
	got := consume(t, []string{b.Addr}, "durable", n)
	require.Len(t, got, n)
	perPartition := map[int32]int{}
	for _, r := range got {
		want := fmt.Sprintf("v%05d", int(r.Offset)*3+int(r.Partition))
		require.Equal(t, want, string(r.Value))
		perPartition[r.Partition]++
	}
	require.Equal(t, map[int32]int{0: n / 3, 1: n / 3, 2: n / 3}, perPartition)
}
