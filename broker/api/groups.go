package api

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/txncoord"
)

// coordinator finds the broker coordinating a group (key type 0), creating
// __consumer_offsets on first use as Kafka does: the broker's
// offsets.topic.num.partitions, replication factor
// min(offsets.topic.replication.factor, live brokers), compacted.
func (h *Handler) coordinator(ctx context.Context, key string, keyType int8, listener string) (controller.Broker, error) {
	topic, create, partitionFor := group.Topic, h.createOffsetsTopic, func(string) int32 { return 0 }
	switch {
	case keyType == 0 && h.cfg.Groups != nil:
		partitionFor = h.cfg.Groups.PartitionFor
	case keyType == 1 && h.cfg.Txn != nil:
		topic, create, partitionFor = txncoord.Topic, h.createTransactionTopic, h.cfg.Txn.PartitionFor
	default:
		return controller.Broker{}, kerr.CoordinatorNotAvailable
	}
	snap := h.cfg.Cache.Snapshot()
	t, ok := snap.Topics[topic]
	if !ok && !snap.Updated() {
		// Just started, no metadata from the controller yet: the topic
		// may well exist; creating it now would use a replication factor
		// capped at no live brokers.
		return controller.Broker{}, kerr.CoordinatorNotAvailable
	}
	if !ok {
		var err error
		if t, err = create(ctx); err != nil {
			h.lg.Warn("cannot create "+topic, "err", err)
			return controller.Broker{}, kerr.CoordinatorNotAvailable
		}
		snap = h.cfg.Cache.Snapshot()
	}
	p := partitionFor(key)
	if int(p) >= len(t.Partitions) {
		return controller.Broker{}, kerr.CoordinatorNotAvailable
	}
	b, ok := snap.Brokers[t.Partitions[p].Leader]
	if !ok {
		return controller.Broker{}, kerr.CoordinatorNotAvailable
	}
	if _, ok := b.Endpoint(listener); !ok {
		return controller.Broker{}, kerr.CoordinatorNotAvailable
	}
	return b, nil
}

// createTransactionTopic creates __transaction_state as Kafka's
// TransactionStateManager asks for it: compacted, uncompressed,
// transaction.state.log.min.isr, never an unclean leader; its
// replication factor capped at the live brokers as the offsets topic's.
func (h *Handler) createTransactionTopic(ctx context.Context) (*controller.Topic, error) {
	b := h.broker()
	want := int(b.TransactionStateLogReplicationFactor)
	live := len(h.cfg.Cache.Snapshot().Brokers)
	rf := max(min(want, live), 1)
	if rf < want {
		h.lg.Warn("transaction.state.log.replication.factor capped at the live brokers",
			"transaction.state.log.replication.factor", want, "replication_factor", rf, "live_brokers", live)
	}
	t, err := h.createTopicFromAnyBroker(ctx, controller.TopicSpec{
		Name:              txncoord.Topic,
		NumPartitions:     int32(b.TransactionStateLogNumPartitions),
		ReplicationFactor: int16(rf),
		Config: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"min.insync.replicas":            strconv.Itoa(min(b.TransactionStateLogMinISR, rf)),
			"segment.bytes":                  strconv.Itoa(b.TransactionStateLogSegmentBytes),
			"unclean.leader.election.enable": "false",
		},
	})
	if err != nil {
		if t, ok := h.cfg.Cache.Snapshot().Topics[txncoord.Topic]; ok {
			return t, nil
		}
		return nil, fmt.Errorf("create %s: %w", txncoord.Topic, err)
	}
	h.lg.Info("created "+txncoord.Topic, "partitions", b.TransactionStateLogNumPartitions, "replication_factor", rf)
	return t, nil
}

func (h *Handler) createOffsetsTopic(ctx context.Context) (*controller.Topic, error) {
	b := h.broker()
	// Capped at the live brokers, with a warning. Kafka refuses the topic
	// (and so every group) below the setting; a cluster that cannot
	// coordinate groups helps nobody, so qk says it and goes on.
	want := int(b.OffsetsTopicReplicationFactor)
	live := len(h.cfg.Cache.Snapshot().Brokers)
	rf := max(min(want, live), 1)
	if rf < want {
		h.lg.Warn("offsets.topic.replication.factor capped at the live brokers",
			"offsets.topic.replication.factor", want, "replication_factor", rf, "live_brokers", live)
	}
	t, err := h.createTopicFromAnyBroker(ctx, controller.TopicSpec{
		Name:              group.Topic,
		NumPartitions:     int32(b.OffsetsTopicNumPartitions),
		ReplicationFactor: int16(rf),
		Config: map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.Itoa(b.OffsetsTopicSegmentBytes),
			"compression.type": "producer",
		},
	})
	if err != nil {
		if t, ok := h.cfg.Cache.Snapshot().Topics[group.Topic]; ok {
			return t, nil
		}
		return nil, fmt.Errorf("create %s: %w", group.Topic, err)
	}
	h.lg.Info("created "+group.Topic, "partitions", b.OffsetsTopicNumPartitions, "replication_factor", rf)
	return t, nil
}

// errInvalidGroupID: an empty group id where one is needed.
var errInvalidGroupID = kerr.InvalidGroupID

// uuidString is a random UUID as Java prints it, for member ids.
func uuidString() string {
	u := metadata.NewUUID()
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
