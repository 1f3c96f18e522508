package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

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
func startQK(ctx context.Context, qk string, sets []string) (*benchproc.Proc, error) {
	dir, err := os.MkdirTemp("", "qk-bench-")
	if err != nil {
		return nil, err
	}
	addr, err := benchproc.FreeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := []string{"broker", "start",
		"--set", "listeners=PLAINTEXT://" + addr,
		"--set", "log.dirs=" + filepath.Join(dir, "data"),
		"--set", "log.segment.delete.delay.ms=0",
		"--set", "group.initial.rebalance.delay.ms=0",
		"--set", "qk.http.listener=127.0.0.1:0", // never collide on 9644
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return launchIn(ctx, "qk", qk, dir, args, addr)
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
func startKfake(ctx context.Context, name, bin string, spec kfakeSpec) (*benchproc.Proc, error) {
	dir, err := os.MkdirTemp("", "qk-bench-kfake-")
	if err != nil {
		return nil, err
	}
	return launchIn(ctx, name, bin, dir, spec.args(filepath.Join(dir, "data")), "")
}

// launchIn starts a broker in dir, a directory of its own (its data and
// its log), and removes dir should the broker not start.
func launchIn(ctx context.Context, name, bin, dir string, args []string, addr string) (*benchproc.Proc, error) {
	p, err := benchproc.Launch(ctx, name, bin, dir, args, addr)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// stopProc stops p (SIGTERM, SIGKILL after 30 s) and removes its
// directory.
func stopProc(p *benchproc.Proc) error {
	defer os.RemoveAll(p.Dir)
	return p.Stop(30 * time.Second)
}
