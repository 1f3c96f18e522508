package benchproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Proc is one broker process under measurement: `qk broker start` or a
// kfakebroker. Its output goes to Dir/broker.log, appended to, so a
// broker restarted in the same directory keeps one log across restarts.
// The directory belongs to the caller: Proc never removes it, so a
// broker can be killed and started again on the same data.
type Proc struct {
	Name    string
	Addr    string // host:port clients connect to
	Dir     string
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Launch starts bin in dir and waits until it answers ApiVersions at addr.
// An empty addr means the process picks its port and says so in a
// "listening on ADDR" line (kfakebroker does). A process that exits or
// does not answer within 30 s is killed and its log tail is in the error.
func Launch(ctx context.Context, name, bin, dir string, args []string, addr string) (*Proc, error) {
	p := &Proc{Name: name, Addr: addr, Dir: dir, LogPath: filepath.Join(dir, "broker.log"), exited: make(chan struct{})}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// The process runs in dir, where a relative path such as bin/qk
	// would name nothing: resolve it against the benchmark's directory.
	if strings.ContainsRune(bin, filepath.Separator) && !filepath.IsAbs(bin) {
		if abs, err := filepath.Abs(bin); err == nil {
			bin = abs
		}
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = logf
	p.cmd.Stderr = logf
	// Own process group: a Ctrl-C at the terminal reaches only the
	// benchmark, which then stops the broker itself; Pdeathsig covers the
	// benchmark dying.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ctx, 30*time.Second); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s: %w\n%s log:\n%s", name, err, name, p.LogTail(4<<10))
	}
	return p, nil
}

// waitReady polls with ApiVersions until the broker answers, exits, or
// the timeout passes. Without an address it first waits for the
// "listening on" line in the log.
func (p *Proc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := errors.New("no \"listening on\" line yet")
		if p.Addr == "" {
			p.Addr = ListeningAddr(p.LogPath)
		}
		if p.Addr != "" {
			if err = APIVersions(ctx, p.Addr); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: %v", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return fmt.Errorf("exited at start-up: %v", p.cmd.ProcessState)
		case <-tick.C:
		}
	}
}

// ListeningAddr returns ADDR from the first "listening on ADDR" line of
// the file at path, or "" when there is none yet.
func ListeningAddr(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			return strings.TrimSpace(a)
		}
	}
	return ""
}

// APIVersions sends one ApiVersions request to addr: the probe for "this
// broker serves Kafka requests".
func APIVersions(ctx context.Context, addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode != 0 {
		err = fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	return err
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Alive says whether the process has not exited yet.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// ExitStatus describes how the process ended ("" while it runs).
func (p *Proc) ExitStatus() string {
	if p.Alive() {
		return ""
	}
	return p.cmd.ProcessState.String()
}

// Signal sends sig to the process (not its group: the broker is one
// process, and nothing else of the benchmark's may be hit).
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM, waits for the exit (SIGKILL after wait) and
// reports an exit status other than 0, with the log tail: a broker that
// cannot stop cleanly after a benchmark is a finding.
func (p *Proc) Stop(wait time.Duration) error {
	if !p.Alive() {
		return nil
	}
	_ = p.Signal(syscall.SIGTERM)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		p.Kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed\n%s log:\n%s", p.Name, wait, p.Name, p.LogTail(4<<10))
	}
	if st := p.cmd.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		return fmt.Errorf("%s %v after SIGTERM\n%s log:\n%s", p.Name, st, p.Name, p.LogTail(4<<10))
	}
	return nil
}

// Kill stops the process at once with SIGKILL and waits for it.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// LogTail is the last n bytes of the process's log.
func (p *Proc) LogTail(n int) string {
	data, _ := os.ReadFile(p.LogPath)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// CPUSeconds returns the process's user plus system CPU time so far, all
// threads, from /proc/<pid>/stat.
func (p *Proc) CPUSeconds() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return 0, err
	}
	return ParseStatCPU(data, ClockTicks)
}

// ParseStatCPU extracts utime+stime in seconds from a /proc/<pid>/stat
// line: fields 14 and 15, in clock ticks. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself, so fields are
// counted after the last ')'.
func ParseStatCPU(stat []byte, ticksPerSecond float64) (float64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("stat: no ')' after the command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	// After ')' come field 3 (state) onward: utime is field 14, stime 15.
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	u, err1 := strconv.ParseUint(f[utime], 10, 64)
	s, err2 := strconv.ParseUint(f[stime], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	return float64(u+s) / ticksPerSecond, nil
}

// ClockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
// It is 100 on every Linux ABI Go supports, but getconf says for sure.
var ClockTicks = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && v > 0 {
			return float64(v)
		}
	}
	return 100
}()

// FreeAddr is a loopback host:port nothing listened on a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
