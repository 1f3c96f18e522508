// Package broker is a Kafka-compatible broker as a library: New and Start
// wire the parts in its subpackages, Close takes them down cleanly.
//
// # Start-up
//
//	config.Broker
//	   │  New: zookeeper.connect must be unset (ZooKeeper comes later);
//	   │  every log dir locked (flock on <dir>/.lock, as Kafka), so a
//	   │  second process on the same dirs is refused
//	   ▼
//	metadata store ── embedded, <log.dirs[0]>/__qk_metadata (or a shared
//	   │              session: WithMetadataStore, for in-process clusters)
//	   │  Kafka's persistent paths; /cluster/id (created once);
//	   │  broker.id: the log dirs' meta.properties agree with each other
//	   │  and with a configured id; -1 takes theirs, or on a fresh broker
//	   │  generates reserved.broker.max.id + the new version of
//	   │  /brokers/seqid (1001, 1002, ...);
//	   │  meta.properties in every log dir: written on first start
//	   │  (version 0, broker.id, cluster.id), checked afterwards
//	   ▼  Start:
//	network.Server ── listeners bound; requests are refused (connection
//	   │              closed) until the broker is ready
//	   ▼
//	/brokers/ids/<id> ── ephemeral registration; its zxid is the broker epoch
//	   ▼
//	log.Manager ── every partition dir opened (recovered after a crash),
//	   │           with the topic configs stored in /config/topics
//	   ▼
//	replica.Manager, controller.Cache ── the cache reads the metadata and,
//	   │   through OnChange, makes this broker leader of its partitions
//	   ▼
//	controller.Controller ── election (/controller, /controller_epoch)
//	   ▼
//	ready: api.Handler serves every request
//
// # Metadata changes
//
// Every change (a topic created, deleted or given partitions, a topic or
// broker config altered) reaches the broker as a new controller.Snapshot
// (onMetadataChange, under the cache's lock, in order): dynamic broker
// configs are applied first, then partitions of deleted topics (or of a
// topic re-created with a new id) are stopped and their logs deleted,
// then every partition whose replicas include this broker gets its state
// and effective config (replica.ApplyLeaderAndISR). Logs on disk that no
// topic gives this broker are kept and reported, never deleted.
//
// # Shutdown (Close; SIGINT/SIGTERM in `qk broker start`)
//
//  1. The fetch purgatory shuts down: waiting fetches are answered now,
//     later ones do not wait.
//  2. The network server stops accepting and reading, answers the
//     requests in flight and closes the connections.
//  3. The controller resigns and the cache stops following; closing the
//     metadata session removes the ephemeral registration.
//  4. The log manager flushes every log and writes the recovery-point,
//     log-start-offset and replication-offset checkpoints and the
//     clean-shutdown marker, so the next start recovers nothing.
package broker
