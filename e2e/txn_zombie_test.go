//go:build integration

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/internal/zktest"
)

// zombieProc is one e2e/testdata/zombie process: a transactional
// producer the test drives line by line and can SIGSTOP.
type zombieProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startZombie(t *testing.T, bin, brokers, id, topic, tag string, timeout time.Duration) *zombieProc {
	t.Helper()
	cmd := exec.Command(bin, brokers, id, topic, tag, fmt.Sprint(timeout.Milliseconds()))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	z := &zombieProc{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			z.lines <- sc.Text()
		}
		close(z.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return z
}

// do sends one command and returns its answer line.
func (z *zombieProc) do(command string, timeout time.Duration) string {
	z.t.Helper()
	if _, err := fmt.Fprintln(z.in, command); err != nil {
		z.t.Fatalf("zombie %q: %v", command, err)
	}
	select {
	case l, ok := <-z.lines:
		if !ok {
			z.t.Fatalf("zombie exited during %q", command)
		}
		return l
	case <-time.After(timeout):
		z.t.Fatalf("zombie: no answer to %q within %v", command, timeout)
	}
	return ""
}

func (z *zombieProc) mustOK(command string) {
	z.t.Helper()
	if got := z.do(command, time.Minute); got != "ok" {
		z.t.Fatalf("zombie %q: %s", command, got)
	}
}

// TestZombieFencing: a transactional producer stopped (SIGSTOP) with a
// transaction open past its timeout is aborted by the coordinator with
// an epoch bump; a new instance with the same transactional id commits;
// the old one, resumed (SIGCONT), is fenced: its late writes and its
// EndTxn are refused (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH) and
// none of them is ever visible, to read_committed or read_uncommitted.
func TestZombieFencing(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "zombie")
	if err := goBuild(bin, "./e2e/testdata/zombie"); err != nil {
		t.Fatal(err)
	}
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "transaction.state.log.num.partitions=3",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=500")
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	brokers := strings.Join(addrs, ",")
	createTopic(t, bs[0].admin(), "zombie", 2, nil)

	old := startZombie(t, bin, brokers, "zombie-id", "zombie", "old", 3*time.Second)
	old.mustOK("begin")
	old.mustOK("produce 10")
	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	adm := kadm.NewClient(newPlainClient(t, addrs[0], kgo.SeedBrokers(addrs...)))
	waitUntil(t, 30*time.Second, "the stopped producer's transaction aborted by its timeout", func() bool {
		d, err := adm.DescribeTransactions(ctxFor(t, 5*time.Second), "zombie-id")
		if err != nil {
			return false
		}
		txn, ok := d["zombie-id"]
		return ok && txn.Err == nil && (txn.State == "CompleteAbort" || txn.State == "Empty")
	})
	t.Logf("transaction of the stopped producer aborted %v after SIGSTOP", time.Since(stopped).Round(time.Millisecond))

	fresh := startZombie(t, bin, brokers, "zombie-id", "zombie", "new", 30*time.Second)
	fresh.mustOK("begin")
	fresh.mustOK("produce 10")
	fresh.mustOK("commit")

	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	late := old.do("produce 5", time.Minute)
	end := old.do("commit", time.Minute)
	t.Logf("resumed zombie: produce %q, commit %q", late, end)
	if end == "ok" {
		t.Fatalf("the fenced producer's commit succeeded")
	}
	if !fenced(late) && !fenced(end) {
		t.Fatalf("the resumed producer was not told it is fenced: produce %q, commit %q", late, end)
	}

	for _, committed := range []bool{true, false} {
		values := readAll(t, addrs, "zombie", committed)
		var news, olds int
		for _, v := range values {
			switch {
			case strings.HasPrefix(v, "new-"):
				news++
			case strings.HasPrefix(v, "old-"):
				olds++
				var i int
				fmt.Sscanf(v, "old-%d", &i)
				if i >= 10 {
					t.Fatalf("a late write of the fenced producer is in the log: %q (read_committed=%v)", v, committed)
				}
			}
		}
		if news != 10 {
			t.Fatalf("read_committed=%v: %d records of the new instance, want 10", committed, news)
		}
		if committed && olds != 0 {
			t.Fatalf("read_committed returned %d records of the aborted transaction", olds)
		}
	}
}

func fenced(s string) bool {
	return strings.Contains(s, "PRODUCER_FENCED") || strings.Contains(s, "INVALID_PRODUCER_EPOCH")
}

// readAll reads every record of topic from the start to its end (the
// last stable offset for read_committed, else the high watermark). The
// consumer keeps control records so that its position passes markers
// (and, read_committed, the aborted records they close); they are not
// returned.
func readAll(t *testing.T, addrs []string, topic string, committed bool) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	adm := kadm.NewClient(newPlainClient(t, addrs[0], kgo.SeedBrokers(addrs...)))
	list := adm.ListEndOffsets // the HW
	if committed {
		list = adm.ListCommittedOffsets // the LSO
	}
	ends, err := list(ctxFor(t, 10*time.Second), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	cl := newPlainClient(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []string
	pos := map[int32]int64{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			if pos[o.Partition] < o.Offset {
				done = false
			}
		})
		if done {
			return out
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, string(r.Value))
			}
		})
	}
	t.Fatalf("%s: not read to its end within 30s (at %v, ends %v)", topic, pos, ends)
	return nil
}

// TestTransactionsAfterSIGKILL: a broker killed (SIGKILL) while a
// transaction is open on it, coordinator and partition leader at once,
// comes back with the transaction still open in its log and its
// coordinator state; the coordinator then aborts it at its timeout, the
// abort is indexed in the rebuilt .txnindex, the LSO reaches the HW, and
// no record of it is ever read with read_committed.
func TestTransactionsAfterSIGKILL(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "zombie")
	if err := goBuild(bin, "./e2e/testdata/zombie"); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, withSet("transaction.abort.timed.out.transaction.cleanup.interval.ms=500"))
	createTopic(t, b.admin(), "killed", 2, nil)
	z := startZombie(t, bin, b.addr, "killed-id", "killed", "open", 3*time.Second)
	z.mustOK("begin")
	z.mustOK("produce 10")
	if err := z.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b.kill()
	b.restart()
	addrs := []string{b.addr}
	adm := kadm.NewClient(newPlainClient(t, b.addr))
	waitUntil(t, 60*time.Second, "the open transaction aborted after the restart (LSO = HW)", func() bool {
		hw, err1 := adm.ListEndOffsets(ctxFor(t, 5*time.Second), "killed")
		lso, err2 := adm.ListCommittedOffsets(ctxFor(t, 5*time.Second), "killed")
		if err1 != nil || err2 != nil || hw.Error() != nil || lso.Error() != nil {
			return false
		}
		stable := true
		hw.Each(func(o kadm.ListedOffset) {
			l, _ := lso.Lookup(o.Topic, o.Partition)
			stable = stable && l.Offset == o.Offset && o.Offset > 5 // 5 records and the marker
		})
		return stable
	})
	if got := readAll(t, addrs, "killed", true); len(got) != 0 {
		t.Fatalf("read_committed returned %d records of the aborted transaction: %v", len(got), head(got, 5))
	}
	if got := readAll(t, addrs, "killed", false); len(got) != 10 {
		t.Fatalf("read_uncommitted returned %d records, want the 10 aborted ones", len(got))
	}
	// Each partition's abort is in its .txnindex, as qk dump-segment reads it.
	for p := range 2 {
		idx, _ := filepath.Glob(filepath.Join(b.dataDir, fmt.Sprintf("killed-%d", p), "*.txnindex"))
		if len(idx) == 0 {
			t.Fatalf("killed-%d: no .txnindex after the abort", p)
		}
		out, err := exec.Command(qkBin, append([]string{"dump-segment"}, idx...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "firstOffset: 0") {
			t.Fatalf("qk dump-segment %v: %v\n%s", idx, err, out)
		}
	}
}
