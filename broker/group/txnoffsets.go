package group

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447), as
// Kafka's GroupMetadata keeps them: the offsets a transactional producer
// commits are pending, per producer id, from the moment they are
// accepted until the transaction's marker reaches the group's offsets
// partition. COMMIT makes them the group's committed offsets, unless an
// offset written later to the log (a plain OffsetCommit appended after
// the transactional one) already replaced them; ABORT drops them. While
// a partition has a pending offset, OffsetFetch with require_stable
// answers UNSTABLE_OFFSET_COMMIT for it.
//
// The order that decides "written later" is the log's: a committed
// offset remembers the offset of the record that carried it (offsetAt),
// and a pending one the offset of its batch once appended.

// pendingTxnOffset is one partition's offset of an open transaction.
type pendingTxnOffset struct {
	offset Offset
	// logOffset is the log offset of the batch that carried it; -1
	// until the append succeeded (it cannot be committed before).
	logOffset int64
}

// SetOffsetAt records a committed offset carried by the record at
// logOffset in the offsets partition (-1: unknown, older than anything).
func (g *Group) SetOffsetAt(tp TopicPartition, o Offset, logOffset int64) {
	g.offsets[tp] = o
	if g.offsetAt == nil {
		g.offsetAt = map[TopicPartition]int64{}
	}
	g.offsetAt[tp] = logOffset
}

// CheckTxnCommit validates a TxnOffsetCommit as Kafka's
// GroupCoordinator.handleTxnCommitOffsets does. Unlike OffsetCommit, no
// generation is needed: an empty member id and generation -1 (a producer
// that does not pass its consumer's group metadata) commit to any group;
// with KIP-447's fields the member, its instance and generation are
// checked. A group that does not exist yet is created by the caller.
func (g *Group) CheckTxnCommit(memberID string, instanceID *string, generation int32) *kerr.Error {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable
	}
	if instanceID != nil && g.staticFenced(memberID, instanceID) {
		return kerr.FencedInstanceID
	}
	if memberID != "" {
		if _, ok := g.members[memberID]; !ok {
			return kerr.UnknownMemberID
		}
	}
	if generation >= 0 && generation != g.generation {
		return kerr.IllegalGeneration
	}
	return nil
}

// AddPendingTxnOffsets records a transactional producer's offsets as
// pending, before their batch is appended.
func (g *Group) AddPendingTxnOffsets(producerID int64, offsets map[TopicPartition]Offset) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]map[TopicPartition]pendingTxnOffset{}
	}
	m := g.txnOffsets[producerID]
	if m == nil {
		m = map[TopicPartition]pendingTxnOffset{}
		g.txnOffsets[producerID] = m
	}
	for tp, o := range offsets {
		m[tp] = pendingTxnOffset{offset: o, logOffset: -1}
	}
}

// TxnOffsetsAppended marks the pending offsets of tps, from producerID,
// as stored in the batch at logOffset. An offset the producer replaced
// meanwhile (a later TxnOffsetCommit of the same partition) is left
// alone only if it is not this one: the latest accepted always wins.
func (g *Group) TxnOffsetsAppended(producerID int64, offsets map[TopicPartition]Offset, logOffset int64) {
	m := g.txnOffsets[producerID]
	for tp, o := range offsets {
		if p, ok := m[tp]; ok && p.logOffset < 0 && p.offset.Offset == o.Offset && p.offset.CommitTimestamp == o.CommitTimestamp {
			p.logOffset = logOffset
			m[tp] = p
		}
	}
}

// FailPendingTxnOffsets drops pending offsets whose append failed.
func (g *Group) FailPendingTxnOffsets(producerID int64, offsets map[TopicPartition]Offset) {
	m := g.txnOffsets[producerID]
	for tp, o := range offsets {
		if p, ok := m[tp]; ok && p.logOffset < 0 && p.offset.Offset == o.Offset && p.offset.CommitTimestamp == o.CommitTimestamp {
			delete(m, tp)
		}
	}
	if len(m) == 0 {
		delete(g.txnOffsets, producerID)
	}
}

// CompleteTxn applies the marker of producerID's transaction: COMMIT
// makes its appended offsets committed where no later record has
// replaced them, ABORT drops them. It reports whether the producer had
// pending offsets here.
func (g *Group) CompleteTxn(producerID int64, commit bool) bool {
	m, ok := g.txnOffsets[producerID]
	if !ok {
		return false
	}
	delete(g.txnOffsets, producerID)
	if commit {
		g.commitTxnOffsets(m)
	}
	return true
}

// commitTxnOffsets makes a committed transaction's appended offsets the
// group's, where no later record has replaced them.
func (g *Group) commitTxnOffsets(m map[TopicPartition]pendingTxnOffset) {
	for _, tp := range slices.SortedFunc(maps.Keys(m), compareTopicPartition) {
		p := m[tp]
		if p.logOffset < 0 {
			continue // never stored: nothing in the log to commit
		}
		if at, ok := g.offsetAt[tp]; ok && at > p.logOffset {
			continue
		}
		g.SetOffsetAt(tp, p.offset, p.logOffset)
	}
}

// HasPendingTxnOffsets reports whether producerID has offsets pending in
// this group.
func (g *Group) HasPendingTxnOffsets(producerID int64) bool {
	_, ok := g.txnOffsets[producerID]
	return ok
}

// PendingTxnProducers are the producer ids with offsets pending here.
func (g *Group) PendingTxnProducers() []int64 {
	return slices.Sorted(maps.Keys(g.txnOffsets))
}

// UnstableOffset reports whether tp has a transactional offset pending,
// which OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT.
func (g *Group) UnstableOffset(tp TopicPartition) bool {
	for _, m := range g.txnOffsets {
		if _, ok := m[tp]; ok {
			return true
		}
	}
	return false
}

func compareTopicPartition(a, b TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition - b.Partition)
}
