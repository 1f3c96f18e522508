package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

func newManager(t *testing.T, dir string, onHW func(string, int32)) *Manager {
	t.Helper()
	logs, err := log.OpenManager(log.ManagerConfig{LogDirs: []string{dir}})
	require.NoError(t, err)
	t.Cleanup(func() { logs.Close() })
	return New(Config{BrokerID: 1, Logs: logs, OnHighWatermark: onHW})
}

func topicConfig(t *testing.T) config.Topic {
	t.Helper()
	b, _, err := config.Load(config.LoadOptions{})
	require.NoError(t, err)
	return b.TopicDefaults()
}

func batch(t *testing.T, n int) []byte {
	t.Helper()
	bld := record.NewBuilder(record.DefaultBatchOptions())
	for i := range n {
		bld.Append(int64(1000+i), nil, []byte(fmt.Sprint(i)), nil)
	}
	b, err := bld.Build()
	require.NoError(t, err)
	return b
}

func leaderState(t *testing.T, topic string, p, epoch int32) PartitionState {
	return PartitionState{Topic: topic, TopicID: [16]byte{1, 2, 3}, Partition: p, Leader: 1, LeaderEpoch: epoch,
		ISR: []int32{1}, Replicas: []int32{1}, Config: topicConfig(t)}
}

func TestLeaderAppendAdvancesHighWatermark(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	notified := map[string]int{}
	m := newManager(t, dir, func(topic string, p int32) {
		mu.Lock()
		notified[fmt.Sprintf("%s-%d", topic, p)]++
		mu.Unlock()
	})
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{leaderState(t, "t", 0, 0), leaderState(t, "t", 1, 0)}))
	p, err := m.Partition("t", 0)
	require.NoError(t, err)
	require.True(t, p.IsLeader())
	id, err := checkpoint.ReadPartitionMetadata(vfs.OS, filepath.Join(dir, "t-0"))
	require.NoError(t, err)
	require.Equal(t, [16]byte{1, 2, 3}, id, "partition.metadata written")

	info, err := p.AppendAsLeader(batch(t, 3), 1)
	require.NoError(t, err)
	require.Equal(t, int64(0), info.FirstOffset)
	require.Equal(t, int64(3), p.HighWatermark(), "HW = LEO with an ISR of one")
	require.Equal(t, 1, notified["t-0"])
	ri, err := p.ReadForConsumer(0, 1<<20, false)
	require.NoError(t, err)
	require.Positive(t, ri.Region.Length)
	require.Equal(t, int64(3), ri.HighWatermark)

	// Concurrent appends never move the HW backwards and end at LEO.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				before := p.HighWatermark()
				_, err := p.AppendAsLeader(batch(t, 2), 1)
				if err != nil || p.HighWatermark() < before {
					t.Error("append failed or HW went back", err)
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, p.Log().LogEndOffset(), p.HighWatermark())
	require.Equal(t, int64(3+8*20*2), p.HighWatermark())

	_, err = m.Partition("t", 9)
	require.ErrorIs(t, err, ErrUnknownTopicOrPartition)
}

func TestMinInsyncReplicas(t *testing.T) {
	m := newManager(t, t.TempDir(), nil)
	st := leaderState(t, "strict", 0, 0)
	st.Config.MinInsyncReplicas = 2
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{st}))
	p, _ := m.Partition("strict", 0)
	_, err := p.AppendAsLeader(batch(t, 1), -1)
	require.ErrorIs(t, err, ErrNotEnoughReplicas)
	_, err = p.AppendAsLeader(batch(t, 1), 1)
	require.NoError(t, err, "acks=1 does not need the ISR")
	require.Equal(t, int64(1), p.Log().LogEndOffset())
}

func TestLeaderEpochs(t *testing.T) {
	m := newManager(t, t.TempDir(), nil)
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{leaderState(t, "e", 0, 3)}))
	p, _ := m.Partition("e", 0)
	_, err := p.AppendAsLeader(batch(t, 2), 1)
	require.NoError(t, err)
	require.NoError(t, p.CheckLeader(3))
	require.NoError(t, p.CheckLeader(-1))
	require.ErrorIs(t, p.CheckLeader(2), ErrFencedLeaderEpoch)
	require.ErrorIs(t, p.CheckLeader(4), ErrUnknownLeaderEpoch)
	epoch, end := p.Log().EndOffsetForEpoch(3)
	require.Equal(t, int32(3), epoch)
	require.Equal(t, int64(2), end)

	errs := m.ApplyLeaderAndISR([]PartitionState{leaderState(t, "e", 0, 2)})
	require.ErrorIs(t, errs[log.TopicPartition{Topic: "e", Partition: 0}], ErrStaleEpoch)

	follower := leaderState(t, "e", 0, 4)
	follower.Leader = 7
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{follower}))
	require.False(t, p.IsLeader())
	_, err = p.AppendAsLeader(batch(t, 1), 1)
	require.ErrorIs(t, err, ErrNotLeaderOrFollower)
}

func TestInconsistentTopicID(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir, nil)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "other-0"), 0o755))
	require.NoError(t, checkpoint.WritePartitionMetadata(vfs.OS, filepath.Join(dir, "other-0"), [16]byte{9}))
	errs := m.ApplyLeaderAndISR([]PartitionState{leaderState(t, "other", 0, 0)})
	require.ErrorIs(t, errs[log.TopicPartition{Topic: "other", Partition: 0}], ErrInconsistentTopicID)
	_, err := m.Partition("other", 0)
	require.True(t, errors.Is(err, ErrUnknownTopicOrPartition), "not served")
}

func TestTopicConfigAndStop(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir, nil)
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{leaderState(t, "c", 0, 0)}))
	cfg := topicConfig(t)
	cfg.RetentionMs = 1234
	cfg.MessageTimestampType = "LogAppendTime"
	require.NoError(t, m.SetTopicConfig("c", cfg))
	p, _ := m.Partition("c", 0)
	require.Equal(t, int64(1234), p.Log().Config().RetentionMs)
	require.Equal(t, record.LogAppendTime, p.Log().Config().MessageTimestampType)
	require.Equal(t, int64(1234), p.Config().RetentionMs)

	require.NoError(t, m.StopReplica("c", 0, true))
	_, err := m.Partition("c", 0)
	require.ErrorIs(t, err, ErrUnknownTopicOrPartition)
	_, err = os.Stat(filepath.Join(dir, "c-0"))
	require.True(t, os.IsNotExist(err), "partition dir removed")
}

func TestLogConfig(t *testing.T) {
	tc := topicConfig(t)
	c := LogConfig(tc)
	require.NoError(t, c.Validate())
	require.Equal(t, int64(tc.SegmentBytes), c.SegmentBytes)
	require.Equal(t, tc.RetentionMs, c.RetentionMs)
	require.Equal(t, int64(tc.MaxMessageBytes), c.MaxMessageBytes)
	require.Equal(t, "delete", c.CleanupPolicy)
	tc.CleanupPolicy = config.CleanupPolicy{Compact: true, Delete: true}
	require.Equal(t, "compact,delete", LogConfig(tc).CleanupPolicy)
}

// A leader with a follower in its ISR commits only what the follower has
// fetched: appends leave the high watermark where it is, the follower's
// fetches raise it (waking delayed fetches), the follower reads past it,
// and only assigned replicas may fetch as followers. A new ISR of the
// same leader epoch is committed; the follower that left no longer holds
// the high watermark.
func TestLeaderWithFollower(t *testing.T) {
	dir := t.TempDir()
	var hwCalls atomic.Int64
	m := newManager(t, dir, func(string, int32) { hwCalls.Add(1) })
	st := leaderState(t, "r", 0, 3)
	st.Replicas, st.ISR = []int32{1, 2}, []int32{1, 2}
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{st}))
	p, err := m.Partition("r", 0)
	require.NoError(t, err)

	before := hwCalls.Load()
	_, err = p.AppendAsLeader(batch(t, 4), -1)
	require.NoError(t, err)
	require.Equal(t, int64(0), p.HighWatermark(), "the follower has nothing yet")
	require.Equal(t, before+1, hwCalls.Load(), "the append wakes fetches (followers long-poll at the log end)")

	ri, err := p.ReadForFollower(0, 1<<20)
	require.NoError(t, err)
	require.Positive(t, ri.Region.Length, "a follower reads above the high watermark")
	ri.Region.Release()
	ci, err := p.ReadForConsumer(0, 1<<20, false)
	require.NoError(t, err)
	require.Zero(t, ci.Region.Length, "a consumer does not")
	ci.Region.Release()

	require.NoError(t, p.FollowerFetch(2, 2))
	require.Equal(t, int64(2), p.HighWatermark())
	require.NoError(t, p.FollowerFetch(2, 4))
	require.Equal(t, int64(4), p.HighWatermark())
	require.Equal(t, before+3, hwCalls.Load(), "each advance wakes the waiters")
	f, ok := p.FollowerState(2)
	require.True(t, ok)
	require.Equal(t, int64(4), f.LEO)

	require.ErrorIs(t, p.FollowerFetch(3, 0), ErrNotLeaderOrFollower, "not a replica")

	_, err = p.AppendAsLeader(batch(t, 2), -1)
	require.NoError(t, err)
	require.Equal(t, int64(4), p.HighWatermark())
	// The ISR shrinks to the leader (same epoch, new partition epoch):
	// the high watermark reaches the leader's end.
	st.ISR = []int32{1}
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{st}))
	require.Equal(t, int64(6), p.HighWatermark())

	// As a follower, no leader state: fetches from others are refused.
	st.Leader, st.LeaderEpoch = 2, 4
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{st}))
	require.ErrorIs(t, p.FollowerFetch(2, 6), ErrNotLeaderOrFollower)
	_, ok = p.FollowerState(2)
	require.False(t, ok)
}
