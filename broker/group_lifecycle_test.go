//go:build linux

package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/record"
)

// offsetsLog is a group's __consumer_offsets partition read back from
// disk: every record in offset order, keyed by offsetsKeyName.
type offsetsLog []offsetsRecord

type offsetsRecord struct {
	key   string
	value []byte // nil: tombstone
}

func offsetKeyName(groupID, topic string, partition int32) string {
	return fmt.Sprintf("offset %s/%s/%d", groupID, topic, partition)
}

func groupKeyName(groupID string) string { return "group " + groupID }

// readOffsetsLog reads every segment of the __consumer_offsets partition
// of groupID (offsets.topic.num.partitions 50) with record.NewIterator.
func readOffsetsLog(t *testing.T, dir, groupID string) offsetsLog {
	t.Helper()
	p := group.PartitionFor(groupID, 50)
	files, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("%s-%d", group.Topic, p), "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	slices.Sort(files) // zero-padded base offsets sort in log order
	var out offsetsLog
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		it := record.NewIterator(data)
		for it.Next() {
			b := it.Entry().Batch
			if b == nil || b.IsControl() {
				continue
			}
			require.NoError(t, b.Iterate(func(r *record.Record) error {
				k, err := group.ParseKey(r.Key)
				require.NoError(t, err)
				var name string
				switch {
				case k.IsOffset():
					name = offsetKeyName(k.Group, k.Topic, k.Partition)
				case k.IsGroup():
					name = groupKeyName(k.Group)
				default:
					t.Fatalf("%s: unexpected key version %d", f, k.Version)
				}
				out = append(out, offsetsRecord{key: name, value: slices.Clone(r.Value)})
				return nil
			}))
		}
		require.NoError(t, it.Err())
	}
	return out
}

// requireDeleted checks that key had a value and then a tombstone, the
// last record for it.
func (l offsetsLog) requireDeleted(t *testing.T, key string) {
	t.Helper()
	i := slices.IndexFunc(l, func(r offsetsRecord) bool { return r.key == key && r.value != nil })
	require.GreaterOrEqual(t, i, 0, "no value for %s on disk", key)
	last := l.lastIndex(key)
	require.Nil(t, l[last].value, "latest record of %s is not a tombstone", key)
}

// lastIndex returns the index of the last record for key, -1 if none.
func (l offsetsLog) lastIndex(key string) int {
	last := -1
	for j, r := range l {
		if r.key == key {
			last = j
		}
	}
	return last
}

// requireTombstone checks that the last record for key is a tombstone
// (for keys that may never have had a value, like a simple group's
// metadata).
func (l offsetsLog) requireTombstone(t *testing.T, key string) {
	t.Helper()
	last := l.lastIndex(key)
	require.GreaterOrEqual(t, last, 0, "no record for %s on disk", key)
	require.Nil(t, l[last].value, "latest record of %s is not a tombstone", key)
}

// requireLive checks that key has a value and no tombstone at all.
func (l offsetsLog) requireLive(t *testing.T, key string) {
	t.Helper()
	var values int
	for _, r := range l {
		if r.key == key {
			require.NotNil(t, r.value, "tombstone for %s on disk", key)
			values++
		}
	}
	require.Positive(t, values, "no value for %s on disk", key)
}

// requireLatestValue checks that the last record for key is a value.
func (l offsetsLog) requireLatestValue(t *testing.T, key string) {
	t.Helper()
	last := l.lastIndex(key)
	require.GreaterOrEqual(t, last, 0, "no record for %s on disk", key)
	require.NotNil(t, l[last].value, "latest record of %s is a tombstone", key)
}

// fetchCommitted asks OffsetFetch (a raw v8+ request) for partitions of
// topic and returns partition -> committed offset, -1 for none. It
// retries while the coordinator is loading.
func fetchCommitted(t *testing.T, cl *kgo.Client, groupID, topic string, partitions ...int32) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = groupID
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, partitions
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	var out map[int32]int64
	waitFor(t, 20*time.Second, "OffsetFetch of "+groupID, func() bool {
		resp, err := req.RequestWith(testCtx(t), cl)
		require.NoError(t, err)
		require.Len(t, resp.Groups, 1)
		g := resp.Groups[0]
		if g.ErrorCode == kerr.CoordinatorLoadInProgress.Code || g.ErrorCode == kerr.NotCoordinator.Code {
			return false
		}
		require.Zero(t, g.ErrorCode, "group error %v", kerr.ErrorForCode(g.ErrorCode))
		out = map[int32]int64{}
		for _, rt := range g.Topics {
			require.Equal(t, topic, rt.Topic)
			for _, p := range rt.Partitions {
				require.Zero(t, p.ErrorCode, "partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
				out[p.Partition] = p.Offset
			}
		}
		return true
	})
	return out
}

func waitGroupState(t *testing.T, adm *kadm.Client, groupID, state string) {
	t.Helper()
	waitFor(t, 20*time.Second, groupID+" to be "+state, func() bool {
		dg, err := adm.DescribeGroups(testCtx(t), groupID)
		return err == nil && dg[groupID].State == state
	})
}

// TestGroupOffsetsExpire: with offsets.retention.minutes=60 and the
// broker's clock moved 61 minutes on, the offsets of an Empty consumer
// group and of a simple (never joined) group expire with tombstones and
// the groups go; the offsets of a group with a member stay.
func TestGroupOffsetsExpire(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	b := groupBroker(t, brokertest.WithClock(clock),
		brokertest.WithConfig("offsets.retention.minutes", "60"),
		brokertest.WithConfig("offsets.retention.check.interval.ms", "20"),
		// The busy member's session must outlive the 61-minute clock jump,
		// or the coordinator expires it and the group empties meanwhile.
		brokertest.WithConfig("group.max.session.timeout.ms", "10800000"))
	addrs := []string{b.Addr}
	adm := newAdmin(t, b.Addr)
	raw := newClient(t, addrs)
	ctx := testCtx(t)
	createTopic(t, adm, "exp", 2, nil)
	produceN(t, addrs, "exp", "v", 4)

	idle := newGroupConsumer(t, addrs, "exp-idle", "exp")
	pollValues(t, idle, 4)
	require.NoError(t, idle.CommitUncommittedOffsets(ctx))
	idle.Close()
	waitGroupState(t, adm, "exp-idle", "Empty")

	resp, err := adm.CommitOffsets(ctx, "exp-simple", kadm.OffsetsFromRecords(kgo.Record{Topic: "exp", Partition: 1, Offset: 6}))
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	busy := newGroupConsumer(t, addrs, "exp-busy", "exp", kgo.SessionTimeout(2*time.Hour))
	defer busy.Close()
	pollValues(t, busy, 4)
	require.NoError(t, busy.CommitUncommittedOffsets(ctx))
	waitGroupState(t, adm, "exp-busy", "Stable")

	require.Equal(t, map[int32]int64{0: 2, 1: 2}, fetchCommitted(t, raw, "exp-idle", "exp", 0, 1))
	require.Equal(t, map[int32]int64{1: 7}, fetchCommitted(t, raw, "exp-simple", "exp", 1))

	skew.Store(int64(61 * time.Minute))
	waitFor(t, 20*time.Second, "the expired groups to go", func() bool {
		lg, err := adm.ListGroups(ctx)
		return err == nil && slices.Equal([]string{"exp-busy"}, lg.Groups())
	})

	require.Equal(t, map[int32]int64{0: -1, 1: -1}, fetchCommitted(t, raw, "exp-idle", "exp", 0, 1))
	require.Equal(t, map[int32]int64{1: -1}, fetchCommitted(t, raw, "exp-simple", "exp", 1))
	require.Equal(t, map[int32]int64{0: 2, 1: 2}, fetchCommitted(t, raw, "exp-busy", "exp", 0, 1))
	dg, err := adm.DescribeGroups(ctx, "exp-busy", "exp-idle")
	require.NoError(t, err)
	require.Equal(t, "Stable", dg["exp-busy"].State)
	require.Len(t, dg["exp-busy"].Members, 1)
	require.Equal(t, "Dead", dg["exp-idle"].State)

	l := readOffsetsLog(t, b.Dir, "exp-idle")
	l.requireDeleted(t, offsetKeyName("exp-idle", "exp", 0))
	l.requireDeleted(t, offsetKeyName("exp-idle", "exp", 1))
	l.requireDeleted(t, groupKeyName("exp-idle"))
	l = readOffsetsLog(t, b.Dir, "exp-simple")
	l.requireDeleted(t, offsetKeyName("exp-simple", "exp", 1))
	l.requireTombstone(t, groupKeyName("exp-simple"))
	l = readOffsetsLog(t, b.Dir, "exp-busy")
	l.requireLive(t, offsetKeyName("exp-busy", "exp", 0))
	l.requireLive(t, offsetKeyName("exp-busy", "exp", 1))
	// The busy group's metadata may have a tombstone before its value:
	// while its member waited for its second JoinGroup (MEMBER_ID_REQUIRED)
	// the group was Empty with no offsets, and expiry removes such a group
	// at once, as Kafka's cleanupGroupMetadata does. What counts is that
	// its latest record is a value.
	l.requireLatestValue(t, groupKeyName("exp-busy"))
}

// TestOffsetDeleteSuccess: OffsetDelete removes the offsets of an Empty
// group, and of a topic an active group does not subscribe to, with
// tombstones that a broker restart replays.
func TestOffsetDeleteSuccess(t *testing.T) {
	b := groupBroker(t)
	addrs := []string{b.Addr}
	adm := newAdmin(t, b.Addr)
	raw := newClient(t, addrs)
	ctx := testCtx(t)
	createTopic(t, adm, "od-a", 2, nil)
	createTopic(t, adm, "od-b", 1, nil)
	produceN(t, addrs, "od-a", "v", 4)

	// An Empty (simple) group.
	resp, err := adm.CommitOffsets(ctx, "od-empty", kadm.OffsetsFromRecords(
		kgo.Record{Topic: "od-a", Partition: 0, Offset: 4},
		kgo.Record{Topic: "od-a", Partition: 1, Offset: 6},
		kgo.Record{Topic: "od-b", Partition: 0, Offset: 8}))
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	od, err := adm.DeleteOffsets(ctx, "od-empty", kadm.TopicsSet{"od-a": {0: {}}})
	require.NoError(t, err)
	require.NoError(t, od.Error())

	// A Stable group subscribed to od-a only, with an offset of od-b too.
	cl := newGroupConsumer(t, addrs, "od-active", "od-a")
	pollValues(t, cl, 4)
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))
	var commitErr error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"od-b": {0: {Epoch: -1, Offset: 3}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if err == nil {
				for _, rt := range resp.Topics {
					for _, p := range rt.Partitions {
						commitErr = cmpErr(commitErr, kerr.ErrorForCode(p.ErrorCode))
					}
				}
			}
		})
	require.NoError(t, commitErr)
	require.Equal(t, map[int32]int64{0: 3}, fetchCommitted(t, raw, "od-active", "od-b", 0))
	waitGroupState(t, adm, "od-active", "Stable")
	od, err = adm.DeleteOffsets(ctx, "od-active", kadm.TopicsSet{"od-a": {0: {}}, "od-b": {0: {}}})
	require.NoError(t, err)
	require.ErrorIs(t, od["od-a"][0], kerr.GroupSubscribedToTopic)
	require.NoError(t, od["od-b"][0])

	check := func(raw *kgo.Client) {
		t.Helper()
		require.Equal(t, map[int32]int64{0: -1, 1: 7}, fetchCommitted(t, raw, "od-empty", "od-a", 0, 1))
		require.Equal(t, map[int32]int64{0: 9}, fetchCommitted(t, raw, "od-empty", "od-b", 0))
		require.Equal(t, map[int32]int64{0: -1}, fetchCommitted(t, raw, "od-active", "od-b", 0))
		require.Equal(t, map[int32]int64{0: 2, 1: 2}, fetchCommitted(t, raw, "od-active", "od-a", 0, 1))
	}
	check(raw)
	l := readOffsetsLog(t, b.Dir, "od-empty")
	l.requireDeleted(t, offsetKeyName("od-empty", "od-a", 0))
	l.requireLive(t, offsetKeyName("od-empty", "od-a", 1))
	l.requireLive(t, offsetKeyName("od-empty", "od-b", 0))
	l = readOffsetsLog(t, b.Dir, "od-active")
	l.requireDeleted(t, offsetKeyName("od-active", "od-b", 0))
	l.requireLive(t, offsetKeyName("od-active", "od-a", 0))

	cl.Close()
	b.Restart()
	check(newClient(t, []string{b.Addr}))
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// TestDeleteGroupsTombstones: DeleteGroups writes tombstones for the
// group's metadata and every offset, and after a restart the group is
// gone while another group's offsets stay.
func TestDeleteGroupsTombstones(t *testing.T) {
	b := groupBroker(t)
	addrs := []string{b.Addr}
	adm := newAdmin(t, b.Addr)
	raw := newClient(t, addrs)
	ctx := testCtx(t)
	createTopic(t, adm, "dg", 2, nil)
	produceN(t, addrs, "dg", "v", 4)

	cl := newGroupConsumer(t, addrs, "dg-gone", "dg")
	pollValues(t, cl, 4)
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))
	cl.Close()
	waitGroupState(t, adm, "dg-gone", "Empty")
	resp, err := adm.CommitOffsets(ctx, "dg-kept", kadm.OffsetsFromRecords(kgo.Record{Topic: "dg", Partition: 0, Offset: 0}))
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	del, err := adm.DeleteGroups(ctx, "dg-gone")
	require.NoError(t, err)
	require.NoError(t, del["dg-gone"].Err)

	l := readOffsetsLog(t, b.Dir, "dg-gone")
	l.requireDeleted(t, offsetKeyName("dg-gone", "dg", 0))
	l.requireDeleted(t, offsetKeyName("dg-gone", "dg", 1))
	l.requireDeleted(t, groupKeyName("dg-gone"))
	readOffsetsLog(t, b.Dir, "dg-kept").requireLive(t, offsetKeyName("dg-kept", "dg", 0))

	check := func(adm *kadm.Client, raw *kgo.Client) {
		t.Helper()
		waitFor(t, 20*time.Second, "ListGroups with only dg-kept", func() bool {
			lg, err := adm.ListGroups(ctx)
			return err == nil && slices.Equal([]string{"dg-kept"}, lg.Groups())
		})
		require.Equal(t, map[int32]int64{0: -1, 1: -1}, fetchCommitted(t, raw, "dg-gone", "dg", 0, 1))
		require.Equal(t, map[int32]int64{0: 1}, fetchCommitted(t, raw, "dg-kept", "dg", 0))
		dg, err := adm.DescribeGroups(ctx, "dg-gone")
		require.NoError(t, err)
		require.Equal(t, "Dead", dg["dg-gone"].State)
	}
	check(adm, raw)
	b.Restart()
	check(newAdmin(t, b.Addr), newClient(t, []string{b.Addr}))
}
