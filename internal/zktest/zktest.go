// Package zktest runs real ZooKeeper servers for tests: Debian's
// zookeeper package (make test installs it; Java 17 is on every machine),
// started on loopback ports in the test's temp dir and stopped by PID.
// A missing package fails the test: it is part of the set-up, not an
// optional extra.
//
// Run starts a standalone server without a testing.TB, with a tickTime of
// the caller's, for programs that need a real ZooKeeper outside tests
// (bench/cluster needs sessions of 18 s, beyond the 10 s that TickTime
// allows).
//
// It also has a TCP Proxy, to cut a client off from its server without
// touching either: connection loss inside the session timeout, or long
// enough for ZooKeeper to expire the session.
package zktest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Jar is the Debian package's server jar; its manifest names the rest of
// the class path.
const Jar = "/usr/share/java/zookeeper.jar"

// TickTime is the servers' tickTime in ms. ZooKeeper bounds a session's
// timeout to [2, 20] ticks: 500 ms lets tests use sessions of 1-10 s.
const TickTime = 500

// Server is one ZooKeeper server process.
type Server struct {
	t        testing.TB // nil for a server of Run
	tickTime int
	Dir      string // data dir, zoo.cfg, zk.log
	Port     int    // client port on Host
	// Host is the client port's address: 127.0.0.1, or an address of
	// the network namespace Netns.
	Host string
	// Netns, if set, is the network namespace (ip netns) the server runs
	// in, so that a test can cut it off from its clients.
	Netns   string
	id      int    // ensemble member id, 0 standalone
	members string // server.N lines of an ensemble
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Addr is host:port of the client port.
func (s *Server) Addr() string { return net.JoinHostPort(s.host(), fmt.Sprint(s.Port)) }

func (s *Server) host() string {
	if s.Host == "" {
		return "127.0.0.1"
	}
	return s.Host
}

// Start starts a standalone server and waits until it serves.
func Start(t testing.TB) *Server {
	t.Helper()
	requireJar(t)
	s := &Server{t: t, tickTime: TickTime, Dir: t.TempDir(), Port: freePort(t)}
	s.must(s.writeConfig())
	s.must(s.launch())
	t.Cleanup(s.Stop)
	s.must(s.waitServing(30 * time.Second))
	return s
}

// StartIn starts a standalone server inside the network namespace netns
// (made with ip netns add), on host:2181, host being an address of that
// namespace, and waits until it serves; the caller must be able to reach
// host. The server listens on host only.
func StartIn(t testing.TB, netns, host string) *Server {
	t.Helper()
	requireJar(t)
	s := &Server{t: t, tickTime: TickTime, Dir: t.TempDir(), Port: 2181, Host: host, Netns: netns}
	s.must(s.writeConfig())
	s.must(s.launch())
	t.Cleanup(s.Stop)
	s.must(s.waitServing(30 * time.Second))
	return s
}

// Run starts a standalone server in dir (which must exist and should be
// empty) with tickTime ms ticks, so sessions of 2 to 20 ticks, and waits
// until it serves. The caller must Stop it; it does not remove dir.
func Run(dir string, tickTime int) (*Server, error) {
	if err := checkJar(); err != nil {
		return nil, err
	}
	port, err := pickPort()
	if err != nil {
		return nil, err
	}
	s := &Server{tickTime: tickTime, Dir: dir, Port: port}
	if err := s.writeConfig(); err != nil {
		return nil, err
	}
	if err := s.launch(); err != nil {
		return nil, err
	}
	if err := s.waitServing(30 * time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// must fails the test of a server of Start on err.
func (s *Server) must(err error) {
	if err != nil {
		s.t.Helper()
		s.t.Fatal(err)
	}
}

// StartFrom starts a standalone server on a copy of an existing data dir
// (one holding version-2/ with snapshots and logs, as another ZooKeeper
// wrote it), as when a cluster's ZooKeeper is restored or moved.
func StartFrom(t testing.TB, dataDir string) *Server {
	t.Helper()
	requireJar(t)
	s := &Server{t: t, tickTime: TickTime, Dir: t.TempDir(), Port: freePort(t)}
	if err := os.CopyFS(s.Dir, os.DirFS(dataDir)); err != nil {
		t.Fatalf("zktest: copy %s: %v", dataDir, err)
	}
	s.must(s.writeConfig())
	s.must(s.launch())
	t.Cleanup(s.Stop)
	s.must(s.waitServing(30 * time.Second))
	return s
}

// Ensemble is a ZooKeeper ensemble on loopback.
type Ensemble struct {
	Servers []*Server
}

// Connect is the ensemble's connect string.
func (e *Ensemble) Connect() string {
	var addrs []string
	for _, s := range e.Servers {
		addrs = append(addrs, s.Addr())
	}
	return strings.Join(addrs, ",")
}

// StartEnsemble starts n servers as one ensemble and waits until each
// serves (is leader or follower).
func StartEnsemble(t testing.TB, n int) *Ensemble {
	t.Helper()
	requireJar(t)
	e := &Ensemble{}
	var lines []string
	for i := 1; i <= n; i++ {
		s := &Server{t: t, tickTime: TickTime, Dir: t.TempDir(), Port: freePort(t), id: i}
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i, freePort(t), freePort(t)))
		e.Servers = append(e.Servers, s)
	}
	for _, s := range e.Servers {
		s.members = strings.Join(lines, "\n")
		s.must(s.writeConfig())
		s.must(s.launch())
		t.Cleanup(s.Stop)
	}
	for _, s := range e.Servers {
		s.must(s.waitServing(60 * time.Second))
	}
	return e
}

func requireJar(t testing.TB) {
	t.Helper()
	if err := checkJar(); err != nil {
		t.Fatal(err)
	}
}

func checkJar() error {
	if _, err := os.Stat(Jar); err != nil {
		return fmt.Errorf("ZooKeeper is not installed (%v): make test installs it (scripts/ensure-deps.sh: apt-get install zookeeper)", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("java not found: ZooKeeper needs Java 17: %v", err)
	}
	return nil
}

func (s *Server) writeConfig() error {
	cfg := fmt.Sprintf(`tickTime=%d
initLimit=20
syncLimit=10
dataDir=%s
clientPort=%d
clientPortAddress=%s
admin.enableServer=false
4lw.commands.whitelist=*
preAllocSize=4096
maxSessionTimeout=%d
`, s.tickTime, s.Dir, s.Port, s.host(), 20*s.tickTime)
	if s.members != "" {
		cfg += s.members + "\n"
		if err := os.WriteFile(filepath.Join(s.Dir, "myid"), []byte(fmt.Sprintln(s.id)), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(s.Dir, "zoo.cfg"), []byte(cfg), 0o644)
}

func (s *Server) launch() error {
	logf, err := os.OpenFile(filepath.Join(s.Dir, "zk.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false", "-cp", Jar,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(s.Dir, "zoo.cfg")}
	if s.Netns != "" {
		// ip netns exec execs java in place: the PID stays the server's.
		args = append([]string{"ip", "netns", "exec", s.Netns}, args...)
	}
	s.cmd = exec.Command(args[0], args[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start ZooKeeper: %w", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.cmd, s.exited)
	return nil
}

// waitServing polls the srvr four-letter command until it reports a Mode.
func (s *Server) waitServing(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	probe := 250 * time.Millisecond
	for {
		if mode, err := s.Mode(probe); err == nil && mode != "" {
			return nil
		} else if err != nil && strings.Contains(err.Error(), "timeout") {
			probe = min(2*probe, 2*time.Second)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("ZooKeeper on port %d exited before serving:\n%s", s.Port, s.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ZooKeeper on port %d not serving within %v:\n%s", s.Port, timeout, s.Log())
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// Mode is what srvr says: standalone, leader or follower ("" when it does
// not serve yet).
func (s *Server) Mode(timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", sc.Err()
}

// HasSession reports whether the server still tracks session id (the
// dump four-letter command's session list): false once it expired it.
func (s *Server) HasSession(id int64) (bool, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second)
	if err != nil {
		return false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "dump"); err != nil {
		return false, err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return false, err
	}
	out := string(b)
	start := strings.Index(out, "SessionTracker dump:")
	if start < 0 {
		return false, fmt.Errorf("zktest: no session list in dump output: %q", out)
	}
	out = out[start:]
	if end := strings.Index(out, "ephemeral nodes dump:"); end >= 0 {
		out = out[:end]
	}
	want := fmt.Sprintf("0x%x", id)
	for _, f := range strings.Fields(out) {
		if f == want {
			return true, nil
		}
	}
	return false, nil
}

// Command is the server's command line, for a report that says how it
// was run.
func (s *Server) Command() string { return strings.Join(s.cmd.Args, " ") }

// Config is the server's zoo.cfg.
func (s *Server) Config() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "zoo.cfg"))
	return string(b)
}

// Log is the server's log, for failure messages.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "zk.log"))
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for
// it; stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Kill ends the server with SIGKILL and waits for it.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Restart starts the stopped server of Start again on the same port and
// data dir, and waits until it serves.
func (s *Server) Restart() {
	s.t.Helper()
	s.must(s.launch())
	s.must(s.waitServing(60 * time.Second))
}

func freePort(t testing.TB) int {
	t.Helper()
	port, err := pickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func pickPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Proxy forwards TCP connections from its own loopback port to a target,
// and can cut them: Cut closes every forwarded connection and refuses new
// ones until Restore, as a network partition between a client and its
// ZooKeeper would.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to target, closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address: connect the client here.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes every connection through the proxy and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

// Pid is the server process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }
