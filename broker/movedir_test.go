//go:build linux

package broker_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// alterReplicaLogDir sends AlterReplicaLogDirs for one partition and
// returns its error code.
func alterReplicaLogDir(t *testing.T, c *rawConn, dir, topic string, partition int32) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Version = 2
	rd := kmsg.NewAlterReplicaLogDirsRequestDir()
	rd.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	rd.Topics = append(rd.Topics, rt)
	req.Dirs = append(req.Dirs, rd)
	resp := kmsg.NewPtrAlterReplicaLogDirsResponse()
	c.roundTrip(req, resp)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// replicaDirs is where DescribeLogDirs puts a partition: its current
// replica's dir and its future replica's dir ("" for none), with the
// future's offset lag.
func replicaDirs(t *testing.T, c *rawConn, topic string, partition int32) (current, future string, lag int64) {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	c.roundTrip(req, resp)
	for _, d := range resp.Dirs {
		for _, rt := range d.Topics {
			for _, p := range rt.Partitions {
				if rt.Topic != topic || p.Partition != partition {
					continue
				}
				if p.IsFuture {
					future, lag = d.Dir, p.OffsetLag
				} else {
					current = d.Dir
				}
			}
		}
	}
	return current, future, lag
}

// TestAlterReplicaLogDirs: a replica moves between the broker's two log
// dirs (KIP-113) while an acks=all producer writes to it: DescribeLogDirs
// shows the future replica in the destination dir with its lag, the move
// holds to replica.alter.log.dirs.io.max.bytes.per.second (set
// dynamically, as --replica-alter-log-dirs-throttle does), the old
// directory goes, and every acknowledged record is read back once, in
// order, also after a restart. A dir not in log.dirs is LOG_DIR_NOT_FOUND;
// a replica not hosted is REPLICA_NOT_AVAILABLE.
func TestAlterReplicaLogDirs(t *testing.T) {
	const bound = 1 << 20 // bytes/s
	b := brokertest.StartBroker(t, brokertest.WithLogDirs(2),
		// Two 1 s samples: a fresh quota lets one second's worth through
		// at once, then holds to the bound.
		brokertest.WithConfig("replication.quota.window.num", "2"),
		brokertest.WithConfig("replication.quota.window.size.seconds", "1"))
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "mv", 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1048576"),
		"file.delete.delay.ms": kmsg.StringPtr("0")})
	c := dialRaw(t, b.Addr)
	var from string
	waitFor(t, 10*time.Second, "the partition hosted", func() bool {
		from, _, _ = replicaDirs(t, c, "mv", 0)
		return from != ""
	})
	to := b.Dirs[0]
	if filepath.Clean(from) == filepath.Clean(to) {
		to = b.Dirs[1]
	}

	require.Equal(t, kerr.LogDirNotFound.Code, alterReplicaLogDir(t, c, "/not/a/log/dir", "mv", 0))
	require.Equal(t, kerr.ReplicaNotAvailable.Code, alterReplicaLogDir(t, c, to, "absent", 0))

	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("mv"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // sizes as written
	value := strings.Repeat("x", 1000)
	var mu sync.Mutex
	var acked []string
	produce := func(from, to int) {
		for i := from; i < to; i += 100 {
			var wg sync.WaitGroup
			for j := i; j < min(i+100, to); j++ {
				wg.Add(1)
				v := fmt.Sprintf("v%05d-%s", j, value)
				cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
					defer wg.Done()
					require.NoError(t, err)
				})
				mu.Lock()
				acked = append(acked, v)
				mu.Unlock()
			}
			wg.Wait()
		}
	}
	produce(0, 4000) // about 4 MiB
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second",
		Value: kmsg.StringPtr(fmt.Sprint(bound))}}, 0)
	require.NoError(t, err)
	require.NoError(t, resps[0].Err)
	waitFor(t, 10*time.Second, "the throttle applied", func() bool {
		return b.Server.Config().ReplicaAlterLogDirsIOMaxBytesPerSecond == bound
	})

	start := time.Now()
	require.Zero(t, alterReplicaLogDir(t, c, to, "mv", 0))
	done := make(chan struct{})
	go func() { defer close(done); produce(4000, 5000) }() // writes go on during the move
	sawFuture := false
	waitFor(t, 60*time.Second, "the replica in "+to, func() bool {
		cur, fut, lag := replicaDirs(t, c, "mv", 0)
		if fut != "" {
			require.Equal(t, filepath.Clean(to), filepath.Clean(fut))
			require.GreaterOrEqual(t, lag, int64(0))
			sawFuture = true
		}
		return filepath.Clean(cur) == filepath.Clean(to) && fut == ""
	})
	took := time.Since(start)
	<-done
	require.True(t, sawFuture, "DescribeLogDirs never showed the future replica")
	size := b.Server.Replicas().Partitions()[0].Log().Size()
	t.Logf("moved %d bytes in %v (throttle %d B/s)", size, took.Round(time.Millisecond), bound)
	require.Greater(t, size, int64(3*bound), "too little to move for the throttle to show")
	// One second's worth passes at once (the quota's young window); the
	// rest at the bound.
	require.Greater(t, took.Seconds(), 0.7*float64(size-bound)/bound, "the move outran its throttle")
	waitFor(t, 10*time.Second, "the old directory removed", func() bool {
		_, err := os.Stat(filepath.Join(from, "mv-0"))
		return os.IsNotExist(err)
	})

	check := func() {
		got := consume(t, []string{b.Addr}, "mv", len(acked))
		require.Len(t, got, len(acked))
		for i, r := range got {
			require.Equal(t, acked[i], string(r.Value), "record %d", i)
		}
	}
	check()
	b.Restart()
	cur, fut, _ := replicaDirs(t, dialRaw(t, b.Addr), "mv", 0)
	require.Equal(t, filepath.Clean(to), filepath.Clean(cur))
	require.Empty(t, fut)
	check()
}

// TestAlterReplicaLogDirsReplicated: in a three-broker cluster the leader's
// and a follower's replicas move to their brokers' other log dirs while an
// acks=all producer writes (min.insync.replicas=2): the follower keeps
// fetching into the moving replica, the ISR stays whole, every
// acknowledged record is read back once in order, and the three replicas
// end byte for byte equal.
func TestAlterReplicaLogDirsReplicated(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithLogDirs(2), brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	createReplicated(t, c, "rmv", map[int32][]int32{0: {0, 1, 2}}, map[string]string{"min.insync.replicas": "2", "segment.bytes": "262144"})
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the topic on every broker", func() bool {
			tp := b.Cache().Snapshot().Topics["rmv"]
			return tp != nil && len(tp.Partitions) == 1 && len(tp.Partitions[0].ISR) == 3
		})
	}
	ctx := testCtx(t)
	cl := newClient(t, c.Addrs(), kgo.DefaultProduceTopic("rmv"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	var acked []string
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			v := fmt.Sprintf("r%05d-%s", i, strings.Repeat("y", 500))
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
			acked = append(acked, v)
		}
	}
	produce(0, 2000)
	dirOf := func(b *brokertest.Broker) string {
		p, err := b.Replicas().Partition("rmv", 0)
		require.NoError(t, err)
		return filepath.Dir(p.Log().Dir())
	}
	targets := map[int32]string{}
	for _, id := range []int32{0, 1} {
		b := c.Brokers[id]
		to := b.Dirs[0]
		if dirOf(b) == to {
			to = b.Dirs[1]
		}
		targets[id] = to
		require.Zero(t, alterReplicaLogDir(t, dialRaw(t, b.Addr), to, "rmv", 0))
	}
	produce(2000, 3000) // during the moves
	for id, to := range targets {
		rc := dialRaw(t, c.Brokers[id].Addr)
		waitFor(t, 30*time.Second, fmt.Sprintf("broker %d's replica in %s", id, to), func() bool {
			cur, fut, _ := replicaDirs(t, rc, "rmv", 0)
			return filepath.Clean(cur) == filepath.Clean(to) && fut == ""
		})
	}
	produce(3000, 3500)
	p, err := c.Brokers[0].Replicas().Partition("rmv", 0)
	require.NoError(t, err)
	require.Len(t, p.State().ISR, 3, "a replica left the ISR during its move")
	got := consume(t, c.Addrs(), "rmv", len(acked))
	for i, r := range got {
		require.Equal(t, acked[i], string(r.Value), "record %d", i)
	}
	logBytes := func(b *brokertest.Broker) []byte {
		p, err := b.Replicas().Partition("rmv", 0)
		require.NoError(t, err)
		var all []byte
		for _, base := range p.Log().SegmentBaseOffsets() {
			data, err := os.ReadFile(filepath.Join(p.Log().Dir(), fmt.Sprintf("%020d.log", base)))
			require.NoError(t, err)
			all = append(all, data...)
		}
		return all
	}
	waitFor(t, 15*time.Second, "the replicas equal", func() bool {
		ref := logBytes(c.Brokers[0])
		return len(ref) > 0 && bytes.Equal(ref, logBytes(c.Brokers[1])) && bytes.Equal(ref, logBytes(c.Brokers[2]))
	})
}
