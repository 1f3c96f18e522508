//go:build linux

package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
)

// txnLines runs qk and returns its stdout lines.
func txnLines(t *testing.T, args ...string) []string {
	t.Helper()
	out, stderr, err := runQK(t, args...)
	require.NoError(t, err, "qk %s: %s", strings.Join(args, " "), stderr)
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// cells splits a line of Kafka's prettyPrintTable into its trimmed cells;
// every cell, the last too, ends with a tab.
func cells(t *testing.T, line string) []string {
	t.Helper()
	require.True(t, strings.HasSuffix(line, "\t"), "line %q does not end with a tab", line)
	parts := strings.Split(strings.TrimSuffix(line, "\t"), "\t")
	for i := range parts {
		parts[i] = strings.TrimRight(parts[i], " ")
	}
	return parts
}

// produceHanging appends, with a raw Produce, a transactional batch from
// a producer id no coordinator ever handed out, stamped an hour ago: an
// open transaction that no coordinator will end, as a transaction hangs
// when its marker is lost.
func produceHanging(t *testing.T, ctx context.Context, addr, topic string, pid int64, ts time.Time) {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.Transactional, opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = true, pid, 0, 0
	bb := record.NewBuilder(opts)
	bb.Append(ts.UnixMilli(), nil, []byte("ghost-0"), nil)
	bb.Append(ts.UnixMilli(), nil, []byte("ghost-1"), nil)
	batch, err := bb.Build()
	require.NoError(t, err)
	// Produce v9 names topics (v13 uses topic ids).
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V3_0_0()))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	id := "ghost"
	req.TransactionID = &id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode, "raw transactional produce")
}

// TestTransactionsQK: kafka-transactions.sh's subcommands against a qk
// broker. An open transaction of a franz-go producer shows in list,
// describe and describe-producers; a transaction no coordinator knows
// (a raw transactional produce) is found by find-hanging, while the open
// one, Ongoing at its coordinator, is not; abort --start-offset ends the
// hanging one, and the partition's last stable offset reaches its high
// watermark. The hanging transaction needs KIP-890's verification off:
// with it on, the raw produce is refused (as it should be).
func TestTransactionsQK(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithConfig("transaction.partition.verification.enable", "false"))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"tx", "hang"} {
		r, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		require.NoError(t, err)
		require.NoError(t, r.Err)
	}

	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("qk-tx"), kgo.DefaultProduceTopic("tx"),
		kgo.TransactionTimeout(time.Minute))
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.BeginTransaction())
	for i := range 2 {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
	}
	pid, epoch, err := p.ProducerID(ctx)
	require.NoError(t, err)
	bs := "--bootstrap-server=" + b.Addr
	coord := strconv.Itoa(int(b.ID))

	// list: Kafka's header and one padded row.
	lines := txnLines(t, "transactions", bs, "list")
	require.Equal(t, []string{
		"TransactionalId\tCoordinator\tProducerId\tTransactionState\t",
		fmt.Sprintf("%-15s\t%-11s\t%-10d\t%-16s\t", "qk-tx", coord, pid, "Ongoing"),
	}, lines)
	require.Len(t, txnLines(t, "transactions", bs, "list", "--state-filter", "Ongoing", "--producer-id-filter", strconv.FormatInt(pid, 10)), 2)
	require.Len(t, txnLines(t, "transactions", bs, "list", "--state-filter", "CompleteCommit"), 1, "header only")
	require.Len(t, txnLines(t, "transactions", bs, "list", "--duration-filter", "3600000"), 1, "none running an hour")

	// describe
	lines = txnLines(t, "transactions", bs, "describe", "--transactional-id", "qk-tx")
	require.Len(t, lines, 2)
	require.Equal(t, []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
		"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"}, cells(t, lines[0]))
	row := cells(t, lines[1])
	require.Equal(t, []string{coord, "qk-tx", strconv.FormatInt(pid, 10), strconv.Itoa(int(epoch)), "Ongoing", "60000"}, row[:6])
	require.Regexp(t, `^\d{13}$`, row[6], "start time")
	require.Regexp(t, `^\d+$`, row[7], "duration")
	require.Equal(t, "tx-0", row[8])
	_, stderr, err := runQK(t, "transactions", bs, "describe", "--transactional-id", "nobody")
	require.ErrorContains(t, err, "Failed to describe transaction state of transactional-id `nobody`", stderr)

	// describe-producers, from the leader and from the broker by id.
	for _, extra := range [][]string{nil, {"--broker-id", coord}} {
		lines = txnLines(t, append([]string{"transactions", bs, "describe-producers", "--topic", "tx", "--partition", "0"}, extra...)...)
		require.Len(t, lines, 2)
		require.Equal(t, []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
			"CurrentTransactionStartOffset"}, cells(t, lines[0]))
		row = cells(t, lines[1])
		require.Equal(t, []string{strconv.FormatInt(pid, 10), strconv.Itoa(int(epoch)), "-1", "1"}, row[:4])
		require.Regexp(t, `^\d{13}$`, row[4])
		require.Equal(t, "0", row[5], "the open transaction's first offset")
	}

	// A hanging transaction on "hang", an hour old.
	const ghost = int64(1) << 40
	old := time.Now().Add(-time.Hour)
	produceHanging(t, ctx, b.Addr, "hang", ghost, old)
	hangingRow := fmt.Sprintf("hang \t0        \t%-10d\t0            \t-1              \t0          \t%d\t%-13d\t", ghost, old.UnixMilli(), 60)
	hangingHeader := "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t"
	lines = txnLines(t, "transactions", bs, "find-hanging", "--topic", "hang")
	require.Len(t, lines, 2, "%q", lines)
	require.Equal(t, []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
		"LastTimestamp", "Duration(min)"}, cells(t, lines[0]))
	require.Equal(t, hangingRow, lines[1])
	lines = txnLines(t, "transactions", bs, "find-hanging", "--broker-id", coord, "--max-transaction-timeout", "0")
	require.Len(t, lines, 2, "the open transaction on tx-0 is Ongoing at its coordinator, not hanging: %q", lines)
	require.Equal(t, "hang", cells(t, lines[1])[0])
	// The open one is not hanging, however old it is allowed to be.
	require.Equal(t, []string{hangingHeader}, txnLines(t, "transactions", bs, "find-hanging", "--topic", "tx", "--partition", "0",
		"--max-transaction-timeout", "0"))

	lso := func(topic string) (stable, hw int64) {
		t.Helper()
		c, err := adm.ListCommittedOffsets(ctx, topic)
		require.NoError(t, err)
		e, err := adm.ListEndOffsets(ctx, topic)
		require.NoError(t, err)
		return c[topic][0].Offset, e[topic][0].Offset
	}
	stable, hw := lso("hang")
	require.Equal(t, int64(0), stable, "the hanging transaction holds the LSO")
	require.Equal(t, int64(2), hw)

	// abort: a start offset no transaction has, then the right one.
	_, _, err = runQK(t, "transactions", bs, "abort", "--topic", "hang", "--partition", "0", "--start-offset", "1")
	require.ErrorContains(t, err, "Could not find any open transactions starting at offset 1 on partition hang-0")
	_, _, err = runQK(t, "transactions", bs, "abort", "--topic", "hang", "--partition", "0")
	require.ErrorContains(t, err, "The transaction to abort must be identified either with --start-offset")
	out, stderr, err := runQK(t, "transactions", bs, "abort", "--topic", "hang", "--partition", "0", "--start-offset", "0")
	require.NoError(t, err, stderr)
	require.Empty(t, out)
	stable, hw = lso("hang")
	require.Equal(t, int64(3), hw, "two records and the ABORT marker")
	require.Equal(t, hw, stable, "LSO at the HW once aborted")
	require.Equal(t, []string{hangingHeader}, txnLines(t, "transactions", bs, "find-hanging", "--topic", "hang"))
	lines = txnLines(t, "transactions", bs, "describe-producers", "--topic", "hang", "--partition", "0")
	row = cells(t, lines[1])
	require.Equal(t, []string{strconv.FormatInt(ghost, 10), "0", "0", "1"}, row[:4], "the marker's coordinator epoch")
	require.Equal(t, "None", row[5])

	// The old form: producer id, epoch and coordinator epoch. Abort the
	// franz-go producer's open transaction with it.
	out, stderr, err = runQK(t, "transactions", bs, "abort", "--topic", "tx", "--partition", "0",
		"--producer-id", strconv.FormatInt(pid, 10), "--producer-epoch", strconv.Itoa(int(epoch)), "--coordinator-epoch", "-1")
	require.NoError(t, err, stderr)
	require.Empty(t, out)
	stable, hw = lso("tx")
	require.Equal(t, hw, stable)

	// json
	out, _, err = runQK(t, "transactions", bs, "--format", "json", "describe-producers", "--topic", "hang", "--partition", "0")
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`"current_transaction_start_offset": -1`), out)
}

// TestConsumeIsolationLevel: consume --isolation-level read_committed
// skips an aborted transaction's records and -e ends at the last stable
// offset, past the final marker; read_uncommitted (the default, as
// Kafka's console consumer) prints them all.
func TestConsumeIsolationLevel(t *testing.T) {
	b := brokertest.StartBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	require.NoError(t, err)
	defer cl.Close()
	r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "iso")
	require.NoError(t, err)
	require.NoError(t, r.Err)
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.TransactionalID("iso-tx"), kgo.DefaultProduceTopic("iso"))
	require.NoError(t, err)
	defer p.Close()
	txn := func(commit bool, values ...string) {
		t.Helper()
		require.NoError(t, p.BeginTransaction())
		for _, v := range values {
			require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
		}
		require.NoError(t, p.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	txn(true, "c0", "c1")
	txn(false, "a0", "a1")
	txn(true, "c2")
	// The last marker is written after EndTxn answers: wait for the LSO.
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err1 := adm.ListCommittedOffsets(ctx, "iso")
		e, err2 := adm.ListEndOffsets(ctx, "iso")
		if err1 == nil && err2 == nil && c["iso"][0].Offset == 8 && e["iso"][0].Offset == 8 {
			break
		}
		require.True(t, time.Now().Before(deadline), "LSO and HW never reached 8 (5 records, 3 markers)")
		time.Sleep(50 * time.Millisecond)
	}
	out, stderr, err := runQK(t, "consume", "-b", b.Addr, "iso", "-o", "start", "-e", "--isolation-level", "read_committed")
	require.NoError(t, err, stderr)
	require.Equal(t, "c0\nc1\nc2\n", out)
	out, stderr, err = runQK(t, "consume", "-b", b.Addr, "iso", "-o", "start", "-e")
	require.NoError(t, err, stderr)
	require.Equal(t, "c0\nc1\na0\na1\nc2\n", out)
	_, _, err = runQK(t, "consume", "-b", b.Addr, "iso", "--isolation-level", "snapshot")
	require.ErrorContains(t, err, `--isolation-level "snapshot"`)
}
