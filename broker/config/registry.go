package config

import (
	"slices"
	"strings"
)

// The registry: one table of broker settings and one of topic configs,
// keyed by Kafka's property names. Broker and topic names overlap
// (min.insync.replicas, compression.type, unclean.leader.election.enable
// are both), so they are two maps; a broker setting that is the default of
// a topic config is linked to it by Key.Topic and the topic config's
// Key.Synonyms.
var (
	brokerKeys = map[string]*Key{}
	topicKeys  = map[string]*Key{}
	// envNames maps QK_LOG_DIRS to log.dirs for every broker setting.
	envNames = map[string]string{}
)

// BrokerKey returns the broker setting called name.
func BrokerKey(name string) (*Key, bool) { k, ok := brokerKeys[name]; return k, ok }

// TopicKey returns the topic config called name.
func TopicKey(name string) (*Key, bool) { k, ok := topicKeys[name]; return k, ok }

// BrokerKeys returns every broker setting, sorted by name.
func BrokerKeys() []*Key { return sortedKeys(brokerKeys) }

// TopicKeys returns every topic config, sorted by name.
func TopicKeys() []*Key { return sortedKeys(topicKeys) }

func sortedKeys(m map[string]*Key) []*Key {
	out := make([]*Key, 0, len(m))
	for _, k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *Key) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// EnvName is the environment variable that sets a broker setting:
// QK_ and the name upper-cased with '.' as '_' (log.dirs: QK_LOG_DIRS).
func EnvName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
}

const envPrefix = "QK_"

func init() {
	for i := range brokerTable {
		k := &brokerTable[i]
		if k.Kind == 0 {
			k.Kind = KindBroker
		}
		brokerKeys[k.Name] = k
		envNames[EnvName(k.Name)] = k.Name
	}
	for i := range topicTable {
		k := &topicTable[i]
		k.Kind = KindTopic
		topicKeys[k.Name] = k
		// A broker setting that supplies a topic default is dynamic
		// cluster-wide, as in Kafka: altering log.retention.ms on the
		// default broker resource changes every topic without an override.
		for _, s := range k.Synonyms {
			bk := brokerKeys[s]
			bk.Kind, bk.Topic, bk.Mode = KindTopicDefault, k.Name, ClusterWide
		}
	}
	// Groups that resolve to one value (ms > minutes > hours).
	for _, g := range [][]string{
		{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		{"log.roll.ms", "log.roll.hours"},
		{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
	} {
		for _, n := range g {
			brokerKeys[n].Synonyms = g
		}
	}
}

const (
	maxInt    = "2147483647"
	maxLong   = "9223372036854775807"
	maxDouble = "1.7976931348623157E308"

	// minSegmentBytes is the size of a record batch v2 header, the least a
	// segment must hold. Kafka 3.x accepts 14 (a v0 message header) and
	// Kafka 4 1 MiB; qk writes v2 batches only, and its tests roll small
	// segments.
	minSegmentBytes = 61
	// minIndexBytes is four time-index entries, the least broker/log
	// accepts (Kafka: 4).
	minIndexBytes = 48
)

// brokerTable lists the broker settings. Defaults are Kafka 3.9's (the last
// Kafka with ZooKeeper, which qk speaks) unless the doc says "qk:". Kind,
// Topic and Mode of topic defaults are filled in by init from topicTable.
var brokerTable = []Key{
	// Server basics.
	{Name: "broker.id", Type: TypeInt, Default: "0", KafkaDefault: "-1", Valid: AtLeast(-1), Importance: High,
		Doc: "The broker id for this server. If unset (-1), a unique broker id will be generated. To avoid conflicts between ZooKeeper generated broker ids and user configured broker ids, generated broker ids start from reserved.broker.max.id + 1. qk: default 0, so a single node needs no settings (Kafka: -1); set -1 to have one generated (ZooKeeper's /brokers/seqid, or the embedded store's), which meta.properties keeps across restarts."},
	{Name: "broker.id.generation.enable", Type: TypeBoolean, Default: "true", Importance: Medium,
		Doc: "Enable automatic broker id generation on the server. When enabled the value configured for reserved.broker.max.id should be reviewed."},
	{Name: "reserved.broker.max.id", Type: TypeInt, Default: "1000", Valid: AtLeast(0), Importance: Medium,
		Doc: "Max number that can be used for a broker.id."},
	{Name: "broker.rack", Type: TypeString, Null: true, Importance: Medium,
		Doc: "Rack of the broker, used for rack-aware replica assignment, e.g. us-east-1d."},
	{Name: "listeners", Type: TypeList, Default: "PLAINTEXT://127.0.0.1:9092", KafkaDefault: "PLAINTEXT://:9092", Valid: listenersValid, Importance: High,
		Doc: "Comma-separated NAME://host:port addresses to listen on; an empty host binds every interface. A name that is not a security protocol must be mapped by listener.security.protocol.map. qk: default PLAINTEXT://127.0.0.1:9092, loopback only, for the single-node embedded mode (Kafka: PLAINTEXT://:9092)."},
	{Name: "advertised.listeners", Type: TypeList, Null: true, Valid: advertisedValid, Importance: High,
		Doc: "Addresses published to clients and other brokers when they differ from listeners (NAT, containers). Unset: listeners is advertised."},
	{Name: "listener.security.protocol.map", Type: TypeString, Default: "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", Valid: protocolMapValid, Importance: Low,
		Doc: "Map from listener names to security protocols, NAME:PROTOCOL comma-separated, e.g. CLIENT:SASL_SSL,REPLICATION:SSL. The protocol of a listener decides which listener.name.<listener name lower-cased>.ssl.* and .sasl.* settings apply to it."},
	{Name: "inter.broker.listener.name", Type: TypeString, Null: true, Importance: Medium,
		Doc: "Listener used between brokers. Unset: the listener named by security.inter.broker.protocol."},
	{Name: "security.inter.broker.protocol", Type: TypeString, Default: "PLAINTEXT", Valid: securityProtocols, Importance: Medium,
		Doc: "Security protocol used between brokers when inter.broker.listener.name is unset."},
	{Name: "num.network.threads", Type: TypeInt, Default: "3", Valid: AtLeast(1), Importance: High,
		Doc: "Threads that receive requests from the network and send responses (qk: epoll processors)."},
	{Name: "num.io.threads", Type: TypeInt, Default: "8", Valid: AtLeast(1), Importance: High,
		Doc: "Threads that process requests, which may include disk I/O (qk: request handlers)."},
	{Name: "background.threads", Type: TypeInt, Default: "10", Valid: AtLeast(1), Importance: High,
		Doc: "Threads for background tasks such as retention and deleting files."},
	{Name: "queued.max.requests", Type: TypeInt, Default: "500", Valid: AtLeast(1), Importance: High,
		Doc: "Requests queued for the I/O threads before the network threads stop reading."},
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", Valid: AtLeast(1), Importance: High,
		Doc: "Largest request the broker accepts; a larger size prefix closes the connection."},
	{Name: "socket.send.buffer.bytes", Type: TypeInt, Default: "102400", Importance: High,
		Doc: "SO_SNDBUF of client connections; -1 keeps the OS default."},
	{Name: "socket.receive.buffer.bytes", Type: TypeInt, Default: "102400", Importance: High,
		Doc: "SO_RCVBUF of client connections; -1 keeps the OS default."},
	{Name: "socket.listen.backlog.size", Type: TypeInt, Default: "50", Valid: AtLeast(1), Importance: Medium,
		Doc: "Pending connections the listen socket queues (see also net.core.somaxconn)."},
	{Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000", Importance: Medium,
		Doc: "Connections idle for longer than this are closed."},
	{Name: "max.connections", Type: TypeInt, Default: maxInt, Valid: AtLeast(0), Importance: Medium,
		Doc: "Most connections the broker accepts at once."},
	{Name: "max.connections.per.ip", Type: TypeInt, Default: maxInt, Valid: AtLeast(0), Importance: Medium,
		Doc: "Most connections accepted from one IP address; a connection over it is closed right after accept. 0 accepts none except from hosts in max.connections.per.ip.overrides."},
	{Name: "max.connections.per.ip.overrides", Type: TypeString, Default: "", Valid: perIPOverridesValid, Importance: Medium,
		Doc: "Per-IP or hostname overrides of max.connections.per.ip, comma-separated host:count, e.g. \"hostName:100,127.0.0.1:200\"."},
	{Name: "max.connection.creation.rate", Type: TypeInt, Default: maxInt, Valid: AtLeast(0), Importance: Medium,
		Doc: "Most connections the broker accepts per second, over a sliding window of 11 one-second samples (Kafka's quota.window.num and quota.window.size.seconds defaults). Connections over the rate are delayed: the acceptor waits before handing on the connection and accepting the next, as Kafka's does."},
	{Name: "queued.max.request.bytes", Type: TypeLong, Default: "-1", Importance: Medium,
		Doc: "Bytes of requests read and not yet answered allowed before the network threads stop reading more requests; -1 (or any value ≤ 0) means no bound."},
	{Name: "request.timeout.ms", Type: TypeInt, Default: "30000", Valid: AtLeast(0), Importance: High,
		Doc: "The configuration controls the maximum amount of time the client will wait for the response of a request. If the response is not received before the timeout elapses the client will resend the request if necessary or fail the request if retries are exhausted. In qk the broker holds itself to it: a request neither answered nor dropped with its connection this long after it was read (plus a fetch's max_wait_ms or a produce's timeout_ms, the wait the request asks for) is logged at WARN once and counted in qk_network_requests_overdue_total; the request itself is left alone. 0 disables the check."},
	{Name: "qk.socket.request.read.timeout.ms", Type: TypeLong, Default: "60000", Importance: Medium,
		Doc: "qk extension: a connection that has sent part of a request and not the rest within this time is closed, so that a client trickling bytes cannot hold a connection and its buffer (a trickle keeps connections.max.idle.ms from firing). Time the broker is not reading (backpressure) does not count. ≤ 0 disables."},
	{Name: "message.max.bytes", Type: TypeInt, Default: "1048588", Valid: AtLeast(0), Importance: High,
		Doc: "Largest record batch the broker accepts (after compression); topics override it with max.message.bytes."},
	{Name: "fetch.max.bytes", Type: TypeInt, Default: "57671680", Valid: AtLeast(1024), Importance: Medium,
		Doc: "Most bytes returned for one fetch request."},
	{Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Default: "1000", Valid: AtLeast(0), Importance: Medium,
		Doc: "The maximum number of incremental fetch sessions that we will maintain. qk: one cache, not sharded (Kafka 3.8+ divides the slots among 8 shards and evicts within a shard)."},
	{Name: "min.incremental.fetch.session.eviction.ms", Type: TypeLong, Default: "120000", Valid: AtLeast(0), Importance: Low,
		Doc: "The minimum amount of time we will wait before evicting an incremental fetch session from the cache: a session unused for longer may be evicted by any new session, and a session older than this by a new one with more partitions (a follower's by a follower's). qk: a setting; Kafka hard-codes 120000 (KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS)."},
	{Name: "num.recovery.threads.per.data.dir", Type: TypeInt, Default: "1", Valid: AtLeast(1), Importance: High,
		Doc: "Threads per log directory that recover logs at start-up and flush them at shutdown."},
	{Name: "controlled.shutdown.enable", Type: TypeBoolean, Default: "true", Importance: Medium,
		Doc: "Move leadership away before shutting down."},
	{Name: "controlled.shutdown.max.retries", Type: TypeInt, Default: "3", Importance: Medium,
		Doc: "Retries of a failed controlled shutdown."},
	{Name: "controlled.shutdown.retry.backoff.ms", Type: TypeLong, Default: "5000", Importance: Medium,
		Doc: "Wait before retrying a controlled shutdown."},

	// Topics.
	{Name: "num.partitions", Type: TypeInt, Default: "1", Valid: AtLeast(1), Importance: Medium,
		Doc: "Partitions of a topic created without a partition count (auto-created topics)."},
	{Name: "default.replication.factor", Type: TypeInt, Default: "1", Valid: AtLeast(1), Importance: Medium,
		Doc: "Replication factor of a topic created without one (auto-created topics)."},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true", Importance: High,
		Doc: "Create a topic when a client asks for metadata of, or produces to, a topic that does not exist."},
	{Name: "delete.topic.enable", Type: TypeBoolean, Default: "true", Importance: High,
		Doc: "Allow deleting topics; when false, DeleteTopics fails."},
	{Name: "auto.leader.rebalance.enable", Type: TypeBoolean, Default: "true", Importance: High,
		Doc: "Move leadership back to preferred replicas in the background."},
	{Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Default: "300", Valid: AtLeast(1), Importance: High,
		Doc: "How often the controller checks the leader balance."},
	{Name: "leader.imbalance.per.broker.percentage", Type: TypeInt, Default: "10", Importance: High,
		Doc: "Leader imbalance per broker, in percent, that triggers a rebalance."},

	// Logs.
	{Name: "log.dirs", Type: TypeList, Default: "./qk-data", KafkaNull: true, Valid: nonEmptyList, Importance: High,
		Doc: "Comma-separated directories where partition logs are stored. qk: default ./qk-data (Kafka: unset, so log.dir applies). As in Kafka, log.dir is used only when no source sets log.dirs."},
	{Name: "log.dir", Type: TypeList, Default: "./qk-data", KafkaDefault: "/tmp/kafka-logs", Valid: nonEmptyList, Importance: High,
		Doc: "Log directory used when log.dirs is not set. qk: default ./qk-data (Kafka: /tmp/kafka-logs)."},
	{Name: "log.segment.bytes", Type: TypeInt, Default: "1073741824", Valid: AtLeast(minSegmentBytes), Importance: High,
		Doc: "Largest size of one segment file. qk: at least 61, a batch header (Kafka 3: 14, Kafka 4: 1048576)."},
	{Name: "log.roll.ms", Type: TypeLong, Null: true, Importance: High,
		Doc: "Longest time before a new segment is rolled, in ms. Unset: log.roll.hours."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", Valid: AtLeast(1), Importance: High,
		Doc: "Longest time before a new segment is rolled, in hours; used when log.roll.ms is unset."},
	{Name: "log.roll.jitter.ms", Type: TypeLong, Null: true, Importance: High,
		Doc: "Most jitter subtracted from the roll time, in ms, to spread rolls. Unset: log.roll.jitter.hours."},
	{Name: "log.roll.jitter.hours", Type: TypeInt, Default: "0", Valid: AtLeast(0), Importance: High,
		Doc: "Most jitter subtracted from the roll time, in hours; used when log.roll.jitter.ms is unset."},
	{Name: "log.retention.ms", Type: TypeLong, Null: true, Importance: High,
		Doc: "How long a log segment is kept, in ms; -1: no time limit. Unset: log.retention.minutes."},
	{Name: "log.retention.minutes", Type: TypeInt, Null: true, Importance: High,
		Doc: "How long a log segment is kept, in minutes; used when log.retention.ms is unset. Unset: log.retention.hours."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", Importance: High,
		Doc: "How long a log segment is kept, in hours; used when log.retention.ms and log.retention.minutes are unset."},
	{Name: "log.retention.bytes", Type: TypeLong, Default: "-1", Importance: High,
		Doc: "Largest size of a partition's log before old segments are deleted; -1: no size limit."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", Valid: AtLeast(1), Importance: Medium,
		Doc: "How often logs are checked for segments to delete under the retention settings."},
	{Name: "log.cleanup.policy", Type: TypeList, Default: "delete", Valid: cleanupPolicies, Importance: Medium,
		Doc: "What happens to segments beyond retention: delete, compact, or both."},
	{Name: "log.index.size.max.bytes", Type: TypeInt, Default: "10485760", Valid: AtLeast(minIndexBytes), Importance: Medium,
		Doc: "Largest size of an offset index file. qk: at least 48 (Kafka: 4)."},
	{Name: "log.index.interval.bytes", Type: TypeInt, Default: "4096", Valid: AtLeast(0), Importance: Medium,
		Doc: "Bytes of log between two offset index entries."},
	{Name: "log.flush.interval.messages", Type: TypeLong, Default: maxLong, Valid: AtLeast(1), Importance: High,
		Doc: "Messages appended to a partition before it is fsynced. The default leaves flushing to the OS."},
	{Name: "log.flush.interval.ms", Type: TypeLong, Null: true, Importance: High,
		Doc: "Longest time a message stays unflushed, in ms. Unset: log.flush.scheduler.interval.ms."},
	{Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Default: maxLong, Importance: High,
		Doc: "How often the flusher checks whether a log needs an fsync."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", Valid: AtLeast(0), Importance: High,
		Doc: "How often the recovery points (recovery-point-offset-checkpoint) are written."},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", Valid: AtLeast(0), Importance: High,
		Doc: "How often the log start offsets (log-start-offset-checkpoint) are written."},
	{Name: "log.segment.delete.delay.ms", Type: TypeLong, Default: "60000", Valid: AtLeast(0), Importance: High,
		Doc: "Wait before a deleted segment's files are removed from the file system."},
	{Name: "log.preallocate", Type: TypeBoolean, Default: "false", Importance: Medium,
		Doc: "Preallocate segment files to their full size when created."},
	{Name: "log.message.timestamp.type", Type: TypeString, Default: "CreateTime", Valid: timestampTypes, Importance: Medium,
		Doc: "Whether record timestamps are the producer's (CreateTime) or the broker's append time (LogAppendTime)."},
	{Name: "log.message.timestamp.before.max.ms", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Doc: "With CreateTime, how far a record timestamp may be behind the broker's clock."},
	{Name: "log.message.timestamp.after.max.ms", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Doc: "With CreateTime, how far a record timestamp may be ahead of the broker's clock."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Valid: AtLeast(1), Importance: High,
		Doc: "With acks=all, the fewest in-sync replicas that must have a write; fewer fails it with NOT_ENOUGH_REPLICAS."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Valid: compressionTypes, Importance: High,
		Doc: "Compression of stored batches: uncompressed, zstd, lz4, snappy, gzip, or producer to keep the producer's."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Importance: High,
		Doc: "Elect a replica outside the ISR as leader as a last resort, which may lose data."},

	// Log cleaner.
	{Name: "log.cleaner.enable", Type: TypeBoolean, Default: "true", Importance: Medium,
		Doc: "Run the log cleaner, needed by compacted topics such as __consumer_offsets."},
	{Name: "log.cleaner.threads", Type: TypeInt, Default: "1", Valid: AtLeast(0), Importance: Medium,
		Doc: "Threads that clean (compact) logs."},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: TypeDouble, Default: maxDouble, Importance: Medium,
		Doc: "Throttle of the cleaner's reads and writes."},
	{Name: "log.cleaner.dedupe.buffer.size", Type: TypeLong, Default: "134217728", Importance: Medium,
		Doc: "Memory for deduplication across all cleaner threads; at least 1 MiB per thread."},
	{Name: "log.cleaner.io.buffer.size", Type: TypeInt, Default: "524288", Valid: AtLeast(0), Importance: Medium,
		Doc: "Memory for cleaner I/O buffers across all cleaner threads."},
	{Name: "log.cleaner.io.buffer.load.factor", Type: TypeDouble, Default: "0.9", Importance: Medium,
		Doc: "How full the dedupe buffer may get."},
	{Name: "log.cleaner.backoff.ms", Type: TypeLong, Default: "15000", Valid: AtLeast(0), Importance: Medium,
		Doc: "Sleep when there is no log to clean."},
	{Name: "log.cleaner.min.cleanable.ratio", Type: TypeDouble, Default: "0.5", Valid: Between(0, 1), Importance: Medium,
		Doc: "Least ratio of dirty log to total log for a log to be cleaned."},
	{Name: "log.cleaner.delete.retention.ms", Type: TypeLong, Default: "86400000", Valid: AtLeast(0), Importance: Medium,
		Doc: "How long tombstones are kept in compacted topics."},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, Default: "0", Valid: AtLeast(0), Importance: Medium,
		Doc: "Least time a record stays uncompacted."},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, Default: maxLong, Valid: AtLeast(1), Importance: Medium,
		Doc: "Longest time a record stays ineligible for compaction."},

	// Replication.
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000", Importance: High,
		Doc: "A follower that has not fetched, or not caught up to the leader's log end, for this long leaves the ISR."},
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Default: "1048576", Valid: AtLeast(0), Importance: Medium,
		Doc: "Bytes a follower asks for per partition; not a hard limit, a larger first batch is still returned."},
	{Name: "replica.fetch.min.bytes", Type: TypeInt, Default: "1", Importance: High,
		Doc: "Least bytes of a follower fetch response, waiting up to replica.fetch.wait.max.ms."},
	{Name: "replica.fetch.wait.max.ms", Type: TypeInt, Default: "500", Importance: Medium,
		Doc: "Longest wait of a follower fetch; keep it below replica.lag.time.max.ms."},
	{Name: "replica.fetch.backoff.ms", Type: TypeInt, Default: "1000", Valid: AtLeast(0), Importance: Medium,
		Doc: "Sleep after a follower fetch fails."},
	{Name: "replica.fetch.response.max.bytes", Type: TypeInt, Default: "10485760", Valid: AtLeast(0), Importance: Medium,
		Doc: "Bytes a follower asks for per fetch response; not a hard limit."},
	{Name: "replica.socket.timeout.ms", Type: TypeInt, Default: "30000", Importance: High,
		Doc: "Socket timeout of follower fetches; at least replica.fetch.wait.max.ms."},
	{Name: "replica.socket.receive.buffer.bytes", Type: TypeInt, Default: "65536", Importance: High,
		Doc: "SO_RCVBUF of follower connections to leaders."},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: TypeLong, Default: "5000", Importance: High,
		Doc: "How often high watermarks are written to replication-offset-checkpoint."},
	{Name: "num.replica.fetchers", Type: TypeInt, Default: "1", Importance: High,
		Doc: "Fetcher goroutines per source broker."},
	{Name: "controller.socket.timeout.ms", Type: TypeInt, Default: "30000", Importance: Medium,
		Doc: "Socket timeout of controller-to-broker requests."},
	{Name: "replication.quota.window.num", Type: TypeInt, Default: "11", Valid: AtLeast(1), Importance: Low,
		Doc: "The number of samples to retain in memory for replication quotas."},
	{Name: "replication.quota.window.size.seconds", Type: TypeInt, Default: "1", Valid: AtLeast(1), Importance: Low,
		Doc: "The time span of each sample for replication quotas."},
	// Replication quotas (Kafka's QuotaConfigs.brokerQuotaConfigs): dynamic
	// only, per broker or as the cluster-wide default.
	{Name: "leader.replication.throttled.rate", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Mode: ClusterWide, DynamicOnly: true,
		Doc: "A long representing the upper bound (bytes/sec) on replication traffic for leaders enumerated in the property leader.replication.throttled.replicas (for each topic). This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour."},
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Mode: ClusterWide, DynamicOnly: true,
		Doc: "A long representing the upper bound (bytes/sec) on disk IO used for moving replica between log directories on the same broker. This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour. kafka-reassign-partitions.sh --replica-alter-log-dirs-throttle (and qk reassign-partitions) sets it."},
	{Name: "follower.replication.throttled.rate", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Mode: ClusterWide, DynamicOnly: true,
		Doc: "A long representing the upper bound (bytes/sec) on replication traffic for followers enumerated in the property follower.replication.throttled.replicas (for each topic). This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour."},

	// ZooKeeper.
	{Name: "zookeeper.connect", Type: TypeString, Null: true, Valid: zookeeperConnectValid, Importance: High,
		Doc: "ZooKeeper servers as host:port[,host:port...][/chroot]. qk: unset runs the embedded metadata store (Kafka requires it in ZooKeeper mode)."},
	{Name: "zookeeper.session.timeout.ms", Type: TypeInt, Default: "18000", Importance: High,
		Doc: "ZooKeeper session timeout."},
	{Name: "zookeeper.connection.timeout.ms", Type: TypeInt, Null: true, Importance: High,
		Doc: "Longest wait to connect to ZooKeeper. Unset: zookeeper.session.timeout.ms."},
	{Name: "zookeeper.max.in.flight.requests", Type: TypeInt, Default: "10", Valid: AtLeast(1), Importance: High,
		Doc: "Unacknowledged requests sent to ZooKeeper before blocking."},

	// Group coordinator and __consumer_offsets.
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", Importance: Medium,
		Doc: "Wait for more members to join a new group before its first rebalance."},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000", Importance: Medium,
		Doc: "Shortest session timeout a consumer may ask for."},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000", Importance: Medium,
		Doc: "Longest session timeout a consumer may ask for."},
	{Name: "group.max.size", Type: TypeInt, Default: maxInt, Valid: AtLeast(1), Importance: Medium,
		Doc: "Most members of one consumer group."},
	{Name: "offset.metadata.max.bytes", Type: TypeInt, Default: "4096", Importance: High,
		Doc: "Largest metadata string of an offset commit."},
	{Name: "offsets.load.buffer.size", Type: TypeInt, Default: "5242880", Valid: AtLeast(1), Importance: High,
		Doc: "Read size when loading offsets from __consumer_offsets."},
	{Name: "offsets.topic.replication.factor", Type: TypeShort, Default: "3", Valid: AtLeast(1), Importance: High,
		Doc: "Replication factor of __consumer_offsets. Kafka's default 3 is kept; qk creates the topic with fewer replicas when fewer brokers are alive (clamped at run time, so a single node works)."},
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", Valid: AtLeast(1), Importance: High,
		Doc: "Partitions of __consumer_offsets; do not change after deployment."},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", Valid: AtLeast(1), Importance: High,
		Doc: "Segment size of __consumer_offsets, small for fast compaction and loading."},
	{Name: "offsets.topic.compression.codec", Type: TypeInt, Default: "0", Importance: High,
		Doc: "Compression codec id of __consumer_offsets batches (0: none)."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", Valid: AtLeast(1), Importance: High,
		Doc: "How long committed offsets of an empty group are kept."},
	{Name: "offsets.retention.check.interval.ms", Type: TypeLong, Default: "600000", Valid: AtLeast(1), Importance: High,
		Doc: "How often stale offsets are looked for."},
	{Name: "offsets.commit.timeout.ms", Type: TypeInt, Default: "5000", Valid: AtLeast(1), Importance: High,
		Doc: "Longest wait for an offset commit to be replicated."},

	// Transactions and producer ids.
	{Name: "transaction.state.log.replication.factor", Type: TypeShort, Default: "3", Valid: AtLeast(1), Importance: High,
		Doc: "Replication factor of __transaction_state. Kafka's default 3 is kept; qk clamps it to the live brokers at run time."},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", Valid: AtLeast(1), Importance: High,
		Doc: "min.insync.replicas of __transaction_state."},
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", Valid: AtLeast(1), Importance: High,
		Doc: "Partitions of __transaction_state."},
	{Name: "transaction.state.log.segment.bytes", Type: TypeInt, Default: "104857600", Valid: AtLeast(1), Importance: High,
		Doc: "Segment size of __transaction_state."},
	{Name: "transaction.max.timeout.ms", Type: TypeInt, Default: "900000", Valid: AtLeast(1), Importance: High,
		Doc: "Longest transaction timeout a producer may ask for."},
	{Name: "transactional.id.expiration.ms", Type: TypeInt, Default: "604800000", Valid: AtLeast(1), Importance: High,
		Doc: "A transactional id unused for this long expires."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Default: "10000", Valid: AtLeast(1), Importance: Low,
		Doc: "How often the transaction coordinator aborts transactions older than their transaction.timeout.ms, with an epoch bump that fences their producer."},
	{Name: "transaction.partition.verification.enable", Type: TypeBoolean, Default: "true", Importance: High,
		Doc: "Before a producer's first transactional write to a partition, the leader verifies with the transaction coordinator that the partition is in the producer's ongoing transaction (KIP-890); a write that is not is refused INVALID_TXN_STATE, so no transaction is left hanging."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Default: "3600000", Valid: AtLeast(1), Importance: Low,
		Doc: "How often the transaction coordinator removes transactional ids idle for transactional.id.expiration.ms."},
	{Name: "producer.id.expiration.ms", Type: TypeInt, Default: "86400000", Valid: AtLeast(1), Importance: Low,
		Doc: "A producer id idle for this long is forgotten (its idempotence state dropped)."},

	// TLS (Kafka's SslConfigs and BrokerSecurityConfigs). Every ssl.*
	// setting may be given per listener as
	// listener.name.<listener>.ssl.<...>, which wins for that listener.
	// qk serves TLS with Go's crypto/tls; settings naming JSSE classes or
	// algorithms are accepted and not used (Key.Unused).
	{Name: "ssl.keystore.type", Type: TypeString, Default: "JKS", Importance: Medium, PerListener: true,
		Doc: "The file format of the key store file: JKS, PKCS12 or PEM. PEM is required for ssl.keystore.key and ssl.keystore.certificate.chain."},
	{Name: "ssl.keystore.location", Type: TypeString, Null: true, Importance: High, PerListener: true,
		Doc: "The location of the key store file, which holds the listener's private key and certificate chain. An SSL or SASL_SSL listener needs a key store: this or ssl.keystore.key."},
	{Name: "ssl.keystore.password", Type: TypePassword, Null: true, Importance: High, PerListener: true,
		Doc: "The store password for the key store file. Not needed for PEM key stores."},
	{Name: "ssl.key.password", Type: TypePassword, Null: true, Importance: High, PerListener: true,
		Doc: "The password of the private key in the key store file, or of the PEM key in ssl.keystore.key when it is encrypted."},
	{Name: "ssl.keystore.key", Type: TypePassword, Null: true, Importance: High, PerListener: true,
		Doc: "Private key in the format specified by ssl.keystore.type (PEM: PKCS#8, encrypted with ssl.key.password or not), given inline. Needs ssl.keystore.certificate.chain and ssl.keystore.type=PEM."},
	{Name: "ssl.keystore.certificate.chain", Type: TypePassword, Null: true, Importance: High, PerListener: true,
		Doc: "Certificate chain in the format specified by ssl.keystore.type (PEM: a list of X.509 certificates), given inline, for the key in ssl.keystore.key."},
	{Name: "ssl.truststore.type", Type: TypeString, Default: "JKS", Importance: Medium, PerListener: true,
		Doc: "The file format of the trust store file: JKS, PKCS12 or PEM."},
	{Name: "ssl.truststore.location", Type: TypeString, Null: true, Importance: High, PerListener: true,
		Doc: "The location of the trust store file, whose certificates verify client certificates (ssl.client.auth) and, for the inter-broker listener, other brokers."},
	{Name: "ssl.truststore.password", Type: TypePassword, Null: true, Importance: High, PerListener: true,
		Doc: "The password for the trust store file. Unset: the trust store is used without an integrity check. Not supported for PEM."},
	{Name: "ssl.truststore.certificates", Type: TypePassword, Null: true, Importance: High, PerListener: true,
		Doc: "Trusted certificates in the format specified by ssl.truststore.type (PEM: X.509 certificates), given inline."},
	{Name: "ssl.client.auth", Type: TypeString, Default: "none", Valid: clientAuthValid, Importance: Medium, PerListener: true,
		Doc: "Whether the broker asks for client certificates: required (a client without a valid certificate is refused), requested (asked for, optional), none. As in Kafka, a SASL_SSL listener uses only listener.name.<listener>.ssl.client.auth, else none."},
	{Name: "ssl.enabled.protocols", Type: TypeList, Default: "TLSv1.2,TLSv1.3", Importance: Medium, PerListener: true,
		Doc: "The TLS versions enabled for connections."},
	{Name: "ssl.protocol", Type: TypeString, Default: "TLSv1.3", Importance: Medium, PerListener: true,
		Doc: "The TLS protocol used to create the SSL context, TLSv1.3 by default; with TLSv1.2 clients that support only TLSv1.3 fail."},
	{Name: "ssl.provider", Type: TypeString, Null: true, Importance: Medium, PerListener: true,
		Unused: "qk serves TLS with Go's crypto/tls, which has no security providers",
		Doc:    "The name of the JSSE security provider. qk: accepted, not used (Go's crypto/tls)."},
	{Name: "ssl.cipher.suites", Type: TypeList, Default: "", Importance: Low, PerListener: true,
		Doc: "Cipher suites enabled for TLS 1.2 and below, by IANA name; empty enables every suite the TLS implementation supports."},
	{Name: "ssl.endpoint.identification.algorithm", Type: TypeString, Default: "https", Importance: Low, PerListener: true,
		Doc: "The endpoint identification algorithm used to check the server host name against its certificate, when the broker connects to another broker; empty disables the check."},
	{Name: "ssl.principal.mapping.rules", Type: TypeString, Default: "DEFAULT", Importance: Low, PerListener: true,
		Doc: "Rules mapping the distinguished name of a client certificate to a short principal name, as RULE:pattern/replacement/[LU] entries; DEFAULT uses the distinguished name as it is."},
	{Name: "ssl.keymanager.algorithm", Type: TypeString, Default: "SunX509", Importance: Low, PerListener: true,
		Unused: "qk serves TLS with Go's crypto/tls, which has no key manager factories",
		Doc:    "The algorithm of the key manager factory for TLS connections (the JVM's default). qk: accepted, not used (Go's crypto/tls)."},
	{Name: "ssl.trustmanager.algorithm", Type: TypeString, Default: "PKIX", Importance: Low, PerListener: true,
		Unused: "qk serves TLS with Go's crypto/tls, which verifies chains as PKIX always",
		Doc:    "The algorithm of the trust manager factory for TLS connections (the JVM's default). qk: accepted, not used (Go's crypto/tls verifies PKIX)."},
	{Name: "ssl.secure.random.implementation", Type: TypeString, Null: true, Importance: Low, PerListener: true,
		Unused: "qk uses Go's crypto/rand",
		Doc:    "The SecureRandom PRNG implementation for TLS. qk: accepted, not used (crypto/rand)."},
	{Name: "ssl.engine.factory.class", Type: TypeClass, Null: true, Importance: Low, PerListener: true,
		Unused: "qk cannot load Java classes; TLS is Go's crypto/tls configured by the ssl.* settings",
		Doc:    "A class of type org.apache.kafka.common.security.auth.SslEngineFactory providing SSLEngine objects. qk: accepted, not used."},

	// SASL (Kafka's BrokerSecurityConfigs and SaslConfigs). qk implements
	// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; the sasl.kerberos.* settings
	// of GSSAPI are unknown keys, warned about.
	{Name: "sasl.enabled.mechanisms", Type: TypeList, Default: "GSSAPI", Importance: Medium, PerListener: true,
		Doc: "The SASL mechanisms enabled in the server, any of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 in qk. Kafka's default GSSAPI (Kerberos) is not implemented, so a SASL listener needs this setting."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Default: "GSSAPI", Importance: Medium,
		Doc: "SASL mechanism used between brokers when the inter-broker listener is SASL_PLAINTEXT or SASL_SSL; it must be one of that listener's sasl.enabled.mechanisms."},
	{Name: "sasl.jaas.config", Type: TypePassword, Null: true, Importance: Medium, PerListener: true,
		Unused: "a broker reads JAAS only as listener.name.<listener>.<mechanism>.sasl.jaas.config",
		Doc:    "JAAS login context parameters in the format of JAAS configuration files: loginModuleClass controlFlag (optionName=\"optionValue\")*;. A broker reads it only prefixed with listener and mechanism, lower-cased: listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";"},
	{Name: "sasl.server.max.receive.size", Type: TypeInt, Default: "524288", Importance: Low, PerListener: true,
		Doc: "The largest SASL message the server accepts before authentication; a larger size closes the connection."},
	{Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0", Importance: Medium, PerListener: true,
		Doc: "When positive, the most a session authenticated with SASL lasts before the client must re-authenticate (KIP-368), given to clients in SaslAuthenticate; 0 disables re-authentication."},

	// Authorizer. Kafka hands super.users and
	// allow.everyone.if.no.acl.found to the authorizer, which reads them
	// from the config; qk has them as keys of their own.
	{Name: "authorizer.class.name", Type: TypeString, Default: "", Valid: authorizerValid, Importance: Low,
		Doc: "The authorizer class; empty: no authorization, every request is allowed. qk implements kafka.security.authorizer.AclAuthorizer (ACLs stored in ZooKeeper or the embedded store), also under its old name kafka.security.auth.SimpleAclAuthorizer."},
	{Name: "super.users", Type: TypeString, Null: true, Valid: superUsersValid, Importance: Low,
		Doc: "Principals allowed everything whatever the ACLs, semicolon-separated, e.g. User:admin;User:CN=broker,O=qk. Read by the authorizer."},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Default: "false", Importance: Low,
		Doc: "Whether a resource without any ACL is open to every principal; false denies it to all but super.users. Read by the authorizer."},

	// Client quotas.
	{Name: "quota.window.num", Type: TypeInt, Default: "11", Valid: AtLeast(1), Importance: Low,
		Doc: "The number of samples to retain in memory for client quotas."},
	{Name: "quota.window.size.seconds", Type: TypeInt, Default: "1", Valid: AtLeast(1), Importance: Low,
		Doc: "The time span of each sample for client quotas."},
	{Name: "client.quota.callback.class", Type: TypeClass, Null: true, Importance: Low,
		Unused: "qk cannot load Java classes; quotas are the default ones, set with kafka-configs.sh --entity-type users/clients",
		Doc:    "A class of type org.apache.kafka.server.quota.ClientQuotaCallback that decides the quota limits of requests. qk: not supported; accepted and not used, quotas are Kafka's default user/client-id ones."},

	// qk extensions: names start with "qk." so they never collide with a
	// future Kafka setting.
	{Name: "qk.http.listener", Type: TypeString, Default: "127.0.0.1:9644", Valid: hostPortValid, Importance: Medium,
		Doc: "qk extension: host:port of the admin HTTP server (Prometheus /metrics, partition status for qk top); empty disables it."},
	{Name: "qk.http.advertised.listener", Type: TypeString, Default: "", Valid: setByBroker, Importance: Low,
		Doc: "qk extension, read-only: host:port the admin HTTP server of this broker is bound to (qk.http.listener with its port resolved), empty when it is disabled. The broker sets it at start-up; qk top reads it with DescribeConfigs."},
	{Name: "qk.log.dir.usage.warn.percent", Type: TypeInt, Default: "90", Valid: Between(0, 100), Importance: Medium,
		Doc: "qk extension: a log directory whose file system is fuller than this (percent of its size, as df counts it) is logged at WARN once, until it drops below again, and flagged by qk_log_dir_usage_warning; qk_log_dir_used_percent exports the figure. Checked every 10 seconds. 0 disables the warning. Kafka has none: a disk that fills takes its log directory offline (KIP-112)."},
}

// topicTable lists the topic configs. Synonyms are the broker settings
// that supply the default, highest precedence first.
var topicTable = []Key{
	{Name: "cleanup.policy", Type: TypeList, Default: "delete", Valid: cleanupPolicies, Importance: Medium,
		Synonyms: []string{"log.cleanup.policy"},
		Doc:      "delete removes old segments by retention.ms and retention.bytes; compact keeps the last value of each key; both may be given."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Valid: compressionTypes, Importance: Medium,
		Synonyms: []string{"compression.type"},
		Doc:      "Compression of stored batches: uncompressed, zstd, lz4, snappy, gzip, or producer to keep the producer's."},
	{Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.cleaner.delete.retention.ms"},
		Doc:      "How long tombstones are kept in a compacted topic."},
	{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.segment.delete.delay.ms"},
		Doc:      "Wait before a deleted segment's files are removed from the file system."},
	{Name: "flush.messages", Type: TypeLong, Default: maxLong, Valid: AtLeast(1), Importance: Medium,
		Synonyms: []string{"log.flush.interval.messages"},
		Doc:      "Messages appended before the log is fsynced; the default leaves flushing to the OS."},
	{Name: "flush.ms", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
		Doc:      "Longest time before the log is fsynced; the default leaves flushing to the OS."},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", Valid: throttledReplicasValid, Importance: Medium,
		Doc: "Replicas throttled on the follower side, partition:brokerId or *."},
	{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.index.interval.bytes"},
		Doc:      "Bytes of log between two offset index entries."},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", Valid: throttledReplicasValid, Importance: Medium,
		Doc: "Replicas throttled on the leader side, partition:brokerId or *."},
	{Name: "max.compaction.lag.ms", Type: TypeLong, Default: maxLong, Valid: AtLeast(1), Importance: Medium,
		Synonyms: []string{"log.cleaner.max.compaction.lag.ms"},
		Doc:      "Longest time a record stays ineligible for compaction."},
	{Name: "max.message.bytes", Type: TypeInt, Default: "1048588", Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"message.max.bytes"},
		Doc:      "Largest record batch accepted for the topic (after compression)."},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.message.timestamp.after.max.ms"},
		Doc:      "With CreateTime, how far a record timestamp may be ahead of the broker's clock."},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: maxLong, Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.message.timestamp.before.max.ms"},
		Doc:      "With CreateTime, how far a record timestamp may be behind the broker's clock."},
	{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", Valid: timestampTypes, Importance: Medium,
		Synonyms: []string{"log.message.timestamp.type"},
		Doc:      "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the broker's time."},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", Valid: Between(0, 1), Importance: Medium,
		Synonyms: []string{"log.cleaner.min.cleanable.ratio"},
		Doc:      "Least ratio of dirty log to total log for the log to be compacted."},
	{Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.cleaner.min.compaction.lag.ms"},
		Doc:      "Least time a record stays uncompacted."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Valid: AtLeast(1), Importance: Medium,
		Synonyms: []string{"min.insync.replicas"},
		Doc:      "With acks=all, the fewest in-sync replicas that must have a write; fewer fails it with NOT_ENOUGH_REPLICAS."},
	{Name: "preallocate", Type: TypeBoolean, Default: "false", Importance: Medium,
		Synonyms: []string{"log.preallocate"},
		Doc:      "Preallocate segment files to their full size when created."},
	{Name: "retention.bytes", Type: TypeLong, Default: "-1", Importance: Medium,
		Synonyms: []string{"log.retention.bytes"},
		Doc:      "Largest size of a partition's log before old segments are deleted (delete policy); -1: no limit."},
	{Name: "retention.ms", Type: TypeLong, Default: "604800000", Valid: AtLeast(-1), Importance: Medium,
		Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		Doc:      "How long a segment is kept after its last record (delete policy); -1: no time limit."},
	{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", Valid: AtLeast(minSegmentBytes), Importance: Medium,
		Synonyms: []string{"log.segment.bytes"},
		Doc:      "Largest size of one segment file. qk: at least 61, a batch header (Kafka 3: 14, Kafka 4: 1048576)."},
	{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", Valid: AtLeast(minIndexBytes), Importance: Medium,
		Synonyms: []string{"log.index.size.max.bytes"},
		Doc:      "Largest size of an offset index file. qk: at least 48 (Kafka: 4)."},
	{Name: "segment.jitter.ms", Type: TypeLong, Default: "0", Valid: AtLeast(0), Importance: Medium,
		Synonyms: []string{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		Doc:      "Most random jitter subtracted from segment.ms, so segments do not all roll at once."},
	{Name: "segment.ms", Type: TypeLong, Default: "604800000", Valid: AtLeast(1), Importance: Medium,
		Synonyms: []string{"log.roll.ms", "log.roll.hours"},
		Doc:      "Longest time before the active segment is rolled, so retention can delete or compact it."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Importance: Medium,
		Synonyms: []string{"unclean.leader.election.enable"},
		Doc:      "Elect a replica outside the ISR as leader as a last resort, which may lose data."},
}
