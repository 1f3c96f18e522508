package log

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLeaderEpochCache(t *testing.T) {
	var saved [][]EpochEntry
	c := NewLeaderEpochCache(nil, func(e []EpochEntry) error { saved = append(saved, e); return nil })
	e := func(epoch int32, start int64) EpochEntry { return EpochEntry{Epoch: epoch, StartOffset: start} }

	changed, err := c.Assign(0, 0)
	require.NoError(t, err)
	require.True(t, changed)
	changed, _ = c.Assign(0, 5)
	require.False(t, changed, "same epoch, later offset: no change")
	c.Assign(-1, 7) // no epoch: ignored
	c.Assign(2, 10)
	c.Assign(4, 20)
	require.Equal(t, []EpochEntry{e(0, 0), e(2, 10), e(4, 20)}, c.Entries())
	require.Len(t, saved, 3, "every change persisted")

	// A lower epoch, or an earlier start, removes what it contradicts.
	c.Assign(3, 15)
	require.Equal(t, []EpochEntry{e(0, 0), e(2, 10), e(3, 15)}, c.Entries())
	c.Assign(3, 12)
	require.Equal(t, []EpochEntry{e(0, 0), e(2, 10), e(3, 12)}, c.Entries())
	c.Assign(5, 10)
	require.Equal(t, []EpochEntry{e(0, 0), e(5, 10)}, c.Entries())
	c.Assign(2, 10)
	c.Assign(3, 12)
	c.Assign(6, 30)

	for _, tc := range []struct {
		req        int32
		wantEpoch  int32
		wantOffset int64
	}{
		{UndefinedEpoch, UndefinedEpoch, UndefinedEpochOffset},
		{0, 0, 10},
		{1, 0, 10}, // unknown: the epoch below, ended where the next began
		{2, 2, 12},
		{3, 3, 30},
		{5, 3, 30},
		{6, 6, 42}, // latest: the log end offset
		{7, UndefinedEpoch, UndefinedEpochOffset},
	} {
		epoch, off := c.EndOffsetFor(tc.req, 42)
		require.Equal(t, tc.wantEpoch, epoch, "epoch for %d", tc.req)
		require.Equal(t, tc.wantOffset, off, "offset for %d", tc.req)
	}
	require.Equal(t, int32(2), c.EpochForOffset(11))
	require.Equal(t, UndefinedEpoch, NewLeaderEpochCache(nil, nil).EpochForOffset(3))

	require.NoError(t, c.TruncateFromEnd(12))
	require.Equal(t, []EpochEntry{e(0, 0), e(2, 10)}, c.Entries())
	require.NoError(t, c.TruncateFromStart(11))
	require.Equal(t, []EpochEntry{e(2, 11)}, c.Entries(), "the epoch covering the new start moves up")
	n := len(saved)
	require.NoError(t, c.TruncateFromStart(11))
	require.Len(t, saved, n, "no change, nothing written")

	// Below the first epoch: the requested epoch, ending where the first began.
	epoch, off := c.EndOffsetFor(1, 50)
	require.Equal(t, int32(1), epoch)
	require.Equal(t, int64(11), off)

	require.NoError(t, c.Clear())
	_, ok := c.LatestEpoch()
	require.False(t, ok)

	// Damaged files: out-of-order entries are dropped as assign would.
	c2 := NewLeaderEpochCache([]EpochEntry{e(1, 0), e(3, 10), e(2, 20), e(4, 5)}, nil)
	require.Equal(t, []EpochEntry{e(1, 0), e(4, 5)}, c2.Entries())
}
