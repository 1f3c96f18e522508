//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/zkstore"
	"github.com/qk-project/qk/internal/zktest"
)

// Failures of a ZooKeeper-mode cluster of three `qk broker start`
// processes on a real ZooKeeper: a broker killed, the controller frozen,
// a ZooKeeper server lost, a broker shut down on SIGTERM. Every failure
// is bounded in time; what the cluster must show afterwards is asserted
// from every broker's own Metadata and from ZooKeeper.

// zkSession is zookeeper.session.timeout.ms of startZKClusterOn's brokers.
const zkSession = 6 * time.Second

// TestZooKeeperBrokerKilled: SIGKILL of a broker that is not the
// controller. Within the session timeout and a margin, every surviving
// broker's Metadata shows exactly the dead broker's 4 of 12 partitions
// without a leader (LEADER_NOT_AVAILABLE, the dead broker offline) and
// ZooKeeper holds their state as Kafka's controller writes it (leader -1,
// epoch +1, the ISR keeping the dead replica); clients of the other 8
// partitions produce and consume throughout. Restarted, the broker leads
// its partitions again at a newer leader epoch and serves exactly the
// records acknowledged before the kill, in order, once each.
func TestZooKeeperBrokerKilled(t *testing.T) {
	const topic = "killed"
	zk, bs := startZKCluster(t, 3)
	createTopic(t, bs[0].admin(), topic, 12, nil)
	before := waitSpread(t, bs, topic, 12)

	ctrl := controllerOf(t, bs[0].addr)
	dead := (ctrl + 1) % 3
	victim := bs[dead]
	var survivors []*broker
	for i, b := range bs {
		if int32(i) != dead {
			survivors = append(survivors, b)
		}
	}
	all := slices.Sorted(maps.Keys(before))
	var theirs, live []int32
	for _, p := range all {
		if before[p].Leader == dead {
			theirs = append(theirs, p)
		} else {
			live = append(live, p)
		}
	}

	want := map[int32][]keyValue{}
	cl := survivors[0].client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceTo(t, cl, topic, all, 20, "before", want)

	killed := time.Now()
	victim.kill()
	var offline kadm.PartitionDetails
	for _, b := range survivors {
		offline = waitPartitions(t, b.addr, topic, zkSession+10*time.Second,
			fmt.Sprintf("broker %s shows exactly broker %d's partitions %v offline", b.addr, dead, theirs),
			func(ps kadm.PartitionDetails) bool { return offlineExactly(ps, before, dead) })
	}
	took := time.Since(killed)
	t.Logf("broker %d killed; its %d partitions offline on both survivors after %v (session timeout %v)",
		dead, len(theirs), took.Round(time.Millisecond), zkSession)
	if took > zkSession+5*time.Second {
		t.Fatalf("partitions offline %v after the kill, want within the session timeout %v and a margin", took, zkSession)
	}

	// ZooKeeper's own shell: Kafka's offline state of one of them.
	p := theirs[0]
	st := partitionState(t, zk, topic, p)
	if st.Leader != -1 || st.LeaderEpoch != before[p].LeaderEpoch+1 || !slices.Equal(st.ISR, []int32{dead}) {
		t.Fatalf("state of partition %d in ZooKeeper: %+v, want leader -1, leader_epoch %d (+1), isr [%d]",
			p, st, before[p].LeaderEpoch+1, dead)
	}

	// The operator's view: qk topic describe marks them offline.
	var describedAll []struct {
		Partitions []struct {
			Partition       int32   `json:"partition"`
			Leader          int32   `json:"leader"`
			OfflineReplicas []int32 `json:"offline_replicas"`
		} `json:"partitions"`
	}
	out := runCmd(t, time.Minute, nil, qkBin, "topic", "describe", topic, "-b", survivors[0].addr, "--format", "json")
	if err := json.Unmarshal(out, &describedAll); err != nil || len(describedAll) != 1 {
		t.Fatalf("qk topic describe --format json: %v\n%s", err, out)
	}
	described := describedAll[0]
	nOffline := 0
	for _, dp := range described.Partitions {
		if slices.Contains(theirs, dp.Partition) != (dp.Leader == -1 && slices.Equal(dp.OfflineReplicas, []int32{dead})) {
			t.Errorf("qk topic describe: partition %d leader %d offline %v", dp.Partition, dp.Leader, dp.OfflineReplicas)
		}
		if dp.Leader == -1 {
			nOffline++
		}
	}
	if nOffline != len(theirs) || len(described.Partitions) != len(all) {
		t.Errorf("qk topic describe shows %d of %d partitions offline, want %d of %d\n%s", nOffline, len(described.Partitions), len(theirs), len(all), out)
	}

	// The other partitions keep working, for the client from before the
	// kill and for a new consumer.
	produceTo(t, cl, topic, live, 10, "during", want)
	requireConsumed(t, survivors[1].addr, topic, live, want)

	victim.restart()
	for _, b := range bs {
		waitPartitions(t, b.addr, topic, 30*time.Second,
			fmt.Sprintf("broker %s shows broker %d leading %v again at a newer epoch", b.addr, dead, theirs),
			func(ps kadm.PartitionDetails) bool { return ledAgain(ps, before, offline) })
	}
	requireConsumed(t, victim.addr, topic, theirs, want)
	requireConsumed(t, survivors[0].addr, topic, all, want)
	requireEnds(t, victim.admin(), topic, want)
}

// TestZooKeeperControllerPaused: SIGSTOP of the controller's process, so
// that it neither dies nor talks: ZooKeeper expires its session and
// another broker becomes controller, which creates and deletes topics. A
// CreateTopics sent to the frozen controller, read when it resumes, must
// create nothing: the deposed controller is fenced or resigned first.
// Resumed (SIGCONT), the old controller resigns, registers again, is not
// the controller any more (the new one stays), and serves as a plain
// broker: three brokers in Metadata, a new topic with partitions on all
// three created, produced to and consumed through its address.
func TestZooKeeperControllerPaused(t *testing.T) {
	zk, bs := startZKCluster(t, 3)
	observer := openZK(t, zk.Addr()+"/qk")
	createTopic(t, bs[0].admin(), "base", 6, nil)
	waitSpread(t, bs, "base", 6)
	want := map[int32][]keyValue{}
	produceTo(t, bs[0].client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "base", []int32{0, 1, 2, 3, 4, 5}, 10, "base", want)

	oldID := controllerOf(t, bs[0].addr)
	old := bs[oldID]
	survivor := bs[(oldID+1)%3]
	epochBefore := controllerEpoch(t, observer)

	// A connection to the controller for CreateTopics, opened now with a
	// validate-only request, so that the request sent while it is frozen
	// sits in its socket until it resumes.
	stale := old.client(kgo.RequestTimeoutOverhead(time.Minute))
	if _, err := kadm.NewClient(stale).BrokerMetadata(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := createTopicsOn(ctxFor(t, 10*time.Second), stale, oldID, "stale", true); err != nil {
		t.Fatalf("validate-only CreateTopics on controller %d: %v", oldID, err)
	}

	t.Cleanup(func() { _ = syscall.Kill(old.pid(), syscall.SIGCONT) })
	if err := syscall.Kill(old.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	staleErr := make(chan error, 1)
	staleCtx := ctxFor(t, 45*time.Second)
	go func() { staleErr <- createTopicsOn(staleCtx, stale, oldID, "stale", false) }()

	var newID int32 = -1
	waitUntil(t, zkSession+15*time.Second, fmt.Sprintf("a controller other than the paused %d", oldID), func() bool {
		md, err := freshMetadata(t, survivor.addr)
		if err == nil && md.Controller >= 0 && md.Controller != oldID && len(md.Brokers) == 2 {
			newID = md.Controller
			return true
		}
		return false
	})
	t.Logf("controller %d paused; broker %d controller after %v (session timeout %v)",
		oldID, newID, time.Since(paused).Round(time.Millisecond), zkSession)

	// The new controller creates and deletes topics.
	createTopic(t, survivor.admin(), "during", 4, nil)
	for i, b := range bs {
		if int32(i) != oldID {
			waitPartitions(t, b.addr, "during", 30*time.Second, fmt.Sprintf("broker %d shows topic during led", i),
				func(ps kadm.PartitionDetails) bool { return len(ps) == 4 && allLed(ps) })
		}
	}
	resp, err := survivor.admin().DeleteTopics(ctxFor(t, 30*time.Second), "during")
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete topic during through controller %d: %v", newID, err)
	}
	for i, b := range bs {
		if int32(i) != oldID {
			waitUntil(t, 30*time.Second, fmt.Sprintf("broker %d no longer lists topic during", i), func() bool {
				ps, err := partitionsOf(t, b.addr, "during")
				return errors.Is(err, kerr.UnknownTopicOrPartition) && len(ps) == 0
			})
		}
	}

	resumed := time.Now()
	if err := syscall.Kill(old.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// (a) It resigned (its session expired, or a fenced write told it),
	// then registered on a new session.
	if log, ok := old.waitLog(regexp.MustCompile(`(?s)resigned as controller.*registered broker`), 30*time.Second); !ok {
		t.Fatalf("broker %d resumed: no \"resigned as controller\" then \"registered broker\" within 30s:\n%s", oldID, tail(log, 4<<10))
	}
	t.Logf("broker %d resumed; resigned and registered again after %v", oldID, time.Since(resumed).Round(time.Millisecond))
	select {
	case err := <-staleErr:
		switch {
		case err == nil:
			t.Fatalf("CreateTopics read by the deposed controller %d succeeded", oldID)
		case errors.Is(err, errNoAnswer):
			t.Fatalf("broker %d resumed did not answer the CreateTopics sent while it was paused: %v", oldID, err)
		}
		// Refused, and with a code that tells the client to try again
		// (NOT_CONTROLLER, or the store's BROKER_NOT_AVAILABLE or
		// REQUEST_TIMED_OUT), not one that says the server is broken.
		var ke *kerr.Error
		if !errors.As(err, &ke) || !ke.Retriable {
			t.Fatalf("CreateTopics read by the deposed controller %d: %v, want a retriable error", oldID, err)
		}
		t.Logf("CreateTopics read by the deposed controller: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("broker %d did not answer the CreateTopics it read when resumed within 30s", oldID)
	}

	// (b) The new controller stays; (d) three brokers again.
	requireController(t, bs, newID, 30*time.Second)
	// (c) A newer controller epoch; nothing created by the old controller.
	if e := controllerEpoch(t, observer); e <= epochBefore {
		t.Fatalf("/controller_epoch %d after the failover, want more than %d", e, epochBefore)
	}
	requireTopics(t, observer, "base")

	// (d) A plain broker again: its partitions of base led by it again,
	// and a topic across all three brokers through its address.
	waitSpread(t, bs, "base", 6)
	requireConsumed(t, old.addr, "base", []int32{0, 1, 2, 3, 4, 5}, want)
	createTopic(t, old.admin(), "rejoined", 6, nil)
	waitSpread(t, bs, "rejoined", 6)
	rejoined := map[int32][]keyValue{}
	produceTo(t, old.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "rejoined", []int32{0, 1, 2, 3, 4, 5}, 10, "rejoined", rejoined)
	requireConsumed(t, old.addr, "rejoined", []int32{0, 1, 2, 3, 4, 5}, rejoined)
	requireEnds(t, old.admin(), "rejoined", rejoined)
	requireEnds(t, old.admin(), "base", want)
	requireTopics(t, observer, "base", "rejoined")
	requireController(t, bs, newID, 10*time.Second)
}

// TestZooKeeperEnsembleLosesOneServer: three qk brokers on a 3-server
// ZooKeeper ensemble (zookeeper.connect lists all three). The ensemble's
// leader is killed: the two others elect a new one, and as followers that
// lost their leader close their clients' connections, every broker is cut
// off for a moment, whichever server it was on. The brokers keep their
// sessions (they reconnect within the session timeout) and keep working: records are produced and consumed,
// a new topic reaches every broker, a killed broker's partitions go
// offline (the controller's watches survived) and come back with it.
// Every acknowledged record is read once.
func TestZooKeeperEnsembleLosesOneServer(t *testing.T) {
	ens := zktest.StartEnsemble(t, 3)
	bs := startZKClusterOn(t, ens.Connect()+"/qk", 3)
	all := []int32{0, 1, 2, 3, 4, 5}
	createTopic(t, bs[0].admin(), "one", 6, nil)
	before := waitSpread(t, bs, "one", 6)
	want := map[int32][]keyValue{}
	cl := bs[1].client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceTo(t, cl, "one", all, 10, "before", want)
	requireConsumed(t, bs[2].addr, "one", all, want)

	var leader *zktest.Server
	var rest []*zktest.Server
	for _, s := range ens.Servers {
		mode, err := s.Mode(5 * time.Second)
		if err != nil {
			t.Fatalf("srvr on ZooKeeper %s: %v", s.Addr(), err)
		}
		if mode == "leader" && leader == nil {
			leader = s
		} else {
			rest = append(rest, s)
		}
	}
	if leader == nil {
		t.Fatal("no ZooKeeper server of the ensemble says it is the leader")
	}
	lost := time.Now()
	leader.Kill()
	waitUntil(t, 30*time.Second, "a new ZooKeeper leader", func() bool {
		for _, s := range rest {
			if m, err := s.Mode(time.Second); err == nil && m == "leader" {
				return true
			}
		}
		return false
	})
	t.Logf("ZooKeeper leader %s killed; new leader after %v", leader.Addr(), time.Since(lost).Round(time.Millisecond))

	// The cluster keeps working.
	produceTo(t, cl, "one", all, 10, "after", want)
	createTopic(t, bs[2].admin(), "two", 6, nil)
	waitSpread(t, bs, "two", 6)
	two := map[int32][]keyValue{}
	produceTo(t, cl, "two", all, 10, "two", two)
	requireConsumed(t, bs[0].addr, "two", all, two)
	requireConsumed(t, bs[0].addr, "one", all, want)

	// The controller still follows the brokers: a killed broker's
	// partitions go offline and come back when it does.
	dead := (controllerOf(t, bs[0].addr) + 1) % 3
	bs[dead].kill()
	var offline kadm.PartitionDetails
	for i, b := range bs {
		if int32(i) != dead {
			offline = waitPartitions(t, b.addr, "one", zkSession+10*time.Second,
				fmt.Sprintf("broker %d shows broker %d's partitions offline", i, dead),
				func(ps kadm.PartitionDetails) bool { return offlineExactly(ps, before, dead) })
		}
	}
	bs[dead].restart()
	for i, b := range bs {
		waitPartitions(t, b.addr, "one", 30*time.Second, fmt.Sprintf("broker %d shows broker %d leading again", i, dead),
			func(ps kadm.PartitionDetails) bool { return ledAgain(ps, before, offline) })
	}
	requireConsumed(t, bs[dead].addr, "one", all, want)
	requireEnds(t, bs[0].admin(), "one", want)
	requireEnds(t, bs[0].admin(), "two", two)

	// Not one session was lost: a broker whose server went reconnected
	// to another within its session timeout.
	for i, b := range bs {
		if log := b.allLogs(); strings.Contains(log, "zookeeper session expired") {
			t.Errorf("broker %d lost its ZooKeeper session when one server of three went:\n%s", i, tail(log, 4<<10))
		}
	}
}

// TestZooKeeperControlledShutdown: SIGTERM of a broker that is not the
// controller. It asks the controller for a controlled shutdown (both
// logs say so), exits with status 0 and Kafka's clean-shutdown marker,
// and ends its ZooKeeper session on the way out: its partitions show no
// leader on the other brokers sooner than a session expiry would make
// them. Restarted, it leads them again at a newer epoch and serves every
// record acknowledged before the shutdown.
func TestZooKeeperControlledShutdown(t *testing.T) {
	const topic = "cs"
	_, bs := startZKCluster(t, 3)
	createTopic(t, bs[0].admin(), topic, 12, nil)
	before := waitSpread(t, bs, topic, 12)
	all := slices.Sorted(maps.Keys(before))
	want := map[int32][]keyValue{}
	produceTo(t, bs[0].client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, all, 20, "before", want)

	ctrl := controllerOf(t, bs[0].addr)
	id := (ctrl + 1) % 3
	victim := bs[id]
	stopped := time.Now()
	victim.stopWith(syscall.SIGTERM) // exit status 0 and the marker, or it fails
	exited := time.Since(stopped)
	if !victim.cleanShutdownMarker() {
		t.Fatalf("broker %d: no clean-shutdown marker after SIGTERM", id)
	}
	if !strings.Contains(victim.log(), "controlled shutdown succeeded") {
		t.Fatalf("broker %d's log has no \"controlled shutdown succeeded\":\n%s", id, tail(victim.log(), 4<<10))
	}
	line := regexp.MustCompile(fmt.Sprintf(`msg="controlled shutdown" [^\n]*component=controller[^\n]* broker_id=%d(\s|$)`, id))
	if log, ok := bs[ctrl].waitLog(line, 10*time.Second); !ok {
		t.Fatalf("controller %d's log has no controlled shutdown of broker %d:\n%s", ctrl, id, tail(log, 4<<10))
	}

	var offline kadm.PartitionDetails
	for i, b := range bs {
		if int32(i) != id {
			offline = waitPartitions(t, b.addr, topic, zkSession+10*time.Second,
				fmt.Sprintf("broker %d shows broker %d's partitions offline", i, id),
				func(ps kadm.PartitionDetails) bool { return offlineExactly(ps, before, id) })
		}
	}
	took := time.Since(stopped)
	t.Logf("broker %d exited %v after SIGTERM; its partitions offline on the others after %v", id,
		exited.Round(time.Millisecond), took.Round(time.Millisecond))
	if took-exited >= zkSession {
		t.Fatalf("partitions offline %v after the broker exited: the session was left to expire (%v), not closed", took-exited, zkSession)
	}

	victim.restart()
	for i, b := range bs {
		waitPartitions(t, b.addr, topic, 30*time.Second, fmt.Sprintf("broker %d shows broker %d leading again", i, id),
			func(ps kadm.PartitionDetails) bool { return ledAgain(ps, before, offline) })
	}
	requireConsumed(t, victim.addr, topic, all, want)
	requireEnds(t, victim.admin(), topic, want)
}

// keyValue is one acknowledged record's key and value, compared byte for byte.
type keyValue struct{ key, value string }

// produceTo produces per records to each of partitions of topic through
// cl (a manual partitioner), requires every one acknowledged, and appends
// them to want in the order produced.
func produceTo(t *testing.T, cl *kgo.Client, topic string, partitions []int32, per int, tag string, want map[int32][]keyValue) {
	t.Helper()
	var recs []*kgo.Record
	for i := range per {
		for _, p := range partitions {
			key := fmt.Sprintf("%s-%d-%d", tag, p, i)
			// Not only text: the values are compared as bytes.
			value := append([]byte(fmt.Sprintf("%s value %d of partition %d ", tag, i, p)), 0x00, 0xff, byte(i), byte(p))
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: value})
		}
	}
	for _, r := range cl.ProduceSync(ctxFor(t, 30*time.Second), recs...) {
		if r.Err != nil {
			t.Fatalf("produce %s to %s partition %d: %v", r.Record.Key, topic, r.Record.Partition, r.Err)
		}
	}
	for _, r := range recs {
		want[r.Partition] = append(want[r.Partition], keyValue{string(r.Key), string(r.Value)})
	}
}

// requireConsumed reads partitions of topic from offset 0 through the
// broker at addr and requires exactly want's records in each, in order,
// at offsets 0, 1, 2...
func requireConsumed(t *testing.T, addr, topic string, partitions []int32, want map[int32][]keyValue) {
	t.Helper()
	ends := map[int32]int64{}
	for _, p := range partitions {
		ends[p] = int64(len(want[p]))
	}
	got := consumeAll(t, addr, topic, ends, 30*time.Second)
	for _, p := range partitions {
		var vals []keyValue
		for i, r := range got[p] {
			if r.Offset != int64(i) {
				t.Fatalf("%s partition %d through %s: record %d at offset %d", topic, p, addr, i, r.Offset)
			}
			vals = append(vals, keyValue{string(r.Key), string(r.Value)})
		}
		if !slices.Equal(vals, want[p]) {
			t.Fatalf("%s partition %d through %s: %d records, want the %d acknowledged, in order\ngot  %q\nwant %q",
				topic, p, addr, len(vals), len(want[p]), vals, want[p])
		}
	}
}

// requireEnds requires each partition's end offset to be the number of
// records acknowledged to it: none lost, none written twice.
func requireEnds(t *testing.T, adm *kadm.Client, topic string, want map[int32][]keyValue) {
	t.Helper()
	got := endOffsets(t, adm, topic)
	for p, end := range got {
		if end != int64(len(want[p])) {
			t.Fatalf("%s partition %d: end offset %d, want %d (the records acknowledged)", topic, p, end, len(want[p]))
		}
	}
}

// controllerOf is the controller the broker at addr names.
func controllerOf(t *testing.T, addr string) int32 {
	t.Helper()
	md, err := freshMetadata(t, addr)
	if err != nil || md.Controller < 0 {
		t.Fatalf("controller from %s: %d %v", addr, md.Controller, err)
	}
	return md.Controller
}

// requireController waits until every broker names id as the controller
// and lists all the brokers.
func requireController(t *testing.T, bs []*broker, id int32, timeout time.Duration) {
	t.Helper()
	for i, b := range bs {
		var md kadm.Metadata
		var err error
		waitUntil(t, timeout, fmt.Sprintf("broker %d names controller %d among %d brokers", i, id, len(bs)), func() bool {
			md, err = freshMetadata(t, b.addr)
			return err == nil && md.Controller == id && len(md.Brokers) == len(bs)
		})
	}
}

// controllerEpoch reads /controller_epoch through the test's own
// ZooKeeper session.
func controllerEpoch(t *testing.T, zk *zkstore.Store) int32 {
	t.Helper()
	data, _, err := zk.Get(ctxFor(t, 10*time.Second), metadata.ControllerEpochPath)
	if err != nil {
		t.Fatalf("get %s: %v", metadata.ControllerEpochPath, err)
	}
	e, err := metadata.UnmarshalControllerEpoch(data)
	if err != nil {
		t.Fatalf("%s: %q: %v", metadata.ControllerEpochPath, data, err)
	}
	return e
}

// requireTopics requires the topics in ZooKeeper to be exactly want.
func requireTopics(t *testing.T, zk *zkstore.Store, want ...string) {
	t.Helper()
	got, _, err := zk.Children(ctxFor(t, 10*time.Second), metadata.BrokerTopicsPath)
	if err != nil {
		t.Fatalf("children of %s: %v", metadata.BrokerTopicsPath, err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("topics in ZooKeeper: %q, want exactly %q", got, want)
	}
}

// partitionsOf is topic's partitions in the Metadata of the broker at
// addr, asked with a new client (a client's cache would answer with what
// it saw before a failure).
func partitionsOf(t *testing.T, addr, topic string) (kadm.PartitionDetails, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	if td := md.Topics[topic]; td.Err != nil {
		return nil, td.Err
	}
	return md.Topics[topic].Partitions, nil
}

// waitPartitions polls partitionsOf until ok holds and returns the
// partitions that satisfied it; after timeout it fails the test with the
// last partitions seen.
func waitPartitions(t *testing.T, addr, topic string, timeout time.Duration, what string, ok func(kadm.PartitionDetails) bool) kadm.PartitionDetails {
	t.Helper()
	var ps kadm.PartitionDetails
	var err error
	deadline := time.Now().Add(timeout)
	for {
		if ps, err = partitionsOf(t, addr, topic); err == nil && ok(ps) {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last seen (err %v):\n%s", what, timeout, err, describe(ps))
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

func describe(ps kadm.PartitionDetails) string {
	var b strings.Builder
	for _, p := range ps.Sorted() {
		fmt.Fprintf(&b, "  partition %d: leader %d epoch %d replicas %v isr %v offline %v err %v\n",
			p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, p.OfflineReplicas, p.Err)
	}
	return b.String()
}

func allLed(ps kadm.PartitionDetails) bool {
	for _, p := range ps {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

// waitSpread waits until every broker shows topic's n partitions led by
// live brokers, n/len(bs) on each, and returns them as the last saw them.
func waitSpread(t *testing.T, bs []*broker, topic string, n int) kadm.PartitionDetails {
	t.Helper()
	var ps kadm.PartitionDetails
	for i, b := range bs {
		ps = waitPartitions(t, b.addr, topic, 30*time.Second, fmt.Sprintf("broker %d shows %s's %d partitions, %d led by each broker", i, topic, n, n/len(bs)),
			func(ps kadm.PartitionDetails) bool {
				leaders := map[int32]int{}
				for _, p := range ps {
					leaders[p.Leader]++
				}
				if len(ps) != n || !allLed(ps) || len(leaders) != len(bs) {
					return false
				}
				for id := range int32(len(bs)) {
					if leaders[id] != n/len(bs) {
						return false
					}
				}
				return true
			})
	}
	return ps
}

// offlineExactly reports whether ps shows the partitions that dead led in
// before, and only those, without a leader (LEADER_NOT_AVAILABLE, dead
// their offline replica), the others led as before.
func offlineExactly(ps, before kadm.PartitionDetails, dead int32) bool {
	if len(ps) != len(before) {
		return false
	}
	for n, b := range before {
		p, ok := ps[n]
		switch {
		case !ok:
			return false
		case b.Leader == dead:
			if p.Leader != -1 || !errors.Is(p.Err, kerr.LeaderNotAvailable) || !slices.Equal(p.OfflineReplicas, []int32{dead}) {
				return false
			}
		default:
			if p.Leader != b.Leader || p.Err != nil || len(p.OfflineReplicas) != 0 {
				return false
			}
		}
	}
	return true
}

// ledAgain reports whether every partition of before is led by its
// leader of before again, without error, those that were offline at a
// leader epoch above their offline one.
func ledAgain(ps, before, offline kadm.PartitionDetails) bool {
	if len(ps) != len(before) {
		return false
	}
	for n, b := range before {
		p, ok := ps[n]
		if !ok || p.Leader != b.Leader || p.Err != nil || len(p.OfflineReplicas) != 0 {
			return false
		}
		if o := offline[n]; o.Leader == -1 && p.LeaderEpoch <= o.LeaderEpoch {
			return false
		}
		if p.LeaderEpoch < b.LeaderEpoch {
			return false
		}
	}
	return true
}

// zkPartitionState is Kafka's /brokers/topics/<t>/partitions/<p>/state.
type zkPartitionState struct {
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
	ControllerEpoch int32   `json:"controller_epoch"`
}

// partitionState reads a partition's state with ZooKeeper's own shell.
func partitionState(t *testing.T, zk *zktest.Server, topic string, p int32) zkPartitionState {
	t.Helper()
	data := zkGet(t, zk, fmt.Sprintf("/qk/brokers/topics/%s/partitions/%d/state", topic, p))
	var st zkPartitionState
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		t.Fatalf("state of %s partition %d: %q: %v", topic, p, data, err)
	}
	return st
}

// createTopicsOn sends CreateTopics (one partition, replication factor
// 1) to broker id alone, without retries, and returns the topic's error.
func createTopicsOn(ctx context.Context, cl *kgo.Client, id int32, topic string, validateOnly bool) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10_000
	req.ValidateOnly = validateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 1 || r.Topics[0].Topic != topic {
		return fmt.Errorf("CreateTopics of %s answered with %d topics", topic, len(r.Topics))
	}
	if err := kerr.ErrorForCode(r.Topics[0].ErrorCode); err != nil {
		msg := ""
		if r.Topics[0].ErrorMessage != nil {
			msg = *r.Topics[0].ErrorMessage
		}
		return fmt.Errorf("%w (code %d): %s", err, r.Topics[0].ErrorCode, msg)
	}
	return nil
}

// errNoAnswer: a request got no response.
var errNoAnswer = errors.New("no answer")

// allLogs is every log the broker wrote, one start after another.
func (b *broker) allLogs() string {
	var all strings.Builder
	for i := 1; i <= b.starts; i++ {
		data, _ := os.ReadFile(filepath.Join(b.logDir, fmt.Sprintf("broker-%d.log", i)))
		all.Write(data)
	}
	return all.String()
}

// TestControlledShutdownControllerPaused: a broker is stopped (SIGTERM)
// while the controller is frozen (SIGSTOP), so its ControlledShutdown
// gets no answer. Once the frozen controller's session expires and
// another broker takes over, the stopping broker asks the new controller
// at once instead of waiting out its request's 30 s, and exits cleanly
// having handed its leaderships over.
func TestControlledShutdownControllerPaused(t *testing.T) {
	const topic = "handover"
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, quickStop)
	observer := openZK(t, zk.Addr()+"/qk")
	resp, err := bs[0].admin().CreateTopic(ctxFor(t, 10*time.Second), 3, 3, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitions(t, bs[0].addr, topic, 20*time.Second, "every partition led with 3 in sync", fullISR(3))
	ctrl := zkController(t, observer)
	if ctrl < 0 {
		t.Fatal("no /controller")
	}
	var victim, other *broker
	for i, b := range bs {
		if int32(i) == ctrl {
			continue
		}
		if victim == nil {
			victim = b
		} else {
			other = b
		}
	}
	paused := bs[ctrl]
	t.Cleanup(func() { _ = syscall.Kill(paused.pid(), syscall.SIGCONT) })
	if err := syscall.Kill(paused.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	victim.stop() // fails the test unless it exits 0, cleanly, within stopTimeout
	took := time.Since(start)
	t.Logf("stopped in %v with the controller paused", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Fatalf("the stop took %v: the ControlledShutdown to the paused controller was waited out", took)
	}
	if _, ok := victim.waitLog(regexp.MustCompile(`msg="controlled shutdown succeeded"`), time.Second); !ok {
		t.Fatalf("no controlled shutdown by the new controller:\n%s", tail(victim.log(), 4<<10))
	}
	// The one broker left running leads every partition.
	waitPartitions(t, other.addr, topic, 20*time.Second, "every partition led by the broker still running", func(ps kadm.PartitionDetails) bool {
		for _, p := range ps {
			if p.Leader != int32(slices.Index(bs, other)) {
				return false
			}
		}
		return len(ps) == 3
	})
	if err := syscall.Kill(paused.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
