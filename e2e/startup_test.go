//go:build integration

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClientsDuringStartUp restarts a broker hosting more than 1,000
// partitions, after SIGKILL and after a clean stop, and starts kcat and a
// franz-go consumer the moment the port accepts connections, while the
// broker is still loading (and, after the kill, recovering) its logs. The
// broker binds its listener first and holds the requests that arrive
// during start-up until it is ready, as Apache Kafka does: both clients
// must read every acknowledged record. A broker that closed those
// connections made librdkafka give up at once ("all broker connections
// are down"), with nothing read.
func TestClientsDuringStartUp(t *testing.T) {
	kcat := requireKcat(t)
	const (
		topic      = "dur"
		partitions = 4
		filler     = 1_000 // partitions of a second topic, so start-up takes a while
		n          = 20_000
	)
	b := startBroker(t)
	adm := b.admin()
	createTopic(t, adm, "filler", filler, nil)
	createTopic(t, adm, topic, partitions, nil)

	// One record in every filler partition: each has a segment to recover.
	fill := b.client(kgo.DefaultProduceTopic("filler"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range int32(filler) {
		recs = append(recs, &kgo.Record{Partition: p, Value: []byte("x")})
	}
	if err := fill.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce filler: %v", err)
	}
	// The records to read back, acknowledged with acks=all.
	var want []string
	recs = recs[:0]
	for i := range n {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(v)})
		want = append(want, k+":"+v)
	}
	slices.Sort(want)
	cl := b.client(kgo.DefaultProduceTopic(topic))
	if err := cl.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	ends := endOffsets(t, adm, topic)

	for _, how := range []string{"kill", "stop"} {
		t.Run(how, func(t *testing.T) {
			if how == "kill" {
				b.kill()
			} else {
				b.stop()
			}
			if err := b.spawn(); err != nil {
				t.Fatal(err)
			}
			spawned := time.Now()
			waitAccepting(t, b, 30*time.Second)
			accepted := time.Since(spawned)
			readyBefore := strings.Contains(b.log(), `msg="broker started"`)

			// kcat and franz-go at once, both from the first offset.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			type result struct {
				out    []byte
				stderr string
				err    error
			}
			kc := make(chan result, 1)
			go func() {
				cmd := exec.CommandContext(ctx, kcat, "-C", "-b", b.addr, "-t", topic,
					"-o", "beginning", "-e", "-q", "-f", kcatFormat)
				cmd.WaitDelay = 5 * time.Second
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				kc <- result{stdout.Bytes(), stderr.String(), err}
			}()
			got := consumeAll(t, b.addr, topic, ends, time.Minute)
			k := <-kc
			t.Logf("port accepted %v after the process started; broker ready by then: %v; ready at %v",
				accepted.Round(time.Millisecond), readyBefore, readyAt(b))
			if k.err != nil {
				t.Fatalf("kcat -C -e during start-up: %v\nstderr:\n%s", k.err, tail(k.stderr, 8<<10))
			}
			if strings.Contains(k.stderr, "ERROR") {
				t.Fatalf("kcat reported errors during start-up:\n%s", tail(k.stderr, 8<<10))
			}
			lines := strings.Split(strings.TrimSuffix(string(k.out), "\n"), "\n")
			slices.Sort(lines)
			if !slices.Equal(lines, want) {
				t.Fatalf("kcat read %d records during start-up, want the %d acknowledged ones", len(lines), len(want))
			}
			var fromFranz []string
			for _, rs := range got {
				for _, r := range rs {
					fromFranz = append(fromFranz, string(r.Key)+":"+string(r.Value))
				}
			}
			slices.Sort(fromFranz)
			if !slices.Equal(fromFranz, want) {
				t.Fatalf("franz-go read %d records during start-up, want the %d acknowledged ones", len(fromFranz), len(want))
			}
			if !strings.Contains(b.log(), `msg="broker started"`) {
				t.Fatal("records read, but the broker never logged that it started")
			}
		})
	}
}

// waitAccepting polls until the broker's port accepts a TCP connection
// (not a Kafka request: the broker may still be starting).
func waitAccepting(t *testing.T, b *broker, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", b.addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if !b.running() {
			t.Fatalf("broker exited before listening: %v\n%s", b.proc.ProcessState, tail(b.log(), 8<<10))
		}
		if time.Now().After(deadline) {
			t.Fatalf("port %s not accepting within %v: %v", b.addr, timeout, err)
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not synchronisation
	}
}

// readyAt is the time of the broker's "broker started" line, for the log.
func readyAt(b *broker) string {
	for line := range strings.SplitSeq(b.log(), "\n") {
		if strings.Contains(line, `msg="broker started"`) {
			if f := strings.Fields(line); len(f) > 0 {
				return f[0]
			}
		}
	}
	return "never"
}
