package api

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/security/acl"
)

// OffsetFetch: v0-10
//
// Behavior:
// * A group's committed offsets: of the partitions asked for (offset -1,
//   metadata "" for one without a commit) or, with null topics (v2+), of
//   every partition the group has committed
// * Group errors: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS (v0-1
//   per partition, v2-7 at the top level, v8+ per group)
// * Require stable (v7+) needs no wait: qk has no pending transactional
//   offsets
//
// Version notes:
// * v1: offsets from Kafka storage; v2: top-level error, null topics =
//   all; v3: throttle; v5: leader epoch; v6: flexible; v7: require stable
// * v8: several groups; v9: member id and epoch (new protocol; ignored
//   for classic groups); v10: topic ids

func (h *Handler) handleOffsetFetch(c *call) {
	req := c.req.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	snap := h.cfg.Cache.Snapshot()
	if c.version < 8 {
		var asked []offsetTopic
		if req.Topics != nil {
			for _, t := range req.Topics {
				asked = append(asked, offsetTopic{name: t.Topic, partitions: t.Partitions})
			}
		}
		topics, err := c.fetchOffsets(snap, req.Group, asked, req.Topics == nil)
		if err != nil && c.version >= 2 {
			resp.ErrorCode = errorCode(err)
		}
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.name
			for _, p := range t.offsets {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.Offset.Offset, p.LeaderEpoch, &p.Metadata
				switch {
				case err != nil:
					rp.ErrorCode = errorCode(err)
				case t.denied:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case p.unstable:
					rp.ErrorCode = kerr.UnstableOffsetCommit.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		c.respond(resp)
		return
	}
	for _, rg := range req.Groups {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = rg.Group
		var asked []offsetTopic
		for _, t := range rg.Topics {
			name := t.Topic
			if c.version >= 10 {
				if tt, ok := snap.TopicByID(t.TopicID); ok {
					name = tt.Name
				}
			}
			asked = append(asked, offsetTopic{name: name, id: t.TopicID, partitions: t.Partitions})
		}
		topics, err := c.fetchOffsets(snap, rg.Group, asked, rg.Topics == nil)
		if err != nil {
			g.ErrorCode = errorCode(err)
		} else {
			for _, t := range topics {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = t.name, t.id
				for _, p := range t.offsets {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.Offset.Offset, p.LeaderEpoch, &p.Metadata
					if t.denied {
						rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					} else if p.unstable {
						rp.ErrorCode = kerr.UnstableOffsetCommit.Code
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	c.respond(resp)
}

type offsetTopic struct {
	name       string
	id         [16]byte
	partitions []int32
	offsets    []fetchedOffset
	// denied: the principal may not DESCRIBE the topic; its partitions
	// answer TOPIC_AUTHORIZATION_FAILED without offsets.
	denied bool
}

// fetchOffsets is the handler's fetchOffsets with Kafka's authorization:
// DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED), and on each
// topic: an asked topic the principal may not describe has its
// partitions refused, and "all committed offsets" leaves such topics out.
func (c *call) fetchOffsets(snap *controller.Snapshot, id string, asked []offsetTopic, all bool) ([]offsetTopic, error) {
	if !c.authorize(acl.Describe, acl.Group, id) {
		return nil, kerr.GroupAuthorizationFailed
	}
	topics, err := c.h.fetchOffsets(snap, id, asked, all, c.version >= 7 && c.req.(*kmsg.OffsetFetchRequest).RequireStable)
	if err != nil || c.h.authorizer() == nil {
		return topics, err
	}
	out := topics[:0]
	for _, t := range topics {
		if !c.allowed(acl.Describe, acl.Topic, t.name, !all) {
			if all {
				continue
			}
			t.denied = true
			for i := range t.offsets {
				t.offsets[i].Offset = group.Offset{Offset: -1, LeaderEpoch: -1}
			}
		}
		out = append(out, t)
	}
	return out, nil
}

type fetchedOffset struct {
	group.Offset
	partition int32
	// unstable: require_stable was asked and a transaction's offset is
	// pending for the partition (UNSTABLE_OFFSET_COMMIT, offset -1).
	unstable bool
}

// fetchOffsets answers one group: the asked partitions (offset -1 when
// none is committed) or, with all, every committed one.
func (h *Handler) fetchOffsets(snap *controller.Snapshot, id string, asked []offsetTopic, all, requireStable bool) ([]offsetTopic, error) {
	var tps []group.TopicPartition
	if !all {
		tps = []group.TopicPartition{}
		for _, t := range asked {
			for _, p := range t.partitions {
				tps = append(tps, group.TopicPartition{Topic: t.name, Partition: p})
			}
		}
	}
	got, err := h.cfg.Groups.FetchOffsets(id, tps)
	var unstable map[group.TopicPartition]bool
	if requireStable && err == nil {
		unstable = h.cfg.Groups.UnstableOffsets(id, tps)
	}
	none := group.Offset{Offset: -1, LeaderEpoch: -1}
	if all {
		byTopic := map[string]*offsetTopic{}
		for tp := range got {
			t, ok := byTopic[tp.Topic]
			if !ok {
				t = &offsetTopic{name: tp.Topic}
				if st, ok := snap.Topics[tp.Topic]; ok {
					t.id = st.ID
				}
				byTopic[tp.Topic] = t
			}
			t.partitions = append(t.partitions, tp.Partition)
		}
		asked = asked[:0]
		for _, t := range byTopic {
			slices.Sort(t.partitions)
			asked = append(asked, *t)
		}
		slices.SortFunc(asked, func(a, b offsetTopic) int { return cmp.Compare(a.name, b.name) })
	}
	for i := range asked {
		t := &asked[i]
		for _, p := range t.partitions {
			tp := group.TopicPartition{Topic: t.name, Partition: p}
			o, ok := got[tp]
			if !ok || err != nil || unstable[tp] {
				o = none
			}
			t.offsets = append(t.offsets, fetchedOffset{Offset: o, partition: p, unstable: unstable[tp]})
		}
	}
	return asked, err
}
