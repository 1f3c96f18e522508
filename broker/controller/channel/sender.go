package channel

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// localHandler serves a local sender's requests (AddLocal).
type localHandler = func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)

// item is one queued request.
type item struct {
	req    kmsg.Request
	cb     func(kmsg.Response, error)
	queued time.Time
}

func (it *item) finish(resp kmsg.Response, err error) {
	if it.cb != nil {
		it.cb(resp, err)
	}
}

// maxBackoff bounds the doubling of RetryBackoff: a broker that comes
// back is reached within about a second, as with Kafka's fixed backoff,
// without a dead one being dialled ten times a second for ever.
const maxBackoff = time.Second

// sender is one broker's queue and the goroutine that works through it
// (Kafka's RequestSendThread).
type sender struct {
	m     *Manager
	id    int32
	addr  string       // "" for a local sender
	local localHandler // nil for a network sender
	lg    *slog.Logger

	ctx    context.Context // cancelled, with the stop error as cause, by beginStop
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when run returns
	wake   chan struct{} // capacity 1: a request was queued

	// mu guards queue, inFlight and stopErr. It is taken under
	// Manager.mu (enqueue) or alone, and never held across I/O or a
	// callback.
	mu       sync.Mutex
	queue    []*item
	inFlight bool  // run has taken an item and not yet called its callback
	stopErr  error // set once by beginStop; refuses later enqueues

	// Owned by the run goroutine.
	conn         *conn
	failures     int       // consecutive failed attempts
	failingSince time.Time // time of the first of them
}

func newSender(m *Manager, id int32, addr string, local localHandler) *sender {
	ctx, cancel := context.WithCancelCause(context.Background())
	lg := m.lg.With("broker_id", id)
	if local == nil {
		lg = lg.With("addr", addr)
	}
	return &sender{
		m:      m,
		id:     id,
		addr:   addr,
		local:  local,
		lg:     lg,
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
	}
}

// enqueue adds it to the queue, or returns the stop error if the sender
// is stopping.
func (s *sender) enqueue(it *item) error {
	s.mu.Lock()
	if s.stopErr != nil {
		s.mu.Unlock()
		return s.stopErr
	}
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

func (s *sender) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queue)
	if s.inFlight {
		n++
	}
	return n
}

// beginStop refuses further requests and cancels the sender's context,
// which ends a dial, an exchange (its connection is closed) or a backoff
// in progress. The first stop error wins.
func (s *sender) beginStop(err error) {
	s.mu.Lock()
	if s.stopErr == nil {
		s.stopErr = err
	}
	err = s.stopErr
	s.mu.Unlock()
	s.cancel(err)
}

// stop stops the sender and waits until its goroutine has called every
// pending callback and returned.
func (s *sender) stop(err error) {
	s.beginStop(err)
	<-s.done
}

// run sends the queued requests one at a time until the sender stops,
// then fails what is left with the stop error.
func (s *sender) run() {
	defer s.m.wg.Done()
	defer close(s.done)
	for {
		it := s.next()
		if it == nil {
			break
		}
		var resp kmsg.Response
		var err error
		if s.local != nil {
			resp, err = s.deliverLocal(it)
		} else {
			resp, err = s.deliver(it)
		}
		s.mu.Lock()
		s.inFlight = false
		s.mu.Unlock()
		it.finish(resp, err)
	}
	s.closeConn()

	s.mu.Lock()
	left := s.queue
	s.queue = nil
	err := s.stopErr
	s.mu.Unlock()
	for _, it := range left {
		it.finish(nil, err)
	}
}

// next waits for the head of the queue and takes it, or returns nil once
// the sender is stopping (the queue is then left for run to fail).
func (s *sender) next() *item {
	for {
		if s.ctx.Err() != nil {
			return nil
		}
		s.mu.Lock()
		if len(s.queue) > 0 {
			it := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.inFlight = true
			s.mu.Unlock()
			return it
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return nil
		}
	}
}

// deliverLocal hands it to the in-process handler.
func (s *sender) deliverLocal(it *item) (kmsg.Response, error) {
	it.req.SetVersion(it.req.MaxVersion())
	resp, err := s.local(s.ctx, it.req)
	if err != nil && s.ctx.Err() != nil {
		return nil, context.Cause(s.ctx)
	}
	return resp, err
}

// deliver sends it until it is answered, the broker turns out not to
// serve its API, or the sender stops. Each failed attempt closes the
// connection, so the next one starts with a fresh connection and a fresh
// ApiVersions exchange.
func (s *sender) deliver(it *item) (kmsg.Response, error) {
	api := kmsg.NameForKey(it.req.Key())
	for {
		if s.ctx.Err() != nil {
			return nil, context.Cause(s.ctx)
		}
		resp, err := s.attempt(it.req)
		if s.ctx.Err() != nil {
			// Stopped during the attempt: the error, if any, is the
			// closed connection, not the broker's fault.
			return nil, context.Cause(s.ctx)
		}
		if err == nil || errors.Is(err, ErrUnsupportedAPI) {
			// Either way the broker answered.
			s.recovered(api)
			if err != nil {
				s.lg.Debug("api not supported by broker", "api", api, "err", err)
				return nil, err
			}
			s.lg.Debug("request answered", "api", api, "version", it.req.GetVersion(),
				"took", time.Since(it.queued))
			return resp, nil
		}
		s.closeConn()
		d := s.failed(api, err)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return nil, context.Cause(s.ctx)
		}
	}
}

// attempt connects if need be and sends req once.
func (s *sender) attempt(req kmsg.Request) (kmsg.Response, error) {
	if s.conn != nil && !s.conn.reauthAt.IsZero() && !time.Now().Before(s.conn.reauthAt) {
		// The broker's SASL session lifetime (connections.max.reauth.ms)
		// is nearly over: a new connection authenticates afresh, where
		// the old one would be closed at its next request.
		s.closeConn()
	}
	if s.conn == nil {
		c, err := dial(s.ctx, &s.m.cfg, s.m.formatr, s.addr)
		if err != nil {
			return nil, err
		}
		s.conn = c
	}
	return s.conn.roundTrip(req)
}

func (s *sender) closeConn() {
	if s.conn != nil {
		s.conn.close()
		s.conn = nil
	}
}

// failed records a failed attempt, logs it and returns the wait before
// the next. The first failure of a run of them is logged at Warn and the
// rest at Debug, so a broker that stays down for an hour logs one line,
// plus one at Info when it answers again.
func (s *sender) failed(api string, err error) time.Duration {
	s.failures++
	d := s.m.cfg.RetryBackoff << min(s.failures-1, 3)
	d = min(d, max(maxBackoff, s.m.cfg.RetryBackoff))
	if s.failures == 1 {
		s.failingSince = time.Now()
		s.lg.Warn("request to broker failed, will retry", "api", api, "err", err, "backoff", d)
	} else {
		s.lg.Debug("request to broker failed again, will retry", "api", api, "err", err,
			"failures", s.failures, "backoff", d)
	}
	return d
}

// recovered notes that the broker answered; after failures it logs at
// Info how long the broker was unreachable.
func (s *sender) recovered(api string) {
	if s.failures == 0 {
		return
	}
	s.lg.Info("broker reachable again", "api", api, "failures", s.failures,
		"down_for", time.Since(s.failingSince).Round(time.Millisecond))
	s.failures = 0
}
