//go:build linux

package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: "+format, append([]any{timeout}, args...)...)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkGoroutines fails the test if, after its other cleanups (registered
// later, so run earlier) have run, more goroutines are alive than at the
// start.
func checkGoroutines(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d running, %d at start\n%s", runtime.NumGoroutine(), base, buf)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// logBuffer keeps the log output of a test for assertions, and also writes
// it to the test's output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out io.Writer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	return l.out.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// lines returns the log lines that contain every one of subs.
func (l *logBuffer) lines(subs ...string) []string {
	var out []string
	for line := range strings.Lines(l.String()) {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

type testServer struct {
	*Server
	logs *logBuffer
	addr string
}

// startServer starts a server on 127.0.0.1:0 with cfg (Listeners and Logger
// filled in when empty) and shuts it down when the test ends.
func startServer(t *testing.T, cfg Config, h Handler) *testServer {
	t.Helper()
	checkGoroutines(t)
	logs := &logBuffer{out: t.Output()}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if len(cfg.Listeners) == 0 {
		cfg.Listeners = []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1"}}
	}
	s, err := New(cfg, h)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	return &testServer{Server: s, logs: logs, addr: s.Addrs()[0].String()}
}

// echo answers every request with its whole frame, referencing the request's
// buffer (which the network layer must keep until the response is written).
var echo = HandlerFunc(func(r *Request) { r.Respond(&Response{Parts: []Part{{Bytes: r.Frame}}}) })

// client is a raw Kafka-framing client.
type client struct {
	t *testing.T
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &client{t: t, Conn: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// frame encodes a request with header v1 and its size prefix.
func frame(apiKey, apiVersion int16, corr int32, clientID *string, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(apiKey))
	b = binary.BigEndian.AppendUint16(b, uint16(apiVersion))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func ptr[T any](v T) *T { return &v }

func (c *client) send(b []byte) {
	c.t.Helper()
	require.NoError(c.t, c.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := c.Write(b)
	require.NoError(c.t, err)
}

// readResponse reads one size-prefixed response.
func (c *client) readResponse() []byte {
	c.t.Helper()
	b, err := c.tryReadResponse(10 * time.Second)
	require.NoError(c.t, err)
	return b
}

func (c *client) tryReadResponse(timeout time.Duration) ([]byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.r, b)
	return b, err
}

// corrOf returns the correlation id of an echoed request frame.
func corrOf(echoed []byte) int32 { return int32(binary.BigEndian.Uint32(echoed[4:])) }

// roundTrip sends one request and checks its echo.
func (c *client) roundTrip(corr int32, body []byte) {
	c.t.Helper()
	f := frame(18, 3, corr, ptr("rt"), body)
	c.send(f)
	require.Equal(c.t, f[4:], c.readResponse())
}

// expectClosed waits for the server to close the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	require.NoError(c.t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.Copy(io.Discard, c.r)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		c.t.Fatalf("want the connection closed by the server, got %v", err)
	}
}

// openConns is the number of open connections.
func (s *testServer) openConns() int { return len(s.Stats().Connections) }

// logger returns a logger writing to the test's output (shown on failure
// or with -v), for tests that build their Server by hand.
func (*testServer) logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

func openFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// noFd hides a file's descriptor, like a vfs.Mem file, to take the copy path.
type noFd struct{ f *os.File }

func (n noFd) ReadAt(b []byte, off int64) (int, error) { return n.f.ReadAt(b, off) }
func (noFd) Fd() uintptr                               { return ^uintptr(0) }

// gate blocks handlers until opened; opened at the latest when the test
// ends (register it after startServer so it opens before Shutdown runs).
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
func (g *gate) wait() { <-g.ch }
