// Package log stores partitions the way Apache Kafka does, byte for byte,
// so a Kafka log directory can be served by qk and the other way round.
//
// A Log is one partition directory, <topic>-<partition> (the topic may
// contain '-': the partition is after the last one). It is a list of
// segments ordered by base offset; only the last, the active segment, is
// appended to. A Manager owns every Log of the broker's log directories.
//
// # Files of a segment
//
// Every file of a segment is named by the segment's base offset, zero
// padded to 20 digits: 00000000000000030626.log, .index, .timeindex and,
// once the segment holds an ABORT marker, .txnindex.
//
//	.log: record batches back to back (format in broker/record)
//
//	pos 0                          pos P                            size
//	+-----------------------------+-------------------------+-...-+
//	| batch: base 30626..30629    | batch: base 30630..30700 | ... |
//	| 8 baseOffset | 4 length |…  |                          |     |
//	+-----------------------------+-------------------------+-...-+
//
//	.index: 8-byte entries, big-endian, strictly increasing
//
//	+----------------------+----------------------+-----------------+
//	| relOffset int32 (74) | position int32 (P)   | ... | 0 0 0 ... |
//	+----------------------+----------------------+-----------------+
//	  offset = base + relOffset = last offset of the batch (leader,
//	  recovery) or of the appended chunk (follower) that starts at P.
//	  Zero-filled to segment.index.bytes/8*8 while the segment is
//	  active, trimmed to the entries when it rolls or closes.
//
//	.timeindex: 12-byte entries, both columns increasing
//
//	+---------------------+-----------------------+
//	| timestamp int64     | relOffset int32       |  "max timestamp so far,
//	+---------------------+-----------------------+   and the last offset of
//	                                                  the batch carrying it"
//	  Preallocated to segment.index.bytes/12*12; one slot is kept for the
//	  entry appended at roll and close, so a closed segment's last entry is
//	  its largest timestamp (what retention.ms uses).
//
//	.txnindex: 34-byte entries, one per aborted transaction whose ABORT
//	marker is in this segment, in marker order (txnindex.go)
//
//	+-----------+------------+-------------+------------+------------------+
//	| version   | producerId | firstOffset | lastOffset | lastStableOffset |
//	| int16 = 0 | int64      | int64       | int64 =    | int64: oldest    |
//	|           |            | (1st data)  | marker     | other open txn's |
//	|           |            |             |            | first, or last+1 |
//	+-----------+------------+-------------+------------+------------------+
//	  Not preallocated; the file exists only while it has entries. Each
//	  entry is written when its marker is appended (the flush fsyncs it).
//
// Index entries are written with Kafka's rule (LogSegment.append): if more
// than index.interval.bytes were appended since the last entry, add the
// entry (last offset of this append, position of this append) before this
// append is counted. Recovery rebuilds the same entries from the .log (if
// validBytes − lastEntryPosition > interval), which reproduces the indexes
// Kafka wrote (see fixture_test.go). Entries are kept in memory; the files
// are written in batches of up to 4 KiB, because only a flushed or closed
// index must be complete: an unflushed active index is rebuilt after a
// crash.
//
// A segment keeps one file descriptor open, its .log, as Kafka keeps one
// FileChannel per segment (its indexes are memory-mapped, their
// descriptors closed). An index opens its file by name for each write-out,
// truncation, resize or flush and closes it before the operation returns;
// a flush writes the buffered entries and fsyncs through one descriptor,
// and skips an index unchanged since its last fsync. So a broker needs
// about one descriptor per segment (plus sockets), not three: measured,
// 200 segments of one partition held 600 descriptors before and 200 now.
//
// Other files of the partition directory: leader-epoch-checkpoint (written
// atomically on every change of the epoch cache), *.deleted (segments
// removed by retention or truncation: renamed, then removed after
// file.delete.delay.ms so that in-flight reads of their FileRegions still
// work; removed at start-up), *.cleaned and *.swap (log cleaner, handled at
// start-up as Kafka does). The log dir holds the recovery-point,
// log-start-offset and replication-offset checkpoints and the clean-shutdown
// marker (package broker/log/checkpoint).
//
// # Producer state
//
// Idempotent producers (batches with a producer id) are deduplicated per
// partition as Kafka does (producerstate.go): for each producer id the log
// keeps the epoch, the last five batches' sequence and offset ranges, the
// coordinator epoch of its last transaction marker and the first offset
// of its open transaction, if any.
// Append checks a batch against them before it gets offsets: a retry of one
// of those five is answered with its original offsets and not written, an
// older epoch is fenced, a sequence gap refused. The state is persisted in
// <offset>.snapshot files (format in broker/log/checkpoint), written at
// each roll and at Close:
//
//	00000000000000000038.snapshot: the state implied by offsets [0, 38)
//
//	+---------+---------+---------+------------------------------------+
//	| version | crc32c  | count n | n × 46-byte entry: producerId,     |
//	| int16=1 | [6,end) | int32   | epoch, lastSeq, lastOffset,        |
//	|         |         |         | offsetDelta, timestamp,            |
//	|         |         |         | coordinatorEpoch, txnFirstOffset   |
//	+---------+---------+---------+------------------------------------+
//
// Open loads the newest trusted snapshot and replays the batch headers from
// its offset to the log end, so the state is always what the log (after
// recovery) implies; truncation does the same from the snapshots that
// remain below the new end (producersnap.go has the rules).
//
// # Transactions
//
// A transactional batch of a producer without an open transaction opens
// one at its base offset; a control batch with a COMMIT or ABORT marker
// (AppendMarker on the leader, replicated on followers) closes it
// (txnstate.go). The last stable offset is min(first offset of the oldest
// transaction that is open or whose marker is not yet below the high
// watermark, high watermark): a read_committed fetch (ReadCommitted) reads
// below it and gets, from the same view, the aborted transactions that
// overlap what it read, from the .txnindex files (txn.go). Every path that
// puts a batch into the log applies it to the producer state the same
// way, batch by batch (leader append, follower append, replay at load or
// truncation), so a follower's state and .txnindex equal the leader's and
// a new leader knows every open transaction. The replay also makes the
// .txnindex entries of the markers it passes equal to what it derives, so
// recovery, truncation and a damaged index leave the indexes the log
// implies.
//
// # Invariants
//
//   - Segment base offsets increase; every offset in a segment is ≥ its base
//     and below the next segment's base; offset − base fits an int32.
//   - A .log holds only whole batches; batch offsets strictly increase.
//   - Every offset-index entry points at the start of a batch, and its
//     offset is ≥ that batch's last offset and < the next entry's; no entry
//     points past the end of the .log.
//   - Time-index timestamps strictly increase; offsets never decrease.
//   - LogStartOffset ≤ HighWatermark ≤ LogEndOffset, and
//     RecoveryPoint ≤ LogEndOffset: everything below the recovery point is
//     fsynced (data, indexes, directory entries). A log Open creates starts
//     with nothing fsynced, not even its directory: the first flush syncs
//     partition.metadata, the leader-epoch checkpoint, the directory and
//     the log dir before the recovery point moves (so creating 10,000
//     partitions costs no fsync in the request).
//   - The log always has at least one segment; the active segment is never
//     deleted by retention (an empty one is rolled first).
//   - Leader-epoch entries increase in both epoch and start offset and
//     start below LogEndOffset.
//   - Producer snapshots are named at or below LogEndOffset; the producer
//     state equals the newest snapshot plus the log's idempotent batches
//     and markers from its offset on.
//   - LogStartOffset ≤ LastStableOffset ≤ HighWatermark. Every .txnindex
//     entry's lastOffset is an ABORT marker of its segment, entries
//     increase in lastOffset, and the open transactions are those whose
//     first offset is above their producer's last marker.
//
// # Recovery
//
// After a clean shutdown (marker present) nothing is scanned: indexes are
// trusted (sanity-checked when first loaded, rebuilt if they fail) and the
// log end offset comes from the batches after the active segment's last
// index entry. Otherwise every segment from the one holding the recovery
// point on is recovered: each batch is validated (structure, CRC-32C,
// increasing offsets), the .log is cut at the first invalid or torn batch,
// later segments are removed, the cut is logged at Warn, and both indexes
// are rebuilt.
//
// Gaps between segments are legitimate (a compacted log; a follower rolls
// at the first offset of a fetched chunk when its leader's offsets jump),
// and Kafka's recovery has no rule about them. But a segment ending below
// the next one's base can also be a crash hole: segments are created
// before the previous one's tail is durable, and the page cache writes
// files back in any order. A gap is therefore kept only when the producer
// snapshot named after the next segment's base exists: the flush writes
// it (atomically) only after fsyncing every rolled segment below it, so it
// proves them complete; the recovery point is raised to that base. Without
// the proof (the snapshot write failed, or Apache Kafka wrote the
// directory: it writes the snapshot before the flush) the log ends at the
// gap, as before.
//
// A failed write or fsync fails the Log (ErrFailed, KAFKA_STORAGE_ERROR):
// after a failed fsync the kernel may have dropped the dirty pages, so a
// retried fsync proves nothing. The recovery point stays below the
// unsynced data, writes and flushes are refused, Close returns the failure
// and the Manager writes no clean-shutdown marker for the log dir, so the
// next start recovers the log.
//
// # File regions
//
// Read returns a region of a segment's open .log (no copy). A region from
// ReadRetained (what Fetch sends with sendfile) holds the file open until
// Region.Release: a deleted or closed segment's .log is closed only when
// file.delete.delay.ms has passed (or the log closed) and no region holds
// it, so a response queued for longer never sends from a descriptor number
// that was closed and reused for another file.
//
// # Compaction
//
// Logs with cleanup.policy compact (or compact,delete) are cleaned by
// cleaner.go (Log.Compact; the Manager's background cleaner and CleanNow
// in cleanermanager.go): the latest record of each key is kept at its
// original offset, tombstones carry a KIP-534 delete horizon from their
// first clean and are dropped at the first clean after it, the batches
// of aborted transactions are removed and transaction markers are kept
// until their transaction has no batch left and then for
// delete.retention.ms (cleaner_txn.go, Kafka's rules), and cleaned
// segments replace the old ones through <base>.log.cleaned → .swap →
// final names, so a crash at any step leaves the old or the new version.
// The first dirty offset of each compacted log is kept in the log dir's
// cleaner-offset-checkpoint. Invariants added by compaction:
//
//   - Offsets may have holes and a segment's first batch may start above
//     its base offset, but a cleaned segment still ends where the next
//     segment starts (its last batch is kept, empty if need be).
//   - A batch with attribute bit 6 holds its delete horizon in
//     baseTimestamp; record timestamps are unchanged.
//   - A marker's .txnindex entry is dropped with the last batch of its
//     aborted transaction; the marker itself follows later.
//
// # Concurrency
//
// Log methods are safe for concurrent use. Appends, truncation, retention
// and roll hold the Log's write lock; Read and lookups hold the read lock.
// fsync runs without the lock so produce is not stalled by a flush. Lock
// order is in broker/LOCKS.md.
package log
