//go:build integration

package zkstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/storetest"
	"github.com/qk-project/qk/broker/metadata/zkstore"
	"github.com/qk-project/qk/internal/zktest"
)

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func open(t testing.TB, connect string, session time.Duration) *zkstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers, chroot, err := config.ParseZookeeperConnect(connect)
	require.NoError(t, err)
	s, err := zkstore.Open(ctx, zkstore.Config{Servers: servers, Chroot: chroot, SessionTimeout: session, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the metadata.Store suite against a real ZooKeeper,
// each test in a fresh chroot (created by Open, as Kafka creates its own).
func TestConformance(t *testing.T) {
	zk := zktest.Start(t)
	var n atomic.Int64
	storetest.RunConformance(t, func(t *testing.T) metadata.Store {
		return open(t, fmt.Sprintf("%s/qk/t%d", zk.Addr(), n.Add(1)), 10*time.Second)
	})
}

// TestSessionFaults runs the session-fault cases against a real
// ZooKeeper: the store under test reaches the server through a TCP proxy
// that the test cuts, as a network partition would; the observer session
// connects directly. Sessions time out after 2 s (4 ticks).
func TestSessionFaults(t *testing.T) {
	zk := zktest.Start(t)
	const session = 2 * time.Second
	var n atomic.Int64
	type cut struct {
		proxy  *zktest.Proxy
		chroot string
	}
	cuts := map[metadata.Store]cut{}
	storetest.RunFaults(t, func(t *testing.T) metadata.Store {
		p := zktest.NewProxy(t, zk.Addr())
		chroot := fmt.Sprintf("/faults/t%d", n.Add(1))
		s := open(t, p.Addr()+chroot, session)
		cuts[s] = cut{p, chroot}
		return s
	}, storetest.Faults{
		Observer: func(t *testing.T, s metadata.Store) metadata.Store {
			return open(t, zk.Addr()+cuts[s].chroot, 10*time.Second)
		},
		Expire: func(t *testing.T, s metadata.Store) {
			// Cut off until the server has expired the session, then let
			// the client reconnect: ZooKeeper tells a client its session
			// expired when it comes back.
			p := cuts[s].proxy
			p.Cut()
			deadline := time.Now().Add(session + 20*time.Second)
			for {
				has, err := zk.HasSession(s.SessionID())
				require.NoError(t, err)
				if !has {
					break
				}
				require.True(t, time.Now().Before(deadline), "ZooKeeper did not expire session %#x", s.SessionID())
				time.Sleep(100 * time.Millisecond) // polling interval
			}
			p.Restore()
		},
		Disconnect: func(t *testing.T, s metadata.Store) func() {
			p := cuts[s].proxy
			p.Cut()
			return p.Restore
		},
	})
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// requireSessionSurvives: after a fault on the ZooKeeper side, s still has
// its session and its ephemeral node /eph, its watch on /later fires when
// another session creates it, and s can write again.
func requireSessionSurvives(t *testing.T, s *zkstore.Store, watch <-chan metadata.Event, observer metadata.Store) {
	t.Helper()
	ctx := t.Context()
	_, err := observer.Create(ctx, "/later", []byte("x"), 0)
	require.NoError(t, err)
	select {
	case ev := <-watch:
		require.Equal(t, metadata.Event{Type: metadata.EventCreated, Path: "/later"}, ev)
	case <-time.After(30 * time.Second):
		t.Fatal("the watch set before the fault did not fire")
	}
	select {
	case <-s.Done():
		t.Fatal("the session ended")
	default:
	}
	_, st, err := observer.Get(ctx, "/eph")
	require.NoError(t, err)
	require.Equal(t, s.SessionID(), st.EphemeralOwner)
	_, err = s.Create(ctx, "/after", nil, 0)
	require.NoError(t, err)
	require.NoError(t, metadata.Sync(ctx, observer, "/after"))
	_, ok, err := observer.Exists(ctx, "/after")
	require.NoError(t, err)
	require.True(t, ok)
}

// TestServerRestart: a standalone ZooKeeper restarted inside the session
// timeout restores its sessions; the client reconnects to the same
// session, with its ephemeral nodes and watches.
func TestServerRestart(t *testing.T) {
	zk := zktest.Start(t)
	s := open(t, zk.Addr()+"/restart", 8*time.Second)
	ctx := t.Context()
	_, err := s.Create(ctx, "/eph", nil, metadata.Ephemeral)
	require.NoError(t, err)
	watch, err := s.Watch(ctx, "/later", metadata.WatchExists)
	require.NoError(t, err)

	zk.Stop()
	zk.Restart()
	observer := open(t, zk.Addr()+"/restart", 8*time.Second)
	requireSessionSurvives(t, s, watch, observer)
}

// TestEnsembleLosesOneServer: in a 3-server ensemble, the server a session
// is connected to is killed; the client moves to another server with the
// same session, and the ensemble (2 of 3) keeps serving writes.
func TestEnsembleLosesOneServer(t *testing.T) {
	e := zktest.StartEnsemble(t, 3)
	s := open(t, e.Connect()+"/ensemble", 8*time.Second)
	ctx := t.Context()
	_, err := s.Create(ctx, "/eph", nil, metadata.Ephemeral)
	require.NoError(t, err)
	watch, err := s.Watch(ctx, "/later", metadata.WatchExists)
	require.NoError(t, err)

	var killed *zktest.Server
	for _, srv := range e.Servers {
		if srv.Addr() == s.Server() {
			killed = srv
		}
	}
	require.NotNil(t, killed, "session on %s, not an ensemble member", s.Server())
	killed.Kill()
	t.Logf("killed %s, the server of session %#x", killed.Addr(), s.SessionID())
	waitFor(t, 30*time.Second, "client on another server", func() bool { return s.Server() != killed.Addr() })

	var rest []string
	for _, srv := range e.Servers {
		if srv != killed {
			rest = append(rest, srv.Addr())
		}
	}
	observer := open(t, strings.Join(rest, ",")+"/ensemble", 8*time.Second)
	requireSessionSurvives(t, s, watch, observer)
}
