//go:build linux

package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
)

// txnClient drives one transactional id with raw requests, so a test
// can send what a well-behaved client never would.
type txnClient struct {
	t     *testing.T
	c     *rawConn
	id    string
	pid   int64
	epoch int16
	seq   int32
}

func newTxnClient(t *testing.T, addr, id string) *txnClient {
	t.Helper()
	c := dialRaw(t, addr)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey, fc.CoordinatorType = 3, id, 1
	waitFor(t, 30*time.Second, "a transaction coordinator for "+id, func() bool {
		fr := kmsg.NewPtrFindCoordinatorResponse()
		c.roundTrip(fc, fr)
		return fr.ErrorCode == 0
	})
	tc := &txnClient{t: t, c: c, id: id}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &id, 60000
	waitFor(t, 30*time.Second, "InitProducerId for "+id, func() bool {
		resp := kmsg.NewPtrInitProducerIDResponse()
		c.roundTrip(req, resp)
		tc.pid, tc.epoch = resp.ProducerID, resp.ProducerEpoch
		return resp.ErrorCode == 0
	})
	return tc
}

func (tc *txnClient) addPartition(topic string, p int32) int16 {
	tc.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, tc.id, tc.pid, tc.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	tc.c.roundTrip(req, resp)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (tc *txnClient) produce(topic string, n int) int16 {
	tc.t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = tc.pid, tc.epoch, tc.seq, true
	bld := record.NewBuilder(opts)
	for i := range n {
		bld.Append(time.Now().UnixMilli(), nil, fmt.Appendf(nil, "%s-%d", tc.id, int(tc.seq)+i), nil)
	}
	batch, err := bld.Build()
	require.NoError(tc.t, err)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 5000, &tc.id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	tc.c.roundTrip(req, resp)
	code := resp.Topics[0].Partitions[0].ErrorCode
	if code == 0 {
		tc.seq += int32(n)
	}
	return code
}

func (tc *txnClient) end(commit bool) int16 {
	tc.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 3, tc.id, tc.pid, tc.epoch, commit
	resp := kmsg.NewPtrEndTxnResponse()
	tc.c.roundTrip(req, resp)
	return resp.ErrorCode
}

// TestTxnVerification (KIP-890 part 1): a transactional produce to a
// partition the producer did not add to its transaction, or after its
// transaction ended, is refused INVALID_TXN_STATE and writes nothing, so
// no transaction is left hanging on the partition (the LSO stays at the
// HW); the same produce after AddPartitionsToTxn is taken. Bad
// transactional requests get Kafka's codes.
func TestTxnVerification(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "verify", 1, nil)
	tc := newTxnClient(t, b.Addr, "verifier")

	require.Equal(t, kerr.InvalidTxnState.Code, tc.produce("verify", 3), "a partition not in the transaction")
	requireStable(t, b.Addr, "verify")
	hw := endOffset(t, b.Addr, "verify", false)
	require.Zero(t, hw, "the refused batch was appended")

	require.Zero(t, tc.addPartition("verify", 0))
	require.Zero(t, tc.produce("verify", 3))
	require.Zero(t, tc.produce("verify", 2), "later batches join the open transaction")
	require.Less(t, endOffset(t, b.Addr, "verify", true), endOffset(t, b.Addr, "verify", false), "the open transaction holds the LSO")
	require.Zero(t, tc.end(false))
	waitFor(t, 10*time.Second, "the abort marker written", func() bool {
		return endOffset(t, b.Addr, "verify", true) == endOffset(t, b.Addr, "verify", false) && endOffset(t, b.Addr, "verify", false) == 6
	})

	// A late batch of the ended transaction (a stalled producer's retry
	// arriving after the abort): not in any ongoing transaction.
	require.Equal(t, kerr.InvalidTxnState.Code, tc.produce("verify", 1), "a produce after the transaction ended")
	requireStable(t, b.Addr, "verify")

	// Bad input: EndTxn with no transaction, a stale epoch, and a
	// marker of an older coordinator epoch.
	require.Equal(t, kerr.InvalidTxnState.Code, tc.end(true), "EndTxn commit with no transaction")
	stale := *tc
	stale.epoch--
	fresh := newTxnClient(t, b.Addr, "verifier") // bumps the epoch: tc is now a zombie
	require.Equal(t, tc.epoch+1, fresh.epoch)
	require.Equal(t, kerr.ProducerFenced.Code, tc.addPartition("verify", 0), "AddPartitionsToTxn v3 from a fenced epoch (v2+: PRODUCER_FENCED)")
	require.Equal(t, kerr.ProducerFenced.Code, tc.end(true), "EndTxn v3 from a fenced epoch")

	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = fresh.pid, fresh.epoch, true, -5
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "verify", []int32{0}
	m.Topics = append(m.Topics, mt)
	wm.Markers = append(wm.Markers, m)
	wr := kmsg.NewPtrWriteTxnMarkersResponse()
	tc.c.roundTrip(wm, wr)
	require.Equal(t, kerr.TransactionCoordinatorFenced.Code, wr.Markers[0].Topics[0].Partitions[0].ErrorCode,
		"a marker of an older coordinator epoch")
	requireStable(t, b.Addr, "verify")
}

// endOffset is partition 0's end: the LSO (committed) or the HW.
func endOffset(t *testing.T, addr, topic string, committed bool) int64 {
	t.Helper()
	adm := kadm.NewClient(newClient(t, []string{addr}))
	list := adm.ListEndOffsets // read_uncommitted: the HW
	if committed {
		list = adm.ListCommittedOffsets // read_committed: the LSO
	}
	ends, err := list(testCtx(t), topic)
	require.NoError(t, err)
	o, ok := ends.Lookup(topic, 0)
	require.True(t, ok)
	require.NoError(t, o.Err)
	return o.Offset
}

// requireStable: partition 0's LSO is its HW (no transaction open).
func requireStable(t *testing.T, addr, topic string) {
	t.Helper()
	require.Equal(t, endOffset(t, addr, topic, false), endOffset(t, addr, topic, true), "the LSO of %s-0 is behind its HW", topic)
}

// TestTxnOffsetCommitVerified: TxnOffsetCommit for a group whose offsets
// partition the producer did not add (no AddOffsetsToTxn) is refused
// INVALID_TXN_STATE; after AddOffsetsToTxn it is taken.
func TestTxnOffsetCommitVerified(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "in", 1, nil)
	tc := newTxnClient(t, b.Addr, "committer")
	// The group's coordinator (and __consumer_offsets) first.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey = 3, "g"
	waitFor(t, 30*time.Second, "a group coordinator", func() bool {
		fr := kmsg.NewPtrFindCoordinatorResponse()
		tc.c.roundTrip(fc, fr)
		return fr.ErrorCode == 0
	})
	commit := func() int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = 3, tc.id, "g", tc.pid, tc.epoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 5, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		tc.c.roundTrip(req, resp)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, kerr.InvalidTxnState.Code, commit(), "TxnOffsetCommit for a group the producer did not add")

	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version, ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = 3, tc.id, tc.pid, tc.epoch, "g"
	ar := kmsg.NewPtrAddOffsetsToTxnResponse()
	tc.c.roundTrip(ao, ar)
	require.Zero(t, ar.ErrorCode)
	require.Zero(t, commit())

	// Pending until the commit: require_stable answers UNSTABLE_OFFSET_COMMIT.
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group, of.RequireStable = 7, "g", true
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = "in", []int32{0}
	of.Topics = append(of.Topics, ot)
	fetchOffset := func() (int64, int16) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		tc.c.roundTrip(of, resp)
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	off, code := fetchOffset()
	require.Equal(t, kerr.UnstableOffsetCommit.Code, code)
	require.Equal(t, int64(-1), off)
	require.Zero(t, tc.end(true))
	waitFor(t, 10*time.Second, "the committed offset visible", func() bool {
		off, code := fetchOffset()
		return code == 0 && off == 5
	})
}
