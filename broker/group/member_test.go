package group

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestFailWaiting(t *testing.T) {
	var join []JoinResult
	var sync []SyncResult
	m := &Member{
		ID:     "m-1",
		joinCB: func(r JoinResult) { join = append(join, r) },
		syncCB: func(r SyncResult) { sync = append(sync, r) },
	}
	m.failWaiting(kerr.FencedInstanceID)
	require.Equal(t, []JoinResult{{Err: kerr.FencedInstanceID, MemberID: "m-1", Generation: -1}}, join)
	require.Equal(t, []SyncResult{{Err: kerr.FencedInstanceID}}, sync)
	require.Nil(t, m.joinCB, "a join is answered once")
	require.Nil(t, m.syncCB, "a sync is answered once")

	m.failWaiting(kerr.UnknownMemberID)
	require.Len(t, join, 1, "nothing waits any more")
	require.Len(t, sync, 1)
}
