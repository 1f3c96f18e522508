package channel

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Errors given to callbacks. A callback can also get an error wrapping
// ErrUnsupportedAPI.
var (
	// ErrBrokerRemoved: the sender was removed (RemoveBroker, or AddBroker
	// with a new address) before the request was answered.
	ErrBrokerRemoved = errors.New("channel: broker removed")
	// ErrClosed: the Manager was closed before the request was answered,
	// or Send was called after Close.
	ErrClosed = errors.New("channel: closed")
	// ErrUnknownBroker: Send to an id with no sender.
	ErrUnknownBroker = errors.New("channel: unknown broker")
	// ErrUnsupportedAPI: the broker does not serve the request's API at
	// any version this binary knows. It is not retried: asking again
	// would get the same answer until the broker is upgraded, and a
	// restarted broker is removed and added again by the controller.
	ErrUnsupportedAPI = errors.New("channel: api not supported by broker")
)

// Defaults for the zero values of Config.
const (
	// DefaultRequestTimeout is Kafka's controller.socket.timeout.ms.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultRetryBackoff is Kafka's fixed 100 ms wait of the
	// RequestSendThread between failed attempts.
	DefaultRetryBackoff = 100 * time.Millisecond
	// DefaultMaxResponseBytes bounds a response frame, so that a bad
	// peer's size prefix cannot make a sender allocate without limit
	// (Kafka's socket.request.max.bytes is the same 100 MiB).
	DefaultMaxResponseBytes = 100 << 20
)

// Config configures a Manager. The zero value works.
type Config struct {
	// ControllerID is this broker's id; requests carry the client id
	// "qk-controller-<ControllerID>", so brokers' request logs name the
	// controller that sent them.
	ControllerID int32
	// ClientID, when set, replaces the "qk-controller-<ControllerID>"
	// client id (the transaction coordinator's marker sender names
	// itself as Kafka's does).
	ClientID string
	// Logger receives the senders' logs; nil discards them.
	Logger *slog.Logger
	// RequestTimeout bounds each step of an attempt: the dial, the
	// ApiVersions exchange of a new connection, and the request with its
	// response (0: DefaultRequestTimeout).
	RequestTimeout time.Duration
	// RetryBackoff is the wait after the first failed attempt; it doubles
	// with each further failure up to 8×, and at most to one second
	// unless RetryBackoff itself is longer (0: DefaultRetryBackoff).
	RetryBackoff time.Duration
	// MaxResponseBytes bounds a response frame; a larger size prefix is
	// a failed attempt (0: DefaultMaxResponseBytes).
	MaxResponseBytes int32
	// Dial opens connections; nil uses a net.Dialer. The context carries
	// the attempt's deadline and is cancelled when the sender stops.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS, when not nil, wraps each connection in TLS (an SSL or SASL_SSL
	// inter-broker listener); its ServerName is set from the address when
	// empty, for host name verification.
	TLS *tls.Config
	// SASL, when not nil, authenticates each connection after the
	// ApiVersions exchange (SaslHandshake v1 and SaslAuthenticate, as
	// Kafka's inter-broker clients do), with
	// sasl.mechanism.inter.broker.protocol and the listener's JAAS
	// credentials.
	SASL sasl.Mechanism
	// ReuseResponseBuffer reads every Fetch response of a connection
	// into one buffer kept for the connection's life instead of a new
	// one each: what a replica fetcher wants (responses of megabytes,
	// many a second, each used up before its next fetch), where fresh
	// buffers cost page faults, zeroing and GC for every fetch. A Fetch
	// response's byte slices (its records) are then valid only until the
	// next Fetch response from that broker is read: only for a caller
	// with one Fetch in flight that is done with each response before it
	// sends the next. Other responses get buffers of their own.
	ReuseResponseBuffer bool
}

// Manager is the controller's set of senders, one per live broker
// (Kafka's ControllerChannelManager). Each sender has its own connection,
// FIFO queue and goroutine, and has at most one request in flight; a
// slow or dead broker delays only its own queue.
//
// Callbacks run on the sender's goroutine. They must not block for long
// (the broker's next request waits for them), and must not call
// AddBroker, AddLocal, RemoveBroker or Close, which wait for sender
// goroutines: like Kafka's callbacks, they should hand the response to
// the controller's event loop. Send and QueueSize are safe in callbacks.
type Manager struct {
	cfg     Config
	lg      *slog.Logger
	wg      sync.WaitGroup // every sender goroutine, for Close
	formatr *kmsg.RequestFormatter

	// mu guards senders and closed. It is held only to read or change
	// the map and to queue a request (sender.mu is taken under it); it is
	// never held while waiting for a sender to stop or calling a callback.
	mu      sync.Mutex
	senders map[int32]*sender
	closed  bool
}

// New returns a Manager with no brokers.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	clientID := "qk-controller-" + strconv.Itoa(int(cfg.ControllerID))
	if cfg.ClientID != "" {
		clientID = cfg.ClientID
	}
	return &Manager{
		cfg:     cfg,
		lg:      cfg.Logger.With("component", "controller-channel"),
		formatr: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		senders: make(map[int32]*sender),
	}
}

// AddBroker starts a sender for broker id at addr (host:port). It
// connects when the first request is queued. Adding an id already present
// with the same addr does nothing; with another addr (or an id added with
// AddLocal), the old sender is removed first and its pending requests get
// ErrBrokerRemoved. After Close it does nothing.
func (m *Manager) AddBroker(id int32, addr string) {
	m.add(id, addr, nil)
}

// AddLocal starts a sender for broker id that delivers in-process: handle
// is called on the sender's goroutine, one request at a time, in queue
// order, with a context cancelled when the sender stops. It is for the
// controller's own broker: no network, and no dependency on the broker's
// listener having started.
//
// The request's version is set to kmsg's maximum (handle is this
// binary's). handle's response and error go to the callback as they are,
// with no retry: except that when handle fails after the sender was
// stopped, the callback gets ErrBrokerRemoved or ErrClosed as for any
// request not answered in time.
//
// If id already has a local sender, AddLocal does nothing; a network
// sender for id is removed first, as in AddBroker.
func (m *Manager) AddLocal(id int32, handle func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)) {
	if handle == nil {
		panic("channel: AddLocal with nil handle")
	}
	m.add(id, "", handle)
}

func (m *Manager) add(id int32, addr string, local localHandler) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	old := m.senders[id]
	if old != nil && (old.local != nil) == (local != nil) && old.addr == addr {
		m.mu.Unlock()
		return
	}
	s := newSender(m, id, addr, local)
	m.senders[id] = s
	m.wg.Add(1)
	go s.run()
	m.mu.Unlock()

	if old != nil {
		old.stop(ErrBrokerRemoved)
	}
	if local != nil {
		m.lg.Info("added local broker", "broker_id", id)
	} else {
		m.lg.Info("added broker", "broker_id", id, "addr", addr)
	}
}

// RemoveBroker stops broker id's sender and waits for its goroutine.
// Requests still queued or in flight get ErrBrokerRemoved. An unknown id
// does nothing.
func (m *Manager) RemoveBroker(id int32) {
	m.mu.Lock()
	s := m.senders[id]
	delete(m.senders, id)
	m.mu.Unlock()
	if s == nil {
		return
	}
	s.stop(ErrBrokerRemoved)
	m.lg.Info("removed broker", "broker_id", id)
}

// Send queues req for broker id. Requests to one broker are sent one at a
// time, in the order of Send calls (Kafka's controller channel has one in
// flight per broker). A request that fails for a passing reason
// (connection refused or lost, timeout, a response that does not decode)
// is sent again on a new connection until it is answered or the sender
// stops.
//
// cb (may be nil) is called exactly once with the response or an error.
// It is called from the sender's goroutine, except when Send fails at
// once: synchronously with ErrUnknownBroker if id has no sender, ErrClosed
// after Close, ErrBrokerRemoved if the sender is being removed.
//
// The version of req is set to the highest that both the broker and kmsg
// support (whatever it was set to before). The Manager owns req until cb
// is called: the caller must not change it, nor Send the same value to
// another broker meanwhile.
func (m *Manager) Send(id int32, req kmsg.Request, cb func(kmsg.Response, error)) {
	if req == nil {
		panic("channel: Send with nil request")
	}
	it := &item{req: req, cb: cb, queued: time.Now()}
	m.mu.Lock()
	var err error
	switch s := m.senders[id]; {
	case m.closed:
		err = ErrClosed
	case s == nil:
		err = ErrUnknownBroker
	default:
		err = s.enqueue(it)
	}
	m.mu.Unlock()
	if err != nil {
		it.finish(nil, err)
	}
}

// Request is Send that waits for the answer, or for ctx. A request
// abandoned at ctx's end stays queued and is still sent (its answer is
// dropped); Remove or Close ends it.
func (m *Manager) Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	type answer struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan answer, 1)
	m.Send(id, req, func(r kmsg.Response, err error) { done <- answer{r, err} })
	select {
	case a := <-done:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Brokers returns the ids that have a sender, in increasing order.
func (m *Manager) Brokers() []int32 {
	m.mu.Lock()
	ids := make([]int32, 0, len(m.senders))
	for id := range m.senders {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	slices.Sort(ids)
	return ids
}

// QueueSize returns the number of requests for broker id whose callback
// has not been called: those queued plus the one in flight (0 for an
// unknown id).
func (m *Manager) QueueSize(id int32) int {
	m.mu.Lock()
	s := m.senders[id]
	m.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.pending()
}

// Close stops every sender and waits for their goroutines. Requests still
// queued or in flight get ErrClosed, and so does any later Send.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := make([]*sender, 0, len(m.senders))
	for _, s := range m.senders {
		all = append(all, s)
	}
	clear(m.senders)
	m.mu.Unlock()

	for _, s := range all {
		s.beginStop(ErrClosed)
	}
	// Wait for all goroutines, including those of senders that a
	// concurrent RemoveBroker or AddBroker is still stopping.
	m.wg.Wait()
}
