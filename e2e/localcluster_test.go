//go:build integration

package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLocalCluster runs `qk broker start --local-cluster 3` as an
// operator would: three brokers in one process, a topic replicated on all
// three, records produced with acks=all and consumed, SIGTERM stopping
// every broker cleanly (controller last) with exit status 0, and a
// restart on the same dirs bringing back the same cluster, topic and
// records.
func TestLocalCluster(t *testing.T) {
	const n = 3
	b, addrs := startLocalCluster(t, n)
	for i, a := range addrs {
		if err := apiVersions(a, 5*time.Second); err != nil {
			t.Fatalf("broker %d at %s: %v", i, a, err)
		}
	}
	md := waitBrokers(t, addrs[n-1], n)
	clusterID := md.Cluster

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	const topic = "local"
	resp, err := adm.CreateTopic(ctxFor(t, 10*time.Second), n, n, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s with replication factor %d: %v %s", topic, n, err, resp.ErrMessage)
	}
	partitions := []int32{0, 1, 2}
	fullISR := func(ps kadm.PartitionDetails) bool {
		if len(ps) != n || !allLed(ps) {
			return false
		}
		for _, p := range ps {
			if len(p.Replicas) != n || len(p.ISR) != n {
				return false
			}
		}
		return true
	}
	ps := waitPartitions(t, addrs[0], topic, 30*time.Second, "every partition led with 3 replicas, all in the ISR", fullISR)
	leaders := map[int32]bool{}
	for _, p := range ps {
		leaders[p.Leader] = true
	}
	t.Logf("partitions:\n%s", describe(ps))

	want := map[int32][]keyValue{}
	produceTo(t, cl, topic, partitions, 100, "first", want)
	requireEnds(t, adm, topic, want)
	for _, a := range addrs {
		requireConsumed(t, a, topic, partitions, want)
	}
	controller := controllerOf(t, addrs[0])
	cl.Close()

	stopLocalCluster(t, b, n, controller)

	// The same dirs: the same cluster, topic and records.
	b.restart()
	md = waitBrokers(t, addrs[0], n)
	if md.Cluster != clusterID {
		t.Fatalf("cluster id %s after the restart, want %s", md.Cluster, clusterID)
	}
	waitPartitions(t, addrs[0], topic, 30*time.Second, "after the restart, every partition led with its 3 replicas in the ISR", fullISR)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl2.Close)
	requireEnds(t, kadm.NewClient(cl2), topic, want)
	requireConsumed(t, addrs[1], topic, partitions, want)
	produceTo(t, cl2, topic, partitions, 10, "second", want)
	requireConsumed(t, addrs[2], topic, partitions, want)
	cl2.Close()
	stopLocalCluster(t, b, n, controllerOf(t, addrs[0]))
}

// startLocalCluster starts `qk broker start --local-cluster n` with its
// brokers on n consecutive free ports and their HTTP endpoints on the n
// after, and returns the process (whose addr is broker 0's) and every
// broker's address.
func startLocalCluster(t *testing.T, n int) (*broker, []string) {
	t.Helper()
	root := t.TempDir()
	b := &broker{t: t, dataDir: filepath.Join(root, "data"), logDir: filepath.Join(root, "logs")}
	if err := os.Mkdir(b.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.cleanup)
	for attempt := 1; ; attempt++ {
		base := consecutiveFreePorts(t, 2*n)
		b.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(base))
		b.args = []string{"--local-cluster", strconv.Itoa(n),
			"--set", "qk.http.listener=127.0.0.1:" + strconv.Itoa(base+n)}
		err := b.launch()
		if err == nil {
			addrs := make([]string, n)
			for i := range addrs {
				addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i))
			}
			return b, addrs
		}
		if errors.Is(err, errAddrInUse) && attempt < 3 {
			t.Logf("a port of %d..%d was taken before the brokers bound it, retrying", base, base+2*n-1)
			continue
		}
		t.Fatalf("start local cluster: %v", err)
	}
}

// consecutiveFreePorts returns a port p such that p..p+n-1 were all free
// on 127.0.0.1 a moment ago. It probes bases in the upper half of the
// non-ephemeral range, away from the kernel's ephemeral ports (which port
// 0 hands out, so other tests' listeners and clients do not land there).
func consecutiveFreePorts(t testing.TB, n int) int {
	t.Helper()
	for try := range 200 {
		base := 20000 + (os.Getpid()*7919+try*97+time.Now().Nanosecond())%(30000-n)
		var held []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, ln)
		}
		for _, ln := range held {
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

// waitBrokers polls Metadata at addr until it lists n brokers, ids
// 0..n-1, and a controller.
func waitBrokers(t *testing.T, addr string, n int) kadm.Metadata {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		md, err := freshMetadata(t, addr)
		ids := []int32{}
		if err == nil {
			for _, b := range md.Brokers {
				ids = append(ids, b.NodeID)
			}
			slices.Sort(ids)
			if len(ids) == n && ids[0] == 0 && ids[n-1] == int32(n-1) && md.Controller >= 0 {
				return md
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("metadata from %s: brokers %v (err %v), want ids 0..%d and a controller, within %v", addr, ids, err, n-1, readyTimeout)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// stopLocalCluster sends SIGTERM and requires exit status 0, every
// broker's clean-shutdown marker, and the brokers stopped one by one with
// the controller last.
func stopLocalCluster(t *testing.T, b *broker, n int, controller int32) {
	t.Helper()
	if err := b.proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM to pid %d: %v", b.pid(), err)
	}
	if !b.waitExit(time.Duration(n) * stopTimeout) {
		b.killNow()
		t.Fatalf("local cluster pid %d did not exit within %v of SIGTERM", b.pid(), time.Duration(n)*stopTimeout)
	}
	if st := b.proc.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		t.Fatalf("local cluster %v after SIGTERM, want exit status 0", st)
	}
	for i := range n {
		marker := filepath.Join(b.dataDir, fmt.Sprintf("broker-%d", i), cleanShutdownFile)
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("broker %d: no clean-shutdown marker after SIGTERM: %v", i, err)
		}
	}
	var stopped []string
	for _, m := range regexp.MustCompile(`msg="broker stopped" broker_id=(\d+)`).FindAllStringSubmatch(b.log(), -1) {
		stopped = append(stopped, m[1])
	}
	if len(stopped) != n || stopped[n-1] != strconv.Itoa(int(controller)) {
		t.Fatalf("brokers stopped in order %v, want all %d with the controller %d last", stopped, n, controller)
	}
	// Every broker but the last asked the controller to move its
	// leaderships away before it stopped; the last, with nowhere to move
	// them, did not wait for retries.
	log := b.log()
	if got := len(regexp.MustCompile(`msg="controlled shutdown succeeded"`).FindAllString(log, -1)); got != n-1 {
		t.Fatalf("%d controlled shutdowns succeeded, want %d", got, n-1)
	}
	if !regexp.MustCompile(`msg="controlled shutdown skipped: the other brokers of the local cluster have stopped" broker_id=` + strconv.Itoa(int(controller))).MatchString(log) {
		t.Fatalf("the controller %d, stopping last, did not skip its controlled shutdown", controller)
	}
}
