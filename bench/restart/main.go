// Command restart measures what a broker with many partitions costs to
// create, restart and stop: for each partition count it starts `qk broker
// start` on a fresh data dir, creates one topic of that many partitions,
// writes one record to each, then restarts the broker after SIGKILL and
// after SIGTERM, and prints for each step its wall time, the broker's
// open descriptors and RSS, and (for CreateTopics) the broker's CPU time.
//
//	go run ./bench/restart -partitions 1000,10000 [-set num.recovery.threads.per.data.dir=8]
//
// Ready means a Metadata request lists the topic with every partition led;
// the broker answers requests only once it has loaded its logs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	qk := flag.String("qk", "bin/qk", "qk binary")
	counts := flag.String("partitions", "1000,10000", "comma-separated partition counts")
	dataRoot := flag.String("dir", "", "directory for the data dirs (default: a temp dir)")
	flag.Func("set", "broker setting key=value passed to qk broker start --set (repeatable)", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want key=value, got %q", s)
		}
		sets = append(sets, "--set", s)
		return nil
	})
	flag.Parse()
	if err := run(*qk, *counts, *dataRoot); err != nil {
		fmt.Fprintln(os.Stderr, "restart:", err)
		os.Exit(1)
	}
}

// sets are the -set flags, as qk broker start arguments.
var sets []string

func run(qk, counts, root string) error {
	if root == "" {
		d, err := os.MkdirTemp("", "qk-restart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		root = d
	}
	fmt.Println("| partitions | step | wall s | broker CPU s | descriptors | RSS MiB |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, c := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad partition count %q", c)
		}
		if err := measure(qk, filepath.Join(root, fmt.Sprint(n)), n); err != nil {
			return fmt.Errorf("%d partitions: %w", n, err)
		}
	}
	return nil
}

type broker struct {
	qk, dir, addr string
	cmd           *exec.Cmd
	done          chan struct{}
}

func (b *broker) start() error {
	b.cmd = exec.Command(b.qk, append([]string{"broker", "start", "--set", "listeners=PLAINTEXT://" + b.addr, "--set", "qk.http.listener=127.0.0.1:0",
		"--set", "log.dirs=" + filepath.Join(b.dir, "data")}, sets...)...)
	logf, err := os.OpenFile(filepath.Join(b.dir, "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		return err
	}
	b.done = make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	return nil
}

func (b *broker) stop(sig syscall.Signal) error {
	_ = b.cmd.Process.Signal(sig)
	select {
	case <-b.done:
		return nil
	case <-time.After(2 * time.Minute):
		_ = b.cmd.Process.Kill()
		return errors.New("broker did not exit within 2 minutes")
	}
}

// waitReady polls Metadata until topic has n partitions, all led.
func (b *broker) waitReady(topic string, n int) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			return errors.New("broker exited")
		default:
		}
		if ready(b.addr, topic, n) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("not ready within 3 minutes")
}

func ready(addr, topic string, n int) bool {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return false
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil || len(t.Partitions) != n {
		return false
	}
	for _, p := range t.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

// row prints a step; the CPU column is the broker's CPU since it started.
func (b *broker) row(n int, step string, wall time.Duration) {
	pid := b.cmd.Process.Pid
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	fmt.Printf("| %d | %s | %.2f | %.2f | %d | %d |\n", n, step, wall.Seconds(), cpuSeconds(pid), len(fds), rssKiB(pid)>>10)
}

func measure(qk, dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	b := &broker{qk: qk, dir: dir, addr: addr}
	if err := b.start(); err != nil {
		return err
	}
	defer func() { _ = b.cmd.Process.Kill() }()
	// Requests sent while the broker starts wait for it: the port is
	// enough.
	for deadline := time.Now().Add(time.Minute); !portOpen(addr); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("broker not listening within a minute")
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("p"))
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(300_000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cpu0 := cpuSeconds(b.cmd.Process.Pid)
	t0 := time.Now()
	resp, err := adm.CreateTopic(ctx, int32(n), 1, nil, "p")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	wall := time.Since(t0)
	pid := b.cmd.Process.Pid
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	fmt.Printf("| %d | CreateTopics | %.2f | %.2f | %d | %d |\n", n, wall.Seconds(), cpuSeconds(pid)-cpu0, len(fds), rssKiB(pid)>>10)
	recs := make([]*kgo.Record, n)
	for p := range recs {
		recs[p] = &kgo.Record{Partition: int32(p), Value: []byte("x")}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	cl.Close()

	for _, how := range []string{"SIGKILL", "SIGTERM"} {
		sig := syscall.SIGKILL
		if how == "SIGTERM" {
			sig = syscall.SIGTERM
		}
		t0 := time.Now()
		if err := b.stop(sig); err != nil {
			return err
		}
		if how == "SIGTERM" {
			fmt.Printf("| %d | clean shutdown | %.2f | | | |\n", n, time.Since(t0).Seconds())
		}
		t0 = time.Now()
		if err := b.start(); err != nil {
			return err
		}
		if err := b.waitReady("p", n); err != nil {
			return err
		}
		b.row(n, "restart after "+how, time.Since(t0))
	}
	return b.stop(syscall.SIGTERM)
}

func portOpen(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// cpuSeconds is a process's user+system CPU time from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100 // USER_HZ
}

func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
