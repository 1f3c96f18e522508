package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/controller/channel"
	"github.com/qk-project/qk/broker/replica"
)

// toController is the broker's connection to the active controller for
// AlterPartition, re-pointed when the controller moves.
type toController struct {
	mu   sync.Mutex // guards ch and id
	ch   *channel.Manager
	id   int32
	addr string
}

func (t *toController) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ch != nil {
		t.ch.Close()
		t.ch = nil
	}
}

// alterISR sends a leader's ISR change to the controller (itself,
// in-process, when it is the controller) and calls done with the answer.
// It never blocks the caller.
func (s *Server) alterISR(u replica.ISRUpdate, done func(replica.ISRUpdateResult)) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done(s.sendAlterISR(ctx, u))
	}()
}

func (s *Server) sendAlterISR(ctx context.Context, u replica.ISRUpdate) replica.ISRUpdateResult {
	id, epoch := s.static.BrokerID, s.brokerEpoch.Load()
	snap := s.cache.Snapshot()
	if snap.ControllerID == id && s.ctrl.IsActive() {
		res, err := s.ctrl.AlterPartition(ctx, id, epoch, []controller.ISRChange{{
			TP: controller.TP{Topic: u.Topic, Partition: u.Partition}, LeaderEpoch: u.LeaderEpoch,
			PartitionEpoch: u.PartitionEpoch, NewISR: u.NewISR}})
		if err != nil {
			return replica.ISRUpdateResult{Err: err}
		}
		r := res[0]
		return replica.ISRUpdateResult{Err: r.Err, ISR: r.State.ISR, LeaderEpoch: r.State.LeaderEpoch, PartitionEpoch: r.State.PartitionEpoch}
	}
	b, ok := snap.Brokers[snap.ControllerID]
	if !ok {
		return replica.ISRUpdateResult{Err: fmt.Errorf("no controller known (controller id %d)", snap.ControllerID)}
	}
	e, ok := b.Endpoint(s.static.InterBrokerListenerName)
	if !ok {
		return replica.ISRUpdateResult{Err: fmt.Errorf("controller %d has no endpoint on listener %s", snap.ControllerID, s.static.InterBrokerListenerName)}
	}
	addr := e.Host + ":" + strconv.Itoa(int(e.Port))
	t := &s.toCtrl
	t.mu.Lock()
	if t.ch == nil || t.id != snap.ControllerID || t.addr != addr {
		if t.ch != nil {
			t.ch.Close()
		}
		t.ch = channel.New(s.channelConfig(channel.Config{ControllerID: id, Logger: s.lg}))
		t.ch.AddBroker(snap.ControllerID, addr)
		t.id, t.addr = snap.ControllerID, addr
	}
	ch, ctrlID := t.ch, t.id
	t.mu.Unlock()

	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = id, epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = u.Topic, u.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = u.Partition, u.LeaderEpoch, u.PartitionEpoch, u.NewISR
	for _, r := range u.NewISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = r, -1
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := ch.Request(ctx, ctrlID, req)
	if err != nil {
		return replica.ISRUpdateResult{Err: err}
	}
	resp := r.(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != 0 {
		return replica.ISRUpdateResult{Err: kerr.ErrorForCode(resp.ErrorCode)}
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return replica.ISRUpdateResult{Err: errors.New("malformed AlterPartition answer")}
	}
	p := resp.Topics[0].Partitions[0]
	return replica.ISRUpdateResult{Err: kerr.ErrorForCode(p.ErrorCode), ISR: p.ISR, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}
}
