package main

import (
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

// brokerProc is the `qk broker start` process under measurement. It runs
// in a directory of its own, which is removed when it stops.
type brokerProc struct {
	addr    string
	dir     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// startBroker starts qk on a free loopback port with a fresh data
// directory and waits until it answers ApiVersions.
func startBroker(qk string, extra []string) (*brokerProc, error) {
	dir, err := os.MkdirTemp("", "qk-bench-")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b := &brokerProc{addr: addr, dir: dir, logPath: filepath.Join(dir, "broker.log"), exited: make(chan struct{})}
	logf, err := os.Create(b.logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"broker", "start",
		"--set", "listeners=PLAINTEXT://" + addr,
		"--set", "log.dirs=" + filepath.Join(dir, "data"),
	}, extra...)
	b.cmd = exec.Command(qk, args...)
	b.cmd.Dir = dir
	b.cmd.Stdout = logf
	b.cmd.Stderr = logf
	// Own process group: a Ctrl-C at the terminal reaches only this tool,
	// which then stops the broker itself; Pdeathsig covers the tool dying.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s %s: %w", qk, strings.Join(args, " "), err)
	}
	go func() {
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	if err := b.waitReady(30 * time.Second); err != nil {
		b.kill()
		err = fmt.Errorf("%w\nbroker log:\n%s", err, b.logTail(4<<10))
		os.RemoveAll(dir)
		return nil, err
	}
	return b, nil
}

// waitReady polls with ApiVersions until the broker answers, exits, or
// the timeout passes.
func (b *brokerProc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := apiVersions(b.addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("broker at %s not ready within %v: %v", b.addr, timeout, err)
		}
		select {
		case <-b.exited:
			return fmt.Errorf("broker exited at start-up: %v", b.cmd.ProcessState)
		case <-tick.C:
		}
	}
}

func apiVersions(addr string) error {
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode != 0 {
		err = fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	return err
}

// stop sends SIGTERM to the broker's PID, waits for it (SIGKILL after
// 30 s) and removes its directory. It reports an exit status other than 0.
func (b *brokerProc) stop() error {
	defer os.RemoveAll(b.dir)
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-b.exited:
	case <-timer.C:
		b.kill()
		return errors.New("broker did not exit within 30s of SIGTERM; killed")
	}
	if st := b.cmd.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		return fmt.Errorf("broker %v after SIGTERM\nbroker log:\n%s", st, b.logTail(4<<10))
	}
	return nil
}

func (b *brokerProc) kill() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

func (b *brokerProc) logTail(n int) string {
	data, _ := os.ReadFile(b.logPath)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// cpuSeconds returns the broker's user plus system CPU time so far, from
// fields 14 (utime) and 15 (stime) of /proc/<pid>/stat, in clock ticks.
func (b *brokerProc) cpuSeconds() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(data, clockTicks)
}

// parseStatCPU extracts utime+stime in seconds from a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces
// and parentheses itself, so fields are counted after the last ')'.
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
