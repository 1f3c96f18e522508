package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/purgatory"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/txncoord"
)

// Config configures a Server.
type Config struct {
	// Addr is qk.http.listener: host:port to bind, port 0 for any free one.
	Addr     string
	BrokerID int32
	// Health returns why the broker does not serve yet ("loading logs",
	// ...), none when it does. It must be safe to call at any time.
	Health func() []string
	// Now is the broker's clock, for follower catch-up ages (the ISR
	// state records the broker clock's milliseconds). Nil: time.Now.
	Now func() time.Time
	// TransactionMaxTimeoutMs is transaction.max.timeout.ms: an open
	// transaction older than this is hanging (0: none is).
	TransactionMaxTimeoutMs int
	Logger                  *slog.Logger
}

// State is the broker's parts the routes read, published once start-up
// has built them (SetState). Any field may be nil.
type State struct {
	Replicas   *replica.Manager
	Cache      *controller.Cache
	Controller *controller.Controller
	Network    *network.Server
	Fetches    *purgatory.Purgatory[purgatory.Key]
	Produces   *purgatory.Purgatory[purgatory.Key]
	Txn        *txncoord.Coordinator
	// LogDirs returns the broker's log dirs and their state.
	LogDirs func() []LogDirStatus
}

// LogDirStatus is one log dir: offline (KIP-112), or online with how full
// its file system is.
type LogDirStatus struct {
	Dir     string
	Offline bool
	// UsedPercent is the file system's Use%, as df prints it, when
	// UsageKnown (measured every few seconds while the dir is online).
	UsedPercent float64
	UsageKnown  bool
	// Warning: UsedPercent is at or above qk.log.dir.usage.warn.percent.
	Warning bool
}

// Server is one broker's admin HTTP server.
type Server struct {
	cfg     Config
	lg      *slog.Logger
	metrics *Metrics
	state   atomic.Pointer[State]

	mu   sync.Mutex // ln, srv
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when Serve returns
}

// New returns a server that is not bound yet; its Metrics may be wired
// into the network layer before Start.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Health == nil {
		cfg.Health = func() []string { return nil }
	}
	s := &Server{cfg: cfg, lg: cfg.Logger.With("component", "httpapi")}
	s.metrics = newMetrics(s)
	return s
}

// Metrics is the server's registry and request metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// SetState publishes the broker's parts to the routes.
func (s *Server) SetState(st *State) {
	if st.Network != nil {
		s.metrics.coll.sample(st.Network.Load())
	}
	s.state.Store(st)
}

// Handler serves the routes (for tests that skip the listener).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.lg.Handler(), slog.LevelWarn), ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /v1/partitions", s.servePartitions)
	mux.HandleFunc("GET /v1/health", s.serveHealth)
	return mux
}

// Start binds Addr and serves in the background. The error of a bind
// failure is net.Listen's; the caller names the setting.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(s.lg.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	s.ln, s.srv, s.done = ln, srv, make(chan struct{})
	s.mu.Unlock()
	go func() {
		defer close(s.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.lg.Error("admin http server stopped", "err", err)
		}
	}()
	s.lg.Info("admin http listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the bound address (nil before Start).
func (s *Server) Addr() *net.TCPAddr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	a, _ := s.ln.Addr().(*net.TCPAddr)
	return a
}

// Close stops the server: requests in flight get until ctx ends (at most
// a few seconds), then their connections are cut.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	// A second for requests in flight, then they are cut off: a scrape
	// (qk top, Prometheus) arriving while the broker stops must not keep
	// it from stopping, nor make its stop an error.
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		s.lg.Warn("admin HTTP requests still running at shutdown; closing their connections", "err", err)
		if err := srv.Close(); err != nil {
			<-done
			return fmt.Errorf("httpapi: close: %w", err)
		}
	}
	<-done
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client went away: nothing to do
}
