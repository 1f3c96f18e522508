package embedded_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
	"github.com/qk-project/qk/broker/metadata/storetest"
	"github.com/qk-project/qk/broker/vfs"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestConformanceMemory(t *testing.T) {
	storetest.RunConformance(t, func(t *testing.T) metadata.Store {
		s := embedded.New(embedded.WithLogger(testLogger(t)))
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func TestConformanceMemFS(t *testing.T) {
	storetest.RunConformance(t, func(t *testing.T) metadata.Store {
		s, err := embedded.Open(vfs.NewMem(), "/data/__qk_metadata", embedded.WithLogger(testLogger(t)),
			embedded.WithSnapshotEvery(7, 0))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func TestConformanceOS(t *testing.T) {
	if testing.Short() {
		t.Skip("fsyncs on the real disk")
	}
	storetest.RunConformance(t, func(t *testing.T) metadata.Store {
		s, err := embedded.Open(vfs.OS, t.TempDir(), embedded.WithLogger(testLogger(t)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

// TestConformanceReopened runs the suite on a store that has a history:
// nodes written, snapshotted, logged, deleted and replayed twice, so the
// zxid, the root's CVersion and the files are not those of a fresh store.
func TestConformanceReopened(t *testing.T) {
	storetest.RunConformance(t, func(t *testing.T) metadata.Store {
		fsys := vfs.NewMem()
		const dir = "/d"
		ctx := context.Background()
		open := func() *embedded.Store {
			s, err := embedded.Open(fsys, dir, embedded.WithLogger(testLogger(t)), embedded.WithSnapshotEvery(5, 0))
			require.NoError(t, err)
			return s
		}
		s := open()
		require.NoError(t, metadata.EnsurePath(ctx, s, "/history/a/b"))
		for range 4 {
			_, err := s.Create(ctx, "/history/a/n-", []byte("x"), metadata.Sequential)
			require.NoError(t, err)
		}
		_, err := s.Create(ctx, "/history/e", nil, metadata.Ephemeral)
		require.NoError(t, err)
		require.NoError(t, s.Close())

		s = open()
		_, err = s.Set(ctx, "/history/a", []byte("y"), metadata.AnyVersion)
		require.NoError(t, err)
		names, _, err := s.Children(ctx, "/history/a")
		require.NoError(t, err)
		require.Len(t, names, 5)
		for _, n := range names {
			require.NoError(t, s.Delete(ctx, "/history/a/"+n, metadata.AnyVersion))
		}
		require.NoError(t, s.Delete(ctx, "/history/a", metadata.AnyVersion))
		require.NoError(t, s.Delete(ctx, "/history", metadata.AnyVersion))

		s = open() // not closed: the log is replayed, not the snapshot
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		names, st, err := s.Children(ctx, "/")
		require.NoError(t, err)
		require.Empty(t, names)
		require.Positive(t, st.CVersion)
		return s
	})
}

// TestSessionFaults runs the session-fault cases: the embedded store has no
// connection to lose, so only expiry (ExpireSession, as a test makes a
// broker lose its registration) and reads across sessions apply.
func TestSessionFaults(t *testing.T) {
	stores := map[metadata.Store]*embedded.Store{}
	storetest.RunFaults(t, func(t *testing.T) metadata.Store {
		s := embedded.New(embedded.WithLogger(testLogger(t)))
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		sess, err := s.NewSession()
		require.NoError(t, err)
		stores[sess] = s
		return sess
	}, storetest.Faults{
		Expire: func(t *testing.T, s metadata.Store) {
			require.NoError(t, stores[s].ExpireSession(s.SessionID()))
		},
	})
}
