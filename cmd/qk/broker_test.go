package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qk-project/qk/admin"
	"github.com/qk-project/qk/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBrokerPrintConfig(t *testing.T) {
	out, _, err := runQK(t, "broker", "start", "--set", "num.partitions=3", "--print-config")
	require.NoError(t, err)
	require.Contains(t, out, "num.partitions=3 (--set)\n")
	require.Contains(t, out, "listeners=PLAINTEXT://127.0.0.1:9092 (default)\n")
}

func TestBrokerBadValue(t *testing.T) {
	_, _, err := runQK(t, "broker", "start", "--set", "num.io.threads=abc", "--print-config")
	require.ErrorContains(t, err, "num.io.threads=abc")
	_, _, err = runQK(t, "broker", "start", "--log-format", "xml")
	require.ErrorContains(t, err, `invalid --log-format "xml"`)
}

// TestBrokerIgnoresClientEnv: QK_BROKERS and QK_PROFILE, which the client
// commands read, are set in the shell that starts the broker too; the
// broker must neither warn about them as unknown settings nor take them
// as any setting, while its own QK_ variables still apply.
func TestBrokerIgnoresClientEnv(t *testing.T) {
	t.Setenv("QK_BROKERS", "10.0.0.1:9092")
	t.Setenv("QK_PROFILE", "prod")
	t.Setenv("QK_NUM_IO_THREADS", "3")
	out, stderr, err := runQK(t, "broker", "start", "--print-config")
	require.NoError(t, err)
	require.Empty(t, stderr)
	require.Contains(t, out, "num.io.threads=3 (env QK_NUM_IO_THREADS)\n")
	require.NotContains(t, out, "10.0.0.1")
	for _, k := range config.BrokerKeys() {
		require.NotContains(t, admin.ClientEnv, config.EnvName(k.Name), "broker setting %s collides with a client variable", k.Name)
	}
}

// syncBuffer is a bytes.Buffer safe for the broker's log goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBrokerStartStop runs `qk broker start` in-process with JSON logs,
// waits until it answers ApiVersions, stops it through its context (what
// SIGTERM does) and checks the clean-shutdown marker.
func TestBrokerStartStop(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()

	var stderr syncBuffer
	root := newRootCmd(&bytes.Buffer{}, &stderr)
	root.SetArgs([]string{"broker", "start", "--log-format", "json",
		"--set", "listeners=PLAINTEXT://" + addr, "--set", "log.dirs=" + dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, cl)
		rcancel()
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("broker exited early: %v\n%s", err, stderr.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "no ApiVersions answer: %v\n%s", err, stderr.String())
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("broker did not stop")
	}
	_, err = os.Stat(filepath.Join(dir, ".kafka_cleanshutdown"))
	require.NoError(t, err, "clean-shutdown marker")
	require.True(t, strings.Contains(stderr.String(), `"msg":"broker started"`), "JSON log lines:\n%s", stderr.String())
}
