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

var _ = context.Background
var _ = fmt.Sprint
var _ sync.Mutex
