//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/zkstore"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/internal/zktest"
)

// Failures of real `qk broker start` processes on a real ZooKeeper, in
// the shape of Kafka's replication system tests and of the Jepsen
// analyses (reference/replication.md): leaders and the controller killed
// with SIGKILL in rounds, a leader cut off by a network partition, the
// only in-sync replica lost and an out-of-sync one elected uncleanly.
// Each ends with the checks a Jepsen checker makes (every acknowledged
// record read back once, at its offset, in acknowledgement order) and a
// comparison of the replicas' segment files through qk dump-segment.

// chaosAck is one acknowledged record: its value and the offset the
// broker gave it.
type chaosAck struct {
	value  string
	offset int64
}

// chaosProducer is an idempotent franz-go producer with acks=all (kgo's
// defaults) writing unique values round robin over a topic's partitions
// until stopped, recording every acknowledgement in the order the client
// reports them (which, per partition, is the order of the offsets).
type chaosProducer struct {
	cl     *kgo.Client
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	acked    map[int32][]chaosAck
	failed   int
	firstErr error
}

// startChaosProducer starts producing at most limit records, about one
// every 2 ms, for at most two minutes.
func startChaosProducer(t *testing.T, addrs []string, topic string, limit int) *chaosProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0),
		// Metadata as fresh as a failover needs: the default minimum age
		// (5 s) would add up to 5 s to every leader change.
		kgo.MetadataMinAge(250*time.Millisecond),
		// A leader cut off from its ISR holds an acks=all write until the
		// request's timeout; the client then retries, and only learns of
		// the new leader if its next metadata comes from a broker that
		// knows (the cut-off one still names itself, as a Kafka broker in
		// ZooKeeper mode does). kgo's 10 s made that a lottery of 10 s
		// draws; 3 s keeps the test's waits short.
		kgo.ProduceRequestTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p := &chaosProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{}), acked: map[int32][]chaosAck{}}
	p.ctx, p.cancel = context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(func() {
		p.cancel()
		<-p.done
		cl.Close()
	})
	go func() {
		defer close(p.done)
		for i := 0; i < limit && p.ctx.Err() == nil; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			cl.Produce(p.ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%06d", i)}, p.promise)
			time.Sleep(2 * time.Millisecond) // pacing: the run spans the failures
		}
	}()
	return p
}

func (p *chaosProducer) promise(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.firstErr == nil {
			p.firstErr = err
		}
		p.failed++
		return
	}
	p.acked[r.Partition] = append(p.acked[r.Partition], chaosAck{string(r.Value), r.Offset})
}

// counts is the number of acknowledgements per partition.
func (p *chaosProducer) counts() map[int32]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int32]int{}
	for part, as := range p.acked {
		out[part] = len(as)
	}
	return out
}

// waitMore waits until each of parts has n acknowledgements more than in
// before.
func (p *chaosProducer) waitMore(t *testing.T, before map[int32]int, parts []int32, n int, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		now := p.counts()
		ok := true
		for _, part := range parts {
			ok = ok && now[part] >= before[part]+n
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			p.mu.Lock()
			t.Fatalf("%s: not within %v: acknowledgements %v (before %v), %d failed, first error %v", what, timeout, now, before, p.failed, p.firstErr)
			p.mu.Unlock()
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// finish stops producing, waits until every record produced was answered
// and returns the acknowledgements. No record may fail: with idempotence
// and no delivery timeout the client retries until it is written.
func (p *chaosProducer) finish(t *testing.T) map[int32][]chaosAck {
	t.Helper()
	close(p.stop)
	<-p.done
	if err := p.cl.Flush(ctxFor(t, 60*time.Second)); err != nil {
		t.Fatalf("flush the producer: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed > 0 {
		t.Fatalf("%d records failed; first: %v", p.failed, p.firstErr)
	}
	total := 0
	for _, as := range p.acked {
		total += len(as)
	}
	t.Logf("%d records acknowledged: %v", total, func() map[int32]int {
		m := map[int32]int{}
		for part, as := range p.acked {
			m[part] = len(as)
		}
		return m
	}())
	return p.acked
}

// requireDelivered is the Jepsen checker: read every partition of topic
// to its end through addr, then require each acknowledged record at the
// offset it was acknowledged with, the offsets rising in the order of
// the acknowledgements, and every value in the log there exactly once
// (the producer is idempotent, so not even a record that was retried
// unacknowledged may appear twice). absent are values that must not be
// in the log at all.
func requireDelivered(t *testing.T, addr, topic string, acked map[int32][]chaosAck, absent ...string) map[int32]int64 {
	t.Helper()
	ends := endOffsets(t, kadm.NewClient(newPlainClient(t, addr)), topic)
	recs := consumeAll(t, addr, topic, ends, 60*time.Second)
	seen := map[string]int{}
	for p, rs := range recs {
		byOffset := map[int64]string{}
		for _, r := range rs {
			byOffset[r.Offset] = string(r.Value)
			seen[string(r.Value)]++
			if seen[string(r.Value)] > 1 {
				t.Fatalf("partition %d offset %d: %q is in the log twice", p, r.Offset, r.Value)
			}
		}
		last := int64(-1)
		for i, a := range acked[p] {
			if a.offset <= last {
				t.Fatalf("partition %d: acknowledgement %d (%q) at offset %d, not after the previous one's %d", p, i, a.value, a.offset, last)
			}
			last = a.offset
			if got, ok := byOffset[a.offset]; !ok || got != a.value {
				t.Fatalf("partition %d offset %d: acknowledged %q, the log has %q (end offset %d): an acknowledged record was lost",
					p, a.offset, a.value, got, ends[p])
			}
		}
	}
	for _, v := range absent {
		if seen[v] > 0 {
			t.Fatalf("%q is in the log, but it was never acknowledged and its leader was cut off", v)
		}
	}
	return ends
}

// newPlainClient is a franz-go client of addr, closed with the test.
func newPlainClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// dumpedBatch is what the replicas are compared on: a batch line of
// qk dump-segment --json.
type dumpedBatch struct {
	BaseOffset           int64  `json:"baseOffset"`
	LastOffset           int64  `json:"lastOffset"`
	PartitionLeaderEpoch int32  `json:"partitionLeaderEpoch"`
	CRC                  uint32 `json:"crc"`
}

// dumpBatches runs qk dump-segment --deep-iteration --json over a
// partition directory's .log files in offset order and returns the
// batches that start below hw. It fails the test when the tool does
// (a torn or corrupt file) or a batch fails its CRC.
func dumpBatches(t *testing.T, dir string, hw int64) []dumpedBatch {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	slices.Sort(names)
	cmd := exec.CommandContext(ctxFor(t, time.Minute), qkBin, append([]string{"dump-segment", "--deep-iteration", "--json"}, names...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("qk dump-segment --deep-iteration --json %s: %v\n%s", dir, err, tail(stderr.String(), 4<<10))
	}
	var out []dumpedBatch
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Type    string `json:"type"`
			IsValid bool   `json:"isvalid"`
			dumpedBatch
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("qk dump-segment line %q: %v", sc.Bytes(), err)
		}
		if line.Type != "batch" {
			continue
		}
		if !line.IsValid {
			t.Fatalf("%s: batch at offset %d fails its CRC check", dir, line.BaseOffset)
		}
		if line.BaseOffset < hw {
			out = append(out, line.dumpedBatch)
		}
	}
	return out
}

// requireReplicasMatch compares, for every partition of topic, the
// batches of each broker's replica below the partition's high watermark
// (base offset, last offset, leader epoch, CRC), as qk dump-segment
// reads them from the stopped brokers' files: the same on every replica,
// and covering [0, hw) without a gap.
func requireReplicasMatch(t *testing.T, bs []*broker, topic string, hws map[int32]int64) {
	t.Helper()
	for p, hw := range hws {
		var ref []dumpedBatch
		for i, b := range bs {
			got := dumpBatches(t, filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, p)), hw)
			next := int64(0)
			for _, bt := range got {
				if bt.BaseOffset != next {
					t.Fatalf("broker %d partition %d: batch at %d where %d was next", i, p, bt.BaseOffset, next)
				}
				next = bt.LastOffset + 1
			}
			if next != hw {
				t.Fatalf("broker %d partition %d: batches end at %d, want the high watermark %d", i, p, next, hw)
			}
			if i == 0 {
				ref = got
				continue
			}
			if !slices.Equal(got, ref) {
				for j := range min(len(got), len(ref)) {
					if got[j] != ref[j] {
						t.Fatalf("partition %d: broker %d's batch %d is %+v, broker 0's %+v", p, i, j, got[j], ref[j])
					}
				}
				t.Fatalf("partition %d: broker %d has %d batches below %d, broker 0 %d", p, i, len(got), hw, len(ref))
			}
		}
		t.Logf("partition %d: %d batches below the high watermark %d identical on %d replicas", p, len(ref), hw, len(bs))
	}
}

// quickStop shortens a controlled shutdown that cannot move a
// partition (the last broker standing leads it): Kafka's default retries
// it three times, 5 s apart. What these tests check of shutdown is only
// that it is clean.
const quickStop = "controlled.shutdown.retry.backoff.ms=300"

// fullISR: every partition of n led, with all replicas in sync.
func fullISR(n int) func(kadm.PartitionDetails) bool {
	return func(ps kadm.PartitionDetails) bool {
		for _, p := range ps {
			if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
				return false
			}
		}
		return len(ps) == n
	}
}

// stopAll stops every broker with SIGTERM, controllers last (a broker's
// controlled shutdown needs one), and requires clean exits.
func stopAll(t *testing.T, bs []*broker) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("brokers stopped in %v", time.Since(start).Round(time.Millisecond)) }()
	ctrl := controllerOf(t, bs[0].addr)
	for i, b := range bs {
		if int32(i) != ctrl {
			b.stop()
		}
	}
	bs[ctrl].stop()
}

// zkController is the controller's id as /controller says, -1 without.
func zkController(t *testing.T, zk *zkstore.Store) int32 {
	t.Helper()
	data, _, err := zk.Get(ctxFor(t, 5*time.Second), metadata.ControllerPath)
	if err != nil {
		return -1
	}
	ci, err := metadata.UnmarshalController(data)
	if err != nil {
		t.Fatalf("%s: %q: %v", metadata.ControllerPath, data, err)
	}
	return ci.BrokerID
}

// zkState reads a partition's state node through the test's own session.
func zkState(t *testing.T, zk *zkstore.Store, topic string, p int32) zkPartitionState {
	t.Helper()
	data, _, err := zk.Get(ctxFor(t, 5*time.Second), fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p))
	if err != nil {
		t.Fatalf("state of %s partition %d: %v", topic, p, err)
	}
	var st zkPartitionState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("state of %s partition %d: %q: %v", topic, p, data, err)
	}
	return st
}

// TestReplicatedChaos: three brokers, a topic of 3 partitions with
// replication factor 3 and min.insync.replicas=2, an idempotent acks=all
// producer writing throughout. Four rounds, each killing a broker with
// SIGKILL: the current leader of partition 0, 1, then the controller
// (found in /controller), then the leader of partition 0 again. In each
// round the dead broker's partitions get new leaders from their ISR and
// acknowledgements go on for them, then the broker restarts and rejoins
// every ISR. At the end every acknowledged record is there once, at its
// offset, in order, and the replicas' batches (qk dump-segment) are
// identical up to the high watermark.
func TestReplicatedChaos(t *testing.T) {
	const topic, parts = "chaos", 3
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, quickStop)
	observer := openZK(t, zk.Addr()+"/qk")
	minISR := "2"
	resp, err := bs[0].admin().CreateTopic(ctxFor(t, 10*time.Second), parts, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitions(t, bs[0].addr, topic, 20*time.Second, "every partition led with 3 in sync", fullISR(parts))
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	all := []int32{0, 1, 2}
	prod := startChaosProducer(t, addrs, topic, 100_000)
	prod.waitMore(t, nil, all, 100, 20*time.Second, "the first acknowledgements")

	for round, target := range []string{"leader of 0", "leader of 1", "controller", "leader of 0"} {
		start := time.Now()
		ps, err := partitionsOf(t, bs[0].addr, topic)
		if err != nil {
			t.Fatal(err)
		}
		var victim int32
		if target == "controller" {
			victim = zkController(t, observer)
			if victim < 0 {
				t.Fatal("no /controller")
			}
		} else {
			p, _ := strconv.Atoi(target[len(target)-1:])
			victim = ps[int32(p)].Leader
		}
		var led []int32
		for _, p := range ps.Sorted() {
			if p.Leader == victim {
				led = append(led, p.Partition)
			}
		}
		survivor := bs[(victim+1)%3]
		before := prod.counts()
		bs[victim].kill()
		waitPartitions(t, survivor.addr, topic, zkSession+20*time.Second,
			fmt.Sprintf("round %d: partitions %v of the killed broker %d (%s) led by others", round, led, victim, target),
			func(ps kadm.PartitionDetails) bool {
				for _, p := range led {
					if l := ps[p].Leader; l < 0 || l == victim {
						return false
					}
				}
				return len(ps) == parts
			})
		prod.waitMore(t, before, all, 20, 30*time.Second, fmt.Sprintf("round %d: acknowledgements on every partition after broker %d's death", round, victim))
		failover := time.Since(start)
		if target == "controller" {
			waitUntil(t, 10*time.Second, "a new controller in /controller", func() bool {
				c := zkController(t, observer)
				return c >= 0 && c != victim
			})
		}
		bs[victim].restart()
		waitPartitions(t, survivor.addr, topic, 30*time.Second, fmt.Sprintf("round %d: broker %d back in every ISR", round, victim), fullISR(parts))
		t.Logf("round %d: killed broker %d (%s, leading %v); writes on every partition again after %v; back in every ISR after %v",
			round, victim, target, led, failover.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}

	acked := prod.finish(t)
	waitPartitions(t, bs[0].addr, topic, 30*time.Second, "all three replicas in every ISR", fullISR(parts))
	hws := requireDelivered(t, bs[0].addr, topic, acked)
	stopAll(t, bs)
	requireReplicasMatch(t, bs, topic, hws)
	// Brokers are killed, not paused: whoever lives answers every request
	// it read (peers' fetches and produces included) in time.
	for _, b := range bs {
		b.checkAllAnswered(t)
	}
}

// probeProduce sends one acks=all Produce of value to partition p of
// topic straight to the broker at addr (no retries, no other broker: a
// client's metadata would send it elsewhere once the leader moved) and
// returns the partition's error, or the request's when there was no
// answer within the request's timeout and a margin.
func probeProduce(t *testing.T, addr, topic string, p int32, value string) error {
	t.Helper()
	bd := record.NewBuilder(record.DefaultBatchOptions())
	bd.Append(time.Now().UnixMilli(), nil, []byte(value), nil)
	batch, err := bd.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 3000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Produce v13 (Kafka 4.0) names topics by id only: stay below it.
	cl := newPlainClient(t, addr, kgo.RequestTimeoutOverhead(5*time.Second), kgo.MaxVersions(kversion.V3_9_0()))
	resp, err := cl.SeedBrokers()[0].Request(ctxFor(t, 15*time.Second), req)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	r := resp.(*kmsg.ProduceResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("Produce answered with %d topics", len(r.Topics))
	}
	return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
}

// TestReplicatedNetworkPartition: the partition in which Kafka 0.8 lost
// acknowledged writes (Jepsen, 2013). ZooKeeper and three brokers each
// in a network namespace of their own; the test and its clients outside,
// able to reach all of them. The leader of one partition (not the
// controller) is cut off from ZooKeeper and from the other brokers, but
// not from the producer. It cannot shrink its ISR (that goes through the
// controller and ZooKeeper), so its acks=all writes are never
// acknowledged; once ZooKeeper expires its session the controller elects
// a leader from the other replicas of the ISR, and the producer goes on
// writing there. Healed, the old leader learns its session is gone,
// registers again, follows, and truncates what it alone had. Every
// acknowledged record is there once, in order; the writes sent to the
// cut-off leader are not; the replicas' batches match.
func TestReplicatedNetworkPartition(t *testing.T) {
	const topic, parts = "netsplit", 3
	lab := newNetLab(t)
	zkNS, zkIP := lab.host("zk", 2)
	zk := zktest.StartIn(t, zkNS, zkIP)
	var bs []*broker
	var nss, ips []string
	for i := range 3 {
		ns, ip := lab.host(fmt.Sprintf("b%d", i), 11+i)
		nss, ips = append(nss, ns), append(ips, ip)
		bs = append(bs, startBroker(t, inNetns(ns, ip+":9092"), withSet(
			"broker.id="+strconv.Itoa(i),
			"zookeeper.connect="+zk.Addr()+"/qk",
			"zookeeper.session.timeout.ms=6000",
			"offsets.topic.replication.factor=1",
			// Short, so that the cut-off leader tries to shrink its ISR
			// (and must fail) while the cut lasts.
			"replica.lag.time.max.ms=2000",
			quickStop,
		)))
	}
	for _, b := range bs {
		waitUntil(t, 30*time.Second, fmt.Sprintf("broker %s sees 3 brokers", b.addr), func() bool {
			md, err := freshMetadata(t, b.addr)
			return err == nil && len(md.Brokers) == 3
		})
	}
	requireListensOnlyOn(t, "ZooKeeper", zk.Pid(), zkIP)
	for i, b := range bs {
		requireListensOnlyOn(t, fmt.Sprintf("broker %d", i), b.pid(), ips[i])
	}
	observer := openZK(t, zk.Addr()+"/qk")
	minISR := "2"
	resp, err := bs[0].admin().CreateTopic(ctxFor(t, 10*time.Second), parts, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	ps := waitPartitions(t, bs[0].addr, topic, 20*time.Second, "every partition led with 3 in sync", fullISR(parts))
	ctrl := zkController(t, observer)
	var part int32 = -1
	for _, p := range ps.Sorted() {
		if p.Leader != ctrl {
			part = p.Partition
			break
		}
	}
	if part < 0 {
		t.Fatalf("every partition led by the controller %d:\n%s", ctrl, describe(ps))
	}
	old := ps[part].Leader
	var others []int32
	for i := range int32(3) {
		if i != old {
			others = append(others, i)
		}
	}
	prod := startChaosProducer(t, []string{bs[0].addr, bs[1].addr, bs[2].addr}, topic, 100_000)
	all := []int32{0, 1, 2}
	prod.waitMore(t, nil, all, 100, 20*time.Second, "the first acknowledgements")

	// The cut, both ways: the old leader drops what goes to ZooKeeper
	// and to the other brokers; they (and ZooKeeper) drop what goes to
	// it. The root namespace, the test's, is not cut.
	cuts := [][2]string{{nss[old], zkIP}, {zkNS, ips[old]}}
	for _, o := range others {
		cuts = append(cuts, [2]string{nss[old], ips[o]}, [2]string{nss[o], ips[old]})
	}
	for _, c := range cuts {
		lab.cut(c[0], c[1])
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			for _, c := range cuts {
				lab.heal(c[0], c[1])
			}
		}
	}
	t.Cleanup(heal)
	cut := time.Now()
	t.Logf("broker %d, leader of partition %d, cut off from ZooKeeper and brokers %v", old, part, others)

	// Writes sent to the cut-off leader itself are not acknowledged:
	// its ISR still names the others, which no longer fetch.
	var probes []string
	probe := func(when string) {
		v := fmt.Sprintf("probe %s", when)
		probes = append(probes, v)
		err := probeProduce(t, bs[old].addr, topic, part, v)
		if err == nil {
			t.Fatalf("acks=all Produce to the cut-off leader %d %s acknowledged", old, when)
		}
		t.Logf("acks=all Produce to the cut-off leader %s: %v", when, err)
	}
	probe("right after the cut")

	// The majority side: a new leader once the session expires.
	newPS := waitPartitions(t, bs[others[0]].addr, topic, zkSession+20*time.Second,
		fmt.Sprintf("partition %d led by one of %v", part, others), func(ps kadm.PartitionDetails) bool {
			l := ps[part].Leader
			return l == others[0] || l == others[1]
		})
	t.Logf("partition %d led by broker %d %v after the cut", part, newPS[part].Leader, time.Since(cut).Round(time.Millisecond))
	if st := zkState(t, observer, topic, part); slices.Contains(st.ISR, old) || st.Leader == old {
		t.Fatalf("state of partition %d in ZooKeeper: %+v, want the cut-off broker %d out of it", part, st, old)
	}
	// The old leader still takes itself for the leader: a write to it is
	// still not acknowledged.
	probe("after the new leader's election")
	// It has tried to drop the silent followers from its ISR by then
	// (replica.lag.time.max.ms=2000); had it done so on its own, as Kafka
	// 0.8 did, the next write would be acknowledged by it alone.
	shrink := regexp.MustCompile(`msg="shrinking ISR"[^\n]*topic=` + topic + ` partition=` + strconv.Itoa(int(part)) + ` `)
	if log, ok := bs[old].waitLog(shrink, 10*time.Second); !ok {
		t.Fatalf("broker %d, cut off, did not try to shrink the ISR of partition %d:\n%s", old, part, tail(log, 8<<10))
	}
	probe("after its attempt to shrink the ISR")
	before := prod.counts()
	prod.waitMore(t, before, all, 50, 60*time.Second, "acknowledgements on every partition with the new leader")

	heal()
	healedAt := time.Now()
	waitPartitions(t, bs[others[0]].addr, topic, 40*time.Second, fmt.Sprintf("broker %d back in every ISR", old), fullISR(parts))
	t.Logf("healed; broker %d back in every ISR after %v", old, time.Since(healedAt).Round(time.Millisecond))
	truncated := regexp.MustCompile(`msg="truncating log"[^\n]*topic=` + topic + ` partition=` + strconv.Itoa(int(part)))
	if log, ok := bs[old].waitLog(truncated, 10*time.Second); !ok {
		t.Fatalf("broker %d's log names no truncation of partition %d:\n%s", old, part, tail(log, 8<<10))
	}

	acked := prod.finish(t)
	waitPartitions(t, bs[0].addr, topic, 30*time.Second, "all three replicas in every ISR", fullISR(parts))
	hws := requireDelivered(t, bs[others[0]].addr, topic, acked, probes...)
	stopAll(t, bs)
	requireReplicasMatch(t, bs, topic, hws)
}

// createAssigned creates topic with the given replica assignment and
// configs, through the controller.
func createAssigned(t *testing.T, b *broker, topic string, assignment map[int32][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, rs := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t, 15*time.Second), b.client())
	if err == nil && resp.Topics[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// TestUncleanLeaderElection: a topic of two partitions, both on replicas
// [A, B] (neither the controller), unclean.leader.election.enable=false.
// B is frozen (SIGSTOP) until the leader A drops it from the ISR
// (replica.lag.time.max.ms=3000); A takes acks=1 writes B never gets;
// then A is killed and B resumed. Both partitions go offline and stay so
// (leader -1, ISR [A] as Kafka keeps it): B is out of sync. An
// ElectLeaders of type UNCLEAN makes B lead partition 1, and partition 0
// still waits; the topic config set to unclean.leader.election.enable=true
// makes the controller elect B for partition 0 at once. B serves every
// record acknowledged by both (acks=all) and loses those only A had; A
// restarted truncates them (its log says from where) and follows; the
// replicas' batches match.
func TestUncleanLeaderElection(t *testing.T) {
	const topic = "unclean"
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "replica.lag.time.max.ms=3000", quickStop)
	observer := openZK(t, zk.Addr()+"/qk")
	ctrl := controllerOf(t, bs[0].addr)
	a, b := (ctrl+1)%3, (ctrl+2)%3
	both := []int32{0, 1}
	createAssigned(t, bs[ctrl], topic, map[int32][]int32{0: {a, b}, 1: {a, b}},
		map[string]string{"unclean.leader.election.enable": "false", "min.insync.replicas": "1"})
	waitPartitions(t, bs[ctrl].addr, topic, 20*time.Second, fmt.Sprintf("both partitions led by %d with %d in sync", a, b),
		func(ps kadm.PartitionDetails) bool {
			return len(ps) == 2 && ps[0].Leader == a && ps[1].Leader == a && len(ps[0].ISR) == 2 && len(ps[1].ISR) == 2
		})
	produce := func(cl *kgo.Client, tag string, n int, want map[int32][]string) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			for _, p := range both {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", tag, p, i)})
			}
		}
		for _, r := range cl.ProduceSync(ctxFor(t, 20*time.Second), recs...) {
			if r.Err != nil {
				t.Fatalf("produce %s to partition %d: %v", r.Record.Value, r.Record.Partition, r.Err)
			}
			if want != nil {
				want[r.Record.Partition] = append(want[r.Record.Partition], string(r.Record.Value))
			}
		}
	}
	allAcks := bs[a].client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	clean := map[int32][]string{}
	produce(allAcks, "both", 10, clean)

	if err := syscall.Kill(bs[b].pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(bs[b].pid(), syscall.SIGCONT) })
	// Out of sync only while the leader has records it lacks: acks=1
	// writes until the ISR is A alone.
	oneAck := bs[a].client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite())
	leaderOnly := map[int32][]string{}
	waitUntil(t, 10*time.Second, fmt.Sprintf("broker %d alone in both ISRs", a), func() bool {
		produce(oneAck, "tick", 1, leaderOnly)
		ps, err := partitionsOf(t, bs[ctrl].addr, topic)
		return err == nil && slices.Equal(ps[0].ISR, []int32{a}) && slices.Equal(ps[1].ISR, []int32{a})
	})
	produce(oneAck, "only-a", 5, leaderOnly)
	aEnd := endOffsets(t, bs[a].admin(), topic)

	bs[a].kill()
	if err := syscall.Kill(bs[b].pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	offline := func(ps kadm.PartitionDetails, p int32) bool {
		return ps[p].Leader == -1 && slices.Equal(ps[p].ISR, []int32{a})
	}
	waitPartitions(t, bs[ctrl].addr, topic, zkSession+15*time.Second, "both partitions offline", func(ps kadm.PartitionDetails) bool {
		return len(ps) == 2 && offline(ps, 0) && offline(ps, 1)
	})
	waitUntil(t, 20*time.Second, fmt.Sprintf("broker %d registered and live", b), func() bool {
		md, err := freshMetadata(t, bs[ctrl].addr)
		return err == nil && len(md.Brokers) == 2 && slices.ContainsFunc(md.Brokers, func(x kadm.BrokerDetail) bool { return x.NodeID == b })
	})
	// Offline, and it stays so: B is live but out of sync. Polled for a
	// bounded while, every answer must show no leader.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		ps, err := partitionsOf(t, bs[ctrl].addr, topic)
		if err == nil && (!offline(ps, 0) || !offline(ps, 1)) {
			t.Fatalf("a partition got a leader with unclean.leader.election.enable=false:\n%s", describe(ps))
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	for _, p := range both {
		if st := zkState(t, observer, topic, p); st.Leader != -1 || !slices.Equal(st.ISR, []int32{a}) {
			t.Fatalf("state of partition %d in ZooKeeper: %+v, want leader -1 and isr [%d]", p, st, a)
		}
	}

	// The ElectLeaders API, type UNCLEAN, for partition 1 only.
	res, err := bs[ctrl].admin().ElectLeaders(ctxFor(t, 15*time.Second), kadm.ElectLiveReplica, kadm.TopicsSet{topic: {1: {}}})
	if err != nil {
		t.Fatalf("ElectLeaders UNCLEAN: %v", err)
	}
	if r := res[topic][1]; r.Err != nil {
		t.Fatalf("ElectLeaders UNCLEAN of partition 1: %v", r.Err)
	}
	waitPartitions(t, bs[ctrl].addr, topic, 15*time.Second, fmt.Sprintf("partition 1 led by %d (ElectLeaders UNCLEAN), 0 still offline", b),
		func(ps kadm.PartitionDetails) bool {
			return ps[1].Leader == b && slices.Equal(ps[1].ISR, []int32{b}) && offline(ps, 0)
		})

	// The topic config: the controller elects partition 0 at once.
	enabled := time.Now()
	ar, err := bs[ctrl].admin().AlterTopicConfigs(ctxFor(t, 15*time.Second), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}, topic)
	if err == nil {
		for _, r := range ar {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("set unclean.leader.election.enable=true: %v", err)
	}
	waitPartitions(t, bs[ctrl].addr, topic, 15*time.Second, fmt.Sprintf("partition 0 led by %d after the config change", b),
		func(ps kadm.PartitionDetails) bool { return ps[0].Leader == b && slices.Equal(ps[0].ISR, []int32{b}) })
	t.Logf("partition 0 elected uncleanly %v after the config change", time.Since(enabled).Round(time.Millisecond))
	// B's own metadata follows the controller's (it is asked next).
	waitPartitions(t, bs[b].addr, topic, 15*time.Second, fmt.Sprintf("both partitions led by %d in its own metadata", b),
		func(ps kadm.PartitionDetails) bool { return ps[0].Leader == b && ps[1].Leader == b })
	for _, p := range both {
		if st := zkState(t, observer, topic, p); st.Leader != b || !slices.Equal(st.ISR, []int32{b}) {
			t.Fatalf("state of partition %d in ZooKeeper: %+v, want leader %d and isr [%d]", p, st, b, b)
		}
	}

	// B has what both had: every acks=all record, then at most the
	// first acks=1 records (a fetch answered just before the SIGSTOP
	// waits in its socket and is appended when it resumes), not all.
	bEnd := endOffsets(t, bs[b].admin(), topic)
	got := consumeAll(t, bs[b].addr, topic, bEnd, 20*time.Second)
	for _, p := range both {
		var vals []string
		for _, r := range got[p] {
			vals = append(vals, string(r.Value))
		}
		k := len(vals) - len(clean[p])
		if k < 0 || k >= len(leaderOnly[p]) || !slices.Equal(vals, append(slices.Clone(clean[p]), leaderOnly[p][:k]...)) {
			t.Fatalf("partition %d on the unclean leader %d: %q, want the %d acks=all records %q and fewer than the %d acks=1 ones after them",
				p, b, vals, len(clean[p]), clean[p], len(leaderOnly[p]))
		}
	}
	t.Logf("unclean election lost the acks=1 records only broker %d had: offsets %v to %v", a, bEnd, aEnd)
	after := map[int32][]string{}
	produce(bs[b].client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks())), "after", 5, after)

	// A returns: it truncates to where B's epoch began, names the range,
	// and follows.
	bs[a].restart()
	for _, p := range both {
		line := regexp.MustCompile(fmt.Sprintf(`msg="truncating log"[^\n]*topic=%s partition=%d offset=%d log_end_offset=%d`, topic, p, bEnd[p], aEnd[p]))
		if log, ok := bs[a].waitLog(line, 20*time.Second); !ok {
			t.Fatalf("broker %d's log names no truncation of partition %d from %d to %d:\n%s", a, p, bEnd[p], aEnd[p], tail(log, 8<<10))
		}
	}
	waitPartitions(t, bs[ctrl].addr, topic, 20*time.Second, fmt.Sprintf("broker %d back in both ISRs", a), fullISR(2))
	hws := endOffsets(t, bs[b].admin(), topic)
	for _, p := range both {
		if want := bEnd[p] + int64(len(after[p])); hws[p] != want {
			t.Fatalf("partition %d: end offset %d, want %d", p, hws[p], want)
		}
	}
	stopAll(t, bs)
	requireReplicasMatch(t, []*broker{bs[b], bs[a]}, topic, hws)
}
