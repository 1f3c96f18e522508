//go:build integration

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/internal/zktest"
)

// TestReplicatedLeaderKilled: three `qk broker start` processes on a real
// ZooKeeper, a topic of replication factor 3 with min.insync.replicas=2,
// an idempotent franz-go producer with acks=all writing unique values
// throughout. The leader of partition 0 is killed with SIGKILL and later
// restarted: another replica of its ISR takes over, the producer goes on,
// and at the end every acknowledged record is there exactly once, in
// acknowledgement order per partition, and the three replicas' .log files
// are byte for byte the same.
func TestReplicatedLeaderKilled(t *testing.T) {
	const topic = "replicated"
	_, bs := startZKCluster(t, 3)
	minISR := "2"
	resp, err := bs[0].admin().CreateTopic(ctxFor(t, 10*time.Second), 3, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitions(t, bs[0].addr, topic, 20*time.Second, "every partition led with 3 in sync", func(ps kadm.PartitionDetails) bool {
		for _, p := range ps {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
		return len(ps) == 3
	})
	ps, err := partitionsOf(t, bs[0].addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := ps[0].Leader

	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// The producer: unique values, each acknowledgement recorded with its
	// partition and offset. Bounded in count and time.
	type ack struct {
		value  string
		offset int64
	}
	var (
		mu    sync.Mutex
		acked = map[int32][]ack{}
		fails int
	)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	produced := make(chan int, 1)
	stop := make(chan struct{})
	wg.Go(func() {
		n := 0
		defer func() { produced <- n }()
		for i := 0; i < 30000 && ctx.Err() == nil; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("r%05d", i)
			n++
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fails++
					return
				}
				acked[r.Partition] = append(acked[r.Partition], ack{string(r.Value), r.Offset})
			})
			time.Sleep(2 * time.Millisecond) // pacing: the run spans the failover
		}
	})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range acked {
			n += len(a)
		}
		return n
	}
	waitUntil(t, 20*time.Second, "some records acknowledged", func() bool { return count() >= 300 })
	killed := time.Now()
	bs[victim].kill()
	before := count()
	deadline := time.Now().Add(30 * time.Second)
	for count() <= before+100 {
		if time.Now().After(deadline) {
			mu.Lock()
			t.Logf("acked per partition: %d %d %d, failed %d", len(acked[0]), len(acked[1]), len(acked[2]), fails)
			mu.Unlock()
			if ps, err := partitionsOf(t, bs[(victim+1)%3].addr, topic); err == nil {
				t.Logf("partitions: %s", describe(ps))
			}
			t.Fatal("no acknowledgements after the leader's death")
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
	t.Logf("leader %d of partition 0 killed; acknowledged writes resumed within %v", victim, time.Since(killed).Round(time.Millisecond))
	bs[victim].restart()
	after := count()
	waitUntil(t, 30*time.Second, "acknowledgements with the old leader back", func() bool { return count() > after+200 })
	close(stop)
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	n := <-produced
	mu.Lock()
	total := 0
	for _, a := range acked {
		total += len(a)
	}
	t.Logf("%d records sent, %d acknowledged, %d failed", n, total, fails)
	mu.Unlock()

	// Every replica of every partition in sync again, then: every
	// acknowledged record, once, in order.
	waitPartitions(t, bs[0].addr, topic, 40*time.Second, "all three replicas back in every ISR", func(ps kadm.PartitionDetails) bool {
		for _, p := range ps {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	ends := endOffsets(t, bs[0].admin(), topic)
	recs := consumeAll(t, bs[0].addr, topic, ends, 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for p, as := range acked {
		sort.Slice(as, func(i, j int) bool { return as[i].offset < as[j].offset })
		byOffset := map[int64]string{}
		seen := map[string]int{}
		for _, r := range recs[p] {
			byOffset[r.Offset] = string(r.Value)
			seen[string(r.Value)]++
		}
		for _, a := range as {
			if got := byOffset[a.offset]; got != a.value {
				t.Fatalf("partition %d offset %d: acknowledged %q, the log has %q", p, a.offset, a.value, got)
			}
			if seen[a.value] != 1 {
				t.Fatalf("partition %d: %q present %d times", p, a.value, seen[a.value])
			}
		}
	}

	// The replicas' files, byte for byte, once each has the leader's end.
	for p := range int32(3) {
		var ref []byte
		for i, b := range bs {
			var data []byte
			waitUntil(t, 20*time.Second, fmt.Sprintf("broker %d's copy of partition %d complete", i, p), func() bool {
				data = readLogs(t, filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, p)))
				return len(data) > 0 && int64(len(recs[p])) > 0 && bytes.Contains(data, recs[p][len(recs[p])-1].Value)
			})
			if i == 0 {
				ref = data
				continue
			}
			waitUntil(t, 20*time.Second, fmt.Sprintf("broker %d's partition %d equal to broker 0's", i, p), func() bool {
				data = readLogs(t, filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, p)))
				ref = readLogs(t, filepath.Join(bs[0].dataDir, fmt.Sprintf("%s-%d", topic, p)))
				return bytes.Equal(ref, data)
			})
		}
	}
}

// readLogs concatenates a partition directory's .log files in offset
// order.
func readLogs(t *testing.T, dir string) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var out []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestReplicatedFollowersPaused: followers frozen with SIGSTOP (their
// ZooKeeper sessions outlive the pause) leave the ISR by the leader's
// replica.lag.time.max.ms check, through AlterPartition; acks=all goes on
// with two in sync; with one, below min.insync.replicas=2, acks=all is
// refused with NOT_ENOUGH_REPLICAS while acks=1 works; SIGCONT brings
// both back into the ISR.
func TestReplicatedFollowersPaused(t *testing.T) {
	const topic = "paused"
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "zookeeper.session.timeout.ms=10000", "replica.lag.time.max.ms=2000")
	// The controller leads (assigned first): the followers paused are
	// never the controller, which their leader's AlterPartition needs.
	ctrl := controllerOf(t, bs[0].addr)
	replicas := []int32{ctrl, (ctrl + 1) % 3, (ctrl + 2) % 3}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	admCl := bs[ctrl].client()
	cresp, err := req.RequestWith(ctxFor(t, 15*time.Second), admCl)
	if err == nil && cresp.Topics[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(cresp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	isr := func() []int32 {
		ps, err := partitionsOf(t, bs[0].addr, topic)
		if err != nil || len(ps) != 1 {
			return nil
		}
		out := slices.Clone(ps[0].ISR)
		slices.Sort(out)
		return out
	}
	waitUntil(t, 20*time.Second, "3 in sync", func() bool { return len(isr()) == 3 })
	ps, _ := partitionsOf(t, bs[0].addr, topic)
	leader := ps[0].Leader
	var followers []int32
	for i := range int32(3) {
		if i != leader {
			followers = append(followers, i)
		}
	}
	all := bs[leader].client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(8*time.Second))
	one := bs[leader].client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	produce := func(cl *kgo.Client, v string) error {
		return cl.ProduceSync(ctxFor(t, 10*time.Second), &kgo.Record{Value: []byte(v)}).FirstErr()
	}
	if err := produce(all, "three"); err != nil {
		t.Fatal(err)
	}

	pause := func(id int32) {
		if err := syscall.Kill(bs[id].pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(bs[id].pid(), syscall.SIGCONT) })
	}
	start := time.Now()
	pause(followers[0])
	// The lag check runs every half of replica.lag.time.max.ms: out
	// within 1.5 × 2 s, and the session (10 s) still alive.
	// A follower is out of sync only while it lacks records the leader
	// has (Kafka's rule): keep appending with acks=1.
	waitUntil(t, 8*time.Second, "the paused follower out of the ISR", func() bool {
		_ = produce(one, "tick")
		got := isr()
		return len(got) == 2 && !slices.Contains(got, followers[0])
	})
	t.Logf("paused follower out of the ISR after %v (replica.lag.time.max.ms=2000)", time.Since(start).Round(time.Millisecond))
	if err := produce(all, "two"); err != nil {
		t.Fatalf("acks=all with two in sync: %v", err)
	}
	pause(followers[1])
	waitUntil(t, 8*time.Second, "the leader alone in the ISR", func() bool {
		_ = produce(one, "tick")
		return slices.Equal(isr(), []int32{leader})
	})
	if err := produce(all, "one"); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with one in sync: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if err := produce(one, "acks=1"); err != nil {
		t.Fatalf("acks=1 with one in sync: %v", err)
	}
	for _, f := range followers {
		if err := syscall.Kill(bs[f].pid(), syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 15*time.Second, "both followers back in the ISR", func() bool { return len(isr()) == 3 })
	if err := produce(all, "three again"); err != nil {
		t.Fatalf("acks=all after the followers returned: %v", err)
	}
}

// TestReplicatedRollingRestart: every broker of three in turn stopped
// with SIGTERM (controlled shutdown: the controller moves its leaderships
// to other replicas of their ISR first) and restarted, while an
// idempotent acks=all producer writes throughout. No error reaches the
// producer, and every acknowledged record is there once, at its offset.
func TestReplicatedRollingRestart(t *testing.T) {
	const topic = "rolling"
	_, bs := startZKCluster(t, 3)
	minISR := "2"
	resp, err := bs[0].admin().CreateTopic(ctxFor(t, 10*time.Second), 3, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	fullISR := func(ps kadm.PartitionDetails) bool {
		for _, p := range ps {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
		return len(ps) == 3
	}
	waitPartitions(t, bs[0].addr, topic, 20*time.Second, "every partition with 3 in sync", fullISR)
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var (
		mu     sync.Mutex
		acked  = map[int32]map[int64]string{}
		errs   []error
		nacked int
	)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 40000 && ctx.Err() == nil; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("k%05d", i)
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				if acked[r.Partition] == nil {
					acked[r.Partition] = map[int64]string{}
				}
				acked[r.Partition][r.Offset] = v
				nacked++
			})
			time.Sleep(2 * time.Millisecond) // pacing: the run spans the restarts
		}
	})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return nacked
	}
	for i, b := range bs {
		before := count()
		start := time.Now()
		b.stopWith(syscall.SIGTERM)
		t.Logf("broker %d stopped (controlled shutdown) in %v", i, time.Since(start).Round(time.Millisecond))
		waitUntil(t, 20*time.Second, fmt.Sprintf("writes go on while broker %d is down", i), func() bool { return count() > before+100 })
		b.restart()
		waitPartitions(t, bs[(i+1)%3].addr, topic, 30*time.Second, fmt.Sprintf("broker %d back in every ISR", i), fullISR)
	}
	close(stop)
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("%d produce errors reached the producer during the rolling restart; first: %v", len(errs), errs[0])
	}
	t.Logf("%d records acknowledged across the rolling restart", nacked)
	ends := endOffsets(t, bs[0].admin(), topic)
	recs := consumeAll(t, bs[0].addr, topic, ends, 30*time.Second)
	for p, byOffset := range acked {
		got := map[int64]string{}
		seen := map[string]int{}
		for _, r := range recs[p] {
			got[r.Offset] = string(r.Value)
			seen[string(r.Value)]++
		}
		for off, v := range byOffset {
			if got[off] != v || seen[v] != 1 {
				t.Fatalf("partition %d offset %d: acknowledged %q, the log has %q (%d copies)", p, off, v, got[off], seen[v])
			}
		}
	}
}
