// Package network is the broker's socket server, in Kafka's model
// (SocketServer, Processor, RequestChannel, KafkaRequestHandlerPool), built
// directly on Linux epoll through golang.org/x/sys/unix rather than on a
// goroutine per connection.
//
// # Threading model
//
//	listener "PLAINTEXT"      listener "INTERNAL"
//	       |                         |
//	  [acceptor]                [acceptor]          one goroutine per listener:
//	       \                        /               accept, set options, dup fd,
//	        +------ round robin ---+                hand to a processor
//	       /            |           \
//	 +-----------+ +-----------+ +-----------+
//	 |processor 0| |processor 1| |processor 2|      NumNetworkThreads goroutines,
//	 |  epoll    | |  epoll    | |  epoll    |      each an epoll loop over its
//	 |  eventfd  | |  eventfd  | |  eventfd  |      connections + an eventfd
//	 +-----------+ +-----------+ +-----------+
//	    |  ^  reads size-prefixed frames, decodes the request header
//	    |  |
//	    v  |  push (never blocks; full => processor stops reading)
//	 +-------------------------------------------+
//	 |  request queue (QueuedMaxRequests)        |  shared, bounded
//	 +-------------------------------------------+
//	    |  pop
//	    v
//	 [handler] [handler] ... [handler]              NumIOThreads goroutines
//	    |        Handler.Handle(r)
//	    |        r.Respond / NoResponse / CloseConnection,
//	    |        now or later from any goroutine (purgatory)
//	    v
//	 processor inbox (per processor, mutex + eventfd wake-up)
//	    |
//	    v
//	 per-connection reorder ring -> write queue -> writev / sendfile
//
// # Acceptors
//
// An acceptor uses the net package's listener, so accept(2) waits in Go's
// poller and Shutdown wakes it by closing the listener. Each accepted socket
// gets its options (TCP_NODELAY and keep-alive from Go, SO_SNDBUF/SO_RCVBUF
// from Config), then its descriptor is duplicated (F_DUPFD_CLOEXEC) and the
// net.Conn closed, which removes the original from Go's poller: from then on
// the duplicate, non-blocking, belongs to one processor alone. SO_RCVBUF is
// also set on the listening socket before listen(2) so the TCP window scale
// matches.
//
// # TLS
//
// A listener with a tls.Config terminates TLS in front of the processors:
// the handshake runs on its own goroutine (bounded by TLSHandshakeTimeout),
// then the plaintext end of a Unix socket pair goes to a processor like
// any accepted socket, and two goroutines relay between the pair and the
// tls.Conn. Request.TLS carries the handshake's state (the client's
// verified certificates). See tls.go for why and what it costs.
//
// # Connection controls (SASL)
//
// A handler may change its connection between two responses:
// SetMaxRequestSize (a SASL listener starts at MaxRequestSizeBeforeAuth,
// sasl.server.max.receive.size, until authentication lifts it),
// SetRawFrames (SaslHandshake v0's bare tokens, delivered with
// RawFrameApiKey) and CloseAfterResponse (a failed authentication's error
// is written, then the connection closes). Each takes effect in request
// order, before the first byte of that request's response. Attachment is
// the handler's per-connection slot (its authentication state).
//
// # Throttling (client quotas)
//
// SetThrottle mutes a connection for a quota's throttle time once the
// request's response is queued (or, for NoResponse, once it is taken):
// its next requests stay in the kernel until then while responses still
// go out, as Kafka mutes a channel (KIP-219). The processor keeps the
// throttled connections in a list and wakes at the earliest end.
//
// # Processors
//
// A processor's goroutine is the only one that touches its connections. It
// blocks in epoll_wait; other goroutines reach it through its inbox (new
// connections, completed requests, "the queue has room", stop) and wake it
// with an eventfd in the same epoll set, written at most once per wake-up.
//
// Connections are registered once, edge-triggered, for EPOLLIN, EPOLLOUT and
// EPOLLRDHUP. Edge triggering needs no epoll_ctl to mute or unmute a
// connection: the processor keeps a readable and a writable flag per
// connection, set by events and cleared only when a read or write returns
// EAGAIN, and a muted connection simply is not read until it is unmuted, when
// the flag says whether bytes are waiting. A connection is read at most 8
// times per loop turn and written at most 4 MiB per turn, so one busy client
// cannot starve the others; leftover work makes the next epoll_wait
// non-blocking.
//
// Reading: bytes go into a 64 KiB buffer per processor and are framed from
// there; each frame (int32 size, then size bytes) is copied into its own
// buffer from size-class pools (512 B..16 MiB), and the tail of a frame larger
// than the read buffer is read straight into the frame's buffer. A frame's
// buffer is not allocated at its announced size: it starts at 64 KiB at
// most and grows fourfold as bytes arrive, so a size prefix followed by a
// trickle (or nothing) holds one chunk, not socket.request.max.bytes. A size above
// SocketRequestMaxBytes, a negative size, a frame shorter than the 8-byte
// header start and a malformed client id close that connection with a Warn
// line (listener, remote, size, limit or err); nothing else is touched.
//
// Request header: the processor decodes api key, api version, correlation id
// and the nullable client id (none for header v0, ControlledShutdown v0).
// It does not know which versions are flexible, so the tagged fields of
// header v2 are left to the handler at Frame[HeaderSize:].
//
// Writing: the 4-byte size is computed from the parts. Runs of byte parts,
// across responses, go out with one writev (up to IOV_MAX); a file region
// goes out with sendfile(2) from the file's descriptor at its offset, or with
// ReadAt and write for files without one. Partial writes continue where they
// stopped; EAGAIN waits for EPOLLOUT. The processor never blocks on a socket.
// SIGPIPE is not a concern: Go ignores it for descriptors other than 1 and 2
// unless the program asks to be notified of it.
//
// # Ordering invariant
//
// Responses leave a connection in the order its requests arrived, whatever
// order handlers complete them in. The processor numbers a connection's
// requests as it reads them; a completion waits in the connection's reorder
// ring (indexed by number modulo the in-flight bound) until every earlier
// one has been taken, then moves on: Respond to the write queue, NoResponse
// nowhere (it only advances the order), CloseConnection to "close once what
// is queued before it is written; drop what comes after".
//
// Pipelining: up to MaxInFlightPerConnection requests (default 8) of one
// connection may be read before the oldest has its response fully written.
// Kafka reads one request at a time per connection; reading ahead lets
// clients that pipeline (franz-go produce) keep the handlers busy. At the
// bound the connection is muted until a response has been written.
// Reading ahead never means handling ahead: a connection's requests reach
// Handler.Handle one at a time, in read order (a per-connection turnstile
// in front of Handle), so pipelined produce batches for a partition are
// appended in the order the client sent them, as with Kafka. No handler
// goroutine waits for its turn: one that pops a request whose predecessor
// is still being handled parks it on the connection and moves on, and the
// handler of the predecessor runs it next. A handler that parks a request
// in the purgatory (long-poll fetch) returns from Handle at once, so the
// next request of that connection is not held up by the wait.
//
// # Backpressure invariant
//
// Nothing grows without bound. The request queue holds at most
// QueuedMaxRequests requests; a processor that finds it full keeps the frame
// it could not queue (one per processor) and stops reading every one of its
// connections until a handler takes a request. The processor goes on writing
// responses meanwhile, and unread bytes stay in the kernel's socket buffers,
// so TCP flow control slows the clients down. Per connection, at most
// MaxInFlightPerConnection frames and responses are held, plus at most one
// read buffer's worth (64 KiB) of bytes read but not yet framed. Across
// connections, QueuedMaxRequestBytes bounds the bytes of requests held
// (see Limits).
//
// # Limits
//
// Connections (Kafka's ConnectionQuotas): after accept, a connection over
// MaxConnectionsPerIP (or its entry in MaxConnectionsPerIPOverrides) or
// over MaxConnections is closed at once, with a Warn line naming the
// listener, remote address, setting and limit, at most one a second (the
// next line counts the refusals not logged). Counts are released when the
// connection closes, however it closes. Over MaxConnectionCreationRate
// (a sliding window, Kafka's Rate) the acceptor waits before handing on
// the connection and accepting the next, as Kafka's does: new connections
// wait in the listen backlog rather than being refused.
//
// Memory (QueuedMaxRequestBytes, Kafka's MemoryPool): the bytes of frame
// buffers, from allocation until the request's response is written, are
// counted with atomics; a processor about to start a frame with the count
// at or above the limit stops reading all its connections until a
// release brings it under (see memAvailable). Frames are never dropped:
// unread bytes stay in the kernel.
//
// Slow senders: a connection that began a request and has not sent the
// rest within RequestReadTimeout (qk.socket.request.read.timeout.ms) is
// closed with a Warn line; time the processor was not reading it
// (backpressure) does not count. Idle and half-open connections are closed
// by ConnectionsMaxIdle; a trickle resets that clock but not this one.
//
// # Lifetimes
//
// Request.Frame is valid until its response has been written: a Response may
// reference it (an echo), but nothing may keep its bytes, or strings aliasing
// them, after Respond. The parts of a Response, and the files of its regions,
// are used by reference until Response.Done is called; the handler must not
// modify or reuse them before then.
//
// # Idle connections and shutdown
//
// A connection with nothing in flight, nothing to write, no bytes waiting
// and no traffic for ConnectionsMaxIdle is closed (checked every tenth of the
// smaller of it and RequestReadTimeout, at most every second).
//
// Shutdown closes the listeners, then each processor stops reading, drops
// frames it has read but not queued, waits for the requests in flight to be
// answered and their responses written, and closes each connection as it
// finishes. Then the request queue closes and the handlers exit. When the
// context ends first, connections are closed at once and pending responses
// dropped (Done gets ErrServerClosed).
//
// # Logging
//
// Lines carry component=network and processor, and listener, remote and err
// where they apply. Warn: a connection closed for a protocol violation,
// accept errors. Error: a handler panic or an invalid Response (a handler
// bug). Debug: routine opens and closes (peer EOF, reset, idle). Info:
// listening and shutdown.
package network
