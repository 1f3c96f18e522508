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
// transaction.state.log.min.isr, never an unclean leader.
func (h *Handler) createTransactionTopic(ctx context.Context) (*controller.Topic, error) {
	b := h.broker()
	return h.createInternalTopic(ctx, txncoord.Topic, "transaction.state.log.replication.factor",
		int(b.TransactionStateLogReplicationFactor), b.TransactionStateLogNumPartitions, func(rf int) map[string]string {
			return map[string]string{
				"cleanup.policy":                 "compact",
				"compression.type":               "uncompressed",
				"min.insync.replicas":            strconv.Itoa(min(b.TransactionStateLogMinISR, rf)),
				"segment.bytes":                  strconv.Itoa(b.TransactionStateLogSegmentBytes),
				"unclean.leader.election.enable": "false",
			}
		})
}

func (h *Handler) createOffsetsTopic(ctx context.Context) (*controller.Topic, error) {
	b := h.broker()
	return h.createInternalTopic(ctx, group.Topic, "offsets.topic.replication.factor",
		int(b.OffsetsTopicReplicationFactor), b.OffsetsTopicNumPartitions, func(int) map[string]string {
			return map[string]string{
				"cleanup.policy":   "compact",
				"segment.bytes":    strconv.Itoa(b.OffsetsTopicSegmentBytes),
				"compression.type": "producer",
			}
		})
}

// createInternalTopic creates a coordinator's topic on first use, its
// replication factor (the setting rfName, want) capped at the live
// brokers with a warning. Kafka refuses the topic (and so every group or
// transaction) below the setting; a cluster that cannot coordinate helps
// nobody, so qk says it and goes on. configs gets the replication factor
// chosen. A topic another broker created meanwhile is returned as found.
func (h *Handler) createInternalTopic(ctx context.Context, name, rfName string, want, partitions int,
	configs func(rf int) map[string]string) (*controller.Topic, error) {
	live := len(h.cfg.Cache.Snapshot().Brokers)
	rf := max(min(want, live), 1)
	if rf < want {
		h.lg.Warn(rfName+" capped at the live brokers", rfName, want, "replication_factor", rf, "live_brokers", live)
	}
	t, err := h.createTopicFromAnyBroker(ctx, controller.TopicSpec{
		Name:              name,
		NumPartitions:     int32(partitions),
		ReplicationFactor: int16(rf),
		Config:            configs(rf),
	})
	if err != nil {
		if t, ok := h.cfg.Cache.Snapshot().Topics[name]; ok {
			return t, nil
		}
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	h.lg.Info("created "+name, "partitions", partitions, "replication_factor", rf)
	return t, nil
}

// errInvalidGroupID: an empty group id where one is needed.
var errInvalidGroupID = kerr.InvalidGroupID

// uuidString is a random UUID as Java prints it, for member ids.
func uuidString() string {
	u := metadata.NewUUID()
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
