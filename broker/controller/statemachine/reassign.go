package statemachine

import "slices"

// ReplicaAssignment is a partition's replicas as the controller keeps
// them during a reassignment (Kafka's ReplicaAssignment, KIP-455):
// Replicas is the full set (the target replicas first, then the origin
// replicas leaving), Adding those of the target that were not in the
// origin, Removing those of the origin that are not in the target. It is
// what /brokers/topics/<topic> holds (partitions, adding_replicas,
// removing_replicas), so a controller that takes over resumes the
// reassignment from it.
type ReplicaAssignment struct {
	Replicas []int32
	Adding   []int32
	Removing []int32
}

// IsBeingReassigned: some replicas are still being added or removed.
func (a ReplicaAssignment) IsBeingReassigned() bool { return len(a.Adding) > 0 || len(a.Removing) > 0 }

// Origin is the assignment before the reassignment (what a cancellation
// returns to).
func (a ReplicaAssignment) Origin() []int32 { return Without(a.Replicas, a.Adding) }

// Target is the assignment the reassignment ends with.
func (a ReplicaAssignment) Target() []int32 { return Without(a.Replicas, a.Removing) }

// ReassignTo is the assignment while moving from a's origin to target
// (Kafka's ReplicaAssignment.reassignTo): a reassignment that replaces one
// in progress starts from the same origin, so the replicas the first one
// was adding and the second does not want are simply dropped.
func (a ReplicaAssignment) ReassignTo(target []int32) ReplicaAssignment {
	origin := a.Origin()
	full := slices.Clone(target)
	for _, r := range origin {
		if !slices.Contains(full, r) {
			full = append(full, r)
		}
	}
	return ReplicaAssignment{Replicas: full, Adding: Without(full, origin), Removing: Without(full, target)}
}

// Equal compares two assignments, order included.
func (a ReplicaAssignment) Equal(b ReplicaAssignment) bool {
	return slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.Adding, b.Adding) && slices.Equal(a.Removing, b.Removing)
}

// ReassignmentComplete: every target replica is in the ISR (Kafka's
// isReassignmentComplete), or nothing is being reassigned.
func ReassignmentComplete(a ReplicaAssignment, isr []int32) bool {
	if !a.IsBeingReassigned() {
		return true
	}
	for _, r := range a.Target() {
		if !slices.Contains(isr, r) {
			return false
		}
	}
	return true
}

// ReassignPartitionLeader is the leader of a partition whose reassignment
// completes while its leader is leaving (or down): the first target
// replica that is live and in the ISR (Kafka's
// reassignPartitionLeaderElection). The ISR is kept; the leaving replicas
// are taken out of it next.
func ReassignPartitionLeader(target, isr []int32, live Live) (int32, bool) {
	for _, r := range target {
		if live(r) && slices.Contains(isr, r) {
			return r, true
		}
	}
	return NoLeader, false
}

// Without is a's members that are not in b, in a's order (never nil).
func Without(a, b []int32) []int32 {
	out := []int32{}
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}
