package api

import (
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/controller/statemachine"
	"github.com/qk-project/qk/broker/security/acl"
)

// ElectLeaders: v0-2
//
// Behavior:
// * Served by the controller (NOT_CONTROLLER elsewhere, top-level from
//   v1, per partition in v0)
// * Election type 0 (preferred): the first assigned replica, if it is
//   live and in the ISR and not leading already (ELECTION_NOT_NEEDED,
//   PREFERRED_LEADER_NOT_AVAILABLE); type 1 (unclean, v1+): any live
//   replica for a partition without a live leader, possibly losing
//   acknowledged records (ELECTION_NOT_NEEDED,
//   ELIGIBLE_LEADERS_NOT_AVAILABLE); other types INVALID_REQUEST
// * Null topics: every partition; unknown ones UNKNOWN_TOPIC_OR_PARTITION
// * The answer comes once the new states are written and sent, as
//   Kafka's (which waits for them in its purgatory)
//
// Version notes:
// * v1: election type, top-level error; v2: flexible

func (h *Handler) handleElectLeaders(c *call) {
	req := c.req.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	ctx, cancel := c.ctx(req.TimeoutMillis)
	defer cancel()
	typ := controller.ElectPreferred
	if c.version >= 1 {
		typ = req.ElectionType
	}
	var tps []controller.TP
	if req.Topics != nil {
		tps = []controller.TP{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, controller.TP{Topic: t.Topic, Partition: p})
			}
		}
	}
	var results map[controller.TP]error
	err := c.clusterAuthorized(acl.Alter)
	if err == nil {
		results, err = h.cfg.Controller.ElectLeaders(ctx, typ, tps)
	}
	if err != nil {
		code := errorCode(err)
		var ke *kerr.Error
		if errors.As(err, &ke) {
			code = ke.Code
		}
		if c.version >= 1 {
			resp.ErrorCode = code
			c.respond(resp)
			return
		}
		results = map[controller.TP]error{}
		for _, tp := range tps {
			results[tp] = err
		}
	}
	byTopic := map[string]int{}
	for _, tp := range slices.SortedFunc(maps.Keys(results), statemachine.Compare) {
		i, ok := byTopic[tp.Topic]
		if !ok {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[tp.Topic] = i
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = tp.Partition
		if perr := results[tp]; perr != nil {
			var ke *kerr.Error
			if errors.As(perr, &ke) {
				rp.ErrorCode = ke.Code
			} else {
				rp.ErrorCode = errorCode(perr)
			}
			msg := perr.Error()
			rp.ErrorMessage = &msg
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	c.respond(resp)
}
