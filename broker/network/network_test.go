//go:build linux

package network

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRoundTripHeaderFields(t *testing.T) {
	got := make(chan *Request, 1)
	s := startServer(t, Config{Listeners: []Listener{{Name: "INTERNAL", Host: "127.0.0.1"}}},
		HandlerFunc(func(r *Request) {
			got <- &Request{
				ApiKey: r.ApiKey, ApiVersion: r.ApiVersion, CorrelationID: r.CorrelationID, ClientID: r.ClientID,
				Frame: bytes.Clone(r.Frame), HeaderSize: r.HeaderSize, Listener: r.Listener, ConnID: r.ConnID,
				RemoteAddr: r.RemoteAddr, LocalAddr: r.LocalAddr, ReceivedAt: r.ReceivedAt,
			}
			echo(r)
		}))
	c := dial(t, s.addr)

	tests := []struct {
		name       string
		frame      []byte
		key, ver   int16
		corr       int32
		clientID   *string
		headerSize int
	}{
		{"v1 client id", frame(3, 12, 7, ptr("qk-client"), []byte("body")), 3, 12, 7, ptr("qk-client"), 19},
		{"null client id", frame(0, 9, -5, nil, nil), 0, 9, -5, nil, 10},
		{"empty client id", frame(1, 4, 1<<30, ptr(""), []byte{1}), 1, 4, 1 << 30, ptr(""), 10},
		{"header v0 (ControlledShutdown v0)", []byte{0, 0, 0, 8, 0, 7, 0, 0, 0, 0, 0, 42}, 7, 0, 42, nil, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.send(tt.frame)
			require.Equal(t, tt.frame[4:], c.readResponse())
			r := <-got
			require.Equal(t, tt.key, r.ApiKey)
			require.Equal(t, tt.ver, r.ApiVersion)
			require.Equal(t, tt.corr, r.CorrelationID)
			require.Equal(t, tt.clientID, r.ClientID)
			require.Equal(t, tt.headerSize, r.HeaderSize)
			require.Equal(t, tt.frame[4:], r.Frame)
			require.Equal(t, "INTERNAL", r.Listener)
			require.Equal(t, c.LocalAddr().String(), r.RemoteAddr.String())
			require.Equal(t, s.addr, r.LocalAddr.String())
			require.False(t, r.ReceivedAt.IsZero())
			require.NotZero(t, r.ConnID)
		})
	}
}

// TestPipelinedOrder pipelines requests on many connections while handlers
// finish them in random order, on other goroutines; every connection must
// get its responses in request order, byte for byte.
func TestPipelinedOrder(t *testing.T) {
	const conns, perConn = 24, 150
	s := startServer(t, Config{NumNetworkThreads: 2, NumIOThreads: 4, QueuedMaxRequests: 16},
		HandlerFunc(func(r *Request) {
			go func() {
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				echo(r)
			}()
		}))
	var wg sync.WaitGroup
	for i := range conns {
		c := dial(t, s.addr)
		frames := make([][]byte, perConn)
		for j := range frames {
			body := make([]byte, rand.IntN(3000))
			for k := range body {
				body[k] = byte(i + j + k)
			}
			frames[j] = frame(0, 9, int32(j), ptr(fmt.Sprintf("client-%d", i)), body)
		}
		wg.Go(func() {
			for _, f := range frames {
				if _, err := c.Write(f); err != nil {
					t.Errorf("conn %d: write: %v", i, err)
					return
				}
			}
		})
		wg.Go(func() {
			for j, f := range frames {
				got, err := c.tryReadResponse(20 * time.Second)
				if err != nil {
					t.Errorf("conn %d: response %d: %v", i, j, err)
					return
				}
				if !bytes.Equal(got, f[4:]) {
					t.Errorf("conn %d: response %d: got correlation id %d (%d bytes), want %d (%d bytes)",
						i, j, corrOf(got), len(got), j, len(f)-4)
					return
				}
			}
		})
	}
	wg.Wait()
	// The last byte out can reach a client before its count is added.
	waitFor(t, 5*time.Second, func() bool {
		st := s.Stats()
		return st.BytesOut == st.BytesIn
	}, "bytes out equal bytes in")
	st := s.Stats()
	require.EqualValues(t, conns*perConn, st.Requests)
	require.Len(t, st.Connections, conns)
	for _, cs := range st.Connections {
		require.EqualValues(t, perConn, cs.Requests)
		require.Equal(t, cs.BytesIn, cs.BytesOut, "echo: bytes out equal bytes in")
	}
}

// TestBadInput sends hostile bytes on one connection while a second client
// keeps talking: only the bad connection is closed, with a log line.
func TestBadInput(t *testing.T) {
	const limit = 4096
	s := startServer(t, Config{SocketRequestMaxBytes: limit, NumNetworkThreads: 1}, echo)

	good := dial(t, s.addr)
	stop := make(chan struct{})
	var goodTrips atomic.Int64
	var bg sync.WaitGroup
	bg.Go(func() {
		for i := int32(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			good.roundTrip(i, bytes.Repeat([]byte{byte(i)}, int(i%2000)))
			goodTrips.Add(1)
		}
	})
	defer func() { close(stop); bg.Wait() }()

	size := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	tests := []struct {
		name  string
		send  []byte
		abort bool     // close the client side right after sending
		rst   bool     // ... with a reset
		log   []string // substrings of the expected Warn line
	}{
		{name: "oversize", send: size(limit + 1), log: []string{"level=WARN", "size=4097", "limit=4096", "remote="}},
		{name: "negative size", send: size(-1), log: []string{"level=WARN", "size=-1", "limit=4096"}},
		{name: "min int32 size", send: size(-1 << 31), log: []string{"level=WARN", "size=-2147483648"}},
		{name: "zero size", send: size(0), log: []string{"level=WARN", "request shorter than a request header", "size=0"}},
		{name: "3-byte frame", send: append(size(3), 1, 2, 3), log: []string{"level=WARN", "size=3"}},
		{name: "garbage", send: []byte("GET / HTTP/1.1\r\nHost: qk\r\n\r\n"), log: []string{"level=WARN", "size=1195725856"}},
		{name: "no client id", send: append(size(9), 0, 3, 0, 1, 0, 0, 0, 1, 0), log: []string{"malformed request header", "ends before its client id"}},
		{name: "client id overruns frame", send: append(size(12), 0, 3, 0, 1, 0, 0, 0, 1, 0, 9, 'a', 'b'), log: []string{"malformed request header", "overruns"}},
		{name: "client id length -2", send: append(size(10), 0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfe), log: []string{"malformed request header", "negative"}},
		{name: "close mid-size", send: []byte{0, 0}, abort: true},
		{name: "close mid-frame", send: append(size(100), make([]byte, 20)...), abort: true},
		{name: "reset mid-frame", send: append(size(3000), make([]byte, 1000)...), abort: true, rst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Stats().ConnectionsClosed
			trips := goodTrips.Load()
			bad := dial(t, s.addr)
			// Make sure the server has adopted bad before it misbehaves.
			bad.roundTrip(1, nil)
			if tt.rst {
				require.NoError(t, bad.Conn.(*net.TCPConn).SetLinger(0))
			}
			bad.send(tt.send)
			if tt.abort {
				bad.Close()
			} else {
				bad.expectClosed()
			}
			waitFor(t, 10*time.Second, func() bool { return s.Stats().ConnectionsClosed == before+1 }, "server closes the connection")
			if tt.log != nil {
				require.Len(t, s.logs.lines(append([]string{"component=network", "listener=PLAINTEXT"}, tt.log...)...), 1, s.logs.String())
			}
			waitFor(t, 10*time.Second, func() bool { return goodTrips.Load() > trips+2 }, "the good client keeps talking")
			require.Equal(t, 1, s.openConns())
		})
	}
}

// TestGarbageConnections throws random bytes from many connections at once.
func TestGarbageConnections(t *testing.T) {
	s := startServer(t, Config{SocketRequestMaxBytes: 1 << 16, NumNetworkThreads: 2}, echo)
	good := dial(t, s.addr)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			b := make([]byte, 1+rng.IntN(1<<14))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			if i%2 == 0 {
				// A plausible size prefix, then garbage.
				binary.BigEndian.PutUint32(b, uint32(rng.IntN(1<<16)))
			}
			c.Write(b)
			// Half-close: the server closes on a protocol error or at EOF.
			c.(*net.TCPConn).CloseWrite()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("garbage client %d: %v", i, err)
			}
		})
		good.roundTrip(int32(i), []byte("still here"))
	}
	wg.Wait()
	good.roundTrip(99, []byte("still here"))
	waitFor(t, 5*time.Second, func() bool { return s.openConns() == 1 }, "garbage connections closed")
}

// TestAbruptCloseMidResponse resets a connection while an 8 MiB response
// is being written to it.
func TestAbruptCloseMidResponse(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 512<<10)
	dropped := make(chan error, 1)
	s := startServer(t, Config{SocketSendBufferBytes: 16 << 10},
		HandlerFunc(func(r *Request) {
			if r.ApiKey != 1 {
				echo(r)
				return
			}
			r.Respond(&Response{Parts: []Part{{Bytes: big}}, Done: func(err error) { dropped <- err }})
		}))
	good := dial(t, s.addr)
	good.roundTrip(0, nil)
	bad := dial(t, s.addr)
	require.NoError(t, bad.Conn.(*net.TCPConn).SetReadBuffer(16<<10))
	bad.send(frame(1, 0, 1, nil, nil))
	_, err := bad.r.Peek(64 << 10)
	require.NoError(t, err)
	require.NoError(t, bad.Conn.(*net.TCPConn).SetLinger(0))
	bad.Close()
	select {
	case err := <-dropped:
		require.ErrorIs(t, err, ErrConnectionClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("response not dropped")
	}
	waitFor(t, 10*time.Second, func() bool { return s.openConns() == 1 }, "bad connection closed")
	for i := range 10 {
		good.roundTrip(int32(i), []byte("after"))
	}
}

// TestQueueFullPushback blocks the only handler: with QueuedMaxRequests=1
// the processor stops reading every socket, the clients' writes stall, and
// the number of requests read stays at handler + queue + one parked request,
// however much the clients send. Unblocked, everything drains in order.
func TestQueueFullPushback(t *testing.T) {
	const clients, perClient, bodySize = 4, 64, 16 << 10
	release := newGate()
	var handled atomic.Int64
	s := startServer(t, Config{
		NumNetworkThreads:        1,
		NumIOThreads:             1,
		QueuedMaxRequests:        1,
		SocketReceiveBufferBytes: 4096,
		// Shorter than the stall: connections muted with bytes waiting are
		// not idle. Long enough that a client goroutine scheduled late on
		// a loaded machine has started writing before the first idle check.
		ConnectionsMaxIdle: 200 * time.Millisecond,
	}, HandlerFunc(func(r *Request) {
		handled.Add(1)
		release.wait()
		echo(r)
	}))
	t.Cleanup(release.open)

	type sender struct {
		c    *client
		data []byte
		sent int
	}
	senders := make([]*sender, clients)
	var wg sync.WaitGroup
	for i := range senders {
		// The data is built before dialing so the write starts right
		// after the connection is accepted.
		var data []byte
		for j := range perClient {
			data = append(data, frame(0, 9, int32(j), ptr("p"), bytes.Repeat([]byte{byte(i)}, bodySize))...)
		}
		c := dial(t, s.addr)
		require.NoError(t, c.Conn.(*net.TCPConn).SetWriteBuffer(4096))
		sd := &sender{c: c, data: data}
		senders[i] = sd
		wg.Go(func() {
			// The server stops reading, so writing 1 MiB must stall.
			sd.c.SetWriteDeadline(time.Now().Add(1500 * time.Millisecond))
			n, err := sd.c.Write(sd.data)
			sd.sent = n
			if !errors.Is(err, syscall.EAGAIN) && !isTimeout(err) {
				t.Errorf("client %d: write of %d bytes: want a timeout, got n=%d err=%v", i, len(sd.data), n, err)
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	require.EqualValues(t, 1, handled.Load(), "Handle calls while the handler is blocked")
	require.LessOrEqual(t, st.Requests, uint64(3), "requests read: handler + queue + parked")
	require.LessOrEqual(t, st.BytesIn, uint64(clients*(readBufSize+4096)+3*bodySize), "bytes read stay bounded")
	require.Equal(t, 1, st.RequestQueueSize)
	require.Len(t, st.Connections, clients, "no connection closed as idle")

	release.open()
	for i, sd := range senders {
		wg.Go(func() {
			sd.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if _, err := sd.c.Write(sd.data[sd.sent:]); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
		})
		wg.Go(func() {
			for j := range perClient {
				got, err := sd.c.tryReadResponse(20 * time.Second)
				if err != nil {
					t.Errorf("client %d response %d: %v", i, j, err)
					return
				}
				if corrOf(got) != int32(j) || len(got) != bodySize+11 || got[len(got)-1] != byte(i) {
					t.Errorf("client %d response %d: got correlation id %d, %d bytes", i, j, corrOf(got), len(got))
					return
				}
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, clients*perClient, handled.Load())
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestInFlightBound holds every request: one connection gets exactly
// MaxInFlightPerConnection requests read, and each response written lets
// exactly one more in.
func TestInFlightBound(t *testing.T) {
	const bound, total = 4, 40
	held := make(chan *Request, total)
	s := startServer(t, Config{NumNetworkThreads: 1, MaxInFlightPerConnection: bound},
		HandlerFunc(func(r *Request) {
			if r.ApiKey == 18 {
				echo(r) // barrier client
				return
			}
			held <- r
		}))
	c := dial(t, s.addr)
	for j := range total {
		c.send(frame(0, 9, int32(j), nil, []byte("x")))
	}
	barrier := dial(t, s.addr)
	var got []*Request
	for len(got) < total {
		want := min(bound, total-len(got))
		waitFor(t, 10*time.Second, func() bool { return len(held) == want }, "%d requests reach the handler", want)
		// Round trips on another connection of the same processor: any
		// readable, unmuted connection would have been read meanwhile.
		barrier.roundTrip(0, nil)
		barrier.roundTrip(1, nil)
		require.Equal(t, want, len(held), "requests in flight")
		r := <-held
		got = append(got, r)
		r.Respond(&Response{Parts: []Part{{Bytes: r.Frame}}})
		resp := c.readResponse()
		require.Equal(t, int32(len(got)-1), corrOf(resp))
	}
}

// TestSendfile answers with a header and an 8 MiB file region at an odd
// offset through a small send buffer, forcing partial sends and EAGAIN.
func TestSendfile(t *testing.T) {
	const size = 8 << 20
	path := t.TempDir() + "/segment.log"
	content := make([]byte, size+10000)
	for i := range content {
		content[i] = byte(rand.Uint32())
	}
	require.NoError(t, writeFile(path, content))
	f := openFile(t, path)

	tests := []struct {
		name  string
		file  File
		parts func(hdr []byte) []Part
		want  func(hdr []byte) []byte
	}{
		{
			name: "header and region",
			file: f,
			parts: func(hdr []byte) []Part {
				return []Part{{Bytes: hdr}, {Region: FileRegion{File: f, Offset: 4097, Length: size}}}
			},
			want: func(hdr []byte) []byte { return append(bytes.Clone(hdr), content[4097:4097+size]...) },
		},
		{
			name: "interleaved bytes and regions",
			file: f,
			parts: func(hdr []byte) []Part {
				return []Part{
					{Bytes: hdr},
					{Region: FileRegion{File: f, Offset: 0, Length: 100}},
					{Bytes: []byte("mid")},
					{Region: FileRegion{File: f, Offset: 5000, Length: 1 << 20}},
					{Region: FileRegion{File: f, Offset: 7, Length: 0}},
					{Bytes: nil},
					{Region: FileRegion{File: f, Offset: size, Length: 10000}},
				}
			},
			want: func(hdr []byte) []byte {
				var b []byte
				b = append(b, hdr...)
				b = append(b, content[:100]...)
				b = append(b, "mid"...)
				b = append(b, content[5000:5000+1<<20]...)
				return append(b, content[size:]...)
			},
		},
		{
			name: "file without descriptor (copy path)",
			file: noFd{f},
			parts: func(hdr []byte) []Part {
				return []Part{{Bytes: hdr}, {Region: FileRegion{File: noFd{f}, Offset: 3, Length: size}}}
			},
			want: func(hdr []byte) []byte { return append(bytes.Clone(hdr), content[3:3+size]...) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			s := startServer(t, Config{SocketSendBufferBytes: 8192}, HandlerFunc(func(r *Request) {
				if r.ApiKey == 18 {
					echo(r)
					return
				}
				hdr := binary.BigEndian.AppendUint32(nil, uint32(r.CorrelationID))
				r.Respond(&Response{Parts: tt.parts(hdr), Done: func(err error) { done <- err }})
			}))
			c := dial(t, s.addr)
			require.NoError(t, c.Conn.(*net.TCPConn).SetReadBuffer(32<<10))
			c.send(frame(1, 11, 77, nil, nil))
			got := c.readResponse()
			want := tt.want(binary.BigEndian.AppendUint32(nil, 77))
			require.Equal(t, len(want), len(got))
			require.True(t, bytes.Equal(want, got), "bytes on the wire differ from the file's")
			require.NoError(t, <-done)
			require.Positive(t, s.Stats().WritesBlocked, "the send buffer filled up")
			c.roundTrip(5, nil) // the connection is still in sync
		})
	}
}

// TestSendfileBeyondEOF: a region past the end of its file cannot be sent
// whole; the connection is closed rather than sending a short response.
func TestSendfileBeyondEOF(t *testing.T) {
	path := t.TempDir() + "/short.log"
	require.NoError(t, writeFile(path, []byte("0123456789")))
	f := openFile(t, path)
	for _, file := range []File{f, noFd{f}} {
		done := make(chan error, 1)
		s := startServer(t, Config{}, HandlerFunc(func(r *Request) {
			if r.ApiKey == 18 {
				echo(r)
				return
			}
			r.Respond(&Response{Parts: []Part{{Region: FileRegion{File: file, Offset: 5, Length: 100}}}, Done: func(err error) { done <- err }})
		}))
		good := dial(t, s.addr)
		bad := dial(t, s.addr)
		bad.send(frame(1, 11, 1, nil, nil))
		bad.expectClosed()
		require.ErrorIs(t, <-done, ErrConnectionClosed)
		require.Len(t, s.logs.lines("level=WARN", "file region beyond the end of its file"), 1)
		good.roundTrip(1, nil)
	}
}

// TestNoResponseOrdering mixes NoResponse (acks=0) with responses, all
// completed in random order: the responses keep request order.
func TestNoResponseOrdering(t *testing.T) {
	const n = 300
	s := startServer(t, Config{NumIOThreads: 4}, HandlerFunc(func(r *Request) {
		go func() {
			time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			if r.CorrelationID%3 == 0 {
				r.NoResponse()
				return
			}
			echo(r)
		}()
	}))
	c := dial(t, s.addr)
	go func() {
		for j := range n {
			if _, err := c.Write(frame(0, 3, int32(j), nil, []byte{byte(j)})); err != nil {
				return
			}
		}
	}()
	for j := range n {
		if j%3 == 0 {
			continue
		}
		got := c.readResponse()
		require.Equal(t, int32(j), corrOf(got))
	}
	c.roundTrip(1000, nil)
	require.EqualValues(t, n+1, s.Stats().Requests)
}

// TestCloseConnection: the response to an earlier request is written, then
// the connection closes; later responses are dropped.
func TestCloseConnection(t *testing.T) {
	first := make(chan *Request, 1)
	dropped := make(chan error, 1)
	s := startServer(t, Config{NumIOThreads: 2}, HandlerFunc(func(r *Request) {
		switch r.CorrelationID {
		case 0:
			first <- r // answered after request 1 asked to close
		case 1:
			r.CloseConnection()
			(<-first).Respond(&Response{Parts: []Part{{Bytes: []byte("first")}}})
		case 2:
			r.Respond(&Response{Parts: []Part{{Bytes: []byte("third")}}, Done: func(err error) { dropped <- err }})
		}
	}))
	c := dial(t, s.addr)
	c.send(frame(0, 0, 0, nil, nil))
	c.send(frame(0, 0, 1, nil, nil))
	require.Equal(t, []byte("first"), c.readResponse())
	c.send(frame(0, 0, 2, nil, nil))
	c.expectClosed()
	select {
	case err := <-dropped:
		require.ErrorIs(t, err, ErrConnectionClosed)
	default: // request 2 may not have been read before the close
	}
	require.Len(t, s.logs.lines("level=DEBUG", "closing connection at the handler's request"), 1)
}

// TestIdleTimeout: an idle connection is closed; one with a request in
// flight is not, until its response has been written and it idles.
func TestIdleTimeout(t *testing.T) {
	const idle = 100 * time.Millisecond
	release := newGate()
	s := startServer(t, Config{ConnectionsMaxIdle: idle}, HandlerFunc(func(r *Request) {
		if r.ApiKey == 1 {
			release.wait()
		}
		echo(r)
	}))
	t.Cleanup(release.open)
	busy := dial(t, s.addr)
	busy.send(frame(1, 0, 1, nil, nil))
	waitFor(t, 5*time.Second, func() bool { return s.Stats().Requests == 1 }, "busy request read")
	start := time.Now()
	idler := dial(t, s.addr)
	idler.roundTrip(1, nil)
	idler.expectClosed()
	require.GreaterOrEqual(t, time.Since(start), idle)
	require.Equal(t, 1, s.openConns(), "busy connection stays open")
	release.open()
	require.Equal(t, int32(1), corrOf(busy.readResponse()))
	busy.expectClosed()
	require.Len(t, s.logs.lines("closing idle connection"), 2)
}

// TestShutdownCompletesInFlight: Shutdown stops accepting, waits for the
// requests in flight, writes their responses, then closes.
func TestShutdownCompletesInFlight(t *testing.T) {
	checkGoroutines(t)
	release := make(chan struct{})
	var handled atomic.Int64
	s, err := New(Config{
		Listeners:    []Listener{{Host: "127.0.0.1"}},
		NumIOThreads: 1,
		Logger:       (&testServer{}).logger(t),
	}, HandlerFunc(func(r *Request) {
		handled.Add(1)
		<-release
		echo(r)
	}))
	require.NoError(t, err)
	require.NoError(t, s.Start())
	addr := s.Addrs()[0].String()
	c := dial(t, addr)
	for j := range 3 {
		c.send(frame(0, 9, int32(j), nil, []byte("in flight")))
	}
	waitFor(t, 5*time.Second, func() bool { return s.Stats().Requests == 3 && handled.Load() == 1 }, "requests read")

	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(context.Background()) }()
	waitFor(t, 5*time.Second, func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err != nil
	}, "listener closed")
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v with requests in flight", err)
	default:
	}
	close(release)
	for j := range 3 {
		require.Equal(t, int32(j), corrOf(c.readResponse()))
	}
	c.expectClosed()
	require.NoError(t, <-shutdown)
	require.NoError(t, s.Shutdown(context.Background()), "second Shutdown")
}

// TestShutdownDeadline: a request never answered does not hold Shutdown
// past its context; a late Respond is dropped without harm.
func TestShutdownDeadline(t *testing.T) {
	checkGoroutines(t)
	held := make(chan *Request, 1)
	s, err := New(Config{Listeners: []Listener{{Host: "127.0.0.1"}}, Logger: (&testServer{}).logger(t)},
		HandlerFunc(func(r *Request) { held <- r }))
	require.NoError(t, err)
	require.NoError(t, s.Start())
	c := dial(t, s.Addrs()[0].String())
	c.send(frame(0, 9, 1, nil, nil))
	r := <-held
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded)
	c.expectClosed()
	done := make(chan error, 1)
	r.Respond(&Response{Parts: []Part{{Bytes: []byte("late")}}, Done: func(err error) { done <- err }})
	require.ErrorIs(t, <-done, ErrServerClosed)
}

func TestShutdownBeforeStart(t *testing.T) {
	s, err := New(Config{Listeners: []Listener{{Host: "127.0.0.1"}}}, echo)
	require.NoError(t, err)
	require.NoError(t, s.Shutdown(context.Background()))
	require.Error(t, s.Start())
}

func TestHandlerPanic(t *testing.T) {
	s := startServer(t, Config{}, HandlerFunc(func(r *Request) {
		if r.ApiKey == 99 {
			panic("boom")
		}
		echo(r)
	}))
	good := dial(t, s.addr)
	bad := dial(t, s.addr)
	bad.send(frame(99, 0, 1, nil, nil))
	bad.expectClosed()
	require.Len(t, s.logs.lines("level=ERROR", "handler panicked", "api_key=99", "boom"), 1)
	good.roundTrip(1, nil)
}

func TestRespondTwice(t *testing.T) {
	second := make(chan error, 1)
	s := startServer(t, Config{}, HandlerFunc(func(r *Request) {
		echo(r)
		r.Respond(&Response{Done: func(err error) { second <- err }})
		r.NoResponse()
		r.CloseConnection()
	}))
	c := dial(t, s.addr)
	c.roundTrip(1, []byte("once"))
	require.ErrorIs(t, <-second, ErrAlreadyCompleted)
	c.roundTrip(2, []byte("still open"))
}

func TestInvalidResponse(t *testing.T) {
	done := make(chan error, 1)
	path := t.TempDir() + "/f"
	require.NoError(t, writeFile(path, []byte("x")))
	f := openFile(t, path)
	s := startServer(t, Config{}, HandlerFunc(func(r *Request) {
		r.Respond(&Response{Parts: []Part{{Region: FileRegion{File: f, Offset: 0, Length: -1}}}, Done: func(err error) { done <- err }})
	}))
	c := dial(t, s.addr)
	c.send(frame(1, 0, 1, nil, nil))
	c.expectClosed()
	require.ErrorIs(t, <-done, ErrInvalidResponse)
	require.Len(t, s.logs.lines("level=ERROR", "invalid response"), 1)
}

func TestEmptyResponse(t *testing.T) {
	s := startServer(t, Config{}, HandlerFunc(func(r *Request) { r.Respond(&Response{}) }))
	c := dial(t, s.addr)
	c.send(frame(1, 0, 1, nil, nil))
	require.Empty(t, c.readResponse())
}

// TestLargeRequest echoes frames larger than the read buffer, which are read
// straight into their own buffer.
func TestLargeRequest(t *testing.T) {
	s := startServer(t, Config{}, echo)
	c := dial(t, s.addr)
	for _, n := range []int{readBufSize - 20, readBufSize, 3<<20 + 17} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		c.roundTrip(int32(n), body)
	}
}

func TestMultipleListeners(t *testing.T) {
	got := make(chan string, 2)
	s := startServer(t, Config{
		NumNetworkThreads: 2,
		Listeners:         []Listener{{Name: "A", Host: "127.0.0.1"}, {Name: "B", Host: "127.0.0.1"}},
	}, HandlerFunc(func(r *Request) { got <- r.Listener; echo(r) }))
	addrs := s.Addrs()
	require.Len(t, addrs, 2)
	for i, want := range []string{"A", "B"} {
		c := dial(t, addrs[i].String())
		c.roundTrip(1, nil)
		require.Equal(t, want, <-got)
	}
	st := s.Stats()
	require.Len(t, st.Connections, 2)
	require.Equal(t, "A", st.Connections[0].Listener)
	require.Equal(t, "B", st.Connections[1].Listener)
}

func TestStats(t *testing.T) {
	s := startServer(t, Config{}, echo)
	c := dial(t, s.addr)
	f := frame(0, 9, 1, ptr("stats"), []byte("hello"))
	for range 3 {
		c.send(f)
		c.readResponse()
	}
	waitFor(t, 5*time.Second, func() bool { return s.Stats().BytesOut == uint64(3*len(f)) }, "bytes out counted")
	st := s.Stats()
	require.Len(t, st.Connections, 1)
	cs := st.Connections[0]
	require.EqualValues(t, 3, cs.Requests)
	require.EqualValues(t, 3*len(f), cs.BytesIn)
	require.EqualValues(t, 3*len(f), cs.BytesOut)
	require.Equal(t, c.LocalAddr().String(), cs.RemoteAddr.String())
	c.Close()
	waitFor(t, 5*time.Second, func() bool { return s.Stats().ConnectionsClosed == 1 }, "close counted")
	st = s.Stats()
	require.EqualValues(t, 1, st.ConnectionsAccepted)
	require.EqualValues(t, 3, st.Requests, "closed connections keep counting")
	require.EqualValues(t, 3*len(f), st.BytesIn)
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"no listeners", Config{}, "no listeners"},
		{"bad port", Config{Listeners: []Listener{{Port: 70000}}}, "port 70000"},
		{"negative threads", Config{Listeners: []Listener{{}}, NumIOThreads: -1}, "NumIOThreads is -1"},
		{"tiny max request", Config{Listeners: []Listener{{}}, SocketRequestMaxBytes: 4}, "at least 8"},
		{"bad buffer", Config{Listeners: []Listener{{}}, SocketSendBufferBytes: -2}, "socket buffer sizes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, echo)
			require.ErrorContains(t, err, tt.err)
		})
	}
	cfg, err := Config{Listeners: []Listener{{}}}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, DefaultListenerName, cfg.Listeners[0].Name)
	require.Equal(t, DefaultNumNetworkThreads, cfg.NumNetworkThreads)
	require.Equal(t, DefaultNumIOThreads, cfg.NumIOThreads)
	require.Equal(t, DefaultQueuedMaxRequests, cfg.QueuedMaxRequests)
	require.EqualValues(t, DefaultSocketRequestMaxBytes, cfg.SocketRequestMaxBytes)
	require.Equal(t, DefaultConnectionsMaxIdle, cfg.ConnectionsMaxIdle)
	require.Equal(t, DefaultMaxInFlightPerConnection, cfg.MaxInFlightPerConnection)

	_, err = New(Config{Listeners: []Listener{{}}}, nil)
	require.Error(t, err)
}

func TestStartBindError(t *testing.T) {
	checkGoroutines(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	s, err := New(Config{Listeners: []Listener{{Name: "A", Host: "127.0.0.1"}, {Name: "B", Host: "127.0.0.1", Port: port}}}, echo)
	require.NoError(t, err)
	require.ErrorContains(t, s.Start(), "listener B")
	require.NoError(t, s.Shutdown(context.Background()))
}

// TestSlowReader pipelines many requests with large responses to a client
// that reads slowly through a small buffer, so the write queue rarely
// empties; responses stay complete and in order.
func TestSlowReader(t *testing.T) {
	const n = 2000
	body := bytes.Repeat([]byte("r"), 3000)
	s := startServer(t, Config{SocketSendBufferBytes: 8192, NumIOThreads: 3}, HandlerFunc(func(r *Request) {
		go r.Respond(&Response{Parts: []Part{{Bytes: r.Frame[4:8]}, {Bytes: body}, {Bytes: r.Frame[4:8]}}})
	}))
	c := dial(t, s.addr)
	require.NoError(t, c.Conn.(*net.TCPConn).SetReadBuffer(262144))
	go func() {
		for j := range n {
			if _, err := c.Write(frame(0, 9, int32(j), nil, nil)); err != nil {
				return
			}
		}
	}()
	for j := range n {
		got := c.readResponse()
		require.Len(t, got, 3008)
		require.Equal(t, int32(j), int32(binary.BigEndian.Uint32(got)))
		require.Equal(t, int32(j), int32(binary.BigEndian.Uint32(got[3004:])))
	}
}

// TestHandleOrderPerConnection: pipelined requests of one connection reach
// Handle one at a time and in the order they were sent, although several
// handler goroutines pop the queue. A producer's batches for a partition
// must be appended in send order (kcat found the reordering this prevents).
func TestHandleOrderPerConnection(t *testing.T) {
	const conns, perConn = 8, 200
	var mu sync.Mutex
	next := map[uint64]int32{}   // conn id -> correlation id expected next
	running := map[uint64]bool{} // conn id -> inside Handle
	var bad atomic.Int32
	s := startServer(t, Config{NumNetworkThreads: 2, NumIOThreads: 8, QueuedMaxRequests: 64},
		HandlerFunc(func(r *Request) {
			mu.Lock()
			if running[r.ConnID] || next[r.ConnID] != r.CorrelationID {
				bad.Add(1)
			}
			running[r.ConnID] = true
			next[r.ConnID] = r.CorrelationID + 1
			mu.Unlock()
			if rand.IntN(4) == 0 {
				runtime.Gosched()
			}
			mu.Lock()
			running[r.ConnID] = false
			mu.Unlock()
			echo(r)
		}))
	var wg sync.WaitGroup
	for i := range conns {
		c := dial(t, s.addr)
		wg.Go(func() {
			for j := range perConn {
				c.send(frame(0, 9, int32(j), ptr(fmt.Sprintf("client-%d", i)), make([]byte, rand.IntN(200))))
			}
		})
		wg.Go(func() {
			for j := range perConn {
				got, err := c.tryReadResponse(20 * time.Second)
				if err != nil {
					t.Errorf("conn %d: response %d: %v", i, j, err)
					return
				}
				if corrOf(got) != int32(j) {
					t.Errorf("conn %d: response %d has correlation id %d", i, j, corrOf(got))
					return
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "requests of one connection handled concurrently or out of order")
}
