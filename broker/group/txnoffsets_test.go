package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTxnOffsets: a transactional producer's offsets are pending until
// its marker; COMMIT makes them committed unless a later record replaced
// them, ABORT drops them, and a pending partition is unstable.
func TestTxnOffsets(t *testing.T) {
	tp0, tp1 := TopicPartition{Topic: "in", Partition: 0}, TopicPartition{Topic: "in", Partition: 1}
	off := func(o int64) Offset {
		return Offset{Offset: o, LeaderEpoch: -1, CommitTimestamp: o, ExpireTimestamp: -1}
	}
	newGroup := func() *Group { return New("g", Config{}, time.Unix(0, 0)) }

	t.Run("commit", func(t *testing.T) {
		g := newGroup()
		g.SetOffsetAt(tp0, off(5), 10)
		pend := map[TopicPartition]Offset{tp0: off(7), tp1: off(3)}
		g.AddPendingTxnOffsets(1, pend)
		require.True(t, g.UnstableOffset(tp0))
		require.True(t, g.UnstableOffset(tp1))
		require.Equal(t, off(5), g.Offsets()[tp0], "pending is not committed")
		g.TxnOffsetsAppended(1, pend, 20)
		require.True(t, g.CompleteTxn(1, true))
		require.Equal(t, off(7), g.Offsets()[tp0])
		require.Equal(t, off(3), g.Offsets()[tp1])
		require.False(t, g.UnstableOffset(tp0))
		require.False(t, g.HasPendingTxnOffsets(1))
		require.False(t, g.CompleteTxn(1, true), "a second marker has nothing to apply")
	})
	t.Run("abort", func(t *testing.T) {
		g := newGroup()
		g.SetOffsetAt(tp0, off(5), 10)
		pend := map[TopicPartition]Offset{tp0: off(7)}
		g.AddPendingTxnOffsets(1, pend)
		g.TxnOffsetsAppended(1, pend, 20)
		require.True(t, g.CompleteTxn(1, false))
		require.Equal(t, off(5), g.Offsets()[tp0])
		require.False(t, g.UnstableOffset(tp0))
	})
	t.Run("a later plain commit wins", func(t *testing.T) {
		g := newGroup()
		pend := map[TopicPartition]Offset{tp0: off(7)}
		g.AddPendingTxnOffsets(1, pend)
		g.TxnOffsetsAppended(1, pend, 20)
		g.SetOffsetAt(tp0, off(9), 21) // an OffsetCommit after the transactional batch
		g.CompleteTxn(1, true)
		require.Equal(t, off(9), g.Offsets()[tp0])
	})
	t.Run("an earlier plain commit loses", func(t *testing.T) {
		g := newGroup()
		g.SetOffsetAt(tp0, off(9), 19)
		pend := map[TopicPartition]Offset{tp0: off(7)}
		g.AddPendingTxnOffsets(1, pend)
		g.TxnOffsetsAppended(1, pend, 20)
		g.CompleteTxn(1, true)
		require.Equal(t, off(7), g.Offsets()[tp0])
	})
	t.Run("failed append", func(t *testing.T) {
		g := newGroup()
		pend := map[TopicPartition]Offset{tp0: off(7)}
		g.AddPendingTxnOffsets(1, pend)
		g.FailPendingTxnOffsets(1, pend)
		require.False(t, g.UnstableOffset(tp0))
		require.False(t, g.HasPendingTxnOffsets(1))
	})
	t.Run("not appended is not committed", func(t *testing.T) {
		g := newGroup()
		g.AddPendingTxnOffsets(1, map[TopicPartition]Offset{tp0: off(7)})
		g.CompleteTxn(1, true)
		_, ok := g.Offsets()[tp0]
		require.False(t, ok)
	})
	t.Run("producers apart", func(t *testing.T) {
		g := newGroup()
		a, b := map[TopicPartition]Offset{tp0: off(7)}, map[TopicPartition]Offset{tp1: off(8)}
		g.AddPendingTxnOffsets(1, a)
		g.AddPendingTxnOffsets(2, b)
		g.TxnOffsetsAppended(1, a, 20)
		g.TxnOffsetsAppended(2, b, 21)
		require.Equal(t, []int64{1, 2}, g.PendingTxnProducers())
		g.CompleteTxn(2, false)
		require.True(t, g.UnstableOffset(tp0))
		require.False(t, g.UnstableOffset(tp1))
		g.CompleteTxn(1, true)
		require.Equal(t, map[TopicPartition]Offset{tp0: off(7)}, g.Offsets())
	})
}

// TestCheckTxnCommit: KIP-447's checks of a TxnOffsetCommit.
func TestCheckTxnCommit(t *testing.T) {
	now := time.Unix(0, 0)
	g := New("g", Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, MaxSize: 10}, now)
	require.Nil(t, g.CheckTxnCommit("", nil, -1), "no group metadata: any group")
	require.Equal(t, kerr.UnknownMemberID, g.CheckTxnCommit("m", nil, -1))
	require.Equal(t, kerr.IllegalGeneration, g.CheckTxnCommit("", nil, 3))
	g.SetDead(now)
	require.Equal(t, kerr.CoordinatorNotAvailable, g.CheckTxnCommit("", nil, -1))
}
