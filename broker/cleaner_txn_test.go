//go:build linux

package broker_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
)

// logBatches reads every batch of l, below its log end offset.
func logBatches(t *testing.T, l *log.Log) []record.Batch {
	t.Helper()
	var out []record.Batch
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		ri, err := l.Read(off, 1<<20, -1)
		require.NoError(t, err)
		if ri.Region.Length == 0 {
			break
		}
		b := make([]byte, ri.Region.Length)
		_, err = ri.Region.File.ReadAt(b, ri.Region.Position)
		require.NoError(t, err)
		for len(b) >= record.BatchHeaderSize && record.Batch(b).Size() <= len(b) {
			bt, err := record.Validate(b[:record.Batch(b).Size()])
			require.NoError(t, err)
			b = b[len(bt):]
			if bt.LastOffset() >= off {
				out = append(out, bt)
				off = bt.NextOffset()
			}
		}
	}
	return out
}

// TestCompactedTopicTransactions: on a compacted topic, a transactional
// producer commits and aborts transactions on the same keys (the last
// ones aborted) and an idempotent producer writes some of them too. Once
// the background cleaner has cleaned past every transaction,
// read_committed and read_uncommitted consumers both read each key once,
// with its last committed or plain value, and no aborted value; after
// delete.retention.ms the markers of the transactions without data left
// are removed by later cleans, and the consumers still read the same.
func TestCompactedTopicTransactions(t *testing.T) {
	const topic = "ctxn"
	b := brokertest.StartBroker(t, brokertest.WithConfig("log.cleaner.backoff.ms", "50"))
	addrs := []string{b.Addr}
	adm := newAdmin(t, addrs...)
	ptr := func(s string) *string { return &s }
	createTopic(t, adm, topic, 1, map[string]*string{
		"cleanup.policy":            ptr("compact"),
		"segment.bytes":             ptr("2048"),
		"min.cleanable.dirty.ratio": ptr("0.01"),
		"delete.retention.ms":       ptr("300"),
	})
	ctx := testCtx(t)
	p := newClient(t, addrs, kgo.TransactionalID("compacted-1"), kgo.DefaultProduceTopic(topic),
		kgo.TransactionTimeout(10*time.Second))
	plain := newClient(t, addrs, kgo.DefaultProduceTopic(topic))
	produce := func(cl *kgo.Client, key, value string) {
		t.Helper()
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr())
	}
	want := map[string]string{}
	aborted := map[string]bool{}
	const rounds = 12
	for round := range rounds {
		commit := round%2 == 0
		require.NoError(t, p.BeginTransaction())
		for k := range 6 {
			key := fmt.Sprintf("k%d", k)
			if commit {
				want[key] = fmt.Sprintf("committed-%d", round)
				produce(p, key, want[key])
			} else {
				v := fmt.Sprintf("aborted-%d", round)
				aborted[v] = true
				produce(p, key, v)
			}
		}
		require.NoError(t, p.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
		if round%4 == 1 {
			want["k0"] = fmt.Sprintf("plain-%d", round)
			produce(plain, "k0", want["k0"])
		}
	}

	part, err := b.Replicas().Partition(topic, 0)
	require.NoError(t, err)
	l := part.Log()
	txnEnd := l.LogEndOffset()
	markers := func() int {
		n := 0
		for _, bt := range logBatches(t, l) {
			if bt.IsControl() && bt.NumRecords() > 0 {
				n++
			}
		}
		return n
	}
	require.LessOrEqual(t, markers(), rounds)

	// Plain records on other keys roll the segment, then the background
	// cleaner cleans past the transactions. Filling only until the roll
	// keeps the flushes at roll (which the cleaner's swaps wait for) few,
	// and ten keys keep the compacted log small.
	fill := func() {
		for i := range 10 {
			produce(plain, fmt.Sprintf("filler-%d", i), strings.Repeat("f", 100))
		}
	}
	activeBase := func() int64 { bases := l.SegmentBaseOffsets(); return bases[len(bases)-1] }
	// cleanPast rolls the segment holding offset-1 and waits for the
	// cleaner to clean it.
	cleanPast := func(offset int64, timeout time.Duration) {
		t.Helper()
		for activeBase() < offset {
			fill()
		}
		deadline := time.Now().Add(timeout)
		for l.FirstDirtyOffset() < offset {
			require.True(t, time.Now().Before(deadline), "the cleaner did not pass offset %d (first dirty offset %d)", offset, l.FirstDirtyOffset())
			time.Sleep(10 * time.Millisecond) // polling interval
		}
	}
	cleanPast(txnEnd, time.Minute)

	// read reads the partition to its end with the isolation level and
	// returns the k* records.
	read := func(iso kgo.IsolationLevel) map[string][]string {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		require.NoError(t, err)
		end, _ := ends.Lookup(topic, 0)
		cl := newClient(t, addrs, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := map[string][]string{}
		last := int64(-1)
		deadline := time.Now().Add(20 * time.Second)
		for last < end.Offset-1 {
			require.True(t, time.Now().Before(deadline), "read to offset %d of %d", last, end.Offset)
			fs := cl.PollFetches(ctx)
			require.NoError(t, fs.Err())
			fs.EachRecord(func(r *kgo.Record) {
				last = r.Offset
				if bytes.HasPrefix(r.Key, []byte("k")) {
					got[string(r.Key)] = append(got[string(r.Key)], string(r.Value))
				}
			})
		}
		cl.Close()
		return got
	}
	check := func(what string) {
		t.Helper()
		for _, c := range []struct {
			name string
			iso  kgo.IsolationLevel
		}{{"read_committed", kgo.ReadCommitted()}, {"read_uncommitted", kgo.ReadUncommitted()}} {
			iso := c.name
			got := read(c.iso)
			for key, vs := range got {
				for _, v := range vs {
					require.False(t, aborted[v], "%s: %s read aborted %s=%s", what, iso, key, v)
				}
			}
			exp := map[string][]string{}
			for k, v := range want {
				exp[k] = []string{v}
			}
			require.Equal(t, exp, got, "%s: %s reads each key once, with its last committed value", what, iso)
		}
		require.Equal(t, l.HighWatermark(), l.LastStableOffset(), what)
	}
	check("after the clean")

	// Later cleans, past delete.retention.ms, remove the markers whose
	// transaction has no data left. Two stay: the last commit's (its
	// records are the keys' values) and the last abort's (the producer's
	// last batch is kept, empty, for its sequence).
	deadline := time.Now().Add(30 * time.Second)
	for markers() > 2 {
		if !time.Now().Before(deadline) {
			for _, bt := range logBatches(t, l) {
				if bt.ProducerID() >= 0 && (bt.IsControl() || bt.IsTransactional()) {
					h, _ := bt.DeleteHorizonMs()
					t.Logf("batch %d-%d pid %d control %v records %d horizon %d", bt.BaseOffset(), bt.LastOffset(), bt.ProducerID(), bt.IsControl(), bt.NumRecords(), h)
				}
			}
		}
		require.True(t, time.Now().Before(deadline), "%d markers left", markers())
		cleanPast(l.LogEndOffset(), time.Minute)
	}
	check("after the markers went")

	// A restart loads the cleaned log, its indexes and producer state.
	b.Restart()
	addrs = []string{b.Addr}
	adm = newAdmin(t, addrs...)
	part, err = b.Replicas().Partition(topic, 0)
	require.NoError(t, err)
	l = part.Log()
	waitFor(t, 30*time.Second, "the partition's leader to be back", func() bool {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		o, ok := ends.Lookup(topic, 0)
		return ok && o.Err == nil && o.Offset == l.LogEndOffset()
	})
	check("after a restart")

	// The producer goes on, fenced by nothing: its state survived.
	require.NoError(t, p.BeginTransaction())
	want["k1"] = "committed-last"
	produce(p, "k1", want["k1"])
	require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
	lso, err := kadm.NewClient(newClient(t, addrs, kgo.FetchIsolationLevel(kgo.ReadCommitted()))).ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	o, _ := lso.Lookup(topic, 0)
	require.Equal(t, l.HighWatermark(), o.Offset, "LSO = HW")
}
