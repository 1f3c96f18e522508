package api

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
)

// OffsetCommit: v0-10
//
// Behavior:
// * Offsets are appended to the group's __consumer_offsets partition as
//   OffsetCommit records (key v1, value v3; value v1 with an expire
//   timestamp when v2-v4 give a retention time) and the response is sent
//   after the append (acks=all)
// * Generation -1 with no member id commits for a group outside any
//   generation (simple consumers, kcat, assign mode): allowed while the
//   group is Empty, and creates it if missing
// * Group errors for every partition: ILLEGAL_GENERATION,
//   UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS,
//   NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS; per partition
//   OFFSET_METADATA_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION (unknown topic)
//
// Version notes:
// * v1: generation, member id, commit timestamp (ignored: the broker's
//   time is stored); v2-4: retention time; v5: retention dropped
// * v6: leader epoch; v7: group instance id; v8: flexible
// * v9: the new consumer protocol's member epoch (classic groups only);
//   v10: topic ids

func (h *Handler) handleOffsetCommit(c *call) {
	req := c.req.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	snap := h.cfg.Cache.Snapshot()
	var commits []group.Commit
	type slot struct{ t, p, i int } // response topic, partition, commit index (-1: error set)
	var slots []slot
	// READ on the group, else every partition is GROUP_AUTHORIZATION_FAILED;
	// READ on each topic, else its partitions are TOPIC_AUTHORIZATION_FAILED.
	groupOK := c.authorize(acl.Read, acl.Group, req.Group)
	ta := c.topicAuth(acl.Read)
	for ti, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name := rt.Topic
		known := false
		if c.version >= 10 {
			if t, ok := snap.TopicByID(rt.TopicID); ok {
				name, known = t.Name, true
			}
		} else {
			_, known = snap.Topics[name]
		}
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			st.Partitions = append(st.Partitions, sp)
			switch {
			case !groupOK:
				st.Partitions[pi].ErrorCode = kerr.GroupAuthorizationFailed.Code
				continue
			case !ta.ok(name):
				st.Partitions[pi].ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if !known {
				if c.version >= 10 {
					st.Partitions[pi].ErrorCode = errorCode(errUnknownTopicID)
				} else {
					st.Partitions[pi].ErrorCode = errorCode(replica.ErrUnknownTopicOrPartition)
				}
				continue
			}
			epoch := int32(-1)
			if c.version >= 6 {
				epoch = rp.LeaderEpoch
			}
			slots = append(slots, slot{ti, pi, len(commits)})
			commits = append(commits, group.Commit{TopicPartition: group.TopicPartition{Topic: name, Partition: rp.Partition},
				Offset: rp.Offset, LeaderEpoch: epoch, Metadata: rp.Metadata})
		}
		resp.Topics = append(resp.Topics, st)
	}
	retention := time.Duration(-1)
	if c.version >= 2 && c.version <= 4 && req.RetentionTimeMillis != -1 {
		retention = time.Duration(req.RetentionTimeMillis) * time.Millisecond
	}
	generation, member := req.Generation, req.MemberID
	if c.version == 0 {
		generation, member = -1, ""
	}
	if len(commits) == 0 && req.Group != "" {
		c.respond(resp)
		return
	}
	var errs []error
	var err error
	if req.Group == "" {
		err = errInvalidGroupID
	} else {
		errs, err = h.cfg.Groups.CommitOffsets(req.Group, member, req.InstanceID, generation, retention, commits)
	}
	for _, s := range slots {
		code := errorCode(err)
		if err == nil {
			code = errorCode(errs[s.i])
		}
		resp.Topics[s.t].Partitions[s.p].ErrorCode = code
	}
	c.respond(resp)
}
