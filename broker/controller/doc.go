// Package controller is Kafka's ZooKeeper-mode controller, and each
// broker's view of the cluster metadata.
//
// It has two halves, both run by every broker:
//
//   - Controller: the elected controller of the cluster (the broker that
//     created the ephemeral /controller node; /controller_epoch counts the
//     elections). When elected it reads the whole cluster state from the
//     store into its context (Kafka's ControllerContext) and from then on
//     works from it, one event at a time: broker changes (watch on
//     /brokers/ids: dead, new and bounced brokers by the czxid of their
//     registration, the broker epoch), new topics and added partitions
//     from any writer (watches on /brokers/topics and each topic node),
//     deletions asked under /admin/delete_topics, log directory failures
//     announced under /log_dir_event_notification (KIP-112, logdir.go),
//     controlled shutdowns and the topic admin APIs. Each event asks controller/statemachine (the
//     partition and replica state machines, the leader elections, the ISR
//     rules: pure functions) what to do, writes the new partition states
//     with compare-and-set on the state node's version in Multis that also
//     check /controller_epoch's version (so a deposed controller writes
//     nothing), applies them to its context only once written, and ends
//     with one batch of LeaderAndIsr, UpdateMetadata and StopReplica
//     requests per broker (requestBatch), sent over controller/channel:
//     one connection, queue and retry per broker, its own broker served
//     in-process. Other brokers answer the topic admin APIs with
//     NOT_CONTROLLER, which clients handle by asking the controller;
//     auto-created topics are written to the store by any broker, for the
//     controller to pick up, as Kafka's brokers do.
//   - Cache: the broker's copy of the metadata (Kafka's MetadataCache):
//     live brokers, the controller, topics with their ids and partition
//     states from the controller's UpdateMetadata requests; the cluster id
//     and the topic and broker configs from the store (a watch on
//     /config/changes). A change to one partition costs the controller one
//     store write and each broker one request, not a re-read of the store.
//
// # Store layout (Kafka 2.8+/3.x, codecs in broker/metadata)
//
//	/cluster/id                                   {"version":"1","id":"<uuid>"}
//	/controller                   ephemeral       {"version":1,"brokerid":0,"timestamp":"…"}
//	/controller_epoch                             1
//	/brokers/ids/<id>             ephemeral       endpoints, rack, features
//	/brokers/topics/<t>                           {"version":3,"topic_id":"…","partitions":{"0":[0]},…}
//	/brokers/topics/<t>/partitions/<p>/state      {"controller_epoch":1,"leader":0,"leader_epoch":0,"isr":[0],…}
//	/config/topics/<t>                            {"version":1,"config":{"retention.ms":"1000"}}
//	/config/brokers/<id>, /config/brokers/<default>
//	/config/changes/config_change_NNNNNNNNNN      {"version":2,"entity_path":"topics/<t>"}
//	/admin/delete_topics/<t>                      a deletion asked by Kafka's tools
//	/log_dir_event_notification/log_dir_event_NNNNNNNNNN  {"version":1,"broker":0,"event":1}
//	/latest_producer_id_block                     {"version":1,"broker":0,"block_start":"0","block_end":"999"}
//
// A topic is created as Kafka's controller creates it: its config and
// assignment in one Multi, then its partitions' states (nodes created
// with the states) in Multis of up to ~160 partitions, then the brokers
// are told. A partition's later state change is one Multi: the epoch
// check and a compare-and-set of its state node.
//
// # Read your writes through any broker
//
// CreateTopics, CreatePartitions and DeleteTopics answer once every live
// broker has answered the UpdateMetadata that carried the change (Kafka
// waits for its own cache only: DelayedCreatePartitions,
// DelayedDeleteTopics), or once the request's timeout passes
// (REQUEST_TIMED_OUT). The controller numbers each broker's
// UpdateMetadata requests of a term and records the last one answered
// (applied.go); the channel sends one broker's requests in order, so an
// admin change waits for the numbers its batch reached. A broker that
// leaves the live set, or the end of the term, releases the wait. A
// client that then asks any broker's Metadata sees the change.
package controller
