package controller

import (
	"context"
	"encoding/binary"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller/statemachine"
)

// Channel sends the controller's requests to brokers: one queue and
// connection per broker, each request retried until it is answered or the
// broker is removed (channel.Manager).
type Channel interface {
	AddBroker(id int32, addr string)
	AddLocal(id int32, handle func(ctx context.Context, req kmsg.Request) (kmsg.Response, error))
	RemoveBroker(id int32)
	Send(id int32, req kmsg.Request, cb func(kmsg.Response, error))
	Close()
}

// requestBatch collects what one controller event tells the brokers
// (Kafka's ControllerBrokerRequestBatch). Nothing is built until send, so
// every request carries the state the event ended with, and a partition
// changed twice by one event is sent once.
type requestBatch struct {
	// leaderAndIsr: broker -> partition -> isNew.
	leaderAndIsr map[int32]map[TP]bool
	// updateMetadata: broker -> partitions; full: every partition.
	updateMetadata map[int32]map[TP]struct{}
	umFull         map[int32]bool
	// stopReplica: broker -> partition -> delete.
	stopReplica map[int32]map[TP]bool
}

func newBatch() *requestBatch {
	return &requestBatch{leaderAndIsr: map[int32]map[TP]bool{}, updateMetadata: map[int32]map[TP]struct{}{},
		umFull: map[int32]bool{}, stopReplica: map[int32]map[TP]bool{}}
}

// addLeaderAndIsr tells brokers their role in tp (its state at send time).
func (b *requestBatch) addLeaderAndIsr(brokers []int32, tp TP, isNew bool) {
	for _, id := range brokers {
		m := b.leaderAndIsr[id]
		if m == nil {
			m = map[TP]bool{}
			b.leaderAndIsr[id] = m
		}
		m[tp] = m[tp] || isNew
	}
}

// addUpdateMetadata sends brokers the live brokers and the partitions tps
// (none: only the live brokers).
func (b *requestBatch) addUpdateMetadata(brokers []int32, tps ...TP) {
	for _, id := range brokers {
		m := b.updateMetadata[id]
		if m == nil {
			m = map[TP]struct{}{}
			b.updateMetadata[id] = m
		}
		for _, tp := range tps {
			m[tp] = struct{}{}
		}
	}
}

// addUpdateMetadataFull sends brokers every partition.
func (b *requestBatch) addUpdateMetadataFull(brokers []int32) {
	b.addUpdateMetadata(brokers)
	for _, id := range brokers {
		b.umFull[id] = true
	}
}

func (b *requestBatch) addStopReplica(broker int32, tp TP, deletePartition bool) {
	m := b.stopReplica[broker]
	if m == nil {
		m = map[TP]bool{}
		b.stopReplica[broker] = m
	}
	m[tp] = m[tp] || deletePartition
}

func (b *requestBatch) empty() bool {
	return len(b.leaderAndIsr) == 0 && len(b.updateMetadata) == 0 && len(b.stopReplica) == 0
}

func sortedTPs[V any](m map[TP]V) []TP { return slices.SortedFunc(maps.Keys(m), statemachine.Compare) }

// send builds the batch's requests from the context and queues them: per
// broker, LeaderAndIsr, then UpdateMetadata, then StopReplica, as Kafka's
// controller sends them. Requests to brokers that are not live are
// dropped.
func (c *Controller) send(b *requestBatch) {
	if b.empty() || c.ch == nil || !c.active.Load() {
		return
	}
	cc := c.cc
	for _, id := range slices.Sorted(maps.Keys(b.leaderAndIsr)) {
		lb, ok := cc.live[id]
		if !ok {
			continue
		}
		req := c.leaderAndIsrRequest(lb, b.leaderAndIsr[id])
		// probing: it names replicas the broker reported on a failed log
		// directory, whose answers may say they are served again.
		probing := false
		for tp := range b.leaderAndIsr[id] {
			if cc.offlineDirs.Contains(id, tp) {
				probing = true
				break
			}
		}
		c.ch.Send(id, req, c.onLeaderAndIsrResponse(id, lb.epoch, probing))
	}
	for _, id := range slices.Sorted(maps.Keys(b.updateMetadata)) {
		lb, ok := cc.live[id]
		if !ok {
			continue
		}
		tps := b.updateMetadata[id]
		if b.umFull[id] {
			tps = map[TP]struct{}{}
			for _, tp := range cc.allPartitions() {
				tps[tp] = struct{}{}
			}
		}
		c.ch.Send(id, c.updateMetadataRequest(lb, tps), c.onUpdateMetadataResponse(id, c.applied.next(c.gen.Load(), id)))
	}
	for _, id := range slices.Sorted(maps.Keys(b.stopReplica)) {
		lb, ok := cc.live[id]
		if !ok {
			continue
		}
		parts := b.stopReplica[id]
		c.ch.Send(id, c.stopReplicaRequest(lb, parts), c.onStopReplicaResponse(id, parts))
	}
}

// leaderAndIsrRequest is a LeaderAndIsr (v7 layout) for broker lb.
func (c *Controller) leaderAndIsrRequest(lb liveBroker, parts map[TP]bool) *kmsg.LeaderAndISRRequest {
	cc := c.cc
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch.Load()
	req.BrokerEpoch = lb.epoch
	leaders := map[int32]bool{}
	var cur *kmsg.LeaderAndISRRequestTopicState
	for _, tp := range sortedTPs(parts) {
		s, ok := cc.states[tp]
		if !ok {
			continue
		}
		if cur == nil || cur.Topic != tp.Topic {
			req.TopicStates = append(req.TopicStates, kmsg.NewLeaderAndISRRequestTopicState())
			cur = &req.TopicStates[len(req.TopicStates)-1]
			cur.Topic = tp.Topic
			if t := cc.topics[tp.Topic]; t != nil {
				cur.TopicID = t.id
			}
		}
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition = tp.Topic, tp.Partition
		ps.ControllerEpoch = c.epoch.Load()
		ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion = s.Leader, s.LeaderEpoch, slices.Clone(s.ISR), s.PartitionEpoch
		a := cc.assignmentOf(tp)
		ps.Replicas, ps.AddingReplicas, ps.RemovingReplicas = slices.Clone(a.Replicas), slices.Clone(a.Adding), slices.Clone(a.Removing)
		ps.IsNew = parts[tp]
		ps.LeaderRecoveryState = s.LeaderRecoveryState
		cur.PartitionStates = append(cur.PartitionStates, ps)
		if s.Leader >= 0 {
			leaders[s.Leader] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(leaders)) {
		l, ok := cc.live[id]
		if !ok {
			continue
		}
		e, ok := l.endpoint(c.listener)
		if !ok {
			continue
		}
		ll := kmsg.NewLeaderAndISRRequestLiveLeader()
		ll.BrokerID, ll.Host, ll.Port = id, e.Host, e.Port
		req.LiveLeaders = append(req.LiveLeaders, ll)
	}
	return req
}

// updateMetadataRequest is an UpdateMetadata (v8 layout) for broker lb:
// every live broker, and the partitions tps (those of topics being
// deleted with LeaderDuringDelete).
func (c *Controller) updateMetadataRequest(lb liveBroker, tps map[TP]struct{}) *kmsg.UpdateMetadataRequest {
	cc := c.cc
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch.Load()
	req.BrokerEpoch = lb.epoch
	for _, id := range cc.liveIDs() {
		b := cc.live[id]
		lbr := kmsg.NewUpdateMetadataRequestLiveBroker()
		lbr.ID = id
		for _, e := range b.reg.Endpoints {
			ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
			ep.Host, ep.Port, ep.ListenerName = e.Host, e.Port, e.Listener
			ep.SecurityProtocol = securityProtocolID(e.SecurityProtocol)
			lbr.Endpoints = append(lbr.Endpoints, ep)
		}
		if b.reg.Rack != "" {
			rack := b.reg.Rack
			lbr.Rack = &rack
		}
		req.LiveBrokers = append(req.LiveBrokers, lbr)
	}
	var cur *kmsg.UpdateMetadataRequestTopicState
	for _, tp := range sortedTPs(tps) {
		s, ok := cc.states[tp]
		if !ok && !cc.toDelete[tp.Topic] {
			continue
		}
		if cur == nil || cur.Topic != tp.Topic {
			req.TopicStates = append(req.TopicStates, kmsg.NewUpdateMetadataRequestTopicState())
			cur = &req.TopicStates[len(req.TopicStates)-1]
			cur.Topic = tp.Topic
			if t := cc.topics[tp.Topic]; t != nil {
				cur.TopicID = t.id
			}
		}
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition = tp.Topic, tp.Partition
		ps.ControllerEpoch = c.epoch.Load()
		ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion = s.Leader, s.LeaderEpoch, slices.Clone(s.ISR), s.PartitionEpoch
		if cc.toDelete[tp.Topic] {
			ps.Leader = statemachine.LeaderDuringDelete
		}
		ps.Replicas = slices.Clone(cc.replicas(tp))
		for _, r := range ps.Replicas {
			if !cc.isReplicaLive(tp, r) { // its broker is down, or its log directory failed
				ps.OfflineReplicas = append(ps.OfflineReplicas, r)
			}
		}
		cur.PartitionStates = append(cur.PartitionStates, ps)
	}
	return req
}

// stopReplicaRequest is a StopReplica (v4 layout) for broker lb.
func (c *Controller) stopReplicaRequest(lb liveBroker, parts map[TP]bool) *kmsg.StopReplicaRequest {
	req := kmsg.NewPtrStopReplicaRequest()
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch.Load()
	req.BrokerEpoch = lb.epoch
	var cur *kmsg.StopReplicaRequestTopic
	for _, tp := range sortedTPs(parts) {
		if cur == nil || cur.Topic != tp.Topic {
			req.Topics = append(req.Topics, kmsg.NewStopReplicaRequestTopic())
			cur = &req.Topics[len(req.Topics)-1]
			cur.Topic = tp.Topic
		}
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition = tp.Partition
		ps.Delete = parts[tp]
		ps.LeaderEpoch = -1
		if parts[tp] {
			ps.LeaderEpoch = statemachine.LeaderDuringDelete // Kafka's EpochDuringDelete
		} else if s, ok := c.cc.states[tp]; ok {
			ps.LeaderEpoch = s.LeaderEpoch
		}
		cur.PartitionStates = append(cur.PartitionStates, ps)
	}
	return req
}

// onLeaderAndIsrResponse reads broker id's answer (its registration of
// brokerEpoch): partitions refused because its log is ahead are elected
// again above it, those it cannot serve because their log directory
// failed (KAFKA_STORAGE_ERROR) go offline, and, when the request was
// probing replicas known offline, those served are back (onLogDirAnswers).
// Both on the event loop.
func (c *Controller) onLeaderAndIsrResponse(id int32, brokerEpoch int64, probing bool) func(kmsg.Response, error) {
	gen := c.gen.Load()
	return func(r kmsg.Response, err error) {
		if err != nil {
			c.lg.Debug("LeaderAndIsr not delivered", "broker_id", id, "err", err)
			return
		}
		resp := r.(*kmsg.LeaderAndISRResponse)
		if resp.ErrorCode != 0 {
			c.lg.Warn("LeaderAndIsr refused", "broker_id", id, "err", kerr.ErrorForCode(resp.ErrorCode))
			return
		}
		n := 0
		var first error
		var ahead []epochAhead
		var storage, served []partitionRef
		check := func(id [16]byte, p kmsg.LeaderAndISRResponseTopicPartition) {
			if p.ErrorCode == 0 {
				if probing {
					served = append(served, partitionRef{id, p.Topic, p.Partition})
				}
				return
			}
			if latest, ok := LogLeaderEpoch(&p.UnknownTags); ok && p.ErrorCode == kerr.FencedLeaderEpoch.Code {
				ahead = append(ahead, epochAhead{id, p.Topic, p.Partition, latest})
				return
			}
			if p.ErrorCode == kerr.KafkaStorageError.Code {
				storage = append(storage, partitionRef{id, p.Topic, p.Partition})
				return
			}
			n++
			if first == nil {
				first = kerr.ErrorForCode(p.ErrorCode)
			}
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				check(t.TopicID, p)
			}
		}
		for _, p := range resp.Partitions {
			check([16]byte{}, p)
		}
		if n > 0 {
			c.lg.Warn("LeaderAndIsr: partitions not applied", "broker_id", id, "count", n, "first_err", first)
		}
		if len(ahead) > 0 {
			c.enqueueGen(gen, func() { c.raiseLeaderEpochs(id, ahead) })
		}
		if len(storage) > 0 || len(served) > 0 {
			c.enqueueGen(gen, func() { c.onLogDirAnswers(id, brokerEpoch, storage, served) })
		}
	}
}

// partitionRef names a partition in an answer: by topic id (v5+) or by
// name.
type partitionRef struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// epochAhead is a leadership refused because the log is ahead.
type epochAhead struct {
	topicID   [16]byte // v5+ answers name topics by id
	topic     string
	partition int32
	latest    int32
}

// logEpochTag is the tagged field (qk's; LeaderAndIsr has none of
// Kafka's) in which a broker refusing a leadership with
// FENCED_LEADER_EPOCH gives its log's latest leader epoch.
const logEpochTag = 10001

// SetLogLeaderEpoch puts a log's latest leader epoch in a LeaderAndIsr
// partition answer's tags.
func SetLogLeaderEpoch(tags *kmsg.Tags, epoch int32) {
	tags.Set(logEpochTag, binary.BigEndian.AppendUint32(nil, uint32(epoch)))
}

// LogLeaderEpoch reads what SetLogLeaderEpoch put.
func LogLeaderEpoch(tags *kmsg.Tags) (int32, bool) {
	var out int32
	ok := false
	tags.Each(func(k uint32, v []byte) {
		if k == logEpochTag && len(v) == 4 {
			out, ok = int32(binary.BigEndian.Uint32(v)), true
		}
	})
	return out, ok
}

// raiseLeaderEpochs elects again, above the log's epoch, the partitions
// whose leader refused its leadership because its log already holds a
// newer leader epoch than the metadata (a log dir newer than the store,
// as when a cluster's data is taken over).
func (c *Controller) raiseLeaderEpochs(id int32, ahead []epochAhead) {
	ctx, cancel := c.opCtx()
	defer cancel()
	byID := map[[16]byte]string{}
	for name, t := range c.cc.topics {
		byID[t.id] = name
	}
	var writes []stateWrite
	for _, a := range ahead {
		tp := TP{Topic: a.topic, Partition: a.partition}
		if a.topicID != ([16]byte{}) {
			tp.Topic = byID[a.topicID]
		}
		s, ok := c.cc.states[tp]
		if !ok || s.Leader != id || c.cc.toDelete[tp.Topic] {
			continue
		}
		n := s.WithLeader(s.Leader, s.ISR)
		n.LeaderEpoch = max(s.LeaderEpoch, a.latest) + 1
		n.LeaderRecoveryState = s.LeaderRecoveryState
		writes = append(writes, stateWrite{tp: tp, state: n})
	}
	if len(writes) == 0 {
		return
	}
	c.lg.Warn("leader's log holds newer leader epochs than the metadata; electing it above them",
		"broker_id", id, "partitions", len(writes), "first", writes[0].tp.String(), "leader_epoch", writes[0].state.LeaderEpoch)
	b := newBatch()
	for _, w := range c.writeStates(ctx, writes) {
		c.tellReplicas(b, w.tp, false)
	}
	c.send(b)
}

// onUpdateMetadataResponse records the answer to broker id's
// UpdateMetadata number seq. Any answer counts as applied for the admin
// APIs waiting on it: an error is the broker removed from the channel (it
// left the live set), a refusal a broker epoch that is not current (the
// broker restarted and gets the state again as a new broker).
func (c *Controller) onUpdateMetadataResponse(id int32, seq uint64) func(kmsg.Response, error) {
	gen := c.gen.Load()
	return func(r kmsg.Response, err error) {
		defer c.applied.ack(gen, id, seq)
		if err != nil {
			c.lg.Debug("UpdateMetadata not delivered", "broker_id", id, "err", err)
			return
		}
		if code := r.(*kmsg.UpdateMetadataResponse).ErrorCode; code != 0 {
			c.lg.Warn("UpdateMetadata refused", "broker_id", id, "err", kerr.ErrorForCode(code))
		}
	}
}

// onStopReplicaResponse moves the deleted replicas on: the topic deletion
// goes on from the controller's event loop.
func (c *Controller) onStopReplicaResponse(id int32, parts map[TP]bool) func(kmsg.Response, error) {
	gen := c.gen.Load()
	return func(r kmsg.Response, err error) {
		failed := map[TP]bool{}
		if err != nil {
			for tp := range parts {
				failed[tp] = true
			}
		} else {
			resp := r.(*kmsg.StopReplicaResponse)
			for _, p := range resp.Partitions {
				if p.ErrorCode != 0 || resp.ErrorCode != 0 {
					failed[TP{Topic: p.Topic, Partition: p.Partition}] = true
				}
			}
			if resp.ErrorCode != 0 {
				for tp := range parts {
					failed[tp] = true
				}
			}
		}
		c.enqueueGen(gen, func() { c.onReplicasDeleted(id, parts, failed) })
	}
}

func securityProtocolID(name string) int16 {
	switch name {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return 0
}
