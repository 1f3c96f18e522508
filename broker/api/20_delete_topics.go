package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// DeleteTopics: v0-6
//
// Behavior:
// * Served by the controller; other brokers answer NOT_CONTROLLER
// * delete.topic.enable=false: TOPIC_DELETION_DISABLED (INVALID_REQUEST
//   before v3, which does not know that code)
// * Unknown names: UNKNOWN_TOPIC_OR_PARTITION; unknown ids (v6):
//   UNKNOWN_TOPIC_ID; both a name and an id: INVALID_REQUEST
// * As Kafka's controller: /admin/delete_topics/<t>, then every broker
//   drops the topic from its metadata (UpdateMetadata with
//   LeaderDuringDelete), each replica's broker gets StopReplica with
//   delete and renames the directory to <topic>-<p>.<uuid>-delete at once,
//   removing it in the background after file.delete.delay.ms
//   (broker/log.Manager.DeleteLog, so fetches being sent from its files
//   finish first), and the topic's nodes go once every replica is deleted.
//   The answer comes when the deletion completed, or, when a replica's
//   broker is down (the deletion then waits for it, as Kafka's does), as
//   soon as this broker's metadata no longer shows the topic
//
// Version notes:
// * v1: throttle; v5: error message; v6: topics by name or id

func (h *Handler) handleDeleteTopics(c *call) {
	req := c.req.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := c.ctx(req.TimeoutMillis)
	defer cancel()
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if c.version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	snap := h.cfg.Cache.Snapshot()
	for _, t := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = t.name, t.id
		var err error
		name := ""
		switch {
		case t.name != nil && *t.name != "" && t.id != ([16]byte{}):
			err = fmt.Errorf("%w: a topic is named by name or by id, not both", errInvalidRequest)
		case t.name != nil && *t.name != "":
			name = *t.name
		default:
			if tp, ok := snap.TopicByID(t.id); ok {
				name = tp.Name
				st.Topic = &tp.Name
			} else {
				err = errUnknownTopicID
			}
		}
		if err == nil && !c.authorize(acl.Delete, acl.Topic, name) {
			err = kerr.TopicAuthorizationFailed
		}
		if err == nil && !h.broker().DeleteTopicEnable {
			err = errTopicDeletionDisabled
			if c.version < 3 {
				err = fmt.Errorf("%w: topic deletion is disabled", errInvalidRequest)
			}
		}
		if err == nil {
			if tp, ok := snap.Topics[name]; ok {
				st.TopicID = tp.ID
			}
			err = h.cfg.Controller.DeleteTopic(ctx, name)
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			if c.version >= 5 {
				st.ErrorMessage = errorMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.respond(resp)
}
