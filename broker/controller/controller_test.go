package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

// node is one broker's controller half: a session, a cache and a
// controller, as broker.Server wires them. Its control requests arrive
// through a testNet instead of the network (broker/controller/channel has
// its own tests; the brokers' tests run it for real).
type node struct {
	id      int32
	sess    metadata.Store
	cache   *Cache
	ctrl    *Controller
	changes chan [2]*Snapshot

	mu           sync.Mutex
	leaderAndIsr []*kmsg.LeaderAndISRRequest
	stopped      []*kmsg.StopReplicaRequest
	updates      []*kmsg.UpdateMetadataRequest
	// noDelete is delete.topic.enable=false.
	noDelete bool
	// logEpochs, when set, are the latest leader epochs of this node's
	// logs by topic: a leadership at or below is refused, as a broker
	// whose log is ahead of the metadata refuses it.
	logEpochs map[string]int32
	// storageErrors are the partitions whose log is on a failed log
	// directory of this node: LeaderAndIsr for them is answered
	// KAFKA_STORAGE_ERROR, as a broker answers for an offline log.
	storageErrors map[TP]bool
}

// handle serves a control request as a broker would, minus the logs.
func (n *node) handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.UpdateMetadataRequest:
		n.updates = append(n.updates, r)
		return r.ResponseKind(), n.cache.ApplyUpdateMetadata(ctx, r)
	case *kmsg.LeaderAndISRRequest:
		n.leaderAndIsr = append(n.leaderAndIsr, r)
		resp := r.ResponseKind().(*kmsg.LeaderAndISRResponse)
		for _, ts := range r.TopicStates {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = ts.TopicID
			for _, p := range ts.PartitionStates {
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Partition = p.Partition
				if latest, ok := n.logEpochs[ts.Topic]; ok && p.Leader == n.id && p.LeaderEpoch <= latest {
					rp.ErrorCode = kerr.FencedLeaderEpoch.Code
					SetLogLeaderEpoch(&rp.UnknownTags, latest)
				}
				if n.storageErrors[TP{Topic: ts.Topic, Partition: p.Partition}] {
					rp.ErrorCode = kerr.KafkaStorageError.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.StopReplicaRequest:
		n.stopped = append(n.stopped, r)
		return r.ResponseKind(), nil
	}
	return nil, fmt.Errorf("unexpected %T", req)
}

// stateMachineErrors counts the controller's "controller state machine"
// errors (an illegal transition: a bug the controller logs rather than
// applies), so that every test fails on one.
type stateMachineErrors struct {
	slog.Handler
	n *atomic.Int64
}

func (h *stateMachineErrors) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "controller state machine" {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *stateMachineErrors) WithAttrs(as []slog.Attr) slog.Handler {
	return &stateMachineErrors{Handler: h.Handler.WithAttrs(as), n: h.n}
}

func (h *stateMachineErrors) WithGroup(g string) slog.Handler {
	return &stateMachineErrors{Handler: h.Handler.WithGroup(g), n: h.n}
}

// testNet delivers control requests to the nodes registered in it, in
// order per node, as channel.Manager does.
type testNet struct {
	mu    sync.Mutex
	nodes map[int32]*node
}

func (tn *testNet) channel() Channel { return &testChannel{net: tn, queues: map[int32]chan func(){}} }

type testChannel struct {
	net    *testNet
	mu     sync.Mutex
	queues map[int32]chan func()
	wg     sync.WaitGroup
}

func (c *testChannel) AddBroker(id int32, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.queues[id]; ok {
		return
	}
	q := make(chan func(), 1000)
	c.queues[id] = q
	c.wg.Go(func() {
		for f := range q {
			f()
		}
	})
}

func (c *testChannel) AddLocal(id int32, _ func(context.Context, kmsg.Request) (kmsg.Response, error)) {
	c.AddBroker(id, "")
}

func (c *testChannel) RemoveBroker(id int32) {
	c.mu.Lock()
	q := c.queues[id]
	delete(c.queues, id)
	c.mu.Unlock()
	if q != nil {
		close(q)
	}
}

func (c *testChannel) Send(id int32, req kmsg.Request, cb func(kmsg.Response, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.queues[id]
	if !ok {
		cb(nil, errors.New("unknown broker"))
		return
	}
	req.SetVersion(req.MaxVersion()) // as channel.Manager between two qk brokers
	q <- func() {
		c.net.mu.Lock()
		n := c.net.nodes[id]
		c.net.mu.Unlock()
		if n == nil {
			cb(nil, errors.New("gone"))
			return
		}
		resp, err := n.handle(context.Background(), req)
		cb(resp, err)
	}
}

func (c *testChannel) Close() {
	c.mu.Lock()
	for id, q := range c.queues {
		close(q)
		delete(c.queues, id)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

var nets sync.Map // *embedded.Store -> *testNet

func netOf(st *embedded.Store) *testNet {
	v, _ := nets.LoadOrStore(st, &testNet{nodes: map[int32]*node{}})
	return v.(*testNet)
}

func startNode(t *testing.T, st *embedded.Store, id int32) *node {
	t.Helper()
	return startNodeWith(t, st, id, nil)
}

// startNodeWith is startNode with setup run on the node before it starts.
func startNodeWith(t *testing.T, st *embedded.Store, id int32, setup func(*node)) *node {
	t.Helper()
	ctx := t.Context()
	sess, err := st.NewSession()
	require.NoError(t, err)
	require.NoError(t, metadata.EnsureKafkaPaths(ctx, sess))
	sm := &stateMachineErrors{n: new(atomic.Int64), Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})}
	// Registered first, so it runs after the node stopped.
	t.Cleanup(func() {
		if n := sm.n.Load(); n > 0 {
			t.Errorf("broker %d: %d illegal state transitions logged", id, n)
		}
	})
	lg := slog.New(sm)
	n := &node{id: id, sess: sess, changes: make(chan [2]*Snapshot, 100)}
	if setup != nil {
		setup(n)
	}
	n.cache = NewCache(CacheConfig{Store: n.sess, Logger: lg, OnChange: func(o, nw *Snapshot) {
		select {
		case n.changes <- [2]*Snapshot{o, nw}:
		default:
		}
	}})
	require.NoError(t, n.cache.Start(ctx))
	tn := netOf(st)
	tn.mu.Lock()
	tn.nodes[id] = n
	tn.mu.Unlock()
	// Registered once it can be reached, as a broker registers once it
	// listens.
	_, err = Register(ctx, sess, Registration{BrokerID: id, Now: time.Now(),
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id}}})
	require.NoError(t, err)
	n.ctrl = New(Config{BrokerID: id, Store: n.sess, Cache: n.cache, Logger: lg, NewChannel: tn.channel, Local: n.handle,
		Listener: "PLAINTEXT", DeleteTopicEnable: func() bool { return !n.noDelete }})
	require.NoError(t, n.ctrl.Start(ctx))
	t.Cleanup(n.stop)
	// As a broker's start-up does: wait for the controller's metadata.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, n.cache.WaitFor(wctx, func(s *Snapshot) bool { _, ok := s.Brokers[id]; return ok }))
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
	// Found by FuzzAdminRequest: counts a client sends are refused before
	// their assignment is built (it took the lock and all the memory).
	for _, validateOnly := range []bool{true, false} {
		require.ErrorIs(t, n.ctrl.CreatePartitions(ctx, "orders", math.MaxInt32, nil, validateOnly), ErrInvalidPartitions)
		require.ErrorIs(t, n.ctrl.CreatePartitions(ctx, "orders", MaxPartitions+1, nil, validateOnly), ErrInvalidPartitions)
		_, err = n.ctrl.CreateTopic(ctx, TopicSpec{Name: "huge", NumPartitions: math.MaxInt32, ReplicationFactor: 1}, validateOnly)
		require.ErrorIs(t, err, ErrInvalidPartitions)
	}
	require.Len(t, n.cache.Snapshot().Topics["orders"].Partitions, 5)

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

// Deletions asked while no controller runs (Kafka's tools write
// /admin/delete_topics/<t>) are carried out by the next one; a replica
// whose broker is down holds its topic's deletion until it is back, and
// meanwhile the topic is gone from the brokers' metadata.
func TestOnElectedFinishesPendingDeletes(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "gone", Assignment: map[int32][]int32{0: {1}}}, false)
	require.NoError(t, err)
	_, err = a.ctrl.CreateTopic(ctx, TopicSpec{Name: "waits", Assignment: map[int32][]int32{0: {0}}}, false)
	require.NoError(t, err)
	a.stop()
	b.stop()
	raw, err := st.NewSession()
	require.NoError(t, err)
	defer raw.Close()
	for _, name := range []string{"gone", "waits"} {
		_, err = raw.Create(ctx, metadata.DeleteTopicPath(name), nil, 0)
		require.NoError(t, err)
	}
	exists := func(path string) bool {
		_, ok, err := raw.Exists(ctx, path)
		require.NoError(t, err)
		return ok
	}
	deadline := func(cond func() bool, what string) {
		for !cond() {
			require.NoError(t, ctx.Err(), what)
			time.Sleep(10 * time.Millisecond)
		}
	}

	b = startNode(t, st, 1)
	require.True(t, b.ctrl.IsActive())
	deadline(func() bool { return !exists(metadata.TopicPath("gone")) && !exists(metadata.DeleteTopicPath("gone")) },
		"deletion of a topic on a live broker completes")
	require.NoError(t, b.cache.WaitFor(ctx, func(s *Snapshot) bool { return s.Topics["waits"] == nil && s.Topics["gone"] == nil }))
	require.True(t, exists(metadata.TopicPath("waits")), "broker 0 is down: the deletion waits for it")
	require.True(t, exists(metadata.DeleteTopicPath("waits")))

	a = startNode(t, st, 0)
	deadline(func() bool { return !exists(metadata.TopicPath("waits")) && !exists(metadata.DeleteTopicPath("waits")) },
		"deletion completes once broker 0 is back")
	a.mu.Lock()
	defer a.mu.Unlock()
	deleted := false
	for _, r := range a.stopped {
		for _, tpc := range r.Topics {
			for _, p := range tpc.PartitionStates {
				deleted = deleted || (tpc.Topic == "waits" && p.Delete)
			}
		}
	}
	require.True(t, deleted, "broker 0 was told to delete its replica")
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

// waitCache waits for cond on n's metadata.
func waitCache(t *testing.T, n *node, what string, cond func(*Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, n.cache.WaitFor(ctx, cond), what)
}

func stateOf(t *testing.T, st metadata.Store, topic string, p int32) (metadata.PartitionState, int32) {
	t.Helper()
	data, stat, err := st.Get(t.Context(), metadata.PartitionStatePath(topic, p))
	require.NoError(t, err)
	ps, err := metadata.UnmarshalPartitionState(data)
	require.NoError(t, err)
	return ps, stat.Version
}

// A topic written into the store by another tool (an assignment only, as
// kafka-topics.sh --zookeeper wrote them) is picked up: the controller
// creates its partition states and every broker learns of it. Then a
// controlled shutdown of broker 1 moves its leaderships to broker 0.
func TestControlledShutdownAndTopicsFromOtherTools(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	ctx := t.Context()
	id := metadata.NewUUID()
	_, err := a.sess.Create(ctx, metadata.TopicPath("r2"), metadata.MarshalTopicAssignment(metadata.TopicAssignment{
		TopicID: id, Partitions: map[int32][]int32{0: {1, 0}, 1: {0, 1}}}), 0)
	require.NoError(t, err)
	for _, n := range []*node{a, b} {
		waitCache(t, n, "the other tool's topic", func(s *Snapshot) bool {
			tp := s.Topics["r2"]
			return tp != nil && len(tp.Partitions) == 2 && tp.Partitions[0].Leader == 1 && tp.Partitions[1].Leader == 0
		})
	}
	ps, version := stateOf(t, a.sess, "r2", 0)
	require.Equal(t, metadata.PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 0}, ControllerEpoch: 1}, ps)
	require.Zero(t, version)

	// The other tool adds a partition (kafka-topics.sh --alter --zookeeper
	// rewrote the assignment).
	data, stat, err := a.sess.Get(ctx, metadata.TopicPath("r2"))
	require.NoError(t, err)
	ta, err := metadata.UnmarshalTopicAssignment(data)
	require.NoError(t, err)
	ta.Partitions[2] = []int32{0, 1}
	_, err = a.sess.Set(ctx, metadata.TopicPath("r2"), metadata.MarshalTopicAssignment(ta), stat.Version)
	require.NoError(t, err)
	waitCache(t, b, "the added partition", func(s *Snapshot) bool {
		return len(s.Topics["r2"].Partitions) == 3 && s.Topics["r2"].Partitions[2].Leader == 0
	})

	_, stat, err = a.sess.Get(ctx, metadata.BrokerPath(1))
	require.NoError(t, err)
	_, err = a.ctrl.ControlledShutdown(ctx, 1, stat.Czxid-1)
	require.ErrorIs(t, err, ErrStaleBrokerEpoch)
	_, err = b.ctrl.ControlledShutdown(ctx, 1, stat.Czxid)
	require.ErrorIs(t, err, ErrNotController)

	remaining, err := a.ctrl.ControlledShutdown(ctx, 1, stat.Czxid)
	require.NoError(t, err)
	require.Empty(t, remaining, "every leadership of broker 1 had another replica in the ISR")
	ps, version = stateOf(t, a.sess, "r2", 0)
	require.Equal(t, int32(0), ps.Leader)
	require.Equal(t, int32(1), ps.LeaderEpoch, "a leader change bumps the epoch")
	require.Equal(t, []int32{0}, ps.ISR, "the broker shutting down leaves the ISR")
	require.Equal(t, int32(1), version, "one compare-and-set write")
	ps, _ = stateOf(t, a.sess, "r2", 1)
	require.Equal(t, []int32{0}, ps.ISR, "as a follower too")
	waitCache(t, b, "the new leader on broker 1's metadata", func(s *Snapshot) bool {
		return s.Topics["r2"].Partitions[0].Leader == 0
	})
	b.mu.Lock()
	var told bool
	for _, r := range b.leaderAndIsr {
		for _, ts := range r.TopicStates {
			for _, p := range ts.PartitionStates {
				told = told || (ts.Topic == "r2" && p.Partition == 0 && p.Leader == 0 && p.LeaderEpoch == 1)
			}
		}
	}
	var stopped bool
	for _, r := range b.stopped {
		for _, ts := range r.Topics {
			for _, p := range ts.PartitionStates {
				stopped = stopped || (ts.Topic == "r2" && p.Partition == 1 && !p.Delete)
			}
		}
	}
	b.mu.Unlock()
	require.False(t, told, "a broker shutting down is not given roles (Kafka's isReplicaOnline)")
	require.True(t, stopped, "its follower replica is stopped, not deleted")
}

// A broker that dies takes its partitions offline (leader -1, the ISR
// keeps the last replica, the leader epoch goes up); when it returns it
// leads them again at a newer epoch. A broker that re-registers under a
// new session without the controller seeing it gone (bounced) is handled
// as a failure and a start.
func TestBrokerFailureAndReturn(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	b := startNode(t, st, 1)
	ctx := t.Context()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "one", Assignment: map[int32][]int32{0: {1}, 1: {0}}}, false)
	require.NoError(t, err)
	b.stop()
	waitCache(t, a, "partition 0 offline", func(s *Snapshot) bool {
		p := s.Topics["one"].Partitions[0]
		return p.Leader == metadata.NoLeader && len(s.Brokers) == 1
	})
	ps, _ := stateOf(t, a.sess, "one", 0)
	require.Equal(t, metadata.PartitionState{Leader: -1, LeaderEpoch: 1, ISR: []int32{1}, ControllerEpoch: 1}, ps)
	require.Equal(t, int32(0), a.cache.Snapshot().Topics["one"].Partitions[1].Leader, "the other partition is untouched")
	require.Equal(t, []int32{1}, a.cache.Snapshot().Topics["one"].Partitions[0].OfflineReplicas)

	b = startNode(t, st, 1)
	waitCache(t, a, "broker 1 leads partition 0 again", func(s *Snapshot) bool {
		return s.Topics["one"].Partitions[0].Leader == 1
	})
	ps, _ = stateOf(t, a.sess, "one", 0)
	require.Equal(t, int32(2), ps.LeaderEpoch)
	require.Equal(t, []int32{1}, ps.ISR)
}

// A leader that restarted while no controller ran gets a new leader epoch
// from the next controller; and a leader whose log holds a newer epoch
// than the store (a data dir taken over) refuses its leadership and is
// elected again above its log's epoch.
func TestLeaderEpochAfterUnseenRestartAndAheadLog(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	a := startNode(t, st, 0)
	ctx := t.Context()
	_, err := a.ctrl.CreateTopic(ctx, TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 1}, false)
	require.NoError(t, err)
	a.stop()
	a = startNode(t, st, 0)
	waitCache(t, a, "a new epoch after the unseen restart", func(s *Snapshot) bool {
		return s.Topics["t"] != nil && s.Topics["t"].Partitions[0].LeaderEpoch == 1
	})
	a.stop()

	// Its log says epoch 7 (the store says 1): the next leadership is 8.
	a = startNodeWith(t, st, 0, func(n *node) { n.logEpochs = map[string]int32{"t": 7} })
	waitCache(t, a, "an epoch above the log's", func(s *Snapshot) bool {
		return s.Topics["t"] != nil && s.Topics["t"].Partitions[0].LeaderEpoch == 8
	})
	ps, _ := stateOf(t, a.sess, "t", 0)
	require.Equal(t, int32(8), ps.LeaderEpoch)
	require.Equal(t, int32(0), ps.Leader)
}
