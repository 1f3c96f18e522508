//go:build integration

package e2e

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestKcatBalancedConsumer runs two `kcat -G` balanced consumers (the
// librdkafka group consumer) in one group: once both hold partitions,
// records produced are consumed exactly once across them, and each
// partition by one instance only.
func TestKcatBalancedConsumer(t *testing.T) {
	kcat := requireKcat(t)
	b := startBroker(t, withSet("group.initial.rebalance.delay.ms=0"))
	adm := b.admin()
	createTopic(t, adm, "kcat-group", 4, nil)

	var outs [2]*lockedBuffer
	for i := range outs {
		outs[i] = &lockedBuffer{}
		cmd := exec.Command(kcat, "-b", b.addr, "-G", "kcat-g", "-q", "-u", "-f", "%p %o %s\n",
			"-X", "auto.offset.reset=earliest", "kcat-group")
		cmd.Stdout = outs[i]
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("kcat %d stderr:\n%s", i, tail(stderr.String(), 40))
			}
		})
	}

	// Wait until the group is stable with both instances holding
	// partitions.
	deadline := time.Now().Add(60 * time.Second)
	for {
		dg, err := adm.DescribeGroups(ctxFor(t, 10*time.Second), "kcat-g")
		if err == nil {
			g := dg["kcat-g"]
			held := 0
			for _, m := range g.Members {
				if ca, ok := m.Assigned.AsConsumer(); ok && len(ca.Topics) > 0 && len(ca.Topics[0].Partitions) > 0 {
					held++
				}
			}
			if g.State == "Stable" && len(g.Members) == 2 && held == 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two kcat instances did not form a stable group: %v %+v", err, dg)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}

	const n = 400
	cl := b.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "kcat-group", Value: []byte("v" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	count := func() int { return strings.Count(outs[0].String(), "\n") + strings.Count(outs[1].String(), "\n") }
	deadline = time.Now().Add(60 * time.Second)
	for count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("kcat consumed %d of %d records", count(), n)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}

	seen := map[string]int{}
	owner := map[string]int{}
	for i, o := range outs {
		for _, line := range strings.Split(strings.TrimSpace(o.String()), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				t.Fatalf("kcat %d: bad line %q", i, line)
			}
			seen[f[2]]++
			if prev, ok := owner[f[0]]; ok && prev != i {
				t.Errorf("partition %s consumed by both instances", f[0])
			}
			owner[f[0]] = i
		}
	}
	if len(seen) != n {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), n)
	}
	for v, c := range seen {
		if c != 1 {
			t.Errorf("record %s consumed %d times", v, c)
		}
	}
}
