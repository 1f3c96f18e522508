package api

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
)

// ListOffsets: v0-11
//
// Behavior:
// * -2 earliest (and -4 earliest local: qk has no tiered storage): the
//   log start offset and its leader epoch
// * -1 latest: the high watermark (read_uncommitted) or last stable offset
//   (read_committed); the log end offset for v0-1, which have no isolation
//   level, as Kafka does. Leader epoch: the partition's
// * -3 max timestamp (v7+): the record with the largest timestamp
// * -5 latest tiered, -6 earliest pending upload: offset -1 (no tiered
//   storage), as Kafka without remote storage
// * t >= 0: the first record with timestamp >= t, found with the time index
//   (offset and timestamp -1 when there is none, no error)
// * v0: old-style offsets, one entry (the offset above; none when no
//   record qualifies), not Kafka 0.10's list of segment base offsets
// * Errors: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
//   FENCED/UNKNOWN_LEADER_EPOCH (v4+), INVALID_REQUEST for a partition
//   asked twice (v1+)
//
// Version notes:
// * v1: single offset and timestamp; v2: isolation level, throttle
// * v4: current leader epoch in, leader epoch out; v6: flexible
// * v7: max timestamp; v8: earliest local; v9: latest tiered
// * v10: timeout; v11: earliest pending upload

const (
	earliestLocalTimestamp       = -4
	latestTieredTimestamp        = -5
	earliestPendingUploadTimesta = -6
)

func (h *Handler) handleListOffsets(c *call) {
	req := c.req.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	snap := h.cfg.Cache.Snapshot()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		if !c.authorize(acl.Describe, acl.Topic, rt.Topic) {
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
				if c.version == 0 {
					sp.OldStyleOffsets = []int64{}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		var seen []int32
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			if c.version >= 1 && slices.Contains(seen, rp.Partition) {
				sp.ErrorCode = kerr.InvalidRequest.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			seen = append(seen, rp.Partition)
			p, err := h.cfg.Replicas.Partition(rt.Topic, rp.Partition)
			if err != nil {
				if t, ok := snap.Topics[rt.Topic]; ok && rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions) {
					err = replica.ErrNotLeaderOrFollower
				}
			}
			epoch := int32(-1)
			if c.version >= 4 {
				epoch = rp.CurrentLeaderEpoch
			}
			if err == nil {
				err = p.CheckLeader(epoch)
			}
			if err == nil {
				err = listOffset(c.version, req.IsolationLevel, p, rp.Timestamp, &sp)
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			}
			if c.version == 0 {
				sp.OldStyleOffsets = []int64{}
				if err == nil && sp.Offset >= 0 && rp.MaxNumOffsets > 0 {
					sp.OldStyleOffsets = []int64{sp.Offset}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.respond(resp)
}

// listOffset answers one partition.
func listOffset(version int16, isolation int8, p *replica.Partition, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	l := p.Log()
	switch ts {
	case log.LatestTimestamp:
		off := l.LogEndOffset()
		if version >= 2 {
			off = p.HighWatermark()
			if isolation == 1 {
				off = p.LastStableOffset()
			}
		}
		sp.Offset, sp.LeaderEpoch = off, p.LeaderEpoch()
		return nil
	case latestTieredTimestamp, earliestPendingUploadTimesta:
		return nil
	case earliestLocalTimestamp:
		ts = log.EarliestTimestamp
	}
	res, ok, err := l.FetchOffsetByTimestamp(ts)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	// Consumers never see records at or above the high watermark.
	if ts >= 0 || ts == log.MaxTimestamp {
		if res.Offset >= p.HighWatermark() {
			return nil
		}
	}
	sp.Offset, sp.Timestamp, sp.LeaderEpoch = res.Offset, res.Timestamp, res.LeaderEpoch
	return nil
}
