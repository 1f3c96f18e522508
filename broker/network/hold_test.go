//go:build linux

package network

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHoldKeepsConnectionOrder: a request whose handler holds it
// (Request.Hold) and goes on on a goroutine of its own frees its handler
// goroutine — another connection's request is answered meanwhile, with
// one handler — but not its connection's turn: the connection's next
// request is handled only after the release, so a connection's requests
// are still handled in the order sent.
func TestHoldKeepsConnectionOrder(t *testing.T) {
	release := make(chan struct{})
	var handledSecond atomic.Bool
	var releasedFirst atomic.Bool
	h := HandlerFunc(func(r *Request) {
		switch r.CorrelationID {
		case 1:
			done := r.Hold()
			go func() {
				<-release
				releasedFirst.Store(true)
				echo(r)
				done()
				done() // a second call does nothing
			}()
		case 2:
			if !releasedFirst.Load() {
				t.Errorf("request 2 handled before request 1 was released")
			}
			handledSecond.Store(true)
			echo(r)
		default:
			echo(r)
		}
	})
	s := startServer(t, Config{NumIOThreads: 1, NumNetworkThreads: 1}, h)
	c := dial(t, s.addr)
	c.send(frame(0, 9, 1, ptr("producer"), nil))
	c.send(frame(0, 9, 2, ptr("producer"), nil))

	// The one handler goroutine is free: another connection is served.
	other := dial(t, s.addr)
	other.roundTrip(3, nil)
	require.False(t, handledSecond.Load(), "the held connection's next request ran before the release")

	close(release)
	require.Equal(t, int32(1), corrOf(c.readResponse()))
	require.Equal(t, int32(2), corrOf(c.readResponse()))
	require.True(t, handledSecond.Load())
}
