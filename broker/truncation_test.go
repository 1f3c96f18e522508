//go:build linux

package broker_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/replica"
)

// The two failures of high-watermark truncation (KIP-101), replayed step
// by step on two in-process brokers, A (0) and B (1). Leader epochs decide
// where a returning replica truncates, so the acknowledged record
// survives the first and the divergent one goes in the second; each test
// also shows what truncating to the high watermark would have done.

func partitionOn(t *testing.T, b *brokertest.Broker, topic string) *replica.Partition {
	t.Helper()
	p, err := b.Replicas().Partition(topic, 0)
	require.NoError(t, err)
	return p
}

// checkpointedHW reads a broker's replication-offset-checkpoint entry for
// partition 0 of topic.
func checkpointedHW(t *testing.T, b *brokertest.Broker, topic string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.Dir, "replication-offset-checkpoint"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == topic && f[1] == "0" {
			return f[2]
		}
	}
	t.Fatalf("no checkpoint entry for %s-0 in %q", topic, data)
	return ""
}

func values(recs []*kgo.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

func sameLogs(t *testing.T, a, b *brokertest.Broker, topic string) {
	t.Helper()
	read := func(x *brokertest.Broker) []byte {
		data, err := os.ReadFile(filepath.Join(x.Dir, topic+"-0", "00000000000000000000.log"))
		require.NoError(t, err)
		return data
	}
	waitFor(t, 10*time.Second, "the replicas byte for byte equal", func() bool { return bytes.Equal(read(a), read(b)) })
}

// Loss: A and B both hold m1, m2; A advanced its HW to 2 and acknowledged
// m2, B has not learned it (its HW is still 1) when it restarts. By the
// HW rule it would truncate to 1, dropping m2, then lead without it when
// A dies. By epochs it keeps m2: nothing acknowledged is lost.
func TestTruncationLossScenario(t *testing.T) {
	// A follower learns the high watermark from its next fetch's answer,
	// which waits (no new data) for replica.fetch.wait.max.ms.
	c := brokertest.StartCluster(t, 2, brokertest.WithConfig("replica.fetch.wait.max.ms", "10000"),
		brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	a, b := c.Brokers[0], c.Brokers[1]
	createReplicated(t, c, "loss", map[int32][]int32{0: {0, 1}}, nil)
	waitFor(t, 10*time.Second, "A leading with both in sync", func() bool {
		p, err := a.Replicas().Partition("loss", 0)
		return err == nil && p.IsLeader() && len(p.State().ISR) == 2
	})
	cl := newClient(t, []string{a.Addr}, kgo.DefaultProduceTopic("loss"), kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m1")}).FirstErr())
	// m2 reaches B in the answer that tells it the high watermark 1; B's
	// next fetch (at 2) makes A's high watermark 2 and acknowledges m2,
	// and its answer waits: B is left with m2 and a high watermark of 1.
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m2")}).FirstErr())
	require.Equal(t, int64(2), partitionOn(t, a, "loss").HighWatermark(), "m2 acknowledged: A's high watermark is 2")
	pb := partitionOn(t, b, "loss")
	require.Equal(t, int64(2), pb.Log().LogEndOffset(), "B has m2")
	require.Equal(t, int64(1), pb.HighWatermark(), "B has not learned the high watermark 2")

	b.Restart()
	require.Equal(t, "1", checkpointedHW(t, b, "loss"), "B restarted with high watermark 1: the HW rule truncates m2 here")
	require.Equal(t, int64(2), partitionOn(t, b, "loss").Log().LogEndOffset(), "B kept m2 (no truncation to the high watermark)")
	waitFor(t, 10*time.Second, "B back in the ISR", func() bool { return len(partitionOn(t, a, "loss").State().ISR) == 2 })

	// A goes: B, in the ISR, leads; m2 is there.
	a.Stop()
	waitFor(t, 10*time.Second, "B leading", func() bool { return partitionOn(t, b, "loss").IsLeader() })
	require.Equal(t, []string{"m1", "m2"}, values(consume(t, []string{b.Addr}, "loss", 2)))
	a.Restart()
	sameLogs(t, a, b, "loss")
}

// Divergence: A leads with m1, m2 (HW 2, acks=1 while B was away); B has
// only m1. A dies, B becomes leader (unclean: it was out of the ISR) and
// appends m3 at offset 1. A returns: both high watermarks are 2, so the
// HW rule keeps A's m2 at offset 1 where B has m3, and the replicas
// differ. By epochs A truncates to the end of the last epoch both have
// (offset 1) and fetches m3.
func TestTruncationDivergenceScenario(t *testing.T) {
	c := brokertest.StartCluster(t, 2, brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	a, b := c.Brokers[0], c.Brokers[1]
	createReplicated(t, c, "div", map[int32][]int32{0: {0, 1}}, map[string]string{"unclean.leader.election.enable": "true"})
	waitFor(t, 10*time.Second, "A leading with both in sync", func() bool {
		p, err := a.Replicas().Partition("div", 0)
		return err == nil && p.IsLeader() && len(p.State().ISR) == 2
	})
	acks1 := func(addr string) *kgo.Client {
		return newClient(t, []string{addr}, kgo.DefaultProduceTopic("div"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	require.NoError(t, acks1(a.Addr).ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m1")}).FirstErr())
	waitFor(t, 10*time.Second, "B has m1", func() bool { return partitionOn(t, b, "div").Log().LogEndOffset() == 1 })

	b.Stop()
	waitFor(t, 10*time.Second, "A alone in the ISR", func() bool { return slices.Equal(partitionOn(t, a, "div").State().ISR, []int32{0}) })
	require.NoError(t, acks1(a.Addr).ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m2")}).FirstErr())
	require.Equal(t, int64(2), partitionOn(t, a, "div").HighWatermark())

	a.Stop()
	b.Restart()
	waitFor(t, 10*time.Second, "B leading (unclean)", func() bool { return partitionOn(t, b, "div").IsLeader() })
	require.NoError(t, acks1(b.Addr).ProduceSync(testCtx(t), &kgo.Record{Value: []byte("m3")}).FirstErr())
	waitFor(t, 10*time.Second, "B's high watermark at 2", func() bool { return partitionOn(t, b, "div").HighWatermark() == 2 })

	require.Equal(t, "2", checkpointedHW(t, a, "div"), "A stopped with high watermark 2: the HW rule keeps its m2 at offset 1")
	a.Restart()
	sameLogs(t, a, b, "div")
	require.Equal(t, []string{"m1", "m3"}, values(consume(t, []string{a.Addr, b.Addr}, "div", 2)))
	pa := partitionOn(t, a, "div")
	require.Equal(t, int64(2), pa.Log().LogEndOffset(), "A dropped m2 and fetched m3")
	st := a.FetcherStats()
	require.Positive(t, st.IncrementalFetches, "A truncated and caught up in an incremental fetch session: %+v", st)
}
