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

// AlterPartitionReassignments: v0-1
//
// Behavior:
// * Served by the controller (NOT_CONTROLLER elsewhere, top-level)
// * Each partition's replicas are its target; null replicas cancel the
//   reassignment in progress (NO_REASSIGNMENT_IN_PROGRESS when there is
//   none)
// * Targets are checked as Kafka's controller checks them: unknown
//   partitions (or of a topic being deleted) UNKNOWN_TOPIC_OR_PARTITION;
//   an empty list, duplicates, negative or unregistered broker ids
//   INVALID_REPLICA_ASSIGNMENT
// * The answer comes once the reassignment has started (the new
//   assignment written and sent to the replicas), not when it completes:
//   ListPartitionReassignments shows it until then
// * The same partition twice in one request: INVALID_REQUEST
//
// Version notes:
// * v1: AllowReplicationFactorChange (KIP-860): false refuses a target of
//   another size than the current replica set (INVALID_REPLICATION_FACTOR)

func (h *Handler) handleAlterPartitionReassignments(c *call) {
	req := c.req.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	ctx, cancel := c.ctx(req.TimeoutMillis)
	defer cancel()
	allowRF := c.version < 1 || req.AllowReplicationFactorChange
	targets := map[controller.TP][]int32{}
	dup := map[controller.TP]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := controller.TP{Topic: t.Topic, Partition: p.Partition}
			if _, ok := targets[tp]; ok {
				dup[tp] = true
			}
			targets[tp] = p.Replicas
		}
	}
	for tp := range dup {
		delete(targets, tp)
	}
	var results map[controller.TP]error
	err := c.clusterAuthorized(acl.Alter)
	if err == nil {
		results, err = h.cfg.Controller.AlterPartitionReassignments(ctx, targets, allowRF)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		msg := err.Error()
		resp.ErrorMessage = &msg
		c.respond(resp)
		return
	}
	for tp := range dup {
		results[tp] = errors.Join(kerr.InvalidRequest, errors.New("the partition is named more than once in the request"))
	}
	for tp := range targets {
		if _, ok := results[tp]; !ok {
			results[tp] = nil
		}
	}
	byTopic := map[string]int{}
	for _, tp := range slices.SortedFunc(maps.Keys(results), statemachine.Compare) {
		i, ok := byTopic[tp.Topic]
		if !ok {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[tp.Topic] = i
		}
		rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
		rp.Partition = tp.Partition
		if perr := results[tp]; perr != nil {
			rp.ErrorCode = errorCode(perr)
			msg := perr.Error()
			rp.ErrorMessage = &msg
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	c.respond(resp)
}
