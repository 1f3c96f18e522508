// Package controller keeps the cluster's metadata in the metadata store
// under Kafka's ZooKeeper paths, and gives each broker its view of it.
//
// It has two halves, both run by every broker:
//
//   - Controller: the elected controller of the cluster (the broker that
//     created the ephemeral /controller node; /controller_epoch counts the
//     elections). Only it creates and deletes topics and adds partitions,
//     writing each change with one atomic Multi. Other brokers answer
//     those requests with NOT_CONTROLLER, which clients handle by asking
//     the controller (kadm sends them there anyway).
//   - Cache: the broker's copy of the metadata (Kafka's MetadataCache),
//     read from the store and kept current by watches: live brokers,
//     topics with their ids, assignments and partition states, topic and
//     broker config overrides, the controller id and the cluster id. Each
//     change calls the broker's OnChange hook with the old and the new
//     Snapshot, from which it opens and closes the partitions it hosts.
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
//	/latest_producer_id_block                     {"version":1,"broker":0,"block_start":"0","block_end":"999"}
//
// A topic is created in one Multi (its config, assignment, partition
// nodes and states), so a watcher never sees a topic without states;
// likewise for new partitions (assignment set with a version check) and
// deletion (everything removed at once).
//
// # Synchronous view on the broker that made a change
//
// A watch fires after the store committed, on its own goroutine. So that
// a client that created a topic can produce to it at once, the broker
// that made a change calls Cache.Sync before it answers: Sync re-reads the
// store and runs OnChange under the cache's lock; the watch that fires
// later finds nothing new. Other brokers catch up through their watches.
//
// Partition-state changes that come without a change of the topic node
// (leader elections, ISR changes) are for the replication issue, which
// will watch the state nodes or send UpdateMetadata.
package controller
