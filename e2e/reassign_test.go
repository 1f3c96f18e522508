//go:build integration

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/qk-project/qk/internal/zktest"
)

// TestReassignUnderLoad: the reassignment scenario on real
// processes. A topic of three partitions with one replica each gets
// replication factor 3 through `qk reassign-partitions --execute` (with a
// throttle) while an idempotent acks=all producer writes to it; `--verify`
// is polled until it reports every partition complete and clears the
// throttles. Then every partition has three replicas, all in sync, every
// acknowledged record is there exactly once and in order, and the three
// replicas' batches are the same (qk dump-segment).
func TestReassignUnderLoad(t *testing.T) {
	const topic, parts = "grow", 3
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, quickStop)
	resp, err := bs[0].admin().CreateTopic(ctxFor(t, 10*time.Second), parts, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitPartitions(t, bs[0].addr, topic, 20*time.Second, "every partition led", fullISR(parts))
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	bootstrap := strings.Join(addrs, ",")
	prod := startChaosProducer(t, addrs, topic, 100_000)
	all := []int32{0, 1, 2}
	prod.waitMore(t, nil, all, 300, 20*time.Second, "a backlog before the move")

	// Each partition keeps its replica first (so its leader stays) and
	// gains the two other brokers.
	ps, err := partitionsOf(t, bs[0].addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, p := range ps.Sorted() {
		replicas := []int32{p.Replicas[0]}
		for b := range int32(3) {
			if b != p.Replicas[0] {
				replicas = append(replicas, b)
			}
		}
		entries = append(entries, fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":[%s]}`, topic, p.Partition, joinIDs(replicas)))
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[`+strings.Join(entries, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	qk := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(qkBin, append([]string{"reassign-partitions", "--bootstrap-server", bootstrap}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("qk reassign-partitions %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := qk("--execute", "--reassignment-json-file", plan, "--throttle", "50000000")
	for _, want := range []string{"Current partition replica assignment", "Save this to use as the --reassignment-json-file option during rollback",
		"The inter-broker throttle limit was set to 50000000 B/s", "Successfully started partition reassignments for grow-0,grow-1,grow-2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("--execute output lacks %q:\n%s", want, out)
		}
	}
	// Writes go on during the move.
	prod.waitMore(t, prod.counts(), all, 50, 20*time.Second, "writes during the move")
	deadline := time.Now().Add(60 * time.Second)
	for {
		out = qk("--verify", "--reassignment-json-file", plan)
		if strings.Count(out, "is completed.") == parts {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("--verify never reported every partition complete:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	for _, want := range []string{"Clearing broker-level throttles on brokers 0,1,2", "Clearing topic-level throttles on topic grow"} {
		if !strings.Contains(out, want) {
			t.Fatalf("--verify output lacks %q:\n%s", want, out)
		}
	}
	if got := qk("--list"); got != "No partition reassignments found.\n" {
		t.Fatalf("--list after completion: %q", got)
	}
	prod.waitMore(t, prod.counts(), all, 50, 20*time.Second, "writes after the move")
	acked := prod.finish(t)
	waitPartitions(t, bs[0].addr, topic, 20*time.Second, "three replicas in sync everywhere", func(ps kadm.PartitionDetails) bool {
		for _, p := range ps {
			if len(p.Replicas) != 3 || len(p.ISR) != 3 {
				return false
			}
		}
		return len(ps) == parts && fullISR(parts)(ps)
	})
	cfgs, err := bs[0].admin().DescribeTopicConfigs(ctxFor(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs[0].Configs {
		if strings.HasSuffix(c.Key, ".replication.throttled.replicas") && c.MaybeValue() != "" {
			t.Fatalf("%s still %q after --verify", c.Key, c.MaybeValue())
		}
	}
	hws := requireDelivered(t, bs[0].addr, topic, acked)
	stopAll(t, bs)
	requireReplicasMatch(t, bs, topic, hws)
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
