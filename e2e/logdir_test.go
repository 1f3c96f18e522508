//go:build integration

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/internal/zktest"
)

// mountTmpfs mounts a tmpfs of the given size (mount's size=, e.g. "8m")
// on a fresh directory under t.TempDir and unmounts it when the test ends
// (lazily if a process still holds it), before the directory is removed.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s tmpfs %s: %v: %s (the test needs root and mount(8), as CI has)", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			if out2, err2 := exec.Command("umount", "-l", dir).CombinedOutput(); err2 != nil {
				t.Errorf("umount %s: %v: %s; umount -l: %v: %s", dir, err, out, err2, out2)
			}
		}
	})
	return dir
}

// remountTmpfs resizes a tmpfs mounted by mountTmpfs.
func remountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	runCmd(t, 30*time.Second, nil, "mount", "-o", "remount,size="+size, dir)
}

// fillProducer is an idempotent acks=all franz-go producer writing values
// of valueSize bytes, uncompressed, to partition 0 of one topic, at most
// limit records and for at most two minutes, until stopped. It records
// every acknowledgement (value, offset, when) in the order the client
// reports them, which is the order of the offsets.
type fillProducer struct {
	cl     *kgo.Client
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	acked    []chaosAck
	ackedAt  []time.Time
	failed   int
	firstErr error
}

func startFillProducer(t *testing.T, addrs []string, topic, tag string, limit, valueSize int) *fillProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(1000),
		// kgo refreshes metadata at most every MetadataMinAge (5 s by
		// default): it would see the new leader only then.
		kgo.MetadataMinAge(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p := &fillProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	p.ctx, p.cancel = context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(func() {
		p.cancel()
		<-p.done
		cl.Close()
	})
	pad := bytes.Repeat([]byte{'.'}, valueSize)
	go func() {
		defer close(p.done)
		for i := 0; i < limit && p.ctx.Err() == nil; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			v := fmt.Appendf(nil, "%s%06d", tag, i)
			v = append(v, pad[len(v):]...)
			cl.Produce(p.ctx, &kgo.Record{Partition: 0, Value: v}, p.promise)
			if i%4 == 3 {
				time.Sleep(time.Millisecond) // pacing: at most ~4 MB/s, a fill takes seconds
			}
		}
	}()
	return p
}

func (p *fillProducer) promise(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.firstErr == nil {
			p.firstErr = err
		}
		p.failed++
		return
	}
	p.acked = append(p.acked, chaosAck{string(r.Value), r.Offset})
	p.ackedAt = append(p.ackedAt, time.Now())
}

func (p *fillProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// waitMore waits for n acknowledgements more than from.
func (p *fillProducer) waitMore(t *testing.T, from, n int, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for p.count() < from+n {
		if time.Now().After(deadline) {
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("%s: %d acknowledgements, want %d, within %v; %d failed, first error %v", what, len(p.acked), from+n, timeout, p.failed, p.firstErr)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// finish stops producing, waits until every record produced was answered
// and returns the acknowledgements and the longest time between two of
// them. No record may fail: the client retries until each is written.
func (p *fillProducer) finish(t *testing.T) ([]chaosAck, time.Duration) {
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
	var gap time.Duration
	for i := 1; i < len(p.ackedAt); i++ {
		gap = max(gap, p.ackedAt[i].Sub(p.ackedAt[i-1]))
	}
	return p.acked, gap
}

// logLineTime finds the first line of log that re matches and returns the
// time slog stamped on it.
func logLineTime(t *testing.T, log string, re *regexp.Regexp) time.Time {
	t.Helper()
	line := re.FindString(log)
	m := regexp.MustCompile(`(?m)^time=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no time= in log line %q", line)
	}
	ts, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatalf("log line %q: %v", line, err)
	}
	return ts
}

// segmentBytes is a partition directory's .log segments, concatenated in
// offset order (their names), and how many there are.
func segmentBytes(dir string) ([]byte, int, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, 0, err
	}
	if len(names) == 0 {
		return nil, 0, fmt.Errorf("no segments in %s", dir)
	}
	slices.Sort(names)
	var all []byte
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, 0, err
		}
		all = append(all, data...)
	}
	return all, len(names), nil
}

// metric reads one unlabelled gauge from the admin HTTP server's /metrics.
func metric(addr, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no %s in /metrics", name)
}

// TestLogDirFull: a disk that fills, for real (KIP-112). Broker 0 of
// three on a real ZooKeeper has two log dirs, each a tmpfs of 8 MiB.
// Topic A (replicas [0,1,2], broker 0 the leader, min.insync.replicas=2)
// takes an acks=all idempotent producer until the tmpfs holding its
// replica on broker 0 is full: the ENOSPC takes that log dir offline (one
// ERROR line), the controller, told through
// /log_dir_event_notification, moves the leadership to broker 1 or 2
// within seconds and drops broker 0 from the ISR (Metadata lists it
// offline), DescribeLogDirs answers KAFKA_STORAGE_ERROR for the dir,
// kafka_log_logmanager_offlinelogdirectorycount is 1, and the producer
// goes on; broker 0 keeps running on its other dir. Topic B, created
// then, is placed in the other dir and led by broker 0; when that fills
// too, broker 0 logs that every log directory is offline and exits
// non-zero, and B's producer goes on with the new leader. With both
// tmpfs grown to 64 MiB, broker 0 restarted rejoins the ISR of A and B,
// the three replicas of each partition end byte for byte equal, and
// every acknowledged record of A and B is read back once, at its offset,
// in order.
func TestLogDirFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestLogDirFull mounts tmpfs file systems: run it as root (CI does)")
	}
	const (
		topicA, topicB = "full-a", "full-b"
		valueSize      = 1 << 10
		limit          = 16_000 // records per topic: 16 MiB, within the 64 MiB tmpfs of the restart
		moveBound      = 15 * time.Second
	)
	dirs := []string{mountTmpfs(t, "8m"), mountTmpfs(t, "8m")}

	zk := zktest.Start(t)
	defer func() {
		if t.Failed() {
			t.Logf("zookeeper log:\n%s", tail(zk.Log(), 8<<10))
		}
	}()
	observer := openZK(t, zk.Addr()+"/qk")
	sets := func(id int) brokerOption {
		return withSet("broker.id="+strconv.Itoa(id), "zookeeper.connect="+zk.Addr()+"/qk",
			"zookeeper.session.timeout.ms=6000", "offsets.topic.replication.factor=1", quickStop)
	}
	// Broker 1 starts first and stays controller: broker 0's shutdown
	// then hands its leaderships over without a controller failover.
	bs := make([]*broker, 3)
	bs[1] = startBroker(t, sets(1))
	waitUntil(t, 30*time.Second, "broker 1 controller", func() bool { return zkController(t, observer) == 1 })
	bs[2] = startBroker(t, sets(2))
	httpAddr := freeAddr(t)
	bs[0] = startBroker(t, sets(0), withLogDirs(dirs...), withSet("qk.http.listener="+httpAddr))
	addrs := []string{bs[0].addr, bs[1].addr, bs[2].addr}
	for i, b := range bs {
		waitUntil(t, 30*time.Second, fmt.Sprintf("broker %d sees 3 brokers", i), func() bool {
			md, err := freshMetadata(t, b.addr)
			return err == nil && len(md.Brokers) == 3
		})
	}
	configs := map[string]string{"min.insync.replicas": "2", "segment.bytes": "1048576"}
	ledBy0 := func(ps kadm.PartitionDetails) bool {
		return len(ps) == 1 && ps[0].Leader == 0 && len(ps[0].ISR) == 3
	}
	// movedOff0: led by 1 or 2, broker 0 out of the ISR and offline.
	movedOff0 := func(ps kadm.PartitionDetails) bool {
		return len(ps) == 1 && (ps[0].Leader == 1 || ps[0].Leader == 2) && len(ps[0].ISR) == 2 &&
			!slices.Contains(ps[0].ISR, 0) && slices.Equal(ps[0].OfflineReplicas, []int32{0})
	}
	inISR := func(ps kadm.PartitionDetails) bool {
		return len(ps) == 1 && ps[0].Leader >= 0 && len(ps[0].ISR) == 3 && len(ps[0].OfflineReplicas) == 0
	}

	// Topic A: the tmpfs holding broker 0's replica fills.
	createAssigned(t, bs[1], topicA, map[int32][]int32{0: {0, 1, 2}}, configs)
	waitPartitions(t, bs[1].addr, topicA, 20*time.Second, "topic A led by broker 0 with 3 in sync", ledBy0)
	full, other := dirs[0], dirs[1]
	if _, err := os.Stat(filepath.Join(full, topicA+"-0")); err != nil {
		full, other = other, full
	}
	if _, err := os.Stat(filepath.Join(full, topicA+"-0")); err != nil {
		t.Fatalf("broker 0's replica of %s-0 is in neither tmpfs %v", topicA, dirs)
	}
	prodA := startFillProducer(t, addrs, topicA, "a", limit, valueSize)
	offlineA := regexp.MustCompile(`(?m)^.*level=ERROR msg="log directory offline[^"]*".* dir=` + regexp.QuoteMeta(full) + ` .*$`)
	log, ok := bs[0].waitLog(offlineA, 60*time.Second)
	if !ok {
		t.Fatalf("broker 0 did not take %s offline within 60 s (%d records acknowledged):\n%s", full, prodA.count(), tail(log, 8<<10))
	}
	failedAt := logLineTime(t, log, offlineA)
	ackedAtFailure := prodA.count()
	if line := offlineA.FindString(log); !strings.Contains(line, "no space left on device") {
		t.Fatalf("the offline line does not name ENOSPC: %s", line)
	}
	ps := waitPartitions(t, bs[2].addr, topicA, moveBound, "topic A's leadership off broker 0, out of the ISR", movedOff0)
	moved := time.Since(failedAt)
	t.Logf("%s full after %d acknowledged records; leadership of %s-0 on broker %d, ISR %v, seen %v after the ERROR line",
		full, ackedAtFailure, topicA, ps[0].Leader, ps[0].ISR, moved.Round(time.Millisecond))
	if moved > moveBound {
		t.Fatalf("leadership moved %v after the failure, want < %v", moved, moveBound)
	}
	if n := strings.Count(bs[0].log(), `msg="log directory offline`); n != 1 {
		t.Fatalf("%d log directory offline lines, want 1", n)
	}
	if !bs[0].running() {
		t.Fatalf("broker 0 exited with a log dir left: %v", bs[0].proc.ProcessState)
	}
	lds, err := bs[1].admin().DescribeBrokerLogDirs(ctxFor(t, 10*time.Second), 0, nil)
	if err != nil {
		t.Fatalf("DescribeLogDirs of broker 0: %v", err)
	}
	if !errors.Is(lds[full].Err, kerr.KafkaStorageError) || lds[other].Err != nil {
		t.Fatalf("DescribeLogDirs of broker 0: %s: %v, %s: %v; want KAFKA_STORAGE_ERROR for the full one only", full, lds[full].Err, other, lds[other].Err)
	}
	waitUntil(t, 10*time.Second, "kafka_log_logmanager_offlinelogdirectorycount 1", func() bool {
		v, err := metric(httpAddr, "kafka_log_logmanager_offlinelogdirectorycount")
		return err == nil && v == "1"
	})
	prodA.waitMore(t, prodA.count(), 1000, 30*time.Second, "acknowledgements of topic A with the new leader")
	ackedA, gapA := prodA.finish(t)
	t.Logf("topic A: %d records acknowledged, the longest wait between two %v", len(ackedA), gapA.Round(time.Millisecond))

	// Topic B: placed in the other dir, the only one online; it fills too.
	createAssigned(t, bs[1], topicB, map[int32][]int32{0: {0, 1, 2}}, configs)
	waitPartitions(t, bs[1].addr, topicB, 20*time.Second, "topic B led by broker 0 with 3 in sync", ledBy0)
	if _, err := os.Stat(filepath.Join(other, topicB+"-0")); err != nil {
		t.Fatalf("broker 0's replica of %s-0 is not in the online dir %s: %v", topicB, other, err)
	}
	prodB := startFillProducer(t, addrs, topicB, "b", limit, valueSize)
	allOffline := regexp.MustCompile(`(?m)^.*level=ERROR msg="every log directory is offline: the broker shuts down".*$`)
	log, ok = bs[0].waitLog(allOffline, 60*time.Second)
	if !ok {
		t.Fatalf("broker 0 did not give up within 60 s (%d records of B acknowledged):\n%s", prodB.count(), tail(log, 8<<10))
	}
	failedAt = logLineTime(t, log, allOffline)
	ackedAtFailure = prodB.count()
	if !bs[0].waitExit(stopTimeout) {
		t.Fatalf("broker 0 still running %v after every log dir went offline", stopTimeout)
	}
	exited := time.Since(failedAt)
	if st := bs[0].proc.ProcessState; !st.Exited() || st.ExitCode() == 0 {
		t.Fatalf("broker 0 %v with every log dir offline, want a non-zero exit status", st)
	}
	ps = waitPartitions(t, bs[2].addr, topicB, moveBound, "topic B's leadership off broker 0", func(ps kadm.PartitionDetails) bool {
		return len(ps) == 1 && (ps[0].Leader == 1 || ps[0].Leader == 2) && !slices.Contains(ps[0].ISR, 0)
	})
	t.Logf("%s full after %d acknowledged records of B; broker 0 exited (%v) %v after its last line, %s-0 led by broker %d, ISR %v, seen %v after it",
		other, ackedAtFailure, bs[0].proc.ProcessState, exited.Round(time.Millisecond), topicB, ps[0].Leader, ps[0].ISR, time.Since(failedAt).Round(time.Millisecond))
	prodB.waitMore(t, prodB.count(), 1000, 30*time.Second, "acknowledgements of topic B with the new leader")
	ackedB, gapB := prodB.finish(t)
	t.Logf("topic B: %d records acknowledged, the longest wait between two %v", len(ackedB), gapB.Round(time.Millisecond))

	// Space again: broker 0 restarts, rejoins both ISRs, the replicas
	// end equal.
	for _, d := range dirs {
		remountTmpfs(t, d, "64m")
	}
	restarted := time.Now()
	bs[0].restart()
	for _, topic := range []string{topicA, topicB} {
		waitPartitions(t, bs[2].addr, topic, 30*time.Second, "broker 0 back in the ISR of "+topic, inISR)
	}
	t.Logf("broker 0 back in both ISRs %v after its restart", time.Since(restarted).Round(time.Millisecond))
	for _, c := range []struct {
		topic string
		dir0  string
	}{{topicA, full}, {topicB, other}} {
		partDirs := []string{
			filepath.Join(c.dir0, c.topic+"-0"),
			filepath.Join(bs[1].dataDir, c.topic+"-0"),
			filepath.Join(bs[2].dataDir, c.topic+"-0"),
		}
		var diff string
		deadline := time.Now().Add(30 * time.Second)
		for {
			diff = ""
			ref, refN, err := segmentBytes(partDirs[0])
			for i := 1; i < 3 && err == nil && diff == ""; i++ {
				got, n, err2 := segmentBytes(partDirs[i])
				if err = err2; err == nil && !bytes.Equal(got, ref) {
					diff = fmt.Sprintf("broker %d: %d bytes in %d segments, broker 0: %d bytes in %d segments", i, len(got), n, len(ref), refN)
				}
			}
			if err != nil {
				diff = err.Error()
			}
			if diff == "" {
				t.Logf("%s-0: %d bytes in %d segments, byte for byte equal on the 3 replicas", c.topic, len(ref), refN)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s-0's replicas differ 30 s after broker 0 rejoined: %s", c.topic, diff)
			}
			time.Sleep(100 * time.Millisecond) // polling interval
		}
	}
	requireDelivered(t, bs[2].addr, topicA, map[int32][]chaosAck{0: ackedA})
	requireDelivered(t, bs[0].addr, topicB, map[int32][]chaosAck{0: ackedB})
}
