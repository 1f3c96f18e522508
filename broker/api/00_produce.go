package api

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/purgatory"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
	"github.com/qk-project/qk/broker/txn"
)

// Produce: v3-13
//
// Behavior:
// * acks must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS everywhere)
// * Each partition's records must be exactly one v2 batch (Kafka 4's
//   rule: none, several, or magic 0/1 is INVALID_RECORD; a size field
//   that does not frame is CORRUPT_MESSAGE; zstd before v7 is
//   UNSUPPORTED_COMPRESSION_TYPE)
// * The batch is checked on the hot path by its header and CRC-32C only
//   (CORRUPT_MESSAGE for a bad CRC, INVALID_RECORD for a bad header, a
//   control batch, or record count not matching lastOffsetDelta+1). Kafka
//   also decodes every record of an uncompressed batch; qk decodes records
//   only when it must: keys of compacted topics (a null key is
//   INVALID_RECORD) and recompression
// * compression.type=producer stores the producer's bytes untouched; any
//   other value rebuilds a batch of another codec (record.Iterate + the
//   builder), keeping producer id, epoch, sequence and timestamps
// * max.message.bytes (topic) / message.max.bytes: MESSAGE_TOO_LARGE
// * message.timestamp.type=LogAppendTime: the log stamps the batch and the
//   response carries the time; CreateTime batches whose base or max
//   timestamp lies outside message.timestamp.before/after.max.ms are
//   INVALID_TIMESTAMP
// * Idempotent batches go through the log's producer state: a retry of one
//   of the last five batches is answered with its original base offset;
//   a gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
//   INVALID_PRODUCER_EPOCH
// * Transactional batches (with the request's transactional id, else
//   INVALID_REQUEST) open the producer's transaction on the partition at
//   their first offset; the log refuses an old epoch
//   (INVALID_PRODUCER_EPOCH) and a plain batch inside an open
//   transaction (INVALID_TXN_STATE). KIP-890's verification with the
//   coordinator before the first append is not done yet
// * acks=-1: NOT_ENOUGH_REPLICAS before the append when the ISR is
//   smaller than min.insync.replicas; after it, the partition's answer
//   waits in the produce purgatory until the high watermark passes the
//   batch (the ISR has it; at once when the leader is alone in it), the
//   request's timeout (REQUEST_TIMED_OUT) or a leadership change
//   (NOT_LEADER_OR_FOLLOWER); NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
//   ISR shrank below min.insync.replicas meanwhile
// * acks=0: no response; a partition error closes the connection instead
//   (Kafka's way of making the client refresh its metadata)
// * Unknown topics are auto-created when auto.create.topics.enable
// * Client quotas (quota.go): the request's size counts against
//   producer_byte_rate and its handler time against request_percentage
//   (not for acks=0); throttle_time_ms is the larger throttle time, and
//   the connection is muted for it after the response (acks=0: without
//   one)
//
// Version notes:
// * v3: transactional id, RecordBatch only; v5: log start offset
// * v7: zstd allowed; v8: record errors, error message
// * v9: flexible; v10: current leader / node endpoints tags (not sent:
//   a single node never redirects); v11, v12: no change on the wire
// * v13: topics by id (UNKNOWN_TOPIC_ID)

func (h *Handler) handleProduce(c *call) {
	req := c.req.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	snap := h.cfg.Cache.Snapshot()
	if !c.detached && c.version < 13 && h.broker().AutoCreateTopicsEnable && produceWouldCreate(snap, req.Topics) {
		// Auto-creation waits for the controller: not on a handler
		// goroutine.
		c.detach((*Handler).handleProduce)
		return
	}
	if !c.detached && h.verifying(req, c.version) {
		// Verification asks the coordinator: not on a handler goroutine.
		c.detach((*Handler).handleProduce)
		return
	}
	var verified map[txn.TopicPartition]*txnVerification
	if c.detached && h.verificationOn(req, c.version) {
		// verifyProduce skips what needs no verification: no second scan.
		ctx, cancel := c.ctx(req.TimeoutMillis)
		verified = h.verifyProduce(ctx, req)
		cancel()
	}
	// An acks=-1 produce may wait timeout_ms for its replicas (after as
	// long again for a topic's creation): the watchdog counts only what
	// is beyond (network/watchdog.go).
	wait := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	if c.detached {
		wait *= 2
	}
	c.r.SetWait(wait)
	anyErr := false
	// Partitions whose flush.messages flush is still running answer once
	// it completes (group commit, see log.Log.AppendAsync); the response
	// goes out when the last of them is durable. waiting counts them plus
	// one for this goroutine, so the response cannot leave before every
	// partition has been appended.
	type flushErr struct {
		ti, pi int
		err    error
	}
	var (
		mu        sync.Mutex
		flushErrs []flushErr
		waiting   atomic.Int32
	)
	waiting.Store(1)
	finish := func() {
		if waiting.Add(-1) != 0 {
			return
		}
		for _, fe := range flushErrs {
			sp := &resp.Topics[fe.ti].Partitions[fe.pi]
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			sp.ErrorCode = errorCode(fe.err)
			if c.version >= 8 {
				sp.ErrorMessage = errorMessage(fe.err)
			}
		}
		c.respond(resp)
	}

	// A transactional produce needs WRITE on its transactional id, every
	// topic WRITE on the topic (KafkaApis.handleProduceRequest).
	var txnErr error
	if req.TransactionID != nil && !c.authorize(acl.Write, acl.TransactionalID, *req.TransactionID) {
		txnErr = kerr.TransactionalIDAuthorizationFailed
	}
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, topicErr := h.produceTopic(c, snap, req, rt)
		if txnErr != nil {
			topicErr = txnErr
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			err := topicErr
			if err == nil {
				err = h.produceAcks(req.Acks)
			}
			if v := verified[txn.TopicPartition{Topic: name, Partition: rp.Partition}]; err == nil && v != nil && v.err != nil {
				err = v.err
			}
			var flushed func(error)
			if err == nil {
				var (
					info    log.AppendInfo
					pending bool
				)
				if req.Acks != 0 {
					// The response's partition is addressed by index: finish
					// applies the error once the loop below is complete.
					ti, pi := len(resp.Topics), len(st.Partitions)
					partition := rp.Partition
					flushed = func(ferr error) {
						if ferr != nil {
							h.lg.Warn("produce not flushed", "topic", name, "partition", partition, "err", ferr)
							mu.Lock()
							flushErrs = append(flushErrs, flushErr{ti, pi, ferr})
							mu.Unlock()
						}
						finish()
					}
				}
				// Counted before the append: the flush may finish before
				// producePartition returns.
				if flushed != nil {
					waiting.Add(1)
				}
				info, pending, err = h.producePartition(c, snap, name, rp.Partition, rp.Records, req, flushed)
				if flushed != nil && !pending {
					waiting.Add(-1) // this goroutine's count keeps it above 0
				}
				if err == nil {
					sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = info.FirstOffset, info.LogAppendTime, info.LogStartOffset
					if req.Acks == -1 {
						// Until the ISR has the batch (the high watermark
						// passes it): the response waits, as for a flush.
						ti, pi := len(resp.Topics), len(st.Partitions)
						waiting.Add(1)
						h.awaitReplication(name, rp.Partition, info.LastOffset+1, req.TimeoutMillis, func(rerr error) {
							if rerr != nil {
								mu.Lock()
								flushErrs = append(flushErrs, flushErr{ti, pi, rerr})
								mu.Unlock()
							}
							finish()
						})
					}
				}
			}
			if err != nil {
				anyErr = true
				sp.ErrorCode = errorCode(err)
				if c.version >= 8 {
					sp.ErrorMessage = errorMessage(err)
				}
				h.lg.Debug("produce failed", "topic", name, "partition", rp.Partition, "err", err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}

	// Kafka's quotas.produce (the whole request's size) and quotas.request
	// (not for acks=0), recorded once the batches are appended; the
	// larger throttle time goes in the response (quota.go).
	if h.cfg.Quotas != nil {
		now := h.now()
		bw := c.byteThrottle(clientquota.Produce, int64(len(c.r.Frame)), now)
		if req.Acks == 0 {
			c.requestRecorded = true
			if bw > 0 {
				c.r.SetThrottle(bw) // muted without a response
			}
		} else {
			c.throttle = max(bw, c.requestThrottle(now))
		}
	}
	if req.Acks == 0 {
		if anyErr {
			c.r.CloseConnection()
		} else {
			c.r.NoResponse()
		}
		return
	}
	finish()
}

// awaitReplication calls done once the partition's high watermark reaches
// required (at once if it has), or with the error that ends the wait.
func (h *Handler) awaitReplication(topic string, partition int32, required int64, timeoutMs int32, done func(error)) {
	p, err := h.cfg.Replicas.Partition(topic, partition)
	if err != nil {
		done(err)
		return
	}
	if h.cfg.Produces == nil || p.HighWatermark() >= required {
		done(nil)
		return
	}
	op := &delayedProduce{p: p, required: required, leaderEpoch: p.LeaderEpoch(), done: done}
	// The key is the partition's own topic string: topic aliases the
	// request frame (UnsafeReadFrom), whose bytes are reused once the
	// response is written, and a map key whose bytes change corrupts the
	// purgatory's watcher map (a nil watcher in a list, seen as panics
	// in every later check of the partition).
	h.cfg.Produces.TryCompleteElseWatch(op, time.Duration(max(timeoutMs, 0))*time.Millisecond,
		purgatory.Key{Topic: p.Topic(), Partition: partition})
}

// produceTopic resolves a request topic to its name, auto-creating it
// when allowed.
func (h *Handler) produceTopic(c *call, snap *controller.Snapshot, req *kmsg.ProduceRequest, rt kmsg.ProduceRequestTopic) (string, error) {
	if c.version >= 13 {
		t, ok := snap.TopicByID(rt.TopicID)
		if !ok {
			return "", errUnknownTopicID
		}
		if !c.authorize(acl.Write, acl.Topic, t.Name) {
			return t.Name, kerr.TopicAuthorizationFailed
		}
		return t.Name, nil
	}
	// Authorized before its existence is known, as Kafka does, so a
	// client cannot probe for topics it may not write.
	if !c.authorize(acl.Write, acl.Topic, rt.Topic) {
		return rt.Topic, kerr.TopicAuthorizationFailed
	}
	if _, ok := snap.Topics[rt.Topic]; ok {
		return rt.Topic, nil
	}
	if err := validTopicName(rt.Topic); err != nil {
		return rt.Topic, err
	}
	if !h.broker().AutoCreateTopicsEnable || !c.mayCreateTopic(rt.Topic) {
		return rt.Topic, replica.ErrUnknownTopicOrPartition
	}
	ctx, cancel := c.ctx(req.TimeoutMillis)
	defer cancel()
	// The name aliases the request frame: the store and cache keep a copy.
	if _, err := h.autoCreateTopic(ctx, strings.Clone(rt.Topic)); err != nil {
		return rt.Topic, err
	}
	return rt.Topic, nil
}

func (h *Handler) produceAcks(acks int16) error {
	if acks != -1 && acks != 0 && acks != 1 {
		return kerr.InvalidRequiredAcks
	}
	return nil
}

// producePartition validates, converts and appends one partition's batch.
//
// With flushed set, a flush that flush.messages calls for is not waited
// for: pending reports it, and flushed is called when it completes.
func (h *Handler) producePartition(c *call, snap *controller.Snapshot, topic string, partition int32, records []byte, req *kmsg.ProduceRequest, flushed func(error)) (info log.AppendInfo, pending bool, err error) {
	p, err := h.cfg.Replicas.Partition(topic, partition)
	if err != nil {
		// An offline replica (its log dir failed) answers
		// KAFKA_STORAGE_ERROR, as Kafka's does, until the controller moves
		// the leadership; the producer retries and refreshes its metadata.
		if t, ok := snap.Topics[topic]; ok && partition >= 0 && int(partition) < len(t.Partitions) && !errors.Is(err, replica.ErrOffline) {
			return log.AppendInfo{}, false, replica.ErrNotLeaderOrFollower
		}
		return log.AppendInfo{}, false, err
	}
	batch, err := checkProduceRecords(c.version, records)
	if err != nil {
		return log.AppendInfo{}, false, err
	}
	if batch.IsTransactional() && req.TransactionID == nil {
		// Kafka's ProduceRequest validation: transactional records come
		// only with the producer's transactional id.
		return log.AppendInfo{}, false, fmt.Errorf("%w: transactional records without a transactional id", kerr.InvalidRequest)
	}
	cfg := p.Config()
	if err := h.checkTimestamps(batch, cfg); err != nil {
		return log.AppendInfo{}, false, err
	}
	if cfg.CleanupPolicy.Compact {
		if err := checkKeys(batch); err != nil {
			return log.AppendInfo{}, false, err
		}
	}
	out, err := convertCompression(batch, cfg.CompressionType)
	if err != nil {
		return log.AppendInfo{}, false, err
	}
	if flushed == nil {
		info, err = p.AppendAsLeader(out, req.Acks)
		return info, false, err
	}
	return p.AppendAsLeaderAsync(out, req.Acks, flushed)
}

// checkProduceRecords applies ProduceRequest.validateRecords: exactly one
// batch of magic 2, zstd only from v7.
func checkProduceRecords(version int16, records []byte) (record.Batch, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: produce requests with version %d must have at least one record batch per partition", errInvalidRecord, version)
	}
	size, magic, err := record.PeekSize(records)
	if err != nil || size > len(records) {
		if err == nil {
			err = fmt.Errorf("batch declares %d bytes, %d present", size, len(records))
		}
		return nil, fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
	}
	if magic != record.MagicV2 {
		return nil, fmt.Errorf("%w: produce requests with version %d are only allowed to contain record batches with magic version 2", errInvalidRecord, version)
	}
	if size != len(records) {
		return nil, fmt.Errorf("%w: produce requests with version %d are only allowed to contain exactly one record batch per partition", errInvalidRecord, version)
	}
	b, err := record.ParseBatch(records)
	if err != nil {
		return nil, err
	}
	if version < 7 && b.Codec() == record.CodecZstd {
		return nil, fmt.Errorf("%w: produce requests with version %d are not allowed to use ZStandard compression", errUnsupportedCompression, version)
	}
	return b, nil
}

// checkTimestamps applies message.timestamp.before/after.max.ms to a
// CreateTime batch's base and max timestamps.
func (h *Handler) checkTimestamps(b record.Batch, cfg config.Topic) error {
	if cfg.MessageTimestampType == "LogAppendTime" || b.TimestampType() == record.LogAppendTime {
		return nil
	}
	const maxLong = 1<<63 - 1
	if cfg.MessageTimestampBeforeMaxMs == maxLong && cfg.MessageTimestampAfterMaxMs == maxLong {
		return nil
	}
	now := h.now().UnixMilli()
	for _, ts := range []int64{b.BaseTimestamp(), b.MaxTimestamp()} {
		if ts < 0 {
			continue
		}
		if now-ts > cfg.MessageTimestampBeforeMaxMs || ts-now > cfg.MessageTimestampAfterMaxMs {
			return fmt.Errorf("%w: timestamp %d of the batch is out of range (now %d)", kerr.InvalidTimestamp, ts, now)
		}
	}
	return nil
}

// checkKeys refuses records without a key, for compacted topics.
func checkKeys(b record.Batch) error {
	return b.Iterate(func(r *record.Record) error {
		if r.Key == nil {
			return fmt.Errorf("%w: compacted topic cannot accept message without key", errInvalidRecord)
		}
		return nil
	})
}

// targetCodec maps compression.type to a codec; false for "producer".
func targetCodec(compressionType string) (record.Codec, bool) {
	switch compressionType {
	case "uncompressed":
		return record.CodecNone, true
	case "gzip":
		return record.CodecGzip, true
	case "snappy":
		return record.CodecSnappy, true
	case "lz4":
		return record.CodecLZ4, true
	case "zstd":
		return record.CodecZstd, true
	}
	return 0, false
}

// convertCompression returns b itself when the topic keeps the producer's
// compression or b already has the topic's codec; otherwise a new batch
// with the same header fields and records in the topic's codec. The CRC
// of b is checked first, since a rebuilt batch gets a fresh one.
func convertCompression(b record.Batch, compressionType string) ([]byte, error) {
	codec, ok := targetCodec(compressionType)
	if !ok || b.Codec() == codec {
		return b, nil
	}
	if _, err := record.Validate(b); err != nil {
		return nil, err
	}
	opts := record.BatchOptions{
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Codec:                codec,
		TimestampType:        b.TimestampType(),
		Transactional:        b.IsTransactional(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		BaseTimestamp:        b.BaseTimestamp(),
	}
	bld := record.NewBuilder(opts)
	if err := b.Iterate(func(r *record.Record) error {
		bld.AppendRecord(*r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidRecord, err)
	}
	out, err := bld.Build()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidRecord, err)
	}
	if b.TimestampType() == record.LogAppendTime {
		record.Batch(out).SetLogAppendTime(b.MaxTimestamp())
	}
	return out, nil
}

// produceWouldCreate reports whether a produce names (by name, before
// v13) a topic the snapshot lacks, which auto-creation would then create.
func produceWouldCreate(snap *controller.Snapshot, topics []kmsg.ProduceRequestTopic) bool {
	for _, rt := range topics {
		if _, ok := snap.Topics[rt.Topic]; !ok {
			return true
		}
	}
	return false
}
