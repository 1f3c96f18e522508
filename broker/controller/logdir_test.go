package controller

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

// failDirs makes n answer KAFKA_STORAGE_ERROR for tps from now on, as a
// broker whose log directory holding them failed.
func failDirs(n *node, tps ...TP) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.storageErrors == nil {
		n.storageErrors = map[TP]bool{}
	}
	for _, tp := range tps {
		n.storageErrors[tp] = true
	}
}

// logDirEvents lists the pending log dir event notifications.
func logDirEvents(t *testing.T, st metadata.Store) []string {
	t.Helper()
	children, _, err := st.Children(t.Context(), metadata.LogDirEventNotificationPath)
	require.NoError(t, err)
	return children
}

// offlineDirsOf is the controller's record of broker id's offline
// replicas.
func offlineDirsOf(n *node, id int32) []TP {
	n.ctrl.mu.Lock()
	defer n.ctrl.mu.Unlock()
	if n.ctrl.cc == nil {
		return nil
	}
	return sortedTPs(n.ctrl.cc.offlineDirs[id])
}

// A broker's log directory fails (KIP-112): it writes a log_dir_event
// notification; the controller deletes it, asks the broker for its
// partitions (LeaderAndIsr) and takes the ones it answers
// KAFKA_STORAGE_ERROR for offline: their leadership moves to another ISR
// replica, they leave the ISRs, the metadata lists them offline, and no
// later election nor ISR change picks them, until the broker restarts.
func TestLogDirFailure(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	c := startNode(t, st, 2) // the controller throughout, while 0 and 1 come and go
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	require.True(t, c.ctrl.IsActive())
	ctx := t.Context()
	unclean := map[string]string{"unclean.leader.election.enable": "true"}
	_, err := c.ctrl.CreateTopic(ctx, TopicSpec{Name: "t", Assignment: map[int32][]int32{
		0: {1, 0}, // led by 1
		1: {0, 1}, // 1 a follower
		2: {2, 0}, // not on 1
	}, Config: unclean}, false)
	require.NoError(t, err)
	_, err = c.ctrl.CreateTopic(ctx, TopicSpec{Name: "solo", Assignment: map[int32][]int32{0: {1}}, Config: unclean}, false)
	require.NoError(t, err)
	t0, t1, solo := TP{Topic: "t", Partition: 0}, TP{Topic: "t", Partition: 1}, TP{Topic: "solo", Partition: 0}

	failDirs(b, t0, t1, solo)
	_, err = metadata.CreateLogDirEvent(ctx, b.sess, 1)
	require.NoError(t, err)
	eventually(t, "the notification deleted", func() bool { return len(logDirEvents(t, c.sess)) == 0 })
	for _, n := range []*node{a, b, c} {
		waitCache(t, n, "broker 1's replicas offline", func(s *Snapshot) bool {
			p, q := s.Topics["t"].Partitions, s.Topics["solo"].Partitions
			return p[0].Leader == 0 && slices.Equal(p[0].ISR, []int32{0}) && slices.Equal(p[0].OfflineReplicas, []int32{1}) &&
				p[1].Leader == 0 && slices.Equal(p[1].ISR, []int32{0}) && slices.Equal(p[1].OfflineReplicas, []int32{1}) &&
				p[2].Leader == 2 && len(p[2].OfflineReplicas) == 0 &&
				q[0].Leader == metadata.NoLeader && slices.Equal(q[0].OfflineReplicas, []int32{1})
		})
	}
	require.Equal(t, []TP{solo, t0, t1}, offlineDirsOf(c, 1))
	ps, _ := stateOf(t, c.sess, "t", 0)
	require.Equal(t, metadata.PartitionState{Leader: 0, LeaderEpoch: 1, ISR: []int32{0}, ControllerEpoch: 1}, ps,
		"one write: the election from the ISR leaves the offline replica out")
	ps, _ = stateOf(t, c.sess, "t", 1)
	require.Equal(t, metadata.PartitionState{Leader: 0, LeaderEpoch: 1, ISR: []int32{0}, ControllerEpoch: 1}, ps,
		"the offline follower leaves the ISR")
	ps, _ = stateOf(t, c.sess, "solo", 0)
	require.Equal(t, metadata.PartitionState{Leader: -1, LeaderEpoch: 1, ISR: []int32{1}, ControllerEpoch: 1}, ps,
		"no replica left to lead: offline, the ISR keeps its last member")
	a.mu.Lock()
	sawOffline := false
	for _, r := range a.updates {
		for _, ts := range r.TopicStates {
			for _, p := range ts.PartitionStates {
				sawOffline = sawOffline || (ts.Topic == "t" && p.Partition == 1 && slices.Equal(p.OfflineReplicas, []int32{1}))
			}
		}
	}
	a.mu.Unlock()
	require.True(t, sawOffline, "UpdateMetadata carries the offline replica")

	// No election picks a replica on the failed directory, though its
	// broker is live.
	res, err := c.ctrl.ElectLeaders(ctx, ElectPreferred, []TP{solo})
	require.NoError(t, err)
	require.ErrorIs(t, res[solo], kerr.PreferredLeaderNotAvailable, "the preferred replica is in the ISR, but offline")
	res, err = c.ctrl.ElectLeaders(ctx, ElectUnclean, []TP{solo})
	require.NoError(t, err)
	require.ErrorIs(t, res[solo], kerr.EligibleLeadersNotAvailable)
	// Nor lets it back into an ISR (Kafka's isReplicaOnline check of an
	// AlterPartition).
	ps, version := stateOf(t, c.sess, "t", 1)
	results, err := c.ctrl.AlterPartition(ctx, 0, -1, []ISRChange{{TP: t1, LeaderEpoch: ps.LeaderEpoch, PartitionEpoch: version,
		NewISR: []int32{0, 1}}})
	require.NoError(t, err)
	require.ErrorIs(t, results[0].Err, kerr.IneligibleReplica)
	// Another notification: the broker's partitions are asked again, the
	// offline ones too. One it now serves (qk's broker opens a log it
	// could not before) is back, and leads again; the others stay offline.
	b.mu.Lock()
	delete(b.storageErrors, solo)
	b.mu.Unlock()
	_, err = metadata.CreateLogDirEvent(ctx, b.sess, 1)
	require.NoError(t, err)
	waitCache(t, a, "solo-0 served again", func(s *Snapshot) bool {
		q := s.Topics["solo"].Partitions
		return q[0].Leader == 1 && len(q[0].OfflineReplicas) == 0
	})
	require.Equal(t, []TP{t0, t1}, offlineDirsOf(c, 1))
	require.Empty(t, logDirEvents(t, c.sess))
	failDirs(b, solo)
	_, err = metadata.CreateLogDirEvent(ctx, b.sess, 1)
	require.NoError(t, err)
	waitCache(t, a, "solo-0 offline again", func(s *Snapshot) bool {
		return s.Topics["solo"].Partitions[0].Leader == metadata.NoLeader
	})
	require.Equal(t, []TP{solo, t0, t1}, offlineDirsOf(c, 1))

	// The other replica's broker dies: even with unclean elections
	// allowed, the offline replica is not elected.
	a.stop()
	waitCache(t, c, "broker 0 gone", func(s *Snapshot) bool {
		p := s.Topics["t"].Partitions
		return len(s.Brokers) == 2 && p[0].Leader == metadata.NoLeader && p[1].Leader == metadata.NoLeader && p[2].Leader == 2
	})
	for p := range int32(2) {
		ps, _ = stateOf(t, c.sess, "t", p)
		require.Equal(t, int32(-1), ps.Leader)
	}

	// Broker 1 restarts with its directory back: its offline replicas
	// are forgotten; it leads its only partition again, and (unclean
	// allowed) the partitions left without a leader.
	b.stop()
	eventually(t, "broker 1's offline replicas forgotten with its registration", func() bool { return len(offlineDirsOf(c, 1)) == 0 })
	b = startNode(t, st, 1)
	waitCache(t, c, "broker 1 back", func(s *Snapshot) bool {
		p, q := s.Topics["t"].Partitions, s.Topics["solo"].Partitions
		return q[0].Leader == 1 && len(q[0].OfflineReplicas) == 0 && p[1].Leader == 1 && slices.Equal(p[1].OfflineReplicas, []int32{0})
	})
	require.Empty(t, offlineDirsOf(c, 1))

	// It restarts with the directory still failed: its first LeaderAndIsr
	// answers take the replica offline again, without a notification.
	_, before := stateOf(t, c.sess, "solo", 0)
	b.stop()
	b = startNodeWith(t, st, 1, func(n *node) { n.storageErrors = map[TP]bool{solo: true} })
	waitCache(t, c, "the replica on the still failed directory offline", func(s *Snapshot) bool {
		p, q := s.Topics["t"].Partitions, s.Topics["solo"].Partitions
		_, live := s.Brokers[1]
		return live && q[0].Leader == metadata.NoLeader && slices.Equal(q[0].OfflineReplicas, []int32{1}) && p[1].Leader == 1
	})
	_, after := stateOf(t, c.sess, "solo", 0)
	require.Greater(t, after, before)
	require.Equal(t, []TP{solo}, offlineDirsOf(c, 1))
	require.Empty(t, logDirEvents(t, c.sess))
}

// A notification written while no controller ran is processed (and
// deleted) by the next one, with any that cannot be read.
func TestLogDirEventPendingAtFailover(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	ctx := t.Context()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "f", Assignment: map[int32][]int32{0: {1, 0}, 1: {0, 1}}}, false)
	require.NoError(t, err)
	a.stop()
	b.stop()
	raw, err := st.NewSession()
	require.NoError(t, err)
	defer raw.Close()
	_, err = metadata.CreateLogDirEvent(ctx, raw, 1)
	require.NoError(t, err)
	_, err = raw.Create(ctx, metadata.LogDirEventNotificationPath+"/"+metadata.LogDirEventPrefix, []byte("nope"), metadata.Sequential)
	require.NoError(t, err)
	require.Len(t, logDirEvents(t, raw), 2)

	a = startNode(t, st, 0)
	require.True(t, a.ctrl.IsActive())
	eventually(t, "the pending notifications deleted", func() bool { return len(logDirEvents(t, raw)) == 0 })
	b = startNodeWith(t, st, 1, func(n *node) { n.storageErrors = map[TP]bool{{Topic: "f", Partition: 1}: true} })
	eventually(t, "broker 1's replica of f-1 offline", func() bool {
		return slices.Equal(offlineDirsOf(a, 1), []TP{{Topic: "f", Partition: 1}})
	})
	waitCache(t, a, "the metadata shows it", func(s *Snapshot) bool {
		p := s.Topics["f"].Partitions
		_, live := s.Brokers[1]
		return live && len(p[0].OfflineReplicas) == 0 && slices.Equal(p[1].OfflineReplicas, []int32{1})
	})

	// A notification for a broker that is not live is deleted and changes
	// nothing.
	_, err = metadata.CreateLogDirEvent(ctx, raw, 7)
	require.NoError(t, err)
	eventually(t, "the notification of an unknown broker deleted", func() bool { return len(logDirEvents(t, raw)) == 0 })

	// A new controller learns the offline replica again from the
	// LeaderAndIsr it sends every broker at failover.
	a.stop()
	waitCache(t, b, "broker 1 is controller", func(s *Snapshot) bool { return s.ControllerID == 1 })
	eventually(t, "the new controller knows the offline replica", func() bool {
		return slices.Equal(offlineDirsOf(b, 1), []TP{{Topic: "f", Partition: 1}})
	})
	waitCache(t, b, "the new controller's metadata shows it", func(s *Snapshot) bool {
		p := s.Topics["f"].Partitions
		return p[1].Leader == metadata.NoLeader && slices.Equal(p[1].OfflineReplicas, []int32{0, 1})
	})
}

// A new partition placed on a broker's failed log directory: its first
// LeaderAndIsr is answered KAFKA_STORAGE_ERROR, and the leadership moves
// to the other replica at once.
func TestNewPartitionOnFailedLogDir(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	failDirs(b, TP{Topic: "n", Partition: 0})
	_, err := a.ctrl.CreateTopic(t.Context(), TopicSpec{Name: "n", Assignment: map[int32][]int32{0: {1, 0}, 1: {1, 0}}}, false)
	require.NoError(t, err)
	waitCache(t, a, "n-0 led by broker 0", func(s *Snapshot) bool {
		p := s.Topics["n"].Partitions
		return p[0].Leader == 0 && slices.Equal(p[0].ISR, []int32{0}) && slices.Equal(p[0].OfflineReplicas, []int32{1}) &&
			p[1].Leader == 1 && len(p[1].OfflineReplicas) == 0
	})
	require.Equal(t, []TP{{Topic: "n", Partition: 0}}, offlineDirsOf(a, 1))
}
