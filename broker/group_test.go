//go:build linux

package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// groupBroker starts a broker whose groups rebalance at once.
func groupBroker(t *testing.T, opts ...brokertest.Option) *brokertest.Broker {
	t.Helper()
	return brokertest.StartBroker(t, append([]brokertest.Option{
		brokertest.WithConfig("group.initial.rebalance.delay.ms", "0"),
	}, opts...)...)
}

// produceN produces n records with values "<prefix>-<i>", round-robin
// over the topic's partitions.
func produceN(t *testing.T, addrs []string, topic, prefix string, n int) {
	t.Helper()
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(prefix + "-" + strconv.Itoa(i))})
	}
	require.NoError(t, cl.ProduceSync(testCtx(t), recs...).FirstErr())
}

// groupConsumer consumes topic in group and records what it got.
type groupConsumer struct {
	cl *kgo.Client
}

func newGroupConsumer(t *testing.T, addrs []string, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.HeartbeatInterval(200 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	return cl
}

// pollValues polls until n records came, returning their values.
func pollValues(t *testing.T, cl *kgo.Client, n int) []string {
	t.Helper()
	ctx := testCtx(t)
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "got %d of %d records: %v", len(out), n, out)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func TestGroupCommitResume(t *testing.T) {
	b := groupBroker(t)
	addrs := []string{b.Addr}
	createTopic(t, newAdmin(t, b.Addr), "resume", 3, nil)
	produceN(t, addrs, "resume", "a", 30)

	cl := newGroupConsumer(t, addrs, "g-resume", "resume")
	got := pollValues(t, cl, 30)
	require.Len(t, got, 30)
	require.NoError(t, cl.CommitUncommittedOffsets(testCtx(t)))
	cl.Close()

	produceN(t, addrs, "resume", "b", 9)
	cl = newGroupConsumer(t, addrs, "g-resume", "resume")
	got = pollValues(t, cl, 9)
	require.ElementsMatch(t, []string{"b-0", "b-1", "b-2", "b-3", "b-4", "b-5", "b-6", "b-7", "b-8"}, got)
	require.NoError(t, cl.CommitUncommittedOffsets(testCtx(t)))
	cl.Close()

	// After a broker restart the offsets come back from __consumer_offsets.
	b.Restart()
	addrs = []string{b.Addr}
	produceN(t, addrs, "resume", "c", 6)
	cl = newGroupConsumer(t, addrs, "g-resume", "resume")
	defer cl.Close()
	got = pollValues(t, cl, 6)
	require.ElementsMatch(t, []string{"c-0", "c-1", "c-2", "c-3", "c-4", "c-5"}, got)
}

// assignLog records, per generation, which member owns which partition,
// from kgo's assignment callbacks.
type assignLog struct {
	mu    sync.Mutex
	owner map[int32]map[int32]string // generation -> partition -> member
	held  map[string]map[int32]bool  // member -> partitions now
	bad   []string
}

func (a *assignLog) opts(name string) []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			_, gen := cl.GroupMetadata()
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.owner[gen] == nil {
				a.owner[gen] = map[int32]string{}
			}
			if a.held[name] == nil {
				a.held[name] = map[int32]bool{}
			}
			for _, p := range m["split"] {
				a.held[name][p] = true
			}
			// Every partition the member holds now is owned in gen.
			for p := range a.held[name] {
				if o, ok := a.owner[gen][p]; ok && o != name {
					a.bad = append(a.bad, fmt.Sprintf("generation %d: partition %d owned by %s and %s", gen, p, o, name))
				}
				a.owner[gen][p] = name
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, p := range m["split"] {
				delete(a.held[name], p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, p := range m["split"] {
				delete(a.held[name], p)
			}
		}),
	}
}

// held returns how many partitions each member holds.
func (a *assignLog) counts(names ...string) []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int
	for _, n := range names {
		out = append(out, len(a.held[n]))
	}
	return out
}

func TestGroupRebalanceSplit(t *testing.T) {
	b := groupBroker(t)
	addrs := []string{b.Addr}
	createTopic(t, newAdmin(t, b.Addr), "split", 6, nil)
	log := &assignLog{owner: map[int32]map[int32]string{}, held: map[string]map[int32]bool{}}
	start := func(name string) *kgo.Client {
		cl := newGroupConsumer(t, addrs, "g-split", "split", append(log.opts(name), kgo.ClientID(name))...)
		t.Cleanup(cl.Close)
		// Poll in the background so the client takes part in rebalances.
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
		t.Cleanup(func() { cancel(); <-done })
		return cl
	}
	settled := func(want ...int) func() bool {
		return func() bool {
			got := log.counts("a", "b", "c")
			total := 0
			for i := range want {
				total += got[i]
				if got[i] != want[i] {
					return false
				}
			}
			return total == 6
		}
	}
	start("a")
	start("b")
	waitFor(t, 30*time.Second, "a and b to split 6 partitions", settled(3, 3, 0))
	c := start("c")
	waitFor(t, 30*time.Second, "a, b and c to split 6 partitions", settled(2, 2, 2))
	c.LeaveGroup()
	waitFor(t, 30*time.Second, "a and b after c left", settled(3, 3, 0))
	log.mu.Lock()
	defer log.mu.Unlock()
	require.Empty(t, log.bad)
	require.GreaterOrEqual(t, len(log.owner), 3, "generations seen")
}

// TestGroupStaticMember restarts a static member within its session: it
// keeps its partitions and the generation stays.
func TestGroupStaticMember(t *testing.T) {
	b := groupBroker(t)
	addrs := []string{b.Addr}
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "static", 4, nil)
	opts := func(inst string) []kgo.Opt {
		return []kgo.Opt{kgo.InstanceID(inst), kgo.SessionTimeout(20 * time.Second)}
	}
	a := newGroupConsumer(t, addrs, "g-static", "static", opts("ia")...)
	defer a.Close()
	bb := newGroupConsumer(t, addrs, "g-static", "static", opts("ib")...)
	go pollUntilClosed(a)
	go pollUntilClosed(bb)
	describe := func() (gen int32, assigned map[string][]int32, ok bool) {
		dg, err := adm.DescribeGroups(testCtx(t), "g-static")
		if err != nil || dg["g-static"].State != "Stable" || len(dg["g-static"].Members) != 2 {
			return 0, nil, false
		}
		assigned = map[string][]int32{}
		for _, m := range dg["g-static"].Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok || m.InstanceID == nil {
				return 0, nil, false
			}
			for _, t := range ca.Topics {
				assigned[*m.InstanceID] = append(assigned[*m.InstanceID], t.Partitions...)
			}
		}
		_, gen = a.GroupMetadata()
		return gen, assigned, len(assigned["ia"])+len(assigned["ib"]) == 4
	}
	var gen1 int32
	var before map[string][]int32
	waitFor(t, 30*time.Second, "a stable group of two", func() bool {
		var ok bool
		gen1, before, ok = describe()
		return ok && len(before["ia"]) == 2
	})
	// Close without leaving (a static member's Close does not leave).
	bb.CloseAllowingRebalance()
	bb = newGroupConsumer(t, addrs, "g-static", "static", opts("ib")...)
	defer bb.Close()
	go pollUntilClosed(bb)
	waitFor(t, 30*time.Second, "the restarted member to hold its partitions", func() bool {
		_, gen := bb.GroupMetadata()
		return gen == gen1
	})
	gen2, after, ok := describe()
	require.True(t, ok)
	require.Equal(t, gen1, gen2, "generation changed: a rebalance happened")
	require.Equal(t, before, after)
}

// pollUntilClosed polls so the client takes part in its group until it
// is closed.
func pollUntilClosed(cl *kgo.Client) {
	for cl.Context().Err() == nil {
		cl.PollFetches(cl.Context())
	}
}
