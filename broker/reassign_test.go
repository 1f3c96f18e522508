//go:build linux

package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/metadata"
)

// TestReassignment: AlterPartitionReassignments on three in-process
// brokers while an idempotent acks=all producer writes. Partition 0 goes
// from one replica to three (the replication factor raised), partition 1
// moves from broker 1 to broker 2. ListPartitionReassignments shows them
// until they complete; then the metadata shows the target replicas, all
// in sync, broker 1 no longer holds partition 1's log, the replicas of
// partition 0 are byte for byte the same, and every acknowledged record
// is there exactly once, in order.
func TestReassignment(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	createReplicated(t, c, "moving", map[int32][]int32{0: {0}, 1: {1}}, nil)
	waitFor(t, 10*time.Second, "the topic led on every broker", func() bool {
		for _, b := range c.Brokers {
			tp := b.Cache().Snapshot().Topics["moving"]
			if tp == nil || len(tp.Partitions) != 2 || tp.Partitions[0].Leader != 0 || tp.Partitions[1].Leader != 1 {
				return false
			}
		}
		return true
	})
	cl := newClient(t, c.Addrs(), kgo.DefaultProduceTopic("moving"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// A backlog the new replicas must copy.
	var recs []*kgo.Record
	for i := range 2000 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: bytes.Repeat([]byte{byte(i)}, 512)})
	}
	require.NoError(t, cl.ProduceSync(testCtx(t), recs...).FirstErr())

	// Writes throughout, each acknowledgement recorded.
	var (
		mu    sync.Mutex
		acked = map[int32][]string{}
	)
	ctx, stop := context.WithCancel(testCtx(t))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 5000 && ctx.Err() == nil; i++ {
			v := fmt.Sprintf("during-%05d", i)
			r := &kgo.Record{Partition: int32(i % 2), Value: []byte(v)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err == nil {
				mu.Lock()
				acked[r.Partition] = append(acked[r.Partition], v)
				mu.Unlock()
			}
		}
	})

	adm := newAdmin(t, c.Addrs()...)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, []int32{0, 1, 2})
	req.Assign("moving", 1, []int32{2})
	res, err := adm.AlterPartitionAssignments(testCtx(t), req)
	require.NoError(t, err)
	for _, r := range res.Sorted() {
		require.NoError(t, r.Err, "partition %d", r.Partition)
	}
	waitFor(t, 30*time.Second, "both reassignments complete", func() bool {
		l, err := adm.ListPartitionReassignments(testCtx(t), kadm.TopicsSet{"moving": {0: {}, 1: {}}})
		return err == nil && len(l.Sorted()) == 0
	})
	stop()
	wg.Wait()

	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the target replicas in every broker's metadata", func() bool {
			tp := b.Cache().Snapshot().Topics["moving"]
			p0, p1 := tp.Partitions[0], tp.Partitions[1]
			return slices.Equal(p0.Replicas, []int32{0, 1, 2}) && len(p0.ISR) == 3 &&
				slices.Equal(p1.Replicas, []int32{2}) && slices.Equal(p1.ISR, []int32{2}) && p1.Leader == 2
		})
	}
	waitFor(t, 10*time.Second, "partition 1 gone from broker 1", func() bool {
		_, err := c.Brokers[1].Replicas().Partition("moving", 1)
		_, statErr := os.Stat(filepath.Join(c.Brokers[1].Dir, "moving-1"))
		return err != nil && errors.Is(statErr, os.ErrNotExist)
	})
	// The store holds the target, without adding or removing replicas.
	data, _, err := c.Store.Get(testCtx(t), metadata.TopicPath("moving"))
	require.NoError(t, err)
	ta, err := metadata.UnmarshalTopicAssignment(data)
	require.NoError(t, err)
	require.Equal(t, map[int32][]int32{0: {0, 1, 2}, 1: {2}}, ta.Partitions)
	require.Empty(t, ta.AddingReplicas)
	require.Empty(t, ta.RemovingReplicas)

	lp, err := c.Brokers[0].Replicas().Partition("moving", 0)
	require.NoError(t, err)
	leo := lp.Log().LogEndOffset()
	for _, b := range c.Brokers[1:] {
		waitFor(t, 10*time.Second, "partition 0's new replicas caught up", func() bool {
			p, err := b.Replicas().Partition("moving", 0)
			return err == nil && p.Log().LogEndOffset() == leo
		})
	}
	segment := func(b *brokertest.Broker) []byte {
		data, err := os.ReadFile(filepath.Join(b.Dir, "moving-0", "00000000000000000000.log"))
		require.NoError(t, err)
		return data
	}
	for _, b := range c.Brokers[1:] {
		require.True(t, bytes.Equal(segment(c.Brokers[0]), segment(b)), "broker %d's copy of partition 0 differs", b.ID)
	}

	// DescribeLogDirs, per replica: every broker reports its copy of
	// partition 0, of the leader's size; only broker 2 has partition 1.
	dirs, err := adm.DescribeAllLogDirs(testCtx(t), kadm.TopicsSet{"moving": {0: {}, 1: {}}})
	require.NoError(t, err)
	sizes := map[int32]map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		require.NoError(t, d.Err)
		for _, p := range d.Topics.Sorted() {
			if sizes[p.Partition] == nil {
				sizes[p.Partition] = map[int32]int64{}
			}
			sizes[p.Partition][p.Broker] = p.Size
		}
	})
	require.Len(t, sizes[0], 3)
	require.Equal(t, lp.Log().Size(), sizes[0][1])
	require.Equal(t, lp.Log().Size(), sizes[0][2])
	require.Len(t, sizes[1], 1)
	require.Contains(t, sizes[1], int32(2))

	mu.Lock()
	defer mu.Unlock()
	total := 2000 + len(acked[0]) + len(acked[1])
	got := consume(t, c.Addrs(), "moving", total)
	seen := map[int32][]string{}
	for _, r := range got {
		if bytes.HasPrefix(r.Value, []byte("during-")) {
			seen[r.Partition] = append(seen[r.Partition], string(r.Value))
		}
	}
	for p := range int32(2) {
		// The one write in flight when the producer stopped may be there
		// unacknowledged, after every acknowledged one.
		s := seen[p]
		if len(s) == len(acked[p])+1 {
			s = s[:len(acked[p])]
		}
		require.Equal(t, acked[p], s, "partition %d: every acknowledged record once, in order", p)
	}
	require.NotEmpty(t, acked[0])
	require.NotEmpty(t, acked[1])
}

// TestReassignmentCancelAndErrors: a reassignment that cannot complete
// (its new replica's broker is stopped) is listed with its adding
// replicas, and a cancellation returns the partition to its origin;
// Kafka's errors for bad targets; a reassignment asked through
// /admin/reassign_partitions, as older tools write it, is carried out
// and the node removed.
func TestReassignmentCancelAndErrors(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("controlled.shutdown.max.retries", "0"),
		brokertest.WithConfig("replica.lag.time.max.ms", "2000"))
	createReplicated(t, c, "cancel", map[int32][]int32{0: {0, 1}, 1: {0}}, nil)
	waitFor(t, 10*time.Second, "the topic led with full ISRs", func() bool {
		tp := c.Brokers[0].Cache().Snapshot().Topics["cancel"]
		return tp != nil && len(tp.Partitions) == 2 && len(tp.Partitions[0].ISR) == 2 && tp.Partitions[1].Leader == 0
	})
	adm := newAdmin(t, c.Addrs()...)

	// Errors, per partition, as Kafka's controller gives them.
	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign("cancel", 0, []int32{0, 0})
	bad.Assign("cancel", 1, []int32{0, 7})
	bad.Assign("absent", 0, []int32{0})
	bad.CancelAssign("cancel", 5)
	res, err := adm.AlterPartitionAssignments(testCtx(t), bad)
	require.NoError(t, err)
	require.ErrorIs(t, res["cancel"][0].Err, kerr.InvalidReplicaAssignment)
	require.ErrorIs(t, res["cancel"][1].Err, kerr.InvalidReplicaAssignment)
	require.ErrorIs(t, res["absent"][0].Err, kerr.UnknownTopicOrPartition)
	require.ErrorIs(t, res["cancel"][5].Err, kerr.UnknownTopicOrPartition)
	var none kadm.AlterPartitionAssignmentsReq
	none.CancelAssign("cancel", 0)
	res, err = adm.AlterPartitionAssignments(testCtx(t), none)
	require.NoError(t, err)
	require.ErrorIs(t, res["cancel"][0].Err, kerr.NoReassignmentInProgress)

	// Partition 1 gains a replica on broker 2, which then stops: the
	// reassignment stays in progress until cancelled.
	cl := newClient(t, c.Addrs(), kgo.DefaultProduceTopic("cancel"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 100 {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Partition: 1, Value: []byte(fmt.Sprint(i))}).FirstErr())
	}
	c.Brokers[2].Stop()
	waitFor(t, 10*time.Second, "broker 2 gone from the metadata", func() bool {
		_, ok := c.Brokers[0].Cache().Snapshot().Brokers[2]
		return !ok
	})
	var grow kadm.AlterPartitionAssignmentsReq
	grow.Assign("cancel", 1, []int32{0, 2})
	res, err = adm.AlterPartitionAssignments(testCtx(t), grow)
	require.NoError(t, err)
	require.ErrorIs(t, res["cancel"][1].Err, kerr.InvalidReplicaAssignment, "a broker that is down is refused")
	c.Brokers[2].Restart()
	waitFor(t, 10*time.Second, "broker 2 back", func() bool {
		_, ok := c.Brokers[0].Cache().Snapshot().Brokers[2]
		return ok
	})
	res, err = adm.AlterPartitionAssignments(testCtx(t), grow)
	require.NoError(t, err)
	require.NoError(t, res["cancel"][1].Err)
	c.Brokers[2].Stop()
	l, err := adm.ListPartitionReassignments(testCtx(t), nil)
	require.NoError(t, err)
	// Unless broker 2 copied 100 records before it stopped, it is in
	// progress; either way, once listed, cancel it.
	if rs := l.Sorted(); len(rs) == 1 {
		require.Equal(t, []int32{0, 2}, rs[0].Replicas)
		require.Equal(t, []int32{2}, rs[0].AddingReplicas)
		require.Empty(t, rs[0].RemovingReplicas)
		var cancel kadm.AlterPartitionAssignmentsReq
		cancel.CancelAssign("cancel", 1)
		res, err = adm.AlterPartitionAssignments(testCtx(t), cancel)
		require.NoError(t, err)
		require.NoError(t, res["cancel"][1].Err)
		waitFor(t, 10*time.Second, "partition 1 back on broker 0 alone", func() bool {
			p := c.Brokers[0].Cache().Snapshot().Topics["cancel"].Partitions[1]
			return slices.Equal(p.Replicas, []int32{0}) && slices.Equal(p.ISR, []int32{0})
		})
		l, err = adm.ListPartitionReassignments(testCtx(t), nil)
		require.NoError(t, err)
		require.Empty(t, l.Sorted())
	}
	c.Brokers[2].Restart()

	// Through ZooKeeper: partition 0 moves to brokers 1 and 2.
	sess, err := c.Store.NewSession()
	require.NoError(t, err)
	defer sess.Close()
	_, err = sess.Create(testCtx(t), metadata.ReassignPartitionsPath, metadata.MarshalReassignment([]metadata.PartitionReassignment{
		{Topic: "cancel", Partition: 0, Replicas: []int32{1, 2}}}), 0)
	require.NoError(t, err)
	waitFor(t, 30*time.Second, "partition 0 on brokers 1 and 2, the node removed", func() bool {
		p := c.Brokers[0].Cache().Snapshot().Topics["cancel"].Partitions[0]
		_, exists, err := c.Store.Exists(testCtx(t), metadata.ReassignPartitionsPath)
		return err == nil && !exists && slices.Equal(p.Replicas, []int32{1, 2}) && len(p.ISR) == 2 && p.Leader != 0
	})
}
