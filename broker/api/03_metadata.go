package api

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
)

// Metadata: v0-13
//
// Behavior:
// * Brokers: every live broker with its advertised endpoint on the
//   listener the request came in on (brokers without one are left out)
// * Topics: all (v0: empty list; v1+: null list) or the ones asked for, by
//   name, or by id from v12 (UNKNOWN_TOPIC_ID for an unknown id)
// * An unknown topic is auto-created when the request allows it (always
//   before v4) and auto.create.topics.enable is set; it is then returned
//   complete, since qk creates it synchronously. Invalid names get
//   INVALID_TOPIC_EXCEPTION, others UNKNOWN_TOPIC_OR_PARTITION
// * Partitions: leader (LEADER_NOT_AVAILABLE and -1 when the leader is not
//   live), leader epoch, replicas, ISR, offline replicas (a live broker is
//   one where the partition's log could not be opened on it: this broker,
//   whose partition then has KAFKA_STORAGE_ERROR if it leads it)
// * With an authorizer: all topics means those the principal may
//   DESCRIBE; a named topic it may not describe, or may not create when
//   it would be auto-created, is TOPIC_AUTHORIZATION_FAILED
// * Authorized operations: -2147483648 unless asked for; when asked, the
//   principal's (all without an authorizer)
//
// Version notes:
// * v1: controller id, rack, internal flag; null topics = all
// * v2: cluster id; v3: throttle; v4: allow auto topic creation
// * v5: offline replicas; v7: leader epoch; v8: authorized operations
// * v9: flexible; v10: topic ids; v11: no cluster authorized operations
// * v12: topics by id; v13: top-level error code

const (
	authorizedOpsNone = -2147483648
	// topicOps: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
	// DESCRIBE_CONFIGS, ALTER_CONFIGS (ACL operation codes 3-8, 10, 11).
	topicOps = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	// clusterOps: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
	// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS,
	// DESCRIBE_TOKENS (5, 7-14).
	clusterOps = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12 | 1<<13 | 1<<14
)

func (h *Handler) handleMetadata(c *call) {
	req := c.req.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	snap := h.cfg.Cache.Snapshot()

	resp.Brokers = h.brokerList(snap, c.r.Listener)
	resp.ClusterID = &snap.ClusterID
	resp.ControllerID = snap.ControllerID
	if c.version >= 8 && c.version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = c.clusterOperations()
	}
	includeOps := c.version >= 8 && req.IncludeTopicAuthorizedOperations

	all := req.Topics == nil || (c.version == 0 && len(req.Topics) == 0)
	if all {
		// Only the topics the principal may describe, silently.
		for _, name := range snap.TopicNames() {
			if c.allowed(acl.Describe, acl.Topic, name, false) {
				resp.Topics = append(resp.Topics, c.metadataTopic(snap, snap.Topics[name], includeOps))
			}
		}
		c.respond(resp)
		return
	}

	allowAuto := (c.version < 4 || req.AllowAutoTopicCreation) && h.broker().AutoCreateTopicsEnable
	if allowAuto && !c.detached && wouldCreate(snap, req.Topics) {
		// The creation waits for the controller: not on a handler goroutine.
		c.detach((*Handler).handleMetadata)
		return
	}
	seen := map[string]bool{}
	for _, rt := range req.Topics {
		if rt.Topic == nil || *rt.Topic == "" && c.version >= 12 {
			if rt.TopicID == ([16]byte{}) {
				continue
			}
			t, ok := snap.TopicByID(rt.TopicID)
			if !ok || !c.authorize(acl.Describe, acl.Topic, t.Name) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				if ok {
					mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, c.metadataTopic(snap, t, includeOps))
			continue
		}
		name := *rt.Topic
		if seen[name] {
			continue
		}
		seen[name] = true
		// Describe is checked before existence, and auto-creation needs
		// CREATE on the cluster or the topic; both refusals are
		// TOPIC_AUTHORIZATION_FAILED, as Kafka answers them.
		t, ok := snap.Topics[name]
		if !c.authorize(acl.Describe, acl.Topic, name) || (!ok && allowAuto && !c.mayCreateTopic(name)) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if !ok && allowAuto {
			ctx, cancel := c.ctx(0)
			created, err := h.autoCreateTopic(ctx, name)
			cancel()
			if err == nil {
				snap = h.cfg.Cache.Snapshot()
				t, ok = created, true
			} else {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = &name
				mt.ErrorCode = errorCode(err)
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if validTopicName(name) != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, c.metadataTopic(snap, t, includeOps))
	}
	c.respond(resp)
}

// brokerList is the live brokers' endpoints on listener.
func (h *Handler) brokerList(snap *controller.Snapshot, listener string) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, id := range snap.BrokerIDs() {
		b := snap.Brokers[id]
		e, ok := b.Endpoint(listener)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = id, e.Host, e.Port
		if b.Rack != "" {
			rack := b.Rack
			mb.Rack = &rack
		}
		out = append(out, mb)
	}
	return out
}

var noReplicas = []int32{}

// metadataTopic describes t, with this broker among a partition's
// offline replicas, and KAFKA_STORAGE_ERROR as the partition's error when
// it leads it, where the partition's log could not be opened here.
func (c *call) metadataTopic(snap *controller.Snapshot, t *controller.Topic, includeOps bool) kmsg.MetadataResponseTopic {
	h := c.h
	var offline func(string, int32) bool
	if h.cfg.Replicas != nil {
		offline = h.cfg.Replicas.Offline
	}
	mt := metadataTopic(snap, t, includeOps, h.cfg.BrokerID, offline)
	if includeOps && h.authorizer() != nil {
		mt.AuthorizedOperations = c.authorizedOperations(acl.Topic, t.Name)
	}
	return mt
}

// clusterOperations is the cluster's authorized operations (KIP-430):
// all without an authorizer.
func (c *call) clusterOperations() int32 {
	if c.h.authorizer() == nil {
		return clusterOps
	}
	return c.authorizedOperations(acl.Cluster, acl.ClusterName)
}

func metadataTopic(snap *controller.Snapshot, t *controller.Topic, includeOps bool, self int32, offline func(string, int32) bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	if includeOps {
		mt.AuthorizedOperations = topicOps
	}
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Partition
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		// The snapshot is immutable and encoding only reads: share its
		// slices instead of copying 10,000 of them.
		mp.Replicas, mp.ISR, mp.OfflineReplicas = p.Replicas, p.ISR, noReplicas
		if mp.ISR == nil {
			mp.ISR = noReplicas
		}
		for i, r := range p.Replicas {
			// Offline: its broker is down, its log dir failed (the
			// controller's UpdateMetadata says so, KIP-112), or it is this
			// broker's own replica that could not be hosted.
			if _, live := snap.Brokers[r]; !live || slices.Contains(p.OfflineReplicas, r) ||
				(r == self && offline != nil && offline(t.Name, p.Partition)) {
				if len(mp.OfflineReplicas) == 0 {
					mp.OfflineReplicas = make([]int32, 0, len(p.Replicas)-i)
				}
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if _, live := snap.Brokers[p.Leader]; p.Leader == metadata.NoLeader || !live {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
		} else if p.Leader == self && slices.Contains(mp.OfflineReplicas, self) {
			mp.ErrorCode = kerr.KafkaStorageError.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// wouldCreate reports whether a Metadata request names a topic the
// snapshot lacks, which auto-creation would then create.
func wouldCreate(snap *controller.Snapshot, topics []kmsg.MetadataRequestTopic) bool {
	for _, rt := range topics {
		if rt.Topic != nil && *rt.Topic != "" {
			if _, ok := snap.Topics[*rt.Topic]; !ok {
				return true
			}
		}
	}
	return false
}
