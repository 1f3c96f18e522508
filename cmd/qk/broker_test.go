package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
		"--set", "listeners=PLAINTEXT://" + addr, "--set", "log.dirs=" + dir, "--set", "qk.http.listener=127.0.0.1:0"})
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

// TestBrokerLocalClusterPrintConfig: one block per broker, each headed by
// a comment, with the derived id, ports and dirs marked as such and the
// other settings shared.
func TestBrokerLocalClusterPrintConfig(t *testing.T) {
	out, _, err := runQK(t, "broker", "start", "--local-cluster", "3", "--set", "num.partitions=3", "--print-config")
	require.NoError(t, err)
	blocks := strings.Split(out, "\n\n")
	require.Len(t, blocks, 3)
	for i, b := range blocks {
		id := strconv.Itoa(i)
		require.True(t, strings.HasPrefix(b, "# broker "+id+" of --local-cluster 3\n"), b[:40])
		require.Contains(t, b, "\nbroker.id="+id+" (--local-cluster)\n")
		require.Contains(t, b, "\nlisteners=PLAINTEXT://127.0.0.1:909"+strconv.Itoa(2+i)+" (--local-cluster)\n")
		require.Contains(t, b, "\nqk.http.listener=127.0.0.1:964"+strconv.Itoa(4+i)+" (--local-cluster)\n")
		require.Contains(t, b, "\nlog.dirs="+filepath.Join("qk-data", "broker-"+id)+" (--local-cluster)\n")
		require.Contains(t, b, "\nnum.partitions=3 (--set)\n")
		require.Contains(t, b, "\ndefault.replication.factor=1 (default)\n")
		require.Contains(t, b, "\noffsets.topic.replication.factor=3 (default)\n")
	}
}

func TestBrokerLocalClusterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"zero", []string{"--local-cluster", "0"}, "--local-cluster 0: want 1..16 brokers"},
		{"too many", []string{"--local-cluster", "100"}, "--local-cluster 100: want 1..16 brokers"},
		{"zookeeper flag", []string{"--local-cluster", "3", "--zookeeper", "127.0.0.1:2181"}, "--zookeeper and --local-cluster exclude each other"},
		{"zookeeper setting", []string{"--local-cluster", "3", "--set", "zookeeper.connect=127.0.0.1:2181"}, "zookeeper.connect=127.0.0.1:2181 (from --set)"},
		{"broker.id", []string{"--local-cluster", "3", "--set", "broker.id=5"}, "broker.id=5 is set (from --set): remove it"},
		{"ports overflow", []string{"--local-cluster", "3", "--set", "listeners=PLAINTEXT://127.0.0.1:65535"}, "would run past 65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runQK(t, append([]string{"broker", "start", "--print-config"}, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestBrokerModesKeepApart: a local cluster refuses a single broker's log
// dir, and a single broker a local cluster's parent dir, before either
// opens the other's metadata store.
func TestBrokerModesKeepApart(t *testing.T) {
	single, cluster := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(single, "meta.properties"), []byte("version=0\nbroker.id=0\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(cluster, "broker-0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cluster, "broker-0", "meta.properties"), []byte("version=0\nbroker.id=0\n"), 0o644))

	_, _, err := runQK(t, "broker", "start", "--local-cluster", "2", "--set", "log.dirs="+single,
		"--set", "listeners=PLAINTEXT://127.0.0.1:0", "--set", "qk.http.listener=")
	require.ErrorContains(t, err, single+" is a single-node broker's log dir (it has meta.properties)")
	_, _, err = runQK(t, "broker", "start", "--set", "log.dirs="+cluster,
		"--set", "listeners=PLAINTEXT://127.0.0.1:0", "--set", "qk.http.listener=")
	require.ErrorContains(t, err, cluster+" holds a local cluster")
	_, err = os.Stat(filepath.Join(cluster, "__qk_metadata"))
	require.ErrorIs(t, err, os.ErrNotExist, "the single broker opened no metadata store")
}

// TestBrokerHTTPListenerInUse: a second broker on a host whose
// qk.http.listener is taken (by the first broker, at the default
// 127.0.0.1:9644) is refused with the fix in the message.
func TestBrokerHTTPListenerInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	taken := ln.Addr().String()
	_, _, err = runQK(t, "broker", "start", "--set", "log.dirs="+t.TempDir(),
		"--set", "listeners=PLAINTEXT://127.0.0.1:0", "--set", "qk.http.listener="+taken)
	require.ErrorContains(t, err, "qk.http.listener="+taken)
	require.ErrorContains(t, err, "another broker on this host? give each broker its own, e.g. --set qk.http.listener=127.0.0.1:")
	require.ErrorContains(t, err, "or turn it off with --set qk.http.listener=")
}
