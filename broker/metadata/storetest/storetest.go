// Package storetest is the conformance suite of metadata.Store: every
// implementation (embedded, zkstore) runs RunConformance and so behaves
// the same to the controller.
//
// The suite uses the Store interface only. It needs a fresh store per test
// (for ZooKeeper: a fresh chroot; the root may hold other nodes, such as
// /zookeeper, which the suite ignores). Tests of ephemeral nodes across
// sessions use metadata.SessionOpener when the store implements it, and
// are skipped otherwise. Waits for watch events are bounded by
// EventTimeout; the suite never sleeps.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
)

// EventTimeout bounds every wait for a watch event.
var EventTimeout = 10 * time.Second

// RunConformance runs the suite as subtests of t. newStore must return a
// fresh, open store for each call and arrange for it to be closed at the
// end of the test (t.Cleanup); the suite closes some stores itself, and
// Close must then return nil again.
func RunConformance(t *testing.T, newStore func(t *testing.T) metadata.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s metadata.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CreateErrors", testCreateErrors},
		{"NilAndLargeData", testData},
		{"Root", testRoot},
		{"BadPaths", testBadPaths},
		{"ZxidsIncrease", testZxids},
		{"SetVersions", testSetVersions},
		{"UnconditionalSetBumpsVersion", testUnconditionalSet},
		{"DeleteVersions", testDeleteVersions},
		{"Children", testChildren},
		{"Exists", testExists},
		{"Sequential", testSequential},
		{"Ephemeral", testEphemeral},
		{"EphemeralsVanishWithSession", testEphemeralsVanish},
		{"PersistentOutlivesSession", testPersistentOutlivesSession},
		{"WatchData", testWatchData},
		{"WatchChildren", testWatchChildren},
		{"WatchExists", testWatchExists},
		{"WatchOneShot", testWatchOneShot},
		{"WatchManyWatchers", testWatchMany},
		{"WatchOtherSession", testWatchOtherSession},
		{"WatchContext", testWatchContext},
		{"WatchEndsWithSession", testWatchEndsWithSession},
		{"Multi", testMulti},
		{"MultiSeesEarlierOps", testMultiOrder},
		{"MultiFailureChangesNothing", testMultiAtomic},
		{"MultiCheck", testMultiCheck},
		{"Closed", testClosed},
		{"ContextCanceled", testContextCanceled},
		{"Helpers", testHelpers},
		{"ConcurrentCAS", testConcurrentCAS},
		{"ConcurrentSequential", testConcurrentSequential},
		{"ConcurrentWatchers", testConcurrentWatchers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			require.NotNil(t, s)
			tc.fn(t, s)
		})
	}
}

var bg = context.Background()

// openSession opens a second session on s's data, or skips the test.
func openSession(t *testing.T, s metadata.Store) metadata.Store {
	t.Helper()
	so, ok := s.(metadata.SessionOpener)
	if !ok {
		t.Skipf("%T does not implement metadata.SessionOpener", s)
	}
	s2, err := so.OpenSession(bg)
	require.NoError(t, err)
	t.Cleanup(func() { s2.Close() })
	require.NotEqual(t, s.SessionID(), s2.SessionID(), "sessions must have distinct ids")
	return s2
}

func mustCreate(t *testing.T, s metadata.Store, path string, data []byte, flags metadata.CreateFlags) string {
	t.Helper()
	p, err := s.Create(bg, path, data, flags)
	require.NoError(t, err, "create %s", path)
	return p
}

func mustGet(t *testing.T, s metadata.Store, path string) ([]byte, metadata.Stat) {
	t.Helper()
	data, st, err := s.Get(bg, path)
	require.NoError(t, err, "get %s", path)
	return data, st
}

func mustWatch(t *testing.T, s metadata.Store, path string, kind metadata.WatchKind) <-chan metadata.Event {
	t.Helper()
	ch, err := s.Watch(bg, path, kind)
	require.NoError(t, err, "watch %s %s", kind, path)
	return ch
}

func exists(t *testing.T, s metadata.Store, path string) bool {
	t.Helper()
	_, ok, err := s.Exists(bg, path)
	require.NoError(t, err, "exists %s", path)
	return ok
}

// nextEvent waits for the one event of a watch and checks that the
// channel is closed after it.
func nextEvent(t *testing.T, ch <-chan metadata.Event) metadata.Event {
	t.Helper()
	timer := time.NewTimer(EventTimeout)
	defer timer.Stop()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "watch channel closed without an event")
		select {
		case extra, ok := <-ch:
			require.False(t, ok, "second event %+v on a one-shot watch", extra)
		case <-timer.C:
			t.Fatalf("watch channel not closed after its event %+v", ev)
		}
		return ev
	case <-timer.C:
		t.Fatalf("no watch event within %v", EventTimeout)
	}
	return metadata.Event{}
}

func requireEvent(t *testing.T, ch <-chan metadata.Event, typ metadata.EventType, path string) {
	t.Helper()
	ev := nextEvent(t, ch)
	require.Equal(t, metadata.Event{Type: typ, Path: path}, ev)
}

// requireNoEvent checks that a watch has not fired. Call it after a round
// trip that follows the change that must not fire it: ZooKeeper delivers
// a watch event before the reply to any later request of the session. It
// cannot catch an event delivered late.
func requireNoEvent(t *testing.T, s metadata.Store, ch <-chan metadata.Event) {
	t.Helper()
	_, _, err := s.Exists(bg, "/")
	require.NoError(t, err)
	select {
	case ev := <-ch:
		t.Fatalf("unexpected watch event %+v", ev)
	default:
	}
}

func testCreateGet(t *testing.T, s metadata.Store) {
	p, err := s.Create(bg, "/a", []byte("hello"), 0)
	require.NoError(t, err)
	require.Equal(t, "/a", p)

	data, st := mustGet(t, s, "/a")
	require.Equal(t, []byte("hello"), data)
	require.Equal(t, int32(0), st.Version)
	require.Equal(t, int32(0), st.CVersion)
	require.Equal(t, int32(5), st.DataLength)
	require.Equal(t, int32(0), st.NumChildren)
	require.Equal(t, int64(0), st.EphemeralOwner)
	require.Positive(t, st.Czxid)
	require.Equal(t, st.Czxid, st.Mzxid)
	require.Positive(t, st.Ctime)
	require.Equal(t, st.Ctime, st.Mtime)
	now := time.Now().UnixMilli()
	require.InDelta(t, now, st.Ctime, float64(time.Hour.Milliseconds()), "ctime is milliseconds since the epoch")

	mustCreate(t, s, "/a/b", []byte("x"), 0)
	data, _ = mustGet(t, s, "/a/b")
	require.Equal(t, []byte("x"), data)

	// The returned data belongs to the caller.
	data[0] = 'y'
	data, _ = mustGet(t, s, "/a/b")
	require.Equal(t, []byte("x"), data)
}

func testCreateErrors(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/a", nil, 0)
	_, err := s.Create(bg, "/a", []byte("again"), 0)
	require.ErrorIs(t, err, metadata.ErrNodeExists)
	_, err = s.Create(bg, "/a", nil, metadata.Ephemeral)
	require.ErrorIs(t, err, metadata.ErrNodeExists)
	_, err = s.Create(bg, "/missing/child", nil, 0)
	require.ErrorIs(t, err, metadata.ErrNoNode)
	_, err = s.Create(bg, "/missing/child-", nil, metadata.Sequential)
	require.ErrorIs(t, err, metadata.ErrNoNode)
	_, _, err = s.Get(bg, "/missing")
	require.ErrorIs(t, err, metadata.ErrNoNode)
	data, _ := mustGet(t, s, "/a")
	require.Empty(t, data, "a failed create must not change the node")
}

func testData(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/nil", nil, 0)
	data, st := mustGet(t, s, "/nil")
	require.Empty(t, data)
	require.Equal(t, int32(0), st.DataLength)

	mustCreate(t, s, "/empty", []byte{}, 0)
	data, _ = mustGet(t, s, "/empty")
	require.Empty(t, data)

	big := make([]byte, 512<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	mustCreate(t, s, "/big", big, 0)
	data, st = mustGet(t, s, "/big")
	require.Equal(t, big, data)
	require.Equal(t, int32(len(big)), st.DataLength)

	_, err := s.Set(bg, "/big", nil, metadata.AnyVersion)
	require.NoError(t, err)
	data, st = mustGet(t, s, "/big")
	require.Empty(t, data)
	require.Equal(t, int32(0), st.DataLength)

	// The store must not keep the caller's slice.
	buf := []byte("abc")
	mustCreate(t, s, "/copy", buf, 0)
	buf[0] = 'X'
	data, _ = mustGet(t, s, "/copy")
	require.Equal(t, []byte("abc"), data)
}

func testRoot(t *testing.T, s metadata.Store) {
	require.True(t, exists(t, s, "/"))
	_, err := s.Create(bg, "/", nil, 0)
	require.ErrorIs(t, err, metadata.ErrNodeExists)
	mustCreate(t, s, "/top", nil, 0)
	names, _, err := s.Children(bg, "/")
	require.NoError(t, err)
	require.Contains(t, names, "top")
}

func testBadPaths(t *testing.T, s metadata.Store) {
	for _, p := range []string{"", "a", "a/b", "/a/", "//", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "/a\x00b"} {
		t.Run(fmt.Sprintf("%q", p), func(t *testing.T) {
			_, err := s.Create(bg, p, nil, 0)
			require.ErrorIs(t, err, metadata.ErrBadPath)
			_, _, err = s.Get(bg, p)
			require.ErrorIs(t, err, metadata.ErrBadPath)
		})
	}
}

func testZxids(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/a", nil, 0)
	mustCreate(t, s, "/b", nil, 0)
	_, a := mustGet(t, s, "/a")
	_, b := mustGet(t, s, "/b")
	require.Greater(t, b.Czxid, a.Czxid)
	st, err := s.Set(bg, "/a", []byte("x"), 0)
	require.NoError(t, err)
	require.Equal(t, a.Czxid, st.Czxid)
	require.Greater(t, st.Mzxid, b.Czxid)
	require.GreaterOrEqual(t, st.Mtime, a.Mtime)
}

func testSetVersions(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/v", []byte("0"), 0)
	_, created := mustGet(t, s, "/v")

	st, err := s.Set(bg, "/v", []byte("1"), 0)
	require.NoError(t, err)
	require.Equal(t, int32(1), st.Version)
	require.Equal(t, int32(1), st.DataLength)
	require.Equal(t, created.Czxid, st.Czxid)
	require.Greater(t, st.Mzxid, created.Mzxid)
	_, got := mustGet(t, s, "/v")
	require.Equal(t, st, got, "Set returns the node's new Stat")

	_, err = s.Set(bg, "/v", []byte("stale"), 0)
	require.ErrorIs(t, err, metadata.ErrBadVersion)
	_, err = s.Set(bg, "/v", []byte("future"), 5)
	require.ErrorIs(t, err, metadata.ErrBadVersion)
	data, _ := mustGet(t, s, "/v")
	require.Equal(t, []byte("1"), data, "a failed Set changes nothing")

	st, err = s.Set(bg, "/v", []byte("any"), metadata.AnyVersion)
	require.NoError(t, err)
	require.Equal(t, int32(2), st.Version)
	st, err = s.Set(bg, "/v", []byte("two"), 2)
	require.NoError(t, err)
	require.Equal(t, int32(3), st.Version)
	data, _ = mustGet(t, s, "/v")
	require.Equal(t, []byte("two"), data)

	_, err = s.Set(bg, "/nope", nil, metadata.AnyVersion)
	require.ErrorIs(t, err, metadata.ErrNoNode)
}

// testUnconditionalSet: every Set with AnyVersion bumps the version by
// one, even when the data does not change, and concurrent ones each get
// their own version. Generated broker ids rest on this (Kafka's
// generateBrokerSequenceId: an empty Set of /brokers/seqid).
func testUnconditionalSet(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/seq", nil, 0)
	for want := int32(1); want <= 3; want++ {
		st, err := s.Set(bg, "/seq", nil, metadata.AnyVersion)
		require.NoError(t, err)
		require.Equal(t, want, st.Version)
		require.Zero(t, st.DataLength)
	}

	const workers, sets = 8, 10
	got := make([][]int32, workers)
	run(t, workers, func(i int) error {
		for range sets {
			st, err := s.Set(bg, "/seq", nil, metadata.AnyVersion)
			if err != nil {
				return err
			}
			got[i] = append(got[i], st.Version)
		}
		return nil
	})
	all := slices.Sorted(slices.Values(slices.Concat(got...)))
	want := make([]int32, 0, workers*sets)
	for v := int32(4); v < 4+workers*sets; v++ {
		want = append(want, v)
	}
	require.Equal(t, want, all, "each unconditional Set has its own version")
	_, st := mustGet(t, s, "/seq")
	require.Equal(t, int32(3+workers*sets), st.Version)
}

func testDeleteVersions(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/d", nil, 0)
	mustCreate(t, s, "/d/child", nil, 0)
	_, err := s.Set(bg, "/d", []byte("x"), 0)
	require.NoError(t, err)

	require.ErrorIs(t, s.Delete(bg, "/d", 0), metadata.ErrBadVersion)
	require.ErrorIs(t, s.Delete(bg, "/d", 1), metadata.ErrNotEmpty)
	require.ErrorIs(t, s.Delete(bg, "/d", metadata.AnyVersion), metadata.ErrNotEmpty)
	require.NoError(t, s.Delete(bg, "/d/child", 0))
	require.NoError(t, s.Delete(bg, "/d", 1))
	require.False(t, exists(t, s, "/d"))
	require.ErrorIs(t, s.Delete(bg, "/d", metadata.AnyVersion), metadata.ErrNoNode)

	mustCreate(t, s, "/d", nil, 0)
	require.NoError(t, s.Delete(bg, "/d", metadata.AnyVersion))
	_, _, err = s.Get(bg, "/d")
	require.ErrorIs(t, err, metadata.ErrNoNode)
}

func testChildren(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/p", []byte("data"), 0)
	_, before := mustGet(t, s, "/p")
	for _, c := range []string{"a", "b", "c"} {
		mustCreate(t, s, "/p/"+c, nil, 0)
	}
	names, st, err := s.Children(bg, "/p")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b", "c"}, names)
	require.Equal(t, int32(3), st.NumChildren)
	require.Equal(t, int32(3), st.CVersion)
	require.Equal(t, int32(0), st.Version, "child changes do not bump the data version")
	require.Equal(t, before.Mzxid, st.Mzxid, "child changes do not change Mzxid")
	require.Greater(t, st.Pzxid, before.Pzxid)
	_, c := mustGet(t, s, "/p/c")
	require.Equal(t, c.Czxid, st.Pzxid, "Pzxid is the zxid of the last child change")

	require.NoError(t, s.Delete(bg, "/p/b", metadata.AnyVersion))
	names, st, err = s.Children(bg, "/p")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "c"}, names)
	require.Equal(t, int32(2), st.NumChildren)
	require.Equal(t, int32(4), st.CVersion, "deletions bump CVersion too")
	require.Greater(t, st.Pzxid, c.Czxid)

	// Grandchildren are not children; a child's data change is not a
	// child change.
	mustCreate(t, s, "/p/a/deep", nil, 0)
	_, err = s.Set(bg, "/p/a", []byte("x"), metadata.AnyVersion)
	require.NoError(t, err)
	names, st, err = s.Children(bg, "/p")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "c"}, names)
	require.Equal(t, int32(4), st.CVersion)

	names, st, err = s.Children(bg, "/p/c")
	require.NoError(t, err)
	require.Empty(t, names)
	require.Equal(t, int32(0), st.NumChildren)

	_, _, err = s.Children(bg, "/nope")
	require.ErrorIs(t, err, metadata.ErrNoNode)
}

func testExists(t *testing.T, s metadata.Store) {
	st, ok, err := s.Exists(bg, "/x")
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, metadata.Stat{}, st)
	mustCreate(t, s, "/x", []byte("1"), 0)
	st, ok, err = s.Exists(bg, "/x")
	require.NoError(t, err)
	require.True(t, ok)
	_, got := mustGet(t, s, "/x")
	require.Equal(t, got, st)
}

func testSequential(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/s", nil, 0)
	for i := range 3 {
		p := mustCreate(t, s, "/s/n-", []byte{byte(i)}, metadata.Sequential)
		require.Equal(t, fmt.Sprintf("/s/n-%010d", i), p)
		data, _ := mustGet(t, s, p)
		require.Equal(t, []byte{byte(i)}, data)
	}
	// The suffix counts the parent's child creations, as real ZooKeeper's
	// does; the CVersion it reports counts deletions too.
	mustCreate(t, s, "/s/x", nil, 0)
	require.NoError(t, s.Delete(bg, "/s/x", metadata.AnyVersion))
	_, st := mustGet(t, s, "/s")
	require.Equal(t, int32(5), st.CVersion, "4 creations and a deletion")
	require.Equal(t, "/s/n-0000000004", mustCreate(t, s, "/s/n-", nil, metadata.Sequential))
	require.Equal(t, "/s/other_0000000005", mustCreate(t, s, "/s/other_", nil, metadata.Sequential))
	require.Equal(t, "/s/0000000006", mustCreate(t, s, "/s/", nil, metadata.Sequential))

	p := mustCreate(t, s, "/s/e-", nil, metadata.Ephemeral|metadata.Sequential)
	require.Equal(t, "/s/e-0000000007", p)
	_, st = mustGet(t, s, p)
	require.Equal(t, s.SessionID(), st.EphemeralOwner)

	// A sequential name that exists already is ErrNodeExists.
	mustCreate(t, s, "/s/n-0000000009", nil, 0) // the 9th creation: the next suffix is 9
	_, err := s.Create(bg, "/s/n-", nil, metadata.Sequential)
	require.ErrorIs(t, err, metadata.ErrNodeExists)

	names, _, err := s.Children(bg, "/s")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{
		"n-0000000000", "n-0000000001", "n-0000000002", "n-0000000004",
		"other_0000000005", "0000000006", "e-0000000007", "n-0000000009",
	}, names)
}

func testEphemeral(t *testing.T, s metadata.Store) {
	require.NotZero(t, s.SessionID())
	p := mustCreate(t, s, "/e", []byte("me"), metadata.Ephemeral)
	require.Equal(t, "/e", p)
	data, st := mustGet(t, s, "/e")
	require.Equal(t, []byte("me"), data)
	require.Equal(t, s.SessionID(), st.EphemeralOwner)

	_, err := s.Create(bg, "/e/child", nil, 0)
	require.ErrorIs(t, err, metadata.ErrNoChildrenForEphemerals)
	_, err = s.Create(bg, "/e/child-", nil, metadata.Sequential)
	require.ErrorIs(t, err, metadata.ErrNoChildrenForEphemerals)
	_, err = s.Create(bg, "/e/child", nil, metadata.Ephemeral)
	require.ErrorIs(t, err, metadata.ErrNoChildrenForEphemerals)

	st, err = s.Set(bg, "/e", []byte("new"), 0)
	require.NoError(t, err)
	require.Equal(t, s.SessionID(), st.EphemeralOwner)
	require.NoError(t, s.Delete(bg, "/e", 1))
	require.False(t, exists(t, s, "/e"))
}

func testEphemeralsVanish(t *testing.T, s metadata.Store) {
	s2 := openSession(t, s)
	mustCreate(t, s, "/t", nil, 0)
	mustCreate(t, s2, "/t/e1", []byte("1"), metadata.Ephemeral)
	seq := mustCreate(t, s2, "/t/e-", nil, metadata.Ephemeral|metadata.Sequential)
	mustCreate(t, s2, "/t/e3", nil, metadata.Ephemeral)
	mustCreate(t, s2, "/t/p", []byte("persistent"), 0)
	mustCreate(t, s, "/t/mine", nil, metadata.Ephemeral)

	_, st := mustGet(t, s, "/t/e1")
	require.Equal(t, s2.SessionID(), st.EphemeralOwner, "other sessions see the owner")
	_, st = mustGet(t, s, seq)
	require.Equal(t, s2.SessionID(), st.EphemeralOwner)

	// Any session may delete another's ephemeral node.
	require.NoError(t, s.Delete(bg, "/t/e3", metadata.AnyVersion))

	exist := mustWatch(t, s, "/t/e1", metadata.WatchExists)
	data := mustWatch(t, s, seq, metadata.WatchData)
	children := mustWatch(t, s, "/t", metadata.WatchChildren)
	_, before := mustGet(t, s, "/t")

	require.NoError(t, s2.Close())
	requireEvent(t, exist, metadata.EventDeleted, "/t/e1")
	requireEvent(t, data, metadata.EventDeleted, seq)
	requireEvent(t, children, metadata.EventChildrenChanged, "/t")

	names, st, err := s.Children(bg, "/t")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"p", "mine"}, names)
	require.Equal(t, before.CVersion+2, st.CVersion, "each deleted ephemeral bumps CVersion")
	data2, _ := mustGet(t, s, "/t/p")
	require.Equal(t, []byte("persistent"), data2)

	select {
	case <-s2.Done():
	default:
		t.Fatal("Done not closed by Close")
	}
	_, _, err = s2.Get(bg, "/t/p")
	require.ErrorIs(t, err, metadata.ErrClosed)
	require.NoError(t, s2.Close(), "second Close")
	select {
	case <-s.Done():
		t.Fatal("closing one session ended another")
	default:
	}
}

func testPersistentOutlivesSession(t *testing.T, s metadata.Store) {
	s2 := openSession(t, s)
	mustCreate(t, s2, "/keep", []byte("v"), 0)
	_, err := s2.Set(bg, "/keep", []byte("v2"), 0)
	require.NoError(t, err)
	_, want := mustGet(t, s2, "/keep")
	require.NoError(t, s2.Close())
	s3 := openSession(t, s)
	data, got := mustGet(t, s3, "/keep")
	require.Equal(t, []byte("v2"), data)
	require.Equal(t, want, got)
}

func testWatchData(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/w", nil, 0)
	_, err := s.Watch(bg, "/missing", metadata.WatchData)
	require.ErrorIs(t, err, metadata.ErrNoNode)

	ch := mustWatch(t, s, "/w", metadata.WatchData)
	mustCreate(t, s, "/w/child", nil, 0) // not a data change
	requireNoEvent(t, s, ch)
	_, err = s.Set(bg, "/w", []byte("x"), metadata.AnyVersion)
	require.NoError(t, err)
	requireEvent(t, ch, metadata.EventDataChanged, "/w")

	ch = mustWatch(t, s, "/w/child", metadata.WatchData)
	require.NoError(t, s.Delete(bg, "/w/child", metadata.AnyVersion))
	requireEvent(t, ch, metadata.EventDeleted, "/w/child")

	// A Set with a wrong version changes nothing and fires nothing.
	ch = mustWatch(t, s, "/w", metadata.WatchData)
	_, err = s.Set(bg, "/w", []byte("y"), 99)
	require.ErrorIs(t, err, metadata.ErrBadVersion)
	requireNoEvent(t, s, ch)
	_, err = s.Set(bg, "/w", []byte("y"), metadata.AnyVersion)
	require.NoError(t, err)
	requireEvent(t, ch, metadata.EventDataChanged, "/w")
}

func testWatchChildren(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/w", nil, 0)
	mustCreate(t, s, "/w/a", nil, 0)
	_, err := s.Watch(bg, "/missing", metadata.WatchChildren)
	require.ErrorIs(t, err, metadata.ErrNoNode)

	ch := mustWatch(t, s, "/w", metadata.WatchChildren)
	_, err = s.Set(bg, "/w", []byte("x"), metadata.AnyVersion) // not a child change
	require.NoError(t, err)
	_, err = s.Set(bg, "/w/a", []byte("x"), metadata.AnyVersion) // nor is a child's data
	require.NoError(t, err)
	mustCreate(t, s, "/w/a/grandchild", nil, 0) // nor a grandchild
	requireNoEvent(t, s, ch)
	mustCreate(t, s, "/w/b", nil, 0)
	requireEvent(t, ch, metadata.EventChildrenChanged, "/w")

	ch = mustWatch(t, s, "/w", metadata.WatchChildren)
	require.NoError(t, s.Delete(bg, "/w/b", metadata.AnyVersion))
	requireEvent(t, ch, metadata.EventChildrenChanged, "/w")

	ch = mustWatch(t, s, "/w/a/grandchild", metadata.WatchChildren)
	require.NoError(t, s.Delete(bg, "/w/a/grandchild", metadata.AnyVersion))
	requireEvent(t, ch, metadata.EventDeleted, "/w/a/grandchild")
}

func testWatchExists(t *testing.T, s metadata.Store) {
	ch := mustWatch(t, s, "/x", metadata.WatchExists)
	mustCreate(t, s, "/x", nil, 0)
	requireEvent(t, ch, metadata.EventCreated, "/x")

	ch = mustWatch(t, s, "/x", metadata.WatchExists)
	mustCreate(t, s, "/x/child", nil, 0) // not a change of /x itself
	requireNoEvent(t, s, ch)
	_, err := s.Set(bg, "/x", []byte("1"), metadata.AnyVersion)
	require.NoError(t, err)
	requireEvent(t, ch, metadata.EventDataChanged, "/x")

	ch = mustWatch(t, s, "/x/child", metadata.WatchExists)
	require.NoError(t, s.Delete(bg, "/x/child", metadata.AnyVersion))
	requireEvent(t, ch, metadata.EventDeleted, "/x/child")

	// An exists watch on a node whose parent is missing is fine too.
	ch = mustWatch(t, s, "/y/z", metadata.WatchExists)
	mustCreate(t, s, "/y", nil, 0)
	requireNoEvent(t, s, ch)
	mustCreate(t, s, "/y/z", nil, metadata.Ephemeral)
	requireEvent(t, ch, metadata.EventCreated, "/y/z")
}

func testWatchOneShot(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/o", nil, 0)
	ch := mustWatch(t, s, "/o", metadata.WatchData)
	for i := range 3 {
		_, err := s.Set(bg, "/o", []byte{byte(i)}, metadata.AnyVersion)
		require.NoError(t, err)
	}
	requireEvent(t, ch, metadata.EventDataChanged, "/o") // and the channel is closed

	// Watching again after the event sees the next change only.
	ch = mustWatch(t, s, "/o", metadata.WatchData)
	requireNoEvent(t, s, ch)
	require.NoError(t, s.Delete(bg, "/o", metadata.AnyVersion))
	requireEvent(t, ch, metadata.EventDeleted, "/o")
}

func testWatchMany(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/m", nil, 0)
	data1 := mustWatch(t, s, "/m", metadata.WatchData)
	data2 := mustWatch(t, s, "/m", metadata.WatchData)
	exist := mustWatch(t, s, "/m", metadata.WatchExists)
	children := mustWatch(t, s, "/m", metadata.WatchChildren)
	_, err := s.Set(bg, "/m", []byte("x"), metadata.AnyVersion)
	require.NoError(t, err)
	requireEvent(t, data1, metadata.EventDataChanged, "/m")
	requireEvent(t, data2, metadata.EventDataChanged, "/m")
	requireEvent(t, exist, metadata.EventDataChanged, "/m")
	requireNoEvent(t, s, children)
	require.NoError(t, s.Delete(bg, "/m", metadata.AnyVersion))
	requireEvent(t, children, metadata.EventDeleted, "/m")
}

func testWatchOtherSession(t *testing.T, s metadata.Store) {
	s2 := openSession(t, s)
	mustCreate(t, s, "/o", nil, 0)
	data := mustWatch(t, s, "/o", metadata.WatchData)
	children := mustWatch(t, s, "/o", metadata.WatchChildren)
	created := mustWatch(t, s, "/o/e", metadata.WatchExists)
	_, err := s2.Set(bg, "/o", []byte("x"), metadata.AnyVersion)
	require.NoError(t, err)
	mustCreate(t, s2, "/o/e", nil, metadata.Ephemeral)
	requireEvent(t, data, metadata.EventDataChanged, "/o")
	requireEvent(t, children, metadata.EventChildrenChanged, "/o")
	requireEvent(t, created, metadata.EventCreated, "/o/e")
}

func testWatchContext(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/c", nil, 0)
	ctx, cancel := context.WithCancel(bg)
	ch, err := s.Watch(ctx, "/c", metadata.WatchData)
	require.NoError(t, err)
	cancel()
	ev := nextEvent(t, ch)
	require.Equal(t, metadata.EventNotWatching, ev.Type)
	require.Equal(t, "/c", ev.Path)
	require.ErrorIs(t, ev.Err, context.Canceled)
	_, err = s.Set(bg, "/c", []byte("x"), metadata.AnyVersion)
	require.NoError(t, err)

	// Canceling after the watch fired changes nothing.
	ctx, cancel = context.WithCancel(bg)
	ch, err = s.Watch(ctx, "/c", metadata.WatchData)
	require.NoError(t, err)
	_, err = s.Set(bg, "/c", []byte("y"), metadata.AnyVersion)
	require.NoError(t, err)
	requireEvent(t, ch, metadata.EventDataChanged, "/c")
	cancel()

	ctx, cancel = context.WithCancel(bg)
	cancel()
	_, err = s.Watch(ctx, "/c", metadata.WatchData)
	require.ErrorIs(t, err, context.Canceled)
}

func testWatchEndsWithSession(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/z", nil, 0)
	if so, ok := s.(metadata.SessionOpener); ok {
		s2, err := so.OpenSession(bg)
		require.NoError(t, err)
		ch := mustWatch(t, s2, "/z", metadata.WatchData)
		other := mustWatch(t, s, "/z", metadata.WatchData)
		require.NoError(t, s2.Close())
		ev := nextEvent(t, ch)
		require.Equal(t, metadata.EventNotWatching, ev.Type)
		require.ErrorIs(t, ev.Err, metadata.ErrClosed)
		requireNoEvent(t, s, other)
	}
	ch := mustWatch(t, s, "/z", metadata.WatchChildren)
	require.NoError(t, s.Close())
	ev := nextEvent(t, ch)
	require.Equal(t, metadata.EventNotWatching, ev.Type)
	require.ErrorIs(t, ev.Err, metadata.ErrClosed)
}

func testMulti(t *testing.T, s metadata.Store) {
	res, err := s.Multi(bg,
		metadata.CreateOp("/m", []byte("v0"), 0),
		metadata.CreateOp("/m/a", nil, 0),
		metadata.SetOp("/m", []byte("v1"), 0),
		metadata.CheckOp("/m", 1),
		metadata.CreateOp("/m/s-", nil, metadata.Sequential),
		metadata.DeleteOp("/m/a", 0),
		metadata.CreateOp("/m/e", nil, metadata.Ephemeral),
	)
	require.NoError(t, err)
	require.Len(t, res, 7)
	require.Equal(t, metadata.OpCreate, res[0].Type)
	require.Equal(t, "/m", res[0].Path)
	require.Equal(t, "/m/a", res[1].Path)
	require.Equal(t, metadata.OpSet, res[2].Type)
	require.Equal(t, int32(1), res[2].Stat.Version)
	require.Equal(t, metadata.OpCheck, res[3].Type)
	require.Equal(t, "/m/s-0000000001", res[4].Path)
	require.Equal(t, metadata.OpDelete, res[5].Type)
	require.Equal(t, "/m/e", res[6].Path)

	data, st := mustGet(t, s, "/m")
	require.Equal(t, []byte("v1"), data)
	require.Equal(t, int32(1), st.Version)
	require.Equal(t, st.Czxid, st.Mzxid, "a Multi is one transaction with one zxid")
	require.Equal(t, st.Czxid, st.Pzxid)
	require.Equal(t, int32(4), st.CVersion)
	names, _, err := s.Children(bg, "/m")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"s-0000000001", "e"}, names)
	_, e := mustGet(t, s, "/m/e")
	require.Equal(t, s.SessionID(), e.EphemeralOwner)
	require.Equal(t, st.Czxid, e.Czxid)

	res, err = s.Multi(bg)
	require.NoError(t, err)
	require.Empty(t, res)
}

func testMultiOrder(t *testing.T, s metadata.Store) {
	// Later ops see earlier ones: create then delete, delete then create.
	mustCreate(t, s, "/r", []byte("old"), 0)
	_, err := s.Multi(bg,
		metadata.DeleteOp("/r", 0),
		metadata.CreateOp("/r", []byte("new"), 0),
		metadata.CreateOp("/tmp", nil, 0),
		metadata.DeleteOp("/tmp", 0),
	)
	require.NoError(t, err)
	data, st := mustGet(t, s, "/r")
	require.Equal(t, []byte("new"), data)
	require.Equal(t, int32(0), st.Version)
	require.False(t, exists(t, s, "/tmp"))

	// The classic controller CAS: write only if the fencing node is
	// unchanged.
	mustCreate(t, s, "/epoch", []byte("1"), 0)
	mustCreate(t, s, "/state", []byte("a"), 0)
	_, err = s.Multi(bg, metadata.CheckOp("/epoch", 0), metadata.SetOp("/state", []byte("b"), 0))
	require.NoError(t, err)
	_, err = s.Set(bg, "/epoch", []byte("2"), 0)
	require.NoError(t, err)
	_, err = s.Multi(bg, metadata.CheckOp("/epoch", 0), metadata.SetOp("/state", []byte("c"), 1))
	require.ErrorIs(t, err, metadata.ErrBadVersion)
	data, _ = mustGet(t, s, "/state")
	require.Equal(t, []byte("b"), data)
}

func testMultiAtomic(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/f", []byte("orig"), 0)
	_, before := mustGet(t, s, "/f")
	data := mustWatch(t, s, "/f", metadata.WatchData)
	children := mustWatch(t, s, "/f", metadata.WatchChildren)
	created := mustWatch(t, s, "/g", metadata.WatchExists)

	cases := []struct {
		name  string
		ops   []metadata.Op
		index int
		want  error
	}{
		{"bad version", []metadata.Op{
			metadata.CreateOp("/f/new", nil, 0),
			metadata.SetOp("/f", []byte("changed"), 7),
			metadata.CreateOp("/g", nil, 0),
		}, 1, metadata.ErrBadVersion},
		{"no node", []metadata.Op{
			metadata.SetOp("/f", []byte("changed"), metadata.AnyVersion),
			metadata.CreateOp("/g", nil, 0),
			metadata.CheckOp("/missing", metadata.AnyVersion),
		}, 2, metadata.ErrNoNode},
		{"exists", []metadata.Op{
			metadata.CreateOp("/g", nil, metadata.Ephemeral),
			metadata.CreateOp("/f/new", nil, 0),
			metadata.CreateOp("/f", nil, 0),
		}, 2, metadata.ErrNodeExists},
		{"not empty", []metadata.Op{
			metadata.CreateOp("/f/new", nil, 0),
			metadata.DeleteOp("/f", metadata.AnyVersion),
		}, 1, metadata.ErrNotEmpty},
		{"ephemeral parent", []metadata.Op{
			metadata.CreateOp("/g", nil, metadata.Ephemeral),
			metadata.CreateOp("/g/child", nil, 0),
		}, 1, metadata.ErrNoChildrenForEphemerals},
		{"bad path", []metadata.Op{
			metadata.CreateOp("/g", nil, 0),
			metadata.CreateOp("g", nil, 0),
		}, 1, metadata.ErrBadPath},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Multi(bg, tc.ops...)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, res)
			var me *metadata.MultiError
			require.ErrorAs(t, err, &me)
			require.Equal(t, tc.index, me.Index)
			require.Equal(t, tc.ops[tc.index], me.Op)

			got, st := mustGet(t, s, "/f")
			require.Equal(t, []byte("orig"), got)
			require.Equal(t, before, st)
			require.False(t, exists(t, s, "/f/new"))
			require.False(t, exists(t, s, "/g"))
		})
	}
	requireNoEvent(t, s, data)
	requireNoEvent(t, s, children)
	requireNoEvent(t, s, created)

	// A successful Multi fires each watch once.
	_, err := s.Multi(bg,
		metadata.SetOp("/f", []byte("1"), 0),
		metadata.SetOp("/f", []byte("2"), 1),
		metadata.CreateOp("/f/a", nil, 0),
		metadata.CreateOp("/f/b", nil, 0),
		metadata.CreateOp("/g", nil, 0),
	)
	require.NoError(t, err)
	requireEvent(t, data, metadata.EventDataChanged, "/f")
	requireEvent(t, children, metadata.EventChildrenChanged, "/f")
	requireEvent(t, created, metadata.EventCreated, "/g")
}

func testMultiCheck(t *testing.T, s metadata.Store) {
	_, err := s.Multi(bg, metadata.CheckOp("/c", metadata.AnyVersion))
	require.ErrorIs(t, err, metadata.ErrNoNode)
	mustCreate(t, s, "/c", nil, 0)
	_, err = s.Multi(bg, metadata.CheckOp("/c", metadata.AnyVersion))
	require.NoError(t, err)
	_, err = s.Multi(bg, metadata.CheckOp("/c", 0))
	require.NoError(t, err)
	_, err = s.Multi(bg, metadata.CheckOp("/c", 1))
	require.ErrorIs(t, err, metadata.ErrBadVersion)
	_, st := mustGet(t, s, "/c")
	require.Equal(t, st.Czxid, st.Mzxid, "a Check changes nothing")
}

func testClosed(t *testing.T, s metadata.Store) {
	mustCreate(t, s, "/a", nil, 0)
	require.NoError(t, s.Close())
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed by Close")
	}
	_, err := s.Create(bg, "/b", nil, 0)
	require.ErrorIs(t, err, metadata.ErrClosed)
	_, _, err = s.Get(bg, "/a")
	require.ErrorIs(t, err, metadata.ErrClosed)
	_, err = s.Set(bg, "/a", nil, metadata.AnyVersion)
	require.ErrorIs(t, err, metadata.ErrClosed)
	require.ErrorIs(t, s.Delete(bg, "/a", metadata.AnyVersion), metadata.ErrClosed)
	_, _, err = s.Exists(bg, "/a")
	require.ErrorIs(t, err, metadata.ErrClosed)
	_, _, err = s.Children(bg, "/")
	require.ErrorIs(t, err, metadata.ErrClosed)
	_, err = s.Watch(bg, "/a", metadata.WatchExists)
	require.ErrorIs(t, err, metadata.ErrClosed)
	_, err = s.Multi(bg, metadata.CheckOp("/a", metadata.AnyVersion))
	require.ErrorIs(t, err, metadata.ErrClosed)
	require.NoError(t, s.Close(), "second Close")
}

func testContextCanceled(t *testing.T, s metadata.Store) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := s.Create(ctx, "/a", nil, 0)
	require.ErrorIs(t, err, context.Canceled)
	_, _, err = s.Get(ctx, "/")
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Multi(ctx, metadata.CreateOp("/a", nil, 0))
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, exists(t, s, "/a"))
}

func testHelpers(t *testing.T, s metadata.Store) {
	require.NoError(t, metadata.EnsurePath(bg, s, "/a/b/c"))
	require.NoError(t, metadata.EnsurePath(bg, s, "/a/b/c"))
	require.NoError(t, metadata.EnsurePath(bg, s, "/a/b/d"))
	names, _, err := s.Children(bg, "/a/b")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"c", "d"}, names)

	p, err := metadata.CreateAll(bg, s, "/x/y/z", []byte("deep"), 0)
	require.NoError(t, err)
	require.Equal(t, "/x/y/z", p)
	data, _ := mustGet(t, s, "/x/y/z")
	require.Equal(t, []byte("deep"), data)
	_, err = metadata.CreateAll(bg, s, "/x/y/z", nil, 0)
	require.ErrorIs(t, err, metadata.ErrNodeExists)
	p, err = metadata.CreateAll(bg, s, "/x/q/seq-", nil, metadata.Sequential|metadata.Ephemeral)
	require.NoError(t, err)
	require.Equal(t, "/x/q/seq-0000000000", p)

	mustCreate(t, s, "/eph", nil, metadata.Ephemeral)
	require.ErrorIs(t, metadata.EnsurePath(bg, s, "/eph/child"), metadata.ErrNoChildrenForEphemerals)
	require.ErrorIs(t, metadata.EnsurePath(bg, s, "bad"), metadata.ErrBadPath)
}

// run starts n goroutines and fails the test with the errors they return.
func run(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

func testConcurrentCAS(t *testing.T, s metadata.Store) {
	const workers, increments = 8, 25
	mustCreate(t, s, "/counter", []byte("0"), 0)
	run(t, workers, func(int) error {
		for range increments {
			for {
				data, st, err := s.Get(bg, "/counter")
				if err != nil {
					return err
				}
				var n int
				if _, err := fmt.Sscan(string(data), &n); err != nil {
					return err
				}
				_, err = s.Set(bg, "/counter", fmt.Appendf(nil, "%d", n+1), st.Version)
				if errors.Is(err, metadata.ErrBadVersion) {
					continue
				}
				if err != nil {
					return err
				}
				break
			}
		}
		return nil
	})
	data, st := mustGet(t, s, "/counter")
	require.Equal(t, fmt.Sprint(workers*increments), string(data))
	require.Equal(t, int32(workers*increments), st.Version)
}

func testConcurrentSequential(t *testing.T, s metadata.Store) {
	const workers, creates = 8, 25
	mustCreate(t, s, "/seq", nil, 0)
	paths := make([][]string, workers)
	run(t, workers, func(i int) error {
		for j := range creates {
			flags := metadata.Sequential
			if j%2 == 0 {
				flags |= metadata.Ephemeral
			}
			p, err := s.Create(bg, "/seq/n-", nil, flags)
			if err != nil {
				return err
			}
			paths[i] = append(paths[i], p)
		}
		return nil
	})
	seen := map[string]bool{}
	for _, ps := range paths {
		for _, p := range ps {
			require.False(t, seen[p], "duplicate sequential node %s", p)
			require.True(t, strings.HasPrefix(p, "/seq/n-"))
			seen[p] = true
		}
	}
	names, st, err := s.Children(bg, "/seq")
	require.NoError(t, err)
	require.Len(t, names, workers*creates)
	require.Equal(t, int32(workers*creates), st.CVersion)
	for i := range workers * creates {
		require.True(t, seen[fmt.Sprintf("/seq/n-%010d", i)], "suffix %d missing", i)
	}
}

func testConcurrentWatchers(t *testing.T, s metadata.Store) {
	const workers, rounds = 8, 10
	mustCreate(t, s, "/hot", nil, 0)
	run(t, workers, func(i int) error {
		for range rounds {
			ch, err := s.Watch(bg, "/hot", metadata.WatchData)
			if err != nil {
				return err
			}
			if _, err := s.Set(bg, "/hot", []byte{byte(i)}, metadata.AnyVersion); err != nil {
				return err
			}
			select {
			case ev := <-ch:
				if ev.Type != metadata.EventDataChanged {
					return fmt.Errorf("event %+v", ev)
				}
			case <-time.After(EventTimeout):
				return fmt.Errorf("no event within %v", EventTimeout)
			}
		}
		return nil
	})
	_, st := mustGet(t, s, "/hot")
	require.Equal(t, int32(workers*rounds), st.Version)
}
