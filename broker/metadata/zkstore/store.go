// Package zkstore is metadata.Store over a real ZooKeeper ensemble, through
// github.com/go-zookeeper/zk: the store a qk cluster uses, as Kafka's
// ZooKeeper mode does. One Store is one ZooKeeper session.
//
// The servers and chroot are Kafka's zookeeper.connect, host:port[,...]
// with an optional chroot after the last server ("/kafka"), as
// config.ParseZookeeperConnect splits it; the chroot is created if
// missing, as Kafka creates it. Every path of the Store is relative to the
// chroot: "/" is the chroot itself.
//
// Session semantics are metadata.Store's, stricter than the client
// library's: go-zookeeper reconnects after a session expiry with a new
// session, but a Store whose session expired is over (Done closed, every
// call ErrSessionExpired, pending watches told), so that its owner opens a
// new one and registers again, as a Kafka broker does; nothing it holds
// (ephemeral nodes, a view of the cluster) silently survives on another
// session. Connection loss inside the session timeout is not an expiry:
// the session, its ephemeral nodes and its watches remain, as ZooKeeper
// guarantees; calls made meanwhile fail with metadata.ErrConnectionLoss
// (go-zookeeper gives up on a request after about a second without a
// server), and callers retry.
package zkstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/qk-project/qk/broker/metadata"
)

// Config says how to reach the ensemble.
type Config struct {
	// Servers are the ensemble's host:port addresses.
	Servers []string
	// Chroot is "" or the path every Store path is under ("/kafka").
	Chroot string
	// SessionTimeout is zookeeper.session.timeout.ms (Kafka's default 18 s).
	SessionTimeout time.Duration
	// ConnectionTimeout is zookeeper.connection.timeout.ms: how long Open
	// waits for a session (default: SessionTimeout, as Kafka).
	ConnectionTimeout time.Duration
	Logger            *slog.Logger // nil: discard
}

// Store is one ZooKeeper session.
type Store struct {
	cfg     Config
	servers []string
	chroot  string // "" or "/kafka"
	lg      *slog.Logger
	conn    *zk.Conn
	session int64

	expired atomic.Bool
	closed  atomic.Bool
	done    chan struct{}
	endOnce sync.Once
}

// Open connects, waits for a session (ConnectionTimeout, or ctx) and
// creates the chroot if it is missing.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 18 * time.Second
	}
	if cfg.ConnectionTimeout <= 0 {
		cfg.ConnectionTimeout = cfg.SessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	servers, chroot := cfg.Servers, strings.TrimSuffix(cfg.Chroot, "/")
	if len(servers) == 0 {
		return nil, errors.New("zkstore: no ZooKeeper server")
	}
	if chroot != "" {
		if err := metadata.ValidatePath(chroot); err != nil {
			return nil, fmt.Errorf("zkstore: chroot: %w", err)
		}
	}
	s := &Store{cfg: cfg, servers: servers, chroot: chroot, lg: cfg.Logger.With("component", "zkstore"),
		done: make(chan struct{})}
	connected := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect(servers, cfg.SessionTimeout,
		zk.WithLogger(zkLogger{s.lg}),
		zk.WithEventCallback(func(ev zk.Event) {
			switch ev.State {
			case zk.StateHasSession:
				once.Do(func() { close(connected) })
			case zk.StateExpired:
				s.expire()
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("zkstore: connect %s: %w", strings.Join(servers, ","), err)
	}
	s.conn = conn
	timer := time.NewTimer(cfg.ConnectionTimeout)
	defer timer.Stop()
	select {
	case <-connected:
	case <-timer.C:
		conn.Close()
		return nil, fmt.Errorf("zkstore: no ZooKeeper session with %s within zookeeper.connection.timeout.ms (%v)", strings.Join(servers, ","), cfg.ConnectionTimeout)
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("zkstore: connect %s: %w", strings.Join(servers, ","), ctx.Err())
	}
	s.session = conn.SessionID()
	if chroot != "" {
		if err := s.ensureChroot(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.lg.Info("zookeeper session", "session_id", fmt.Sprintf("%#x", s.session), "servers", strings.Join(servers, ","), "chroot", chroot)
	return s, nil
}

// OpenSession opens another session on the same ensemble and chroot.
func (s *Store) OpenSession(ctx context.Context) (metadata.Store, error) {
	return Open(ctx, s.cfg)
}

// ensureChroot creates the chroot and its ancestors, outside the chroot.
func (s *Store) ensureChroot(ctx context.Context) error {
	parts := strings.Split(s.chroot[1:], "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		_, err := call(ctx, s, func() (string, error) { return s.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)) })
		if err != nil && !errors.Is(err, metadata.ErrNodeExists) {
			return fmt.Errorf("zkstore: create chroot %s: %w", s.chroot, err)
		}
	}
	return nil
}

// expire ends the Store after ZooKeeper expired its session.
func (s *Store) expire() {
	if s.closed.Load() {
		return
	}
	if s.expired.CompareAndSwap(false, true) {
		s.lg.Warn("zookeeper session expired", "session_id", fmt.Sprintf("%#x", s.session))
	}
	s.end()
}

func (s *Store) end() {
	s.endOnce.Do(func() {
		close(s.done)
		// Not from the client's event loop (the expiry callback runs on
		// it, and Close waits for it): the library would otherwise open
		// a new session.
		go s.conn.Close()
	})
}

// Server is the address of the server the session is connected to now.
func (s *Store) Server() string { return s.conn.Server() }

// SessionID is the ZooKeeper session id.
func (s *Store) SessionID() int64 { return s.session }

// Done is closed when the session ends.
func (s *Store) Done() <-chan struct{} { return s.done }

// Close ends the session; ZooKeeper deletes its ephemeral nodes.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.endOnce.Do(func() {
		close(s.done)
		s.conn.Close()
	})
	return nil
}

// abs maps a Store path to a ZooKeeper path under the chroot.
func (s *Store) abs(path string) (string, error) {
	if err := metadata.ValidatePath(path); err != nil {
		return "", err
	}
	return s.full(path), nil
}

// full is the ZooKeeper path of a valid Store path.
func (s *Store) full(path string) string {
	switch {
	case s.chroot == "":
		return path
	case path == "/":
		return s.chroot
	}
	return s.chroot + path
}

// createPath is abs for a Create: a Sequential node's name may be empty
// or end in "/" before ZooKeeper appends the counter.
func (s *Store) createPath(path string, flags metadata.CreateFlags) (string, error) {
	check := path
	if flags&metadata.Sequential != 0 {
		check += "0"
	}
	if err := metadata.ValidatePath(check); err != nil {
		return "", err
	}
	return s.full(path), nil
}

// rel maps a ZooKeeper path back.
func (s *Store) rel(p string) string {
	if s.chroot == "" {
		return p
	}
	if p == s.chroot {
		return "/"
	}
	return strings.TrimPrefix(p, s.chroot)
}

// state is the error of a Store that is over, nil while it serves.
func (s *Store) state() error {
	switch {
	case s.closed.Load():
		return metadata.ErrClosed
	case s.expired.Load():
		return metadata.ErrSessionExpired
	}
	return nil
}

// call runs one request. go-zookeeper's calls block until the request is
// answered or the connection is closed (they wait through a reconnection),
// and take no context: the call runs on its own goroutine and ctx only
// ends the wait. A request cut short may still be applied, as with
// ZooKeeper's own connection loss.
func call[T any](ctx context.Context, s *Store, fn func() (T, error)) (T, error) {
	var zero T
	if err := s.state(); err != nil {
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return zero, s.mapErr(r.err)
		}
		return r.v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-s.done:
		return zero, s.state()
	}
}

// mapErr turns go-zookeeper's errors into metadata's sentinels.
func (s *Store) mapErr(err error) error {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: %v", metadata.ErrNoNode, err)
	case errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("%w: %v", metadata.ErrNodeExists, err)
	case errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("%w: %v", metadata.ErrBadVersion, err)
	case errors.Is(err, zk.ErrNotEmpty):
		return fmt.Errorf("%w: %v", metadata.ErrNotEmpty, err)
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return fmt.Errorf("%w: %v", metadata.ErrNoChildrenForEphemerals, err)
	case errors.Is(err, zk.ErrSessionExpired):
		s.expire()
		return fmt.Errorf("%w: %v", metadata.ErrSessionExpired, err)
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrNoServer),
		isNetError(err):
		if st := s.state(); st != nil {
			return st
		}
		return fmt.Errorf("%w: %v", metadata.ErrConnectionLoss, err)
	case errors.Is(err, zk.ErrBadArguments), errors.Is(err, zk.ErrInvalidPath):
		return fmt.Errorf("%w: %v", metadata.ErrBadPath, err)
	}
	return fmt.Errorf("zkstore: %w", err)
}

// isNetError reports whether err is the connection's own failure, which
// go-zookeeper hands to a request as it is when writing the request to the
// socket fails (a server that closed the connection: "write: broken
// pipe"; a write that timed out): a connection loss like any other, not
// a failure of the request.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

func zkFlags(f metadata.CreateFlags) int32 {
	var out int32
	if f&metadata.Ephemeral != 0 {
		out |= zk.FlagEphemeral
	}
	if f&metadata.Sequential != 0 {
		out |= zk.FlagSequence
	}
	return out
}

func stat(st *zk.Stat) metadata.Stat {
	if st == nil {
		return metadata.Stat{}
	}
	return metadata.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, CVersion: st.Cversion, EphemeralOwner: st.EphemeralOwner,
		DataLength: st.DataLength, NumChildren: st.NumChildren}
}

// nilIfEmpty: ZooKeeper's null and empty data read alike (nil).
func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

var acl = zk.WorldACL(zk.PermAll)

// Create creates a node.
func (s *Store) Create(ctx context.Context, path string, data []byte, flags metadata.CreateFlags) (string, error) {
	p, err := s.createPath(path, flags)
	if err != nil {
		return "", err
	}
	if path == "/" {
		return "", fmt.Errorf("%w: the root exists", metadata.ErrNodeExists)
	}
	got, err := call(ctx, s, func() (string, error) { return s.conn.Create(p, data, zkFlags(flags), acl) })
	if err != nil {
		return "", err
	}
	return s.rel(got), nil
}

// Get reads a node.
func (s *Store) Get(ctx context.Context, path string) ([]byte, metadata.Stat, error) {
	p, err := s.abs(path)
	if err != nil {
		return nil, metadata.Stat{}, err
	}
	type r struct {
		b  []byte
		st *zk.Stat
	}
	v, err := call(ctx, s, func() (r, error) { b, st, err := s.conn.Get(p); return r{b, st}, err })
	if err != nil {
		return nil, metadata.Stat{}, err
	}
	return nilIfEmpty(v.b), stat(v.st), nil
}

// Set replaces a node's data.
func (s *Store) Set(ctx context.Context, path string, data []byte, version int32) (metadata.Stat, error) {
	p, err := s.abs(path)
	if err != nil {
		return metadata.Stat{}, err
	}
	st, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(p, data, version) })
	if err != nil {
		return metadata.Stat{}, err
	}
	return stat(st), nil
}

// Delete removes a node.
func (s *Store) Delete(ctx context.Context, path string, version int32) error {
	p, err := s.abs(path)
	if err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("%w: the root cannot be deleted", metadata.ErrBadPath)
	}
	_, err = call(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(p, version) })
	return err
}

// Exists reports whether a node exists.
func (s *Store) Exists(ctx context.Context, path string) (metadata.Stat, bool, error) {
	p, err := s.abs(path)
	if err != nil {
		return metadata.Stat{}, false, err
	}
	type r struct {
		ok bool
		st *zk.Stat
	}
	v, err := call(ctx, s, func() (r, error) { ok, st, err := s.conn.Exists(p); return r{ok, st}, err })
	if err != nil {
		return metadata.Stat{}, false, err
	}
	if !v.ok {
		return metadata.Stat{}, false, nil
	}
	return stat(v.st), true, nil
}

// Children lists a node's children. The root of an unchrooted store
// lists ZooKeeper's own /zookeeper too.
func (s *Store) Children(ctx context.Context, path string) ([]string, metadata.Stat, error) {
	p, err := s.abs(path)
	if err != nil {
		return nil, metadata.Stat{}, err
	}
	type r struct {
		names []string
		st    *zk.Stat
	}
	v, err := call(ctx, s, func() (r, error) { n, st, err := s.conn.Children(p); return r{n, st}, err })
	if err != nil {
		return nil, metadata.Stat{}, err
	}
	return v.names, stat(v.st), nil
}

// Sync makes this session's next reads see every write committed before
// it by any session (ZooKeeper's sync: a server may lag the leader).
func (s *Store) Sync(ctx context.Context, path string) error {
	p, err := s.abs(path)
	if err != nil {
		return err
	}
	_, err = call(ctx, s, func() (string, error) { return s.conn.Sync(p) })
	return err
}
