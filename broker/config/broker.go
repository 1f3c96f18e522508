package config

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Broker is the effective configuration of one broker: typed fields for
// what the code reads, plus every setting's value and source for Print
// and DescribeConfigs. A Broker is immutable; WithDynamic returns a new
// one, so goroutines may share it and swap it atomically.
//
// Fields tagged `config:"name"` hold that setting; the others are resolved
// from several settings, as their comments say. An unset setting with no
// default (Kafka's null) leaves its field zero.
type Broker struct {
	// BrokerID is broker.id. A running broker's is never -1: it settles
	// its id at start-up (WithBrokerID), from meta.properties or generated.
	BrokerID                 int32  `config:"broker.id"`
	BrokerIDGenerationEnable bool   `config:"broker.id.generation.enable"`
	ReservedBrokerMaxID      int32  `config:"reserved.broker.max.id"`
	BrokerRack               string `config:"broker.rack"`

	// Listeners are the parsed listeners, SecurityProtocol filled in.
	Listeners []Listener
	// AdvertisedListeners are advertised.listeners, or Listeners when it is
	// unset. A listener with an empty host or port 0 is the caller's to
	// replace with the host name and bound port.
	AdvertisedListeners []Listener
	// InterBrokerListenerName is inter.broker.listener.name, or the
	// listener named after security.inter.broker.protocol.
	InterBrokerListenerName string

	NumNetworkThreads        int   `config:"num.network.threads"`
	NumIOThreads             int   `config:"num.io.threads"`
	BackgroundThreads        int   `config:"background.threads"`
	QueuedMaxRequests        int   `config:"queued.max.requests"`
	SocketRequestMaxBytes    int   `config:"socket.request.max.bytes"`
	SocketSendBufferBytes    int   `config:"socket.send.buffer.bytes"`
	SocketReceiveBufferBytes int   `config:"socket.receive.buffer.bytes"`
	SocketListenBacklogSize  int   `config:"socket.listen.backlog.size"`
	ConnectionsMaxIdleMs     int64 `config:"connections.max.idle.ms"`
	MaxConnections           int   `config:"max.connections"`
	MaxConnectionsPerIP      int   `config:"max.connections.per.ip"`
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides,
	// parsed: host to limit.
	MaxConnectionsPerIPOverrides         map[string]int
	MaxConnectionCreationRate            int   `config:"max.connection.creation.rate"`
	QueuedMaxRequestBytes                int64 `config:"queued.max.request.bytes"`
	SocketRequestReadTimeoutMs           int64 `config:"qk.socket.request.read.timeout.ms"`
	RequestTimeoutMs                     int   `config:"request.timeout.ms"`
	MessageMaxBytes                      int   `config:"message.max.bytes"`
	FetchMaxBytes                        int   `config:"fetch.max.bytes"`
	MaxIncrementalFetchSessions          int   `config:"max.incremental.fetch.session.cache.slots"`
	MinIncrementalFetchSessionEvictionMs int64 `config:"min.incremental.fetch.session.eviction.ms"`
	NumRecoveryThreadsPerDataDir         int   `config:"num.recovery.threads.per.data.dir"`
	ControlledShutdownEnable             bool  `config:"controlled.shutdown.enable"`
	ControlledShutdownMaxRetries         int   `config:"controlled.shutdown.max.retries"`
	ControlledShutdownBackoffMs          int64 `config:"controlled.shutdown.retry.backoff.ms"`

	NumPartitions                       int   `config:"num.partitions"`
	DefaultReplicationFactor            int   `config:"default.replication.factor"`
	AutoCreateTopicsEnable              bool  `config:"auto.create.topics.enable"`
	DeleteTopicEnable                   bool  `config:"delete.topic.enable"`
	AutoLeaderRebalanceEnable           bool  `config:"auto.leader.rebalance.enable"`
	LeaderImbalanceCheckIntervalSeconds int64 `config:"leader.imbalance.check.interval.seconds"`
	LeaderImbalancePerBrokerPercentage  int   `config:"leader.imbalance.per.broker.percentage"`

	// LogDirs is log.dirs, or log.dir when a source sets log.dir and none
	// sets log.dirs (Kafka's rule, kept with qk's ./qk-data default).
	LogDirs         []string
	LogSegmentBytes int `config:"log.segment.bytes"`
	// LogRollMs is log.roll.ms, or log.roll.hours in ms.
	LogRollMs int64
	// LogRollJitterMs is log.roll.jitter.ms, or log.roll.jitter.hours in ms.
	LogRollJitterMs int64
	// LogRetentionMs is log.retention.ms, else log.retention.minutes, else
	// log.retention.hours, in ms; -1 (any negative) means no time limit.
	LogRetentionMs              int64
	LogRetentionBytes           int64    `config:"log.retention.bytes"`
	LogRetentionCheckIntervalMs int64    `config:"log.retention.check.interval.ms"`
	LogCleanupPolicy            []string `config:"log.cleanup.policy"`
	LogIndexSizeMaxBytes        int      `config:"log.index.size.max.bytes"`
	LogIndexIntervalBytes       int      `config:"log.index.interval.bytes"`
	LogFlushIntervalMessages    int64    `config:"log.flush.interval.messages"`
	// LogFlushIntervalMs is log.flush.interval.ms, or
	// log.flush.scheduler.interval.ms when unset.
	LogFlushIntervalMs                      int64
	LogFlushSchedulerIntervalMs             int64  `config:"log.flush.scheduler.interval.ms"`
	LogFlushOffsetCheckpointIntervalMs      int    `config:"log.flush.offset.checkpoint.interval.ms"`
	LogFlushStartOffsetCheckpointIntervalMs int    `config:"log.flush.start.offset.checkpoint.interval.ms"`
	LogSegmentDeleteDelayMs                 int64  `config:"log.segment.delete.delay.ms"`
	LogPreallocate                          bool   `config:"log.preallocate"`
	LogMessageTimestampType                 string `config:"log.message.timestamp.type"`
	LogMessageTimestampBeforeMaxMs          int64  `config:"log.message.timestamp.before.max.ms"`
	LogMessageTimestampAfterMaxMs           int64  `config:"log.message.timestamp.after.max.ms"`
	MinInsyncReplicas                       int    `config:"min.insync.replicas"`
	CompressionType                         string `config:"compression.type"`
	UncleanLeaderElectionEnable             bool   `config:"unclean.leader.election.enable"`

	LogCleanerEnable                 bool    `config:"log.cleaner.enable"`
	LogCleanerThreads                int     `config:"log.cleaner.threads"`
	LogCleanerIOMaxBytesPerSecond    float64 `config:"log.cleaner.io.max.bytes.per.second"`
	LogCleanerDedupeBufferSize       int64   `config:"log.cleaner.dedupe.buffer.size"`
	LogCleanerIOBufferSize           int     `config:"log.cleaner.io.buffer.size"`
	LogCleanerIOBufferLoadFactor     float64 `config:"log.cleaner.io.buffer.load.factor"`
	LogCleanerBackoffMs              int64   `config:"log.cleaner.backoff.ms"`
	LogCleanerMinCleanableRatio      float64 `config:"log.cleaner.min.cleanable.ratio"`
	LogCleanerDeleteRetentionMs      int64   `config:"log.cleaner.delete.retention.ms"`
	LogCleanerMinCompactionLagMs     int64   `config:"log.cleaner.min.compaction.lag.ms"`
	LogCleanerMaxCompactionLagMs     int64   `config:"log.cleaner.max.compaction.lag.ms"`
	ReplicaLagTimeMaxMs              int64   `config:"replica.lag.time.max.ms"`
	ReplicaFetchMaxBytes             int     `config:"replica.fetch.max.bytes"`
	ReplicaFetchMinBytes             int     `config:"replica.fetch.min.bytes"`
	ReplicaFetchWaitMaxMs            int     `config:"replica.fetch.wait.max.ms"`
	ReplicaFetchBackoffMs            int     `config:"replica.fetch.backoff.ms"`
	ReplicaFetchResponseMaxBytes     int     `config:"replica.fetch.response.max.bytes"`
	ReplicaSocketTimeoutMs           int     `config:"replica.socket.timeout.ms"`
	ReplicaSocketReceiveBufferBytes  int     `config:"replica.socket.receive.buffer.bytes"`
	ReplicaHighWatermarkCheckpointMs int64   `config:"replica.high.watermark.checkpoint.interval.ms"`
	NumReplicaFetchers               int     `config:"num.replica.fetchers"`
	ControllerSocketTimeoutMs        int     `config:"controller.socket.timeout.ms"`
	// LeaderReplicationThrottledRate and FollowerReplicationThrottledRate
	// are the replication quotas in bytes/s (dynamic only); math.MaxInt64
	// means unlimited.
	LeaderReplicationThrottledRate   int64 `config:"leader.replication.throttled.rate"`
	FollowerReplicationThrottledRate int64 `config:"follower.replication.throttled.rate"`
	// ReplicaAlterLogDirsIOMaxBytesPerSecond bounds the copy of replicas
	// moving between log dirs (KIP-113), bytes/s, dynamic only.
	ReplicaAlterLogDirsIOMaxBytesPerSecond int64 `config:"replica.alter.log.dirs.io.max.bytes.per.second"`
	// ReplicationQuotaWindowNum samples of ReplicationQuotaWindowSizeSeconds
	// each measure the replication rates.
	ReplicationQuotaWindowNum         int `config:"replication.quota.window.num"`
	ReplicationQuotaWindowSizeSeconds int `config:"replication.quota.window.size.seconds"`

	// ZookeeperConnect is zookeeper.connect as given; empty runs the
	// embedded metadata store. ZookeeperServers and ZookeeperChroot are
	// its parts.
	ZookeeperConnect          string `config:"zookeeper.connect"`
	ZookeeperServers          []string
	ZookeeperChroot           string
	ZookeeperSessionTimeoutMs int `config:"zookeeper.session.timeout.ms"`
	// ZookeeperConnectionTimeoutMs is zookeeper.connection.timeout.ms, or
	// the session timeout when unset.
	ZookeeperConnectionTimeoutMs int
	ZookeeperMaxInFlightRequests int `config:"zookeeper.max.in.flight.requests"`

	GroupInitialRebalanceDelayMs  int   `config:"group.initial.rebalance.delay.ms"`
	GroupMinSessionTimeoutMs      int   `config:"group.min.session.timeout.ms"`
	GroupMaxSessionTimeoutMs      int   `config:"group.max.session.timeout.ms"`
	GroupMaxSize                  int   `config:"group.max.size"`
	OffsetMetadataMaxBytes        int   `config:"offset.metadata.max.bytes"`
	OffsetsLoadBufferSize         int   `config:"offsets.load.buffer.size"`
	OffsetsTopicReplicationFactor int16 `config:"offsets.topic.replication.factor"`
	OffsetsTopicNumPartitions     int   `config:"offsets.topic.num.partitions"`
	OffsetsTopicSegmentBytes      int   `config:"offsets.topic.segment.bytes"`
	OffsetsTopicCompressionCodec  int   `config:"offsets.topic.compression.codec"`
	OffsetsRetentionMinutes       int   `config:"offsets.retention.minutes"`
	OffsetsRetentionCheckMs       int64 `config:"offsets.retention.check.interval.ms"`
	OffsetsCommitTimeoutMs        int   `config:"offsets.commit.timeout.ms"`

	TransactionStateLogReplicationFactor                 int16 `config:"transaction.state.log.replication.factor"`
	TransactionStateLogMinISR                            int   `config:"transaction.state.log.min.isr"`
	TransactionStateLogNumPartitions                     int   `config:"transaction.state.log.num.partitions"`
	TransactionStateLogSegmentBytes                      int   `config:"transaction.state.log.segment.bytes"`
	TransactionMaxTimeoutMs                              int   `config:"transaction.max.timeout.ms"`
	TransactionalIDExpirationMs                          int   `config:"transactional.id.expiration.ms"`
	ProducerIDExpirationMs                               int   `config:"producer.id.expiration.ms"`
	TransactionAbortTimedOutTransactionCleanupIntervalMs int   `config:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`
	TransactionPartitionVerificationEnable               bool  `config:"transaction.partition.verification.enable"`
	TransactionRemoveExpiredTransactionCleanupIntervalMs int   `config:"transaction.remove.expired.transaction.cleanup.interval.ms"`

	// SASLMechanismInterBrokerProtocol is sasl.mechanism.inter.broker.protocol,
	// upper-cased; Load checks that the inter-broker listener enables it
	// when that listener is SASL_PLAINTEXT or SASL_SSL.
	SASLMechanismInterBrokerProtocol string `config:"sasl.mechanism.inter.broker.protocol"`
	// AuthorizerClassName is authorizer.class.name: empty (no
	// authorization), AclAuthorizer or SimpleAclAuthorizer.
	AuthorizerClassName string `config:"authorizer.class.name"`
	// SuperUsers is super.users split on ';', trimmed, empty entries
	// dropped: principals such as "User:admin".
	SuperUsers                []string
	AllowEveryoneIfNoACLFound bool `config:"allow.everyone.if.no.acl.found"`
	// QuotaWindowNum samples of QuotaWindowSizeSeconds each measure the
	// client quotas.
	QuotaWindowNum         int `config:"quota.window.num"`
	QuotaWindowSizeSeconds int `config:"quota.window.size.seconds"`

	// HTTPListener is qk.http.listener, host:port of the admin HTTP server;
	// empty disables it.
	HTTPListener string `config:"qk.http.listener"`
	// HTTPAdvertisedListener is qk.http.advertised.listener: the address
	// the admin HTTP server bound (WithHTTPAdvertisedListener), "" while
	// it is not bound or when it is disabled.
	HTTPAdvertisedListener string `config:"qk.http.advertised.listener"`
	// LogDirUsageWarnPercent is qk.log.dir.usage.warn.percent: a log dir
	// fuller than this is warned about (0: never).
	LogDirUsageWarnPercent int `config:"qk.log.dir.usage.warn.percent"`

	static     map[string]value // defaults < file < env < --set; absent: null
	dynDefault map[string]value // dynamic cluster-wide
	dynBroker  map[string]value // dynamic for this broker
	eff        map[string]value // dynBroker > dynDefault > static

	// listenerKeys are the listener-prefixed settings in static, parsed.
	listenerKeys map[string]listenerKey
	// security is ListenerSecurity of each listener, by name.
	security map[string]ListenerSecurity
}

// value is a normalized raw value and where it came from.
type value struct {
	Raw    string
	Source Source
}

// newBroker validates every layer, merges them and resolves the typed
// fields.
func newBroker(static, dynDefault, dynBroker map[string]value) (*Broker, error) {
	b := &Broker{static: map[string]value{}, dynDefault: map[string]value{}, dynBroker: map[string]value{}, eff: map[string]value{}}
	// Listener-prefixed settings (static only: they are read-only) are
	// checked once the listeners are known.
	prefixed := map[string]value{}
	for _, l := range []struct {
		in, out map[string]value
	}{{static, b.static}, {dynDefault, b.dynDefault}, {dynBroker, b.dynBroker}} {
		for _, name := range slices.Sorted(maps.Keys(l.in)) {
			v := l.in[name]
			if strings.HasPrefix(name, listenerPrefix) {
				prefixed[name] = v
				continue
			}
			norm, err := brokerKeys[name].Normalize(v.Raw)
			if err != nil {
				return nil, withSource(err, v.Source)
			}
			l.out[name] = value{Raw: norm, Source: v.Source}
			b.eff[name] = l.out[name]
		}
	}
	if err := bindFields(b, brokerKeys, b.lookup); err != nil {
		return nil, err
	}
	if err := b.resolve(); err != nil {
		return nil, err
	}
	if err := b.addListenerKeys(prefixed); err != nil {
		return nil, err
	}
	if err := b.resolveSecurity(); err != nil {
		return nil, err
	}
	return b, nil
}

// lookup returns the effective raw value of a broker setting; false when it
// is null.
func (b *Broker) lookup(name string) (string, bool) {
	v, ok := b.eff[name]
	return v.Raw, ok
}

// Value returns the effective value of a broker setting in normalized
// string form and its source; false when the setting is unknown or null.
func (b *Broker) Value(name string) (string, Source, bool) {
	v, ok := b.eff[name]
	return v.Raw, v.Source, ok
}

// valueErr builds a cross-setting error about the effective value of name.
func (b *Broker) valueErr(name, problem, want string) error {
	v := b.eff[name]
	if k := b.keyOf(name); k != nil && k.Sensitive() {
		v.Raw = hidden
	}
	return &ValueError{Key: name, Value: v.Raw, Source: v.Source, Problem: problem, Want: want}
}

// first returns the first of names that is set, in precedence order.
func (b *Broker) first(names ...string) (string, int64) {
	for _, n := range names {
		if v, ok := b.eff[n]; ok {
			p, _ := brokerKeys[n].Parse(v.Raw)
			return n, toInt64(p)
		}
	}
	return "", 0
}

func toInt64(v any) int64 {
	switch v := v.(type) {
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

const (
	msPerMinute = 60 * 1000
	msPerHour   = 60 * msPerMinute
)

// firstMs is first for a duration Kafka takes in several units, the
// finest first (log.retention.ms, .minutes, .hours): it returns the
// winner's value in milliseconds, scaled by its name's unit.
func (b *Broker) firstMs(names ...string) (string, int64) {
	name, n := b.first(names...)
	switch {
	case strings.HasSuffix(name, ".minutes"):
		n *= msPerMinute
	case strings.HasSuffix(name, ".hours"):
		n *= msPerHour
	}
	return name, n
}

// resolve computes the fields that depend on several settings and checks
// what Kafka's KafkaConfig checks across settings.
func (b *Broker) resolve() error {
	// Retention: ms > minutes > hours; negative means unlimited, 0 is
	// refused as in Kafka (it would delete every closed segment at once).
	name, n := b.firstMs("log.retention.ms", "log.retention.minutes", "log.retention.hours")
	switch {
	case n < 0:
		n = -1
	case n == 0:
		return b.valueErr(name, "retention of 0 ms", "-1 (no limit) or a positive retention")
	}
	b.LogRetentionMs = n

	name, n = b.firstMs("log.roll.ms", "log.roll.hours")
	if n < 1 {
		return b.valueErr(name, "out of range", "an integer ≥ 1")
	}
	b.LogRollMs = n

	name, n = b.firstMs("log.roll.jitter.ms", "log.roll.jitter.hours")
	if n < 0 {
		return b.valueErr(name, "out of range", "an integer ≥ 0")
	}
	b.LogRollJitterMs = n

	_, b.LogFlushIntervalMs = b.first("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
	_, zkConn := b.first("zookeeper.connection.timeout.ms", "zookeeper.session.timeout.ms")
	b.ZookeeperConnectionTimeoutMs = int(zkConn)

	b.LogDirs = b.list(b.logDirsFrom())

	if err := b.resolveListeners(); err != nil {
		return err
	}

	if v, ok := b.eff["max.connections.per.ip.overrides"]; ok {
		b.MaxConnectionsPerIPOverrides, _ = ParsePerIPOverrides(v.Raw)
	}
	if b.MaxConnectionsPerIP == 0 && len(b.MaxConnectionsPerIPOverrides) == 0 {
		// KafkaConfig: "max.connections.per.ip is set to be 0 but
		// max.connections.per.ip.overrides is empty".
		return b.valueErr("max.connections.per.ip", "0 with max.connections.per.ip.overrides empty",
			"a positive limit, or overrides naming the hosts allowed")
	}

	if b.ZookeeperConnect != "" {
		b.ZookeeperServers, b.ZookeeperChroot, _ = ParseZookeeperConnect(b.ZookeeperConnect)
	}

	if err := b.checkBrokerID(); err != nil {
		return err
	}

	if b.ReplicaFetchWaitMaxMs > b.ReplicaSocketTimeoutMs {
		return b.valueErr("replica.fetch.wait.max.ms",
			fmt.Sprintf("above replica.socket.timeout.ms=%d", b.ReplicaSocketTimeoutMs),
			"at most replica.socket.timeout.ms, so follower fetches do not time out")
	}
	if int64(b.ReplicaFetchWaitMaxMs) > b.ReplicaLagTimeMaxMs {
		return b.valueErr("replica.fetch.wait.max.ms",
			fmt.Sprintf("above replica.lag.time.max.ms=%d", b.ReplicaLagTimeMaxMs),
			"at most replica.lag.time.max.ms, so idle partitions do not shrink the ISR")
	}
	if b.LogCleanerThreads > 0 && b.LogCleanerDedupeBufferSize/int64(b.LogCleanerThreads) <= 1<<20 {
		return b.valueErr("log.cleaner.dedupe.buffer.size",
			fmt.Sprintf("at most 1 MiB for each of log.cleaner.threads=%d", b.LogCleanerThreads),
			"more than 1 MiB per cleaner thread")
	}
	return nil
}

// checkBrokerID is KafkaConfig's check of broker.id in ZooKeeper mode:
// with broker.id.generation.enable, -1 (generate one) or at most
// reserved.broker.max.id ("broker.id must be greater than or equal to -1
// and not greater than reserved.broker.max.id"); without, at least 0.
func (b *Broker) checkBrokerID() error {
	if !b.BrokerIDGenerationEnable {
		if b.BrokerID < 0 {
			return b.valueErr("broker.id", "-1 asks for a generated id, but broker.id.generation.enable=false",
				"an integer ≥ 0, or broker.id.generation.enable=true")
		}
		return nil
	}
	if b.BrokerID > b.ReservedBrokerMaxID {
		return b.valueErr("broker.id", fmt.Sprintf("above reserved.broker.max.id=%d", b.ReservedBrokerMaxID),
			"-1 (generate one) or at most reserved.broker.max.id, so it cannot clash with a generated id")
	}
	return nil
}

// WithBrokerID returns a copy of b whose BrokerID is id: the id the broker
// settled at start-up when broker.id is -1 (from meta.properties, or
// generated). WithDynamic keeps it. Value, Print and DescribeConfigs show
// broker.id as configured, as Kafka's DescribeConfigs does.
func (b *Broker) WithBrokerID(id int32) *Broker {
	c := *b
	c.BrokerID = id
	return &c
}

// HTTPAdvertisedListenerKey is the read-only setting that tells clients
// (qk top) where this broker's admin HTTP server listens.
const HTTPAdvertisedListenerKey = "qk.http.advertised.listener"

// WithHTTPAdvertisedListener returns b with qk.http.advertised.listener
// set to addr, the host:port the admin HTTP server bound (the broker
// learns it only at start-up, for port 0). WithDynamic keeps it, and
// DescribeConfigs answers it as the setting's value.
func (b *Broker) WithHTTPAdvertisedListener(addr string) *Broker {
	c := *b
	c.HTTPAdvertisedListener = addr
	c.eff = maps.Clone(b.eff)
	c.eff[HTTPAdvertisedListenerKey] = value{Raw: addr, Source: Source{Kind: SourceDefault}}
	return &c
}

// logDirsFrom names the setting LogDirs comes from: log.dirs, unless only
// log.dir was set by a source.
func (b *Broker) logDirsFrom() string {
	if b.eff["log.dirs"].Source.Kind == SourceDefault && b.eff["log.dir"].Source.Kind != SourceDefault {
		return "log.dir"
	}
	return "log.dirs"
}

func (b *Broker) list(name string) []string {
	v, ok := b.eff[name]
	if !ok {
		return nil
	}
	p, _ := brokerKeys[name].Parse(v.Raw)
	return p.([]string)
}

func (b *Broker) resolveListeners() error {
	protos, _ := parseProtocolMap(b.eff["listener.security.protocol.map"].Raw)
	ls, _ := parseListeners(b.list("listeners"))
	for i, l := range ls {
		p, ok := protos[l.Name]
		if !ok {
			return b.valueErr("listeners", "no security protocol for listener "+l.Name,
				"a listener name mapped by listener.security.protocol.map, or PLAINTEXT")
		}
		ls[i].SecurityProtocol = p
	}
	b.Listeners = ls

	b.AdvertisedListeners = slices.Clone(ls)
	if _, ok := b.eff["advertised.listeners"]; ok {
		adv, _ := parseListeners(b.list("advertised.listeners"))
		for i, a := range adv {
			j := slices.IndexFunc(ls, func(l Listener) bool { return l.Name == a.Name })
			if j < 0 {
				return b.valueErr("advertised.listeners", "listener "+a.Name+" is not in listeners",
					"names that listeners also uses")
			}
			adv[i].SecurityProtocol = ls[j].SecurityProtocol
		}
		b.AdvertisedListeners = adv
	}

	name := strings.ToUpper(b.eff["security.inter.broker.protocol"].Raw)
	if v, ok := b.eff["inter.broker.listener.name"]; ok {
		if b.eff["security.inter.broker.protocol"].Source.Kind != SourceDefault {
			return b.valueErr("inter.broker.listener.name", "set together with security.inter.broker.protocol",
				"only one of the two")
		}
		name = strings.ToUpper(v.Raw)
	}
	if !slices.ContainsFunc(b.AdvertisedListeners, func(l Listener) bool { return l.Name == name }) {
		key := "security.inter.broker.protocol"
		if _, ok := b.eff["inter.broker.listener.name"]; ok {
			key = "inter.broker.listener.name"
		}
		return b.valueErr(key, "no advertised listener named "+name,
			"the name of a listener in advertised.listeners (or listeners)")
	}
	b.InterBrokerListenerName = name
	return nil
}

// Print writes the effective configuration, one key=value per line sorted
// by key, each with its source, as `qk broker start --print-config` shows
// it: every broker setting, and the listener-prefixed settings that are
// set. Unset settings print null, passwords (sasl.jaas.config among them)
// [hidden]; a setting whose value is not used because a higher-precedence
// one is set says by which.
func (b *Broker) Print(w io.Writer) error {
	shadow := b.overridden()
	for _, name := range b.names() {
		k := b.keyOf(name)
		v, ok := b.eff[name]
		raw, src := "null", "default"
		if ok {
			raw, src = v.Raw, v.Source.String()
		}
		if ok && k.Sensitive() {
			raw = hidden
		}
		if by := shadow[name]; by != "" {
			src += "; overridden by " + by
		}
		if _, err := fmt.Fprintf(w, "%s=%s (%s)\n", name, raw, src); err != nil {
			return err
		}
	}
	return nil
}

// names returns every broker setting's name and the listener-prefixed
// settings that are set, sorted.
func (b *Broker) names() []string {
	out := slices.Collect(maps.Keys(brokerKeys))
	for name := range b.listenerKeys {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// overridden maps each set setting that loses to another to the winner.
func (b *Broker) overridden() map[string]string {
	out := map[string]string{}
	for _, g := range [][]string{
		{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		{"log.roll.ms", "log.roll.hours"},
		{"log.roll.jitter.ms", "log.roll.jitter.hours"},
	} {
		winner, _ := b.first(g...)
		for _, n := range g {
			if _, ok := b.eff[n]; ok && n != winner {
				out[n] = winner
			}
		}
	}
	if b.logDirsFrom() == "log.dir" {
		out["log.dirs"] = "log.dir"
	} else {
		out["log.dir"] = "log.dirs"
	}
	return out
}
