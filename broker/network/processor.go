//go:build linux

package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// readBufSize is the processor's shared read buffer. Frames that fit are
	// copied out of it into their own pooled buffer; the rest of a frame
	// larger than this is read straight into the frame's buffer.
	readBufSize = 64 << 10
	// readsPerTurn bounds the reads from one connection per loop turn, so a
	// client that keeps its socket full cannot starve the others.
	readsPerTurn = 8
	// writeBytesPerTurn bounds the bytes written to one connection per turn
	// for the same reason (a large sendfile region to a fast reader).
	writeBytesPerTurn = 4 << 20
	// maxIovecs is Linux's IOV_MAX.
	maxIovecs = 1024
	// copyChunk is the buffer for file regions of files without a descriptor.
	copyChunk = 64 << 10
	// epollEvents is the size of the event array per epoll_wait.
	epollEvents = 256
	// connEvents are registered once per connection, edge-triggered.
	connEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET
)

// processor owns a share of the connections and does all their I/O on one
// goroutine, blocked in epoll_wait when there is nothing to do (Kafka's
// Processor). Other goroutines talk to it only through its inbox (new
// connections, completed requests, queue-room and stop notices), guarded by
// mu, and wake it by writing to its eventfd.
type processor struct {
	id   int
	srv  *Server
	lg   *slog.Logger
	epfd int
	evfd int
	// epFile wraps epfd so that the processor waits for it in Go's
	// netpoller (see wait); epConn is its raw connection.
	epFile *os.File
	epConn syscall.RawConn
	// deadline is the read deadline set on epFile (zero: none).
	deadline time.Time
	// pollFn is epollNow as a func value made once (a closure per wait
	// would be allocated on every loop turn); it leaves its results in
	// pollN and pollErr.
	pollFn  func(uintptr) bool
	pollN   int
	pollErr error
	done    chan struct{} // closed when run returns

	// inbox, guarded by mu
	mu          sync.Mutex
	signaled    bool // an eventfd write is pending
	newConns    []*conn
	completions []*Request
	hasRoom     bool // the request queue has room again
	memRoom     bool // memory was freed under QueuedMaxRequestBytes
	stop        bool // graceful shutdown requested
	force       bool // forced shutdown requested
	exited      bool // run returned; completions are dropped by the caller

	// owned by the processor goroutine
	conns        map[int32]*conn
	events       []unix.EpollEvent
	rbuf         []byte
	cbuf         []byte // copy path for files without descriptor
	iov          [][]byte
	inbox        []*Request // swapped with completions
	runnable     []*conn    // connections with reading to do
	runSpare     []*conn
	flushList    []*conn // connections with writing to do
	flushSpare   []*conn
	queueBlocked bool // the request queue was full at the last push
	memBlocked   bool // muted by QueuedMaxRequestBytes (see memAvailable)
	// memMuted is set by the processor when it mutes for memory and
	// cleared by whoever wakes it (freeMem) or by the processor itself.
	memMuted atomic.Bool
	draining bool // graceful shutdown: no more reads
	now      time.Time
	nextIdle time.Time
	// nextWatch is when the watchdog scans next (zero: off).
	nextWatch time.Time
	// throttled are the connections muted for a quota (Request.SetThrottle)
	// and throttleEnd the earliest of their ends; wakeAt is the deadline
	// of the current wait (pollTimeout).
	throttled   []*conn
	throttleEnd time.Time
	wakeAt      time.Time

	// statistics, for Server.Stats
	statsMu       sync.Mutex
	live          map[uint64]*conn
	accepted      uint64
	closed        uint64
	closedTotals  counters // counters of closed connections
	writesBlocked atomic.Uint64
	// idle is the time the processor spent parked waiting for events
	// (what Kafka's NetworkProcessorAvgIdlePercent measures), parkedAt
	// when the current park began (zero when running), both guarded by
	// idleMu so that Load counts a park in progress. The clock is read
	// and idleMu taken only when epollNow finds nothing and the goroutine
	// parks (parked, owned by the processor goroutine): a busy processor,
	// which never parks, pays nothing; the zero-timeout polls of a busy
	// loop count as busy.
	idleMu   sync.Mutex
	idle     time.Duration
	parkedAt time.Time
	parked   bool
}

type counters struct {
	requests, bytesIn, bytesOut uint64
}

func newProcessor(id int, s *Server) (*processor, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("network: processor %d: epoll_create1: %w", id, err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("network: processor %d: eventfd: %w", id, err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, fmt.Errorf("network: processor %d: register eventfd: %w", id, err)
	}
	// A non-blocking epoll descriptor is pollable: os.NewFile registers it
	// with Go's netpoller, so wait can park instead of blocking a thread.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, fmt.Errorf("network: processor %d: epoll fd non-blocking: %w", id, err)
	}
	epFile := os.NewFile(uintptr(epfd), fmt.Sprintf("epoll-processor-%d", id))
	epConn, err := epFile.SyscallConn()
	if err != nil {
		unix.Close(evfd)
		epFile.Close()
		return nil, fmt.Errorf("network: processor %d: epoll fd: %w", id, err)
	}
	p := &processor{
		id:     id,
		srv:    s,
		lg:     s.lg.With("processor", id),
		epfd:   epfd,
		evfd:   evfd,
		epFile: epFile,
		epConn: epConn,
		done:   make(chan struct{}),
		conns:  make(map[int32]*conn),
		events: make([]unix.EpollEvent, epollEvents),
		rbuf:   make([]byte, readBufSize),
		live:   make(map[uint64]*conn),
	}
	p.pollFn = p.epollNow
	return p, nil
}

// closeFds releases the descriptors of a processor that never ran.
func (p *processor) closeFds() {
	unix.Close(p.evfd)
	p.epFile.Close() // closes epfd and removes it from the netpoller
}

// wait returns the number of ready events in p.events, waiting at most
// timeoutMs milliseconds (-1: no limit, 0: just look).
//
// It never blocks its thread in epoll_wait. A goroutine blocked in a
// system call keeps its P (Go's scheduler slot) until sysmon takes it back,
// which can be 10 ms or more once sysmon has backed off; a handler
// goroutine the processor had just readied sat on that P's run queue for
// that long (a 10k records/s run showed 8-13 ms stalls every ~2 s). So
// the epoll descriptor itself is watched by Go's netpoller, which parks
// the goroutine and frees the P: epoll_wait is only called with a zero
// timeout, when the descriptor is readable or to look before parking.
func (p *processor) wait(timeoutMs int) (int, error) {
	if timeoutMs == 0 {
		return unix.EpollWait(p.epfd, p.events, 0)
	}
	// A positive timeout runs to the next idle check or throttle end
	// (see pollTimeout): that instant is the deadline, so it changes once
	// per check, not on every turn.
	var deadline time.Time
	if timeoutMs > 0 {
		deadline = p.wakeAt
	}
	if !deadline.Equal(p.deadline) {
		if err := p.epFile.SetReadDeadline(deadline); err != nil {
			return 0, err
		}
		p.deadline = deadline
	}
	err := p.epConn.Read(p.pollFn)
	n, werr := p.pollN, p.pollErr
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return n, werr
}

// epollNow is the RawConn.Read callback of wait: it looks for ready events
// without blocking and reports whether there were any (false parks the
// goroutine in the netpoller until the epoll descriptor is readable).
func (p *processor) epollNow(uintptr) bool {
	p.pollN, p.pollErr = unix.EpollWait(p.epfd, p.events, 0)
	if p.pollErr == unix.EINTR {
		p.pollN, p.pollErr = 0, nil
		return true // look again on the next turn
	}
	ready := p.pollN != 0 || p.pollErr != nil
	if !ready && !p.parked {
		p.parked = true // idle from here until run wakes up
		p.idleMu.Lock()
		p.parkedAt = time.Now()
		p.idleMu.Unlock()
	}
	return ready
}

// signalLocked wakes the processor; p.mu must be held, so the eventfd is
// never written after run has closed it.
func (p *processor) signalLocked() {
	if p.signaled {
		return
	}
	p.signaled = true
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		_, err := unix.Write(p.evfd, one[:])
		if err != unix.EINTR {
			return // EAGAIN means the counter is already non-zero
		}
	}
}

// addConn hands a new connection to the processor (acceptor goroutine).
func (p *processor) addConn(c *conn) {
	p.mu.Lock()
	if p.stop || p.force || p.exited {
		p.mu.Unlock()
		p.srv.closeUnregistered(c)
		return
	}
	p.newConns = append(p.newConns, c)
	p.signalLocked()
	p.mu.Unlock()
}

// complete hands a completed request to its processor (any goroutine).
func (p *processor) complete(r *Request) {
	p.mu.Lock()
	if p.exited {
		p.mu.Unlock()
		r.release(ErrServerClosed)
		return
	}
	p.completions = append(p.completions, r)
	p.signalLocked()
	p.mu.Unlock()
}

// queueHasRoom is called by a handler, under the queue's lock, when it took a
// request from the queue this processor found full.
func (p *processor) queueHasRoom() {
	p.mu.Lock()
	if !p.exited {
		p.hasRoom = true
		p.signalLocked()
	}
	p.mu.Unlock()
}

// memHasRoom is called by freeMem (any goroutine) when memory was freed
// under the limit while this processor was muted for memory.
func (p *processor) memHasRoom() {
	p.mu.Lock()
	if !p.exited {
		p.memRoom = true
		p.signalLocked()
	}
	p.mu.Unlock()
}

// requestStop asks the processor to drain (graceful) or to close everything
// now (force).
func (p *processor) requestStop(force bool) {
	p.mu.Lock()
	if !p.exited {
		p.stop = true
		p.force = p.force || force
		p.signalLocked()
	}
	p.mu.Unlock()
}

// run is the processor's event loop.
func (p *processor) run() {
	defer p.exit()
	idle, readTimeout := p.srv.cfg.ConnectionsMaxIdle, p.srv.cfg.RequestReadTimeout
	p.now = time.Now()
	var every time.Duration // how often closeExpired runs; 0: never
	switch {
	case idle > 0 && readTimeout > 0:
		every = idleCheckInterval(min(idle, readTimeout))
	case idle > 0:
		every = idleCheckInterval(idle)
	case readTimeout > 0:
		every = idleCheckInterval(readTimeout)
	}
	if every > 0 {
		p.nextIdle = p.now.Add(every)
	}
	requestTimeout := p.srv.cfg.RequestTimeout
	var watchEvery time.Duration
	if requestTimeout > 0 {
		watchEvery = watchInterval(requestTimeout)
		p.nextWatch = p.now.Add(watchEvery)
	}
	for {
		n, err := p.wait(p.pollTimeout())
		if err != nil && err != unix.EINTR {
			p.lg.Error("epoll_wait failed; closing the processor's connections", "err", err)
			return
		}
		p.now = time.Now()
		if p.parked {
			p.parked = false
			p.idleMu.Lock()
			p.idle += p.now.Sub(p.parkedAt)
			p.parkedAt = time.Time{}
			p.idleMu.Unlock()
		}
		woken := false
		for _, ev := range p.events[:max(n, 0)] {
			if ev.Fd == int32(p.evfd) {
				woken = true
				continue
			}
			c := p.conns[ev.Fd]
			if c == nil {
				continue // closed earlier in this batch
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.readable = true
				if p.wantsRead(c) {
					p.markRunnable(c)
				}
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.writable = true
				if c.pendingWrite() {
					p.markFlush(c)
				}
			}
		}
		if woken && p.drainInbox() {
			return
		}
		if len(p.throttled) > 0 && !p.now.Before(p.throttleEnd) {
			p.unthrottle()
		}
		p.runReads()
		p.flushAll()
		if every > 0 && !p.nextIdle.IsZero() && !p.now.Before(p.nextIdle) {
			p.closeExpired(idle, readTimeout)
			p.nextIdle = p.now.Add(every)
		}
		if watchEvery > 0 && !p.now.Before(p.nextWatch) {
			p.scanOverdue(requestTimeout)
			p.nextWatch = p.now.Add(watchEvery)
		}
		if p.draining && len(p.conns) == 0 {
			return
		}
	}
}

// idleCheckInterval is how often connections are checked for idleness (and
// for requests not received in time): a tenth of the limit, between 1 ms
// and 1 s.
func idleCheckInterval(idle time.Duration) time.Duration {
	return min(max(idle/10, time.Millisecond), time.Second)
}

// pollTimeout is the epoll_wait timeout in milliseconds: 0 when there is
// work left from the last turn, else until the next idle check, else forever.
func (p *processor) pollTimeout() int {
	if len(p.flushList) > 0 || (len(p.runnable) > 0 && !p.queueBlocked && !p.memBlocked && !p.draining) {
		return 0
	}
	p.wakeAt = p.nextIdle
	if !p.nextWatch.IsZero() && (p.wakeAt.IsZero() || p.nextWatch.Before(p.wakeAt)) {
		p.wakeAt = p.nextWatch
	}
	if len(p.throttled) > 0 && (p.wakeAt.IsZero() || p.throttleEnd.Before(p.wakeAt)) {
		p.wakeAt = p.throttleEnd
	}
	if p.wakeAt.IsZero() {
		return -1
	}
	d := time.Until(p.wakeAt)
	if d <= 0 {
		return 0
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

// drainInbox reads the eventfd and applies what other goroutines queued.
// It reports whether the processor must exit now (forced stop).
func (p *processor) drainInbox() bool {
	var b [8]byte
	for {
		_, err := unix.Read(p.evfd, b[:])
		if err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	p.signaled = false
	newConns := p.newConns
	p.newConns = nil
	p.inbox, p.completions = p.completions, p.inbox[:0]
	hasRoom, memRoom, stop, force := p.hasRoom, p.memRoom, p.stop, p.force
	p.hasRoom, p.memRoom = false, false
	p.mu.Unlock()

	if force {
		for _, c := range newConns {
			p.srv.closeUnregistered(c)
		}
		for _, r := range p.inbox {
			r.release(ErrServerClosed)
		}
		clear(p.inbox)
		return true
	}
	for _, c := range newConns {
		p.register(c)
	}
	for i, r := range p.inbox {
		p.deliver(r)
		p.inbox[i] = nil
	}
	if hasRoom {
		p.queueBlocked = false
	}
	if memRoom {
		p.memBlocked = false // memAvailable mutes again if it is still short
	}
	if stop && !p.draining {
		p.startDraining()
	}
	return false
}

// register adds a new connection to the epoll set.
func (p *processor) register(c *conn) {
	if p.draining {
		p.srv.closeUnregistered(c)
		return
	}
	ev := unix.EpollEvent{Events: connEvents, Fd: int32(c.fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
		p.lg.Warn("cannot register connection", "listener", c.listener, "remote", addrString(c.remote), "err", err)
		p.srv.closeUnregistered(c)
		return
	}
	c.p = p
	c.ring = make([]*Request, p.srv.cfg.MaxInFlightPerConnection)
	c.issued = make([]*Request, p.srv.cfg.MaxInFlightPerConnection)
	c.opened, c.lastActive = p.now, p.now
	// A new socket may already hold data: edge-triggered epoll reports it on
	// registration, but reading once costs at most an EAGAIN.
	c.readable, c.writable = true, true
	p.conns[int32(c.fd)] = c
	p.statsMu.Lock()
	p.live[c.id] = c
	p.accepted++
	p.statsMu.Unlock()
	p.markRunnable(c)
	p.lg.Debug("connection accepted", "listener", c.listener, "remote", addrString(c.remote), "conn", c.id)
}

// startDraining begins a graceful stop: no more reads; frames read but not
// yet queued for a handler are dropped; connections close once their
// in-flight requests are answered.
func (p *processor) startDraining() {
	p.draining = true
	p.nextIdle = time.Time{}
	for _, c := range p.conns {
		c.dropReadState()
		p.maybeClose(c)
	}
}

// markRunnable queues c for reading in this or the next turn.
func (p *processor) markRunnable(c *conn) {
	if !c.inRunnable {
		c.inRunnable = true
		p.runnable = append(p.runnable, c)
	}
}

// markFlush queues c for writing at the end of this turn.
func (p *processor) markFlush(c *conn) {
	if !c.inFlush {
		c.inFlush = true
		p.flushList = append(p.flushList, c)
	}
}

// wantsRead reports whether c has reading to do that it may do now, ignoring
// the processor-wide stops (full request queue, draining).
func (p *processor) wantsRead(c *conn) bool {
	if c.closed || c.closing || c.throttled {
		return false
	}
	if c.parked != nil {
		return true
	}
	return c.inFlight < len(c.ring) && (c.readable || c.backlog != nil)
}

// canRead reports whether more bytes of c may be read and framed now.
func (p *processor) canRead(c *conn) bool {
	return !c.closed && !c.closing && !c.throttled && c.parked == nil && c.inFlight < len(c.ring) &&
		!p.queueBlocked && !p.memBlocked && !p.draining
}

// runReads services the runnable connections once each. While the request
// queue is full (or the server drains) they stay queued, unread.
func (p *processor) runReads() {
	list := p.runnable
	p.runnable = p.runSpare[:0]
	for _, c := range list {
		c.inRunnable = false
		if c.closed {
			continue
		}
		if !p.queueBlocked && !p.memBlocked && !p.draining {
			p.serviceRead(c)
		}
		if p.wantsRead(c) {
			p.markRunnable(c)
		}
	}
	clear(list)
	p.runSpare = list[:0]
}

// serviceRead queues c's parked request, frames its backlog, then reads from
// its socket, until it runs out of bytes, hits a stop, or its turn ends.
func (p *processor) serviceRead(c *conn) {
	if c.parked != nil {
		if !p.push(c.parked) {
			return
		}
		c.parked = nil
	}
	if c.backlog != nil {
		c.backlogOff += p.consume(c, c.backlog[c.backlogOff:])
		if c.closed {
			return
		}
		if c.backlogOff < len(c.backlog) {
			return
		}
		putBuf(c.backlogBuf)
		c.backlog, c.backlogBuf, c.backlogOff = nil, nil, 0
	}
	for range readsPerTurn {
		if !c.readable || !p.canRead(c) {
			return
		}
		buf, direct := p.rbuf, false
		if c.frame != nil && c.frameSize-c.frameN >= len(p.rbuf) {
			if c.frameN == len(c.frame) {
				p.growFrame(c, len(p.rbuf))
			}
			buf, direct = c.frame[c.frameN:], true
		}
		n, err := unix.Read(c.fd, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.readable = false
			return
		case err != nil:
			p.closeConn(c, "read failed", err)
			return
		case n == 0:
			p.closeConn(c, "peer closed the connection", nil)
			return
		}
		c.bytesIn.Add(uint64(n))
		c.lastActive = p.now
		if direct {
			c.frameN += n
			if c.frameN == c.frameSize {
				p.frameDone(c)
			}
			continue
		}
		used := p.consume(c, buf[:n])
		if c.closed {
			return
		}
		if used < n {
			// Muted mid-buffer: keep the rest for later.
			c.backlogBuf = getBuf(n - used)
			c.backlog = *c.backlogBuf
			copy(c.backlog, buf[used:n])
			return
		}
	}
}

// consume frames bytes read from c and returns how many it used; it stops
// early when c may not read on (in-flight bound, full queue, closed).
func (p *processor) consume(c *conn, data []byte) int {
	i := 0
	for i < len(data) && p.canRead(c) {
		if c.frame == nil {
			if c.sizeN == 0 {
				// A new request begins: the memory bound may mute here,
				// between requests, never inside one.
				if !p.memAvailable() {
					break
				}
				c.frameStart = p.now
			}
			k := copy(c.size[c.sizeN:], data[i:])
			c.sizeN += k
			i += k
			if c.sizeN < len(c.size) {
				break
			}
			c.sizeN = 0
			size := int32(binary.BigEndian.Uint32(c.size[:]))
			limit, setting := p.srv.cfg.SocketRequestMaxBytes, "socket.request.max.bytes"
			if c.maxFrame > 0 {
				limit, setting = c.maxFrame, "sasl.server.max.receive.size"
			}
			if size < 0 || size > limit {
				p.lg.Warn("closing connection: request size outside 0.."+setting,
					"listener", c.listener, "remote", addrString(c.remote), "size", size, "limit", limit)
				p.closeConn(c, "", nil)
				return i
			}
			if c.rawFrames && size == 0 {
				p.lg.Warn("closing connection: empty SASL token",
					"listener", c.listener, "remote", addrString(c.remote))
				p.closeConn(c, "", nil)
				return i
			}
			if size < minFrameSize && !c.rawFrames {
				p.lg.Warn("closing connection: request shorter than a request header",
					"listener", c.listener, "remote", addrString(c.remote), "size", size, "min", minFrameSize)
				p.closeConn(c, "", nil)
				return i
			}
			// The buffer starts at most frameChunk long and grows as bytes
			// arrive (growFrame): a size prefix alone, from a client that
			// then trickles or stops, holds no more than that.
			c.frameSize = int(size)
			c.frameBuf = getBuf(min(c.frameSize, frameChunk))
			c.frame = *c.frameBuf
			c.frameN = 0
			p.srv.allocMem(len(c.frame))
		}
		if c.frameN == len(c.frame) {
			p.growFrame(c, len(data)-i)
		}
		k := copy(c.frame[c.frameN:], data[i:])
		c.frameN += k
		i += k
		if c.frameN == c.frameSize {
			p.frameDone(c)
		}
	}
	return i
}

// frameChunk is the most a frame's buffer holds before its bytes arrive:
// frames up to this size are allocated at once, as before; larger ones
// start here and grow fourfold (growFrame) as they fill, so a frame's
// buffer is never more than about four times what was received (plus one
// chunk), and a 1 MiB produce costs two extra copies of 64 KiB and 256 KiB.
const frameChunk = readBufSize

// growFrame enlarges c's full frame buffer for at least need more bytes
// (fourfold, at most to the announced size), keeping what was read.
func (p *processor) growFrame(c *conn, need int) {
	n := min(c.frameSize, max(4*len(c.frame), c.frameN+need))
	nb := getBuf(n)
	copy(*nb, c.frame[:c.frameN])
	p.srv.allocMem(n - len(c.frame))
	putBuf(c.frameBuf)
	c.frameBuf, c.frame = nb, *nb
}

// frameDone turns c's complete frame into a Request and queues it.
func (p *processor) frameDone(c *conn) {
	r := &Request{
		Frame:      c.frame,
		Listener:   c.listener,
		ConnID:     c.id,
		RemoteAddr: c.remote,
		LocalAddr:  c.local,
		ReceivedAt: p.now,
		TLS:        c.tls,
		conn:       c,
		buf:        c.frameBuf,
		mem:        int32(len(c.frame)),
	}
	c.frame, c.frameBuf, c.frameN, c.frameSize = nil, nil, 0, 0
	if c.rawFrames {
		r.ApiKey = RawFrameApiKey
	} else if err := parseHeader(r, r.Frame, c.lastClientID); err != nil {
		p.lg.Warn("closing connection: malformed request header",
			"listener", c.listener, "remote", addrString(c.remote), "size", len(r.Frame), "err", err)
		r.release(nil)
		p.closeConn(c, "", nil)
		return
	}
	if r.ClientID != nil {
		c.lastClientID = r.ClientID
	}
	r.seq = c.nextSeq
	c.issued[r.seq%uint64(len(c.issued))] = r
	c.nextSeq++
	c.inFlight++
	c.requests.Add(1)
	if !p.push(r) {
		c.parked = r
	}
}

// push queues r for the handlers; false means the queue is full and the
// processor stops reading until a handler makes room.
func (p *processor) push(r *Request) bool {
	if p.queueBlocked {
		return false
	}
	if !p.srv.queue.push(p, r) {
		p.queueBlocked = true
		return false
	}
	return true
}

// deliver takes a completed request: it goes into c's reorder ring, and
// every completion that is next in request order moves on (to the write
// queue, or straight out for NoResponse and CloseConnection).
func (p *processor) deliver(r *Request) {
	c := r.conn
	if c.closed {
		r.release(ErrConnectionClosed)
		return
	}
	c.ring[r.seq%uint64(len(c.ring))] = r
	for {
		i := c.sendSeq % uint64(len(c.ring))
		r := c.ring[i]
		if r == nil {
			break
		}
		c.ring[i] = nil
		c.issued[i] = nil
		c.sendSeq++
		if c.closing {
			c.inFlight--
			r.release(ErrConnectionClosed)
			continue
		}
		c.apply(r.ctl)
		switch r.kind {
		case completeRespond:
			if err := c.enqueue(r); err != nil {
				p.lg.Error("closing connection: handler returned an invalid response",
					"listener", c.listener, "remote", addrString(c.remote), "api_key", r.ApiKey, "err", err)
				c.inFlight--
				r.release(fmt.Errorf("%w: %w", ErrInvalidResponse, err))
				c.closing = true
				continue
			}
			p.markFlush(c)
			if r.ctl.closeAfter {
				c.closing = true
			}
			if r.ctl.throttle > 0 {
				p.throttle(c, r.ctl.throttle)
			}
		case completeNoResponse:
			c.inFlight--
			r.release(nil)
			if r.ctl.throttle > 0 {
				p.throttle(c, r.ctl.throttle) // acks=0 produce over its quota
			}
		case completeClose:
			c.inFlight--
			r.release(nil)
			c.closing = true
			p.lg.Debug("closing connection at the handler's request", "listener", c.listener,
				"remote", addrString(c.remote), "api_key", r.ApiKey)
		}
	}
	if p.maybeClose(c) {
		return
	}
	if p.wantsRead(c) {
		p.markRunnable(c)
	}
}

// throttle mutes c for d from now, as Kafka mutes a channel for the
// throttle time of a quota violation (KIP-219): its next requests stay in
// the socket until then, responses still go out.
func (p *processor) throttle(c *conn, d time.Duration) {
	until := p.now.Add(d)
	if c.throttled {
		if until.After(c.throttledUntil) {
			c.throttledUntil = until
		}
	} else {
		c.throttled, c.throttledUntil = true, until
		p.throttled = append(p.throttled, c)
	}
	if len(p.throttled) == 1 || until.Before(p.throttleEnd) {
		p.throttleEnd = until
	}
}

// unthrottle unmutes the connections whose throttle time is over and
// finds the next end.
func (p *processor) unthrottle() {
	keep := p.throttled[:0]
	var next time.Time
	for _, c := range p.throttled {
		switch {
		case c.closed:
		case !p.now.Before(c.throttledUntil):
			c.throttled = false
			if p.wantsRead(c) {
				p.markRunnable(c)
			}
		default:
			keep = append(keep, c)
			if next.IsZero() || c.throttledUntil.Before(next) {
				next = c.throttledUntil
			}
		}
	}
	clear(p.throttled[len(keep):])
	p.throttled, p.throttleEnd = keep, next
}

// maybeClose closes c if it has finished: CloseConnection reached with
// everything before it written, or draining with nothing in flight.
func (p *processor) maybeClose(c *conn) bool {
	if c.closed {
		return true
	}
	if c.pendingWrite() {
		return false
	}
	if c.closing || (p.draining && c.inFlight == 0) {
		p.closeConn(c, "", nil)
		return true
	}
	return false
}

// flushAll writes to the connections queued for writing.
func (p *processor) flushAll() {
	list := p.flushList
	p.flushList = p.flushSpare[:0]
	for _, c := range list {
		c.inFlush = false
		if !c.closed {
			p.flush(c)
		}
	}
	clear(list)
	p.flushSpare = list[:0]
}

// flush writes c's queued responses until the socket is full, the queue is
// empty or the turn's byte budget is spent. Runs of byte parts go out with
// one writev; file regions with sendfile.
func (p *processor) flush(c *conn) {
	budget := writeBytesPerTurn
	for c.writable && c.pendingWrite() {
		if budget <= 0 {
			p.markFlush(c) // continue next turn
			return
		}
		s := &c.segs[c.segHead]
		var n int
		var err error
		if s.file != nil {
			n, err = p.sendFile(c, s)
		} else {
			iov := p.iov[:0]
			for j := c.segHead; j < len(c.segs) && c.segs[j].file == nil && len(iov) < maxIovecs; j++ {
				iov = append(iov, c.segs[j].b)
			}
			n, err = unix.Writev(c.fd, iov)
			clear(iov)
			p.iov = iov[:0]
		}
		if n > 0 {
			budget -= n
			c.bytesOut.Add(uint64(n))
			c.lastActive = p.now
			p.advance(c, n)
			if c.closed {
				return
			}
		}
		switch {
		case err == nil, err == unix.EINTR:
		case err == unix.EAGAIN:
			c.writable = false
			p.writesBlocked.Add(1)
		case errors.Is(err, errShortFile):
			p.lg.Warn("closing connection: file region beyond the end of its file",
				"listener", c.listener, "remote", addrString(c.remote), "err", err)
			p.closeConn(c, "", nil)
			return
		default:
			p.closeConn(c, "write failed", err)
			return
		}
	}
	if !c.pendingWrite() {
		c.segs = c.segs[:0]
		c.segHead = 0
		p.maybeClose(c)
	}
}

var errShortFile = errors.New("network: file shorter than its region")

// sendFile sends from the file region at the head of c's write queue.
func (p *processor) sendFile(c *conn, s *seg) (int, error) {
	if s.fd >= 0 {
		off := s.off
		n, err := unix.Sendfile(c.fd, s.fd, &off, int(min(s.n, 1<<30)))
		if n < 0 {
			n = 0
		}
		if n == 0 && err == nil {
			return 0, fmt.Errorf("%w: nothing to send at offset %d", errShortFile, s.off)
		}
		return n, err
	}
	// No descriptor: read a chunk and write it. Bytes the socket does not
	// take are read again next time (ReadAt is positional).
	if p.cbuf == nil {
		p.cbuf = make([]byte, copyChunk)
	}
	k := int(min(s.n, int64(len(p.cbuf))))
	m, err := s.file.ReadAt(p.cbuf[:k], s.off)
	if m < k {
		return 0, fmt.Errorf("%w: read %d of %d bytes at offset %d: %v", errShortFile, m, k, s.off, err)
	}
	n, err := unix.Write(c.fd, p.cbuf[:k])
	return max(n, 0), err
}

// advance consumes n written bytes from c's write queue, finishing the
// responses whose last byte went out.
func (p *processor) advance(c *conn, n int) {
	for n > 0 {
		s := &c.segs[c.segHead]
		if s.file != nil {
			k := min(int64(n), s.n)
			s.off += k
			s.n -= k
			n -= int(k)
			if s.n > 0 {
				break
			}
		} else {
			k := min(n, len(s.b))
			s.b = s.b[k:]
			n -= k
			if len(s.b) > 0 {
				break
			}
		}
		r := s.r
		*s = seg{}
		c.segHead++
		if r != nil {
			c.inFlight--
			r.release(nil)
			if p.wantsRead(c) {
				p.markRunnable(c)
			}
		}
	}
	// A connection whose queue never empties (a pipelining client that reads
	// slowly) would grow segs forever: move the live tail to the front.
	if c.segHead >= 64 && 2*c.segHead >= len(c.segs) {
		n := copy(c.segs, c.segs[c.segHead:])
		clear(c.segs[n:])
		c.segs, c.segHead = c.segs[:n], 0
	}
}

// closeExpired closes connections with nothing in flight and no traffic
// for the idle limit, and connections that began a request longer than
// readTimeout ago and have not sent the rest (limits ≤ 0 are off). A
// connection with bytes waiting that the processor has not read (muted by
// a full request queue or the memory bound) is neither: the silence is
// ours.
func (p *processor) closeExpired(idle, readTimeout time.Duration) {
	for _, c := range p.conns {
		if c.readable || c.backlog != nil {
			continue
		}
		switch {
		case readTimeout > 0 && (c.sizeN > 0 || c.frame != nil) && p.now.Sub(c.frameStart) >= readTimeout:
			p.lg.Warn("closing connection: request not received in time", "listener", c.listener,
				"remote", addrString(c.remote), "size", c.frameSize, "received", c.frameN, "timeout", readTimeout)
			p.closeConn(c, "", nil)
		case idle > 0 && c.inFlight == 0 && !c.pendingWrite() && p.now.Sub(c.lastActive) >= idle:
			p.lg.Debug("closing idle connection", "listener", c.listener, "remote", addrString(c.remote),
				"idle", p.now.Sub(c.lastActive))
			p.closeConn(c, "", nil)
		}
	}
}

// closeConn closes c and drops what it holds. reason, when not empty, is
// logged at Debug with err (routine closes); protocol errors are logged by
// the caller.
func (p *processor) closeConn(c *conn, reason string, err error) {
	if c.closed {
		return
	}
	if reason != "" {
		p.lg.Debug("connection closed: "+reason, "listener", c.listener, "remote", addrString(c.remote), "err", err)
	}
	c.closed = true
	if c.onClose != nil {
		c.onClose()
	}
	// Requests parked behind a predecessor (see turnstile) were never seen
	// by the handler; with the connection gone nobody will answer them, so
	// they are dropped like frames read but not yet queued.
	for _, r := range c.turn.close() {
		r.state.Store(1)
		r.release(ErrConnectionClosed)
	}
	// Statistics first, so that a peer that sees the close sees it counted.
	p.statsMu.Lock()
	delete(p.live, c.id)
	p.closed++
	p.closedTotals.requests += c.requests.Load()
	p.closedTotals.bytesIn += c.bytesIn.Load()
	p.closedTotals.bytesOut += c.bytesOut.Load()
	p.statsMu.Unlock()
	delete(p.conns, int32(c.fd))
	// Closing the descriptor also removes it from the epoll set.
	unix.Close(c.fd)
	c.fd = -1
	p.srv.quotas.dec(c.ip)
	c.dropReadState()
	for i, r := range c.ring {
		if r != nil {
			r.release(ErrConnectionClosed)
			c.ring[i] = nil
		}
	}
	clear(c.issued)
	for i := c.segHead; i < len(c.segs); i++ {
		if r := c.segs[i].r; r != nil {
			r.release(ErrConnectionClosed)
		}
	}
	clear(c.segs)
	c.segs, c.segHead = nil, 0
}

// exit closes every connection and the processor's descriptors. Completions
// that arrive afterwards are dropped by Request.complete.
func (p *processor) exit() {
	for _, c := range p.conns {
		p.closeConn(c, "server stopped", nil)
	}
	p.mu.Lock()
	p.exited = true
	newConns, completions := p.newConns, p.completions
	p.newConns, p.completions = nil, nil
	p.mu.Unlock()
	for _, c := range newConns {
		p.srv.closeUnregistered(c)
	}
	for _, r := range completions {
		r.release(ErrServerClosed)
	}
	p.closeFds()
	close(p.done)
}
