//go:build linux

package network

import (
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Sentinel errors passed to Response.Done when a response is dropped
// instead of written.
var (
	// ErrConnectionClosed: the connection closed (by the peer, a protocol
	// error, an idle timeout or CloseConnection) before the response was written.
	ErrConnectionClosed = errors.New("network: connection closed")
	// ErrServerClosed: the server shut down before the response was written.
	ErrServerClosed = errors.New("network: server closed")
	// ErrAlreadyCompleted: Respond, NoResponse or CloseConnection had already
	// been called on the request; the later response is ignored.
	ErrAlreadyCompleted = errors.New("network: request already completed")
	// ErrInvalidResponse: the response is malformed (negative region, size over
	// 2 GiB); its connection is closed.
	ErrInvalidResponse = errors.New("network: invalid response")
)

// Handler handles requests. Handle is called on one of the NumIOThreads
// handler goroutines. It must eventually call exactly one of r.Respond,
// r.NoResponse or r.CloseConnection, possibly later from another goroutine
// (delayed operations such as acks=-1 produce or long-poll fetch); until it
// does, the request counts against the connection's in-flight bound and
// Shutdown waits for it. A panic in Handle is recovered, logged at Error and
// closes the connection.
type Handler interface {
	Handle(r *Request)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(r *Request)

// Handle calls f(r).
func (f HandlerFunc) Handle(r *Request) { f(r) }

// Request is one request frame read from a connection, with its header
// fields decoded.
type Request struct {
	ApiKey        int16
	ApiVersion    int16
	CorrelationID int32
	// ClientID is the header's nullable client id; nil for a null client id
	// and for request header v0 (ControlledShutdown v0), which has none. The
	// string is shared by consecutive requests of a connection that send the
	// same id: never assign through the pointer.
	ClientID *string
	// Frame is the whole request after the 4-byte size: header and body.
	// It lives in a pooled buffer that the network layer reuses once the
	// response has been written (or, for NoResponse and CloseConnection,
	// once that completion is processed). So a Response may reference bytes
	// of Frame, but nothing — including strings decoded without copying, such
	// as kmsg's UnsafeReadFrom — may keep Frame's bytes beyond Respond.
	Frame []byte
	// HeaderSize is the number of bytes of Frame taken by the header fields
	// above: 8 for header v0, 10 + len(client id) for v1 and v2. The network
	// layer does not know which API versions are flexible, so for those the
	// header's tagged fields (header v2) start at Frame[HeaderSize] and the
	// body after them; the API layer, which owns the version table, skips them.
	HeaderSize int
	// Listener is the Name of the listener that accepted the connection.
	Listener string
	// ConnID identifies the connection, unique within the Server.
	ConnID     uint64
	RemoteAddr net.Addr
	LocalAddr  net.Addr
	// ReceivedAt is when the processor woke up to read the request's last bytes.
	ReceivedAt time.Time
	// TLS is the connection's TLS state on a TLS listener (the verified
	// client certificate chain, when the client gave one), nil otherwise.
	TLS *tls.ConnectionState

	// ctl is what the handler asked to change about the connection
	// (SetMaxRequestSize, SetRawFrames, CloseAfterResponse), applied when
	// the request's completion is taken in order.
	ctl connControl

	conn *conn
	seq  uint64 // position in the connection's request order
	// held: Handle called Hold; the connection's next request waits for
	// the release instead of Handle's return (set and read on the handler
	// goroutine).
	held  bool
	buf   *[]byte // pooled buffer behind Frame
	state atomic.Uint32
	// mem is the Frame bytes counted against QueuedMaxRequestBytes (a
	// frame is at most an int32 long); placed beside state so that the
	// Request is no larger than without it.
	mem  int32
	resp *Response
	kind completion
	// overdue: the watchdog has reported it (owned by the processor).
	overdue bool
	// waitMs is the wait the request asks for (SetWait), for the watchdog.
	waitMs atomic.Int32
	size   [4]byte // size prefix of the response
}

// RawFrameApiKey is the ApiKey of a frame read while the connection is in
// raw-frame mode (SetRawFrames): the whole frame is Frame, HeaderSize 0,
// and the other header fields are zero.
const RawFrameApiKey int16 = -1

// connControl is a change to a connection that takes effect between two
// responses: after every earlier response of the connection has been
// queued, before the first byte of this one is written.
type connControl struct {
	maxFrame   int32 // new maxFrame when setMax
	setMax     bool
	raw        int8 // 1: raw frames on, -1: off, 0: unchanged
	closeAfter bool
	throttle   time.Duration
}

type completion uint8

const (
	completeRespond completion = iota + 1
	completeNoResponse
	completeClose
)

// Respond sends resp on the request's connection. Responses leave a
// connection in request order: resp is written after the responses of all
// earlier requests of the connection. The network layer writes the 4-byte
// size prefix (the sum of the part lengths); resp holds the response header
// and body only. resp, its Parts and the memory and files they reference are
// owned by the network layer until resp.Done is called: they must not be
// modified or reused before then. A nil resp is NoResponse.
//
// Respond may be called from any goroutine, once; later calls (of Respond,
// NoResponse or CloseConnection) are ignored, and their resp.Done is called
// with ErrAlreadyCompleted.
func (r *Request) Respond(resp *Response) {
	if resp == nil {
		r.complete(completeNoResponse, nil)
		return
	}
	r.complete(completeRespond, resp)
}

// Hold keeps the connection's later requests from being handled until
// the returned release is called, instead of until Handle returns: for a
// handler that goes on with the request on a goroutine of its own (one
// that waits on the store or another broker), so that it frees its
// handler goroutine but not the connection's order. Kafka handles one
// request of a connection at a time; a client's pipelined produces must
// reach the log in the order sent. Call it from Handle; call release
// exactly once (later calls do nothing), after the request is completed
// or when its work no longer matters to the order. The connection's next
// request, if it is waiting, is then handled on the releasing goroutine.
func (r *Request) Hold() (release func()) {
	r.held = true
	var once sync.Once
	return func() { once.Do(func() { r.conn.p.srv.handleAfter(r) }) }
}

// SetMaxRequestSize changes the largest request frame the connection may
// send once this request is completed (n ≤ 0: SocketRequestMaxBytes).
// A SASL listener reads at most sasl.server.max.receive.size before a
// client authenticates (Listener.MaxRequestSizeBeforeAuth), as Kafka's
// authenticator does, and lifts it here when authentication succeeds.
// Frames already read are not checked again; call before completing.
func (r *Request) SetMaxRequestSize(n int32) {
	r.ctl.maxFrame, r.ctl.setMax = max(n, 0), true
}

// SetRawFrames switches the connection's frames, from the first one read
// after this request's response is queued, to raw mode (on) or back:
// in raw mode a frame is handed over whole, without a request header,
// with ApiKey RawFrameApiKey. This is SaslHandshake v0's framing, in
// which the client sends bare SASL tokens once the handshake is answered.
// Call before completing.
func (r *Request) SetRawFrames(on bool) {
	r.ctl.raw = -1
	if on {
		r.ctl.raw = 1
	}
}

// CloseAfterResponse closes the connection once this request's response
// has been written (a failed authentication: the client reads the error,
// then the connection ends). Responses of later requests are dropped.
// Call before Respond.
func (r *Request) CloseAfterResponse() { r.ctl.closeAfter = true }

// SetThrottle mutes the connection for d once this request's response is
// queued: no request of it is read until then, while responses still go
// out. It is how a quota violation holds a client back (Kafka's
// KIP-219: the response says throttle_time_ms, and the broker mutes the
// channel for that long, so a client that ignores the field is held
// anyway). Call before Respond or NoResponse (an acks=0 produce over its
// quota mutes the connection without a response, as Kafka's
// sendNoOpResponseExemptThrottle); CloseConnection ignores it.
func (r *Request) SetThrottle(d time.Duration) { r.ctl.throttle = d }

// Attachment is the handler's slot for state it keeps per connection,
// such as its SASL authentication; the network layer never reads it, and
// it goes away with the connection. Requests of one connection are
// handled one at a time, but a value may be read later from other
// goroutines, hence the atomic.
func (r *Request) Attachment() *atomic.Value { return &r.conn.attachment }

// NoResponse completes the request without writing anything (acks=0
// produce). The connection's ordering advances past it.
func (r *Request) NoResponse() { r.complete(completeNoResponse, nil) }

// CloseConnection closes the request's connection once the responses of all
// earlier requests of the connection have been written (a protocol error).
// Responses of later requests are dropped.
func (r *Request) CloseConnection() { r.complete(completeClose, nil) }

func (r *Request) complete(k completion, resp *Response) {
	if !r.state.CompareAndSwap(0, 1) {
		if resp != nil && resp.Done != nil {
			resp.Done(ErrAlreadyCompleted)
		}
		if r.conn != nil {
			r.conn.p.lg.Warn("request completed twice", "listener", r.Listener, "remote", addrString(r.RemoteAddr),
				"api_key", r.ApiKey, "correlation_id", r.CorrelationID)
		}
		return
	}
	r.kind, r.resp = k, resp
	if f := r.conn.p.srv.cfg.OnComplete; f != nil {
		f(r.ApiKey, r.ReceivedAt)
	}
	r.conn.p.complete(r)
}

// release returns the frame buffer to the pool and reports the outcome to
// the response's Done. It is called exactly once per request.
func (r *Request) release(err error) {
	if r.mem != 0 {
		r.conn.p.srv.freeMem(int(r.mem))
		r.mem = 0
	}
	putBuf(r.buf)
	r.buf, r.Frame = nil, nil
	if r.resp != nil && r.resp.Done != nil {
		r.resp.Done(err)
	}
}

// Response is a response without its 4-byte size prefix: the response header
// and body, as a list of parts written back to back.
type Response struct {
	Parts []Part
	// Done, if not nil, is called exactly once, on a processor goroutine or
	// within Respond: with nil once the last byte has been handed to the
	// kernel, or with the reason the response was dropped. It must not block.
	// Use it to release what the parts reference (buffers, file handles).
	Done func(err error)
}

// Len is the response size, the value of its size prefix.
func (r *Response) Len() int64 {
	var n int64
	for i := range r.Parts {
		n += r.Parts[i].Len()
	}
	return n
}

// Part is a piece of a response: Bytes, or — when Region.File is not nil —
// a region of a file sent with sendfile(2).
type Part struct {
	Bytes  []byte
	Region FileRegion
}

// Len is the number of bytes the part contributes.
func (p *Part) Len() int64 {
	if p.Region.File != nil {
		return p.Region.Length
	}
	return int64(len(p.Bytes))
}

// FileRegion is Length bytes of File starting at Offset. The bytes are sent
// with sendfile(2) from File's descriptor, so they go from the page cache to
// the socket without a copy through user space. A File without a descriptor
// (Fd returns ^uintptr(0), as vfs.Mem files do) is copied with ReadAt
// instead. The file must stay open, and the region's bytes unchanged, until
// the response's Done is called: sendfile uses the descriptor number.
type FileRegion struct {
	File   File
	Offset int64
	Length int64
}

// File is the file of a FileRegion. vfs.File and *os.File satisfy it.
type File interface {
	io.ReaderAt
	// Fd returns the operating-system descriptor, or ^uintptr(0) if the
	// file has none.
	Fd() uintptr
}

// validate checks a response before it is queued for writing and returns its
// size.
func (r *Response) validate() (int32, error) {
	var n int64
	for i := range r.Parts {
		p := &r.Parts[i]
		if p.Region.File != nil {
			if len(p.Bytes) != 0 {
				return 0, errors.New("part has both bytes and a file region")
			}
			if p.Region.Offset < 0 || p.Region.Length < 0 {
				return 0, errors.New("file region with negative offset or length")
			}
		}
		n += p.Len()
		if n > math.MaxInt32 {
			return 0, errors.New("response larger than 2 GiB")
		}
	}
	return int32(n), nil
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
