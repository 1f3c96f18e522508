package channel

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	msgFailed    = "request to broker failed, will retry"
	msgRecovered = "broker reachable again"
)

func linesWith(lines []logLine, msg string) []logLine {
	var out []logLine
	for _, l := range lines {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// A request to a broker that is not listening yet is retried until the
// broker starts, then answered. The outage is logged once at Warn, the
// repeats at Debug, and the recovery at Info.
func TestRetryUntilListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var dials atomic.Int32
	rec := &logRecorder{}
	m := newManager(t, Config{
		RetryBackoff: time.Millisecond,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}, rec)
	m.AddBroker(4, addr)
	ch := sendAsync(t, m, 4, metadataRequest("late"))
	// The 4th dial starts after the 3rd failure was logged.
	waitFor(t, 5*time.Second, "4 dials", func() bool { return dials.Load() >= 4 })
	require.Len(t, ch, 0, "no callback while the broker is down")
	require.Equal(t, 1, m.QueueSize(4))

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port of %s taken meanwhile: %v", addr, err)
	}
	srv := newTestServer(t).start(ln)
	r := await(t, ch)
	require.NoError(t, r.err)
	require.Equal(t, "late", *r.resp.(*kmsg.MetadataResponse).Topics[0].Topic)
	require.Len(t, srv.received(3), 1)

	warns := rec.lines(slog.LevelWarn)
	require.Len(t, warns, 1, "one Warn for the whole outage")
	w := warns[0]
	require.Equal(t, msgFailed, w.msg)
	require.Equal(t, "4", w.attrs["broker_id"])
	require.Equal(t, addr, w.attrs["addr"])
	require.Equal(t, "Metadata", w.attrs["api"])
	require.Contains(t, w.attrs["err"], "refused")
	require.GreaterOrEqual(t, len(linesWith(rec.lines(slog.LevelDebug), "request to broker failed again, will retry")), 2)
	require.Len(t, linesWith(rec.lines(slog.LevelInfo), msgRecovered), 1)
}

// A server that misbehaves once on a request — drops the connection,
// answers garbage, an absurd size or nothing — gets the same request
// again on a new connection, and the callback is called once, with the
// good answer. Nothing big is allocated for a size prefix that lies.
func TestRetryMisbehavingServer(t *testing.T) {
	withSize := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	header := func(r *srvReq, tags ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(make([]byte, 4), uint32(r.corrID)), tags...)
	}
	cases := []struct {
		name      string
		timeout   time.Duration
		misbehave func(sc *srvConn, r *srvReq)
		wantErr   string
	}{
		{name: "close before responding", wantErr: "EOF",
			misbehave: func(sc *srvConn, r *srvReq) { sc.nc.Close() }},
		{name: "close mid-response", wantErr: "unexpected EOF",
			misbehave: func(sc *srvConn, r *srvReq) {
				b := frame(r, metadataResponse(r.req.(*kmsg.MetadataRequest), 7), r.version)
				sc.write(b[:len(b)/2])
				sc.nc.Close()
			}},
		{name: "wrong correlation id", wantErr: "correlation id",
			misbehave: func(sc *srvConn, r *srvReq) {
				other := *r
				other.corrID += 100
				sc.write(frame(&other, metadataResponse(r.req.(*kmsg.MetadataRequest), 7), r.version))
			}},
		{name: "body does not decode", wantErr: "decode Metadata",
			misbehave: func(sc *srvConn, r *srvReq) {
				sc.write(withSize(append(header(r, 0), 0, 0, 1))) // half a ThrottleMillis
			}},
		{name: "bad header tagged fields", wantErr: "bad tagged fields",
			misbehave: func(sc *srvConn, r *srvReq) {
				sc.write(withSize(header(r, 5))) // five tags announced, none sent
			}},
		{name: "giant size prefix", timeout: time.Minute, wantErr: "response size 2147483647",
			misbehave: func(sc *srvConn, r *srvReq) {
				sc.write([]byte{0x7f, 0xff, 0xff, 0xff}) // and keep the connection open
			}},
		{name: "negative size prefix", timeout: time.Minute, wantErr: "response size -1",
			misbehave: func(sc *srvConn, r *srvReq) { sc.write([]byte{0xff, 0xff, 0xff, 0xff}) }},
		{name: "size below the header", timeout: time.Minute, wantErr: "response size 2",
			misbehave: func(sc *srvConn, r *srvReq) { sc.write([]byte{0, 0, 0, 2, 0, 0}) }},
		{name: "90 MiB announced, 10 bytes sent", wantErr: "got 10 of 94371840 bytes",
			misbehave: func(sc *srvConn, r *srvReq) {
				sc.write(append(binary.BigEndian.AppendUint32(nil, 90<<20), make([]byte, 10)...))
				sc.nc.Close()
			}},
		{name: "no answer in time", timeout: 250 * time.Millisecond, wantErr: "i/o timeout",
			misbehave: func(sc *srvConn, r *srvReq) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var misbehaved atomic.Bool
			srv := newTestServer(t)
			srv.hook = func(sc *srvConn, r *srvReq) bool {
				if r.key != 3 || misbehaved.Swap(true) {
					return false
				}
				tc.misbehave(sc, r)
				return true
			}
			srv.start(nil)
			rec := &logRecorder{}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			m := newManager(t, Config{RequestTimeout: timeout, RetryBackoff: time.Millisecond}, rec)
			m.AddBroker(1, srv.addr)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := await(t, sendAsync(t, m, 1, metadataRequest("once")))
			runtime.ReadMemStats(&after)
			require.NoError(t, r.err)
			require.Equal(t, "once", *r.resp.(*kmsg.MetadataResponse).Topics[0].Topic)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20), "bytes allocated")

			// A second request on the new connection proves no stray
			// callback of the first comes later (callbacks are FIFO).
			r = await(t, sendAsync(t, m, 1, metadataRequest("next")))
			require.NoError(t, r.err)

			reqs := srv.received(3)
			require.Len(t, reqs, 3, "the first request twice, then the second")
			require.Equal(t, []int{1, 2, 2}, []int{reqs[0].conn, reqs[1].conn, reqs[2].conn})
			require.Equal(t, 2, srv.accepted())

			warns := rec.lines(slog.LevelWarn)
			require.Len(t, warns, 1)
			require.Equal(t, msgFailed, warns[0].msg)
			require.Contains(t, warns[0].attrs["err"], tc.wantErr)
			require.Len(t, linesWith(rec.lines(slog.LevelInfo), msgRecovered), 1)
		})
	}
}

// The backoff doubles from RetryBackoff and stops growing at 8× (and at
// one second unless RetryBackoff is longer).
func TestBackoff(t *testing.T) {
	cases := []struct {
		base time.Duration
		want []time.Duration
	}{
		{10 * time.Millisecond, []time.Duration{10, 20, 40, 80, 80}},
		{200 * time.Millisecond, []time.Duration{200, 400, 800, 1000, 1000}},
		{3 * time.Second, []time.Duration{3000, 3000}},
	}
	for _, tc := range cases {
		m := New(Config{RetryBackoff: tc.base})
		s := newSender(m, 1, "x", nil)
		for i, w := range tc.want {
			require.Equal(t, w*time.Millisecond, s.failed("Metadata", errTest), "base %v, failure %d", tc.base, i+1)
		}
	}
}

var errTest = errors.New("test failure")
