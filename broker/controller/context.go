package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/qk-project/qk/broker/controller/statemachine"
	"github.com/qk-project/qk/broker/metadata"
)

// TP names a partition.
type TP = statemachine.TopicPartition

// liveBroker is a registered broker as the controller knows it.
type liveBroker struct {
	id int32
	// epoch is the zxid that created its registration (Kafka's broker
	// epoch): every control request to it carries it, and a broker that
	// registered again (a new epoch) has restarted.
	epoch int64
	reg   metadata.BrokerRegistration
}

// topicInfo is a topic's assignment as the controller knows it.
type topicInfo struct {
	id         [16]byte
	assignment map[int32][]int32 // the full replica set of each partition
	// adding and removing are the replicas of partitions being
	// reassigned that are being added or removed (KIP-455): a partition
	// absent from both is not being reassigned.
	adding, removing map[int32][]int32
}

// controllerContext is the cluster state the active controller works
// from (Kafka's ControllerContext): read from the store when it is
// elected, then changed only by the controller itself, after its writes
// to the store succeeded, or by the store's notifications. Guarded by
// Controller.mu.
type controllerContext struct {
	live         map[int32]liveBroker
	shuttingDown map[int32]bool
	topics       map[string]*topicInfo
	states       map[TP]statemachine.LeaderAndIsr
	sm           *statemachine.Machine
	// toDelete are the topics queued for deletion (/admin/delete_topics);
	// their partitions are sent to brokers with LeaderDuringDelete.
	toDelete map[string]bool
	// stateMzxid is the zxid of each state node's last write, as read at
	// failover: a leader registered after it (a larger czxid) restarted
	// since, unseen by any controller.
	stateMzxid map[TP]int64
	// offlineDirs are the replicas that live brokers reported on a
	// failed log directory (KIP-112): offline although their broker is
	// up. Not read at failover: the new controller's LeaderAndIsr to
	// every broker brings them back as KAFKA_STORAGE_ERROR answers.
	offlineDirs statemachine.OfflineDirs
}

func newContext() *controllerContext {
	return &controllerContext{live: map[int32]liveBroker{}, shuttingDown: map[int32]bool{}, topics: map[string]*topicInfo{},
		states: map[TP]statemachine.LeaderAndIsr{}, sm: statemachine.NewMachine(), toDelete: map[string]bool{},
		stateMzxid: map[TP]int64{}, offlineDirs: statemachine.OfflineDirs{}}
}

func (cc *controllerContext) isLive(id int32) bool { _, ok := cc.live[id]; return ok }

// isOnline: live and not shutting down (the broker half of Kafka's
// isReplicaOnline; onlineReplicas adds the log directories): such a
// broker cannot win an election and is not told new roles.
func (cc *controllerContext) isOnline(id int32) bool { return cc.isLive(id) && !cc.shuttingDown[id] }

// onlineReplicas says which replicas of tp may be elected leader or join
// its ISR (Kafka's isReplicaOnline): on a live broker that is not
// shutting down, and not on a log directory that failed there. Every
// election and ISR check asks it, so that a replica on an offline
// directory is never chosen.
func (cc *controllerContext) onlineReplicas(tp TP) statemachine.Live {
	return statemachine.ReplicaOnline(cc.isOnline, cc.offlineDirs, tp)
}

// isReplicaOnline is onlineReplicas(tp)(id).
func (cc *controllerContext) isReplicaOnline(tp TP, id int32) bool { return cc.onlineReplicas(tp)(id) }

// liveReplicas is onlineReplicas with the brokers shutting down (Kafka's
// isReplicaOnline with includeShuttingDownBrokers): a replica that can
// still serve, for the checks that keep a leader rather than choose one.
func (cc *controllerContext) liveReplicas(tp TP) statemachine.Live {
	return statemachine.ReplicaOnline(cc.isLive, cc.offlineDirs, tp)
}

// isReplicaLive is liveReplicas(tp)(id).
func (cc *controllerContext) isReplicaLive(tp TP, id int32) bool { return cc.liveReplicas(tp)(id) }

// liveIDs are the live brokers, ascending.
func (cc *controllerContext) liveIDs() []int32 {
	out := make([]int32, 0, len(cc.live))
	for id := range cc.live {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// racks are the live brokers' broker.rack ("" without).
func (cc *controllerContext) racks() map[int32]string {
	out := make(map[int32]string, len(cc.live))
	for id, b := range cc.live {
		out[id] = b.reg.Rack
	}
	return out
}

// replicas is tp's assignment (nil for an unknown partition).
func (cc *controllerContext) replicas(tp TP) []int32 {
	t := cc.topics[tp.Topic]
	if t == nil {
		return nil
	}
	return t.assignment[tp.Partition]
}

// assignmentOf is tp's assignment with the replicas a reassignment is
// adding and removing.
func (cc *controllerContext) assignmentOf(tp TP) statemachine.ReplicaAssignment {
	t := cc.topics[tp.Topic]
	if t == nil {
		return statemachine.ReplicaAssignment{}
	}
	return statemachine.ReplicaAssignment{Replicas: t.assignment[tp.Partition], Adding: t.adding[tp.Partition],
		Removing: t.removing[tp.Partition]}
}

// setAssignment records tp's assignment (after it was written).
func (cc *controllerContext) setAssignment(tp TP, a statemachine.ReplicaAssignment) {
	t := cc.topics[tp.Topic]
	if t == nil {
		return
	}
	if t.adding == nil {
		t.adding, t.removing = map[int32][]int32{}, map[int32][]int32{}
	}
	t.assignment[tp.Partition] = slices.Clone(a.Replicas)
	if len(a.Adding) > 0 {
		t.adding[tp.Partition] = slices.Clone(a.Adding)
	} else {
		delete(t.adding, tp.Partition)
	}
	if len(a.Removing) > 0 {
		t.removing[tp.Partition] = slices.Clone(a.Removing)
	} else {
		delete(t.removing, tp.Partition)
	}
}

// reassigning lists the partitions being reassigned, sorted (Kafka's
// partitionsBeingReassigned).
func (cc *controllerContext) reassigning() []TP {
	var out []TP
	for _, tp := range cc.allPartitions() {
		if cc.assignmentOf(tp).IsBeingReassigned() {
			out = append(out, tp)
		}
	}
	return out
}

// partitions lists a topic's partitions, ascending.
func (cc *controllerContext) partitions(topic string) []TP {
	t := cc.topics[topic]
	if t == nil {
		return nil
	}
	out := make([]TP, 0, len(t.assignment))
	for p := range int32(len(t.assignment)) {
		out = append(out, TP{Topic: topic, Partition: p})
	}
	return out
}

// allPartitions lists every partition, sorted.
func (cc *controllerContext) allPartitions() []TP {
	var out []TP
	for _, name := range slices.Sorted(maps.Keys(cc.topics)) {
		out = append(out, cc.partitions(name)...)
	}
	return out
}

// partitionsOn lists the partitions with a replica on broker id.
func (cc *controllerContext) partitionsOn(id int32) []TP {
	var out []TP
	for _, tp := range cc.allPartitions() {
		if slices.Contains(cc.replicas(tp), id) {
			out = append(out, tp)
		}
	}
	return out
}

// readLiveBrokers reads the registrations under /brokers/ids.
func readLiveBrokers(ctx context.Context, st metadata.Store) (map[int32]liveBroker, error) {
	ids, _, err := st.Children(ctx, metadata.BrokerIDsPath)
	if err != nil {
		return nil, err
	}
	out := map[int32]liveBroker{}
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			continue
		}
		data, stat, err := st.Get(ctx, metadata.BrokerIDsPath+"/"+s)
		if errors.Is(err, metadata.ErrNoNode) {
			continue // gone since listed
		}
		if err != nil {
			return nil, err
		}
		reg, err := metadata.UnmarshalBrokerRegistration(data)
		if err != nil {
			continue // unreadable: not a broker the controller can talk to
		}
		out[int32(id)] = liveBroker{id: int32(id), epoch: stat.Czxid, reg: reg}
	}
	return out, nil
}

// readTopicInfo reads a topic's assignment.
func readTopicInfo(ctx context.Context, st metadata.Store, name string) (*topicInfo, error) {
	data, _, err := st.Get(ctx, metadata.TopicPath(name))
	if err != nil {
		return nil, err
	}
	a, err := metadata.UnmarshalTopicAssignment(data)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", name, err)
	}
	for p := range int32(len(a.Partitions)) {
		if _, ok := a.Partitions[p]; !ok {
			return nil, fmt.Errorf("%w: topic %s has %d partitions but no partition %d", metadata.ErrMalformed, name, len(a.Partitions), p)
		}
	}
	return &topicInfo{id: a.TopicID, assignment: a.Partitions, adding: a.AddingReplicas, removing: a.RemovingReplicas}, nil
}

// readState reads a partition's state node; ok is false when it has none.
func readState(ctx context.Context, st metadata.Store, tp TP) (statemachine.LeaderAndIsr, bool, error) {
	s, _, ok, err := readStateStat(ctx, st, tp)
	return s, ok, err
}

// readStateStat is readState with the node's last-write zxid.
func readStateStat(ctx context.Context, st metadata.Store, tp TP) (statemachine.LeaderAndIsr, int64, bool, error) {
	data, stat, err := st.Get(ctx, metadata.PartitionStatePath(tp.Topic, tp.Partition))
	if errors.Is(err, metadata.ErrNoNode) {
		return statemachine.LeaderAndIsr{}, 0, false, nil
	}
	if err != nil {
		return statemachine.LeaderAndIsr{}, 0, false, err
	}
	ps, err := metadata.UnmarshalPartitionState(data)
	if err != nil {
		return statemachine.LeaderAndIsr{}, 0, false, fmt.Errorf("%s: %w", tp, err)
	}
	return statemachine.LeaderAndIsr{Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, ISR: ps.ISR,
		PartitionEpoch: stat.Version, LeaderRecoveryState: ps.LeaderRecoveryState}, stat.Mzxid, true, nil
}

// readWorkers bounds the concurrent reads of a controller failover: a
// store round trip each, so 10,000 partitions take 10,000/readWorkers
// round trips.
const readWorkers = 32

// loadContext reads the whole cluster state, as a newly elected
// controller does (Kafka's initializeControllerContext).
func loadContext(ctx context.Context, st metadata.Store) (*controllerContext, error) {
	cc := newContext()
	var err error
	if cc.live, err = readLiveBrokers(ctx, st); err != nil {
		return nil, err
	}
	names, _, err := st.Children(ctx, metadata.BrokerTopicsPath)
	if err != nil {
		return nil, err
	}
	type result struct {
		name   string
		t      *topicInfo
		states map[int32]statemachine.LeaderAndIsr
		mzxid  map[int32]int64
		err    error
	}
	jobs := make(chan string)
	results := make(chan result)
	var wg sync.WaitGroup
	for range min(readWorkers, max(len(names), 1)) {
		wg.Go(func() {
			for name := range jobs {
				r := result{name: name, states: map[int32]statemachine.LeaderAndIsr{}, mzxid: map[int32]int64{}}
				r.t, r.err = readTopicInfo(ctx, st, name)
				if r.err == nil {
					for p := range int32(len(r.t.assignment)) {
						s, mzxid, ok, err := readStateStat(ctx, st, TP{Topic: name, Partition: p})
						if err != nil {
							r.err = err
							break
						}
						if ok {
							r.states[p], r.mzxid[p] = s, mzxid
						}
					}
				}
				results <- r
			}
		})
	}
	go func() {
		for _, n := range names {
			jobs <- n
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	var errs []error
	for r := range results {
		switch {
		case errors.Is(r.err, metadata.ErrNoNode):
			continue // deleted since listed
		case errors.Is(r.err, metadata.ErrMalformed):
			errs = append(errs, r.err) // reported, the others still load
			continue
		case r.err != nil:
			return nil, r.err
		}
		cc.topics[r.name] = r.t
		for p, s := range r.states {
			cc.states[TP{Topic: r.name, Partition: p}] = s
			cc.stateMzxid[TP{Topic: r.name, Partition: p}] = r.mzxid[p]
		}
	}
	dels, _, err := st.Children(ctx, metadata.DeleteTopicsPath)
	if err != nil && !errors.Is(err, metadata.ErrNoNode) {
		return nil, err
	}
	for _, d := range dels {
		if _, ok := cc.topics[d]; ok {
			cc.toDelete[d] = true
		}
	}
	// States as Kafka's initializePartitionState/initializeReplicaState.
	for _, tp := range cc.allPartitions() {
		s, ok := cc.states[tp]
		switch {
		case !ok:
			cc.sm.InitPartition(tp, statemachine.NewPartition)
		case cc.isLive(s.Leader):
			cc.sm.InitPartition(tp, statemachine.OnlinePartition)
		default:
			cc.sm.InitPartition(tp, statemachine.OfflinePartition)
		}
		for _, r := range cc.replicas(tp) {
			pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: r}
			if cc.isLive(r) {
				cc.sm.InitReplica(pr, statemachine.OnlineReplica)
			} else {
				cc.sm.InitReplica(pr, statemachine.ReplicaDeletionIneligible)
			}
		}
	}
	return cc, errors.Join(errs...)
}
