// Package txn is the pure core of the transaction coordinator, modelled on
// Kafka 3.x's TransactionMetadata, TransactionCoordinator and
// TransactionStateManager (ZooKeeper mode, transaction version 0), with
// KIP-360 (InitProducerId resumes with a producer id and epoch) and
// KIP-890 part 1 (verify-only AddPartitionsToTxn). It also holds the
// __transaction_state record codec and PartitionFor.
//
// Nothing here does I/O, takes locks, starts goroutines or reads a clock:
// time is an argument (nowMs), producer ids are allocated by the caller,
// and every decision comes back as data (a Result) for a thin driver to
// carry out.
//
// # States
//
// A transactional id is in one of Kafka's eight states (ids as written in
// transaction_status). Each may be entered only from the states Kafka's
// validPreviousStates lists:
//
//	state                 entered from                             by
//	0 Empty               Empty, CompleteCommit, CompleteAbort     InitProducerId
//	1 Ongoing             Ongoing, Empty, CompleteCommit,          AddPartitionsToTxn,
//	                      CompleteAbort                            AddOffsetsToTxn
//	2 PrepareCommit       Ongoing                                  EndTxn commit
//	3 PrepareAbort        Ongoing, PrepareEpochFence               EndTxn abort, a fence
//	4 CompleteCommit      PrepareCommit                            markers written
//	5 CompleteAbort       PrepareAbort                             markers written
//	6 Dead                Empty, CompleteCommit, CompleteAbort     id expiration
//	7 PrepareEpochFence   Ongoing                                  InitProducerId during
//	                                                               Ongoing, a timeout
//
// The life of one transaction:
//
//	Empty ─add─► Ongoing ─EndTxn─► PrepareCommit ─markers─► CompleteCommit ─add─► Ongoing …
//	                │                PrepareAbort  ─markers─► CompleteAbort
//	                └─fence─► PrepareEpochFence ─► PrepareAbort (epoch + 1)
//
// PrepareEpochFence is never written to the log: a fence bumps the epoch
// in memory at once, then writes PrepareAbort at the bumped epoch. Dead is never written either: expiry writes a
// tombstone and removes the id.
//
// # Transitions and the driver
//
// Every change is Kafka's two-step transition: a decision prepares a
// TransitMetadata (Kafka's TxnTransitMetadata) and records it as the
// id's pending transition; the driver writes it; AppendDone completes it
// (Metadata.CompleteTransitionTo, which validates as Kafka's
// completeTransitionTo does) or, if the write failed, drops it. While a
// transition is pending, other requests for the id get
// CONCURRENT_TRANSACTIONS. One Partition holds the ids of one
// __transaction_state partition at one coordinator epoch; the driver owns
// it from one goroutine (or under one lock) and must:
//
//  1. Route a request by PartitionFor(id, transaction.state.log.num.partitions):
//     NOT_COORDINATOR if this broker does not lead that partition,
//     COORDINATOR_LOAD_IN_PROGRESS while it is loading; authorization and
//     unknown topics are answered before the core is called.
//  2. Call the decision: InitProducerID, AddPartitions, AddOffsets,
//     VerifyPartitions, EndTxn. If the Result has NeedProducerID, allocate
//     one (ProducerIdManager) and call again with NewProducerID. If it has
//     no Append, answer the client with Err (and ProducerID/ProducerEpoch)
//     now.
//  3. Otherwise write Append.Record() to the partition, uncompressed, with
//     acks=all, outside any lock (other requests go on meanwhile), then
//     call AppendDone(append, produceErr, nowMs) on the Partition that now
//     holds the partition. Its Result answers the client (for
//     OpFenceAbort, the InitProducerId caller gets CONCURRENT_TRANSACTIONS
//     and retries); an Append in it is written again the same way (a
//     completion whose write failed: back off first).
//  4. Send every Result.Markers as WriteTxnMarkers (producer id, epoch,
//     COMMIT/ABORT, coordinator epoch) to the partitions' leaders, batched
//     per broker; resend on disconnection; pass each answer to
//     MarkersWritten. When all partitions are done its Result holds the
//     CompleteCommit/CompleteAbort Append (step 3).
//  5. Every transaction.abort.timed.out.transaction.cleanup.interval.ms,
//     call AbortTimedOutTransactions and carry out each Result (step 3):
//     Ongoing transactions past start + transaction.timeout.ms are aborted
//     with a bumped epoch, so the stalled producer is fenced.
//  6. Every transaction.remove.expired.transaction.cleanup.interval.ms,
//     write the tombstones of ExpireTransactionalIDs (one batch is fine)
//     and call AppendDone for each.
//  7. On becoming leader of a __transaction_state partition at leader epoch
//     E: NewPartition(p, E, cfg), Replay every record from the log start
//     to the end (log a failed record with its offset and go on), then
//     Loaded(nowMs) and carry out its Results (markers of transactions
//     caught in PrepareCommit/PrepareAbort). On losing leadership drop the
//     Partition and its markers in flight; a late AppendDone goes to the
//     successor (or answers NOT_COORDINATOR) and a late marker answer for
//     an old coordinator epoch is ignored.
//
// Fencing errors follow the request version as KafkaApis does: a request
// whose version predates PRODUCER_FENCED (InitProducerId < 4,
// AddPartitionsToTxn, AddOffsetsToTxn and EndTxn < 2) gets
// INVALID_PRODUCER_EPOCH instead.
//
// Where qk departs from Kafka 3.x (each is where Kafka throws an
// IllegalStateException or would leave a transaction stuck): a
// completion write that fails with anything but a lost leadership is
// retried, not abandoned; an unexpected marker error is retried and
// reported; a KIP-360 retry at an exhausted epoch is answered rather than
// thrown on; AddPartitionsToTxn for an id whose first InitProducerId never
// completed is INVALID_PRODUCER_ID_MAPPING; an undecodable record is
// skipped rather than ending the load. Broken invariants never panic: they
// answer UNKNOWN_SERVER_ERROR and come back in Result.Invariant, for the
// driver to log at Error.
//
// # __transaction_state
//
// Compacted, uncompressed, written with acks=all. Keys and values start
// with an int16 version; strings are int16-length, arrays int32-length,
// big-endian (version 1 values are flexible: varint lengths plus tagged
// fields):
//
//	key   v0: version | transactional_id
//	value v0: version | producer_id int64 | producer_epoch int16 |
//	          transaction_timeout_ms int32 | transaction_status int8 |
//	          transaction_partitions [topic | [partition int32]]? (null
//	          when Empty) | transaction_last_update_timestamp_ms int64 |
//	          transaction_start_timestamp_ms int64
//	value v1: the same, flexible, with tagged previous_producer_id (0),
//	          next_producer_id (1), client_transaction_version (2)
//
// A null value is a tombstone. Kafka writes v0 unless transaction.version
// >= 1 (KRaft only), so qk writes v0 and reads both. The last producer
// epoch is not in the log, so a KIP-360 retry that spans a coordinator
// change is fenced, as in Kafka.
package txn
