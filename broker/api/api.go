package api

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/purgatory"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/replica/quota"
	"github.com/qk-project/qk/broker/security/acl"
	"github.com/qk-project/qk/broker/txncoord"
)

// Config wires a Handler.
type Config struct {
	BrokerID int32
	// Broker returns the broker's current configuration (it changes with
	// dynamic broker configs).
	Broker     func() *config.Broker
	Replicas   *replica.Manager
	Cache      *controller.Cache
	Controller *controller.Controller
	Store      metadata.Store
	// ProducerIDs allocates producer ids (nil: one of the handler's own
	// over Store).
	ProducerIDs *metadata.ProducerIDs
	// Fetches holds long-poll fetches until enough data arrives or their
	// wait ends, keyed by partition. Its owner shuts it down before the
	// network server, so waiting fetches are answered at once.
	Fetches *purgatory.Purgatory[purgatory.Key]
	// Produces holds acks=-1 produces until the ISR has their batches.
	Produces *purgatory.Purgatory[purgatory.Key]
	// FetchSessionCacheSlots is the most fetch sessions kept
	// (max.incremental.fetch.session.cache.slots); 0 keeps none.
	FetchSessionCacheSlots int
	// FetchSessionEviction is how long a session is safe from eviction
	// by one of its kind with more partitions, and how long unused before
	// any new session may evict it (min.incremental.fetch.session.eviction.ms).
	FetchSessionEviction time.Duration
	// LeaderQuota is the leader replication quota
	// (leader.replication.throttled.rate): follower fetches of throttled
	// partitions from followers out of the ISR get no records while it is
	// exceeded; nil throttles nothing.
	LeaderQuota *quota.Quota
	// Quotas are the client quotas (producer_byte_rate,
	// consumer_byte_rate, request_percentage; see quota.go); nil
	// enforces none.
	Quotas *clientquota.Managers
	// Groups is the group coordinator.
	Groups *group.Coordinator
	// Txn is the transaction coordinator; nil answers the transaction
	// APIs COORDINATOR_NOT_AVAILABLE.
	Txn *txncoord.Coordinator
	// VerifyTxn asks a transactional id's coordinator, this broker or
	// another, to verify partitions before a transactional produce opens
	// a transaction on them (verify.go); nil verifies nothing.
	VerifyTxn TxnVerifier
	// LogDirs are the broker's log directories, for DescribeLogDirs.
	LogDirs []string
	// LogDirError returns the error that took a log dir offline, nil
	// while it is online (nil func: all online).
	LogDirError func(dir string) error
	// FutureLog returns a partition's future log (a replica moving to
	// another log dir) and its dir, for DescribeLogDirs (nil: none).
	FutureLog func(topic string, partition int32) (*log.Log, string, bool)
	Logger    *slog.Logger
	Clock     func() time.Time
	// Control serves the controller's requests (LeaderAndIsr, StopReplica,
	// UpdateMetadata, ControlledShutdown), which arrive only on
	// InterBrokerListener.
	Control             func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	InterBrokerListener string
	// Listeners says how each listener, by name, authenticates its
	// clients; a listener missing here is PLAINTEXT.
	Listeners map[string]*ListenerAuth
	// Authorizer is the ACL authorizer (authorizer.class.name), with
	// super.users and allow.everyone.if.no.acl.found; nil when none is
	// configured: every request is allowed and the ACL APIs answer
	// SECURITY_DISABLED, as Kafka does.
	Authorizer *acl.Authorizer
}

// Handler serves the Kafka protocol: it implements network.Handler.
type Handler struct {
	cfg Config
	lg  *slog.Logger
	// authLog is the audit log of denials (component=authorizer).
	authLog *slog.Logger
	now     func() time.Time

	sessions *fetchSessionCache // fetch sessions (KIP-227)

	producerIDs *metadata.ProducerIDs

	// stopping is cancelled by Stop: the waits a request makes outside
	// the purgatories (a marker's replication, store operations) end
	// with it, so that the network shutdown has nothing long to drain.
	stopping context.Context
	stop     context.CancelFunc
}

var _ network.Handler = (*Handler)(nil)

// New returns a Handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	h := &Handler{cfg: cfg, lg: cfg.Logger.With("component", "api"), now: cfg.Clock,
		authLog:     cfg.Logger.With("component", "authorizer"),
		sessions:    newFetchSessionCache(cfg.FetchSessionCacheSlots, cfg.FetchSessionEviction),
		producerIDs: cfg.ProducerIDs}
	h.stopping, h.stop = context.WithCancel(context.Background())
	if h.producerIDs == nil {
		h.producerIDs = metadata.NewProducerIDs(cfg.Store, cfg.BrokerID, cfg.Logger)
	}
	return h
}

// FetchSessionStats counts the fetch sessions: in the cache now, and
// created, evicted and used incrementally since start.
func (h *Handler) FetchSessionStats() FetchSessionStats { return h.sessions.Stats() }

// call is one request being served.
type call struct {
	h       *Handler
	r       *network.Request
	key     int16
	version int16
	req     kmsg.Request
	// flexibleResp: the response header is v1 (with tagged fields).
	flexibleResp bool
	// detached: the handler runs on its own goroutine (detach).
	detached bool

	// Client quotas (quota.go). start is when Handle began, set only
	// when the request quota applies; handled is the time Handle took
	// (ns, atomic: a delayed response may be sent while Handle returns).
	// throttle is a byte-rate throttle time the handler set (Produce),
	// requestRecorded that the request quota has been charged, user the
	// quota user once looked up.
	start           time.Time
	handled         atomic.Int64
	throttle        time.Duration
	requestRecorded bool
	user            string
}

// Handle decodes a request and dispatches it through the table. An
// unknown API key, an unsupported version (except for ApiVersions) or a
// body that does not decode closes the connection, with a Warn line.
func (h *Handler) Handle(r *network.Request) {
	if r.ApiKey == network.RawFrameApiKey {
		h.handleRawSASLToken(r)
		return
	}
	if !h.admit(r) {
		return
	}
	a, ok := byKey[r.ApiKey]
	if !ok {
		h.lg.Warn("closing connection: unknown api key", "api_key", r.ApiKey, "api_version", r.ApiVersion,
			"remote", addr(r), "client_id", clientID(r))
		r.CloseConnection()
		return
	}
	if a.control && !h.FromController(r) {
		h.lg.Warn("closing connection: inter-broker request outside the inter-broker listener", "api", kmsg.NameForKey(r.ApiKey),
			"listener", r.Listener, "remote", addr(r), "client_id", clientID(r))
		r.CloseConnection()
		return
	}
	if r.ApiVersion < a.min || r.ApiVersion > a.max {
		if r.ApiKey == apiKeyApiVersions {
			h.unsupportedApiVersions(r)
			return
		}
		h.lg.Warn("closing connection: unsupported api version", "api_key", r.ApiKey, "api_version", r.ApiVersion,
			"min", a.min, "max", a.max, "remote", addr(r), "client_id", clientID(r))
		r.CloseConnection()
		return
	}
	req := kmsg.RequestForKey(r.ApiKey)
	req.SetVersion(r.ApiVersion)
	body := r.Frame[r.HeaderSize:]
	if req.IsFlexible() {
		var ok bool
		if body, ok = skipTags(body); !ok {
			h.lg.Warn("closing connection: malformed request header tags", "api_key", r.ApiKey,
				"api_version", r.ApiVersion, "remote", addr(r))
			r.CloseConnection()
			return
		}
	}
	// Produce and Fetch are decoded without copying (strings alias the
	// frame, which lives until the response is written); their handlers
	// clone what they keep. Everything else is copied.
	var err error
	if u, ok := req.(interface{ UnsafeReadFrom([]byte) error }); ok && (r.ApiKey == apiKeyProduce || r.ApiKey == apiKeyFetch) {
		err = u.UnsafeReadFrom(body)
	} else {
		err = req.ReadFrom(body)
	}
	if err != nil {
		h.lg.Warn("closing connection: request does not decode", "api_key", r.ApiKey, "api_version", r.ApiVersion,
			"remote", addr(r), "client_id", clientID(r), "err", err)
		r.CloseConnection()
		return
	}
	if h.lg.Enabled(context.Background(), slog.LevelDebug) {
		h.lg.Debug("request", "api", kmsg.NameForKey(r.ApiKey), "api_version", r.ApiVersion,
			"correlation_id", r.CorrelationID, "client_id", clientID(r), "remote", addr(r))
	}
	c := &call{h: h, r: r, key: r.ApiKey, version: r.ApiVersion, req: req,
		flexibleResp: req.IsFlexible() && r.ApiKey != apiKeyApiVersions}
	c.startQuota(a)
	if a.waits {
		c.detach(a.handle)
		return
	}
	a.handle(h, c)
	c.endHandle()
}

// detach runs handle on a goroutine of its own and returns at once, so
// that a request that may wait (on the store, the controller, other
// brokers) holds no handler goroutine while it does: Kafka parks such
// requests in its topic purgatory for the same reason. The connection's
// later requests wait until handle returns (network.Request.Hold), so a
// connection's requests are still handled in order. A request with a
// timeout_ms tells the watchdog it may wait that long. The request quota
// charges the dispatch, not the wait, as Kafka charges handler-thread
// time. A panic closes the connection, as one on a handler goroutine
// does (network.Server.handleOne).
func (c *call) detach(handle func(*Handler, *call)) {
	wait := defaultWait
	if t, ok := c.req.(kmsg.TimeoutRequest); ok && t.Timeout() > 0 {
		wait = time.Duration(t.Timeout()) * time.Millisecond
	}
	c.r.SetWait(wait)
	c.detached = true
	c.endHandle()
	// The connection's next request waits for this one, as in Kafka
	// (one request of a connection at a time): pipelined produces reach
	// the log in order even when one of them is detached.
	release := c.r.Hold()
	go func() {
		defer release()
		defer func() {
			if v := recover(); v != nil {
				c.h.lg.Error("handler panicked; closing the connection", "api", kmsg.NameForKey(c.key),
					"api_version", c.version, "remote", addr(c.r), "client_id", clientID(c.r),
					"err", fmt.Errorf("panic: %v", v), "stack", string(debug.Stack()))
				c.r.CloseConnection()
			}
		}()
		handle(c.h, c)
	}()
}

const (
	apiKeyProduce     = 0
	apiKeyFetch       = 1
	apiKeyApiVersions = 18
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// header appends the response header: the correlation id, and an empty
// tagged-field section for response header v1.
func (c *call) header(b []byte) []byte {
	b = appendInt32(b, c.r.CorrelationID)
	if c.flexibleResp {
		b = appendEmptyTags(b)
	}
	return b
}

// respond encodes resp (at the request's version) and sends it, with
// the throttle time of the client's quotas.
func (c *call) respond(resp kmsg.Response) {
	resp.SetVersion(c.version)
	c.applyThrottle(resp)
	bp := bufPool.Get().(*[]byte)
	b := c.header((*bp)[:0])
	b = resp.AppendTo(b)
	*bp = b
	c.r.Respond(&network.Response{
		Parts: []network.Part{{Bytes: b}},
		Done: func(error) {
			if cap(*bp) <= 1<<20 {
				bufPool.Put(bp)
			}
		},
	})
}

// defaultWait bounds the store operations and waits of a request that
// has no timeout_ms of its own.
const defaultWait = 30 * time.Second

// ctx is the context of store operations made for a request.
func (c *call) ctx(timeoutMs int32) (context.Context, context.CancelFunc) {
	d := defaultWait
	if timeoutMs > 0 {
		d = time.Duration(timeoutMs) * time.Millisecond
	}
	return context.WithTimeout(c.h.stopping, d)
}

// Stop ends the waits of requests in flight, at broker shutdown, before
// the network server drains them; each answers with the error its wait
// ends in (NOT_ENOUGH_REPLICAS_AFTER_APPEND for a marker).
func (h *Handler) Stop() { h.stop() }

func addr(r *network.Request) string {
	if r.RemoteAddr == nil {
		return ""
	}
	return r.RemoteAddr.String()
}

func clientID(r *network.Request) string {
	if r.ClientID == nil {
		return ""
	}
	return *r.ClientID
}

// ControllerClientPrefix starts the client id of the controller's
// connections (channel.Manager's "qk-controller-<id>").
const ControllerClientPrefix = "qk-controller-"

// FromController tells whether a request comes from a controller's
// connection: on the inter-broker listener, with the controller's client
// id. Only those are served the inter-broker APIs (and shown them in
// ApiVersions); their epochs are checked by the broker.
func (h *Handler) FromController(r *network.Request) bool {
	return h.cfg.Control != nil && IsControllerConn(r, h.cfg.InterBrokerListener)
}

// IsControllerConn tells whether r came on the inter-broker listener with
// a controller's client id; FromController without the handler, for the
// broker to decide before it has one.
func IsControllerConn(r *network.Request, interBrokerListener string) bool {
	return r.Listener == interBrokerListener && strings.HasPrefix(clientID(r), ControllerClientPrefix)
}

// broker is the current broker configuration.
func (h *Handler) broker() *config.Broker { return h.cfg.Broker() }
