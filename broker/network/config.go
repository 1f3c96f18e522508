//go:build linux

package network

import (
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
	// DefaultListenerName names a Listener whose Name is empty.
	DefaultListenerName = "PLAINTEXT"
)

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
	if cfg.ConnectionsMaxIdle == 0 {
		cfg.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}
