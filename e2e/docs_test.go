//go:build integration

package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qk-project/qk/internal/runnable"
)

// docsDir is the tree whose README.md and docs/*.md TestDocsRunnable
// runs; empty is the repository. -docs.dir testdata/runnable runs the
// fixture, which checks the runner itself.
var docsDir = flag.String("docs.dir", "", "run the runnable blocks of this tree instead of the repository's")

// blockTimeout bounds one runnable block: a block that waits for ever (a
// consumer without -e) fails instead of hanging the run.
const blockTimeout = 60 * time.Second

// TestDocsRunnable runs every runnable block (internal/runnable: a ```sh
// block right after <!-- runnable -->) of README.md and docs/*.md against
// a real `qk broker start`, so the commands the documentation shows work
// as shown. Each file gets its own broker (embedded defaults on free
// ports, a fresh data dir) and working directory, and its blocks run in
// order with `bash -euo pipefail`, later blocks seeing what earlier ones
// left (topics, files). The environment has QK_BROKERS (the broker's
// host:port), QK_HTTP (its qk.http.listener host:port), PATH starting with
// the directory of the qk under test and XDG_CONFIG_HOME inside the
// working directory (qk.yaml profiles are the blocks' own, not the
// developer's). The working directory holds bin/qk, so a block may say
// `qk ...` or `bin/qk ...` as the README's build instructions do. A
// failing block is reported as file:line with its output and ends its
// file's run.
func TestDocsRunnable(t *testing.T) {
	root := *docsDir
	if root == "" {
		root = repoRoot
	}
	blocks, err := runnable.Find(root)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string][]runnable.Block{}
	var files []string
	for _, b := range blocks {
		if byFile[b.File] == nil {
			files = append(files, b.File)
		}
		byFile[b.File] = append(byFile[b.File], b)
	}
	if len(byFile["README.md"]) == 0 {
		t.Fatalf("no runnable block in %s: mark the README's commands with a %q line right before their ```sh fence",
			filepath.Join(root, "README.md"), runnable.Marker)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			httpAddr := freeAddr(t)
			b := startBroker(t, withSet("qk.http.listener="+httpAddr))
			work := docsWorkDir(t)
			env := append(childEnv(),
				"QK_BROKERS="+b.addr,
				"QK_HTTP="+httpAddr,
				"PATH="+filepath.Join(work, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
				// qk's profiles (qk.yaml) of the blocks, not the developer's.
				"XDG_CONFIG_HOME="+filepath.Join(work, ".config"),
			)
			scripts := t.TempDir()
			for _, blk := range byFile[f] {
				out, err := runBlock(t.Context(), blk, work, scripts, env, blockTimeout)
				if err != nil {
					t.Fatalf("%s: runnable block failed: %v\n--- block\n%s--- output\n%s", blk, err, blk.Code, tail(string(out), 16<<10))
				}
				t.Logf("%s: ok", blk)
			}
		})
	}
}

// docsWorkDir makes a working directory for one file's blocks, holding
// bin/qk, a symbolic link to the qk under test.
func docsWorkDir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.Abs(qkBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "qk")); err != nil {
		t.Fatal(err)
	}
	return work
}

// runBlock runs one block with bash -euo pipefail in dir and returns its
// output (stdout and stderr together, as a reader of the docs sees it).
// The block runs in a process group of its own, killed when the block
// ends or its timeout passes, so a command it left in the background
// cannot outlive it.
func runBlock(ctx context.Context, blk runnable.Block, dir, scripts string, env []string, timeout time.Duration) ([]byte, error) {
	script := filepath.Join(scripts, fmt.Sprintf("%s-%d.sh", strings.NewReplacer("/", "_", ".", "_").Replace(blk.File), blk.Line))
	if err := os.WriteFile(script, []byte(blk.Code), 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", script)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil // /dev/null: a block must not wait for input
	// A file, not a pipe: a command the block leaves in the background
	// keeps a pipe open, and Wait would wait for it.
	out, err := os.Create(script + ".out")
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	err = cmd.Wait()
	// Whatever the block started in the background goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	output, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		return nil, rerr
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return output, fmt.Errorf("not done within %v: %v", timeout, err)
	}
	return output, err
}

// TestDocsRunnerFails: the runner reports a failing command, an unset
// variable and a failure inside a pipeline (bash -euo pipefail), and stops
// a block that runs past its timeout, background commands included.
func TestDocsRunnerFails(t *testing.T) {
	dir, scripts := t.TempDir(), t.TempDir()
	env := childEnv()
	for name, code := range map[string]string{
		"command":  "echo before\nfalse\necho after\n",
		"unset":    "echo before\necho \"$QK_NOT_SET\"\necho after\n",
		"pipeline": "echo before\nfalse | cat\necho after\n",
	} {
		t.Run(name, func(t *testing.T) {
			out, err := runBlock(t.Context(), runnable.Block{File: "x.md", Line: 1, Code: code}, dir, scripts, env, blockTimeout)
			if err == nil {
				t.Fatalf("block succeeded, want a failure; output:\n%s", out)
			}
			if got := string(out); !strings.Contains(got, "before") || strings.Contains(got, "after") {
				t.Fatalf("output %q: want the lines before the failure only", got)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		out, err := runBlock(t.Context(), runnable.Block{File: "x.md", Line: 1, Code: "sleep 300 &\necho $! > bg.pid\necho started\nwait\n"},
			dir, scripts, env, time.Second)
		if err == nil || !strings.Contains(err.Error(), "not done within 1s") {
			t.Fatalf("err %v, want a timeout; output:\n%s", err, out)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("a 1 s block took %v to stop", d)
		}
		if !strings.Contains(string(out), "started") {
			t.Fatalf("output %q: want what the block printed before its timeout", out)
		}
		waitGone(t, filepath.Join(dir, "bg.pid"))
	})
	t.Run("background", func(t *testing.T) {
		// A block that succeeds and leaves a command running returns at
		// once, and the command is stopped.
		start := time.Now()
		out, err := runBlock(t.Context(), runnable.Block{File: "x.md", Line: 1, Code: "sleep 300 &\necho $! > bg2.pid\n"},
			dir, scripts, env, blockTimeout)
		if err != nil {
			t.Fatalf("%v; output:\n%s", err, out)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("the block took %v", d)
		}
		waitGone(t, filepath.Join(dir, "bg2.pid"))
	})
}

// waitGone waits until the process whose PID is in pidFile no longer
// exists.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("background process %d still running 10 s after its block ended", pid)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}
