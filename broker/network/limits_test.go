//go:build linux

package network

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dialFrom connects to addr from the loopback address src (any of
// 127.0.0.0/8 works on Linux), so tests can be several IPs.
func dialFrom(t *testing.T, src, addr string) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &client{t: t, Conn: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// TestConnectionLimits: connections over max.connections.per.ip (or its
// override) and over max.connections are closed right after accept, the
// others keep being served, and a slot freed by a close is usable again.
func TestConnectionLimits(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		// want is how many connections each source address gets, tried in
		// order (an address may appear more than once).
		srcs []string
		want []bool
	}{
		{"per ip", Config{MaxConnectionsPerIP: 2},
			[]string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2", "127.0.0.2"},
			[]bool{true, true, false, true, true, false}},
		{"broker-wide", Config{MaxConnections: 3},
			[]string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.1"},
			[]bool{true, true, true, false, false}},
		{"override", Config{MaxConnectionsPerIP: 1, MaxConnectionsPerIPOverrides: map[string]int{"127.0.0.2": 3}},
			[]string{"127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.2"},
			[]bool{true, false, true, true, true, false}},
		{"none but overrides", Config{MaxConnectionsPerIP: NoConnections, MaxConnectionsPerIPOverrides: map[string]int{"127.0.0.2": 1, "localhost": 0}},
			[]string{"127.0.0.1", "127.0.0.2", "127.0.0.2"},
			[]bool{false, true, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.cfg, echo)
			var open []*client
			for i, src := range tc.srcs {
				c := dialFrom(t, src, s.addr)
				if tc.want[i] {
					c.roundTrip(int32(i), []byte("hi"))
					open = append(open, c)
				} else {
					c.expectClosed()
				}
			}
			// The accepted ones were served throughout.
			for i, c := range open {
				c.roundTrip(int32(100+i), nil)
			}
			require.NotEmpty(t, s.logs.lines("too many connections", "limit="))
			// Closing one frees its slot: the last address refused before
			// the first accepted one's close gets in now, if it was
			// refused for the limit that slot counted against.
			if len(open) == 0 {
				return
			}
			first := open[0]
			src := first.LocalAddr().(*net.TCPAddr).IP.String()
			before := s.openConns()
			first.Close()
			waitFor(t, 5*time.Second, func() bool { return s.openConns() == before-1 }, "close counted")
			again := dialFrom(t, src, s.addr)
			again.roundTrip(7, []byte("again"))
		})
	}
}

// TestRefusalLogRateLimited: a flood over the limit logs at most one line
// a second, which counts the refusals it did not log.
func TestRefusalLogRateLimited(t *testing.T) {
	s := startServer(t, Config{MaxConnectionsPerIP: NoConnections}, echo)
	for range 50 {
		dial(t, s.addr).expectClosed()
	}
	lines := s.logs.lines("too many connections")
	require.NotEmpty(t, lines)
	require.Less(t, len(lines), 10, "one line per second at most")
	require.Contains(t, lines[0], "setting=max.connections.per.ip")
	require.Contains(t, lines[0], "remote=127.0.0.1:")
}

// TestCreationRateWindow drives the rate window with a synthetic clock as
// the acceptor does (record, wait the throttle, accept the next): after
// the burst the window allows, connections come at the quota.
func TestCreationRateWindow(t *testing.T) {
	for _, tc := range []struct {
		quota float64
		num   int
		size  time.Duration
	}{
		{50, 2, 100 * time.Millisecond},
		{100, 11, time.Second},
		{10, 3, time.Second},
	} {
		q := newConnQuotas(Config{MaxConnectionCreationRate: tc.quota, QuotaWindowNum: tc.num, QuotaWindowSize: tc.size}, nil, nil)
		now := time.Unix(1000, 0)
		start := now
		// Ten windows' worth, so the initial burst is a small part.
		n := int(tc.quota * float64(tc.num) * tc.size.Seconds() * 10)
		var firstWait time.Time
		for i := range n {
			d := q.throttle(now)
			if d > 0 && firstWait.IsZero() {
				firstWait = now
				require.LessOrEqual(t, float64(i), tc.quota*float64(tc.num)*tc.size.Seconds()+1, "burst within the window")
			}
			now = now.Add(d)
		}
		got := float64(n) / now.Sub(start).Seconds()
		require.InDelta(t, tc.quota, got, tc.quota*0.25, "quota %v window %dx%v: %v connections/s", tc.quota, tc.num, tc.size, got)
	}
}

// TestCreationRate: over max.connection.creation.rate the acceptor delays
// connections (they wait in the backlog), so a burst takes about as long
// as the rate says; connections already open are served meanwhile.
func TestCreationRate(t *testing.T) {
	const rate, n = 50, 40
	s := startServer(t, Config{MaxConnectionCreationRate: rate, QuotaWindowNum: 2, QuotaWindowSize: 100 * time.Millisecond}, echo)
	old := dial(t, s.addr)
	old.roundTrip(1, nil)
	start := time.Now()
	conns := make([]*client, n)
	for i := range conns {
		conns[i] = dial(t, s.addr) // completes in the kernel's backlog
	}
	served := 0
	waitFor(t, 20*time.Second, func() bool {
		old.roundTrip(int32(served), nil)
		served++
		return s.Stats().ConnectionsAccepted == n+1
	}, "all connections accepted")
	elapsed := time.Since(start)
	// The window lets about rate*size = 5 through at once; the rest come
	// at the rate: (40-5)/50 = 0.7 s. Allow slack below for the window's
	// granularity, and none above but the poll's.
	require.Greater(t, elapsed, 400*time.Millisecond, "%d connections accepted in %v at %d/s", n, elapsed, rate)
	require.Greater(t, served, 1, "the open connection was served while others waited")
	for i, c := range conns {
		c.roundTrip(int32(i), []byte("x"))
	}
}

// TestQueuedMaxRequestBytes: past queued.max.request.bytes the processors
// stop reading requests, memory stays bounded, and once the handlers
// answer, every request is read and answered, in order and intact.
func TestQueuedMaxRequestBytes(t *testing.T) {
	const (
		clients, perClient = 16, 6
		bodySize           = 100 << 10
		limit              = 256 << 10
	)
	release := newGate()
	s := startServer(t, Config{QueuedMaxRequestBytes: limit, NumNetworkThreads: 2}, HandlerFunc(func(r *Request) {
		if r.ApiKey == 0 {
			release.wait()
		}
		echo(r)
	}))
	t.Cleanup(release.open)
	other := dial(t, s.addr)
	other.roundTrip(1, nil)
	var wg sync.WaitGroup
	var failed atomic.Bool
	cs := make([]*client, clients)
	frames := make([][][]byte, clients)
	for i := range cs {
		cs[i] = dial(t, s.addr)
		for j := range perClient {
			body := make([]byte, bodySize)
			for k := range body {
				body[k] = byte(i*31 + j*7 + k)
			}
			frames[i] = append(frames[i], frame(0, 9, int32(j), ptr("mem"), body))
		}
		wg.Go(func() {
			for _, f := range frames[i] {
				if _, err := cs[i].Write(f); err != nil {
					failed.Store(true)
					return
				}
			}
		})
	}
	// Each connection may have one frame partly read when its processor
	// mutes; nothing beyond.
	bound := int64(limit + clients*(bodySize+64))
	waitFor(t, 10*time.Second, func() bool { return s.MemoryInFlight() >= limit }, "memory bound reached")
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		require.LessOrEqual(t, s.MemoryInFlight(), bound)
		require.Less(t, s.Stats().Requests, uint64(clients*perClient), "reading stopped")
	}
	release.open()
	for i, c := range cs {
		for j, f := range frames[i] {
			got := c.readResponse()
			require.True(t, bytes.Equal(f[4:], got), "client %d request %d answered intact", i, j)
		}
	}
	wg.Wait()
	require.False(t, failed.Load())
	other.roundTrip(2, nil)
	waitFor(t, 5*time.Second, func() bool { return s.MemoryInFlight() == 0 }, "memory released: %d", s.MemoryInFlight())
}

// TestTrickledFrame: a frame announcing 50 MiB and sent a byte at a time
// holds only what arrived, is closed once qk.socket.request.read.timeout.ms
// passes, and other connections are served throughout.
func TestTrickledFrame(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := startServer(t, Config{RequestReadTimeout: timeout, QueuedMaxRequestBytes: 1 << 30}, echo)
	other := dial(t, s.addr)
	slow := dial(t, s.addr)
	f := frame(0, 9, 1, nil, make([]byte, 50<<20))
	start := time.Now()
	slow.send(f[:4])
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 4; i < len(f); i++ {
			if _, err := slow.Write(f[i : i+1]); err != nil {
				return // closed by the server
			}
			time.Sleep(5 * time.Millisecond) // the trickle, not a synchronisation
		}
	}()
	waitFor(t, 5*time.Second, func() bool { return s.MemoryInFlight() > 0 }, "frame begun")
	require.LessOrEqual(t, s.MemoryInFlight(), int64(frameChunk), "only a chunk is held, not the 50 MiB announced")
	served := int32(0)
	for s.openConns() == 2 && time.Since(start) < 10*time.Second {
		other.roundTrip(served, []byte("ping"))
		served++
	}
	slow.expectClosed()
	require.GreaterOrEqual(t, time.Since(start), timeout)
	require.Positive(t, served)
	require.Len(t, s.logs.lines("request not received in time", "size=52428810"), 1)
	<-done
	other.roundTrip(-1, nil)
	waitFor(t, 5*time.Second, func() bool { return s.MemoryInFlight() == 0 }, "memory released")
}

// TestFrameGrowth: frames larger than a chunk, written in random pieces,
// arrive intact through the growing buffer.
func TestFrameGrowth(t *testing.T) {
	s := startServer(t, Config{QueuedMaxRequestBytes: 64 << 20}, echo)
	c := dial(t, s.addr)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{frameChunk - 14, frameChunk - 13, frameChunk + 1, 4*frameChunk + 3, 1<<20 + 5, 9 << 20} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		f := frame(0, 9, int32(n), ptr("grow"), body)
		var pieces [][]byte
		for rest := f; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(200<<10))
			pieces, rest = append(pieces, rest[:k]), rest[k:]
		}
		go func() {
			for _, p := range pieces {
				if _, err := c.Write(p); err != nil {
					return
				}
			}
		}()
		require.True(t, bytes.Equal(f[4:], c.readResponse()), "frame of %d bytes", n)
	}
	waitFor(t, 5*time.Second, func() bool { return s.MemoryInFlight() == 0 }, "memory released")
}
