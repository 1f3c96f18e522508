package controller

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

// node is one broker's controller half: a session, a cache and a
// controller, as broker.Server wires them.
type node struct {
	id      int32
	sess    metadata.Store
	cache   *Cache
	ctrl    *Controller
	changes chan [2]*Snapshot
}

func startNode(t *testing.T, st *embedded.Store, id int32) *node {
	t.Helper()
	ctx := t.Context()
	sess, err := st.NewSession()
	require.NoError(t, err)
	require.NoError(t, metadata.EnsureKafkaPaths(ctx, sess))
	_, err = Register(ctx, sess, Registration{BrokerID: id, Now: time.Now(),
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id}}})
	require.NoError(t, err)
	lg := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	n := &node{id: id, sess: sess, changes: make(chan [2]*Snapshot, 100)}
	n.cache = NewCache(CacheConfig{Store: sess, Logger: lg, OnChange: func(o, nw *Snapshot) {
		select {
		case n.changes <- [2]*Snapshot{o, nw}:
		default:
		}
	}})
	require.NoError(t, n.cache.Start(ctx))
	n.ctrl = New(Config{BrokerID: id, Store: sess, Cache: n.cache, Logger: lg})
	require.NoError(t, n.ctrl.Start(ctx))
	t.Cleanup(n.stop)
	return n
}

func (n *node) stop() {
	n.ctrl.Close()
	n.cache.Close()
	n.sess.Close()
}

func TestTopicLifecycle(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	n := startNode(t, st, 0)
	require.True(t, n.ctrl.IsActive())
	require.Equal(t, int32(1), n.ctrl.Epoch())
	ctx := t.Context()

	created, err := n.ctrl.CreateTopic(ctx, TopicSpec{Name: "orders", NumPartitions: 3, ReplicationFactor: 1,
		Config: map[string]string{"retention.ms": "1000"}}, false)
	require.NoError(t, err)
	require.Len(t, created.Partitions, 3)
	require.NotEqual(t, [16]byte{}, created.ID)
	snap := n.cache.Snapshot()
	got, ok := snap.TopicByID(created.ID)
	require.True(t, ok)
	require.Equal(t, "orders", got.Name)
	require.Equal(t, map[string]string{"retention.ms": "1000"}, got.Config)
	for i, p := range got.Partitions {
		require.Equal(t, int32(i), p.Partition)
		require.Equal(t, []int32{0}, p.Replicas)
		require.Equal(t, int32(0), p.Leader)
		require.Equal(t, int32(0), p.LeaderEpoch)
		require.Equal(t, []int32{0}, p.ISR)
	}

	// The store holds Kafka's nodes.
	data, _, err := n.sess.Get(ctx, metadata.PartitionStatePath("orders", 2))
	require.NoError(t, err)
	ps, err := metadata.UnmarshalPartitionState(data)
	require.NoError(t, err)
	require.Equal(t, int32(1), ps.ControllerEpoch)

	_, err = n.ctrl.CreateTopic(ctx, TopicSpec{Name: "orders", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, ErrTopicExists)
	_, err = n.ctrl.CreateTopic(ctx, TopicSpec{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.NoError(t, err)
	_, err = n.ctrl.CreateTopic(ctx, TopicSpec{Name: "a_b", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, ErrTopicCollision)
	_, err = n.ctrl.CreateTopic(ctx, TopicSpec{Name: "v", NumPartitions: 2, ReplicationFactor: 1}, true)
	require.NoError(t, err)
	require.NotContains(t, n.cache.Snapshot().Topics, "v", "validate only")

	require.NoError(t, n.ctrl.CreatePartitions(ctx, "orders", 5, nil, false))
	require.Len(t, n.cache.Snapshot().Topics["orders"].Partitions, 5)
	require.ErrorIs(t, n.ctrl.CreatePartitions(ctx, "orders", 5, nil, false), ErrInvalidPartitions)
	require.ErrorIs(t, n.ctrl.CreatePartitions(ctx, "orders", 4, nil, false), ErrInvalidPartitions)
	require.ErrorIs(t, n.ctrl.CreatePartitions(ctx, "orders", 7, [][]int32{{0}}, false), ErrInvalidReplicaAssignment)
	require.ErrorIs(t, n.ctrl.CreatePartitions(ctx, "none", 7, nil, false), ErrUnknownTopic)

	require.NoError(t, n.ctrl.DeleteTopic(ctx, "orders"))
	require.NotContains(t, n.cache.Snapshot().Topics, "orders")
	for _, p := range []string{metadata.TopicPath("orders"), metadata.EntityConfigPath(metadata.ConfigTopics, "orders")} {
		_, ok, err := n.sess.Exists(ctx, p)
		require.NoError(t, err)
		require.False(t, ok, "%s left behind", p)
	}
	require.ErrorIs(t, n.ctrl.DeleteTopic(ctx, "orders"), ErrUnknownTopic)
}

func TestFailoverAndWatches(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	require.True(t, a.ctrl.IsActive())
	require.False(t, b.ctrl.IsActive())
	_, err := b.ctrl.CreateTopic(t.Context(), TopicSpec{Name: "x", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, ErrNotController)

	// b learns of a's topic through its watches.
	_, err = a.ctrl.CreateTopic(t.Context(), TopicSpec{Name: "seen", NumPartitions: 4, ReplicationFactor: 1}, false)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.cache.WaitFor(ctx, func(s *Snapshot) bool { return s.Topics["seen"] != nil }))
	var leaders []int32
	for _, p := range b.cache.Snapshot().Topics["seen"].Partitions {
		leaders = append(leaders, p.Leader)
	}
	slices.Sort(leaders)
	require.Equal(t, []int32{0, 0, 1, 1}, leaders, "round robin over both brokers")

	// A config change notification reaches b.
	_, err = metadata.WriteEntityConfig(ctx, a.sess, metadata.ConfigTopics, "seen", map[string]string{"segment.ms": "5000"})
	require.NoError(t, err)
	require.NoError(t, b.cache.WaitFor(ctx, func(s *Snapshot) bool { return s.Topics["seen"].Config["segment.ms"] == "5000" }))

	// a goes away: b becomes controller with a higher epoch, and sees a gone.
	a.stop()
	require.NoError(t, b.cache.WaitFor(ctx, func(s *Snapshot) bool { return s.ControllerID == 1 && len(s.Brokers) == 1 }))
	require.True(t, b.ctrl.IsActive())
	require.Equal(t, int32(2), b.ctrl.Epoch())
	_, err = b.ctrl.CreateTopic(ctx, TopicSpec{Name: "after", NumPartitions: 2, ReplicationFactor: 1}, false)
	require.NoError(t, err)
}

func TestOnElectedFinishesPendingDeletes(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	_, err := a.ctrl.CreateTopic(t.Context(), TopicSpec{Name: "gone", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.NoError(t, err)
	// Kafka's tools ask for a deletion by creating /admin/delete_topics/<t>.
	_, err = a.sess.Create(t.Context(), metadata.DeleteTopicPath("gone"), nil, 0)
	require.NoError(t, err)
	a.stop()
	b := startNode(t, st, 1)
	require.True(t, b.ctrl.IsActive())
	require.NotContains(t, b.cache.Snapshot().Topics, "gone")
	_, ok, err := b.sess.Exists(t.Context(), metadata.DeleteTopicPath("gone"))
	require.NoError(t, err)
	require.False(t, ok)
}

func TestAssignReplicas(t *testing.T) {
	for _, tc := range []struct {
		brokers []int32
		n, rf   int
	}{
		{[]int32{0}, 5, 1},
		{[]int32{0, 1, 2}, 9, 1},
		{[]int32{0, 1, 2}, 7, 3},
		{[]int32{3, 5, 9, 11}, 12, 2},
	} {
		a := AssignReplicas(tc.brokers, 2, tc.n, tc.rf)
		require.Len(t, a, tc.n)
		lead := map[int32]int{}
		for p := int32(2); p < int32(2+tc.n); p++ {
			r := a[p]
			require.Len(t, r, tc.rf)
			seen := map[int32]bool{}
			for _, b := range r {
				require.Contains(t, tc.brokers, b)
				require.False(t, seen[b], "replica twice in %v", r)
				seen[b] = true
			}
			lead[r[0]]++
		}
		for _, b := range tc.brokers {
			require.InDelta(t, tc.n/len(tc.brokers), lead[b], 1, "leaders spread evenly: %v", lead)
		}
	}
	require.Empty(t, AssignReplicas([]int32{0}, 0, 3, 2), "more replicas than brokers")
}

func TestCheckAssignment(t *testing.T) {
	live := []int32{0, 1}
	for _, tc := range []struct {
		name string
		a    map[int32][]int32
		ok   bool
	}{
		{"ok", map[int32][]int32{0: {0}, 1: {1}}, true},
		{"gap", map[int32][]int32{0: {0}, 2: {1}}, false},
		{"unknown broker", map[int32][]int32{0: {7}}, false},
		{"duplicate replica", map[int32][]int32{0: {0, 0}}, false},
		{"uneven", map[int32][]int32{0: {0}, 1: {0, 1}}, false},
		{"empty replicas", map[int32][]int32{0: {}}, false},
	} {
		err := checkAssignment(tc.a, 0, live)
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.Error(t, err, tc.name)
		}
	}
}

// TestDeposedControllerIsFenced: a controller that has not yet noticed
// that a newer one was elected (the epoch moved, as after its session
// expired while it was paused) writes nothing: each of its writes checks
// the /controller_epoch version it won with, fails, and it resigns.
func TestDeposedControllerIsFenced(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	require.True(t, a.ctrl.IsActive())
	ctx := t.Context()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "before", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.NoError(t, err)

	// A newer controller's election bumps the epoch behind a's back.
	other, err := st.NewSession()
	require.NoError(t, err)
	data, stat, err := other.Get(ctx, metadata.ControllerEpochPath)
	require.NoError(t, err)
	epoch, err := metadata.UnmarshalControllerEpoch(data)
	require.NoError(t, err)
	_, err = other.Set(ctx, metadata.ControllerEpochPath, metadata.MarshalControllerEpoch(epoch+1), stat.Version)
	require.NoError(t, err)

	_, err = a.ctrl.CreateTopic(ctx, TopicSpec{Name: "stale", NumPartitions: 2, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, ErrFenced)
	require.ErrorIs(t, err, ErrNotController)
	require.False(t, a.ctrl.IsActive(), "a fenced controller resigns")
	_, ok, err := other.Exists(ctx, metadata.TopicPath("stale"))
	require.NoError(t, err)
	require.False(t, ok, "the deposed controller wrote nothing")
	require.ErrorIs(t, a.ctrl.CreatePartitions(ctx, "before", 3, nil, false), ErrNotController)
}
