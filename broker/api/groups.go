package api

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/metadata"
)

// coordinator finds the broker coordinating a group (key type 0), creating
// __consumer_offsets on first use as Kafka does: the broker's
// offsets.topic.num.partitions, replication factor
// min(offsets.topic.replication.factor, live brokers), compacted.
func (h *Handler) coordinator(ctx context.Context, key string, keyType int8, listener string) (controller.Broker, error) {
	if keyType != 0 || h.cfg.Groups == nil {
		// Transactions (key type 1) have no coordinator yet.
		return controller.Broker{}, kerr.CoordinatorNotAvailable
	}
	snap := h.cfg.Cache.Snapshot()
	t, ok := snap.Topics[group.Topic]
	if !ok {
		var err error
		if t, err = h.createOffsetsTopic(ctx); err != nil {
			h.lg.Warn("cannot create "+group.Topic, "err", err)
			return controller.Broker{}, kerr.CoordinatorNotAvailable
		}
		snap = h.cfg.Cache.Snapshot()
	}
	p := h.cfg.Groups.PartitionFor(key)
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
