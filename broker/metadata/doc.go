// Package metadata is the broker's port to its coordination store: the
// Store interface, with ZooKeeper's semantics, and Kafka's ZooKeeper
// layout on top of it.
//
// # Store
//
// A Store is one session on a tree of nodes. Each node has data, a Stat
// (versions and zxids) and children; it is persistent or ephemeral
// (deleted when its session ends), and may be created Sequential (a
// 10-digit counter from the parent's CVersion is appended to its name).
// Set and Delete take an expected version (AnyVersion for none), Multi
// applies several operations atomically, and Watch registers one-shot
// watches. The controller is written against this interface only, so the
// same code runs on:
//
//   - embedded: in-process, durable in one directory of the data dir; the
//     default for a single node and for in-process multi-broker tests,
//     where every broker opens its own Session of one store;
//   - zkstore: ZooKeeper through go-zookeeper/zk (qk broker start
//     --zookeeper), so qk brokers can share a cluster's ZooKeeper layout.
//
// Every implementation passes storetest.RunConformance. Helpers that only
// need the interface are functions, not methods: EnsurePath, CreateAll.
//
// # Kafka's layout
//
// The paths, codecs and helpers in kafka.go and kafkajson.go reproduce
// what ZooKeeper-mode Kafka (2.x, 3.x) keeps in ZooKeeper, so that a qk
// broker reads and writes the same nodes and the same JSON:
//
//	/
//	├── cluster/id                       {"version":"1","id":"<22-char uuid>"}
//	├── controller                 (E)   {"version":1,"brokerid":0,"timestamp":"<ms>"}
//	├── controller_epoch                 3                  (plain text)
//	├── brokers/
//	│   ├── ids/<id>               (E)   BrokerRegistration v5; Czxid = broker epoch
//	│   ├── seqid                        no data; its version generates broker ids
//	│   └── topics/<topic>               TopicAssignment v3 (partitions, topic_id, ...)
//	│       └── partitions/<p>/state     PartitionState; its version = partition epoch
//	├── config/
//	│   ├── topics/<topic>               {"version":1,"config":{"k":"v",...}}
//	│   ├── brokers/<id>|<default>       same shape
//	│   ├── clients/ users/ ips/         same shape (quotas, credentials)
//	│   └── changes/config_change_NNNNNNNNNN  (S) {"version":2,"entity_path":"topics/t"}
//	├── admin/delete_topics/<topic>      no data: deletion requested
//	├── latest_producer_id_block         {"version":1,"broker":0,"block_start":"0","block_end":"999"}
//	├── isr_change_notification/  log_dir_event_notification/  consumers/
//	└── feature                          (written by Kafka 2.7+ controllers)
//
//	(E) ephemeral, (S) sequential
//
// Unmarshal functions accept every version Kafka wrote (broker
// registrations v1 to v5, topic assignments v1 to v3, config change
// notifications v1 and v2, /controller v1 and v2) and ignore unknown
// fields; Marshal functions write the current version with Kafka's field
// order. Key order inside maps is Jackson's hash order in Kafka and sorted
// here: compare semantics, not bytes.
package metadata
