package channel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitNoSenders waits until no sender goroutine of any Manager is left.
func waitNoSenders(t testing.TB) {
	t.Helper()
	var stacks []byte
	waitFor(t, 5*time.Second, "sender goroutines to exit", func() bool {
		buf := make([]byte, 1<<20)
		stacks = buf[:runtime.Stack(buf, true)]
		return !bytes.Contains(stacks, []byte("channel.(*sender).run"))
	})
}

// newManager returns a Manager logging to the test output (and to rec,
// if not nil); it is closed, and its goroutines checked gone, at cleanup.
func newManager(t *testing.T, cfg Config, rec *logRecorder) *Manager {
	t.Helper()
	var h slog.Handler = slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})
	if rec != nil {
		rec.next = h
		h = rec
	}
	cfg.Logger = slog.New(h)
	m := New(cfg)
	t.Cleanup(func() {
		m.Close()
		waitNoSenders(t)
	})
	return m
}

// result is what a callback got.
type result struct {
	resp kmsg.Response
	err  error
}

// sendAsync sends req and returns a channel that gets the callback's
// result; a second call of the callback fails the test.
func sendAsync(t *testing.T, m *Manager, id int32, req kmsg.Request) <-chan result {
	ch := make(chan result, 1)
	var once sync.Once
	m.Send(id, req, func(resp kmsg.Response, err error) {
		called := false
		once.Do(func() { called = true })
		if !called {
			t.Errorf("callback of %s to broker %d called twice", kmsg.NameForKey(req.Key()), id)
			return
		}
		ch <- result{resp, err}
	})
	return ch
}

func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the callback")
		return result{}
	}
}

func metadataRequest(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	if topic != "" {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// logRecorder is a slog.Handler that keeps every record, with the
// attributes of the logger that wrote it, and passes it on to next.
type logRecorder struct {
	next  slog.Handler
	root  *logRecorder
	attrs []slog.Attr

	mu   sync.Mutex
	recs []logLine
}

type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(ctx context.Context, r slog.Record) error {
	l := logLine{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	root := h.rootOf()
	root.mu.Lock()
	root.recs = append(root.recs, l)
	root.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{next: h.next.WithAttrs(attrs), root: h.rootOf(), attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *logRecorder) WithGroup(name string) slog.Handler {
	return &logRecorder{next: h.next.WithGroup(name), root: h.rootOf(), attrs: h.attrs}
}

func (h *logRecorder) rootOf() *logRecorder {
	if h.root != nil {
		return h.root
	}
	return h
}

// lines returns the records at level.
func (h *logRecorder) lines(level slog.Level) []logLine {
	root := h.rootOf()
	root.mu.Lock()
	defer root.mu.Unlock()
	var out []logLine
	for _, l := range root.recs {
		if l.level == level {
			out = append(out, l)
		}
	}
	return out
}

// testServer is a minimal Kafka broker for the senders' tests: it reads
// request frames with kmsg and answers ApiVersions and Metadata itself,
// unless hook takes the request. Every request read is recorded.
type testServer struct {
	t    *testing.T
	ln   net.Listener
	addr string

	// apiKeys are advertised by ApiVersions; apiVersionsMax is the highest
	// ApiVersions version understood (above: UNSUPPORTED_VERSION at v0,
	// listing only ApiVersions if kip511, else no key).
	apiKeys        []kmsg.ApiVersionsResponseApiKey
	apiVersionsMax int16
	kip511         bool
	// hook, if set, sees each request first; true means it dealt with it.
	hook func(sc *srvConn, r *srvReq) bool

	mu    sync.Mutex
	reqs  []srvReq
	conns map[*srvConn]struct{}
	n     int // connections accepted
	wg    sync.WaitGroup
}

// srvReq is one request the server read.
type srvReq struct {
	conn     int // 1 for the first connection
	corrID   int32
	key      int16
	version  int16
	clientID string
	req      kmsg.Request
}

type srvConn struct {
	s  *testServer
	nc net.Conn
	n  int
}

// defaultAPIKeys advertises ApiVersions v0-3 and Metadata v0-kmsg's max.
func defaultAPIKeys() []kmsg.ApiVersionsResponseApiKey {
	return []kmsg.ApiVersionsResponseApiKey{
		{ApiKey: 18, MinVersion: 0, MaxVersion: 3},
		{ApiKey: 3, MinVersion: 0, MaxVersion: kmsg.NewPtrMetadataRequest().MaxVersion()},
	}
}

// newTestServer returns a server with the default keys, not yet serving.
func newTestServer(t *testing.T) *testServer {
	return &testServer{t: t, apiKeys: defaultAPIKeys(), apiVersionsMax: 3, conns: map[*srvConn]struct{}{}}
}

// start serves on ln, or on a new port if ln is nil.
func (s *testServer) start(ln net.Listener) *testServer {
	s.t.Helper()
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(s.t, err)
	}
	s.ln, s.addr = ln, ln.Addr().String()
	s.wg.Add(1)
	go s.accept()
	s.t.Cleanup(s.stop)
	return s
}

func (s *testServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	for sc := range s.conns {
		sc.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *testServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.n++
		sc := &srvConn{s: s, nc: nc, n: s.n}
		s.conns[sc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go sc.serve()
	}
}

// received returns the requests read so far with key (-1: all).
func (s *testServer) received(key int16) []srvReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []srvReq
	for _, r := range s.reqs {
		if key < 0 || r.key == key {
			out = append(out, r)
		}
	}
	return out
}

func (s *testServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (sc *srvConn) serve() {
	defer sc.s.wg.Done()
	defer func() {
		sc.nc.Close()
		sc.s.mu.Lock()
		delete(sc.s.conns, sc)
		sc.s.mu.Unlock()
	}()
	for {
		r, err := sc.read()
		if err != nil {
			return
		}
		sc.s.mu.Lock()
		sc.s.reqs = append(sc.s.reqs, *r)
		sc.s.mu.Unlock()
		if sc.s.hook != nil && sc.s.hook(sc, r) {
			continue
		}
		switch req := r.req.(type) {
		case *kmsg.ApiVersionsRequest:
			resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			if r.version > sc.s.apiVersionsMax {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				if sc.s.kip511 {
					resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: sc.s.apiVersionsMax}}
				}
				sc.respondAt(r, resp, 0)
				continue
			}
			resp.ApiKeys = sc.s.apiKeys
			sc.respond(r, resp)
		case *kmsg.MetadataRequest:
			sc.respond(r, metadataResponse(req, 7))
		default:
			return // as Kafka does with a request it cannot serve
		}
	}
}

// metadataResponse names one broker, id, and echoes the topics asked for
// (so tests can tell responses apart).
func metadataResponse(req *kmsg.MetadataRequest, id int32) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = id, "127.0.0.1", 9092
	resp.Brokers = append(resp.Brokers, b)
	resp.ControllerID = id
	for _, rt := range req.Topics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = rt.Topic
		t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// read reads and decodes one request frame.
func (sc *srvConn) read() (*srvReq, error) {
	var size [4]byte
	if _, err := io.ReadFull(sc.nc, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(sc.nc, buf); err != nil {
		return nil, err
	}
	if len(buf) < 10 {
		return nil, errors.New("short request")
	}
	r := &srvReq{
		conn:    sc.n,
		key:     int16(binary.BigEndian.Uint16(buf)),
		version: int16(binary.BigEndian.Uint16(buf[2:])),
		corrID:  int32(binary.BigEndian.Uint32(buf[4:])),
	}
	rest := buf[8:]
	if l := int16(binary.BigEndian.Uint16(rest)); l >= 0 {
		if int(l) > len(rest)-2 {
			return nil, errors.New("bad client id")
		}
		r.clientID = string(rest[2 : 2+l])
		rest = rest[2+l:]
	} else {
		rest = rest[2:]
	}
	r.req = kmsg.RequestForKey(r.key)
	if r.req == nil {
		return nil, errors.New("unknown key " + strconv.Itoa(int(r.key)))
	}
	r.req.SetVersion(r.version)
	if r.req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}
	if err := r.req.ReadFrom(rest); err != nil {
		return nil, err
	}
	return r, nil
}

func (sc *srvConn) respond(r *srvReq, resp kmsg.Response) { sc.write(frame(r, resp, r.version)) }

func (sc *srvConn) respondAt(r *srvReq, resp kmsg.Response, version int16) {
	sc.write(frame(r, resp, version))
}

func (sc *srvConn) write(b []byte) { _, _ = sc.nc.Write(b) }

// frame encodes resp at version as the answer to r: a size, the
// correlation id, the header's empty tagged fields if r is flexible
// (except for ApiVersions) and the body.
func frame(r *srvReq, resp kmsg.Response, version int16) []byte {
	resp.SetVersion(version)
	b := binary.BigEndian.AppendUint32(make([]byte, 4, 256), uint32(r.corrID))
	if r.req.IsFlexible() && r.key != 18 {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}
