//go:build linux

package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/qk-project/qk/broker/api"
	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/controller/channel"
	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/httpapi"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
	"github.com/qk-project/qk/broker/metadata/zkstore"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/purgatory"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/replica/fetcher"
	"github.com/qk-project/qk/broker/replica/quota"
	"github.com/qk-project/qk/broker/txncoord"
	"github.com/qk-project/qk/broker/vfs"
)

// MetadataDir is the directory of the embedded metadata store inside the
// first log dir. The log manager leaves it alone: it is not named like a
// partition.
const MetadataDir = "__qk_metadata"

// ErrMetaProperties means a log dir's meta.properties belongs to another
// broker or cluster.
var ErrMetaProperties = errors.New("broker: meta.properties does not match")

// Option configures New.
type Option func(*options)

type options struct {
	lg    *slog.Logger
	store metadata.Store
	clock func() time.Time
	logFS vfs.FS
}

// WithLogger sets the logger (nil discards).
func WithLogger(lg *slog.Logger) Option { return func(o *options) { o.lg = lg } }

// WithMetadataStore makes the broker use s (a session of a store shared by
// several in-process brokers) instead of opening the embedded store in
// its first log dir. The broker closes s at Close.
func WithMetadataStore(s metadata.Store) Option { return func(o *options) { o.store = s } }

// WithClock sets the wall clock of the logs and the API handlers.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithLogFS sets the file system of the partition logs (default vfs.OS),
// for tests that inject I/O errors (vfs.Faulty). The metadata store, the
// lock files and meta.properties stay on the real one.
func WithLogFS(fsys vfs.FS) Option { return func(o *options) { o.logFS = fsys } }

// Server is one broker: the metadata store session, the logs, the
// partitions it hosts, the controller role, the API handlers and the
// network server, wired together.
type Server struct {
	static *config.Broker
	cfg    atomic.Pointer[config.Broker] // static + dynamic broker configs
	lg     *slog.Logger
	now    func() time.Time
	store  metadata.Store
	// authorizer: ACLs are on (authorizer.class.name).
	authorizer bool

	clusterID   string
	brokerEpoch atomic.Int64
	// zk replaces expired ZooKeeper sessions (nil on the embedded store);
	// registration is what the broker registers again on a new session.
	zk           *zkSessions
	registration controller.Registration
	net          *network.Server
	logs         *log.Manager
	logFS        vfs.FS // nil: vfs.OS
	// dirs handles the log dirs going offline and watches their usage.
	dirs     *dirWatcher
	replicas *replica.Manager
	cache    *controller.Cache
	// interBroker is how this broker's clients reach the others'
	// inter-broker listener (TLS, SASL); set before any channel is made.
	interBroker *interBrokerClient
	fetchers    *fetcher.Manager
	toCtrl      toController
	ctrl        *controller.Controller
	api         *api.Handler
	fetches     *purgatory.Purgatory[purgatory.Key]
	produces    *purgatory.Purgatory[purgatory.Key]
	groups      *group.Coordinator
	txn         *txncoord.Coordinator
	txnMarkers  *txnMarkers
	ready       atomic.Bool
	// lastOfLocalCluster: the other brokers of this process's local
	// cluster have stopped, so a controlled shutdown has no broker to
	// move leaderships to and would only retry until it gives up.
	lastOfLocalCluster atomic.Bool
	// http is the admin HTTP server (nil when qk.http.listener is empty).
	http *httpapi.Server
	// logsLoaded and closing feed /v1/health, which runs while Start and
	// Close hold mu.
	logsLoaded, closing atomic.Bool

	// leaderQuota and followerQuota are the replication quotas
	// (leader/follower.replication.throttled.rate), their bounds kept
	// up to date with the dynamic broker config.
	leaderQuota, followerQuota *quota.Quota
	// alterLogDirsQuota throttles replicas moving between log dirs
	// (replica.alter.log.dirs.io.max.bytes.per.second).
	alterLogDirsQuota *quota.Quota
	// clientQuotas are the client quotas (producer_byte_rate,
	// consumer_byte_rate, request_percentage), kept up to date with the
	// cache's ClientQuotas by onMetadataChange and enforced by the api
	// handler.
	clientQuotas *clientquota.Managers

	// registered: api is set and the broker registered, with its broker
	// epoch stored: the controller's requests are served from then on,
	// during start-up too. Before, they are meant for an earlier process
	// of this broker (the controller has not seen it restart) and cannot
	// be told apart by their epoch: their connection is closed, and the
	// controller's channel sends them again.
	registered atomic.Bool
	// startEnded is closed when start-up ends, ready or not (Start failed, or
	// Close came first): requests that arrived before wait for it.
	startEnded chan struct{}
	endStart   sync.Once

	// controllerEpoch is the newest controller epoch seen in a control
	// request: older ones are refused.
	controllerEpoch atomic.Int32
	// controlMu serialises LeaderAndIsr and StopReplica (Kafka's
	// replicaStateChangeLock); it guards hosted.
	controlMu sync.Mutex
	// firstMetadata is closed at the controller's first UpdateMetadata:
	// start-up waits for it.
	firstMetadata chan struct{}
	gotMetadata   sync.Once

	// hosted are the partitions the metadata gave this broker, for telling
	// a deleted topic's logs (delete them) from stray ones (keep them).
	hosted map[log.TopicPartition][16]byte
	locks  []*os.File // the .lock of every log dir

	mu      sync.Mutex
	started bool
	closed  bool
}

// New checks cfg, opens the metadata store (the embedded one in
// <log.dirs[0]>/__qk_metadata unless WithMetadataStore) and settles the
// cluster id, writing meta.properties in every log dir on first start and
// checking it afterwards. Nothing listens until Start.
func New(cfg *config.Broker, opts ...Option) (*Server, error) {
	o := options{clock: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.lg == nil {
		o.lg = slog.New(slog.DiscardHandler)
	}
	if len(cfg.LogDirs) == 0 {
		return nil, log.ErrLogDirs
	}
	s := &Server{static: cfg, lg: o.lg.With("broker_id", cfg.BrokerID), now: o.clock, store: o.store, authorizer: cfg.AuthorizerClassName != "",
		hosted: map[log.TopicPartition][16]byte{}, startEnded: make(chan struct{}), firstMetadata: make(chan struct{}),
		logFS: o.logFS}
	s.dirs = newDirWatcher(s)
	s.cfg.Store(cfg)
	for _, d := range cfg.LogDirs {
		if err := vfs.MkdirAllSync(vfs.OS, d, 0o755); err != nil {
			return nil, fmt.Errorf("broker: log dir %s: %w", d, err)
		}
	}
	locks, err := lockDirs(cfg.LogDirs)
	if err != nil {
		return nil, err
	}
	s.locks = locks
	if s.store == nil && cfg.ZookeeperConnect != "" {
		// A cluster member: ZooKeeper is the source of truth, as in
		// Kafka's ZooKeeper mode.
		zcfg := zkstore.Config{
			Servers: cfg.ZookeeperServers, Chroot: cfg.ZookeeperChroot,
			SessionTimeout:    time.Duration(cfg.ZookeeperSessionTimeoutMs) * time.Millisecond,
			ConnectionTimeout: time.Duration(cfg.ZookeeperConnectionTimeoutMs) * time.Millisecond,
			Logger:            o.lg,
		}
		open := func(ctx context.Context) (*zkstore.Store, error) {
			ctx, cancel := context.WithTimeout(ctx, zcfg.ConnectionTimeout+5*time.Second)
			defer cancel()
			return zkstore.Open(ctx, zcfg)
		}
		first, err := open(context.Background())
		if err != nil {
			unlockDirs(s.locks)
			return nil, fmt.Errorf("broker: zookeeper.connect=%s: %w", cfg.ZookeeperConnect, err)
		}
		s.zk = newZKSessions(first, open, s.lg)
		s.store = s.zk
	}
	if s.store == nil {
		st, err := embedded.Open(vfs.OS, filepath.Join(cfg.LogDirs[0], MetadataDir), embedded.WithLogger(o.lg))
		if err != nil {
			unlockDirs(s.locks)
			return nil, fmt.Errorf("broker: open metadata store: %w", err)
		}
		s.store = st
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.settleIdentity(ctx, o.lg); err != nil {
		s.store.Close()
		unlockDirs(s.locks)
		return nil, err
	}
	return s, nil
}

// settleIdentity creates Kafka's persistent paths, gets or creates the
// cluster id, settles the broker id and checks or writes meta.properties in
// every log dir. base is the logger without broker_id.
//
// The broker id is Kafka's getOrGenerateBrokerId: the log dirs must agree
// on it, and with a configured broker.id ≥ 0; broker.id=-1 takes the
// stored one, or generates one from /brokers/seqid on a fresh broker.
func (s *Server) settleIdentity(ctx context.Context, base *slog.Logger) error {
	if err := metadata.EnsureKafkaPaths(ctx, s.store); err != nil {
		return fmt.Errorf("broker: metadata paths: %w", err)
	}
	if s.authorizer {
		if err := metadata.EnsureACLPaths(ctx, s.store); err != nil {
			return fmt.Errorf("broker: acl paths: %w", err)
		}
	}
	var known string
	props := map[string]checkpoint.MetaProperties{}
	var withProps []string // log dirs with a meta.properties, in log.dirs order
	for _, d := range s.static.LogDirs {
		mp, err := checkpoint.ReadMetaProperties(vfs.OS, d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		if mp.ClusterID != "" {
			if known != "" && known != mp.ClusterID {
				return fmt.Errorf("%w: log dirs belong to clusters %s and %s", ErrMetaProperties, known, mp.ClusterID)
			}
			known = mp.ClusterID
		}
		props[d] = mp
		withProps = append(withProps, d)
	}
	stored, err := storedBrokerID(withProps, props)
	if err != nil {
		return err
	}
	if id := s.static.BrokerID; id >= 0 && stored >= 0 && id != stored {
		return fmt.Errorf("%w: configured broker.id %d doesn't match stored broker.id %d in meta.properties of %s (InconsistentBrokerIdException); "+
			"if you moved your data, make sure your configured broker.id matches; if you intend to create a new broker, remove all data in log.dirs",
			ErrMetaProperties, id, stored, strings.Join(withProps, ", "))
	}
	candidate := known
	if candidate == "" {
		candidate = metadata.FormatUUID(metadata.NewUUID())
	}
	clusterID, err := metadata.GetOrCreateClusterID(ctx, s.store, candidate)
	if err != nil {
		return fmt.Errorf("broker: cluster id: %w", err)
	}
	if known != "" && known != clusterID {
		return fmt.Errorf("%w: the log dirs belong to cluster %s, the metadata store to %s (InconsistentClusterIdException)", ErrMetaProperties, known, clusterID)
	}
	s.clusterID = clusterID
	if id := s.static.BrokerID; id < 0 {
		how := "broker.id from meta.properties"
		switch {
		case stored >= 0:
			id = stored
		case s.static.BrokerIDGenerationEnable:
			id, err = metadata.NextBrokerID(ctx, s.store, s.static.ReservedBrokerMaxID)
			if err != nil {
				return fmt.Errorf("broker: generate broker.id: %w", err)
			}
			how = "generated broker.id"
		default: // config.Load refuses this; New may be given any *config.Broker
			return errors.New("broker: broker.id=-1 needs broker.id.generation.enable=true or a meta.properties with a broker.id")
		}
		// Everything started after New (registration, logs, replicas,
		// controller, API) reads the settled id from the config.
		s.static = s.static.WithBrokerID(id)
		s.cfg.Store(s.static)
		s.lg = base.With("broker_id", id)
		if s.zk != nil {
			s.zk.lg = s.lg // not yet following: Start does that
		}
		s.lg.Info(how)
	}
	for _, d := range s.static.LogDirs {
		if mp, ok := props[d]; ok && mp.ClusterID == clusterID {
			continue
		}
		mp := checkpoint.MetaProperties{Version: checkpoint.MetaVersionZK, BrokerID: s.static.BrokerID, ClusterID: clusterID}
		if err := checkpoint.WriteMetaProperties(vfs.OS, d, mp); err != nil {
			return fmt.Errorf("broker: write meta.properties: %w", err)
		}
	}
	s.lg.Info("cluster identity", "cluster_id", clusterID)
	return nil
}

// storedBrokerID is the broker.id of the meta.properties of dirs (those
// that have one), -1 for none. They must agree, or they belong to several
// brokers (Kafka's InconsistentBrokerMetadataException).
func storedBrokerID(dirs []string, props map[string]checkpoint.MetaProperties) (int32, error) {
	if len(dirs) == 0 {
		return -1, nil
	}
	id := props[dirs[0]].BrokerID
	for _, d := range dirs {
		if props[d].BrokerID == id {
			continue
		}
		var found []string
		for _, d := range dirs {
			found = append(found, fmt.Sprintf("%s has %d", d, props[d].BrokerID))
		}
		return 0, fmt.Errorf("%w: broker.id differs across log.dirs: %s (InconsistentBrokerMetadataException); "+
			"this could happen if several brokers shared a log directory or partial data was copied from another broker",
			ErrMetaProperties, strings.Join(found, ", "))
	}
	return id, nil
}

// ClusterID is the cluster's id.
func (s *Server) ClusterID() string { return s.clusterID }

// Config is the broker's current configuration (static and dynamic).
func (s *Server) Config() *config.Broker { return s.cfg.Load() }

// Cache is the broker's view of the cluster metadata (nil before Start).
func (s *Server) Cache() *controller.Cache { return s.cache }

// FetchPurgatory holds the waiting fetches (nil before Start).
func (s *Server) FetchPurgatory() *purgatory.Purgatory[purgatory.Key] { return s.fetches }

// FetchSessionStats counts the fetch sessions (zero before Start).
func (s *Server) FetchSessionStats() api.FetchSessionStats {
	if s.api == nil {
		return api.FetchSessionStats{}
	}
	return s.api.FetchSessionStats()
}

// FetcherStats counts the replica fetchers' requests: full and
// incremental fetches and the partitions they named (zero before Start).
func (s *Server) FetcherStats() fetcher.Stats {
	if s.fetchers == nil {
		return fetcher.Stats{}
	}
	return s.fetchers.Stats()
}

// ClientQuotas are the client quota managers the broker enforces.
func (s *Server) ClientQuotas() *clientquota.Managers { return s.clientQuotas }

// Replicas is the broker's replica manager (nil before Start).
func (s *Server) Replicas() *replica.Manager { return s.replicas }

// Addrs are the bound addresses of the listeners, once started.
func (s *Server) Addrs() []net.Addr {
	if s.net == nil {
		return nil
	}
	return s.net.Addrs()
}

// Handle serves a request once the broker is ready. The listeners are
// bound before the logs are loaded (so the port is known and clients can
// connect at once), and a request that arrives during start-up waits here,
// as Apache Kafka's wait until it enables request processing: the handler
// blocks, later requests queue behind it in the bounded request queue (and
// then in the socket buffers), and each connection's requests are answered
// in order once the broker is ready. Closing a connection instead would
// make librdkafka give up ("all broker connections are down") and every
// rolling restart fail the clients that reconnect first. Only when start-up
// fails, or the broker is closed before it is ready, is the connection
// closed.
func (s *Server) Handle(r *network.Request) {
	if !s.ready.Load() {
		switch {
		case s.fromController(r) && s.registered.Load():
			// Served during start-up, which waits for them.
		case s.fromController(r):
			// For an earlier process of this broker, or too early: the
			// controller's channel sends it again.
			r.CloseConnection()
			return
		default:
			<-s.startEnded
			if !s.ready.Load() {
				s.lg.Debug("closing connection: broker did not start", "api_key", r.ApiKey)
				r.CloseConnection()
				return
			}
		}
	}
	s.api.Handle(r)
}

// fromController: a controller's connection (api.Handler.FromController,
// decided before the handler exists).
// connLimit maps a Kafka connection limit to network.Config's: Kafka's
// default Int.MaxValue is no limit (0), and Kafka's 0 is NoConnections.
func connLimit(v int) int {
	switch {
	case v >= math.MaxInt32:
		return 0
	case v == 0:
		return network.NoConnections
	}
	return v
}

// creationRate maps max.connection.creation.rate: Int.MaxValue is no limit
// (0). Kafka's 0 throttles every connection for the whole window (its
// bounded throttle time); a tiny rate does the same here.
func creationRate(v int) float64 {
	switch {
	case v >= math.MaxInt32:
		return 0
	case v == 0:
		return 1e-9
	}
	return float64(v)
}

// readTimeout maps qk.socket.request.read.timeout.ms: ≤ 0 disables it
// (network.Config's negative).
func readTimeout(ms int64) time.Duration {
	if ms <= 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

func (s *Server) fromController(r *network.Request) bool {
	return api.IsControllerConn(r, s.static.InterBrokerListenerName)
}

// endStartUp releases the requests waiting for start-up to end.
func (s *Server) endStartUp() { s.endStart.Do(func() { close(s.startEnded) }) }

// Start binds the listeners, registers the broker, opens the logs
// (recovering them after an unclean shutdown), loads the metadata, takes
// part in the controller election and starts serving.
func (s *Server) Start() (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("broker: already started")
	}
	s.started = true
	cfg := s.static
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer func() {
		if err != nil {
			s.shutdown(context.Background())
		}
	}()

	if err := s.checkDescriptors(); err != nil {
		return err
	}
	sec, err := s.buildListenerSecurity(cfg)
	if err != nil {
		return err
	}
	if s.interBroker, err = newInterBrokerClient(cfg); err != nil {
		return err
	}
	ls := networkListeners(cfg, sec)
	listenerAuth := make(map[string]*api.ListenerAuth, len(sec))
	for name, l := range sec {
		listenerAuth[name] = l.auth
	}
	var onComplete func(int16, time.Time)
	if cfg.HTTPListener != "" {
		s.http = httpapi.New(httpapi.Config{Addr: cfg.HTTPListener, BrokerID: cfg.BrokerID, Health: s.healthReasons,
			Now: s.now, TransactionMaxTimeoutMs: cfg.TransactionMaxTimeoutMs, Logger: s.lg})
		onComplete = s.http.Metrics().RequestDone
	}
	s.net, err = network.New(network.Config{
		Listeners:                    ls,
		NumNetworkThreads:            cfg.NumNetworkThreads,
		NumIOThreads:                 cfg.NumIOThreads,
		QueuedMaxRequests:            cfg.QueuedMaxRequests,
		SocketRequestMaxBytes:        int32(cfg.SocketRequestMaxBytes),
		SocketSendBufferBytes:        cfg.SocketSendBufferBytes,
		SocketReceiveBufferBytes:     cfg.SocketReceiveBufferBytes,
		ConnectionsMaxIdle:           time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		MaxConnections:               connLimit(cfg.MaxConnections),
		MaxConnectionsPerIP:          connLimit(cfg.MaxConnectionsPerIP),
		MaxConnectionsPerIPOverrides: cfg.MaxConnectionsPerIPOverrides,
		MaxConnectionCreationRate:    creationRate(cfg.MaxConnectionCreationRate),
		QueuedMaxRequestBytes:        cfg.QueuedMaxRequestBytes,
		RequestReadTimeout:           readTimeout(cfg.SocketRequestReadTimeoutMs),
		RequestTimeout:               readTimeout(int64(cfg.RequestTimeoutMs)),
		Logger:                       s.lg,
		OnComplete:                   onComplete,
	}, network.HandlerFunc(s.Handle))
	if err != nil {
		return err
	}
	// Before the Kafka listeners: startHTTP changes s.static, which
	// request handling reads.
	if err := s.startHTTP(); err != nil {
		return err
	}
	if err := s.net.Start(); err != nil {
		return err
	}

	s.logs, err = log.OpenManager(log.ManagerConfig{
		LogDirs:                         slices.Clone(cfg.LogDirs),
		FS:                              s.logFS,
		OnLogDirFailure:                 s.dirs.onLogDirFailure,
		Logger:                          s.lg,
		Clock:                           s.now,
		DefaultConfig:                   s.logConfig(cfg.TopicDefaults()),
		TopicConfig:                     s.storedTopicConfig,
		NumRecoveryThreadsPerDataDir:    cfg.NumRecoveryThreadsPerDataDir,
		RetentionCheckIntervalMs:        cfg.LogRetentionCheckIntervalMs,
		FlushSchedulerIntervalMs:        cfg.LogFlushSchedulerIntervalMs,
		FlushOffsetCheckpointIntervalMs: int64(cfg.LogFlushOffsetCheckpointIntervalMs),
		FlushStartOffsetCheckpointMs:    int64(cfg.LogFlushStartOffsetCheckpointIntervalMs),
		HighWatermarkCheckpointMs:       cfg.ReplicaHighWatermarkCheckpointMs,
		BrokerEpoch:                     s.brokerEpoch.Load,
		CleanerEnable:                   cfg.LogCleanerEnable && cfg.LogCleanerThreads > 0,
		CleanerBackoffMs:                cfg.LogCleanerBackoffMs,
		CleanerDedupeBufferSize:         cfg.LogCleanerDedupeBufferSize / int64(max(cfg.LogCleanerThreads, 1)),
	})
	if err != nil {
		return fmt.Errorf("broker: open logs: %w", err)
	}
	s.logsLoaded.Store(true)
	window := time.Duration(cfg.ReplicationQuotaWindowSizeSeconds) * time.Second
	s.leaderQuota = quota.New(cfg.LeaderReplicationThrottledRate, cfg.ReplicationQuotaWindowNum, window)
	s.followerQuota = quota.New(cfg.FollowerReplicationThrottledRate, cfg.ReplicationQuotaWindowNum, window)
	s.alterLogDirsQuota = quota.New(cfg.ReplicaAlterLogDirsIOMaxBytesPerSecond, cfg.ReplicationQuotaWindowNum, window)
	s.fetchers = fetcher.New(fetcher.Config{
		BrokerID:          cfg.BrokerID,
		NumFetchers:       cfg.NumReplicaFetchers,
		MaxWait:           time.Duration(cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		MinBytes:          int32(cfg.ReplicaFetchMinBytes),
		MaxBytes:          int32(cfg.ReplicaFetchResponseMaxBytes),
		PartitionMaxBytes: int32(cfg.ReplicaFetchMaxBytes),
		Backoff:           time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
		NewSender: func() fetcher.Sender {
			// One Fetch in flight per fetcher, each response appended
			// before the next is sent: one read buffer per connection.
			return channel.New(s.channelConfig(channel.Config{ControllerID: cfg.BrokerID, Logger: s.lg,
				RequestTimeout:      time.Duration(cfg.ReplicaSocketTimeoutMs) * time.Millisecond,
				ReuseResponseBuffer: true}))
		},
		Quota:  s.followerQuota,
		Now:    s.now,
		Logger: s.lg,
	})
	s.replicas = replica.New(replica.Config{
		Fetchers:            s.fetchers,
		AlterISR:            s.alterISR,
		ReplicaLagTimeMaxMs: cfg.ReplicaLagTimeMaxMs,
		// A transaction open longer than any may be is hanging: WARN.
		TransactionMaxTimeoutMs: int64(cfg.TransactionMaxTimeoutMs),
		Clock:                   s.now,
		BrokerID:                cfg.BrokerID,
		Logs:                    s.logs,
		FS:                      s.logFS,
		AlterLogDirsQuota:       s.alterLogDirsQuota,
		Logger:                  s.lg,
		ProducerIDExpirationMs:  int64(cfg.ProducerIDExpirationMs),
		OnHighWatermark: func(topic string, partition int32) {
			if h := s.api; h != nil {
				h.HighWatermarkAdvanced(topic, partition)
			}
		},
	})
	s.clientQuotas = clientquota.NewManagers(clientquota.Window{
		Samples: cfg.QuotaWindowNum,
		Size:    time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second,
	})
	s.cache = controller.NewCache(controller.CacheConfig{Store: s.store, Logger: s.lg, OnChange: s.onMetadataChange})
	s.ctrl = controller.New(controller.Config{BrokerID: cfg.BrokerID, Store: s.store, Cache: s.cache, Logger: s.lg, Clock: s.now,
		CanHost: s.canHost,
		NewChannel: func() controller.Channel {
			return channel.New(s.channelConfig(channel.Config{ControllerID: cfg.BrokerID, Logger: s.lg}))
		},
		Local:                        s.handleControl,
		Listener:                     cfg.InterBrokerListenerName,
		UncleanLeaderElection:        func() bool { return s.cfg.Load().UncleanLeaderElectionEnable },
		DeleteTopicEnable:            func() bool { return s.cfg.Load().DeleteTopicEnable },
		AutoLeaderRebalance:          func() bool { return s.cfg.Load().AutoLeaderRebalanceEnable },
		LeaderImbalanceCheckInterval: time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		LeaderImbalancePerBrokerPct:  func() int { return s.cfg.Load().LeaderImbalancePerBrokerPercentage },
	})
	s.fetches = purgatory.New[purgatory.Key]("fetch", purgatory.WithLogger(s.lg))
	s.produces = purgatory.New[purgatory.Key]("produce", purgatory.WithLogger(s.lg))
	s.groups = group.NewCoordinator(group.CoordinatorConfig{
		Replicas:   s.replicas,
		Partitions: cfg.OffsetsTopicNumPartitions,
		Group: group.Config{
			InitialRebalanceDelay: time.Duration(cfg.GroupInitialRebalanceDelayMs) * time.Millisecond,
			MinSessionTimeout:     time.Duration(cfg.GroupMinSessionTimeoutMs) * time.Millisecond,
			MaxSessionTimeout:     time.Duration(cfg.GroupMaxSessionTimeoutMs) * time.Millisecond,
			MaxSize:               cfg.GroupMaxSize,
		},
		Retention:      time.Duration(cfg.OffsetsRetentionMinutes) * time.Minute,
		RetentionCheck: time.Duration(cfg.OffsetsRetentionCheckMs) * time.Millisecond,
		MaxMetadata:    cfg.OffsetMetadataMaxBytes,
		CommitTimeout:  time.Duration(cfg.OffsetsCommitTimeoutMs) * time.Millisecond,
		Logger:         s.lg,
		Clock:          s.now,
	})
	pids := metadata.NewProducerIDs(s.store, cfg.BrokerID, s.lg)
	s.txn = s.newTxnCoordinator(pids)
	s.api = api.New(api.Config{
		BrokerID:               cfg.BrokerID,
		Broker:                 s.cfg.Load,
		Replicas:               s.replicas,
		Cache:                  s.cache,
		Controller:             s.ctrl,
		Store:                  s.store,
		Fetches:                s.fetches,
		Produces:               s.produces,
		FetchSessionCacheSlots: cfg.MaxIncrementalFetchSessions,
		FetchSessionEviction:   time.Duration(cfg.MinIncrementalFetchSessionEvictionMs) * time.Millisecond,
		LeaderQuota:            s.leaderQuota,
		Quotas:                 s.clientQuotas,
		Groups:                 s.groups,
		Txn:                    s.txn,
		VerifyTxn:              s.verifyTxn,
		ProducerIDs:            pids,
		LogDirs:                slices.Clone(cfg.LogDirs),
		LogDirError:            s.LogDirError,
		FutureLog:              s.logs.FutureLog,
		Logger:                 s.lg,
		Clock:                  s.now,
		Control:                s.handleControl,
		// The listener the controller reaches this broker on.
		InterBrokerListener: cfg.InterBrokerListenerName,
		Listeners:           listenerAuth,
		Authorizer:          s.newAuthorizer(cfg),
	})
	if s.http != nil {
		s.http.SetState(&httpapi.State{Replicas: s.replicas, Cache: s.cache, Controller: s.ctrl, Network: s.net,
			Fetches: s.fetches, Produces: s.produces, Txn: s.txn, LogDirs: s.dirs.statuses})
	}
	if err := s.cache.Start(ctx); err != nil {
		return fmt.Errorf("broker: load metadata: %w", err)
	}
	endpoints, err := s.advertised()
	if err != nil {
		return err
	}
	s.registration = controller.Registration{
		BrokerID: cfg.BrokerID, Endpoints: endpoints, Rack: cfg.BrokerRack, Now: s.now(),
		HTTPEndpoint: s.httpEndpoint(),
		// A broker restarted faster than its old session expired finds
		// its node still there: wait for that session (at most one
		// session timeout, as ours, plus a margin) instead of failing.
		WaitForOldSession: time.Duration(cfg.ZookeeperSessionTimeoutMs)*time.Millisecond + 5*time.Second,
		Logger:            s.lg,
	}
	// Its own deadline: the wait for an earlier session (up to a session
	// timeout and a margin) comes on top of loading the logs.
	rctx, rcancel := context.WithTimeout(context.Background(), s.registration.WaitForOldSession+30*time.Second)
	epoch, err := controller.Register(rctx, s.store, s.registration)
	rcancel()
	if err != nil {
		return err
	}
	s.brokerEpoch.Store(epoch)
	s.registered.Store(true)
	s.lg.Info("registered broker", "broker_epoch", epoch, "endpoints", fmt.Sprint(endpoints))
	// From here a failed log dir is handled (a failure since the logs
	// opened was queued): the controller can be told of it.
	s.dirs.start()

	if err := s.ctrl.Start(ctx); err != nil {
		return fmt.Errorf("broker: controller election: %w", err)
	}
	s.awaitMetadata()
	s.reportStray()
	if s.zk != nil {
		s.zk.expired = s.ctrl.Resign
		s.zk.renewed = s.renewSession
		s.zk.follow()
	}
	s.ready.Store(true)
	s.endStartUp()
	s.lg.Info("broker started", "cluster_id", s.clusterID, "controller", s.ctrl.IsActive(),
		"addrs", fmt.Sprint(s.net.Addrs()), "partitions", len(s.replicas.Partitions()))
	return nil
}

// awaitMetadata waits for the controller's first UpdateMetadata (this
// broker's own, on a single node): it comes after the LeaderAndIsr that
// gives this broker its partitions, so once it is in, the broker serves
// what the cluster expects of it. A controller that does not come within
// a session timeout (the old one died and its session has not expired
// yet) is not waited for longer: the broker serves what it has, and the
// controller's requests update it when they come.
func (s *Server) awaitMetadata() {
	wait := time.Duration(s.static.ZookeeperSessionTimeoutMs)*time.Millisecond + 5*time.Second
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.firstMetadata:
	case <-t.C:
		s.lg.Warn("no metadata from the controller yet; serving what this broker has", "waited", wait)
	}
}

// renewSession makes the broker a cluster member again on a new ZooKeeper
// session, after the old one expired: its registration (a new broker
// epoch), a fresh read of the metadata (the cache's watches went with the
// old session) and the controller election. Until it has done so the
// broker serves its partitions but acts on nothing the expired session
// saw: the controller resigned at the expiry.
func (s *Server) renewSession(ctx context.Context) error {
	r := s.registration
	r.Now = s.now()
	epoch, err := controller.Register(ctx, s.store, r)
	if err != nil {
		return err
	}
	s.brokerEpoch.Store(epoch)
	s.lg.Info("registered broker", "broker_epoch", epoch)
	s.ctrl.Rejoin()
	s.cache.ResetWatches()
	return s.cache.Sync(ctx)
}

// advertised returns the advertised endpoints, with the host name for an
// empty host and the bound port for port 0.
func (s *Server) advertised() ([]metadata.Endpoint, error) {
	bound := map[string]int{}
	for i, a := range s.net.Addrs() {
		if ta, ok := a.(*net.TCPAddr); ok {
			bound[s.static.Listeners[i].Name] = ta.Port
		}
	}
	var out []metadata.Endpoint
	for _, l := range s.static.AdvertisedListeners {
		e := metadata.Endpoint{Listener: l.Name, SecurityProtocol: l.SecurityProtocol, Host: l.Host, Port: int32(l.Port)}
		if e.Host == "" {
			h, err := os.Hostname()
			if err != nil {
				return nil, fmt.Errorf("broker: advertised listener %s has no host and the host name is unknown: %w", l.Name, err)
			}
			e.Host = h
		}
		if e.Port == 0 {
			p, ok := bound[l.Name]
			if !ok {
				return nil, fmt.Errorf("broker: advertised listener %s has port 0 and no listener of that name", l.Name)
			}
			e.Port = int32(p)
		}
		out = append(out, e)
	}
	return out, nil
}

// storedTopicConfig reads a topic's config from the store when the log
// manager opens its logs at start-up.
func (s *Server) storedTopicConfig(topic string) (log.Config, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	over, err := metadata.ReadEntityConfig(ctx, s.store, metadata.ConfigTopics, topic)
	if err != nil || len(over) == 0 {
		return log.Config{}, false
	}
	t, err := config.ResolveTopic(s.cfg.Load().TopicDefaults(), over)
	if err != nil {
		s.lg.Warn("stored topic config is invalid; using defaults", "topic", topic, "err", err)
		return log.Config{}, false
	}
	return s.logConfig(t), true
}

// logConfig is a topic's log settings with the broker's
// producer.id.expiration.ms.
func (s *Server) logConfig(t config.Topic) log.Config {
	c := replica.LogConfig(t)
	if ms := s.static.ProducerIDExpirationMs; ms > 0 {
		c.ProducerIDExpirationMs = int64(ms)
	}
	return c
}

// reportStray warns about logs on disk that no topic in the metadata
// gives this broker. They are kept (not served, not deleted).
func (s *Server) reportStray() {
	s.controlMu.Lock()
	defer s.controlMu.Unlock()
	for _, l := range s.logs.Logs() {
		tp := log.TopicPartition{Topic: l.Topic(), Partition: l.Partition()}
		if _, ok := s.hosted[tp]; !ok {
			s.lg.Warn("log not in the metadata; kept but not served", "topic", l.Topic(), "partition", l.Partition(), "dir", l.Dir())
		}
	}
}

// onMetadataChange applies what a new metadata snapshot changes for this
// broker beyond its partitions' roles (which LeaderAndIsr sets): the
// dynamic broker config, the client quotas, and the config of the topics
// it hosts. The cache calls it under its lock, in order.
func (s *Server) onMetadataChange(old, new *controller.Snapshot) {
	id := s.static.BrokerID
	if q := new.ClientQuotas(); s.clientQuotas != nil && !q.Equal(old.ClientQuotas()) {
		s.clientQuotas.Update(q)
		s.lg.Info("applied client quotas", "entities", len(q))
	}
	defaultsChanged := false
	if !equalConfigs(old.BrokerConfigs, new.BrokerConfigs) {
		own := new.BrokerConfigs[strconv.Itoa(int(id))]
		b, err := s.static.WithDynamic(new.BrokerConfigs[metadata.DefaultEntity], own)
		if err != nil {
			s.lg.Error("dynamic broker config not applied", "err", err)
		} else {
			s.cfg.Store(b)
			defaultsChanged = true
			s.setQuotaBounds(b)
			s.lg.Info("applied dynamic broker config")
		}
	}
	defaults := s.cfg.Load().TopicDefaults()
	for _, name := range new.TopicNames() {
		t := new.Topics[name]
		prev := old.Topics[name]
		if prev == nil || prev.ID != t.ID || t.Config == nil || (!defaultsChanged && maps.Equal(prev.Config, t.Config)) {
			continue // a new topic gets its config with its LeaderAndIsr; nil: not read yet
		}
		tc, err := config.ResolveTopic(defaults, t.Config)
		if err != nil {
			s.lg.Error("topic config is invalid; not applied", "topic", name, "err", err)
			continue
		}
		if err := s.replicas.SetTopicConfig(name, tc); err != nil {
			s.lg.Error("topic config not applied", "topic", name, "err", err)
		}
		// Kafka's TopicConfigHandler: a topic now allowing unclean
		// elections (by its override or, defaultsChanged, by the
		// cluster-wide default) has its offline partitions elected at
		// once.
		if tc.UncleanLeaderElectionEnable && s.ctrl != nil {
			s.ctrl.EnableUncleanLeaderElection(name)
		}
	}
}

// setQuotaBounds applies the replication quota rates of b, a dynamic
// broker config change (the samples measured so far are kept).
func (s *Server) setQuotaBounds(b *config.Broker) {
	for _, q := range []struct {
		q    *quota.Quota
		rate int64
		name string
	}{
		{s.leaderQuota, b.LeaderReplicationThrottledRate, "leader.replication.throttled.rate"},
		{s.followerQuota, b.FollowerReplicationThrottledRate, "follower.replication.throttled.rate"},
		{s.alterLogDirsQuota, b.ReplicaAlterLogDirsIOMaxBytesPerSecond, "replica.alter.log.dirs.io.max.bytes.per.second"},
	} {
		if q.q != nil && q.q.Bound() != q.rate {
			q.q.SetBound(q.rate)
			s.lg.Info("replication quota changed", "config", q.name, "bytes_per_second", q.rate)
		}
	}
}

// reportUnhosted forgets the partitions that could not be hosted (so the
// next metadata change tries them again) and logs them: one line per
// partition up to a few, then one line with the count and each distinct
// cause, so that 5,000 partitions failing on one cause (too many open
// files) make a readable log.
func (s *Server) reportUnhosted(errs map[log.TopicPartition]error) {
	if len(errs) == 0 {
		return
	}
	const each = 5
	tps := slices.SortedFunc(maps.Keys(errs), func(a, b log.TopicPartition) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition - b.Partition)
	})
	causes := map[string]int{}
	for i, tp := range tps {
		delete(s.hosted, tp)
		err := errs[tp]
		if i < each {
			level := slog.LevelError
			if errors.Is(err, log.ErrLogDirOffline) {
				// Its dir's failure was the ERROR line; this one follows.
				level = slog.LevelWarn
			}
			s.lg.Log(context.Background(), level, "partition not hosted", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
		causes[rootCause(err)]++
	}
	if len(tps) > each {
		for cause, n := range causes {
			s.lg.Error("partitions not hosted", "count", n, "of", len(tps), "cause", cause)
		}
	}
}

// rootCause is the innermost error's text: "too many open files" rather
// than the path of each partition that hit it.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

func equalConfigs(a, b map[string]map[string]string) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// Close shuts the broker down cleanly: it stops accepting connections,
// answers the requests in flight (waiting fetches at once), leaves the
// controller role and the cluster (the ephemeral nodes go with the
// session), flushes every log and writes the checkpoints and the
// clean-shutdown marker. If ctx ends first, connections are cut and the
// logs are still closed cleanly.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.shutdown(ctx)
}

func (s *Server) shutdown(ctx context.Context) error {
	s.closed = true
	s.closing.Store(true)
	var errs []error
	if s.ready.Load() {
		// Before anything stops: the controller moves this broker's
		// leaderships away while it still serves them.
		s.controlledShutdown(ctx)
	}
	if !s.ready.Load() {
		// Start failed or was cut short: the requests held for it are
		// answered by closing their connections, before the network
		// shutdown waits for the handlers holding them.
		s.endStartUp()
	}
	if s.fetches != nil {
		// Waiting fetches are answered now, later ones do not wait: the
		// network server then has nothing long in flight to drain.
		s.fetches.Shutdown()
	}
	if s.produces != nil {
		s.produces.Shutdown()
	}
	if s.groups != nil {
		// Waiting joins and syncs are answered (NOT_COORDINATOR).
		s.groups.Close()
	}
	if s.txn != nil {
		s.txn.Close()
		s.txnMarkers.close()
	}
	if s.api != nil {
		// A marker waiting for its replication, or a store operation,
		// ends now instead of holding the network drain for 30 s.
		s.api.Stop()
	}
	if s.net != nil {
		if err := s.net.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("broker: network shutdown: %w", err))
		}
	}
	s.ready.Store(false)
	if s.http != nil {
		// After the network: the last scrapes still see the broker
		// serving; before the parts they read are closed.
		if err := s.http.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("broker: admin http: %w", err))
		}
	}
	s.dirs.close()
	if s.fetchers != nil {
		s.fetchers.Close()
	}
	if s.replicas != nil {
		s.replicas.Close()
	}
	s.toCtrl.close()
	if s.ctrl != nil {
		s.ctrl.Close()
	}
	if s.cache != nil {
		s.cache.Close()
	}
	if err := s.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("broker: close metadata store: %w", err))
	}
	if s.logs != nil {
		if err := s.logs.Close(); err != nil {
			errs = append(errs, fmt.Errorf("broker: close logs: %w", err))
		}
	}
	unlockDirs(s.locks)
	s.locks = nil
	s.lg.Info("broker stopped")
	return errors.Join(errs...)
}

// nextPort is addr with its port one higher (127.0.0.1:9645 for
// 127.0.0.1:9644), for a suggestion.
func nextPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p <= 0 || p >= 65535 {
		return "127.0.0.1:9645"
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

// startHTTP binds the admin HTTP server (qk.http.listener), before the
// logs load so that /v1/health answers during start-up, and records the
// address as qk.http.advertised.listener: the bound one, with the host of
// the first advertised listener (else the host name) when it binds every
// interface, as 0.0.0.0 or [::] reach nobody.
func (s *Server) startHTTP() error {
	if s.http == nil {
		return nil
	}
	if err := s.http.Start(); err != nil {
		s.http = nil // nothing to close
		if errors.Is(err, syscall.EADDRINUSE) {
			// Most often a second broker on one host: each needs its own.
			return fmt.Errorf("broker: admin http server: qk.http.listener=%s: %w; "+
				"another broker on this host? give each broker its own, e.g. --set qk.http.listener=%s, "+
				"or turn it off with --set qk.http.listener=", s.static.HTTPListener, err, nextPort(s.static.HTTPListener))
		}
		return fmt.Errorf("broker: admin http server: qk.http.listener=%s: %w", s.static.HTTPListener, err)
	}
	a := s.http.Addr()
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		if ls := s.static.AdvertisedListeners; len(ls) > 0 && ls[0].Host != "" {
			host = ls[0].Host
		} else if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	s.static = s.static.WithHTTPAdvertisedListener(net.JoinHostPort(host, strconv.Itoa(a.Port)))
	s.cfg.Store(s.static)
	return nil
}

// HTTPAddr is the bound address of the admin HTTP server, nil when it is
// disabled or not started.
func (s *Server) HTTPAddr() *net.TCPAddr {
	if s.http == nil {
		return nil
	}
	return s.http.Addr()
}

// httpEndpoint is the URL registered as qk_http_endpoint ("" when the
// server is disabled).
func (s *Server) httpEndpoint() string {
	if a := s.static.HTTPAdvertisedListener; a != "" {
		return "http://" + a
	}
	return ""
}

// healthReasons says why the broker does not serve yet, for /v1/health
// (which adds "no controller known" from the metadata). Only atomics: it
// runs while Start or Close hold mu.
func (s *Server) healthReasons() []string {
	switch {
	case s.closing.Load():
		return []string{"shutting down"}
	case !s.logsLoaded.Load():
		return []string{"loading logs"}
	case !s.registered.Load():
		return []string{"not registered in the metadata store"}
	case !s.ready.Load():
		return []string{"waiting for metadata from the controller"}
	}
	return nil
}
