//go:build linux

package broker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/group"
)

// TestGroupSyncWaitsForReplication: a SyncGroup's assignments are group
// metadata written to __consumer_offsets, and, as Kafka's, the answer
// waits for the partition's ISR to take them. With the offsets
// partition's followers gone and min.insync.replicas=2, the leader cannot
// commit the write: the sync is answered COORDINATOR_NOT_AVAILABLE
// instead of an assignment that another coordinator would not know, and
// the group rebalances (REBALANCE_IN_PROGRESS to the heartbeat).
func TestGroupSyncWaitsForReplication(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"),
		brokertest.WithConfig("min.insync.replicas", "2"), brokertest.WithConfig("offsets.commit.timeout.ms", "1000"),
		brokertest.WithConfig("group.initial.rebalance.delay.ms", "0"))
	const id = "replicated-sync"
	cl := newClient(t, c.Addrs())
	// The offsets topic, created by the first FindCoordinator, with three
	// replicas in sync everywhere.
	waitFor(t, 20*time.Second, "a coordinator for the group", func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = id
		resp, err := req.RequestWith(testCtx(t), cl)
		return err == nil && resp.ErrorCode == 0
	})
	p := group.PartitionFor(id, 50)
	var coordinator *brokertest.Broker
	waitFor(t, 20*time.Second, "the group's offsets partition with three in sync", func() bool {
		off := c.Brokers[0].Cache().Snapshot().Topics[group.Topic]
		if off == nil || len(off.Partitions[p].ISR) != 3 {
			return false
		}
		for _, b := range c.Brokers {
			if b.ID == off.Partitions[p].Leader {
				coordinator = b
			}
		}
		return coordinator != nil
	})
	raw := dialRaw(t, coordinator.Addr)
	join := func() *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 3 // before KIP-394: no MEMBER_ID_REQUIRED round
		req.Group, req.ProtocolType = id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		pr := kmsg.NewJoinGroupRequestProtocol()
		pr.Name, pr.Metadata = "range", []byte{0}
		req.Protocols = append(req.Protocols, pr)
		resp := kmsg.NewPtrJoinGroupResponse()
		raw.roundTrip(req, resp)
		return resp
	}
	// The metadata cache can name the leader before that broker has
	// taken the LeaderAndIsr and loaded the partition's groups: until it
	// has, it answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS,
	// and a join it refuses leaves nothing behind.
	var joined *kmsg.JoinGroupResponse
	waitFor(t, 15*time.Second, "the coordinator to accept the join", func() bool {
		joined = join()
		switch joined.ErrorCode {
		case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code:
			return false
		}
		return true
	})
	require.Equal(t, int16(0), joined.ErrorCode, "%v", kerr.ErrorForCode(joined.ErrorCode))

	// The followers go: the controller takes them out of the ISR, and
	// the leader alone is below min.insync.replicas.
	for _, b := range c.Brokers {
		if b != coordinator {
			b.Stop()
		}
	}
	waitFor(t, 15*time.Second, "the offsets partition's ISR of the leader alone", func() bool {
		return len(coordinator.Cache().Snapshot().Topics[group.Topic].Partitions[p].ISR) == 1
	})
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version = 3
	sync.Group, sync.Generation, sync.MemberID = id, joined.Generation, joined.MemberID
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = joined.MemberID, []byte("assignment")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	synced := kmsg.NewPtrSyncGroupResponse()
	raw.roundTrip(sync, synced)
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, synced.ErrorCode, "%v", kerr.ErrorForCode(synced.ErrorCode))
	require.Empty(t, synced.MemberAssignment)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 3
	hb.Group, hb.Generation, hb.MemberID = id, joined.Generation, joined.MemberID
	hbr := kmsg.NewPtrHeartbeatResponse()
	raw.roundTrip(hb, hbr)
	require.Equal(t, kerr.RebalanceInProgress.Code, hbr.ErrorCode, "%v", kerr.ErrorForCode(hbr.ErrorCode))
}
