package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

// countingStore counts the store operations a session makes (a Multi is
// one: ZooKeeper commits it as one transaction, in one round trip).
type countingStore struct {
	metadata.Store
	ops atomic.Int64
}

func (s *countingStore) Create(ctx context.Context, p string, d []byte, f metadata.CreateFlags) (string, error) {
	s.ops.Add(1)
	return s.Store.Create(ctx, p, d, f)
}

func (s *countingStore) Get(ctx context.Context, p string) ([]byte, metadata.Stat, error) {
	s.ops.Add(1)
	return s.Store.Get(ctx, p)
}

func (s *countingStore) Set(ctx context.Context, p string, d []byte, v int32) (metadata.Stat, error) {
	s.ops.Add(1)
	return s.Store.Set(ctx, p, d, v)
}

func (s *countingStore) Delete(ctx context.Context, p string, v int32) error {
	s.ops.Add(1)
	return s.Store.Delete(ctx, p, v)
}

func (s *countingStore) Exists(ctx context.Context, p string) (metadata.Stat, bool, error) {
	s.ops.Add(1)
	return s.Store.Exists(ctx, p)
}

func (s *countingStore) Children(ctx context.Context, p string) ([]string, metadata.Stat, error) {
	s.ops.Add(1)
	return s.Store.Children(ctx, p)
}

func (s *countingStore) Watch(ctx context.Context, p string, k metadata.WatchKind) (<-chan metadata.Event, error) {
	s.ops.Add(1)
	return s.Store.Watch(ctx, p, k)
}

func (s *countingStore) Multi(ctx context.Context, ops ...metadata.Op) ([]metadata.OpResult, error) {
	s.ops.Add(1)
	return s.Store.Multi(ctx, ops...)
}

// TestOnePartitionChangeCost: in a cluster of 10,000 partitions, the
// failure of the broker holding one of them changes that partition's
// state with a handful of store operations (the broker list, one fenced
// compare-and-set), and every broker's metadata with one UpdateMetadata
// naming that partition alone: the cost does not grow with the cluster.
func TestOnePartitionChangeCost(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	var counted *countingStore
	a := startNodeWith(t, st, 0, func(n *node) {
		counted = &countingStore{Store: n.sess}
		n.sess = counted
	})
	b := startNode(t, st, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	big := map[int32][]int32{}
	for p := range int32(10000) {
		big[p] = []int32{0}
	}
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "big", Assignment: big}, false)
	require.NoError(t, err)
	_, err = a.ctrl.CreateTopic(ctx, TopicSpec{Name: "one", Assignment: map[int32][]int32{0: {1}}}, false)
	require.NoError(t, err)
	a.mu.Lock()
	a.updates = nil
	a.mu.Unlock()

	before := counted.ops.Load()
	b.stop()
	waitCache(t, a, "one-0 offline", func(s *Snapshot) bool { return s.Topics["one"].Partitions[0].Leader == metadata.NoLeader })
	// The batch is the event's last step: once the cache shows it, the
	// event's store operations are done.
	ops := counted.ops.Load() - before
	t.Logf("store operations for the broker failure: %d", ops)
	require.LessOrEqual(t, ops, int64(8), "the broker list, its registrations, one fenced write, the topic's config")
	ps, version := stateOf(t, a.sess, "one", 0)
	require.Equal(t, int32(-1), ps.Leader)
	require.Equal(t, int32(1), version, "one compare-and-set of the state node")
	a.mu.Lock()
	defer a.mu.Unlock()
	require.NotEmpty(t, a.updates)
	for _, um := range a.updates {
		n := 0
		for _, ts := range um.TopicStates {
			n += len(ts.PartitionStates)
		}
		require.LessOrEqual(t, n, 1, "UpdateMetadata names only the partition that changed")
	}
}
