// Package statemachine holds the cluster controller's protocol logic,
// without I/O or locks: Kafka's partition and replica state machines
// (their states and legal transitions), the leader elections, and the
// rule that takes a replica out of a partition's ISR. The controller
// (broker/controller) drives it: it asks these functions what to do, writes
// the result to the metadata store with compare-and-set, and only then
// records the transition here and sends the brokers their requests.
package statemachine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// PartitionReplica names one replica of a partition: the broker that
// holds it.
type PartitionReplica struct {
	TopicPartition
	Replica int32
}

func (pr PartitionReplica) String() string {
	return fmt.Sprintf("[Topic=%s,Partition=%d,Replica=%d]", pr.Topic, pr.Partition, pr.Replica)
}

// PartitionState is a partition's state in the controller, Kafka's names.
type PartitionState int8

const (
	// NonExistentPartition: never created, or deleted.
	NonExistentPartition PartitionState = iota
	// NewPartition: assigned replicas, no leader and ISR yet.
	NewPartition
	// OnlinePartition: a leader was elected.
	OnlinePartition
	// OfflinePartition: its leader died (or it has none) and no new one
	// could be elected yet.
	OfflinePartition
)

var partitionStateNames = [...]string{"NonExistentPartition", "NewPartition", "OnlinePartition", "OfflinePartition"}

func (s PartitionState) String() string {
	if int(s) < len(partitionStateNames) {
		return partitionStateNames[s]
	}
	return fmt.Sprintf("PartitionState(%d)", int8(s))
}

// validPreviousPartition is Kafka's PartitionState.validPreviousStates.
var validPreviousPartition = map[PartitionState][]PartitionState{
	NewPartition:         {NonExistentPartition},
	OnlinePartition:      {NewPartition, OnlinePartition, OfflinePartition},
	OfflinePartition:     {NewPartition, OnlinePartition, OfflinePartition},
	NonExistentPartition: {OfflinePartition},
}

// CanTransition reports whether a partition may go from s to to.
func (s PartitionState) CanTransition(to PartitionState) bool {
	return slices.Contains(validPreviousPartition[to], s)
}

// ReplicaState is a replica's state in the controller, Kafka's names.
type ReplicaState int8

const (
	// NonExistentReplica: not assigned, or deleted.
	NonExistentReplica ReplicaState = iota
	// NewReplica: assigned (topic creation, partition addition); it can
	// only be a follower.
	NewReplica
	// OnlineReplica: started on a live broker, leader or follower.
	OnlineReplica
	// OfflineReplica: its broker died, or it was stopped.
	OfflineReplica
	// ReplicaDeletionStarted: StopReplica with delete was sent.
	ReplicaDeletionStarted
	// ReplicaDeletionSuccessful: the broker deleted it.
	ReplicaDeletionSuccessful
	// ReplicaDeletionIneligible: its deletion failed (or its broker is
	// down); it is retried when the broker is back.
	ReplicaDeletionIneligible
)

var replicaStateNames = [...]string{"NonExistentReplica", "NewReplica", "OnlineReplica", "OfflineReplica",
	"ReplicaDeletionStarted", "ReplicaDeletionSuccessful", "ReplicaDeletionIneligible"}

func (s ReplicaState) String() string {
	if int(s) < len(replicaStateNames) {
		return replicaStateNames[s]
	}
	return fmt.Sprintf("ReplicaState(%d)", int8(s))
}

// validPreviousReplica is Kafka's ReplicaState.validPreviousStates.
var validPreviousReplica = map[ReplicaState][]ReplicaState{
	NewReplica:                {NonExistentReplica},
	OnlineReplica:             {NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible},
	OfflineReplica:            {NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible},
	ReplicaDeletionStarted:    {OfflineReplica},
	ReplicaDeletionSuccessful: {ReplicaDeletionStarted},
	ReplicaDeletionIneligible: {OfflineReplica, ReplicaDeletionStarted},
	NonExistentReplica:        {ReplicaDeletionSuccessful},
}

// CanTransition reports whether a replica may go from s to to.
func (s ReplicaState) CanTransition(to ReplicaState) bool {
	return slices.Contains(validPreviousReplica[to], s)
}

// ErrIllegalTransition: a transition the state machine does not allow
// (Kafka's IllegalStateException "Invalid state transition"). It is a bug
// in the driver, reported rather than applied.
var ErrIllegalTransition = errors.New("statemachine: illegal state transition")

// Machine holds every partition's and replica's state. A partition or
// replica it does not hold is NonExistent. The zero value is not usable:
// call NewMachine.
type Machine struct {
	partitions map[TopicPartition]PartitionState
	replicas   map[PartitionReplica]ReplicaState
}

// NewMachine returns an empty machine.
func NewMachine() *Machine {
	return &Machine{partitions: map[TopicPartition]PartitionState{}, replicas: map[PartitionReplica]ReplicaState{}}
}

// Partition is tp's state.
func (m *Machine) Partition(tp TopicPartition) PartitionState { return m.partitions[tp] }

// Replica is pr's state.
func (m *Machine) Replica(pr PartitionReplica) ReplicaState { return m.replicas[pr] }

// SetPartition moves tp to state to, or returns ErrIllegalTransition and
// leaves it where it is.
func (m *Machine) SetPartition(tp TopicPartition, to PartitionState) error {
	from := m.partitions[tp]
	if !from.CanTransition(to) {
		return fmt.Errorf("%w: partition %s from %s to %s", ErrIllegalTransition, tp, from, to)
	}
	if to == NonExistentPartition {
		delete(m.partitions, tp)
	} else {
		m.partitions[tp] = to
	}
	return nil
}

// SetReplica moves pr to state to, or returns ErrIllegalTransition.
func (m *Machine) SetReplica(pr PartitionReplica, to ReplicaState) error {
	from := m.replicas[pr]
	if !from.CanTransition(to) {
		return fmt.Errorf("%w: replica %s from %s to %s", ErrIllegalTransition, pr, from, to)
	}
	if to == NonExistentReplica {
		delete(m.replicas, pr)
	} else {
		m.replicas[pr] = to
	}
	return nil
}

// InitPartition sets tp's state without a transition check, as Kafka's
// controller does when it reads the cluster's state after its election.
func (m *Machine) InitPartition(tp TopicPartition, s PartitionState) {
	if s == NonExistentPartition {
		delete(m.partitions, tp)
		return
	}
	m.partitions[tp] = s
}

// InitReplica sets pr's state without a transition check (controller
// failover).
func (m *Machine) InitReplica(pr PartitionReplica, s ReplicaState) {
	if s == NonExistentReplica {
		delete(m.replicas, pr)
		return
	}
	m.replicas[pr] = s
}

// PartitionsIn returns the partitions in one of the states, sorted.
func (m *Machine) PartitionsIn(states ...PartitionState) []TopicPartition {
	var out []TopicPartition
	for tp, s := range m.partitions {
		if slices.Contains(states, s) {
			out = append(out, tp)
		}
	}
	slices.SortFunc(out, Compare)
	return out
}

// ReplicasIn returns the replicas of topic in one of the states, sorted.
func (m *Machine) ReplicasIn(topic string, states ...ReplicaState) []PartitionReplica {
	var out []PartitionReplica
	for pr, s := range m.replicas {
		if pr.Topic == topic && slices.Contains(states, s) {
			out = append(out, pr)
		}
	}
	slices.SortFunc(out, func(a, b PartitionReplica) int {
		if c := Compare(a.TopicPartition, b.TopicPartition); c != 0 {
			return c
		}
		return int(a.Replica - b.Replica)
	})
	return out
}

// Forget drops every state of topic (after its deletion completed).
func (m *Machine) Forget(topic string) {
	maps.DeleteFunc(m.partitions, func(tp TopicPartition, _ PartitionState) bool { return tp.Topic == topic })
	maps.DeleteFunc(m.replicas, func(pr PartitionReplica, _ ReplicaState) bool { return pr.Topic == topic })
}

// Compare orders partitions by topic, then partition number.
func Compare(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition - b.Partition)
}
