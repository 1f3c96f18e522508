//go:build linux

package network

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one client connection. All fields but the counters are owned by
// its processor's goroutine; nothing else touches a conn except to read the
// counters (Stats) and to hand a completed Request back through the
// processor's inbox.
type conn struct {
	id       uint64
	fd       int
	p        *processor
	listener string
	remote   net.Addr
	local    net.Addr
	ip       netip.Addr // counted under this address by connQuotas
	// tls is the handshake's outcome on a TLS listener (nil otherwise);
	// onClose, set for those, lets the TLS relay finish (see tls.go).
	tls     *tls.ConnectionState
	onClose func()
	// maxFrame is the largest request frame accepted (0:
	// SocketRequestMaxBytes), rawFrames that frames carry no request
	// header (SASL tokens after SaslHandshake v0); both start from the
	// listener and change with a response's connControl.
	maxFrame  int32
	rawFrames bool
	// attachment is the handler's, per connection (Request.Attachment).
	attachment atomic.Value
	// throttled: muted until throttledUntil for a quota (processor.throttle).
	throttled      bool
	throttledUntil time.Time

	opened     time.Time
	lastActive time.Time

	// read side
	readable     bool      // epoll said readable and no read has hit EAGAIN since
	size         [4]byte   // size prefix being read
	sizeN        int       // bytes of size read
	frame        []byte    // buffer of the frame being read (nil between frames); grows to frameSize
	frameBuf     *[]byte   // pooled buffer behind frame
	frameN       int       // bytes of frame read
	frameSize    int       // the frame's size prefix
	frameStart   time.Time // when its first size byte was read (RequestReadTimeout)
	backlog      []byte    // bytes read but not yet framed, kept while muted
	backlogBuf   *[]byte   // pooled buffer behind backlog
	backlogOff   int       // framed prefix of backlog
	parked       *Request  // framed, waiting for room in the request queue
	lastClientID *string
	inRunnable   bool

	// ordering: requests are numbered in read order; completions wait in
	// ring (indexed by seq mod len) until every earlier one has been taken.
	nextSeq uint64     // seq of the next request read
	sendSeq uint64     // seq of the next completion to take from ring
	ring    []*Request // len = MaxInFlightPerConnection
	// issued holds, at seq mod len, every request read and not yet taken
	// from ring (answered in order or dropped): the watchdog's view.
	issued   []*Request
	inFlight int  // read, and response not yet fully written
	closing  bool // CloseConnection reached: no more reads; close once written

	// write side
	writable bool  // no write has hit EAGAIN since the last EPOLLOUT
	segs     []seg // write queue
	segHead  int
	inFlush  bool

	closed bool

	// turn hands a connection's requests to Handler.Handle one at a time,
	// in read order, although NumIOThreads handlers pop the shared queue
	// concurrently. Kafka gets the same guarantee by muting a connection
	// until its response is sent; qk keeps pipelining (reads and responses
	// overlap) but never runs two Handle calls of one connection at once,
	// so a producer's pipelined batches for a partition are appended in the
	// order they were sent.
	turn turnstile

	requests atomic.Uint64
	bytesIn  atomic.Uint64
	bytesOut atomic.Uint64
}

// seg is a piece of the write queue: bytes, or a file region. The last seg
// of a response carries its Request, finished when that seg is written.
type seg struct {
	b    []byte
	file File
	fd   int   // file's descriptor, -1 to copy with ReadAt
	off  int64 // next file offset to send
	n    int64 // file bytes left
	r    *Request
}

// apply makes a handler's connControl take effect.
func (c *conn) apply(ctl connControl) {
	if ctl.setMax {
		c.maxFrame = ctl.maxFrame
	}
	switch ctl.raw {
	case 1:
		c.rawFrames = true
	case -1:
		c.rawFrames = false
	}
}

func (c *conn) pendingWrite() bool { return c.segHead < len(c.segs) }

// enqueue appends r's response, with its size prefix, to the write queue.
func (c *conn) enqueue(r *Request) error {
	size, err := r.resp.validate()
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(r.size[:], uint32(size))
	c.segs = append(c.segs, seg{b: r.size[:]})
	for i := range r.resp.Parts {
		part := &r.resp.Parts[i]
		switch {
		case part.Region.File != nil:
			if part.Region.Length == 0 {
				continue
			}
			fd := -1
			if u := part.Region.File.Fd(); u != ^uintptr(0) {
				fd = int(u)
			}
			c.segs = append(c.segs, seg{file: part.Region.File, fd: fd, off: part.Region.Offset, n: part.Region.Length})
		case len(part.Bytes) > 0:
			c.segs = append(c.segs, seg{b: part.Bytes})
		}
	}
	c.segs[len(c.segs)-1].r = r
	return nil
}

// dropReadState releases a partly read frame, the backlog and a parked
// request: bytes read from the socket that no handler has seen.
func (c *conn) dropReadState() {
	c.p.srv.freeMem(len(c.frame))
	putBuf(c.frameBuf)
	c.frame, c.frameBuf, c.frameN, c.sizeN, c.frameSize = nil, nil, 0, 0, 0
	putBuf(c.backlogBuf)
	c.backlog, c.backlogBuf, c.backlogOff = nil, nil, 0
	if c.parked != nil {
		c.inFlight--
		c.parked.release(ErrServerClosed)
		c.parked = nil
	}
}

// turnstile orders Handle calls of one connection by request seq without
// making a handler goroutine wait: a handler that pops a request whose
// predecessors are still being handled parks it here and goes back to the
// queue; the handler that finishes the predecessor runs it next.
type turnstile struct {
	mu      sync.Mutex
	next    uint64              // seq whose Handle may run now
	pending map[uint64]*Request // popped early, waiting for their turn
	closed  bool                // connection gone: nothing is parked any more
}

// enter reports whether r may be handled now; if not, r is parked and the
// handler of its predecessor will run it.
func (t *turnstile) enter(r *Request) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.seq == t.next || t.closed {
		return true
	}
	if t.pending == nil {
		t.pending = make(map[uint64]*Request)
	}
	t.pending[r.seq] = r
	return false
}

// leave ends the Handle call of seq and returns the parked request that is
// next in order, if any, for the same handler to run.
func (t *turnstile) leave(seq uint64) *Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq == t.next {
		t.next++
	}
	if r, ok := t.pending[t.next]; ok {
		delete(t.pending, t.next)
		return r
	}
	return nil
}

// close marks the connection gone and returns every parked request for the
// caller to drop; requests popped afterwards run at once (their responses
// are dropped by the closed connection).
// nextSeq is the seq of the request whose Handle runs or may run next:
// every earlier one has returned from Handle.
func (t *turnstile) nextSeq() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

func (t *turnstile) close() []*Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	out := make([]*Request, 0, len(t.pending))
	for _, r := range t.pending {
		out = append(out, r)
	}
	t.pending = nil
	return out
}
