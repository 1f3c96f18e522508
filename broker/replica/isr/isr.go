// Package isr holds the replication rules of a partition, without locks
// or I/O, as Kafka's Partition and Replica keep them: on the leader, each
// follower's fetch state (its log end offset, when it last caught up), the
// high watermark (the smallest log end offset in the ISR, never moving
// back), which followers fall out of the ISR (replica.lag.time.max.ms
// without catching up) and which may join it (caught up to the high
// watermark within the current leader epoch); on a follower, its high
// watermark and where it truncates after a leader change (the end of its
// last epoch in common with the leader, by leader epochs, not its high
// watermark).
//
// broker/replica drives it: under a partition's lock it feeds in appends,
// follower fetches and clock ticks, and carries out what comes back
// (waking delayed fetches and produces, asking the controller for an ISR
// change).
package isr

import (
	"errors"
	"fmt"
	"slices"
)

// ErrNotReplica: the broker is not an assigned replica of the partition.
var ErrNotReplica = errors.New("isr: not a replica of the partition")

// Follower is the leader's view of one follower (Kafka's Replica).
type Follower struct {
	ID int32
	// LEO is the follower's log end offset: the offset of its last fetch
	// (-1 until it fetched in this leader epoch).
	LEO int64
	// LastCaughtUpMs is the last time the follower had every record the
	// leader had: its fetch reached the leader's LEO, or reached the LEO
	// the leader had at its previous fetch.
	LastCaughtUpMs int64
	// LastFetchMs and LastFetchLeaderLEO are the time of its last fetch
	// and the leader's LEO then.
	LastFetchMs        int64
	LastFetchLeaderLEO int64
}

// State is what a leader starts from: its LeaderAndIsr and its log.
type State struct {
	ID       int32
	Epoch    int32
	Replicas []int32
	ISR      []int32
	LEO      int64
	HW       int64
}

// Leader is a partition's replication state on its leader.
type Leader struct {
	id       int32
	epoch    int32
	replicas []int32
	isr      []int32
	// pending is an ISR change asked of the controller and not yet
	// committed. Until it is, the high watermark counts the union of the
	// committed and the pending ISR (Kafka's maximalIsr): a joining
	// follower holds it back at once, a leaving one only once committed.
	pending          []int32
	epochStartOffset int64
	leo, hw          int64
	followers        map[int32]*Follower
}

// NewLeader starts leading at now: followers in the ISR count as caught
// up now (they were in sync with the previous leader), the others never;
// their log end offsets are unknown until they fetch. The leader epoch
// starts at the log end offset.
func NewLeader(s State, nowMs int64) *Leader {
	l := &Leader{id: s.ID, epoch: s.Epoch, replicas: slices.Clone(s.Replicas), isr: slices.Clone(s.ISR),
		epochStartOffset: s.LEO, leo: s.LEO, hw: min(s.HW, s.LEO), followers: map[int32]*Follower{}}
	for _, r := range s.Replicas {
		if r == s.ID {
			continue
		}
		f := &Follower{ID: r, LEO: -1, LastFetchLeaderLEO: -1}
		if slices.Contains(s.ISR, r) {
			f.LastCaughtUpMs = nowMs
		}
		l.followers[r] = f
	}
	l.maybeAdvanceHW()
	return l
}

// HW is the high watermark; LEO the leader's log end offset.
func (l *Leader) HW() int64  { return l.hw }
func (l *Leader) LEO() int64 { return l.leo }

// ISR is the committed ISR.
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// Pending is the ISR change in flight, nil when none.
func (l *Leader) Pending() []int32 { return slices.Clone(l.pending) }

// EpochStartOffset is where the leader's epoch began.
func (l *Leader) EpochStartOffset() int64 { return l.epochStartOffset }

// Followers is how many followers the partition has.
func (l *Leader) Followers() int { return len(l.followers) }

// Follower returns the state of follower id.
func (l *Leader) Follower(id int32) (Follower, bool) {
	f, ok := l.followers[id]
	if !ok {
		return Follower{}, false
	}
	return *f, true
}

// Appended records the leader's new log end offset after an append; true
// when the high watermark advanced (a partition whose ISR is the leader
// alone commits at once).
func (l *Leader) Appended(leo int64) bool {
	if leo > l.leo {
		l.leo = leo
	}
	return l.maybeAdvanceHW()
}

// Truncated records a lower log end offset (only a leader that has not
// appended in its epoch is truncated, by a deletion of records): the high
// watermark follows it down, as the log's does.
func (l *Leader) Truncated(leo int64) {
	l.leo = leo
	l.hw = min(l.hw, leo)
}

// FollowerFetched records a fetch from follower id at fetchOffset (its
// log end offset) at now, as Kafka's Replica.updateFetchState: caught up
// if it reached the leader's LEO, or the LEO the leader had at its
// previous fetch (then as of that fetch). It returns whether the high
// watermark advanced.
func (l *Leader) FollowerFetched(id int32, fetchOffset, nowMs int64) (bool, error) {
	f, ok := l.followers[id]
	if !ok {
		return false, fmt.Errorf("%w: broker %d (replicas %v)", ErrNotReplica, id, l.replicas)
	}
	switch {
	case fetchOffset >= l.leo:
		f.LastCaughtUpMs = max(f.LastCaughtUpMs, nowMs)
	case fetchOffset >= f.LastFetchLeaderLEO && f.LastFetchLeaderLEO >= 0:
		f.LastCaughtUpMs = max(f.LastCaughtUpMs, f.LastFetchMs)
	}
	f.LEO = fetchOffset
	f.LastFetchLeaderLEO = l.leo
	f.LastFetchMs = nowMs
	return l.maybeAdvanceHW(), nil
}

// maximal is the ISR the high watermark counts: committed and pending.
func (l *Leader) maximal() []int32 {
	out := slices.Clone(l.isr)
	for _, r := range l.pending {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// maybeAdvanceHW raises the high watermark to the smallest log end offset
// in the (maximal) ISR; it never lowers it.
func (l *Leader) maybeAdvanceHW() bool {
	hw := l.leo
	for _, r := range l.maximal() {
		if r == l.id {
			continue
		}
		f, ok := l.followers[r]
		if !ok {
			continue
		}
		hw = min(hw, max(f.LEO, 0))
	}
	if hw > l.hw {
		l.hw = hw
		return true
	}
	return false
}

// InSync tells whether follower id may join the ISR: it has reached the
// high watermark and fetched within this leader epoch (its log end offset
// is at least where the epoch began), Kafka's isFollowerInSync.
func (l *Leader) InSync(id int32) bool {
	f, ok := l.followers[id]
	return ok && f.LEO >= l.hw && f.LEO >= l.epochStartOffset
}

// ToExpand lists the followers outside the ISR that may join it (none
// while an ISR change is pending: one change at a time, as Kafka).
func (l *Leader) ToExpand() []int32 {
	if l.pending != nil {
		return nil
	}
	var out []int32
	for _, r := range l.replicas {
		if r != l.id && !slices.Contains(l.isr, r) && l.InSync(r) {
			out = append(out, r)
		}
	}
	return out
}

// ToShrink lists the ISR followers out of sync at now (Kafka's
// getOutOfSyncReplicas): not at the leader's LEO, and not caught up for
// more than maxLagMs. Kafka checks every maxLagMs/2, so a stalled follower
// leaves within 1.5 × maxLagMs. None while an ISR change is pending.
func (l *Leader) ToShrink(nowMs, maxLagMs int64) []int32 {
	if l.pending != nil {
		return nil
	}
	var out []int32
	for _, r := range l.isr {
		f, ok := l.followers[r]
		if !ok || r == l.id {
			continue
		}
		if f.LEO != l.leo && nowMs-f.LastCaughtUpMs > maxLagMs {
			out = append(out, r)
		}
	}
	return out
}

// Propose records an ISR change asked of the controller.
func (l *Leader) Propose(isr []int32) {
	l.pending = slices.Clone(isr)
	l.maybeAdvanceHW()
}

// Commit applies an ISR the controller accepted (or a LeaderAndIsr in the
// same leader epoch brought): the pending change ends, and the high
// watermark may advance (a slow follower that left no longer holds it).
func (l *Leader) Commit(isr []int32) bool {
	l.isr = slices.Clone(isr)
	l.pending = nil
	return l.maybeAdvanceHW()
}

// Abort ends a pending change the controller refused; the high watermark
// may advance (a joining follower no longer holds it).
func (l *Leader) Abort() bool {
	l.pending = nil
	return l.maybeAdvanceHW()
}

// FollowerHW is a follower's high watermark: the leader's, but never past
// what the follower has.
func FollowerHW(leaderHW, followerLEO int64) int64 { return min(leaderHW, followerLEO) }

// EpochEnd is a log's answer to OffsetForLeaderEpoch for some epoch: the
// largest epoch it has at or below the one asked, and where that epoch
// ends (the next epoch's start, or the log end). Epoch -1: the log has no
// epoch at or below it.
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// Truncation is where a follower truncates after asking the leader.
type Truncation struct {
	Offset int64
	// Done is false when the follower must ask again, for the epoch it
	// has below the one the leader answered.
	Done bool
}

// TruncateTo is Kafka's rule (AbstractFetcherThread.getOffsetTruncationState)
// for a follower whose log ends at followerLEO, after the leader answered
// leader for the follower's latest epoch: if the follower has the
// leader's epoch, it truncates to the smaller end of that epoch (the
// leader's or its own); if not, it truncates to the end of its largest
// epoch below the leader's and asks again. own is the follower's answer
// for the leader's epoch. A leader with no epoch at or below the one asked
// (-1) makes the follower truncate to the leader's end offset; an unknown
// answer (end offset -1) leaves only the high watermark, the rule before
// leader epochs (the caller passes it).
func TruncateTo(leader, own EpochEnd, followerLEO, followerHW int64) Truncation {
	switch {
	case leader.EndOffset < 0:
		return Truncation{Offset: min(followerHW, followerLEO), Done: true}
	case leader.Epoch < 0:
		return Truncation{Offset: min(leader.EndOffset, followerLEO), Done: true}
	case own.Epoch != leader.Epoch:
		return Truncation{Offset: min(own.EndOffset, followerLEO), Done: false}
	}
	return Truncation{Offset: min(own.EndOffset, leader.EndOffset, followerLEO), Done: true}
}
