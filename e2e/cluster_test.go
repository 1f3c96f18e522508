//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/metadata/zkstore"
	"github.com/qk-project/qk/internal/zktest"
)

// zkCli is the ZooKeeper shell of Debian's zookeeper package.
const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"

// startZKCluster starts a real ZooKeeper and n `qk broker start`
// processes joined to it under the chroot /qk, with ids 0..n-1.
func startZKCluster(t *testing.T, n int) (*zktest.Server, []*broker) {
	t.Helper()
	zk := zktest.Start(t)
	return zk, startZKClusterOn(t, zk.Addr()+"/qk", n)
}

// startZKClusterOn starts n `qk broker start` processes with ids 0..n-1
// on the ZooKeeper of connect (zookeeper.connect: host:port[,host:port...]
// and a chroot), with 6 s sessions, and waits until each sees all n.
func startZKClusterOn(t *testing.T, connect string, n int, sets ...string) []*broker {
	t.Helper()
	var bs []*broker
	for i := range n {
		bs = append(bs, startBroker(t, withSet(append([]string{
			"broker.id=" + strconv.Itoa(i),
			"zookeeper.connect=" + connect,
			"zookeeper.session.timeout.ms=6000",
			"offsets.topic.replication.factor=1",
		}, sets...)...)))
	}
	for _, b := range bs {
		adm := b.admin()
		deadline := time.Now().Add(30 * time.Second)
		for {
			md, err := adm.BrokerMetadata(ctxFor(t, 5*time.Second))
			if err == nil && len(md.Brokers) == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %s does not see %d brokers: %v %v", b.addr, n, md.Brokers, err)
			}
			time.Sleep(50 * time.Millisecond) // polling interval
		}
	}
	return bs
}

// TestZooKeeperCluster: three qk processes on a real ZooKeeper form one
// cluster. From every broker, franz-go and kcat -L see the three brokers
// and one controller; a 12-partition topic is spread 4/4/4 with leaders on
// all three; records produced through one bootstrap broker are consumed
// byte for byte through another; and ZooKeeper's own zkCli reads the
// brokers' registrations and the topic as Kafka's JSON.
func TestZooKeeperCluster(t *testing.T) {
	kcat := requireKcat(t)
	const topic = "spread"
	zk, bs := startZKCluster(t, 3)

	createTopic(t, bs[1].admin(), topic, 12, nil)
	md0, err := freshMetadata(t, bs[0].addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		adm := b.admin()
		deadline := time.Now().Add(30 * time.Second)
		for {
			md, err := adm.Metadata(ctxFor(t, 5*time.Second), topic)
			leaders := map[int32]int{}
			if err == nil && md.Topics[topic].Err == nil {
				for _, p := range md.Topics[topic].Partitions {
					if p.Err == nil {
						leaders[p.Leader]++
					}
				}
			}
			if maps.Equal(leaders, map[int32]int{0: 4, 1: 4, 2: 4}) {
				if md.Controller < 0 || md.Controller > 2 {
					t.Fatalf("broker %s names controller %d", b.addr, md.Controller)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %s: leaders of %s %v (err %v), want 4 on each of 0, 1, 2", b.addr, topic, leaders, err)
			}
			time.Sleep(50 * time.Millisecond) // polling interval
		}

		// qk's own operator view: the same cluster from every broker.
		var info struct {
			ClusterID  string `json:"cluster_id"`
			Controller int32  `json:"controller"`
			Brokers    []struct {
				ID int32 `json:"id"`
			} `json:"brokers"`
		}
		infoOut := runCmd(t, time.Minute, nil, qkBin, "cluster", "info", "-b", b.addr, "--format", "json")
		if err := json.Unmarshal(infoOut, &info); err != nil || len(info.Brokers) != 3 || info.Controller != md0.Controller || info.ClusterID == "" {
			t.Fatalf("qk cluster info -b %s: %s (%v), want 3 brokers and controller %d", b.addr, infoOut, err, md0.Controller)
		}

		out := string(runCmd(t, time.Minute, nil, kcat, "-L", "-b", b.addr, "-t", topic))
		if !strings.Contains(out, " 3 brokers:") || !strings.Contains(out, `topic "`+topic+`" with 12 partitions:`) {
			t.Fatalf("kcat -L -b %s:\n%s", b.addr, out)
		}
		for id := range 3 {
			if !regexp.MustCompile(fmt.Sprintf(`broker %d at 127\.0\.0\.1:\d+`, id)).MatchString(out) {
				t.Fatalf("kcat -L -b %s does not list broker %d:\n%s", b.addr, id, out)
			}
		}
	}

	// Produce through broker 0, consume through broker 2.
	const n = 1_200
	var recs []*kgo.Record
	want := map[int32][]string{}
	for i := range n {
		p := int32(i % 12)
		v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%50))
		recs = append(recs, &kgo.Record{Partition: p, Key: []byte(strconv.Itoa(i)), Value: []byte(v)})
		want[p] = append(want[p], strconv.Itoa(i)+"="+v)
	}
	cl := bs[0].client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce through broker 0: %v", err)
	}
	ends := endOffsets(t, bs[2].admin(), topic)
	got := consumeAll(t, bs[2].addr, topic, ends, time.Minute)
	for p := range int32(12) {
		var vals []string
		for _, r := range got[p] {
			vals = append(vals, string(r.Key)+"="+string(r.Value))
		}
		if !slices.Equal(vals, want[p]) {
			t.Fatalf("partition %d read through broker 2: %d records, want the %d produced through broker 0 in order", p, len(vals), len(want[p]))
		}
	}

	// ZooKeeper's own shell reads what the brokers wrote, as Kafka's JSON.
	for id := range 3 {
		reg := zkGet(t, zk, fmt.Sprintf("/qk/brokers/ids/%d", id))
		var r struct {
			Version   int      `json:"version"`
			Endpoints []string `json:"endpoints"`
			Port      int      `json:"port"`
		}
		if err := json.Unmarshal([]byte(reg), &r); err != nil || r.Version < 4 || len(r.Endpoints) != 1 || !strings.HasPrefix(r.Endpoints[0], "PLAINTEXT://127.0.0.1:") {
			t.Fatalf("zkCli get /qk/brokers/ids/%d: %q (%v), want Kafka's registration JSON", id, reg, err)
		}
	}
	var ctrl struct {
		BrokerID int `json:"brokerid"`
	}
	if err := json.Unmarshal([]byte(zkGet(t, zk, "/qk/controller")), &ctrl); err != nil || ctrl.BrokerID < 0 || ctrl.BrokerID > 2 {
		t.Fatalf("zkCli get /qk/controller: %v %+v", err, ctrl)
	}
	var assignment struct {
		Partitions map[string][]int `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(zkGet(t, zk, "/qk/brokers/topics/"+topic)), &assignment); err != nil || len(assignment.Partitions) != 12 {
		t.Fatalf("zkCli get /qk/brokers/topics/%s: %v %+v", topic, err, assignment)
	}
	var state struct {
		Leader int   `json:"leader"`
		ISR    []int `json:"isr"`
	}
	if err := json.Unmarshal([]byte(zkGet(t, zk, "/qk/brokers/topics/"+topic+"/partitions/0/state")), &state); err != nil || len(state.ISR) != 1 || state.ISR[0] != state.Leader {
		t.Fatalf("zkCli get partition 0 state: %v %+v", err, state)
	}
}

// freshMetadata asks the broker at addr for the cluster's brokers and
// controller with a new client each time: a client's own metadata cache
// would answer with the view from before a failure.
func freshMetadata(t *testing.T, addr string) (kadm.Metadata, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return kadm.NewClient(cl).BrokerMetadata(ctxFor(t, 5*time.Second))
}

// zkGet reads one node's data with zkCli.sh and returns the line that
// holds it (zkCli prints its own log and banner around it).
func zkGet(t *testing.T, zk *zktest.Server, path string) string {
	t.Helper()
	cmd := exec.Command(zkCli, "-server", zk.Addr(), "get", path)
	cmd.Env = append(childEnv(), "ZOO_LOG4J_PROP=ERROR,CONSOLE")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkCli get %s: %v\n%s", path, err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "{") {
			return line
		}
	}
	t.Fatalf("zkCli get %s printed no JSON:\n%s", path, out)
	return ""
}

// TestZooKeeperControllerFailover: SIGKILL of the controller's process.
// Another broker becomes controller within the ZooKeeper session timeout
// (6 s here) plus a margin, and creates and deletes topics; the dead
// broker's partitions show no leader while the other partitions keep
// working; restarted, the broker serves its records again.
func TestZooKeeperControllerFailover(t *testing.T) {
	const (
		topic   = "fo"
		session = 6 * time.Second
	)
	zk, bs := startZKCluster(t, 3)
	defer func() {
		if t.Failed() {
			t.Logf("zookeeper log:\n%s", zk.Log())
		}
	}()
	createTopic(t, bs[0].admin(), topic, 6, nil)
	var recs []*kgo.Record
	for i := range 600 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 6), Value: []byte(fmt.Sprintf("r%d", i))})
	}
	cl := bs[0].client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
	ends := endOffsets(t, bs[0].admin(), topic)

	md, err := bs[0].admin().BrokerMetadata(ctxFor(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	dead := md.Controller
	victim := bs[dead]
	var survivor *broker
	for i, b := range bs {
		if int32(i) != dead {
			survivor = b
			break
		}
	}
	killed := time.Now()
	victim.kill()

	var newController int32 = -1
	for deadline := time.Now().Add(session + 20*time.Second); ; {
		md, err := freshMetadata(t, survivor.addr)
		if err == nil && md.Controller >= 0 && md.Controller != dead && len(md.Brokers) == 2 {
			newController = md.Controller
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new controller after killing controller %d: %+v %v", dead, md, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
	took := time.Since(killed)
	t.Logf("controller %d killed; broker %d controller after %v (session timeout %v)", dead, newController, took.Round(time.Millisecond), session)
	if took > session+5*time.Second {
		t.Fatalf("failover took %v, want within the session timeout %v and a margin", took, session)
	}

	// The new controller creates and deletes topics.
	adm := survivor.admin()
	createTopic(t, adm, "after", 4, nil)
	t.Logf("controller %d killed; CreateTopics answered by the new one %v later", dead, time.Since(killed).Round(time.Millisecond))
	resp, err := adm.DeleteTopics(ctxFor(t, 30*time.Second), "after")
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete topic after failover: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		topics, err := adm.ListTopics(ctxFor(t, 5*time.Second))
		if err == nil && !topics.Has("after") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("deleted topic still listed")
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}

	// The dead broker's partitions have no leader; the others work.
	tmd, err := adm.Metadata(ctxFor(t, 5*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	var live []int32
	for _, p := range tmd.Topics[topic].Partitions {
		if p.Leader == dead {
			t.Fatalf("partition %d still led by the dead broker %d", p.Partition, dead)
		}
		if p.Err == nil {
			live = append(live, p.Partition)
		}
	}
	if len(live) != 4 {
		t.Fatalf("%d partitions led by live brokers, want 4 of 6 (2 on the dead broker)", len(live))
	}
	cl = survivor.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range live {
		if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Partition: p, Value: []byte("during")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d, led by a live broker: %v", p, err)
		}
		ends[p]++
	}
	cl.Close()

	// Restarted, the broker serves its data again.
	victim.restart()
	got := consumeAll(t, survivor.addr, topic, ends, time.Minute)
	n := 0
	for _, rs := range got {
		n += len(rs)
	}
	if n != 600+len(live) {
		t.Fatalf("read %d records after the restart, want %d", n, 600+len(live))
	}
}

// TestZooKeeperSessionExpiry: the controller's process is cut off from
// ZooKeeper (a TCP proxy between them, cut) until ZooKeeper expires its
// session. Another broker becomes controller; when the connection comes
// back, the old controller learns of the expiry, resigns, opens a new
// session and registers again as a plain broker (a new ephemeral node, a
// new session), and goes on serving its partition.
func TestZooKeeperSessionExpiry(t *testing.T) {
	const topic = "exp"
	zk := zktest.Start(t)
	proxy := zktest.NewProxy(t, zk.Addr())
	var bs []*broker
	for i := range 3 {
		connect := zk.Addr()
		if i == 0 {
			connect = proxy.Addr()
		}
		bs = append(bs, startBroker(t, withSet("broker.id="+strconv.Itoa(i), "zookeeper.connect="+connect+"/qk",
			"zookeeper.session.timeout.ms=4000", "offsets.topic.replication.factor=1")))
	}
	observer := openZK(t, zk.Addr()+"/qk")
	_, reg, err := observer.Get(t.Context(), "/brokers/ids/0")
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, bs[1].admin(), topic, 3, nil)
	md, err := freshMetadata(t, bs[1].addr)
	if err != nil || md.Controller != 0 {
		t.Fatalf("broker 0, started first, should be controller: %+v %v", md, err)
	}

	proxy.Cut()
	waitUntil(t, 30*time.Second, "ZooKeeper expires broker 0's session", func() bool {
		_, ok, err := observer.Exists(t.Context(), "/brokers/ids/0")
		return err == nil && !ok
	})
	waitUntil(t, 30*time.Second, "another controller", func() bool {
		md, err := freshMetadata(t, bs[1].addr)
		return err == nil && md.Controller > 0
	})
	proxy.Restore()
	waitUntil(t, 60*time.Second, "broker 0 registered on a new session", func() bool {
		_, st, err := observer.Get(t.Context(), "/brokers/ids/0")
		return err == nil && st.EphemeralOwner != reg.EphemeralOwner && st.EphemeralOwner != 0
	})
	// The log says what happened (the last line once the new session's
	// metadata is read, a moment after the registration).
	for _, want := range []string{"zookeeper session expired; opening a new session", "resigned as controller", "registered again on a new zookeeper session"} {
		waitUntil(t, 30*time.Second, "broker 0 logs "+want, func() bool { return strings.Contains(bs[0].log(), want) })
	}
	waitUntil(t, 30*time.Second, "three brokers, broker 0 not controller", func() bool {
		md, err := freshMetadata(t, bs[1].addr)
		return err == nil && len(md.Brokers) == 3 && md.Controller > 0
	})

	// Broker 0 still serves its partition, through any bootstrap broker.
	cl := bs[2].client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range int32(3) {
		recs = append(recs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("after-%d", p))})
	}
	if err := cl.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to every partition after broker 0's new session: %v", err)
	}
	got := consumeAll(t, bs[1].addr, topic, endOffsets(t, bs[1].admin(), topic), time.Minute)
	for p := range int32(3) {
		if len(got[p]) != 1 || string(got[p][0].Value) != fmt.Sprintf("after-%d", p) {
			t.Fatalf("partition %d: %v", p, got[p])
		}
	}
}

// openZK opens a ZooKeeper session of the test's own, to look at what the
// brokers wrote.
func openZK(t *testing.T, connect string) *zkstore.Store {
	t.Helper()
	servers, chroot, err := config.ParseZookeeperConnect(connect)
	if err != nil {
		t.Fatal(err)
	}
	s, err := zkstore.Open(ctxFor(t, 30*time.Second), zkstore.Config{Servers: servers, Chroot: chroot, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitUntil polls cond until it holds or the test fails after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// TestZooKeeperThousandPartitions creates a 1,000-partition topic on a
// 3-broker cluster and waits until every broker's Metadata shows every
// partition led by a live broker, about a third each; the time is logged.
func TestZooKeeperThousandPartitions(t *testing.T) {
	const (
		topic = "thousand"
		n     = 1_000
	)
	_, bs := startZKCluster(t, 3)
	start := time.Now()
	created := createManyPartitions(t, bs[0].admin(), topic, n)
	for i, b := range bs {
		waitUntil(t, time.Minute, fmt.Sprintf("broker %d sees %d led partitions", i, n), func() bool {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
			if err != nil {
				return false
			}
			defer cl.Close()
			md, err := kadm.NewClient(cl).Metadata(ctxFor(t, 10*time.Second), topic)
			if err != nil || md.Topics[topic].Err != nil || len(md.Topics[topic].Partitions) != n {
				return false
			}
			leaders := map[int32]int{}
			for _, p := range md.Topics[topic].Partitions {
				if p.Err != nil {
					return false
				}
				leaders[p.Leader]++
			}
			return leaders[0] >= 333 && leaders[1] >= 333 && leaders[2] >= 333
		})
	}
	t.Logf("CreateTopics of %d partitions on 3 brokers: %v; on every broker's Metadata after %v",
		n, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestZooKeeperGroupAcrossBrokers: a consumer group whose two members
// bootstrap from different brokers of a ZooKeeper cluster, with Kafka's
// default offsets.topic.replication.factor (3, capped at 1 until qk
// replicates): both members get partitions, every record is consumed, and
// offsets committed through one broker are read through another.
func TestZooKeeperGroupAcrossBrokers(t *testing.T) {
	const (
		topic = "grouped"
		group = "g"
		n     = 600
	)
	zk := zktest.Start(t)
	var bs []*broker
	for i := range 3 {
		bs = append(bs, startBroker(t, withSet("broker.id="+strconv.Itoa(i), "zookeeper.connect="+zk.Addr()+"/qk",
			"group.initial.rebalance.delay.ms=0")))
	}
	waitUntil(t, 30*time.Second, "three brokers", func() bool {
		md, err := freshMetadata(t, bs[2].addr)
		return err == nil && len(md.Brokers) == 3
	})
	createTopic(t, bs[0].admin(), topic, 6, nil)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Partition: int32(i % 6), Value: []byte(strconv.Itoa(i))})
	}
	pcl := bs[0].client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	members := make([]*kgo.Client, 2)
	for i := range members {
		members[i] = bs[i+1].client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	}
	ctx := ctxFor(t, 2*time.Minute)
	got := map[string]int{}
	assigned := make([]bool, 2)
	for len(got) < n || !assigned[0] || !assigned[1] {
		for i, m := range members {
			fs := m.PollRecords(ctxFor(t, 300*time.Millisecond), 100)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records; members assigned %v", len(got), n, assigned)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got[string(r.Value)]++
				assigned[i] = true
			})
		}
	}
	// At least once: a partition that moves to the second member when it
	// joins is read again from the last commit, as in Kafka.
	for i := range n {
		if got[strconv.Itoa(i)] == 0 {
			t.Fatalf("record %d never consumed", i)
		}
	}
	// The members leave; offsets committed through broker 0 (kadm, as
	// kafka-consumer-groups.sh does) are read back through broker 2: the
	// group's coordinator is found from any broker.
	for _, m := range members {
		m.Close()
	}
	offsets := kadm.Offsets{}
	for p := range int32(6) {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: n / 6, LeaderEpoch: -1})
	}
	waitUntil(t, 30*time.Second, "offsets committed through broker 0", func() bool {
		resp, err := bs[0].admin().CommitOffsets(ctxFor(t, 5*time.Second), group, offsets)
		return err == nil && resp.Error() == nil
	})
	fetched, err := bs[2].admin().FetchOffsets(ctxFor(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(6) {
		o, ok := fetched.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != n/6 {
			t.Fatalf("partition %d committed offset through broker 2: %+v %v, want %d", p, o, ok, n/6)
		}
	}
}
