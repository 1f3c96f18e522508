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

// eventually polls cond every 10 ms until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

// A topic removed from the store by another tool leaves every broker's
// metadata (UpdateMetadata with LeaderDuringDelete, sent before the
// controller forgets its partitions).
func TestTopicRemovedByAnotherTool(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	ctx := t.Context()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "t", NumPartitions: 2, ReplicationFactor: 1}, false)
	require.NoError(t, err)
	raw, err := st.NewSession()
	require.NoError(t, err)
	defer raw.Close()
	for _, p := range []string{
		metadata.PartitionStatePath("t", 0), metadata.PartitionPath("t", 0),
		metadata.PartitionStatePath("t", 1), metadata.PartitionPath("t", 1),
		metadata.TopicPartitionsPath("t"), metadata.TopicPath("t"),
	} {
		require.NoError(t, raw.Delete(ctx, p, metadata.AnyVersion), p)
	}
	waitCache(t, a, "the removed topic gone from the metadata", func(s *Snapshot) bool { return s.Topics["t"] == nil })
}

// /controller deleted by an admin (how Kafka's tools move the controller)
// and another broker wins: the old controller resigns at once, its term's
// context and channel gone, instead of acting until its first fenced write.
func TestControllerMovedByAdmin(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	require.True(t, a.ctrl.IsActive())
	raw, err := st.NewSession()
	require.NoError(t, err)
	defer raw.Close()
	// b wins: a is held (its mu) while /controller goes and b elects.
	a.ctrl.mu.Lock()
	require.NoError(t, raw.Delete(t.Context(), metadata.ControllerPath, metadata.AnyVersion))
	deadline := time.Now().Add(10 * time.Second)
	for !b.ctrl.IsActive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	a.ctrl.mu.Unlock()
	require.True(t, b.ctrl.IsActive())
	eventually(t, "the deposed controller to resign", func() bool {
		a.ctrl.mu.Lock()
		defer a.ctrl.mu.Unlock()
		return !a.ctrl.IsActive() && a.ctrl.cc == nil && a.ctrl.ch == nil
	})
	_, err = a.ctrl.CreateTopic(t.Context(), TopicSpec{Name: "x", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, ErrNotController)
}

// A replica whose StopReplica fails (its broker registered but not
// answering): DeleteTopic answers once the topic is gone from the
// metadata, as Kafka's does, instead of waiting for a deletion that waits.
func TestDeleteTopicWhenAReplicaCannotDelete(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	_ = startNode(t, st, 1)
	ctx := t.Context()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "d", Assignment: map[int32][]int32{0: {1}}}, false)
	require.NoError(t, err)
	tn := netOf(st)
	tn.mu.Lock()
	delete(tn.nodes, 1) // requests to 1 now fail; 1 stays registered
	tn.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, a.ctrl.DeleteTopic(dctx, "d"))
	require.Nil(t, a.cache.Snapshot().Topics["d"])
	_, ok, err := a.sess.Exists(ctx, metadata.TopicPath("d"))
	require.NoError(t, err)
	require.True(t, ok, "the deletion waits for the replica")
}

// delete.topic.enable=false and a deletion asked while no controller
// ran: the next controller drops the request and keeps the topic, as
// Kafka's does.
func TestDeleteDisabledAtFailover(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	ctx := t.Context()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "keep", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.NoError(t, err)
	a.stop()
	raw, err := st.NewSession()
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Create(ctx, metadata.DeleteTopicPath("keep"), nil, 0)
	require.NoError(t, err)

	b := startNodeWith(t, st, 0, func(n *node) { n.noDelete = true })
	eventually(t, "the deletion request dropped", func() bool {
		_, ok, err := raw.Exists(ctx, metadata.DeleteTopicPath("keep"))
		return err == nil && !ok
	})
	b.ctrl.mu.Lock()
	toDelete := b.ctrl.cc.toDelete["keep"]
	b.ctrl.mu.Unlock()
	require.False(t, toDelete)
	waitCache(t, b, "the topic kept", func(s *Snapshot) bool { return s.Topics["keep"] != nil })
}

// blipStore fails the next Children of /brokers/topics and then the next
// Get of /controller once armed: a connection blip during a failover and
// its clean-up.
type blipStore struct {
	metadata.Store
	armed, getFails atomic.Bool
}

func (s *blipStore) Children(ctx context.Context, p string) ([]string, metadata.Stat, error) {
	if p == metadata.BrokerTopicsPath && s.armed.CompareAndSwap(true, false) {
		s.getFails.Store(true)
		return nil, metadata.Stat{}, metadata.ErrConnectionLoss
	}
	return s.Store.Children(ctx, p)
}

func (s *blipStore) Get(ctx context.Context, p string) ([]byte, metadata.Stat, error) {
	if p == metadata.ControllerPath && s.getFails.CompareAndSwap(true, false) {
		return nil, metadata.Stat{}, metadata.ErrConnectionLoss
	}
	return s.Store.Get(ctx, p)
}

// A failover that fails and cannot delete its /controller does not leave
// the cluster without a controller: the election loop finds the node its
// own and tries again.
func TestFailedFailoverRetried(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	b := startNode(t, st, 1)
	var bs *blipStore
	a := startNodeWith(t, st, 0, func(n *node) {
		bs = &blipStore{Store: n.sess}
		n.sess = bs
	})
	require.True(t, b.ctrl.IsActive())
	bs.armed.Store(true)
	b.stop()
	eventually(t, "broker 0 to become controller", a.ctrl.IsActive)
	require.False(t, bs.armed.Load(), "the blip happened")
}
