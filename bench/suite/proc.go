package main

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

// proc is one broker process under measurement: `qk broker start` or a
// kfakebroker. It runs in a directory of its own (its data and its log),
// which is removed when it stops.
type proc struct {
	name    string
	addr    string
	dir     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// startQK starts `qk broker start` on a free loopback port with a fresh
// data directory and waits until it answers ApiVersions. sets are extra
// key=value settings, after the suite's own so they win.
//
// Two settings differ from the defaults, both so that a run is charged
// only for its own work:
//   - log.segment.delete.delay.ms=0: the suite deletes each run's topic,
//     and Kafka's default (60 s) would remove those files in the middle of
//     a later run, charging it CPU and I/O that belong to an earlier one.
//   - group.initial.rebalance.delay.ms=0: `qk perf consume` joins a group,
//     and Kafka's default makes the first join wait 3 s, which kfake does
//     not; the broker's idle CPU over those 3 s would land in its CPU per
//     GiB served (a third of the 0.3 target on a 500 MB run).
func startQK(ctx context.Context, qk string, sets []string) (*proc, error) {
	dir, err := os.MkdirTemp("", "qk-bench-")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{"broker", "start",
		"--set", "listeners=PLAINTEXT://" + addr,
		"--set", "log.dirs=" + filepath.Join(dir, "data"),
		"--set", "log.segment.delete.delay.ms=0",
		"--set", "group.initial.rebalance.delay.ms=0",
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return launch(ctx, "qk", qk, dir, args, addr)
}

// kfakeSpec is the command line of one kfakebroker.
type kfakeSpec struct {
	mode        string // peer, blackhole or synthetic
	sync        bool   // peer: fsync every batch
	recordBytes int    // synthetic: value size of the canned batch
	compression string // synthetic: its codec
	partitions  int    // of auto-created topics
}

// args is the command line for a kfakebroker whose peer data goes in dir.
func (s kfakeSpec) args(dir string) []string {
	args := []string{"-addr", "127.0.0.1:0", "-mode", s.mode, "-partitions", strconv.Itoa(max(s.partitions, 1))}
	switch s.mode {
	case "peer":
		args = append(args, "-dir", dir)
		if s.sync {
			args = append(args, "-sync")
		}
	case "synthetic":
		args = append(args, "-record-bytes", strconv.Itoa(s.recordBytes), "-compression", s.compression)
	}
	return args
}

// startKfake starts a kfakebroker on a port it picks itself and waits
// until it answers ApiVersions.
func startKfake(ctx context.Context, name, bin string, spec kfakeSpec) (*proc, error) {
	dir, err := os.MkdirTemp("", "qk-bench-kfake-")
	if err != nil {
		return nil, err
	}
	return launch(ctx, name, bin, dir, spec.args(filepath.Join(dir, "data")), "")
}

// launch starts bin in dir with its output in dir/broker.log. An empty
// addr means the process picks its port and says so in a "listening on
// ADDR" line (kfakebroker does).
func launch(ctx context.Context, name, bin, dir string, args []string, addr string) (*proc, error) {
	p := &proc{name: name, addr: addr, dir: dir, logPath: filepath.Join(dir, "broker.log"), exited: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logf.Close()
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = logf
	p.cmd.Stderr = logf
	// Own process group: a Ctrl-C at the terminal reaches only the suite,
	// which then stops the broker itself; Pdeathsig covers the suite dying.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ctx, 30*time.Second); err != nil {
		p.kill()
		err = fmt.Errorf("%s: %w\n%s log:\n%s", name, err, name, p.logTail(4<<10))
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// waitReady polls with ApiVersions until the broker answers, exits, or
// the timeout passes. Without an address it first waits for the
// "listening on" line in the log.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := errors.New("no \"listening on\" line yet")
		if p.addr == "" {
			p.addr = listeningAddr(p.logPath)
		}
		if p.addr != "" {
			if err = apiVersions(ctx, p.addr); err == nil {
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

// listeningAddr returns ADDR from the first "listening on ADDR" line of the
// file at path, or "" when there is none yet.
func listeningAddr(path string) string {
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

func apiVersions(ctx context.Context, addr string) error {
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

// stop sends SIGTERM to the broker's PID, waits for it (SIGKILL after
// 30 s) and removes its directory. It reports an exit status other than 0:
// a broker that cannot stop cleanly after a bench is a finding.
func (p *proc) stop() error {
	defer os.RemoveAll(p.dir)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		p.kill()
		return fmt.Errorf("%s did not exit within 30s of SIGTERM; killed", p.name)
	}
	if st := p.cmd.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		return fmt.Errorf("%s %v after SIGTERM\n%s log:\n%s", p.name, st, p.name, p.logTail(4<<10))
	}
	return nil
}

// kill stops the process at once and waits for it; for errors and Ctrl-C.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *proc) logTail(n int) string {
	data, _ := os.ReadFile(p.logPath)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// cpuSeconds returns the process's user plus system CPU time so far, all
// threads, from /proc/<pid>/stat.
func (p *proc) cpuSeconds() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(data, clockTicks)
}

// parseStatCPU extracts utime+stime in seconds from a /proc/<pid>/stat
// line: fields 14 and 15, in clock ticks. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself, so fields are
// counted after the last ')'.
func parseStatCPU(stat []byte, ticksPerSecond float64) (float64, error) {
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

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
// It is 100 on every Linux ABI Go supports, but getconf says for sure.
var clockTicks = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && v > 0 {
			return float64(v)
		}
	}
	return 100
}()

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
