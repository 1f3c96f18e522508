package channel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requests queued for one broker are sent, and their callbacks called,
// in the order of the Sends, on one connection.
func TestOrder(t *testing.T) {
	srv := newTestServer(t).start(nil)
	m := newManager(t, Config{ControllerID: 3}, nil)
	m.AddBroker(1, srv.addr)

	const n = 200
	var got []string
	done := make(chan struct{})
	for i := range n {
		req := metadataRequest(fmt.Sprintf("t%d", i))
		m.Send(1, req, func(resp kmsg.Response, err error) {
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			} else {
				got = append(got, *resp.(*kmsg.MetadataResponse).Topics[0].Topic)
			}
			if i == n-1 {
				close(done)
			}
		})
	}
	await(t, wrapDone(done))

	require.Len(t, got, n)
	reqs := srv.received(3)
	require.Len(t, reqs, n)
	for i := range n {
		want := fmt.Sprintf("t%d", i)
		require.Equal(t, want, got[i], "callback %d", i)
		require.Equal(t, want, *reqs[i].req.(*kmsg.MetadataRequest).Topics[0].Topic, "request %d", i)
		require.Equal(t, 1, reqs[i].conn)
		require.Equal(t, "qk-controller-3", reqs[i].clientID)
	}
	require.Equal(t, 1, srv.accepted())
}

func wrapDone(done <-chan struct{}) <-chan result {
	ch := make(chan result, 1)
	go func() { <-done; ch <- result{} }()
	return ch
}

// hangingServer reads Metadata requests and never answers them; it tells
// got about each.
func hangingServer(t *testing.T) *testServer {
	srv := newTestServer(t)
	srv.hook = func(sc *srvConn, r *srvReq) bool { return r.key == 3 }
	return srv.start(nil)
}

// RemoveBroker fails the request in flight and those queued with
// ErrBrokerRemoved, in order, and ends the sender.
func TestRemoveBroker(t *testing.T) {
	srv := hangingServer(t)
	m := newManager(t, Config{}, nil)
	m.AddBroker(2, srv.addr)

	var chans []<-chan result
	chans = append(chans, sendAsync(t, m, 2, metadataRequest("a")))
	waitFor(t, 5*time.Second, "the first request at the server", func() bool { return len(srv.received(3)) == 1 })
	var order []int
	for i := 1; i < 5; i++ {
		ch := make(chan result, 1)
		m.Send(2, metadataRequest("b"), func(resp kmsg.Response, err error) {
			order = append(order, i)
			ch <- result{resp, err}
		})
		chans = append(chans, ch)
	}
	require.Equal(t, 5, m.QueueSize(2))

	m.RemoveBroker(2)
	for i, ch := range chans {
		select {
		case r := <-ch:
			require.ErrorIs(t, r.err, ErrBrokerRemoved, "request %d", i)
			require.Nil(t, r.resp)
		default:
			t.Fatalf("request %d: no callback by the time RemoveBroker returned", i)
		}
	}
	require.Equal(t, []int{1, 2, 3, 4}, order)
	require.Empty(t, m.Brokers())
	require.Zero(t, m.QueueSize(2))
	waitNoSenders(t)

	var syncErr error
	m.Send(2, metadataRequest(""), func(_ kmsg.Response, err error) { syncErr = err })
	require.ErrorIs(t, syncErr, ErrUnknownBroker, "called before Send returns")
	m.RemoveBroker(2) // unknown: nothing
}

// Close fails everything pending on every kind of sender with ErrClosed,
// waits for the goroutines, and refuses what comes after.
func TestClose(t *testing.T) {
	srv := hangingServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := ln.Addr().String()
	require.NoError(t, ln.Close())

	m := newManager(t, Config{RetryBackoff: time.Millisecond}, nil)
	m.AddBroker(1, srv.addr)
	m.AddBroker(2, deadAddr)
	handled := make(chan struct{})
	m.AddLocal(3, func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		close(handled)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	require.Equal(t, []int32{1, 2, 3}, m.Brokers())

	var chans []<-chan result
	for _, id := range []int32{1, 2, 3} {
		for range 3 {
			chans = append(chans, sendAsync(t, m, id, metadataRequest("")))
		}
	}
	waitFor(t, 5*time.Second, "the request in flight at broker 1", func() bool { return len(srv.received(3)) == 1 })
	<-handled

	m.Close()
	for i, ch := range chans {
		select {
		case r := <-ch:
			require.ErrorIs(t, r.err, ErrClosed, "request %d", i)
		default:
			t.Fatalf("request %d: no callback by the time Close returned", i)
		}
	}
	waitNoSenders(t)

	var syncErr error
	m.Send(1, metadataRequest(""), func(_ kmsg.Response, err error) { syncErr = err })
	require.ErrorIs(t, syncErr, ErrClosed)
	m.AddBroker(4, srv.addr)
	require.Empty(t, m.Brokers())
	m.Close() // twice: nothing
}

// AddBroker with the same address keeps the sender and its queue; with a
// new address it replaces the sender, failing what the old one had.
func TestAddBrokerReplaces(t *testing.T) {
	oldSrv := hangingServer(t)
	newSrv := newTestServer(t).start(nil)
	m := newManager(t, Config{}, nil)

	m.AddBroker(5, oldSrv.addr)
	pending := sendAsync(t, m, 5, metadataRequest("a"))
	waitFor(t, 5*time.Second, "the request at the old server", func() bool { return len(oldSrv.received(3)) == 1 })

	m.AddBroker(5, oldSrv.addr)
	require.Equal(t, 1, m.QueueSize(5))
	require.Len(t, pending, 0, "same address: the request is still in flight")
	require.Equal(t, 1, oldSrv.accepted())

	m.AddBroker(5, newSrv.addr)
	r := await(t, pending)
	require.ErrorIs(t, r.err, ErrBrokerRemoved)

	r = await(t, sendAsync(t, m, 5, metadataRequest("b")))
	require.NoError(t, r.err)
	require.Len(t, newSrv.received(3), 1)
	require.Len(t, oldSrv.received(3), 1)
	require.Equal(t, []int32{5}, m.Brokers())

	// A local sender replaces a network one, and a second AddLocal for
	// the id keeps the first handler.
	var first, second atomic.Int32
	m.AddLocal(5, func(context.Context, kmsg.Request) (kmsg.Response, error) {
		first.Add(1)
		return kmsg.NewPtrMetadataResponse(), nil
	})
	m.AddLocal(5, func(context.Context, kmsg.Request) (kmsg.Response, error) {
		second.Add(1)
		return kmsg.NewPtrMetadataResponse(), nil
	})
	r = await(t, sendAsync(t, m, 5, metadataRequest("c")))
	require.NoError(t, r.err)
	require.Equal(t, int32(1), first.Load())
	require.Zero(t, second.Load())
	require.Len(t, newSrv.received(3), 1)
}

// A local sender calls its handler one request at a time, in order, at
// kmsg's max version, and hands back its response or error.
func TestLocal(t *testing.T) {
	m := newManager(t, Config{}, nil)
	var inHandler atomic.Int32
	var seen []string
	boom := errors.New("boom")
	m.AddLocal(0, func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		if inHandler.Add(1) != 1 {
			t.Error("handler called concurrently")
		}
		defer inHandler.Add(-1)
		md := req.(*kmsg.MetadataRequest)
		if md.GetVersion() != md.MaxVersion() {
			t.Errorf("version %d, want %d", md.GetVersion(), md.MaxVersion())
		}
		topic := *md.Topics[0].Topic
		seen = append(seen, topic)
		if topic == "fail" {
			return nil, boom
		}
		return metadataResponse(md, 0), nil
	})

	const n = 100
	var chans []<-chan result
	for i := range n {
		topic := fmt.Sprintf("t%d", i)
		if i == 50 {
			topic = "fail"
		}
		chans = append(chans, sendAsync(t, m, 0, metadataRequest(topic)))
	}
	for i, ch := range chans {
		r := await(t, ch)
		if i == 50 {
			require.ErrorIs(t, r.err, boom)
			continue
		}
		require.NoError(t, r.err)
		require.Equal(t, fmt.Sprintf("t%d", i), *r.resp.(*kmsg.MetadataResponse).Topics[0].Topic)
	}
	require.Len(t, seen, n)
	for i, topic := range seen {
		if i != 50 {
			require.Equal(t, fmt.Sprintf("t%d", i), topic)
		}
	}

	// A handler blocked when the sender is removed sees its context
	// cancelled; its request and the queued ones get ErrBrokerRemoved.
	blocked := make(chan struct{})
	m.AddLocal(1, func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		close(blocked)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	a := sendAsync(t, m, 1, metadataRequest("x"))
	<-blocked
	b := sendAsync(t, m, 1, metadataRequest("y"))
	m.RemoveBroker(1)
	require.ErrorIs(t, await(t, a).err, ErrBrokerRemoved)
	require.ErrorIs(t, await(t, b).err, ErrBrokerRemoved)
}
