//go:build linux

package network

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatchdogReportsUnansweredRequests holds some requests unanswered:
// one past RequestTimeout is logged at Warn once, with its API,
// correlation id and client, and counted; one whose own wait (SetWait)
// is not over yet is not, nor is an answered one behind them.
func TestWatchdogReportsUnansweredRequests(t *testing.T) {
	var mu sync.Mutex
	var held []*Request
	h := HandlerFunc(func(r *Request) {
		switch corr := r.CorrelationID; corr {
		case 1, 4:
			mu.Lock()
			held = append(held, r)
			mu.Unlock()
		case 2:
			r.SetWait(time.Hour) // a long poll: not late until it is over
			mu.Lock()
			held = append(held, r)
			mu.Unlock()
		default:
			echo(r)
		}
	})
	const timeout = 200 * time.Millisecond
	s := startServer(t, Config{RequestTimeout: timeout, NumNetworkThreads: 1}, h)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range held {
			r.Respond(&Response{Parts: []Part{{Bytes: binary.BigEndian.AppendUint32(nil, uint32(r.CorrelationID))}}})
		}
	})
	c := dial(t, s.addr)
	c.send(frame(1, 11, 1, ptr("consumer-1"), nil))
	c.send(frame(1, 11, 2, ptr("consumer-1"), nil))
	c.send(frame(18, 3, 3, ptr("consumer-1"), nil))
	// The count moves before the line is written: wait for both.
	waitFor(t, 10*time.Second, func() bool {
		return s.Stats().RequestsOverdue == 1 && len(s.logs.lines("request unanswered past request.timeout.ms")) == 1
	}, "the held request reported")
	lines := s.logs.lines("request unanswered past request.timeout.ms")
	require.Len(t, lines, 1)
	for _, want := range []string{"api=Fetch", "api_key=1", "api_version=11", "correlation_id=1 ", "client_id=consumer-1", "remote=127.0.0.1:", "age="} {
		require.Contains(t, lines[0], want)
	}

	// A second connection's late request: once it is reported, scans have
	// run after the first report, which must not have been repeated.
	c2 := dial(t, s.addr)
	c2.send(frame(0, 9, 4, ptr("producer-1"), nil))
	waitFor(t, 10*time.Second, func() bool {
		return s.Stats().RequestsOverdue == 2 && len(s.logs.lines("request unanswered", "correlation_id=4 ")) == 1
	}, "the second held request reported")
	require.Len(t, s.logs.lines("request unanswered", "correlation_id=1 "), 1, "reported once")
	require.Len(t, s.logs.lines("request unanswered", "correlation_id=4 ", "api=Produce"), 1)
	require.Empty(t, s.logs.lines("request unanswered", "correlation_id=2 "), "within its own wait")
	require.Empty(t, s.logs.lines("request unanswered", "correlation_id=3 "), "answered")
	require.Equal(t, uint64(2), s.Load().RequestsOverdue)
}

// TestWatchdogForgetsClosedConnections: a request dropped with its
// connection is not reported.
func TestWatchdogForgetsClosedConnections(t *testing.T) {
	got := make(chan *Request, 1)
	h := HandlerFunc(func(r *Request) {
		if r.CorrelationID == 1 {
			got <- r
			return
		}
		echo(r)
	})
	s := startServer(t, Config{RequestTimeout: 500 * time.Millisecond, NumNetworkThreads: 1}, h)
	c := dial(t, s.addr)
	c.send(frame(1, 11, 1, nil, nil))
	r := <-got
	require.NoError(t, c.Close())
	waitFor(t, 10*time.Second, func() bool { return s.openConns() == 0 }, "connection closed")
	// A later late request on another connection marks scans as done.
	c2 := dial(t, s.addr)
	c2.send(frame(1, 11, 1, nil, nil))
	r2 := <-got
	// The count goes up just before the line is logged: wait for both.
	waitFor(t, 10*time.Second, func() bool {
		return s.Stats().RequestsOverdue == 1 && len(s.logs.lines("request unanswered")) == 1
	}, "the live one reported")
	r.NoResponse()
	r2.NoResponse()
	require.Len(t, s.logs.lines("request unanswered"), 1)
}
