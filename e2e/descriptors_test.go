//go:build integration

package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fdsUnder counts the descriptors of process pid that name files below
// dir (and whose path has prefix, if not empty).
func fdsUnder(t testing.TB, pid int, dir, prefix string) int {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatalf("read %s: %v", fdDir, err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if strings.HasPrefix(target, dir+"/") && strings.HasPrefix(strings.TrimPrefix(target, dir+"/"), prefix) {
			n++
		}
	}
	return n
}

// openFDs counts every open descriptor of process pid.
func openFDs(t testing.TB, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// segmentFiles counts the .log files of the partition directories below
// dataDir whose name starts with prefix.
func segmentFiles(t testing.TB, dataDir, prefix string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dataDir, prefix+"*", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// rssKiB is the resident set size of process pid.
func rssKiB(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// TestDescriptorsPerSegment: a broker keeps one descriptor per segment,
// as Kafka does (its indexes are read into memory and their descriptors
// closed), while segments roll, after a restart, and after old segments
// are read (their indexes loaded lazily).
func TestDescriptorsPerSegment(t *testing.T) {
	const topic = "roll"
	b := startBroker(t)
	adm := b.admin()
	createTopic(t, adm, topic, 2, map[string]*string{"segment.bytes": kadm.StringPtr("65536")})
	// Batches of at most 16 KiB: a segment rolls every few batches.
	cl := b.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 2000)
	rand.Read(value)
	// A roll flushes the old segment in the background, which opens its
	// index files for the fsync for a moment: poll until that is done.
	check := func(when string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			segs := segmentFiles(t, b.dataDir, topic+"-")
			fds := fdsUnder(t, b.pid(), b.dataDir, topic+"-")
			if fds == segs {
				t.Logf("%s: %d segments, %d descriptors", when, segs, fds)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d descriptors open on %d segments, want one per segment", when, fds, segs)
			}
			time.Sleep(20 * time.Millisecond) // polling interval
		}
	}
	for round := range 5 {
		var recs []*kgo.Record
		for range 1_000 {
			recs = append(recs, &kgo.Record{Value: value})
		}
		if err := cl.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		check(fmt.Sprintf("after round %d", round+1))
	}
	if segs := segmentFiles(t, b.dataDir, topic+"-"); segs < 100 {
		t.Fatalf("only %d segments rolled: the test needs many", segs)
	}
	ends := endOffsets(t, adm, topic)
	b.stop()
	b.restart()
	waitTopicReady(t, b.admin(), topic, 2)
	check("after restart")
	got := consumeAll(t, b.addr, topic, ends, time.Minute)
	if len(got[0])+len(got[1]) != 5_000 {
		t.Fatalf("read %d records after restart, want 5000", len(got[0])+len(got[1]))
	}
	check("after reading every segment")
}

// TestDescriptorLimits: a broker whose log dirs need more descriptors
// than its limit refuses to start with one line naming the numbers and
// what to set (not thousands of "too many open files"), and a CreateTopics
// that would exhaust the descriptors is refused before anything is written,
// while the broker goes on serving.
func TestDescriptorLimits(t *testing.T) {
	b := startBroker(t)
	adm := b.admin()
	createTopic(t, adm, "many", 600, nil)
	b.stop()

	// 600 segments + 1,024 kept in reserve do not fit 1,500.
	b.nofile = 1_500
	if err := b.spawn(); err != nil {
		t.Fatal(err)
	}
	if !b.waitExit(30 * time.Second) {
		t.Fatal("broker started with too few descriptors for its logs")
	}
	if st := b.proc.ProcessState; st.ExitCode() == 0 {
		t.Fatalf("broker %v with too few descriptors, want a failure", st)
	}
	log := b.log()
	want := "the log dirs hold 600 segments in 600 partitions, each kept open (one descriptor per segment), plus 1024 for connections and files: 1624, but the open-files limit (RLIMIT_NOFILE) is 1500; raise it to at least 1624 (ulimit -n 10000, or LimitNOFILE=10000 in the systemd unit)"
	if !strings.Contains(log, want) {
		t.Fatalf("start-up error does not say what is missing; want %q in:\n%s", want, tail(log, 4<<10))
	}
	if n := strings.Count(log, "too many open files"); n > 0 {
		t.Fatalf("%d 'too many open files' in the log: the limit must be checked before opening", n)
	}

	// Enough to load, not enough for 300 more partitions.
	b.nofile = 1_800
	b.restart()
	adm = b.admin()
	waitTopicReady(t, adm, "many", 600)
	resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 300, 1, nil, "toomany")
	if err == nil {
		err = resp.Err
	}
	if !strings.Contains(fmt.Sprint(err), kerr.KafkaStorageError.Message) || !strings.Contains(resp.ErrMessage, "300 new partitions need one open file each") {
		t.Fatalf("CreateTopics of 300 partitions under 1,800 descriptors: %v %q, want KAFKA_STORAGE_ERROR naming the limit", err, resp.ErrMessage)
	}
	topics, err := adm.ListTopics(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("toomany") {
		t.Fatal("refused topic is in the metadata")
	}
	// The broker still serves: a small topic is created and written.
	createTopic(t, adm, "few", 3, nil)
	cl := b.client(kgo.DefaultProduceTopic("few"))
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("produce after a refused CreateTopics: %v", err)
	}
}

// TestTenThousandPartitions creates a topic of 10,000 partitions on a
// broker whose open-files limit is 20,000, writes a record to each, and
// restarts it after SIGKILL and after a clean stop: every restart must
// load every partition (one descriptor per segment), and every record must
// be there. Creation, restart times, descriptors and RSS are logged.
func TestTenThousandPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 partitions")
	}
	const (
		topic = "huge"
		n     = 10_000
	)
	b := startBroker(t)
	b.nofile = 20_000
	b.stop()
	b.restart()
	adm := b.admin()
	took := createManyPartitions(t, adm, topic, n)
	t.Logf("CreateTopics of %d partitions: %v", n, took.Round(time.Millisecond))

	cl := b.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range int32(n) {
		recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "p%d", p)})
	}
	if err := cl.ProduceSync(ctxFor(t, 2*time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce one record to each partition: %v", err)
	}
	cl.Close()

	for _, how := range []string{"kill", "stop"} {
		if how == "kill" {
			b.kill()
		} else {
			stopped := time.Now()
			b.stop()
			t.Logf("clean shutdown: %v", time.Since(stopped).Round(time.Millisecond))
		}
		restarted := time.Now()
		b.restart()
		adm = b.admin()
		waitTopicReady(t, adm, topic, n)
		took := time.Since(restarted)
		fds := fdsUnder(t, b.pid(), b.dataDir, topic+"-")
		segs := segmentFiles(t, b.dataDir, topic+"-")
		t.Logf("restart after %s: ready in %v; %d segments, %d descriptors on them, %d in all; RSS %d MiB",
			how, took.Round(time.Millisecond), segs, fds, openFDs(t, b.pid()), rssKiB(t, b.pid())>>10)
		if fds != segs {
			t.Fatalf("after %s: %d descriptors on %d segments, want one each", how, fds, segs)
		}
		ends := endOffsets(t, adm, topic)
		total := int64(0)
		for p := range int32(n) {
			if ends[p] != 1 {
				t.Fatalf("after %s: partition %d ends at %d, want 1", how, p, ends[p])
			}
			total += ends[p]
		}
		if total != n {
			t.Fatalf("after %s: %d records, want %d", how, total, n)
		}
	}
}
