package api

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
)

// DescribeProducers: v0
//
// Behavior:
// * Per topic: an invalid name is INVALID_TOPIC_EXCEPTION, no READ is
//   TOPIC_AUTHORIZATION_FAILED, a topic the metadata does not know is
//   UNKNOWN_TOPIC_OR_PARTITION, for each partition asked
// * Per partition, as Kafka's ReplicaManager.activeProducerState: a
//   partition of a known topic that this broker does not host is
//   NOT_LEADER_OR_FOLLOWER, one it never heard of
//   UNKNOWN_TOPIC_OR_PARTITION, an offline log KAFKA_STORAGE_ERROR
// * A replica answers from its log's producer state, leader or follower
//   (followers rebuild the same state; kafka-transactions.sh
//   describe-producers --broker-id asks one replica)
// * Each active producer: id, epoch, last sequence (-1 without a batch),
//   last timestamp, coordinator epoch of its last marker (-1 before the
//   first), start offset of its open transaction (-1 when none); by
//   producer id
//
// Version notes:
// * v0: flexible from the start (KIP-664)

func (h *Handler) handleDescribeProducers(c *call) {
	req := c.req.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	snap := h.cfg.Cache.Snapshot()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var topicCode int16
		var topicMsg *string
		ti, known := snap.Topics[rt.Topic]
		switch {
		case validTopicName(rt.Topic) != nil:
			topicCode = kerr.InvalidTopicException.Code
			msg := validTopicName(rt.Topic).Error()
			topicMsg = &msg
		case !c.authorize(acl.Read, acl.Topic, rt.Topic):
			topicCode = kerr.TopicAuthorizationFailed.Code
		case !known:
			topicCode = kerr.UnknownTopicOrPartition.Code
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			if topicCode != 0 {
				sp.ErrorCode, sp.ErrorMessage = topicCode, topicMsg
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			part, err := h.cfg.Replicas.Partition(rt.Topic, p)
			if err != nil {
				if p >= 0 && int(p) < len(ti.Partitions) && !errors.Is(err, replica.ErrOffline) {
					err = replica.ErrNotLeaderOrFollower
				}
				sp.ErrorCode = errorCode(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.ActiveProducers = activeProducers(part)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.respond(resp)
}

// activeProducers is a partition's producer state as DescribeProducers
// reports it, by producer id.
func activeProducers(part *replica.Partition) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	entries := part.Log().ProducerState()
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(entries))
	for _, e := range entries {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch = e.ProducerID, int32(e.Epoch)
		ap.LastSequence, ap.LastTimestamp = e.LastSequence(), e.LastTimestamp
		ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.CoordinatorEpoch, e.CurrentTxnFirstOffset
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeProducersResponseTopicPartitionActiveProducer) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}
