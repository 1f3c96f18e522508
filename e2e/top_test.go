//go:build integration

package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/internal/zktest"
)

// tmuxSession is `qk top` running in a detached tmux session of a fixed
// size on a private tmux server, driven with send-keys and read with
// capture-pane as an operator's terminal would show it.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func startTmux(t *testing.T, w, h int, argv ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed (scripts/ensure-deps.sh installs it)")
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("qk-e2e-%d", time.Now().UnixNano()), name: "top"}
	args := append([]string{"new-session", "-d", "-s", s.name, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h)}, argv...)
	if out, err := s.tmux(args...); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	// A pane whose command exits is kept, so a crash of qk top is
	// captured rather than a vanished session.
	_, _ = s.tmux("set-option", "-t", s.name, "remain-on-exit", "on")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", s.capture())
		}
		_, _ = s.tmux("kill-server")
	})
	return s
}

func (s *tmuxSession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) capture() string {
	out, err := s.tmux("capture-pane", "-p", "-t", s.name)
	if err != nil {
		return "capture-pane: " + err.Error() + ": " + out
	}
	return out
}

func (s *tmuxSession) keys(k ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", s.name}, k...)...); err != nil {
		s.t.Fatalf("tmux send-keys %v: %v: %s", k, err, out)
	}
}

// waitScreen polls the screen until ok accepts it, failing with the last
// screen after timeout.
func (s *tmuxSession) waitScreen(timeout time.Duration, what string, ok func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		scr := s.capture()
		if ok(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("screen: %s: not within %v; last screen:\n%s", what, timeout, scr)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// topRow is one partition's row of the Partitions view.
type topRow struct {
	leader, replicas, isr, hw, leo, lag, status string
}

// partitionRow finds topic/partition's row on a Partitions screen.
func partitionRow(screen, topic string, partition int) (topRow, bool) {
	// The LSO column (between HW and LEO) shows when the screen is wide
	// enough: the header says.
	lso := ``
	if regexp.MustCompile(`(?m)^\s*TOPIC.*\bHW\s+LSO\s+LEO\b`).MatchString(screen) {
		lso = `\s+\S+`
	}
	re := regexp.MustCompile(`(?m)^[ >]` + regexp.QuoteMeta(topic) + `\s+` + strconv.Itoa(partition) +
		`\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)` + lso + `\s+(\S+)\s+(\S+)[ \t]*(\S*)`)
	m := re.FindStringSubmatch(screen)
	if m == nil {
		return topRow{}, false
	}
	return topRow{leader: m[1], replicas: m[2], isr: strings.TrimSuffix(m[3], "*"), hw: m[4], leo: m[5], lag: m[6], status: m[7]}, true
}

// TestTopTmux: `qk top` in tmux against three qk processes on ZooKeeper.
// The Partitions view shows a replicated partition with all three in
// the ISR; a follower frozen with SIGSTOP turns the row UNDER-REPLICATED
// with the ISR down to two (from Metadata, on any Kafka) and, where the
// brokers serve their admin endpoint, its lag grows; after SIGCONT it is
// back in the ISR and the status clears.
func TestTopTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three brokers")
	}
	const topic = "watched"
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "zookeeper.session.timeout.ms=10000",
		"replica.lag.time.max.ms=2000", "qk.http.listener=127.0.0.1:0")
	// The controller leads, so the follower paused is never the
	// controller its leader's AlterPartition needs.
	ctrl := controllerOf(t, bs[0].addr)
	replicas := []int32{ctrl, (ctrl + 1) % 3, (ctrl + 2) % 3}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	cresp, err := req.RequestWith(ctxFor(t, 15*time.Second), bs[ctrl].client())
	if err == nil && cresp.Topics[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(cresp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	one := bs[ctrl].client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	produce := func() { _ = one.ProduceSync(ctxFor(t, 5*time.Second), &kgo.Record{Value: []byte("tick")}).FirstErr() }
	produce()

	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.addr)
	}
	s := startTmux(t, 120, 30, qkBin, "top", "-b", strings.Join(seeds, ","), "--interval", "500ms", "--request-timeout", "1s")
	s.waitScreen(20*time.Second, "three brokers up", func(scr string) bool { return strings.Contains(scr, "brokers 3/3 up") })
	s.keys("2")
	all := ids3(replicas)
	scr := s.waitScreen(20*time.Second, "the partition with all three in the ISR", func(scr string) bool {
		r, ok := partitionRow(scr, topic, 0)
		return strings.Contains(scr, "[2 Partitions]") && ok && sameIDs(r.isr, all) && r.status == ""
	})
	row, _ := partitionRow(scr, topic, 0)
	if row.leader != strconv.Itoa(int(ctrl)) || row.replicas != strings.Join(strings.Split(all, ","), ",") {
		t.Fatalf("row %+v: want leader %d replicas %s", row, ctrl, all)
	}
	endpoint := row.leo != "unavailable"
	t.Logf("per-replica LEO from the brokers' endpoint: %v (LEO column %q)", endpoint, row.leo)

	follower := replicas[1]
	if err := syscall.Kill(bs[follower].pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(bs[follower].pid(), syscall.SIGCONT) })
	fid := strconv.Itoa(int(follower))
	// A follower is out of sync only while it lacks records the leader
	// has: keep producing (acks=1) while polling.
	var lags []int
	scr = s.waitScreen(20*time.Second, "the row UNDER-REPLICATED without the paused follower", func(scr string) bool {
		produce()
		r, ok := partitionRow(scr, topic, 0)
		if !ok {
			return false
		}
		if n, err := strconv.Atoi(r.lag); err == nil {
			lags = append(lags, n)
		}
		return r.status == "UNDER-REPLICATED" && !slices.Contains(strings.Split(r.isr, ","), fid) && len(strings.Split(r.isr, ",")) == 2
	})
	t.Logf("under-replicated:\n%s", scr)
	// The frozen broker answers nothing: DOWN within the request timeout.
	s.waitScreen(10*time.Second, "the paused broker counted down", func(scr string) bool { return strings.Contains(scr, "brokers 2/3 up") })
	if endpoint {
		// The leader's view of the frozen follower falls behind as the
		// leader appends.
		first := -1
		if len(lags) > 0 {
			first = lags[0]
		}
		s.waitScreen(20*time.Second, "the follower's lag growing", func(scr string) bool {
			produce()
			r, ok := partitionRow(scr, topic, 0)
			n, err := strconv.Atoi(r.lag)
			return ok && err == nil && n > 0 && n > first
		})
	}

	if err := syscall.Kill(bs[follower].pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	s.waitScreen(30*time.Second, "the follower back in the ISR", func(scr string) bool {
		produce()
		r, ok := partitionRow(scr, topic, 0)
		return ok && sameIDs(r.isr, all) && r.status == "" && strings.Contains(scr, "brokers 3/3 up")
	})
	if endpoint {
		s.waitScreen(20*time.Second, "the follower caught up (lag 0)", func(scr string) bool {
			r, ok := partitionRow(scr, topic, 0)
			return ok && r.lag == "0"
		})
	}
	s.keys("q")
	s.waitScreen(10*time.Second, "qk top exited on q", func(scr string) bool {
		out, _ := s.tmux("display-message", "-p", "-t", s.name, "#{pane_dead}")
		return strings.TrimSpace(out) == "1"
	})
}

func ids3(v []int32) string {
	var s []string
	for _, id := range v {
		s = append(s, strconv.Itoa(int(id)))
	}
	return strings.Join(s, ",")
}

// sameIDs compares comma-separated broker ids in any order.
func sameIDs(a, b string) bool {
	x, y := strings.Split(a, ","), strings.Split(b, ",")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
