package api

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
)

// AlterReplicaLogDirs: v0-2
//
// Behavior:
// * Moves each named replica of this broker to the named log dir
//   (KIP-113): a future replica is created there, filled from the
//   current one (throttled by
//   replica.alter.log.dirs.io.max.bytes.per.second) and swapped in once
//   it has caught up; the answer does not wait for the move (DescribeLogDirs
//   shows the future replica and its lag)
// * A replica already in the dir: nothing to do (a move elsewhere is
//   cancelled)
// * A replica not hosted here: REPLICA_NOT_AVAILABLE, and its log is
//   created in that dir when it comes (Kafka's preferred log dir: the
//   reassignment tool sends this before the replica exists)
// * A dir that is not one of log.dirs: LOG_DIR_NOT_FOUND; an offline one:
//   KAFKA_STORAGE_ERROR
// * ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every
//   partition
//
// Version notes:
// * v1: no change; v2: flexible

func (h *Handler) handleAlterReplicaLogDirs(c *call) {
	req := c.req.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	authorized := c.authorizeCluster(acl.Alter)
	byTopic := map[string]int{}
	answer := func(topic string, partition int32, code int16) {
		i, ok := byTopic[topic]
		if !ok {
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[topic] = i
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = partition, code
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				if !authorized {
					answer(t.Topic, p, kerr.ClusterAuthorizationFailed.Code)
					continue
				}
				err := h.cfg.Replicas.AlterLogDir(t.Topic, p, d.Dir)
				if err != nil {
					h.lg.Info("alter replica log dir", "topic", t.Topic, "partition", p, "dir", d.Dir, "err", err)
				}
				answer(t.Topic, p, alterLogDirCode(err))
			}
		}
	}
	c.respond(resp)
}

// alterLogDirCode is AlterReplicaLogDirs' error code for err.
func alterLogDirCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, log.ErrLogDirNotFound):
		return kerr.LogDirNotFound.Code
	case errors.Is(err, replica.ErrReplicaNotAvailable):
		return kerr.ReplicaNotAvailable.Code
	case errors.Is(err, log.ErrLogDirOffline), errors.Is(err, replica.ErrOffline), errors.Is(err, log.ErrFailed):
		return kerr.KafkaStorageError.Code
	}
	return errorCode(err)
}
