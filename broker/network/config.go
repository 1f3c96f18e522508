//go:build linux

package network

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults applied by New to zero fields of Config. They are Kafka's broker
// defaults, except MaxInFlightPerConnection which Kafka does not have (it
// reads one request per connection at a time).
const (
	DefaultNumNetworkThreads        = 3
	DefaultNumIOThreads             = 8
	DefaultQueuedMaxRequests        = 500
	DefaultSocketRequestMaxBytes    = 100 * 1024 * 1024 // socket.request.max.bytes
	DefaultConnectionsMaxIdle       = 10 * time.Minute  // connections.max.idle.ms
	DefaultMaxInFlightPerConnection = 8
	// DefaultRequestReadTimeout is qk.socket.request.read.timeout.ms: qk's,
	// Kafka has no such limit.
	DefaultRequestReadTimeout = time.Minute
	// DefaultRequestTimeout is request.timeout.ms's default (Kafka's).
	DefaultRequestTimeout = 30 * time.Second
	// DefaultQuotaWindowNum and DefaultQuotaWindowSize are Kafka's
	// quota.window.num and quota.window.size.seconds, the sliding window
	// of MaxConnectionCreationRate.
	DefaultQuotaWindowNum  = 11
	DefaultQuotaWindowSize = time.Second
	// DefaultListenerName names a Listener whose Name is empty.
	DefaultListenerName = "PLAINTEXT"
	// DefaultTLSHandshakeTimeout bounds a TLS handshake, from accept to
	// its last message: qk's, since Kafka's SSL engine has no such limit
	// (its idle timeout closes a stalled handshake after 10 minutes).
	DefaultTLSHandshakeTimeout = 10 * time.Second
)

// NoConnections as MaxConnections or MaxConnectionsPerIP allows none
// (Kafka's value 0; 0 in Config means no limit).
const NoConnections = -1

// Listener is one address the server accepts connections on.
type Listener struct {
	// Name is the listener name of Kafka's listeners setting
	// ("PLAINTEXT", "INTERNAL"...). It is copied to Request.Listener and logged
	// under the key "listener". Empty means DefaultListenerName.
	Name string
	// Host is the address to bind; empty binds all interfaces.
	Host string
	// Port to bind; 0 picks a free port (see Server.Addrs).
	Port int
	// TLS, when not nil, makes this an SSL (or SASL_SSL) listener: each
	// connection does a TLS handshake with this configuration before its
	// first request (see the package documentation, TLS). The config may
	// use GetConfigForClient, so that certificates reload without a
	// restart; it must not be modified after Start.
	TLS *tls.Config
	// MaxRequestSizeBeforeAuth, when positive, is the largest request
	// frame a new connection may send until the handler lifts it with
	// Request.SetMaxRequestSize: sasl.server.max.receive.size on SASL
	// listeners, so that an unauthenticated client cannot make the broker
	// buffer socket.request.max.bytes.
	MaxRequestSizeBeforeAuth int32
}

// Config configures a Server. Zero fields take the defaults above.
type Config struct {
	Listeners []Listener
	// NumNetworkThreads is num.network.threads: processors, each an epoll
	// loop multiplexing its share of the connections.
	NumNetworkThreads int
	// NumIOThreads is num.io.threads: handler goroutines calling Handler.Handle.
	NumIOThreads int
	// QueuedMaxRequests is queued.max.requests: the capacity of the request
	// queue shared by all processors. When it is full, processors stop
	// reading from their sockets until a handler takes a request.
	QueuedMaxRequests int
	// SocketRequestMaxBytes is socket.request.max.bytes: a request frame
	// larger than this (or with a negative size) closes its connection.
	SocketRequestMaxBytes int32
	// SocketSendBufferBytes and SocketReceiveBufferBytes are
	// socket.send.buffer.bytes and socket.receive.buffer.bytes (SO_SNDBUF,
	// SO_RCVBUF). -1 or 0 keep the operating system's default, which on Linux
	// also keeps buffer auto-tuning.
	SocketSendBufferBytes    int
	SocketReceiveBufferBytes int
	// ConnectionsMaxIdle is connections.max.idle.ms: a connection with no
	// request in flight, nothing left to write and no bytes received or sent
	// for this long is closed. 0 means the default; negative disables.
	ConnectionsMaxIdle time.Duration
	// MaxInFlightPerConnection bounds pipelining: how many requests of one
	// connection may be read before the oldest response has been written.
	// At the bound the processor stops reading that connection.
	MaxInFlightPerConnection int
	// MaxConnections is max.connections and MaxConnectionsPerIP is
	// max.connections.per.ip: a connection accepted over either is closed
	// at once, with a Warn line (at most one a second). 0 means no limit;
	// NoConnections means none at all (Kafka's 0). Kafka's acceptor waits
	// for a free slot at max.connections instead of closing; qk closes, so
	// that a flood never holds the acceptor and clients retry with their
	// reconnect backoff, as they do for the per-IP limit.
	MaxConnections      int
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// per-host limits that replace MaxConnectionsPerIP (0: refuse that
	// host). Keys are IP addresses or host names, resolved by New.
	MaxConnectionsPerIPOverrides map[string]int
	// MaxConnectionCreationRate is max.connection.creation.rate, in
	// connections per second over a sliding window of QuotaWindowNum
	// samples of QuotaWindowSize (Kafka's Rate). 0 means no limit. A
	// connection over the rate is delayed, not refused: as Kafka's
	// acceptor does, the acceptor waits the throttle time before handing
	// it to a processor and accepting the next one, so new connections
	// queue in the listen backlog (and, beyond it, the kernel drops SYNs
	// and clients retransmit). Closing them instead would make clients
	// reconnect at once and turn the rate into a storm of refusals.
	MaxConnectionCreationRate float64
	QuotaWindowNum            int
	QuotaWindowSize           time.Duration
	// QueuedMaxRequestBytes is queued.max.request.bytes: the most bytes of
	// requests read and not yet answered (their response not yet written).
	// At or above it the processors stop reading new requests until
	// responses free memory. 0 or negative means no bound (Kafka's -1).
	QueuedMaxRequestBytes int64
	// RequestReadTimeout is qk.socket.request.read.timeout.ms: a
	// connection that has sent part of a request (even only part of its
	// size prefix) and not the rest within this time is closed, so that a
	// client trickling bytes cannot hold a connection (and its partly read
	// frame) forever; a trickle keeps connections.max.idle.ms from firing.
	// Time the broker itself does not read (a full request queue, the
	// memory bound) does not count. 0 means the default; negative
	// disables.
	RequestReadTimeout time.Duration
	// RequestTimeout is request.timeout.ms: a request neither answered nor
	// dropped with its connection this long after it was read, plus the
	// wait it asks for itself (Request.SetWait), is logged at Warn once and
	// counted in Stats.RequestsOverdue (the watchdog, watchdog.go). It
	// changes nothing for the request. 0 means DefaultRequestTimeout;
	// negative disables.
	RequestTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake of a connection to a
	// TLS listener; a client that has not finished it in time is closed.
	// 0 means DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration
	// Logger receives the package's log lines (component=network). Nil
	// discards them.
	Logger *slog.Logger
	// OnComplete, if not nil, is called once per request when it is
	// completed (Respond, NoResponse or CloseConnection), on the
	// completing goroutine, with its API key and ReceivedAt: the broker's
	// request rate and latency metrics. The time measured ends when the
	// response is handed to the network layer, not when its last byte is
	// written. It must be cheap and must not block.
	OnComplete func(apiKey int16, receivedAt time.Time)
}

// withDefaults returns cfg with zero fields defaulted, or an error naming the
// first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Listeners) == 0 {
		return cfg, errors.New("network: config: no listeners")
	}
	ls := make([]Listener, len(cfg.Listeners))
	copy(ls, cfg.Listeners)
	for i := range ls {
		if ls[i].Name == "" {
			ls[i].Name = DefaultListenerName
		}
		if ls[i].Port < 0 || ls[i].Port > math.MaxUint16 {
			return cfg, fmt.Errorf("network: config: listener %s: port %d out of range 0..65535", ls[i].Name, ls[i].Port)
		}
	}
	cfg.Listeners = ls
	def := func(name string, v *int, d int) error {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			return fmt.Errorf("network: config: %s is %d, must be positive", name, *v)
		}
		return nil
	}
	if err := errors.Join(
		def("NumNetworkThreads", &cfg.NumNetworkThreads, DefaultNumNetworkThreads),
		def("NumIOThreads", &cfg.NumIOThreads, DefaultNumIOThreads),
		def("QueuedMaxRequests", &cfg.QueuedMaxRequests, DefaultQueuedMaxRequests),
		def("MaxInFlightPerConnection", &cfg.MaxInFlightPerConnection, DefaultMaxInFlightPerConnection),
	); err != nil {
		return cfg, err
	}
	switch {
	case cfg.SocketRequestMaxBytes == 0:
		cfg.SocketRequestMaxBytes = DefaultSocketRequestMaxBytes
	case cfg.SocketRequestMaxBytes < 8:
		return cfg, fmt.Errorf("network: config: SocketRequestMaxBytes is %d, must be at least 8", cfg.SocketRequestMaxBytes)
	}
	if cfg.SocketSendBufferBytes < -1 || cfg.SocketReceiveBufferBytes < -1 {
		return cfg, fmt.Errorf("network: config: socket buffer sizes %d/%d, must be -1 (OS default) or positive",
			cfg.SocketSendBufferBytes, cfg.SocketReceiveBufferBytes)
	}
	if cfg.MaxConnections < NoConnections || cfg.MaxConnectionsPerIP < NoConnections {
		return cfg, fmt.Errorf("network: config: MaxConnections %d, MaxConnectionsPerIP %d: must be ≥ 0 or NoConnections",
			cfg.MaxConnections, cfg.MaxConnectionsPerIP)
	}
	for h, n := range cfg.MaxConnectionsPerIPOverrides {
		if n < 0 {
			return cfg, fmt.Errorf("network: config: MaxConnectionsPerIPOverrides[%s] is %d, must be ≥ 0", h, n)
		}
	}
	if cfg.MaxConnectionCreationRate < 0 {
		return cfg, fmt.Errorf("network: config: MaxConnectionCreationRate is %v, must be ≥ 0", cfg.MaxConnectionCreationRate)
	}
	if cfg.QuotaWindowNum == 0 {
		cfg.QuotaWindowNum = DefaultQuotaWindowNum
	}
	if cfg.QuotaWindowSize == 0 {
		cfg.QuotaWindowSize = DefaultQuotaWindowSize
	}
	if cfg.QuotaWindowNum < 1 || cfg.QuotaWindowSize < 0 {
		return cfg, fmt.Errorf("network: config: quota window %d x %v, must be positive", cfg.QuotaWindowNum, cfg.QuotaWindowSize)
	}
	if cfg.RequestReadTimeout == 0 {
		cfg.RequestReadTimeout = DefaultRequestReadTimeout
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.ConnectionsMaxIdle == 0 {
		cfg.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if cfg.TLSHandshakeTimeout <= 0 {
		cfg.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}
