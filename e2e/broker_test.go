//go:build integration

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cleanShutdownFile is Kafka's marker that every log in a log dir was
// flushed and closed; a broker writes it last on a clean shutdown and
// removes it once it has loaded its logs at start-up, so its absence after
// a crash is what makes the next start recover the logs.
const cleanShutdownFile = ".kafka_cleanshutdown"

// Deadlines of the broker life cycle. They are generous for a loaded
// two-core CI machine; a healthy broker needs well under a second for each.
const (
	readyTimeout = 30 * time.Second // start until ApiVersions is answered
	stopTimeout  = 30 * time.Second // SIGTERM until exit
	killTimeout  = 10 * time.Second // SIGKILL until the kernel reaps it
)

// broker is one `qk broker start` child process and the directories it
// owns. The port and data directory survive restarts, so a test can kill
// the process and start a new one on the same state.
type broker struct {
	t       testing.TB
	addr    string   // 127.0.0.1:port: the listener, and what clients dial
	dataDir string   // log.dirs, or the first of logDirs
	logDirs []string // log.dirs when a test sets several (withLogDirs)
	logDir  string   // one log file per start, printed when the test fails
	args    []string // extra arguments after the standard ones
	// netns, if set, is the network namespace (ip netns) the broker runs
	// in; addr is then an address of that namespace, fixed by inNetns.
	netns string
	// nofile, if > 0, is the open-files limit (soft and hard) the next
	// start runs under, set by the shell's ulimit before it execs qk.
	nofile int

	proc    *exec.Cmd
	exited  chan struct{} // closed once proc has been waited for
	starts  int
	logPath string // log file of the latest start
}

// brokerOption changes a broker before its first start.
type brokerOption func(*broker)

// withSet adds `--set key=value` arguments, in order, after the listener
// and log dir, so a test can override any broker setting.
func withSet(kv ...string) brokerOption {
	return func(b *broker) {
		for _, s := range kv {
			b.args = append(b.args, "--set", s)
		}
	}
}

// withLogDirs makes dirs the broker's log.dirs instead of one fresh data
// directory; the first stands for dataDir (the clean-shutdown marker, the
// process's working directory is its parent).
func withLogDirs(dirs ...string) brokerOption {
	return func(b *broker) {
		b.dataDir = dirs[0]
		b.logDirs = dirs
	}
}

// errAddrInUse says the broker could not bind its port: some other process
// took it between freeAddr's probe and the broker's bind.
var errAddrInUse = errors.New("listener address already in use")

// startBroker starts a broker on a free loopback port with a fresh data
// directory and waits until it answers ApiVersions. The broker is killed
// (if still running) when the test ends, and its logs are printed if the
// test failed.
func startBroker(t *testing.T, opts ...brokerOption) *broker {
	t.Helper()
	root := t.TempDir()
	b := &broker{
		t:       t,
		dataDir: filepath.Join(root, "data"),
		logDir:  filepath.Join(root, "logs"),
	}
	if err := os.Mkdir(b.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(b)
	}
	t.Cleanup(b.cleanup)
	fixed := b.addr != "" // inNetns: a namespace of its own, every port free
	// A port found free can be taken before the broker binds it; a few
	// fresh ports make that race harmless.
	for attempt := 1; ; attempt++ {
		if !fixed {
			b.addr = freeAddr(t)
		}
		err := b.launch()
		if err == nil {
			return b
		}
		if errors.Is(err, errAddrInUse) && attempt < 3 && !fixed {
			t.Logf("port %s taken before the broker bound it, retrying", b.addr)
			continue
		}
		t.Fatalf("start broker: %v", err)
	}
}

// restart starts a new broker process on the same port and data directory
// after the previous one stopped or was killed.
func (b *broker) restart() {
	b.t.Helper()
	if b.running() {
		b.t.Fatal("restart: broker still running")
	}
	if err := b.launch(); err != nil {
		b.t.Fatalf("restart broker: %v", err)
	}
}

// launch starts the process and waits until it is ready.
func (b *broker) launch() error {
	if err := b.spawn(); err != nil {
		return err
	}
	if err := b.waitReady(readyTimeout); err != nil {
		if b.running() {
			b.killNow()
		}
		log := b.log()
		if strings.Contains(log, "address already in use") {
			return fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return fmt.Errorf("%v\nbroker log %s:\n%s", err, b.logPath, tail(log, 8<<10))
	}
	return nil
}

// spawn starts the broker process and returns at once, without waiting
// for it to listen or be ready.
func (b *broker) spawn() error {
	b.starts++
	b.logPath = filepath.Join(b.logDir, fmt.Sprintf("broker-%d.log", b.starts))
	logf, err := os.Create(b.logPath)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy of the descriptor

	logDirs := b.dataDir
	if len(b.logDirs) > 0 {
		logDirs = strings.Join(b.logDirs, ",")
	}
	args := append([]string{"broker", "start",
		"--set", "listeners=PLAINTEXT://" + b.addr,
		"--set", "log.dirs=" + logDirs,
		// An ephemeral admin HTTP port: tests start many brokers at
		// once (inNetns sets its own, later, which wins).
		"--set", "qk.http.listener=127.0.0.1:0",
	}, b.args...)
	cmd := exec.Command(qkBin, args...)
	if b.nofile > 0 {
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, b.nofile), qkBin}, args...)...)
	}
	if b.netns != "" {
		// ip netns exec execs qk in place: the PID stays the broker's.
		cmd = exec.Command("ip", append([]string{"netns", "exec", b.netns, qkBin}, args...)...)
	}
	cmd.Dir = filepath.Dir(b.dataDir)
	cmd.Env = childEnv()
	cmd.Stdout = logf
	cmd.Stderr = logf
	// Its own process group keeps a Ctrl-C at the terminal from reaching
	// the broker behind the test's back; Pdeathsig kills it if the test
	// binary dies without running its cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s %s: %w", qkBin, strings.Join(args, " "), err)
	}
	b.proc = cmd
	b.exited = make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(b.exited)
	return nil
}

// waitReady polls with ApiVersions until the broker answers, the process
// exits, or the timeout passes. ApiVersions is the first request every
// Kafka client sends, so an answer means clients can start.
func (b *broker) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := apiVersions(b.addr, time.Second)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no ApiVersions answer from %s within %v: %v", b.addr, timeout, err)
		}
		select {
		case <-b.exited:
			return fmt.Errorf("broker exited before answering ApiVersions: %v", b.proc.ProcessState)
		case <-tick.C:
		}
	}
}

// apiVersions sends one ApiVersions request to addr and reports whether
// it was answered without error.
func apiVersions(addr string, timeout time.Duration) error {
	// A plain dial first: connection refused is the common answer while
	// the broker starts, and it is cheaper than a client.
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	conn.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(timeout))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	return nil
}

// stop sends SIGTERM and requires what an operator relies on: exit status
// 0 within stopTimeout and the clean-shutdown marker in the log dir.
func (b *broker) stop() {
	b.t.Helper()
	b.stopWith(syscall.SIGTERM)
}

// stopWith is stop with another signal; SIGINT (Ctrl-C) must act as
// SIGTERM does.
func (b *broker) stopWith(sig syscall.Signal) {
	b.t.Helper()
	if !b.running() {
		b.t.Fatal("stop: broker not running")
	}
	if err := b.proc.Process.Signal(sig); err != nil {
		b.t.Fatalf("%v to broker pid %d: %v", sig, b.pid(), err)
	}
	if !b.waitExit(stopTimeout) {
		b.killNow()
		b.t.Fatalf("broker pid %d did not exit within %v of %v", b.pid(), stopTimeout, sig)
	}
	if st := b.proc.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		b.t.Fatalf("broker %v after %v, want exit status 0", st, sig)
	}
	if _, err := os.Stat(filepath.Join(b.dataDir, cleanShutdownFile)); err != nil {
		b.t.Fatalf("no clean-shutdown marker after %v: %v", sig, err)
	}
}

// kill sends SIGKILL, the crash a broker cannot see coming: no flush, no
// checkpoints, no clean-shutdown marker.
func (b *broker) kill() {
	b.t.Helper()
	if !b.running() {
		b.t.Fatal("kill: broker not running")
	}
	b.killNow()
	ws, _ := b.proc.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		b.t.Fatalf("broker %v, want killed by SIGKILL", b.proc.ProcessState)
	}
}

// killNow sends SIGKILL to the broker's PID and waits for it to be reaped.
func (b *broker) killNow() {
	_ = b.proc.Process.Kill()
	if !b.waitExit(killTimeout) {
		b.t.Errorf("broker pid %d not reaped within %v of SIGKILL", b.pid(), killTimeout)
	}
}

func (b *broker) waitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-b.exited:
		return true
	case <-timer.C:
		return false
	}
}

func (b *broker) running() bool {
	if b.proc == nil {
		return false
	}
	select {
	case <-b.exited:
		return false
	default:
		return true
	}
}

func (b *broker) pid() int { return b.proc.Process.Pid }

// cleanShutdownMarker reports whether the clean-shutdown marker exists.
func (b *broker) cleanShutdownMarker() bool {
	_, err := os.Stat(filepath.Join(b.dataDir, cleanShutdownFile))
	return err == nil
}

// overdueLine is the network watchdog's Warn line: a request neither
// answered nor dropped with its connection request.timeout.ms (plus its
// own wait) after it was read (broker/network/watchdog.go).
const overdueLine = "request unanswered past request.timeout.ms"

// checkAllAnswered fails t if the log of any start of b reports a request
// left unanswered past request.timeout.ms: a stress test's clients may
// time out and retry, so only the broker's own record says whether it
// answered everything.
func (b *broker) checkAllAnswered(t *testing.T) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(b.logDir, "broker-*.log"))
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("read broker log: %v", err)
			continue
		}
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, overdueLine) {
				t.Errorf("broker log %s: %s", path, strings.TrimSpace(line))
			}
		}
	}
}

// log returns the log of the latest start.
func (b *broker) log() string {
	data, _ := os.ReadFile(b.logPath)
	return string(data)
}

// waitLog polls the log of the latest start until re matches or the
// timeout passes, and returns the log as last read.
func (b *broker) waitLog(re *regexp.Regexp, timeout time.Duration) (string, bool) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		log := b.log()
		if re.MatchString(log) {
			return log, true
		}
		if time.Now().After(deadline) {
			return log, false
		}
		<-tick.C
	}
}

// cleanup kills a broker the test left running and, when the test failed,
// prints the end of every log the broker wrote.
func (b *broker) cleanup() {
	if b.running() {
		b.killNow()
	}
	// With QK_E2E_BIN pointing at a qk built with -race, a data race in
	// the broker fails the test even when the process was killed.
	for i := 1; i <= b.starts; i++ {
		p := filepath.Join(b.logDir, fmt.Sprintf("broker-%d.log", i))
		if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte("WARNING: DATA RACE")) {
			b.t.Errorf("data race reported in broker log %s", p)
		}
	}
	if !b.t.Failed() {
		return
	}
	for i := 1; i <= b.starts; i++ {
		p := filepath.Join(b.logDir, fmt.Sprintf("broker-%d.log", i))
		data, err := os.ReadFile(p)
		if err != nil {
			b.t.Logf("broker log %s: %v", p, err)
			continue
		}
		b.t.Logf("broker log %s (start %d of %d):\n%s", p, i, b.starts, tail(string(data), 16<<10))
	}
}

// client returns a franz-go client seeded with the broker, closed when the
// test ends.
func (b *broker) client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(cl.Close)
	return cl
}

// admin returns a kadm client over a fresh franz-go client.
func (b *broker) admin() *kadm.Client {
	b.t.Helper()
	return kadm.NewClient(b.client())
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// childEnv is the test's environment without QK_ variables, so a
// developer's shell settings cannot change the broker under test.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "QK_") {
			env = append(env, kv)
		}
	}
	return env
}

// tail returns at most the last n bytes of s, starting at a line boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "[...]\n" + s
}

// ctxFor returns a context that ends after d or with the test.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates a topic with replication factor 1 and fails the test
// on any error, including a topic-level error code in the response.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(ctxFor(t, 10*time.Second), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v %s", topic, err, resp.ErrMessage)
	}
}

// createManyPartitions creates a topic of n partitions, replication
// factor 1, with a request timeout of two minutes, and returns how long
// it took. qk's own cost is ~0.1 ms a partition (1 s for 10,000 on tmpfs),
// but ext4's inode allocation on a busy VM can take far longer: the
// timeout is fit for that, so the tests check creation, not the disk.
func createManyPartitions(t testing.TB, adm *kadm.Client, topic string, n int32) time.Duration {
	t.Helper()
	adm.SetTimeoutMillis(120_000)
	start := time.Now()
	resp, err := adm.CreateTopic(ctxFor(t, 2*time.Minute), n, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %d partitions: %v %s", n, err, resp.ErrMessage)
	}
	return time.Since(start)
}

// waitTopicReady polls Metadata until topic has the given number of
// partitions, each led by broker 0. A broker may answer ApiVersions before
// it has loaded every log; a client retries through that, but a test that
// asks for offsets right after a restart must wait for it too.
func waitTopicReady(t testing.TB, adm *kadm.Client, topic string, partitions int) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		md, err := adm.Metadata(ctx, topic)
		cancel()
		if err != nil {
			last = err.Error()
		} else if d := md.Topics[topic]; d.Err != nil {
			last = d.Err.Error()
		} else if len(d.Partitions) != partitions {
			last = fmt.Sprintf("%d partitions", len(d.Partitions))
		} else {
			ready := true
			for _, p := range d.Partitions {
				if p.Err != nil || p.Leader != 0 {
					ready = false
					last = fmt.Sprintf("partition %d: leader %d, err %v", p.Partition, p.Leader, p.Err)
				}
			}
			if ready {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s not ready with %d partitions led by broker 0 within %v: %s", topic, partitions, readyTimeout, last)
		}
		<-tick.C
	}
}

// endOffsets returns each partition's high watermark (the end offset a
// consumer sees).
func endOffsets(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListEndOffsets(ctxFor(t, 10*time.Second), topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	ends := make(map[int32]int64)
	lo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends
}

// consumeAll reads every partition of topic from offset 0 up to the end
// offsets in ends and returns the records by partition, in offset order.
// It fails the test when the records do not arrive within timeout.
func consumeAll(t testing.TB, addr, topic string, ends map[int32]int64, timeout time.Duration) map[int32][]*kgo.Record {
	t.Helper()
	offsets := make(map[int32]kgo.Offset)
	want := 0
	for p, end := range ends {
		if end > 0 {
			offsets[p] = kgo.NewOffset().At(0)
			want += int(end)
		}
	}
	got := make(map[int32][]*kgo.Record)
	if want == 0 {
		return got
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxFor(t, timeout)
	n := 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: %d of %d records within %v (ends %v)", topic, n, want, timeout, ends)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consume %s partition %d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				got[r.Partition] = append(got[r.Partition], r)
				n++
			}
		})
	}
	return got
}

// runCmd runs a command with a deadline and returns its stdout; it fails
// the test, showing stderr, when the command fails.
func runCmd(t testing.TB, timeout time.Duration, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	ctx := ctxFor(t, timeout)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v (deadline %v)\nstderr:\n%s", name, strings.Join(args, " "), err, timeout, tail(stderr.String(), 8<<10))
	}
	return stdout.Bytes()
}
