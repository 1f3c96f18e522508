package api

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/security/acl"
)

// CreateTopics: v0-7
//
// Behavior:
// * Served by the controller; other brokers answer NOT_CONTROLLER
// * A name asked twice: INVALID_REQUEST for it; a name breaking Kafka's
//   rules, or differing from an existing topic only by '.' vs '_':
//   INVALID_TOPIC_EXCEPTION; an existing one: TOPIC_ALREADY_EXISTS
// * -1 partitions / replication factor (v4+) take num.partitions /
//   default.replication.factor; partitions <= 0: INVALID_PARTITIONS;
//   a replication factor <= 0 or above the live brokers:
//   INVALID_REPLICATION_FACTOR
// * Replica assignments are honoured (consecutive partitions, distinct
//   live brokers, INVALID_REPLICA_ASSIGNMENT otherwise); together with a
//   partition count or replication factor they are INVALID_REQUEST
// * Configs: unknown names and bad values are INVALID_CONFIG, a null value
//   INVALID_REQUEST
// * validate_only checks everything and creates nothing
// * v5+: the created topic's partitions, replication factor and configs
//
// Version notes:
// * v1: validate only, error messages; v2: throttle; v4: -1 defaults
// * v5: flexible, configs in the response; v7: topic id

func (h *Handler) handleCreateTopics(c *call) {
	req := c.req.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := c.ctx(req.TimeoutMillis)
	defer cancel()

	count := map[string]int{}
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	b := h.broker()
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		t, err := h.createTopic(ctx, c, rt, count[rt.Topic] > 1, req.ValidateOnly, b)
		if err != nil {
			st.ErrorCode = errorCode(err)
			if c.version >= 1 {
				st.ErrorMessage = errorMessage(err)
			}
			h.lg.Info("create topic refused", "topic", rt.Topic, "err", err)
		} else if c.version >= 5 {
			st.NumPartitions, st.ReplicationFactor = t.partitions, t.replicationFactor
			st.TopicID = t.id
			// Its configs only with DESCRIBE_CONFIGS on it (Kafka's
			// topic_config_error_code).
			configs := config.DescribeTopic(t.config, b)
			if !c.authorize(acl.DescribeConfigs, acl.Topic, rt.Topic) {
				st.ConfigErrorCode, configs = kerr.TopicAuthorizationFailed.Code, nil
			}
			for _, e := range configs {
				ce := kmsg.NewCreateTopicsResponseTopicConfig()
				ce.Name, ce.Value, ce.ReadOnly, ce.Source, ce.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.Sensitive
				st.Configs = append(st.Configs, ce)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.respond(resp)
}

// offlineHere reports the partitions from on of a topic just created (or
// grown) whose logs could not be created on this broker: the request fails
// with KAFKA_STORAGE_ERROR and the cause, and the partitions are offline,
// so that no partition is taken for served that is not.
func (h *Handler) offlineHere(t *controller.Topic, from int32) error {
	if t == nil {
		return nil
	}
	var n int
	var first error
	for _, p := range t.Partitions {
		if p.Partition < from || !slices.Contains(p.Replicas, h.cfg.BrokerID) || !h.cfg.Replicas.Offline(t.Name, p.Partition) {
			continue
		}
		if n++; first == nil {
			_, first = h.cfg.Replicas.Partition(t.Name, p.Partition)
		}
	}
	if n == 0 {
		return nil
	}
	if from > 0 {
		return fmt.Errorf("partitions of topic %s were created, but %d of the %d new ones are offline on broker %d (first: %w)",
			t.Name, n, int32(len(t.Partitions))-from, h.cfg.BrokerID, first)
	}
	return fmt.Errorf("topic %s was created, but %d of its %d partitions are offline on broker %d (first: %w)",
		t.Name, n, len(t.Partitions), h.cfg.BrokerID, first)
}

type createdTopic struct {
	id                [16]byte
	partitions        int32
	replicationFactor int16
	config            map[string]string
}

func (h *Handler) createTopic(ctx context.Context, c *call, rt kmsg.CreateTopicsRequestTopic, duplicate, validateOnly bool, b *config.Broker) (createdTopic, error) {
	if duplicate {
		return createdTopic{}, fmt.Errorf("%w: create topics request from client contains duplicate topic %s", errInvalidRequest, rt.Topic)
	}
	if !c.mayCreateTopic(rt.Topic) {
		return createdTopic{}, kerr.TopicAuthorizationFailed
	}
	if err := validTopicName(rt.Topic); err != nil {
		return createdTopic{}, err
	}
	if !h.cfg.Controller.IsActive() {
		return createdTopic{}, controller.ErrNotController
	}
	spec := controller.TopicSpec{Name: rt.Topic, NumPartitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor,
		Config: map[string]string{}}
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return createdTopic{}, fmt.Errorf("%w: both numPartitions or replicationFactor and replicasAssignments were set; both cannot be used at the same time", errInvalidRequest)
		}
		spec.Assignment = map[int32][]int32{}
		for _, a := range rt.ReplicaAssignment {
			if _, dup := spec.Assignment[a.Partition]; dup {
				return createdTopic{}, fmt.Errorf("%w: partition %d assigned twice", controller.ErrInvalidReplicaAssignment, a.Partition)
			}
			spec.Assignment[a.Partition] = a.Replicas
		}
	}
	if spec.NumPartitions == -1 {
		spec.NumPartitions = int32(b.NumPartitions)
	}
	if spec.ReplicationFactor == -1 {
		spec.ReplicationFactor = int16(b.DefaultReplicationFactor)
	}
	for _, cf := range rt.Configs {
		if cf.Value == nil {
			return createdTopic{}, fmt.Errorf("%w: null value not supported for topic configs: %s", errInvalidRequest, cf.Name)
		}
		if err := config.ValidateTopicConfig(cf.Name, *cf.Value); err != nil {
			return createdTopic{}, err
		}
		spec.Config[cf.Name] = *cf.Value
	}
	if _, err := config.ResolveTopic(b.TopicDefaults(), spec.Config); err != nil {
		return createdTopic{}, err
	}
	t, err := h.cfg.Controller.CreateTopic(ctx, spec, validateOnly)
	if err != nil {
		return createdTopic{}, err
	}
	if err := h.offlineHere(t, 0); err != nil {
		return createdTopic{}, err
	}
	out := createdTopic{partitions: spec.NumPartitions, replicationFactor: spec.ReplicationFactor, config: spec.Config}
	if len(spec.Assignment) > 0 {
		out.partitions = int32(len(spec.Assignment))
		out.replicationFactor = int16(len(spec.Assignment[0]))
	}
	if t != nil {
		out.id = t.ID
		out.partitions = int32(len(t.Partitions))
		if len(t.Partitions) > 0 {
			out.replicationFactor = int16(len(t.Partitions[0].Replicas))
		}
	}
	return out, nil
}
