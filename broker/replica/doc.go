// Package replica hosts the partitions of one broker: for each, its log,
// its role (leader or follower), leader epoch, replicas, in-sync replicas
// and high watermark. It is Kafka's ReplicaManager and Partition.
//
// The controller decides roles; the broker hands its decisions to
// ApplyLeaderAndISR (Kafka's LeaderAndIsr request) and StopReplica. A
// leader keeps its replication state in replica/isr (each follower's
// fetch state, the ISR its high watermark counts), records follower
// fetches (FollowerFetch), asks the controller for ISR changes
// (AlterPartition, through Config.AlterISR: shrinks every half of
// replica.lag.time.max.ms, expansions when a follower catches up). A
// follower is fed by replica/fetcher (AppendFetched, Truncate), every
// call checked against the leader epoch it was made in.
//
// # High watermark
//
// The high watermark (HW) is the smallest log end offset (LEO) among the
// in-sync replicas (and a replica whose joining is pending). While the ISR
// is the leader alone, as on a single node, HW = LEO right after every
// append. The HW never moves backwards on a leader; every time it
// advances, and at every append of a partition with followers (they
// long-poll at the log end), the OnHighWatermark hook is called so that
// delayed fetches and acks=all produces waiting on the partition can
// complete. A follower's HW is the leader's, up to its own LEO.
//
//	offsets:  LogStartOffset ... HW ............ LEO
//	          |<-- consumers see -->|<- not yet ->|
//	                                   committed
//
// # Replication throttles
//
// A topic's leader.replication.throttled.replicas and
// follower.replication.throttled.replicas list partition:brokerId pairs
// (or *); a broker applies them to its own replicas only
// (LeaderThrottled, FollowerThrottled), as Kafka does: a leader listed
// there holds what it sends followers out of the ISR under the leader
// quota (the Fetch handler), a follower listed there holds what it
// fetches while behind under the follower quota (replica/fetcher). The
// quotas (replica/quota) are per broker and shared by all its throttled
// partitions. In-sync replicas are never throttled, so acks=all writes
// never wait on a throttle.
//
// # Invariants
//
//   - A Partition's log is open for as long as the Partition is in the
//     Manager; StopReplica removes it from the Manager before the log is
//     closed or deleted.
//   - LeaderEpoch only grows; a LeaderAndISR state with an older epoch is
//     ignored (Kafka's STALE_CONTROLLER_EPOCH / FENCED_LEADER_EPOCH rule).
//   - partition.metadata in the partition directory holds the topic id; a
//     directory whose id differs from the controller's is refused
//     (ErrInconsistentTopicID) rather than served as the new topic.
//
// Locks: Manager.mu guards the partition map; Partition.mu the leader
// state; Partition.hwMu serialises high-watermark updates. See
// broker/LOCKS.md for their order.
package replica
