package zkstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/qk-project/qk/broker/metadata"
)

// Watch registers a one-shot ZooKeeper watch (getData, getChildren or
// exists) and delivers its event. The registration is the read that sets
// it, so "Watch, Get, act, wait" misses nothing. The watch outlives
// connection loss inside the session (ZooKeeper re-registers it on
// reconnection); it ends with EventNotWatching when ctx ends, the Store
// is closed or the session expires.
func (s *Store) Watch(ctx context.Context, path string, kind metadata.WatchKind) (<-chan metadata.Event, error) {
	p, err := s.abs(path)
	if err != nil {
		return nil, err
	}
	var reg func() (<-chan zk.Event, error)
	switch kind {
	case metadata.WatchData:
		reg = func() (<-chan zk.Event, error) { _, _, ch, err := s.conn.GetW(p); return ch, err }
	case metadata.WatchChildren:
		reg = func() (<-chan zk.Event, error) { _, _, ch, err := s.conn.ChildrenW(p); return ch, err }
	case metadata.WatchExists:
		reg = func() (<-chan zk.Event, error) { _, _, ch, err := s.conn.ExistsW(p); return ch, err }
	default:
		return nil, fmt.Errorf("zkstore: unknown watch kind %v", kind)
	}
	zch, err := call(ctx, s, reg)
	if err != nil {
		return nil, err
	}
	out := make(chan metadata.Event, 1)
	go func() {
		defer close(out)
		select {
		case ev, ok := <-zch:
			out <- s.event(path, ev, ok)
		case <-ctx.Done():
			out <- metadata.Event{Type: metadata.EventNotWatching, Path: path, Err: ctx.Err()}
		case <-s.done:
			out <- metadata.Event{Type: metadata.EventNotWatching, Path: path, Err: s.state()}
		}
	}()
	return out, nil
}

// event translates a fired ZooKeeper watch.
func (s *Store) event(path string, ev zk.Event, ok bool) metadata.Event {
	e := metadata.Event{Path: path}
	switch {
	case !ok:
		e.Type, e.Err = metadata.EventNotWatching, s.stateOr(metadata.ErrClosed)
	case ev.Type == zk.EventNodeCreated:
		e.Type = metadata.EventCreated
	case ev.Type == zk.EventNodeDeleted:
		e.Type = metadata.EventDeleted
	case ev.Type == zk.EventNodeDataChanged:
		e.Type = metadata.EventDataChanged
	case ev.Type == zk.EventNodeChildrenChanged:
		e.Type = metadata.EventChildrenChanged
	default: // EventNotWatching: the library dropped the watch
		e.Type = metadata.EventNotWatching
		switch {
		case errors.Is(ev.Err, zk.ErrSessionExpired):
			s.expire()
			e.Err = metadata.ErrSessionExpired
		default:
			e.Err = s.stateOr(metadata.ErrClosed)
		}
	}
	return e
}

// stateOr is the Store's end state, or err while it serves.
func (s *Store) stateOr(err error) error {
	if st := s.state(); st != nil {
		return st
	}
	return err
}

// Multi applies ops atomically (ZooKeeper's multi). A failed Multi names
// the first op ZooKeeper refused: ops before it report no error, ops
// after it ZooKeeper's "runtime inconsistency".
func (s *Store) Multi(ctx context.Context, ops ...metadata.Op) ([]metadata.OpResult, error) {
	reqs := make([]any, len(ops))
	for i, op := range ops {
		var p string
		var err error
		if op.Type == metadata.OpCreate {
			p, err = s.createPath(op.Path, op.Flags)
		} else {
			p, err = s.abs(op.Path)
		}
		if err != nil {
			return nil, &metadata.MultiError{Index: i, Op: op, Err: err}
		}
		switch op.Type {
		case metadata.OpCreate:
			reqs[i] = &zk.CreateRequest{Path: p, Data: op.Data, Acl: acl, Flags: zkFlags(op.Flags)}
		case metadata.OpDelete:
			reqs[i] = &zk.DeleteRequest{Path: p, Version: op.Version}
		case metadata.OpSet:
			reqs[i] = &zk.SetDataRequest{Path: p, Data: op.Data, Version: op.Version}
		case metadata.OpCheck:
			reqs[i] = &zk.CheckVersionRequest{Path: p, Version: op.Version}
		default:
			return nil, &metadata.MultiError{Index: i, Op: op, Err: fmt.Errorf("zkstore: unknown op %v", op.Type)}
		}
	}
	if len(ops) == 0 {
		if err := s.state(); err != nil {
			return nil, err
		}
		return nil, ctx.Err()
	}
	type r struct {
		res []zk.MultiResponse
		err error
	}
	v, err := call(ctx, s, func() (r, error) {
		res, err := s.conn.Multi(reqs...)
		if res != nil {
			return r{res, err}, nil // per-op errors are read below
		}
		return r{}, err
	})
	if err != nil {
		return nil, err
	}
	if v.err != nil {
		for i, res := range v.res {
			if res.Error != nil && isSentinel(res.Error) {
				return nil, &metadata.MultiError{Index: i, Op: ops[i], Err: s.mapErr(res.Error)}
			}
		}
		return nil, s.mapErr(v.err)
	}
	out := make([]metadata.OpResult, len(ops))
	for i, op := range ops {
		out[i] = metadata.OpResult{Type: op.Type}
		if i < len(v.res) {
			switch op.Type {
			case metadata.OpCreate:
				out[i].Path = s.rel(v.res[i].String)
			case metadata.OpSet:
				out[i].Stat = stat(v.res[i].Stat)
			}
		}
	}
	return out, nil
}

// isSentinel tells a refused op's error from ZooKeeper's "runtime
// inconsistency" (-2) given to the ops after it, which go-zookeeper does
// not name.
func isSentinel(err error) bool {
	for _, e := range []error{zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNotEmpty,
		zk.ErrNoChildrenForEphemerals, zk.ErrBadArguments, zk.ErrInvalidACL, zk.ErrInvalidFlags, zk.ErrNoAuth} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// zkLogger sends the client library's messages to slog at debug level.
type zkLogger struct {
	lg interface{ Debug(string, ...any) }
}

func (l zkLogger) Printf(format string, args ...any) {
	l.lg.Debug(fmt.Sprintf(format, args...), "component", "zookeeper-client")
}
