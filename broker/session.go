//go:build linux

package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/zkstore"
)

// zkSessions is the broker's metadata.Store in a cluster: the current
// ZooKeeper session, replaced by a new one when ZooKeeper expires it, as
// a Kafka broker's KafkaZkClient re-creates its session. Calls go to the
// current session; those made while it is expired fail with
// metadata.ErrSessionExpired (their callers retry), and watches set on an
// expired session end with EventNotWatching. Done closes only at Close:
// an expiry is not the end of the broker.
//
// expired runs as soon as the expiry is seen, before anything else: the
// broker stops acting on the expired session's view (the controller
// resigns). renewed runs with the new session in place: the broker
// registers again and re-reads the metadata.
type zkSessions struct {
	open    func(ctx context.Context) (*zkstore.Store, error)
	expired func()
	renewed func(ctx context.Context) error
	lg      *slog.Logger

	cur    atomic.Pointer[zkstore.Store]
	closed atomic.Bool
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newZKSessions(first *zkstore.Store, open func(context.Context) (*zkstore.Store, error), lg *slog.Logger) *zkSessions {
	z := &zkSessions{open: open, lg: lg, done: make(chan struct{}),
		expired: func() {}, renewed: func(context.Context) error { return nil }}
	z.ctx, z.cancel = context.WithCancel(context.Background())
	z.cur.Store(first)
	return z
}

// follow starts replacing expired sessions (hooks set first).
func (z *zkSessions) follow() { z.wg.Go(z.loop) }

func (z *zkSessions) loop() {
	for {
		s := z.cur.Load()
		select {
		case <-z.done:
			return
		case <-s.Done():
		}
		if z.closed.Load() {
			return
		}
		z.lg.Error("zookeeper session expired; opening a new session and registering again",
			"session_id", fmt.Sprintf("%#x", s.SessionID()))
		z.expired()
		var next *zkstore.Store
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			var err error
			if next, err = z.open(z.ctx); err == nil {
				break
			}
			if z.ctx.Err() != nil {
				return
			}
			z.lg.Warn("cannot open a zookeeper session; retrying", "err", err, "retry_in", backoff)
			select {
			case <-z.done:
				return
			case <-time.After(backoff):
			}
		}
		if z.closed.Load() {
			next.Close()
			return
		}
		z.cur.Store(next)
		// Until the broker is registered again it is not a member: retry
		// (each step is safe to repeat) while the new session lives.
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			err := z.renewed(z.ctx)
			if err == nil {
				z.lg.Info("registered again on a new zookeeper session", "session_id", fmt.Sprintf("%#x", next.SessionID()))
				break
			}
			if z.ctx.Err() != nil {
				return
			}
			z.lg.Warn("re-registration on the new zookeeper session failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-z.done:
				return
			case <-next.Done():
			case <-time.After(backoff):
				continue
			}
			break // the new session ended too: the outer loop opens another
		}
	}
}

func (z *zkSessions) Create(ctx context.Context, path string, data []byte, flags metadata.CreateFlags) (string, error) {
	return z.cur.Load().Create(ctx, path, data, flags)
}

func (z *zkSessions) Get(ctx context.Context, path string) ([]byte, metadata.Stat, error) {
	return z.cur.Load().Get(ctx, path)
}

func (z *zkSessions) Set(ctx context.Context, path string, data []byte, version int32) (metadata.Stat, error) {
	return z.cur.Load().Set(ctx, path, data, version)
}

func (z *zkSessions) Delete(ctx context.Context, path string, version int32) error {
	return z.cur.Load().Delete(ctx, path, version)
}

func (z *zkSessions) Exists(ctx context.Context, path string) (metadata.Stat, bool, error) {
	return z.cur.Load().Exists(ctx, path)
}

func (z *zkSessions) Children(ctx context.Context, path string) ([]string, metadata.Stat, error) {
	return z.cur.Load().Children(ctx, path)
}

func (z *zkSessions) Watch(ctx context.Context, path string, kind metadata.WatchKind) (<-chan metadata.Event, error) {
	return z.cur.Load().Watch(ctx, path, kind)
}

func (z *zkSessions) Multi(ctx context.Context, ops ...metadata.Op) ([]metadata.OpResult, error) {
	return z.cur.Load().Multi(ctx, ops...)
}

func (z *zkSessions) Sync(ctx context.Context, path string) error {
	return z.cur.Load().Sync(ctx, path)
}

// SessionID is the current session's id.
func (z *zkSessions) SessionID() int64 { return z.cur.Load().SessionID() }

// Done is closed by Close only.
func (z *zkSessions) Done() <-chan struct{} { return z.done }

// Close ends the current session and stops replacing sessions.
func (z *zkSessions) Close() error {
	if z.closed.Swap(true) {
		return nil
	}
	close(z.done)
	z.cancel()
	z.wg.Wait() // the loop stores no new session after this
	return z.cur.Load().Close()
}
