package group

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCoordinatorLoading: while the offsets partition of a group loads,
// every group request is answered COORDINATOR_LOAD_IN_PROGRESS (and
// ListGroups says it is loading); for a partition not led here the
// answer is NOT_COORDINATOR. The partition is marked loading by hand, as
// OnLeader does before its loader replays the log.
func TestCoordinatorLoading(t *testing.T) {
	c := NewCoordinator(CoordinatorConfig{Partitions: 1})
	defer c.Close()
	const id = "g"

	requireAll := func(want *kerr.Error) {
		t.Helper()
		require.ErrorIs(t, c.Check(id), want)
		var joined JoinResult
		c.Join(id, JoinRequest{ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}},
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}, func(r JoinResult) { joined = r })
		require.Equal(t, want, joined.Err)
		require.Equal(t, int32(-1), joined.Generation)
		var synced SyncResult
		c.Sync(id, SyncRequest{MemberID: "m", Generation: 1}, func(r SyncResult) { synced = r })
		require.Equal(t, want, synced.Err)
		require.ErrorIs(t, c.Heartbeat(id, "m", nil, 1), want)
		_, err := c.Leave(id, []LeaveMember{{MemberID: "m"}})
		require.ErrorIs(t, err, want)
		_, err = c.CommitOffsets(id, "", nil, -1, -1, []Commit{{TopicPartition: TopicPartition{Topic: "t"}, Offset: 1}})
		require.ErrorIs(t, err, want)
		_, err = c.FetchOffsets(id, nil)
		require.ErrorIs(t, err, want)
		_, _, err = c.Describe(id)
		require.ErrorIs(t, err, want)
		require.ErrorIs(t, c.DeleteGroup(id), want)
		_, err = c.DeleteOffsets(id, []TopicPartition{{Topic: "t"}})
		require.ErrorIs(t, err, want)
	}

	requireAll(kerr.NotCoordinator)
	groups, loading := c.ListGroups()
	require.Empty(t, groups)
	require.False(t, loading)

	c.mu.Lock()
	c.parts[c.PartitionFor(id)] = &offsetsPartition{epoch: 1, loading: true}
	c.mu.Unlock()
	requireAll(kerr.CoordinatorLoadInProgress)
	groups, loading = c.ListGroups()
	require.Empty(t, groups)
	require.True(t, loading)
	c.ExpireOffsets() // skips the loading partition (no log to write to)

	c.mu.Lock()
	require.Empty(t, c.groups, "a refused request left a group behind")
	c.mu.Unlock()
}

// TestCoordinatorUnloadAnswersWaiting: a join still waiting in its group
// when the coordinator resigns the group's partition, or closes, is
// answered NOT_COORDINATOR right away, so the client looks for the new
// coordinator instead of waiting out its request.
func TestCoordinatorUnloadAnswersWaiting(t *testing.T) {
	for _, how := range []string{"resign", "close"} {
		t.Run(how, func(t *testing.T) {
			c := NewCoordinator(CoordinatorConfig{Partitions: 1, Group: Config{
				InitialRebalanceDelay: time.Hour, MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, MaxSize: 10,
			}})
			defer c.Close()
			c.mu.Lock()
			c.parts[0] = &offsetsPartition{epoch: 1}
			c.mu.Unlock()

			answered := make(chan JoinResult, 1)
			c.Join("g", JoinRequest{ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}},
				SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second, NewMemberID: "m-1"},
				func(r JoinResult) { answered <- r })
			select {
			case r := <-answered:
				t.Fatalf("answered at once: %+v", r)
			default:
			}

			if how == "resign" {
				c.OnResign(0)
			} else {
				c.Close()
			}
			select {
			case r := <-answered:
				require.Equal(t, kerr.NotCoordinator, r.Err)
				require.Equal(t, int32(-1), r.Generation)
				require.Equal(t, "m-1", r.MemberID)
			default:
				t.Fatal("the waiting join was not answered")
			}
			c.mu.Lock()
			require.Empty(t, c.outbox, "no answer left queued")
			c.mu.Unlock()
		})
	}
}
