//go:build linux

package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestTransactionsSingleBroker: a franz-go transactional producer on one
// broker commits, aborts and commits; read_committed reads exactly the
// committed records, read_uncommitted all of them, and at the end the
// last stable offset is the high watermark.
func TestTransactionsSingleBroker(t *testing.T) {
	b := brokertest.StartBroker(t)
	addrs := []string{b.Addr}
	adm := kadm.NewClient(newClient(t, addrs))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := adm.CreateTopic(ctx, 2, 1, nil, "txn")
	require.NoError(t, err)

	p := newClient(t, addrs, kgo.TransactionalID("t1"), kgo.DefaultProduceTopic("txn"),
		kgo.TransactionTimeout(10*time.Second))
	txn := func(prefix string, n int, commit bool) {
		t.Helper()
		require.NoError(t, p.BeginTransaction())
		for i := range n {
			require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s%d", prefix, i)}).FirstErr())
		}
		require.NoError(t, p.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	txn("c", 10, true)
	txn("a", 10, false)
	txn("d", 5, true)

	read := func(iso kgo.IsolationLevel, want int) []string {
		t.Helper()
		cl := newClient(t, addrs, kgo.ConsumeTopics("txn"), kgo.FetchIsolationLevel(iso),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		deadline := time.Now().Add(20 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			pcancel()
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
		return got
	}
	committed := read(kgo.ReadCommitted(), 15)
	require.Len(t, committed, 15, "read_committed: %v", committed)
	for _, v := range committed {
		require.NotEqual(t, byte('a'), v[0], "read_committed returned aborted record %q", v)
	}
	require.Len(t, read(kgo.ReadUncommitted(), 25), 25)

	hw, err := adm.ListEndOffsets(ctx, "txn")
	require.NoError(t, err)
	lso, err := adm.ListCommittedOffsets(ctx, "txn") // read_committed: the LSO
	require.NoError(t, err)
	hw.Each(func(o kadm.ListedOffset) {
		l, _ := lso.Lookup(o.Topic, o.Partition)
		require.Equal(t, o.Offset, l.Offset, "partition %d: LSO %d, HW %d", o.Partition, l.Offset, o.Offset)
	})
	// Three transactions, each with a marker per partition it touched.
	total := int64(0)
	hw.Each(func(o kadm.ListedOffset) { total += o.Offset })
	require.Greater(t, total, int64(25))
}
