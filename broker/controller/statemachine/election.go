package statemachine

import "slices"

// Leader values with a meaning of their own, as in Kafka's LeaderAndIsr.
const (
	// NoLeader: the partition is offline.
	NoLeader int32 = -1
	// LeaderDuringDelete is sent in UpdateMetadata for the partitions of
	// a topic being deleted, so brokers drop it from their metadata.
	LeaderDuringDelete int32 = -2
)

// LeaderAndIsr is a partition's leader, leader epoch and ISR, and the
// version of the state node it was read from or written as (Kafka's
// zkVersion, the partition epoch of KIP-380): the next write is a
// compare-and-set on it.
type LeaderAndIsr struct {
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
	// LeaderRecoveryState is 1 (RECOVERING) after an unclean election.
	LeaderRecoveryState int8
}

// WithLeader is the state after a new leader with isr was elected: the
// leader epoch goes up by one, as on every leader change.
func (l LeaderAndIsr) WithLeader(leader int32, isr []int32) LeaderAndIsr {
	return LeaderAndIsr{Leader: leader, LeaderEpoch: l.LeaderEpoch + 1, ISR: slices.Clone(isr), PartitionEpoch: l.PartitionEpoch}
}

// Live tells whether a broker is alive (registered).
type Live func(broker int32) bool

// InitialLeaderAndIsr is a new partition's first state (Kafka's
// NewPartition -> OnlinePartition): its live assigned replicas are the
// ISR, the first of them the leader, at leader epoch 0. false: none of
// its replicas is alive, and the partition stays new.
func InitialLeaderAndIsr(assignment []int32, live Live) (LeaderAndIsr, bool) {
	var isr []int32
	for _, r := range assignment {
		if live(r) {
			isr = append(isr, r)
		}
	}
	if len(isr) == 0 {
		return LeaderAndIsr{}, false
	}
	return LeaderAndIsr{Leader: isr[0], LeaderEpoch: 0, ISR: isr}, true
}

// OfflinePartitionLeader elects the leader of a partition without one
// (Kafka's offlinePartitionLeaderElection): the first assigned replica
// that is alive and in the ISR. With unclean leader election allowed and
// no such replica, the first live assigned replica, which may lack
// acknowledged records (unclean is then true, and the ISR becomes just
// that replica). ok is false when nobody can lead.
func OfflinePartitionLeader(assignment, isr []int32, live Live, uncleanAllowed bool) (leader int32, newISR []int32, unclean, ok bool) {
	for _, r := range assignment {
		if live(r) && slices.Contains(isr, r) {
			var keep []int32
			for _, i := range isr {
				if live(i) {
					keep = append(keep, i)
				}
			}
			return r, keep, false, true
		}
	}
	if uncleanAllowed {
		for _, r := range assignment {
			if live(r) {
				return r, []int32{r}, true, true
			}
		}
	}
	return NoLeader, nil, false, false
}

// ControlledShutdownLeader moves leadership off brokers that are shutting
// down (Kafka's controlledShutdownPartitionLeaderElection): the first
// assigned replica that is alive, in the ISR and not shutting down; the
// ISR loses the brokers shutting down. ok is false when no other replica
// can lead (a partition with one replica keeps its leader until the
// broker is gone).
func ControlledShutdownLeader(assignment, isr []int32, live Live, shuttingDown func(int32) bool) (leader int32, newISR []int32, ok bool) {
	for _, r := range assignment {
		if live(r) && slices.Contains(isr, r) && !shuttingDown(r) {
			var keep []int32
			for _, i := range isr {
				if !shuttingDown(i) {
					keep = append(keep, i)
				}
			}
			return r, keep, true
		}
	}
	return NoLeader, nil, false
}

// PreferredReplicaLeader elects the preferred replica (the first
// assigned) if it is alive and in the ISR (Kafka's
// preferredReplicaPartitionLeaderElection).
func PreferredReplicaLeader(assignment, isr []int32, live Live) (int32, bool) {
	if len(assignment) == 0 {
		return NoLeader, false
	}
	p := assignment[0]
	if live(p) && slices.Contains(isr, p) {
		return p, true
	}
	return NoLeader, false
}

// RemoveReplicaFromIsr is the state after replica went offline (Kafka's
// ReplicaStateMachine.removeReplicasFromIsr): it leaves the ISR, unless
// it is the last member (the ISR then still names the replica that has
// every acknowledged record, so that only it can be elected cleanly when
// it returns), and if it led, the partition has no leader. The leader
// epoch goes up. changed is false when the replica was not in the ISR.
func RemoveReplicaFromIsr(l LeaderAndIsr, replica int32) (next LeaderAndIsr, changed bool) {
	if !slices.Contains(l.ISR, replica) {
		return l, false
	}
	leader := l.Leader
	if leader == replica {
		leader = NoLeader
	}
	isr := slices.Clone(l.ISR)
	if len(isr) > 1 {
		isr = slices.DeleteFunc(isr, func(r int32) bool { return r == replica })
	}
	return LeaderAndIsr{Leader: leader, LeaderEpoch: l.LeaderEpoch + 1, ISR: isr, PartitionEpoch: l.PartitionEpoch,
		LeaderRecoveryState: l.LeaderRecoveryState}, true
}
