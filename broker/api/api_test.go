package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/replica"
)

func TestErrorCode(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{fmt.Errorf("append: %w: %w", log.ErrInvalidBatch, &record.CorruptError{Err: record.ErrBadCRC}), kerr.CorruptMessage},
		{fmt.Errorf("append: %w: %w", log.ErrInvalidBatch, &record.CorruptError{Err: record.ErrInvalidRecord}), kerr.InvalidRecord},
		{wrap(log.ErrInvalidBatch), kerr.InvalidRecord},
		{wrap(log.ErrBatchTooLarge), kerr.MessageTooLarge},
		{wrap(log.ErrOffsetOutOfRange), kerr.OffsetOutOfRange},
		{wrap(log.ErrAboveHighWatermark), kerr.OffsetOutOfRange},
		{wrap(log.ErrOutOfOrderSequence), kerr.OutOfOrderSequenceNumber},
		{wrap(log.ErrInvalidProducerEpoch), kerr.InvalidProducerEpoch},
		{wrap(log.ErrClosed), kerr.KafkaStorageError},
		{wrap(replica.ErrUnknownTopicOrPartition), kerr.UnknownTopicOrPartition},
		{wrap(replica.ErrNotLeaderOrFollower), kerr.NotLeaderForPartition},
		{wrap(replica.ErrNotEnoughReplicas), kerr.NotEnoughReplicas},
		{wrap(replica.ErrFencedLeaderEpoch), kerr.FencedLeaderEpoch},
		{wrap(replica.ErrUnknownLeaderEpoch), kerr.UnknownLeaderEpoch},
		{wrap(replica.ErrInconsistentTopicID), kerr.InconsistentTopicID},
		{wrap(controller.ErrNotController), kerr.NotController},
		{wrap(controller.ErrTopicExists), kerr.TopicAlreadyExists},
		{wrap(controller.ErrTopicCollision), kerr.InvalidTopicException},
		{wrap(controller.ErrInvalidPartitions), kerr.InvalidPartitions},
		{wrap(controller.ErrInvalidReplicationFactor), kerr.InvalidReplicationFactor},
		{wrap(controller.ErrInvalidReplicaAssignment), kerr.InvalidReplicaAssignment},
		{wrap(config.ErrUnknownTopicConfig), kerr.InvalidConfig},
		{&config.ValueError{Key: "retention.ms"}, kerr.InvalidConfig},
		{alterError(&config.ValueError{Key: "retention.ms"}), kerr.InvalidRequest},
		{wrap(config.ErrReadOnly), kerr.InvalidRequest},
		{wrap(errUnknownTopicID), kerr.UnknownTopicID},
		{wrap(errTopicDeletionDisabled), kerr.TopicDeletionDisabled},
		{wrap(kerr.InvalidTxnState), kerr.InvalidTxnState},
		{wrap(log.ErrLogDirOffline), kerr.KafkaStorageError},
		{wrap(log.ErrFailed), kerr.KafkaStorageError},
		{wrap(context.Canceled), kerr.BrokerNotAvailable},
		{wrap(context.DeadlineExceeded), kerr.RequestTimedOut},
		{fmt.Errorf("anything else"), kerr.UnknownServerError},
	} {
		require.Equal(t, tc.want.Code, errorCode(tc.err), "%v: want %v, got %v", tc.err, tc.want, kerr.ErrorForCode(errorCode(tc.err)))
	}
	require.Equal(t, int16(0), errorCode(nil))
}

func TestSkipTags(t *testing.T) {
	body := []byte{9, 9}
	for _, tc := range []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"none", append([]byte{0}, body...), true},
		{"one", append([]byte{1, 5, 2, 'h', 'i'}, body...), true},
		{"two", append([]byte{2, 0, 0, 1, 1, 'x'}, body...), true},
		{"empty input", nil, false},
		{"size past end", []byte{1, 0, 50, 1}, false},
		{"count past end", []byte{3, 0, 0}, false},
		{"bad varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false},
	} {
		rest, ok := skipTags(tc.in)
		require.Equal(t, tc.ok, ok, tc.name)
		if ok {
			require.Equal(t, body, rest, tc.name)
		}
	}
}

func FuzzSkipTags(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 5, 2, 'h', 'i', 9})
	f.Add([]byte{2, 0, 0, 1, 1, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		rest, ok := skipTags(b)
		if ok && len(rest) > len(b) {
			t.Fatalf("rest longer than input")
		}
	})
}

func TestValidTopicName(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c.1", strings.Repeat("x", 249), "__consumer_offsets"} {
		require.NoError(t, validTopicName(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", strings.Repeat("x", 250), "a b", "a/b", "ü", "a\x00"} {
		require.ErrorIs(t, validTopicName(bad), errInvalidTopic, bad)
	}
}

func buildBatch(t testing.TB, opts record.BatchOptions, n int) []byte {
	bld := record.NewBuilder(opts)
	for i := range n {
		bld.Append(int64(1_700_000_000_000+i), []byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i)),
			[]record.Header{{Key: "h", Value: []byte{byte(i)}}})
	}
	b, err := bld.Build()
	require.NoError(t, err)
	return b
}

func TestCheckProduceRecords(t *testing.T) {
	good := buildBatch(t, record.DefaultBatchOptions(), 3)
	zstdOpts := record.DefaultBatchOptions()
	zstdOpts.Codec = record.CodecZstd
	zstd := buildBatch(t, zstdOpts, 3)
	magic0 := append([]byte(nil), good...)
	magic0[record.MagicOffset] = 0
	short := make([]byte, 10)
	for _, tc := range []struct {
		name    string
		version int16
		in      []byte
		want    *kerr.Error
	}{
		{"good", 3, good, nil},
		{"zstd v7", 7, zstd, nil},
		{"zstd v6", 6, zstd, kerr.UnsupportedCompressionType},
		{"empty", 9, nil, kerr.InvalidRecord},
		{"two batches", 9, append(append([]byte(nil), good...), good...), kerr.InvalidRecord},
		{"magic 0", 9, magic0, kerr.InvalidRecord},
		{"too short to frame", 9, short, kerr.CorruptMessage},
		{"truncated", 9, good[:len(good)-1], kerr.CorruptMessage},
	} {
		_, err := checkProduceRecords(tc.version, tc.in)
		if tc.want == nil {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Equal(t, tc.want.Code, errorCode(err), "%s: %v", tc.name, err)
	}
}

// TestConvertCompression rebuilds a batch in the topic's codec with the
// same header fields and records, and leaves it alone for "producer".
func TestConvertCompression(t *testing.T) {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 42, 3, 17
	opts.Codec = record.CodecSnappy
	in := buildBatch(t, opts, 5)
	same, err := convertCompression(record.Batch(in), "producer")
	require.NoError(t, err)
	require.Equal(t, in, same)
	same, err = convertCompression(record.Batch(in), "snappy")
	require.NoError(t, err)
	require.Equal(t, in, same, "already in the topic's codec")

	for _, ct := range []string{"uncompressed", "gzip", "lz4", "zstd"} {
		out, err := convertCompression(record.Batch(in), ct)
		require.NoError(t, err, ct)
		b, err := record.Validate(out)
		require.NoError(t, err, ct)
		want, _ := targetCodec(ct)
		require.Equal(t, want, b.Codec())
		require.Equal(t, int64(42), b.ProducerID())
		require.Equal(t, int16(3), b.ProducerEpoch())
		require.Equal(t, int32(17), b.BaseSequence())
		require.Equal(t, record.Batch(in).MaxTimestamp(), b.MaxTimestamp())
		wantRecs, err := record.Batch(in).AllRecords()
		require.NoError(t, err)
		gotRecs, err := b.AllRecords()
		require.NoError(t, err)
		require.Len(t, gotRecs, len(wantRecs))
		for i := range wantRecs {
			require.Equal(t, wantRecs[i].Key, gotRecs[i].Key)
			require.Equal(t, wantRecs[i].Value, gotRecs[i].Value)
			require.Equal(t, wantRecs[i].Headers, gotRecs[i].Headers)
			require.Equal(t, wantRecs[i].Timestamp(record.Batch(in)), gotRecs[i].Timestamp(b))
			require.Equal(t, wantRecs[i].OffsetDelta, gotRecs[i].OffsetDelta)
		}
	}
	bad := append([]byte(nil), in...)
	bad[len(bad)-1] ^= 1
	_, err = convertCompression(record.Batch(bad), "gzip")
	require.Equal(t, kerr.CorruptMessage.Code, errorCode(err), "CRC checked before rebuilding")
}

func TestApiTable(t *testing.T) {
	keys := apiVersionKeys()
	control := 0
	for _, a := range apis {
		if a.control {
			control++
		}
	}
	require.Equal(t, 5, control, "LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, AlterPartition")
	require.Len(t, keys, len(apis)-control, "inter-broker APIs are not advertised")
	for _, k := range keys {
		a := byKey[k.ApiKey]
		require.NotNil(t, a)
		require.Equal(t, a.min, k.MinVersion)
		require.Equal(t, a.max, k.MaxVersion)
		require.LessOrEqual(t, a.max, kmsg.RequestForKey(a.key).MaxVersion())
	}
	require.Equal(t, int16(3), byKey[0].min, "Produce from v3: record batches only")
	require.Equal(t, int16(4), byKey[1].min, "Fetch from v4")
}

// BenchmarkFetchFrame frames a response of 100 partitions.
func BenchmarkFetchFrame(b *testing.B) {
	r := &fetchResponse{version: 16}
	for ti := range 10 {
		ft := fetchTopic{topic: fmt.Sprint("topic-", ti), topicID: [16]byte{byte(ti)}}
		for p := range 10 {
			fp := newFetchPartition(int32(p), 0)
			fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = 1000, 1000, 0
			ft.partitions = append(ft.partitions, fp)
		}
		r.topics = append(r.topics, ft)
	}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		parts := r.frame(buf, []byte{0, 0, 0, 1, 0})
		buf = parts[0].Bytes[:0]
	}
}

// BenchmarkProduceDecode decodes a Produce request of one 16 KiB batch
// without copying, as Handle does.
func BenchmarkProduceDecode(b *testing.B) {
	opts := record.DefaultBatchOptions()
	bld := record.NewBuilder(opts)
	for i := range 16 {
		bld.Append(int64(i), nil, make([]byte, 1000), nil)
	}
	batch, err := bld.Build()
	require.NoError(b, err)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, 1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	body := req.AppendTo(nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var d kmsg.ProduceRequest
		d.Version = 9
		if err := d.UnsafeReadFrom(body); err != nil {
			b.Fatal(err)
		}
		if _, err := checkProduceRecords(9, d.Topics[0].Partitions[0].Records); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMetadata10kPartitions builds and encodes the Metadata answer
// for one topic of 10,000 partitions.
func BenchmarkMetadata10kPartitions(b *testing.B) {
	snap := &controller.Snapshot{Brokers: map[int32]controller.Broker{0: {ID: 0}}}
	t := &controller.Topic{Name: "big", ID: [16]byte{1}}
	for p := range int32(10_000) {
		t.Partitions = append(t.Partitions, controller.PartitionInfo{Partition: p, Replicas: []int32{0}, ISR: []int32{0}})
	}
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 12
		resp.Topics = append(resp.Topics, metadataTopic(snap, t, false, -1, nil))
		buf = resp.AppendTo(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}
