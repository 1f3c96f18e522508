package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/vfs"
)

// Option configures Open and New.
type Option func(*options)

type options struct {
	lg            *slog.Logger
	now           func() time.Time
	snapshotEvery int
	snapshotBytes int64
}

// WithLogger sets the logger; nil (the default) discards.
func WithLogger(lg *slog.Logger) Option { return func(o *options) { o.lg = lg } }

// WithClock sets the clock used for Ctime, Mtime and session ids.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithSnapshotEvery sets how many log records (default 10000) or log bytes
// (default 64 MiB) trigger a snapshot, whichever comes first. Values below
// 1 keep the default.
func WithSnapshotEvery(records int, bytes int64) Option {
	return func(o *options) {
		if records > 0 {
			o.snapshotEvery = records
		}
		if bytes > 0 {
			o.snapshotBytes = bytes
		}
	}
}

func buildOptions(opts []Option) options {
	o := options{now: time.Now, snapshotEvery: 10000, snapshotBytes: 64 << 20}
	for _, opt := range opts {
		opt(&o)
	}
	if o.lg == nil {
		o.lg = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Store is an embedded metadata store: one tree shared by any number of
// sessions. The Store is itself a metadata.Store, through a default
// session opened with it; NewSession opens more, one per in-process
// broker. Close ends every session and closes the files.
type Store struct {
	d   *db
	def *Session
}

var (
	_ metadata.Store         = (*Store)(nil)
	_ metadata.Store         = (*Session)(nil)
	_ metadata.SessionOpener = (*Store)(nil)
	_ metadata.SessionOpener = (*Session)(nil)
)

// Open opens (creating if needed) the store kept in directory dir of fsys:
// it reads the snapshot, replays the log after it (cutting off a torn
// tail with a warning) and is then ready. A qk broker keeps it in
// <log.dirs[0]>/__qk_metadata, a name that the log manager does not take
// for a partition. Nothing stops two processes from opening one directory
// at once: don't.
func Open(fsys vfs.FS, dir string, opts ...Option) (*Store, error) {
	o := buildOptions(opts)
	d := newDB(o.now, o.lg.With("component", "metadata"))
	w := &wal{fsys: fsys, dir: dir, snapshotEvery: o.snapshotEvery, snapshotBytes: o.snapshotBytes}
	if err := d.load(w); err != nil {
		if w.f != nil {
			w.f.Close()
		}
		return nil, err
	}
	d.wal = w
	d.lg.Info("opened metadata store", "dir", dir, "zxid", d.zxid,
		"nodes", d.visitPersistent(nil), "log_records", w.records)
	return newStore(d), nil
}

// New returns a store that lives in memory only, for tests.
func New(opts ...Option) *Store {
	o := buildOptions(opts)
	return newStore(newDB(o.now, o.lg.With("component", "metadata")))
}

func newStore(d *db) *Store {
	d.mu.Lock()
	defer d.mu.Unlock()
	return &Store{d: d, def: d.newSession()}
}

// NewSession opens another session on the store.
func (s *Store) NewSession() (*Session, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.d.closed {
		return nil, metadata.ErrClosed
	}
	return s.d.newSession(), nil
}

// OpenSession is NewSession for metadata.SessionOpener.
func (s *Store) OpenSession(ctx context.Context) (metadata.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.NewSession()
}

// ExpireSession ends session id as a ZooKeeper session expiry does: its
// ephemeral nodes are deleted, its watches get EventNotWatching with
// metadata.ErrSessionExpired, its Done channel closes and every later call
// on it returns ErrSessionExpired. Tests use it to make a broker lose its
// registration.
func (s *Store) ExpireSession(id int64) error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.d.closed {
		return metadata.ErrClosed
	}
	sess := s.d.sessions[id]
	if sess == nil {
		return fmt.Errorf("embedded: no open session %#x", id)
	}
	return s.d.endSession(sess, metadata.ErrSessionExpired)
}

// Snapshot writes a snapshot now and empties the log (normally done every
// WithSnapshotEvery records and at Close). It does nothing for a store
// made by New. If the snapshot cannot be written the log still holds
// everything and the store carries on.
func (s *Store) Snapshot() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	switch {
	case s.d.closed:
		return metadata.ErrClosed
	case s.d.failed != nil:
		return s.d.failed
	case s.d.wal == nil:
		return nil
	}
	return s.d.snapshot()
}

// Close ends every session and closes the store. Ephemeral nodes are not
// deleted one by one (they are not on disk anyway) and watches receive
// EventNotWatching with metadata.ErrClosed. If the log holds records, a
// snapshot is written first so the next Open has nothing to replay.
func (s *Store) Close() error {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	for _, sess := range d.sessions {
		sess.end(metadata.ErrClosed)
	}
	d.endWatches(nil, metadata.ErrClosed)
	if d.wal == nil {
		return nil
	}
	if d.failed == nil && d.wal.end > 0 {
		_ = d.snapshot() // logged; the next Open replays the log instead
	}
	if err := d.wal.f.Close(); err != nil {
		return fmt.Errorf("embedded: close %s: %w", d.wal.logPath(), err)
	}
	d.lg.Info("closed metadata store", "zxid", d.zxid)
	return nil
}

// The default session's metadata.Store methods.

func (s *Store) Create(ctx context.Context, path string, data []byte, flags metadata.CreateFlags) (string, error) {
	return s.def.Create(ctx, path, data, flags)
}

func (s *Store) Get(ctx context.Context, path string) ([]byte, metadata.Stat, error) {
	return s.def.Get(ctx, path)
}

func (s *Store) Set(ctx context.Context, path string, data []byte, version int32) (metadata.Stat, error) {
	return s.def.Set(ctx, path, data, version)
}

func (s *Store) Delete(ctx context.Context, path string, version int32) error {
	return s.def.Delete(ctx, path, version)
}

func (s *Store) Exists(ctx context.Context, path string) (metadata.Stat, bool, error) {
	return s.def.Exists(ctx, path)
}

func (s *Store) Children(ctx context.Context, path string) ([]string, metadata.Stat, error) {
	return s.def.Children(ctx, path)
}

func (s *Store) Watch(ctx context.Context, path string, kind metadata.WatchKind) (<-chan metadata.Event, error) {
	return s.def.Watch(ctx, path, kind)
}

func (s *Store) Multi(ctx context.Context, ops ...metadata.Op) ([]metadata.OpResult, error) {
	return s.def.Multi(ctx, ops...)
}

// SessionID is the default session's id.
func (s *Store) SessionID() int64 { return s.def.id }

// Done is closed when the store is closed.
func (s *Store) Done() <-chan struct{} { return s.def.done }

// Session is one session of a Store: the owner of ephemeral nodes and
// watches. It implements metadata.Store.
type Session struct {
	d          *db
	id         int64
	done       chan struct{}
	ephemerals map[string]struct{} // guarded by d.mu
	ended      error               // guarded by d.mu: nil while open
}

// newSession registers a session. The caller holds d.mu.
func (d *db) newSession() *Session {
	s := &Session{d: d, id: d.nextSID, done: make(chan struct{}), ephemerals: map[string]struct{}{}}
	d.nextSID++
	d.sessions[s.id] = s
	return s
}

// end marks s ended with why and closes Done. The caller holds d.mu.
func (s *Session) end(why error) {
	s.ended = why
	close(s.done)
}

// endSession ends sess: its watches end with why, then its ephemeral
// nodes are deleted in one transaction, which fires other sessions'
// watches. The caller holds d.mu.
func (d *db) endSession(sess *Session, why error) error {
	sess.end(why)
	d.endWatches(sess, why)
	var err error
	if len(sess.ephemerals) > 0 {
		paths := make([]string, 0, len(sess.ephemerals))
		for p := range sess.ephemerals {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		t := d.begin(sess)
		for _, p := range paths {
			if derr := t.delete(p, metadata.AnyVersion); derr != nil {
				panic(fmt.Sprintf("embedded: deleting ephemeral %s of session %#x: %v", p, sess.id, derr))
			}
		}
		err = d.commit(t, true)
	}
	delete(d.sessions, sess.id)
	return err
}

// check returns why s cannot be used, if it cannot. The caller holds d.mu
// (read or write).
func (s *Session) check() error {
	switch {
	case s.d.closed:
		return metadata.ErrClosed
	case s.ended != nil:
		return s.ended
	}
	return nil
}

// SessionID returns the session's id, the EphemeralOwner of its nodes.
func (s *Session) SessionID() int64 { return s.id }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// OpenSession opens another session on the same store, even if s itself
// has ended (a broker whose session expired registers again this way).
func (s *Session) OpenSession(ctx context.Context) (metadata.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.d.closed {
		return nil, metadata.ErrClosed
	}
	return s.d.newSession(), nil
}

// Close ends the session; see metadata.Store.
func (s *Session) Close() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.d.closed || s.ended != nil {
		return nil
	}
	return s.d.endSession(s, metadata.ErrClosed)
}

func (s *Session) Create(ctx context.Context, path string, data []byte, flags metadata.CreateFlags) (string, error) {
	res, err := s.write(ctx, metadata.CreateOp(path, data, flags))
	if err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	return res.Path, nil
}

func (s *Session) Set(ctx context.Context, path string, data []byte, version int32) (metadata.Stat, error) {
	res, err := s.write(ctx, metadata.SetOp(path, data, version))
	if err != nil {
		return metadata.Stat{}, fmt.Errorf("set %s: %w", path, err)
	}
	return res.Stat, nil
}

func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	if _, err := s.write(ctx, metadata.DeleteOp(path, version)); err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// write runs one op as a transaction.
func (s *Session) write(ctx context.Context, op metadata.Op) (metadata.OpResult, error) {
	if err := ctx.Err(); err != nil {
		return metadata.OpResult{}, err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := s.writable(); err != nil {
		return metadata.OpResult{}, err
	}
	t := d.begin(s)
	res, err := t.apply(op)
	if err != nil {
		t.rollback()
		return metadata.OpResult{}, err
	}
	return res, d.commit(t, false)
}

// writable is check plus the store's sticky write failure.
func (s *Session) writable() error {
	if err := s.check(); err != nil {
		return err
	}
	return s.d.failed
}

func (s *Session) Multi(ctx context.Context, ops ...metadata.Op) ([]metadata.OpResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := s.writable(); err != nil {
		return nil, err
	}
	t := d.begin(s)
	results := make([]metadata.OpResult, len(ops))
	for i, op := range ops {
		res, err := t.apply(op)
		if err != nil {
			t.rollback()
			return nil, &metadata.MultiError{Index: i, Op: op, Err: err}
		}
		results[i] = res
	}
	if len(ops) == 0 {
		return results, nil
	}
	if err := d.commit(t, false); err != nil {
		return nil, err
	}
	return results, nil
}

// read runs fn under the read lock once the session is known to be usable.
func (s *Session) read(ctx context.Context, path string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := metadata.ValidatePath(path); err != nil {
		return err
	}
	s.d.mu.RLock()
	defer s.d.mu.RUnlock()
	if err := s.check(); err != nil {
		return err
	}
	return fn()
}

func (s *Session) Get(ctx context.Context, path string) ([]byte, metadata.Stat, error) {
	var data []byte
	var st metadata.Stat
	err := s.read(ctx, path, func() error {
		n := s.d.nodes[path]
		if n == nil {
			return metadata.ErrNoNode
		}
		data, st = cloneData(n.data), n.stat
		return nil
	})
	if err != nil {
		return nil, metadata.Stat{}, fmt.Errorf("get %s: %w", path, err)
	}
	return data, st, nil
}

func (s *Session) Exists(ctx context.Context, path string) (metadata.Stat, bool, error) {
	var st metadata.Stat
	var ok bool
	err := s.read(ctx, path, func() error {
		if n := s.d.nodes[path]; n != nil {
			st, ok = n.stat, true
		}
		return nil
	})
	if err != nil {
		return metadata.Stat{}, false, fmt.Errorf("exists %s: %w", path, err)
	}
	return st, ok, nil
}

// Children returns the children's names sorted (the interface promises
// no order).
func (s *Session) Children(ctx context.Context, path string) ([]string, metadata.Stat, error) {
	var names []string
	var st metadata.Stat
	err := s.read(ctx, path, func() error {
		n := s.d.nodes[path]
		if n == nil {
			return metadata.ErrNoNode
		}
		names = make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		st = n.stat
		return nil
	})
	if err != nil {
		return nil, metadata.Stat{}, fmt.Errorf("children %s: %w", path, err)
	}
	slices.Sort(names)
	return names, st, nil
}

func (s *Session) Watch(ctx context.Context, path string, kind metadata.WatchKind) (<-chan metadata.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := metadata.ValidatePath(path); err != nil {
		return nil, err
	}
	switch kind {
	case metadata.WatchData, metadata.WatchChildren, metadata.WatchExists:
	default:
		return nil, fmt.Errorf("embedded: unknown watch kind %d", kind)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	if kind != metadata.WatchExists && d.nodes[path] == nil {
		return nil, fmt.Errorf("watch %s: %w", path, metadata.ErrNoNode)
	}
	return d.addWatch(s, ctx, path, kind).ch, nil
}
