//go:build linux

package broker_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// lockedBuffer collects a broker's log lines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) count(substr string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), substr)
}

// produceToPartition sends one batch of n records (each value size bytes, keyed
// when key is set) to a partition with acks=1 and returns the partition's
// answer.
func produceToPartition(t *testing.T, c *rawConn, topic string, partition int32, n, size int, key string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	bld := record.NewBuilder(record.DefaultBatchOptions())
	for i := range n {
		var k []byte
		if key != "" {
			k = []byte(fmt.Sprintf("%s-%d", key, i%3))
		}
		bld.Append(time.Now().UnixMilli(), k, bytes.Repeat([]byte{'v'}, size), nil)
	}
	batch, err := bld.Build()
	require.NoError(t, err)
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	c.roundTrip(req, resp)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestLogDirFailureEachPath: an ENOSPC or EIO at each I/O path of a log
// (append, roll, index write, flush, checkpoint, cleaner) in one of the
// broker's two log dirs takes that dir offline: one ERROR line with the
// dir and the cause, KAFKA_STORAGE_ERROR for its partition's producers
// and in DescribeLogDirs, while the partition in the other dir goes on
// and the broker keeps running.
func TestLogDirFailureEachPath(t *testing.T) {
	type path struct {
		name string
		// topic configs, and the fault: op on files of the failing dir
		// whose name contains file.
		configs map[string]*string
		op      vfs.Op
		file    string
		// trigger makes the broker hit the fault; it returns the
		// error code of a produce that hit it, if one did.
		trigger func(t *testing.T, c *rawConn, p int32) int16
	}
	str := kmsg.StringPtr
	produceOnce := func(t *testing.T, c *rawConn, p int32) int16 {
		return produceToPartition(t, c, "t", p, 5, 100, "").ErrorCode
	}
	paths := []path{
		{name: "append", op: vfs.OpWrite, file: ".log", trigger: produceOnce},
		{name: "roll", op: vfs.OpCreate, file: ".log", configs: map[string]*string{"segment.bytes": str("2000")},
			trigger: func(t *testing.T, c *rawConn, p int32) int16 {
				for range 5 { // 1.5 KB each: the second rolls
					if code := produceToPartition(t, c, "t", p, 3, 500, "").ErrorCode; code != 0 {
						return code
					}
				}
				return 0
			}},
		{name: "index", op: vfs.OpWrite, file: ".index",
			configs: map[string]*string{"flush.messages": str("1"), "index.interval.bytes": str("1")}, trigger: produceOnce},
		{name: "flush", op: vfs.OpSync, file: "", configs: map[string]*string{"flush.messages": str("1")}, trigger: produceOnce},
		{name: "checkpoint", op: vfs.OpAny, file: "replication-offset-checkpoint", trigger: produceOnce},
		{name: "cleaner", op: vfs.OpCreate, file: ".cleaned",
			configs: map[string]*string{"cleanup.policy": str("compact"), "segment.bytes": str("2000"),
				"min.cleanable.dirty.ratio": str("0.01"), "min.compaction.lag.ms": str("0")},
			trigger: func(t *testing.T, c *rawConn, p int32) int16 {
				for range 8 {
					if code := produceToPartition(t, c, "t", p, 3, 500, "k").ErrorCode; code != 0 {
						return code
					}
				}
				return 0
			}},
	}
	for _, pt := range paths {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			t.Run(pt.name+"/"+errno.Error(), func(t *testing.T) {
				fault := vfs.NewFaulty(vfs.OS, nil)
				logs := &lockedBuffer{}
				b := brokertest.StartBroker(t, brokertest.WithLogDirs(2), brokertest.WithLogFS(fault),
					brokertest.WithLogWriter(logs), brokertest.WithLogLevel(slog.LevelInfo),
					brokertest.WithConfig("replica.high.watermark.checkpoint.interval.ms", "50"),
					brokertest.WithConfig("log.cleaner.backoff.ms", "50"))
				bad := b.Dirs[1]
				adm := newAdmin(t, b.Addr)
				createTopic(t, adm, "t", 2, pt.configs)
				var failing, healthy int32 = -1, -1
				waitFor(t, 10*time.Second, "both partitions hosted", func() bool {
					for p := range int32(2) {
						part, err := b.Server.Replicas().Partition("t", p)
						if err != nil {
							return false
						}
						if filepath.Dir(part.Log().Dir()) == bad {
							failing = p
						} else {
							healthy = p
						}
					}
					return failing >= 0 && healthy >= 0
				})
				c := dialRaw(t, b.Addr)
				require.Zero(t, produceToPartition(t, c, "t", failing, 2, 100, "k").ErrorCode)

				fault.SetInjector(vfs.InjectorFunc(func(op vfs.Op, p string) error {
					if (pt.op == vfs.OpAny || op == pt.op) && strings.HasPrefix(p, bad+"/") &&
						strings.Contains(filepath.Base(p), pt.file) {
						return errno
					}
					return nil
				}))
				code := pt.trigger(t, c, failing)
				if code != 0 {
					require.Equal(t, kerr.KafkaStorageError.Code, code, "the produce that hit the fault: %v", kerr.ErrorForCode(code))
				}
				waitFor(t, 10*time.Second, "the log dir to go offline", func() bool {
					return b.Server.LogDirError(bad) != nil && logs.count(`level=ERROR msg="log directory offline`) > 0
				})
				require.ErrorIs(t, b.Server.LogDirError(bad), errno)
				require.NoError(t, b.Server.LogDirError(b.Dirs[0]))

				require.Equal(t, kerr.KafkaStorageError.Code, produceToPartition(t, c, "t", failing, 1, 10, "k").ErrorCode,
					"produce to the offline partition")
				require.Zero(t, produceToPartition(t, c, "t", healthy, 1, 10, "k").ErrorCode, "produce to the other dir's partition")

				req := kmsg.NewPtrDescribeLogDirsRequest()
				req.Version = 4
				resp := kmsg.NewPtrDescribeLogDirsResponse()
				c.roundTrip(req, resp)
				require.Len(t, resp.Dirs, 2)
				for _, d := range resp.Dirs {
					if d.Dir == bad {
						require.Equal(t, kerr.KafkaStorageError.Code, d.ErrorCode)
						require.Empty(t, d.Topics)
					} else {
						require.Zero(t, d.ErrorCode)
						require.Len(t, d.Topics, 1)
					}
				}
				select {
				case <-b.Server.Failed():
					t.Fatal("the broker gave up with one log dir left")
				default:
				}
				require.Equal(t, 1, logs.count(`level=ERROR msg="log directory offline`), "ERROR lines for the failure")
				require.Positive(t, logs.count("dir="+bad), "the ERROR line names the dir")

				// The other dir fails too: the broker gives up.
				if pt.name == "append" {
					fault.SetInjector(vfs.FailPath(vfs.OpWrite, b.Dirs[0]+"/", errno))
					require.Equal(t, kerr.KafkaStorageError.Code, produceToPartition(t, c, "t", healthy, 1, 10, "").ErrorCode)
					select {
					case <-b.Server.Failed():
					case <-time.After(10 * time.Second):
						t.Fatal("the broker did not give up with every log dir offline")
					}
					require.ErrorContains(t, b.Server.Failure(), "every log directory is offline")
					fault.SetInjector(nil)
					// A restart on healthy disks serves every acknowledged
					// record of both partitions.
					b.Restart()
					cl := newClient(t, []string{b.Addr}, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
					var got int
					ctx := testCtx(t)
					for got < 2+1 {
						fs := cl.PollFetches(ctx)
						require.NoError(t, ctx.Err())
						fs.EachRecord(func(*kgo.Record) { got++ })
					}
				}
			})
		}
	}
}

// TestLogDirFailureMovesLeadership: three brokers with two log dirs each,
// a partition with three replicas and min.insync.replicas=2. An ENOSPC in
// the leader's log dir while an acks=all producer runs takes the dir
// offline; the controller, told through /log_dir_event_notification,
// moves the leadership to a follower and drops the failed replica from
// the ISR (Metadata lists it offline); the producer goes on, no
// acknowledged record is lost or doubled. The failed broker stays up with
// its other dir; restarted on a healthy disk it rejoins the ISR and the
// replicas end byte for byte equal.
func TestLogDirFailureMovesLeadership(t *testing.T) {
	fault := vfs.NewFaulty(vfs.OS, nil)
	c := brokertest.StartCluster(t, 3, brokertest.WithLogDirs(2), brokertest.WithLogFS(fault),
		brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	createReplicated(t, c, "ld", map[int32][]int32{0: {0, 1, 2}}, map[string]string{"min.insync.replicas": "2"})
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the topic on every broker", func() bool {
			tp := b.Cache().Snapshot().Topics["ld"]
			return tp != nil && len(tp.Partitions) == 1 && tp.Partitions[0].Leader == 0 && len(tp.Partitions[0].ISR) == 3
		})
	}
	old := c.Brokers[0]
	lp, err := old.Replicas().Partition("ld", 0)
	require.NoError(t, err)
	bad := filepath.Dir(lp.Log().Dir())

	// kgo refreshes its metadata at most every MetadataMinAge (5 s by
	// default): the broker moves the leadership within milliseconds, the
	// client would see it only then.
	cl := newClient(t, c.Addrs(), kgo.DefaultProduceTopic("ld"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(30*time.Second), kgo.MetadataMinAge(200*time.Millisecond))
	ctx := testCtx(t)
	var acked []string
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			v := fmt.Sprintf("v%04d", i)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(), "record %s", v)
			acked = append(acked, v)
		}
	}
	produce(0, 100)
	fault.SetInjector(vfs.InjectorFunc(func(op vfs.Op, p string) error {
		if op == vfs.OpWrite && strings.HasPrefix(p, bad+"/") {
			return syscall.ENOSPC
		}
		return nil
	}))
	start := time.Now()
	produce(100, 101) // hits the full disk; the producer retries until the leadership moves
	took := time.Since(start)
	t.Logf("the first record after the fault acknowledged after %v", took.Round(time.Millisecond))
	require.Less(t, took, 10*time.Second, "the producer waited long for the new leader")
	produce(101, 200)
	var newLeader int32 = -1
	waitFor(t, 15*time.Second, "the leadership off the failed replica", func() bool {
		p := c.Brokers[1].Cache().Snapshot().Topics["ld"].Partitions[0]
		if p.Leader == 0 || p.Leader < 0 || slices.Contains(p.ISR, 0) {
			return false
		}
		newLeader = p.Leader
		return true
	})
	t.Logf("leadership moved to broker %d %v after the fault", newLeader, time.Since(start).Round(time.Millisecond))
	require.ErrorIs(t, old.LogDirError(bad), syscall.ENOSPC)
	select {
	case <-old.Failed():
		t.Fatal("the broker gave up with one log dir left")
	default:
	}
	// Metadata, from any broker, lists the failed replica offline.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("ld")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, newClient(t, []string{c.Brokers[2].Addr}))
	require.NoError(t, err)
	require.Equal(t, []int32{0}, mresp.Topics[0].Partitions[0].OfflineReplicas)
	produce(200, 300)

	// Healthy again after a restart: broker 0 catches up and rejoins.
	fault.SetInjector(nil)
	old.Restart()
	waitFor(t, 30*time.Second, "broker 0 back in the ISR", func() bool {
		p := c.Brokers[1].Cache().Snapshot().Topics["ld"].Partitions[0]
		return slices.Contains(p.ISR, 0) && len(p.ISR) == 3
	})
	got := consume(t, c.Addrs(), "ld", len(acked))
	values := make([]string, len(got))
	for i, r := range got {
		values[i] = string(r.Value)
	}
	require.Equal(t, acked, values, "acknowledged records lost, doubled or reordered")

	// Byte for byte: every replica's log as the new leader's.
	logBytes := func(b *brokertest.Broker) []byte {
		p, err := b.Replicas().Partition("ld", 0)
		require.NoError(t, err)
		var all []byte
		for _, base := range p.Log().SegmentBaseOffsets() {
			data, err := os.ReadFile(filepath.Join(p.Log().Dir(), fmt.Sprintf("%020d.log", base)))
			require.NoError(t, err)
			all = append(all, data...)
		}
		return all
	}
	var ref []byte
	waitFor(t, 15*time.Second, "the replicas equal", func() bool {
		ref = logBytes(c.Brokers[newLeader])
		for _, b := range c.Brokers {
			if !bytes.Equal(ref, logBytes(b)) {
				return false
			}
		}
		return true
	})
	require.NotEmpty(t, ref)
}
