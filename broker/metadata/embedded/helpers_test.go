package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
	"github.com/qk-project/qk/broker/vfs"
)

var ctx = context.Background()

const dir = "/var/qk/__qk_metadata"

// nodeState is what a persistent node must look like after a restart.
type nodeState struct {
	Data string
	Stat metadata.Stat
}

// tree is the persistent part of a store, as the public API shows it.
type tree map[string]nodeState

// dump walks the store and returns its persistent nodes, with NumChildren
// counting persistent children only (ephemeral ones do not survive a
// restart), and the largest zxid seen on any node, ephemeral or not.
func dump(t testing.TB, s metadata.Store) (tree, int64) {
	t.Helper()
	out := tree{}
	var maxZxid int64
	var walk func(path string) bool
	walk = func(path string) bool {
		data, st, err := s.Get(ctx, path)
		require.NoError(t, err)
		maxZxid = max(maxZxid, st.Czxid, st.Mzxid, st.Pzxid)
		if st.EphemeralOwner != 0 {
			return false
		}
		names, _, err := s.Children(ctx, path)
		require.NoError(t, err)
		st.NumChildren = 0
		for _, n := range names {
			if walk(metadata.Join(path, n)) {
				st.NumChildren++
			}
		}
		out[path] = nodeState{Data: string(data), Stat: st}
		return true
	}
	walk("/")
	return out, maxZxid
}

// reopen opens the store in fsys, dumps it and closes it again.
func reopen(t testing.TB, fsys vfs.FS, opts ...embedded.Option) tree {
	t.Helper()
	s, err := embedded.Open(fsys, dir, opts...)
	require.NoError(t, err)
	got, _ := dump(t, s)
	require.NoError(t, s.Close())
	return got
}

// workload drives a store with random operations of every kind through
// several sessions. Each step is one call on the Store API.
type workload struct {
	t        testing.TB
	rng      *rand.Rand
	store    *embedded.Store
	sessions []metadata.Store
}

func newWorkload(t testing.TB, seed uint64, s *embedded.Store) *workload {
	w := &workload{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), store: s}
	w.sessions = []metadata.Store{s}
	return w
}

func (w *workload) pick(nodes []string) string { return nodes[w.rng.IntN(len(nodes))] }

func (w *workload) session() metadata.Store { return w.sessions[w.rng.IntN(len(w.sessions))] }

// nodes lists the current nodes: all, persistent ones, and leaves.
func (w *workload) nodes() (all, persistent, leaves []string) {
	s := w.store
	var walk func(path string)
	walk = func(path string) {
		_, st, err := s.Get(ctx, path)
		require.NoError(w.t, err)
		all = append(all, path)
		if st.EphemeralOwner == 0 {
			persistent = append(persistent, path)
		}
		if st.NumChildren == 0 && path != "/" {
			leaves = append(leaves, path)
		}
		names, _, err := s.Children(ctx, path)
		require.NoError(w.t, err)
		for _, n := range names {
			walk(metadata.Join(path, n))
		}
	}
	walk("/")
	return all, persistent, leaves
}

var names = []string{"brokers", "topics", "ids", "a", "b", "state", "config", "x"}

// op returns a random operation on the current tree: usually valid,
// sometimes not (wrong version, existing node), to exercise failures.
func (w *workload) op() metadata.Op {
	all, persistent, leaves := w.nodes()
	data := fmt.Appendf(nil, "data-%d", w.rng.IntN(1000))
	switch r := w.rng.IntN(10); {
	case r < 4 || len(leaves) == 0:
		var flags metadata.CreateFlags
		if w.rng.IntN(3) == 0 {
			flags |= metadata.Sequential
		}
		if w.rng.IntN(4) == 0 {
			flags |= metadata.Ephemeral
		}
		if w.rng.IntN(5) == 0 {
			data = nil
		}
		return metadata.CreateOp(metadata.Join(w.pick(persistent), w.pick(names)), data, flags)
	case r < 7:
		version := metadata.AnyVersion
		if w.rng.IntN(2) == 0 {
			version = int32(w.rng.IntN(3))
		}
		return metadata.SetOp(w.pick(all[1:]), data, version)
	case r < 9:
		return metadata.DeleteOp(w.pick(leaves), metadata.AnyVersion)
	default:
		return metadata.CheckOp(w.pick(all), int32(w.rng.IntN(2)))
	}
}

// step runs one random call and reports whether it changed the store (an
// error from a rejected operation is expected and returned as such).
func (w *workload) step() error {
	s := w.session()
	switch r := w.rng.IntN(20); {
	case r == 0 && len(w.sessions) > 1:
		i := 1 + w.rng.IntN(len(w.sessions)-1)
		err := w.sessions[i].Close()
		w.sessions = slices.Delete(w.sessions, i, i+1)
		return err
	case r == 1 && len(w.sessions) < 4:
		s2, err := w.store.OpenSession(ctx)
		if err == nil {
			w.sessions = append(w.sessions, s2)
		}
		return err
	case r < 6:
		ops := make([]metadata.Op, 1+w.rng.IntN(3))
		for i := range ops {
			ops[i] = w.op()
		}
		_, err := s.Multi(ctx, ops...)
		return err
	}
	op := w.op()
	var err error
	switch op.Type {
	case metadata.OpCreate:
		_, err = s.Create(ctx, op.Path, op.Data, op.Flags)
	case metadata.OpSet:
		_, err = s.Set(ctx, op.Path, op.Data, op.Version)
	case metadata.OpDelete:
		err = s.Delete(ctx, op.Path, op.Version)
	case metadata.OpCheck:
		_, _, err = s.Get(ctx, op.Path)
	}
	return err
}

// rejected reports whether err is a refusal by the store's rules rather
// than a failure.
func rejected(err error) bool {
	for _, e := range []error{metadata.ErrNoNode, metadata.ErrNodeExists, metadata.ErrBadVersion,
		metadata.ErrNotEmpty, metadata.ErrNoChildrenForEphemerals} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
