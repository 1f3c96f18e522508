//go:build integration

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// acked is what the broker promised when it acknowledged a record with
// acks=1: this value is at this offset of this partition.
type acked struct {
	partition int32
	offset    int64
	value     string
}

// ackLog collects acknowledgements from producer promises, which run on
// the client's goroutines.
type ackLog struct {
	mu   sync.Mutex
	acks []acked
	errs int
	n    atomic.Int64 // len(acks), readable without the lock
}

func (a *ackLog) promise(r *kgo.Record, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.errs++
		return
	}
	a.acks = append(a.acks, acked{r.Partition, r.Offset, string(r.Value)})
	a.n.Add(1)
}

// crashProducer is a producer that trusts acks=1: the leader acknowledges
// once the batch is in its log, before any fsync. Idempotence is off, as
// it requires acks=all, and records go round-robin to the partitions.
func crashProducer(b *broker, topic string, extra ...kgo.Opt) *kgo.Client {
	return b.client(append([]kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, extra...)...)
}

// crashValue is a unique value of varied length (16 to ~400 bytes), so a
// record at the wrong offset or a torn one cannot pass for another.
func crashValue(rng *rand.Rand, phase string, i int) []byte {
	v := fmt.Appendf(nil, "%s-%07d-", phase, i)
	for range rng.IntN(400) {
		v = append(v, byte('a'+rng.IntN(26)))
	}
	return v
}

// TestKillAfterAckedWrites is the acks=1 durability promise across a
// process crash: a broker killed with SIGKILL (no flush, no checkpoints,
// no clean-shutdown marker) restarts on the same directory, says in its
// log that it recovered, and has every acknowledged record at its offset:
// first after a kill with the producer idle, then after kills at random
// moments of a produce load. The files then pass qk dump-segment.
func TestKillAfterAckedWrites(t *testing.T) {
	const (
		topic      = "crash"
		partitions = 3
	)
	n := 50_000
	kills := 3
	if testing.Short() {
		n, kills = 5_000, 1
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	// Small segments: recovery must handle rolled segments and their
	// indexes, and the kills can land during a roll.
	b := startBroker(t, withSet("log.segment.bytes=1048576"))
	createTopic(t, b.admin(), topic, partitions, nil)

	// A clean stop and start first: the restarted broker must remove the
	// marker once its logs are loaded, or the crash below would be taken
	// for a clean shutdown and recovery skipped.
	b.stop()
	b.restart()
	waitTopicReady(t, b.admin(), topic, partitions)
	if b.cleanShutdownMarker() {
		t.Fatalf("%s still present while the broker runs: a crash now would skip log recovery", cleanShutdownFile)
	}

	var log ackLog
	cl := crashProducer(b, topic)
	ctx := ctxFor(t, 2*time.Minute)
	for i := range n {
		r := &kgo.Record{Partition: int32(i % partitions), Value: crashValue(rng, "quiet", i)}
		cl.Produce(ctx, r, log.promise)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if log.errs > 0 || len(log.acks) != n {
		t.Fatalf("%d of %d records acknowledged, %d failed", len(log.acks), n, log.errs)
	}
	cl.Close()

	b.kill()
	if b.cleanShutdownMarker() {
		t.Fatalf("%s present after SIGKILL", cleanShutdownFile)
	}
	b.restart()
	waitTopicReady(t, b.admin(), topic, partitions)
	requireRecovered(t, b, topic)
	requireAcked(t, b, topic, log.acks)

	// Kills during a load: the producer keeps requests in flight, and the
	// kill lands after a random number of acknowledgements.
	for k := range kills {
		killDuringLoad(t, b, topic, partitions, rng, k, &log)
		b.restart()
		waitTopicReady(t, b.admin(), topic, partitions)
		requireRecovered(t, b, topic)
		requireAcked(t, b, topic, log.acks)
	}

	// Files valid: after a clean stop every segment, index and time index
	// of the recovered logs must read in full.
	b.stop()
	requireDumpSegment(t, b, topic, partitions)
}

// killDuringLoad produces until a random number of records (1,000 to
// 20,000) is acknowledged, SIGKILLs the broker while requests are still in
// flight, and adds the acknowledgements to log. The load is bounded in
// records (200,000) and time (30 s).
func killDuringLoad(t *testing.T, b *broker, topic string, partitions int, rng *rand.Rand, k int, log *ackLog) {
	t.Helper()
	const maxRecords = 200_000
	target := int64(1_000 + rng.IntN(19_000))
	before := log.n.Load()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl := crashProducer(b, topic,
		kgo.MaxBufferedRecords(20_000),
		kgo.MaxProduceRequestsInflightPerBroker(5),
		kgo.RecordRetries(3),
	)
	phase := fmt.Sprintf("load%d", k)
	var produced atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < maxRecords && ctx.Err() == nil; i++ {
			r := &kgo.Record{Partition: int32(i % partitions), Value: crashValue(rng, phase, i)}
			cl.Produce(ctx, r, log.promise)
			produced.Add(1)
		}
	}()

	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for log.n.Load()-before < target && ctx.Err() == nil {
		<-tick.C
	}
	if ctx.Err() != nil {
		t.Fatalf("kill %d: only %d of %d acknowledgements within the deadline", k, log.n.Load()-before, target)
	}
	inFlight := produced.Load() - (log.n.Load() - before)
	b.kill()
	cancel()
	<-done
	cl.Close() // fails what is still buffered; those were never acknowledged
	t.Logf("kill %d: SIGKILL after %d acknowledgements, with %d more records handed to the producer",
		k, log.n.Load()-before, inFlight)
	if b.cleanShutdownMarker() {
		t.Fatalf("%s present after SIGKILL", cleanShutdownFile)
	}
}

// Start-up lines of the log manager after an unclean shutdown, in slog's
// text format (the broker's default): the load notices the missing
// clean-shutdown marker, then each log it recovered is named with the
// bytes it cut from a torn tail.
var (
	loadedLine      = regexp.MustCompile(`msg="loaded logs"`)
	uncleanLoadLine = regexp.MustCompile(`msg="loading logs" .*clean_shutdown=false`)
	recoveredLine   = regexp.MustCompile(`msg="recovered log" .*topic=(\S+) partition=(\d+) .*bytes_lost=(\d+)`)
)

// requireRecovered requires the restarted broker's log to say that it
// found no clean-shutdown marker and recovered at least one partition of
// topic, and logs what each recovery cut.
func requireRecovered(t *testing.T, b *broker, topic string) {
	t.Helper()
	// The broker may answer requests before its logs are loaded.
	log, ok := b.waitLog(loadedLine, readyTimeout)
	if !ok {
		t.Fatalf("broker log %s has no \"loaded logs\" line within %v of the restart", b.logPath, readyTimeout)
	}
	if !uncleanLoadLine.MatchString(log) {
		t.Errorf("broker log %s has no \"loading logs\" line with clean_shutdown=false after SIGKILL", b.logPath)
	}
	n := 0
	for _, m := range recoveredLine.FindAllStringSubmatch(log, -1) {
		if m[1] == topic {
			n++
			if m[3] != "0" {
				t.Logf("recovery cut %s bytes from the tail of %s-%s", m[3], m[1], m[2])
			}
		}
	}
	if n == 0 {
		t.Errorf("broker log %s has no \"recovered log\" line for topic %s after SIGKILL", b.logPath, topic)
	}
}

// requireAcked reads the whole topic and requires every acknowledged
// record at its offset with its value.
func requireAcked(t *testing.T, b *broker, topic string, acks []acked) {
	t.Helper()
	ends := endOffsets(t, b.admin(), topic)
	for _, a := range acks {
		if a.offset >= ends[a.partition] {
			t.Fatalf("partition %d ends at %d after restart, but offset %d was acknowledged", a.partition, ends[a.partition], a.offset)
		}
	}
	got := consumeAll(t, b.addr, topic, ends, 2*time.Minute)
	byOffset := make(map[int32][]string)
	for p, recs := range got {
		vals := make([]string, ends[p])
		for _, r := range recs {
			if r.Offset < int64(len(vals)) {
				vals[r.Offset] = string(r.Value)
			}
		}
		byOffset[p] = vals
	}
	lost := 0
	for _, a := range acks {
		if v := byOffset[a.partition][a.offset]; v != a.value {
			if lost < 5 {
				t.Errorf("partition %d offset %d: value %.40q, acknowledged %.40q", a.partition, a.offset, v, a.value)
			}
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records missing or different after restart", lost, len(acks))
	}
	t.Logf("all %d acknowledged records present (end offsets %v)", len(acks), ends)
}

// requireDumpSegment runs qk dump-segment --deep-iteration over every
// .log, .index and .timeindex of the topic and requires exit status 0,
// which means every file read in full with valid CRCs.
func requireDumpSegment(t *testing.T, b *broker, topic string, partitions int) {
	t.Helper()
	var files []string
	for p := range partitions {
		dir := filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, p))
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("partition dir: %v", err)
		}
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".log", ".index", ".timeindex":
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(files)
	segments := 0
	for _, f := range files {
		if filepath.Ext(f) == ".log" {
			segments++
		}
	}
	if segments == 0 {
		t.Fatalf("no segment files under %s", b.dataDir)
	}
	t.Logf("qk dump-segment over %d segments of %d partitions, with their indexes", segments, partitions)
	// The dump itself (one line per record) is not needed, only the
	// verdict: stdout goes to /dev/null, stderr is shown on failure.
	cmd := exec.CommandContext(ctxFor(t, 2*time.Minute), qkBin, append([]string{"dump-segment", "--deep-iteration"}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("qk dump-segment --deep-iteration over %d files: %v\n%s", len(files), err, tail(stderr.String(), 8<<10))
	}
}
