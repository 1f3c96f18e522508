package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
)

// Faults are the session faults a store can be put through. ZooKeeper
// makes them necessary: a session expires when its client is cut off for
// longer than the session timeout, and a client cut off for less keeps its
// session, its ephemeral nodes and its watches. Every store runs the cases
// its hooks allow: Expire is required; Disconnect is for stores with a
// connection to lose (zkstore), and its case is left out otherwise.
type Faults struct {
	// Expire makes the store expire s's session and returns once the
	// store has noticed (or may return at once: the cases wait for Done).
	Expire func(t *testing.T, s metadata.Store)
	// Disconnect cuts s off from its server for less than the session
	// timeout; restore reconnects it.
	Disconnect func(t *testing.T, s metadata.Store) (restore func())
	// Observer opens a session on s's data that the faults do not touch
	// (zkstore: one that does not go through the cut-off connection).
	// Nil: metadata.SessionOpener.
	Observer func(t *testing.T, s metadata.Store) metadata.Store
}

func (f Faults) observer(t *testing.T, s metadata.Store) metadata.Store {
	if f.Observer != nil {
		o := f.Observer(t, s)
		t.Cleanup(func() { o.Close() })
		return o
	}
	return openSession(t, s)
}

// RunFaults runs the session-fault cases as subtests of t. newStore is as
// for RunConformance; the store must implement metadata.SessionOpener.
func RunFaults(t *testing.T, newStore func(t *testing.T) metadata.Store, f Faults) {
	t.Run("SessionExpiry", func(t *testing.T) { testSessionExpiry(t, newStore(t), f) })
	t.Run("ReadOtherSessionsWrite", func(t *testing.T) { testReadOtherSessionsWrite(t, newStore(t), f) })
	if f.Disconnect != nil {
		t.Run("ConnectionLossKeepsSession", func(t *testing.T) { testConnectionLoss(t, newStore(t), f) })
	}
}

// testSessionExpiry: an expired session is over: Done closes, every call
// fails with ErrSessionExpired, its pending watches are told, its
// ephemeral nodes are gone for every other session (their watches fire),
// and its persistent nodes stay.
func testSessionExpiry(t *testing.T, s metadata.Store, f Faults) {
	other := f.observer(t, s)
	victim := s
	mustCreate(t, other, "/x", nil, 0)
	mustCreate(t, victim, "/x/eph", []byte("e"), metadata.Ephemeral)
	mustCreate(t, victim, "/x/persistent", []byte("p"), 0)
	gone := mustWatch(t, other, "/x/eph", metadata.WatchExists)
	pending := mustWatch(t, victim, "/x/persistent", metadata.WatchData)

	f.Expire(t, victim)
	select {
	case <-victim.Done():
	case <-time.After(EventTimeout + 30*time.Second):
		t.Fatal("Done not closed after the session expired")
	}
	ev := nextEvent(t, pending)
	require.Equal(t, metadata.EventNotWatching, ev.Type)
	require.ErrorIs(t, ev.Err, metadata.ErrSessionExpired)
	requireEvent(t, gone, metadata.EventDeleted, "/x/eph")

	_, _, err := victim.Get(bg, "/x/persistent")
	require.ErrorIs(t, err, metadata.ErrSessionExpired)
	_, err = victim.Create(bg, "/x/again", nil, metadata.Ephemeral)
	require.ErrorIs(t, err, metadata.ErrSessionExpired)
	_, err = victim.Watch(bg, "/x", metadata.WatchChildren)
	require.ErrorIs(t, err, metadata.ErrSessionExpired)
	_, err = victim.Multi(bg, metadata.CheckOp("/x", metadata.AnyVersion))
	require.ErrorIs(t, err, metadata.ErrSessionExpired)

	require.False(t, exists(t, other, "/x/eph"), "an expired session's ephemeral node is gone")
	require.False(t, exists(t, other, "/x/again"), "nothing created after the expiry")
	data, _ := mustGet(t, other, "/x/persistent")
	require.Equal(t, []byte("p"), data)
	require.NoError(t, victim.Close())
	select {
	case <-other.Done():
		t.Fatal("one session's expiry ended another")
	default:
	}
}

// testReadOtherSessionsWrite: after metadata.Sync, a session reads every
// write another session committed before it (a ZooKeeper server may lag
// the leader; the embedded store is linearizable anyway).
func testReadOtherSessionsWrite(t *testing.T, s metadata.Store, f Faults) {
	writer := f.observer(t, s)
	for i := range 20 {
		mustCreate(t, writer, "/w", []byte{byte(i)}, 0)
		require.NoError(t, metadata.Sync(bg, s, "/w"))
		data, _ := mustGet(t, s, "/w")
		require.Equal(t, []byte{byte(i)}, data)
		require.NoError(t, writer.Delete(bg, "/w", metadata.AnyVersion))
		require.NoError(t, metadata.Sync(bg, s, "/"))
		require.False(t, exists(t, s, "/w"))
	}
}

// testConnectionLoss: a session cut off for less than its timeout keeps
// its ephemeral nodes and its watches; a change made meanwhile by another
// session fires the watch once the session is back.
func testConnectionLoss(t *testing.T, s metadata.Store, f Faults) {
	other := f.observer(t, s)
	mustCreate(t, s, "/eph", nil, metadata.Ephemeral)
	created := mustWatch(t, s, "/later", metadata.WatchExists)

	restore := f.Disconnect(t, s)
	mustCreate(t, other, "/later", []byte("while away"), 0)
	restore()

	requireEvent(t, created, metadata.EventCreated, "/later")
	select {
	case <-s.Done():
		t.Fatal("connection loss inside the session timeout ended the session")
	default:
	}
	_, st := mustGet(t, other, "/eph")
	require.Equal(t, s.SessionID(), st.EphemeralOwner, "the ephemeral node survived with its session")
	data, _ := mustGet(t, s, "/later")
	require.Equal(t, []byte("while away"), data)
	mustCreate(t, s, "/after", nil, 0)
}
