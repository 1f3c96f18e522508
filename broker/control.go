package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/txncoord"
)

// The broker's side of the controller's requests: Kafka's
// ReplicaManager.becomeLeaderOrFollower and stopReplicas, and
// MetadataCache.updateMetadata. They come from the controller over the
// inter-broker listener, or in-process when this broker is the
// controller, and are fenced: a request from an older controller epoch
// than one already seen is refused (STALE_CONTROLLER_EPOCH), and so is
// one addressed to an earlier registration of this broker
// (STALE_BROKER_EPOCH: the controller has not seen it re-register).

// handleControl serves one control request.
func (s *Server) handleControl(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		return s.leaderAndIsr(ctx, r), nil
	case *kmsg.UpdateMetadataRequest:
		return s.updateMetadata(ctx, r), nil
	case *kmsg.StopReplicaRequest:
		return s.stopReplica(r), nil
	case *kmsg.ControlledShutdownRequest:
		return s.controlledShutdownRequest(ctx, r), nil
	case *kmsg.AlterPartitionRequest:
		return s.alterPartitionRequest(ctx, r), nil
	}
	return nil, fmt.Errorf("broker: %s is not a control request", kmsg.NameForKey(req.Key()))
}

// fenced checks a control request's epochs and records a newer
// controller epoch; it returns the error code to answer, or 0.
func (s *Server) fenced(api string, controllerEpoch int32, brokerEpoch int64, hasBrokerEpoch bool) int16 {
	for {
		cur := s.controllerEpoch.Load()
		if controllerEpoch < cur {
			s.lg.Warn("refused a request from an old controller", "api", api, "controller_epoch", controllerEpoch, "latest", cur)
			return kerr.StaleControllerEpoch.Code
		}
		if controllerEpoch == cur || s.controllerEpoch.CompareAndSwap(cur, controllerEpoch) {
			break
		}
	}
	if hasBrokerEpoch && brokerEpoch != -1 && brokerEpoch < s.brokerEpoch.Load() {
		s.lg.Warn("refused a request for an earlier registration of this broker", "api", api,
			"broker_epoch", brokerEpoch, "current", s.brokerEpoch.Load())
		return kerr.StaleBrokerEpoch.Code
	}
	return 0
}

// leaderAndIsr applies the controller's partition states: the logs are
// opened (created if new) and the partitions led or followed.
func (s *Server) leaderAndIsr(ctx context.Context, req *kmsg.LeaderAndISRRequest) *kmsg.LeaderAndISRResponse {
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	type part struct {
		topic string
		id    [16]byte
		p     kmsg.LeaderAndISRRequestTopicPartition
	}
	var parts []part
	if req.Version >= 2 {
		for _, t := range req.TopicStates {
			for _, p := range t.PartitionStates {
				parts = append(parts, part{t.Topic, t.TopicID, p})
			}
		}
	} else {
		for _, p := range req.PartitionStates {
			parts = append(parts, part{p.Topic, [16]byte{}, p})
		}
	}
	codes := make([]int16, len(parts))
	if code := s.fenced("LeaderAndIsr", req.ControllerEpoch, req.BrokerEpoch, req.Version >= 2); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	// Configs written before the controller sent this must apply to it
	// (a reassignment's throttled replicas, set by the tool just before
	// it asked for the move), and their /config/changes notification may
	// not have arrived yet: read them now. Before controlMu, which
	// Cache.mu is never held with.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := s.cache.Sync(sctx); err != nil {
		s.lg.Warn("cannot re-read configs for a LeaderAndIsr; applying the cached ones", "err", err)
	}
	cancel()
	s.controlMu.Lock()
	defer s.controlMu.Unlock()
	id := s.static.BrokerID
	defaults := s.cfg.Load().TopicDefaults()
	leaders := map[int32]string{}
	for _, l := range req.LiveLeaders {
		leaders[l.BrokerID] = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
	}
	snap := s.cache.Snapshot()
	configs := map[string]config.Topic{}
	var states []replica.PartitionState
	index := map[log.TopicPartition]int{}
	for i, pt := range parts {
		if !slices.Contains(pt.p.Replicas, id) {
			codes[i] = kerr.UnknownTopicOrPartition.Code
			continue
		}
		tc, ok := configs[pt.topic]
		if !ok {
			tc = s.topicConfig(ctx, snap, pt.topic, pt.id, defaults)
			configs[pt.topic] = tc
		}
		tp := log.TopicPartition{Topic: pt.topic, Partition: pt.p.Partition}
		index[tp] = i
		states = append(states, replica.PartitionState{Topic: pt.topic, TopicID: pt.id, Partition: pt.p.Partition,
			Leader: pt.p.Leader, LeaderEpoch: pt.p.LeaderEpoch, ISR: pt.p.ISR, Replicas: pt.p.Replicas, Config: tc,
			LeaderAddr: leaders[pt.p.Leader], PartitionEpoch: pt.p.ZKVersion, IsNew: pt.p.IsNew})
		s.hosted[tp] = pt.id
	}
	errs := s.replicas.ApplyLeaderAndISR(states)
	ahead := map[int]int32{}
	for tp, err := range errs {
		codes[index[tp]] = controlErrorCode(err)
		var le *replica.LogEpochAheadError
		if errors.As(err, &le) {
			ahead[index[tp]] = le.Latest
		}
	}
	s.reportUnhosted(errs)
	s.updateCoordinator(states, errs)

	if req.Version >= 5 {
		var cur *kmsg.LeaderAndISRResponseTopic
		for i, pt := range parts {
			if cur == nil || cur.TopicID != pt.id {
				resp.Topics = append(resp.Topics, kmsg.NewLeaderAndISRResponseTopic())
				cur = &resp.Topics[len(resp.Topics)-1]
				cur.TopicID = pt.id
			}
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition, rp.ErrorCode = pt.topic, pt.p.Partition, codes[i]
			if latest, ok := ahead[i]; ok {
				controller.SetLogLeaderEpoch(&rp.UnknownTags, latest)
			}
			cur.Partitions = append(cur.Partitions, rp)
		}
	} else {
		for i, pt := range parts {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition, rp.ErrorCode = pt.topic, pt.p.Partition, codes[i]
			resp.Partitions = append(resp.Partitions, rp)
		}
	}
	return resp
}

// topicConfig is a topic's effective config: its overrides from the
// metadata cache when it knows the topic, else from the store (a
// LeaderAndIsr comes before the UpdateMetadata that names a new topic).
func (s *Server) topicConfig(ctx context.Context, snap *controller.Snapshot, topic string, id [16]byte, defaults config.Topic) config.Topic {
	var over map[string]string
	if t, ok := snap.Topics[topic]; ok && t.Config != nil && (id == [16]byte{} || t.ID == id) {
		over = t.Config
	} else {
		var err error
		if over, err = metadata.ReadEntityConfig(ctx, s.store, metadata.ConfigTopics, topic); err != nil {
			s.lg.Warn("cannot read topic config; using defaults", "topic", topic, "err", err)
		}
	}
	tc, err := config.ResolveTopic(defaults, over)
	if err != nil {
		s.lg.Error("topic config is invalid; using defaults", "topic", topic, "err", err)
		return defaults
	}
	return tc
}

func controlErrorCode(err error) int16 {
	switch {
	case errors.Is(err, replica.ErrStaleEpoch):
		return kerr.StaleControllerEpoch.Code
	case errors.Is(err, replica.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, replica.ErrInconsistentTopicID):
		return kerr.InconsistentTopicID.Code
	case errors.Is(err, replica.ErrOffline), errors.Is(err, log.ErrLogDirOffline), errors.Is(err, log.ErrFailed):
		return kerr.KafkaStorageError.Code
	}
	return kerr.UnknownServerError.Code
}

// updateCoordinator makes the group coordinator lead the partitions of
// __consumer_offsets this broker now leads (loading their groups) and
// resign those it no longer leads.
func (s *Server) updateCoordinator(states []replica.PartitionState, errs map[log.TopicPartition]error) {
	for _, st := range states {
		_, failed := errs[log.TopicPartition{Topic: st.Topic, Partition: st.Partition}]
		leads := !failed && st.Leader == s.static.BrokerID
		switch {
		case st.Topic == group.Topic && s.groups != nil:
			if leads {
				s.groups.OnLeader(st.Partition, st.LeaderEpoch)
			} else {
				s.groups.OnResign(st.Partition)
			}
		case st.Topic == txncoord.Topic && s.txn != nil:
			// The coordinator epoch is the partition's leader epoch.
			if leads {
				s.txn.OnLeader(st.Partition, st.LeaderEpoch)
			} else {
				s.txn.OnResign(st.Partition)
			}
		}
	}
}

// updateMetadata applies the controller's UpdateMetadata to the cache.
func (s *Server) updateMetadata(ctx context.Context, req *kmsg.UpdateMetadataRequest) *kmsg.UpdateMetadataResponse {
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	if code := s.fenced("UpdateMetadata", req.ControllerEpoch, req.BrokerEpoch, req.Version >= 5); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if err := s.cache.ApplyUpdateMetadata(ctx, req); err != nil {
		s.lg.Warn("metadata applied in part", "err", err)
	}
	s.gotMetadata.Do(func() { close(s.firstMetadata) })
	return resp
}

// stopReplica stops hosting partitions, deleting them when asked.
func (s *Server) stopReplica(req *kmsg.StopReplicaRequest) *kmsg.StopReplicaResponse {
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	if code := s.fenced("StopReplica", req.ControllerEpoch, req.BrokerEpoch, req.Version >= 1); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	s.controlMu.Lock()
	defer s.controlMu.Unlock()
	type stop struct {
		tp  log.TopicPartition
		del bool
	}
	var stops []stop
	for _, t := range req.Topics {
		switch {
		case req.Version >= 3:
			for _, p := range t.PartitionStates {
				stops = append(stops, stop{log.TopicPartition{Topic: t.Topic, Partition: p.Partition}, p.Delete})
			}
		case req.Version >= 1:
			for _, p := range t.Partitions {
				stops = append(stops, stop{log.TopicPartition{Topic: t.Topic, Partition: p}, req.DeletePartitions})
			}
		default:
			stops = append(stops, stop{log.TopicPartition{Topic: t.Topic, Partition: t.Partition}, req.DeletePartitions})
		}
	}
	for _, st := range stops {
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition = st.tp.Topic, st.tp.Partition
		if st.tp.Topic == group.Topic && s.groups != nil {
			s.groups.OnResign(st.tp.Partition)
		}
		if st.tp.Topic == txncoord.Topic && s.txn != nil {
			s.txn.OnResign(st.tp.Partition)
		}
		delete(s.hosted, st.tp)
		if err := s.replicas.StopReplica(st.tp.Topic, st.tp.Partition, st.del); err != nil {
			s.lg.Error("cannot stop replica", "topic", st.tp.Topic, "partition", st.tp.Partition, "delete", st.del, "err", err)
			rp.ErrorCode = kerr.KafkaStorageError.Code
		}
		resp.Partitions = append(resp.Partitions, rp)
	}
	return resp
}

// controlledShutdownRequest serves a broker's ControlledShutdown on the
// controller.
func (s *Server) controlledShutdownRequest(ctx context.Context, req *kmsg.ControlledShutdownRequest) *kmsg.ControlledShutdownResponse {
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	epoch := int64(-1)
	if req.Version >= 2 {
		epoch = req.BrokerEpoch
	}
	remaining, err := s.ctrl.ControlledShutdown(ctx, req.BrokerID, epoch)
	switch {
	case errors.Is(err, controller.ErrNotController):
		resp.ErrorCode = kerr.NotController.Code
	case errors.Is(err, controller.ErrStaleBrokerEpoch):
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
	case errors.Is(err, controller.ErrBrokerNotAvailable):
		resp.ErrorCode = kerr.BrokerNotAvailable.Code
	case err != nil:
		resp.ErrorCode = kerr.UnknownServerError.Code
	}
	for _, tp := range remaining {
		p := kmsg.NewControlledShutdownResponsePartitionsRemaining()
		p.Topic, p.Partition = tp.Topic, tp.Partition
		resp.PartitionsRemaining = append(resp.PartitionsRemaining, p)
	}
	return resp
}

// alterPartitionRequest serves a leader's AlterPartition on the
// controller.
func (s *Server) alterPartitionRequest(ctx context.Context, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	var changes []controller.ISRChange
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			ch := controller.ISRChange{TP: controller.TP{Topic: t.Topic, Partition: p.Partition}, LeaderEpoch: p.LeaderEpoch,
				PartitionEpoch: p.PartitionEpoch, NewISR: p.NewISR}
			if req.Version >= 2 {
				ch.TopicID = t.TopicID
			}
			if req.Version >= 3 {
				ch.NewISR = nil
				for _, e := range p.NewEpochISR {
					ch.NewISR = append(ch.NewISR, e.BrokerID)
				}
			}
			changes = append(changes, ch)
		}
	}
	results, err := s.ctrl.AlterPartition(ctx, req.BrokerID, req.BrokerEpoch, changes)
	switch {
	case errors.Is(err, controller.ErrNotController):
		resp.ErrorCode = kerr.NotController.Code
		return resp
	case errors.Is(err, controller.ErrStaleBrokerEpoch):
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	case err != nil:
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		for range t.Partitions {
			r := results[i]
			i++
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = r.TP.Partition
			if r.Err != nil {
				var ke *kerr.Error
				if errors.As(r.Err, &ke) {
					rp.ErrorCode = ke.Code
				} else {
					rp.ErrorCode = kerr.UnknownServerError.Code
				}
			}
			rp.LeaderID, rp.LeaderEpoch, rp.ISR, rp.PartitionEpoch = r.State.Leader, r.State.LeaderEpoch, r.State.ISR, r.State.PartitionEpoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
