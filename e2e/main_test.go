//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// qkBin is the qk binary every test starts, built once by TestMain so that
// the tests exercise exactly what `go build ./cmd/qk` produces and pay the
// build only once per run.
var qkBin string

// repoRoot is the module root: go test runs a package's tests in the
// package directory, and e2e sits one level below the root.
var repoRoot string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "qk-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	// QK_E2E_BIN runs the tests against a qk built elsewhere (a release
	// build, or one with -race), instead of this checkout's.
	if qkBin = os.Getenv("QK_E2E_BIN"); qkBin != "" {
		return m.Run()
	}
	qkBin = filepath.Join(dir, "qk")
	if err := goBuild(qkBin, "./cmd/qk"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// goBuild builds the package pkg (relative to the module root) into out.
// The build is bounded in time so that a wedged toolchain fails the run
// instead of hanging it.
func goBuild(out, pkg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = repoRoot
	cmd.WaitDelay = 5 * time.Second
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -o %s %s: %v\n%s", out, pkg, err, b)
	}
	return nil
}
