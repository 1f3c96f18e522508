//go:build linux

package broker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestControlRequestsFenced: the inter-broker APIs are served only to
// controller connections (the inter-broker listener and a qk controller
// client id) and listed in ApiVersions only for them; a request from an
// older controller epoch than one seen is refused with
// STALE_CONTROLLER_EPOCH, one for an earlier registration of the broker
// with STALE_BROKER_EPOCH, and neither changes anything.
func TestControlRequestsFenced(t *testing.T) {
	b := brokertest.StartBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "fenced", 1, nil)

	// A client: no inter-broker API listed, and one sent closes the
	// connection.
	client := dialRaw(t, b.Addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	avr := kmsg.NewPtrApiVersionsResponse()
	client.roundTrip(av, avr)
	for _, k := range avr.ApiKeys {
		require.NotContains(t, []int16{4, 5, 6, 7}, k.ApiKey, "inter-broker API advertised to a client")
	}
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version = 8
	client.writeFrame(client.request(um))
	require.True(t, client.closed(), "an inter-broker request from a client closes its connection")

	ctrl := dialRaw(t, b.Addr)
	ctrl.clientID = "qk-controller-7"
	avr = kmsg.NewPtrApiVersionsResponse()
	ctrl.roundTrip(av, avr)
	listed := map[int16]bool{}
	for _, k := range avr.ApiKeys {
		listed[k.ApiKey] = true
	}
	for _, k := range []int16{4, 5, 6, 7} {
		require.True(t, listed[k], "API %d listed for the controller", k)
	}

	// The broker's own controller is at epoch 1: epoch 0 is stale.
	lair := kmsg.NewPtrLeaderAndISRRequest()
	lair.Version = 7
	lair.ControllerID, lair.ControllerEpoch, lair.BrokerEpoch = 7, 0, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic = "fenced"
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = 0, 5, 9, []int32{5}, []int32{5}
	ts.PartitionStates = append(ts.PartitionStates, ps)
	lair.TopicStates = append(lair.TopicStates, ts)
	lresp := kmsg.NewPtrLeaderAndISRResponse()
	ctrl.roundTrip(lair, lresp)
	require.Equal(t, kerr.StaleControllerEpoch.Code, lresp.ErrorCode)

	um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 7, 0, -1
	uresp := kmsg.NewPtrUpdateMetadataResponse()
	ctrl.roundTrip(um, uresp)
	require.Equal(t, kerr.StaleControllerEpoch.Code, uresp.ErrorCode)

	// The current epoch, but for an earlier registration of the broker.
	um.ControllerEpoch, um.BrokerEpoch = 1, 1
	ctrl.roundTrip(um, uresp)
	require.Equal(t, kerr.StaleBrokerEpoch.Code, uresp.ErrorCode)

	sr := kmsg.NewPtrStopReplicaRequest()
	sr.Version = 4
	sr.ControllerID, sr.ControllerEpoch, sr.BrokerEpoch = 7, 0, -1
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic = "fenced"
	sp := kmsg.NewStopReplicaRequestTopicPartitionState()
	sp.Partition, sp.Delete = 0, true
	st.PartitionStates = append(st.PartitionStates, sp)
	sr.Topics = append(sr.Topics, st)
	sresp := kmsg.NewPtrStopReplicaResponse()
	ctrl.roundTrip(sr, sresp)
	require.Equal(t, kerr.StaleControllerEpoch.Code, sresp.ErrorCode)

	// Nothing changed: the topic is still served, led by broker 0.
	snap := b.Cache().Snapshot()
	require.Contains(t, snap.Topics, "fenced")
	require.Equal(t, int32(0), snap.Topics["fenced"].Partitions[0].Leader)
	_, err := b.Replicas().Partition("fenced", 0)
	require.NoError(t, err, "the partition is still hosted")
}

// TestNotLeaderOrFollower: Produce and Fetch sent to a broker that does
// not lead the partition get NOT_LEADER_OR_FOLLOWER.
func TestNotLeaderOrFollower(t *testing.T) {
	c := brokertest.StartCluster(t, 2)
	adm := newAdmin(t, c.Addrs()...)
	_, err := adm.CreateTopic(testCtx(t), -1, -1, nil, "led-by-0")
	require.NoError(t, err)
	waitFor(t, 10*time.Second, "the topic on broker 1", func() bool {
		tp := c.Brokers[1].Cache().Snapshot().Topics["led-by-0"]
		return tp != nil && len(tp.Partitions) == 1
	})
	leader := c.Brokers[1].Cache().Snapshot().Topics["led-by-0"].Partitions[0].Leader
	other := c.Brokers[1-leader]

	raw := dialRaw(t, other.Addr)
	got := rawProduce(t, raw, "led-by-0", idempotentBatch(t, -1, -1, 1))
	require.Equal(t, kerr.NotLeaderForPartition.Code, got.ErrorCode)

	fr := kmsg.NewPtrFetchRequest()
	fr.Version, fr.ReplicaID, fr.MaxWaitMillis, fr.MaxBytes = 11, -1, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "led-by-0"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	fresp := kmsg.NewPtrFetchResponse()
	raw.roundTrip(fr, fresp)
	require.Equal(t, kerr.NotLeaderForPartition.Code, fresp.Topics[0].Partitions[0].ErrorCode)
}
