//go:build linux

package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/txn"
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

// TestTransactionStateLoad: a transactional id idle past
// transactional.id.expiration.ms is removed with a tombstone, and stays
// removed after a restart; a __transaction_state record that does not
// decode is skipped at the load (logged with its offset), and the
// coordinator serves the other ids.
func TestTransactionStateLoad(t *testing.T) {
	logs := &syncBuffer{}
	b := brokertest.StartBroker(t, brokertest.WithConfig("transactional.id.expiration.ms", "1500"),
		brokertest.WithConfig("transaction.remove.expired.transaction.cleanup.interval.ms", "200"),
		brokertest.WithLogWriter(logs))
	addrs := []string{b.Addr}
	adm := kadm.NewClient(newClient(t, addrs))
	ctx := testCtx(t)
	createTopic(t, adm, "load", 1, nil)
	commitOne := func(id string) {
		t.Helper()
		p := newClient(t, addrs, kgo.TransactionalID(id), kgo.DefaultProduceTopic("load"))
		require.NoError(t, p.BeginTransaction())
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte(id)}).FirstErr())
		require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
		p.Close()
	}
	commitOne("short-lived")
	notFound := func(id string) bool {
		d, err := adm.DescribeTransactions(ctx, id)
		if err != nil {
			return false
		}
		return errors.Is(d[id].Err, kerr.TransactionalIDNotFound)
	}
	waitFor(t, 20*time.Second, "short-lived expired", func() bool { return notFound("short-lived") })

	// A record that does not decode, in the partition of "kept".
	commitOne("kept")
	part, err := b.Replicas().Partition("__transaction_state", txn.PartitionFor("kept", b.Config().TransactionStateLogNumPartitions))
	require.NoError(t, err)
	bld := record.NewBuilder(record.DefaultBatchOptions())
	bld.Append(time.Now().UnixMilli(), txn.AppendKey(nil, "garbled"), []byte{0, 0, 1, 2, 3}, nil)
	garbage, err := bld.Build()
	require.NoError(t, err)
	info, err := part.AppendAsLeader(garbage, -1)
	require.NoError(t, err)

	b.Restart()
	adm = kadm.NewClient(newClient(t, []string{b.Addr}))
	waitFor(t, 20*time.Second, "kept served after the restart", func() bool {
		d, err := adm.DescribeTransactions(ctx, "kept")
		return err == nil && d["kept"].Err == nil && d["kept"].State == "CompleteCommit"
	})
	require.True(t, notFound("short-lived"), "an expired id came back after the restart")
	require.Contains(t, logs.String(), fmt.Sprintf("offset=%d", info.FirstOffset), "the skipped record is logged with its offset")
	require.Contains(t, logs.String(), "skipping __transaction_state record")
}

// TestTransactionsPipelined: a transactional producer with five produce
// requests in flight and no linger, over many transactions, with KIP-890
// verification on: the first batch of each transaction on a partition
// waits for the coordinator's answer, and the batches pipelined behind
// it on the connection wait for it (not racing it to the log, which
// refused them INVALID_TXN_STATE, or would reorder a producer's
// sequences). Every transaction commits; read_committed reads all.
func TestTransactionsPipelined(t *testing.T) {
	b := brokertest.StartBroker(t)
	addrs := []string{b.Addr}
	ctx := testCtx(t)
	createTopic(t, kadm.NewClient(newClient(t, addrs)), "pipelined", 3, nil)
	p := newClient(t, addrs, kgo.TransactionalID("pipeliner"), kgo.DefaultProduceTopic("pipelined"),
		kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(1024)) // idempotent: up to 5 requests in flight
	const txns, per = 20, 60
	for i := range txns {
		require.NoError(t, p.BeginTransaction())
		errs := make(chan error, per)
		for j := range per {
			p.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d-%d-%s", i, j, make([]byte, 100))}, func(_ *kgo.Record, err error) { errs <- err })
		}
		for range per {
			require.NoError(t, <-errs, "transaction %d", i)
		}
		require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit), "transaction %d", i)
	}
	cl := newClient(t, addrs, kgo.ConsumeTopics("pipelined"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	waitFor(t, 20*time.Second, "every committed record read", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		n += len(cl.PollFetches(pctx).Records())
		return n >= txns*per
	})
	require.Equal(t, txns*per, n)
}
