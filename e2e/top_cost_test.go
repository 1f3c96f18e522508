//go:build integration

package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qk-project/qk/internal/zktest"
)

// TestTopCost measures the CPU `qk top` uses against three qk processes
// holding a 1,000-partition topic with replication factor 3, refreshing
// every second with the Partitions view open, over QK_TOP_COST seconds
// (unset: 5). It reports the
// share of one core from the process's utime+stime in /proc and fails
// at twice the goal of 5%.
func TestTopCost(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("QK_TOP_COST"))
	if secs <= 0 {
		secs = 5 // CI's check; QK_TOP_COST=30 for the figure in the README
	}
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "qk.http.listener=127.0.0.1:0")
	adm := bs[0].admin()
	if _, err := adm.CreateTopic(ctxFor(t, 60*time.Second), 1000, 3, nil, "big"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "1,000 partitions with leaders", func() bool {
		md, err := adm.Metadata(ctxFor(t, 5*time.Second), "big")
		if err != nil {
			return false
		}
		n := 0
		for _, p := range md.Topics["big"].Partitions {
			if p.Leader >= 0 && len(p.ISR) == 3 {
				n++
			}
		}
		return n == 1000
	})
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.addr)
	}
	s := startTmux(t, 120, 40, qkBin, "top", "-b", strings.Join(seeds, ","), "--interval", "1s")
	s.waitScreen(20*time.Second, "three brokers up", func(scr string) bool { return strings.Contains(scr, "brokers 3/3 up") })
	s.keys("2")
	s.waitScreen(20*time.Second, "the Partitions view", func(scr string) bool { return strings.Contains(scr, "big ") })
	out, err := s.tmux("display-message", "-p", "-t", s.name, "#{pane_pid}")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	cpu := func() time.Duration {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
		ut, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
	}
	c0, t0 := cpu(), time.Now()
	deadline := t0.Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second) // measuring over wall time, not waiting for a state
	}
	used, wall := cpu()-c0, time.Since(t0)
	share := used.Seconds() / wall.Seconds()
	t.Logf("qk top: %v CPU in %v = %.2f%% of a core (3 brokers, 1,000 partitions RF 3, 1 s refresh, Partitions view)", used, wall.Round(time.Millisecond), 100*share)
	t.Logf("screen:\n%s", s.capture())
	// The goal is < 5% (about 4.7% over 20 s on this machine, endpoint
	// included); CI's 5 s under load sits near it, so the check is for
	// twice that: a regression, not the goal.
	if share > 0.10 {
		t.Errorf("qk top uses %.2f%% of a core, more than twice the 5%% goal", 100*share)
	}
}
