// Package group is the group coordinator: the classic rebalance protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed offsets, and
// their storage in the compacted __consumer_offsets topic with Kafka's
// exact record schemas.
//
// # State machine
//
// Group (group.go) is pure: no goroutines and no clock. Time is an
// argument, Deadline says when the group next needs a Tick, and answers
// to JoinGroup and SyncGroup go through callbacks, possibly during a later
// call (another member's request or a Tick). Coordinator (coordinator.go)
// owns the timers and the storage.
//
//	           first join (initial delay)
//	┌───────┐ ─────────────────────────► ┌────────────────────┐
//	│ Empty │                            │ PreparingRebalance │◄─────────┐
//	└───────┘ ◄───────────────────────── └────────────────────┘          │
//	  │  ▲      join phase ends, no members   │ all joined or            │
//	  │  │                                    │ rebalance timeout        │ join (leader or new
//	  │  │                                    ▼                          │ protocols), leave,
//	  │  │  last member leaves  ┌─────────────────────┐ member expires,  │ session expiry,
//	  │  └───────────────────── │ CompletingRebalance │ ─────────────────┤ sync timeout
//	  │                         └─────────────────────┘                  │
//	  │                                   │ leader's SyncGroup           │
//	  │                                   ▼                              │
//	  │                              ┌────────┐                          │
//	  │                              │ Stable │ ─────────────────────────┘
//	  │                              └────────┘
//	  │ DeleteGroups, or offsets expired
//	  ▼
//	┌──────┐
//	│ Dead │
//	└──────┘
//
// Invariants:
//   - A generation's assignments come only from its leader's SyncGroup;
//     every member of the generation gets them at once and the group is
//     Stable. Requests of another generation get ILLEGAL_GENERATION.
//   - A member waiting on a join or sync answer does not expire; others
//     expire session.timeout after their last heartbeat.
//   - A static member (group.instance.id) maps to exactly one member id;
//     a restart replaces the id, keeps the assignment, and rebalances
//     only if the selected protocol would change. The old id is fenced
//     (FENCED_INSTANCE_ID).
//   - JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED
//     with its id; the id is pending for one session timeout.
//
// # __consumer_offsets
//
// A group lives in partition abs(javaStringHashCode(group)) %
// offsets.topic.num.partitions (abs(MinInt32) = 0), led by its
// coordinator. Keys and values start with an int16 version; strings are
// int16-length, bytes int32-length, big-endian:
//
//	OffsetCommit  key v1: version | group | topic | partition int32
//	              value v3: version | offset int64 | leaderEpoch int32 |
//	                        metadata | commitTimestamp int64
//	              value v1 (explicit retention): version | offset |
//	                        metadata | commitTimestamp | expireTimestamp
//	GroupMetadata key v2: version | group
//	              value v3: version | protocolType | generation int32 |
//	                        protocol? | leader? | currentStateTimestamp int64 |
//	                        [memberId | groupInstanceId? | clientId |
//	                         clientHost | rebalanceTimeout int32 |
//	                         sessionTimeout int32 | subscription bytes |
//	                         assignment bytes]
//
// A null value is a tombstone (offset or group deleted). Commits are
// appended (acks=all) before the OffsetCommit answer. When this broker
// becomes leader of a partition the coordinator replays it, latest record
// per key winning, and answers COORDINATOR_LOAD_IN_PROGRESS until done.
// Offsets of Empty groups expire after offsets.retention.minutes from
// when the group became Empty (from the commit for groups that never had
// members); an Empty group left without offsets is removed.
package group
