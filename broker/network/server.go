//go:build linux

package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Server is the network layer of a broker: acceptors, processors, the
// request queue and the handler pool. See the package documentation.
type Server struct {
	cfg     Config
	handler Handler
	lg      *slog.Logger

	mu        sync.Mutex // guards state, listeners, addrs
	state     int
	listeners []net.Listener
	addrs     []net.Addr

	procs      []*processor
	queue      *requestQueue
	nextProc   atomic.Uint64
	nextConnID atomic.Uint64
	stopAccept chan struct{}
	quotas     *connQuotas

	// The memory bound (see memAvailable): memLimit is
	// QueuedMaxRequestBytes (≤ 0: off), mem the frame bytes counted,
	// memMutedN the processors muted for memory.
	memLimit  int64
	mem       atomic.Int64
	memMutedN atomic.Int32

	// overdue counts the requests the watchdog reported (watchdog.go).
	overdue atomic.Uint64

	wg             sync.WaitGroup // every goroutine of the server
	acceptWG       sync.WaitGroup // acceptors
	handlersLeft   atomic.Int32
	handlersExited chan struct{}
}

const (
	stateNew = iota
	stateStarted
	stateStopped
)

// New validates cfg and returns a server that calls h for every request.
// Nothing is bound until Start.
func New(cfg Config, h Handler) (*Server, error) {
	if h == nil {
		return nil, errors.New("network: nil handler")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	overrides, err := resolveOverrides(cfg.MaxConnectionsPerIPOverrides)
	if err != nil {
		return nil, err
	}
	lg := cfg.Logger.With("component", "network")
	return &Server{
		cfg:            cfg,
		handler:        h,
		lg:             lg,
		stopAccept:     make(chan struct{}),
		handlersExited: make(chan struct{}),
		quotas:         newConnQuotas(cfg, overrides, lg),
		memLimit:       cfg.QueuedMaxRequestBytes,
	}, nil
}

// resolveOverrides turns max.connections.per.ip.overrides' hosts into
// addresses, as Kafka does (InetAddress.getByName, once): a host name
// counts for every address it resolves to.
func resolveOverrides(m map[string]int) (map[netip.Addr]int, error) {
	out := make(map[netip.Addr]int, len(m))
	for host, n := range m {
		if ip, err := netip.ParseAddr(host); err == nil {
			out[ip.Unmap()] = n
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
		if err != nil {
			return nil, fmt.Errorf("network: config: max.connections.per.ip.overrides: host %s: %w", host, err)
		}
		for _, ip := range addrs {
			out[ip.Unmap()] = n
		}
	}
	return out, nil
}

// Start binds the listeners and starts the acceptors, processors and
// handlers. If a listener cannot be bound, nothing is left running.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return errors.New("network: server already started or shut down")
	}
	procs := make([]*processor, 0, s.cfg.NumNetworkThreads)
	listeners := make([]net.Listener, 0, len(s.cfg.Listeners))
	fail := func(err error) error {
		for _, l := range listeners {
			l.Close()
		}
		for _, p := range procs {
			p.closeFds()
		}
		return err
	}
	for i := range s.cfg.NumNetworkThreads {
		p, err := newProcessor(i, s)
		if err != nil {
			return fail(err)
		}
		procs = append(procs, p)
	}
	for _, l := range s.cfg.Listeners {
		ln, err := s.listen(l)
		if err != nil {
			return fail(err)
		}
		listeners = append(listeners, ln)
	}
	s.procs = procs
	s.listeners = listeners
	s.queue = newRequestQueue(s.cfg.QueuedMaxRequests)
	s.state = stateStarted
	for _, p := range procs {
		s.wg.Go(p.run)
	}
	s.handlersLeft.Store(int32(s.cfg.NumIOThreads))
	for range s.cfg.NumIOThreads {
		s.wg.Go(s.runHandler)
	}
	for i, ln := range listeners {
		l := s.cfg.Listeners[i]
		s.addrs = append(s.addrs, ln.Addr())
		s.acceptWG.Add(1)
		s.wg.Go(func() {
			defer s.acceptWG.Done()
			s.accept(ln, l)
		})
		s.lg.Info("listening", "listener", l.Name, "addr", ln.Addr().String(), "tls", l.TLS != nil)
	}
	return nil
}

// listen binds one listener. SO_RCVBUF is set before listen(2) so that
// accepted sockets inherit it with a matching TCP window scale.
func (s *Server) listen(l Listener) (net.Listener, error) {
	lc := net.ListenConfig{}
	if rcv := s.cfg.SocketReceiveBufferBytes; rcv > 0 {
		lc.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, rcv)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	addr := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("network: listener %s: %w", l.Name, err)
	}
	return ln, nil
}

// Addrs returns the bound address of each listener, in Config order, once
// Start has returned.
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]net.Addr(nil), s.addrs...)
}

// accept is the acceptor of one listener. It uses the net package's
// listener, so accept(2) waits in Go's poller and Close wakes it, then takes
// the socket out of Go's hands: it duplicates the descriptor and closes the
// net.Conn, which deregisters the original from Go's poller. The duplicate,
// non-blocking and close-on-exec, belongs to a processor from then on.
//
// On a TLS listener the socket stays with Go instead: see acceptTLS.
func (s *Server) accept(ln net.Listener, l Listener) {
	name := l.Name
	backoff := time.Duration(0)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE, ENFILE, ENOBUFS...: wait and retry rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.lg.Warn("accept failed", "listener", name, "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.stopAccept:
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		if d := s.quotas.throttle(time.Now()); d > 0 {
			// Over max.connection.creation.rate: hold this connection, and
			// the listen backlog behind it, for the throttle time.
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-s.stopAccept:
				t.Stop()
				nc.Close()
				return
			}
		}
		ip := ipOf(nc.RemoteAddr())
		if ok, setting, limit := s.quotas.inc(ip); !ok {
			s.quotas.refused(time.Now(), name, nc.RemoteAddr(), setting, limit)
			nc.Close()
			continue
		}
		if l.TLS != nil {
			s.wg.Go(func() { s.acceptTLS(nc, l, ip) })
			continue
		}
		c, err := s.adopt(nc, l)
		if err != nil {
			s.lg.Warn("cannot adopt connection", "listener", name, "remote", addrString(nc.RemoteAddr()), "err", err)
			s.quotas.dec(ip)
			continue
		}
		c.ip = ip
		p := s.procs[(s.nextProc.Add(1)-1)%uint64(len(s.procs))]
		p.addConn(c)
	}
}

// adopt sets the socket options of an accepted connection and takes its
// descriptor; nc is closed in every case.
func (s *Server) adopt(nc net.Conn, l Listener) (*conn, error) {
	defer nc.Close()
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil, fmt.Errorf("not a TCP connection: %T", nc)
	}
	if err := s.setBuffers(tc); err != nil {
		return nil, err
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("raw conn: %w", err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(u uintptr) {
		fd, derr = unix.FcntlInt(u, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("raw conn: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("dup: %w", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set non-blocking: %w", err)
	}
	return &conn{
		id:       s.nextConnID.Add(1),
		fd:       fd,
		listener: l.Name,
		remote:   nc.RemoteAddr(),
		local:    nc.LocalAddr(),
		maxFrame: max(l.MaxRequestSizeBeforeAuth, 0),
	}, nil
}

// setBuffers applies socket.send.buffer.bytes and
// socket.receive.buffer.bytes to an accepted connection. Go already sets
// TCP_NODELAY and keep-alive on accepted connections.
func (s *Server) setBuffers(tc *net.TCPConn) error {
	if n := s.cfg.SocketSendBufferBytes; n > 0 {
		if err := tc.SetWriteBuffer(n); err != nil {
			return fmt.Errorf("set SO_SNDBUF: %w", err)
		}
	}
	if n := s.cfg.SocketReceiveBufferBytes; n > 0 {
		if err := tc.SetReadBuffer(n); err != nil {
			return fmt.Errorf("set SO_RCVBUF: %w", err)
		}
	}
	return nil
}

// closeUnregistered closes a connection no processor has registered and
// releases its count.
func (s *Server) closeUnregistered(c *conn) {
	unix.Close(c.fd)
	s.quotas.dec(c.ip)
}

// runHandler is one of the NumIOThreads handler goroutines.
func (s *Server) runHandler() {
	defer func() {
		if s.handlersLeft.Add(-1) == 0 {
			close(s.handlersExited)
		}
	}()
	for {
		r, ok := s.queue.pop()
		if !ok {
			return
		}
		s.handle(r)
	}
}

// handle runs r, then every request of the same connection that was popped
// early and parked behind it (see turnstile).
func (s *Server) handle(r *Request) {
	if !r.conn.turn.enter(r) {
		return
	}
	s.run(r)
}

// run handles r and the requests of its connection parked behind it, in
// order, until one of them is held (Request.Hold): its release goes on.
func (s *Server) run(r *Request) {
	for r != nil {
		s.handleOne(r)
		if r.held {
			return
		}
		r = r.conn.turn.leave(r.seq)
	}
}

// handleAfter is a held request's release: the connection's turn passes
// to its next request, handled here if it is waiting.
func (s *Server) handleAfter(r *Request) {
	s.run(r.conn.turn.leave(r.seq))
}

func (s *Server) handleOne(r *Request) {
	defer func() {
		if v := recover(); v != nil {
			s.lg.Error("handler panicked; closing the connection", "listener", r.Listener,
				"remote", addrString(r.RemoteAddr), "api_key", r.ApiKey, "api_version", r.ApiVersion,
				"err", fmt.Errorf("panic: %v", v), "stack", string(debug.Stack()))
			r.CloseConnection()
		}
	}()
	s.handler.Handle(r)
}

// Shutdown stops the server: it stops accepting, stops reading requests,
// lets the requests already queued for or held by handlers complete and
// their responses be written, then closes the connections and stops the
// processors and handlers. Frames read but not yet queued are dropped with
// their connection.
//
// If ctx ends first, the connections are closed at once, responses still
// pending are dropped (their Done gets ErrServerClosed), and Shutdown
// returns ctx's error without waiting for handlers still inside Handle;
// they exit when Handle returns. Calling Shutdown again, or before Start,
// returns nil.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.state != stateStarted {
		s.state = stateStopped
		s.mu.Unlock()
		return nil
	}
	s.state = stateStopped
	listeners := s.listeners
	s.mu.Unlock()

	s.lg.Info("shutting down")
	close(s.stopAccept)
	for _, ln := range listeners {
		ln.Close()
	}
	s.acceptWG.Wait()

	for _, p := range s.procs {
		p.requestStop(false)
	}
	err := waitAll(ctx, s.procs)
	if err != nil {
		s.lg.Warn("shutdown deadline reached; closing connections with requests in flight", "err", err)
		for _, p := range s.procs {
			p.requestStop(true)
		}
		for _, p := range s.procs {
			<-p.done
		}
	}
	for _, r := range s.queue.close() {
		r.release(ErrServerClosed)
	}
	if err != nil {
		return err
	}
	select {
	case <-s.handlersExited:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.wg.Wait()
	s.lg.Info("shut down")
	return nil
}

// waitAll waits for every processor to exit, or for ctx to end.
func waitAll(ctx context.Context, procs []*processor) error {
	for _, p := range procs {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
