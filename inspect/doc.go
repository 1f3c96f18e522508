// Package inspect prints Kafka's on-disk files the way Kafka 3.3+'s
// kafka-dump-log.sh (kafka.tools.DumpLogSegments) does, so operators can
// diff qk's output against Kafka's, and adds what that tool lacks: the
// log-directory checkpoint files, JSON lines, and a non-zero result for
// damaged data. It backs `qk dump-segment`.
//
// # Files and lines
//
// The kind comes from the file name, as in Kafka:
//
//	.log         Dumping <file> / Log starting offset: <base>
//	             baseOffset: B lastOffset: L count: N baseSequence: S lastSequence: T producerId: P
//	             producerEpoch: E partitionLeaderEpoch: PLE isTransactional: X isControl: X
//	             deleteHorizonMs: OptionalLong.empty position: POS CreateTime: MAXTS size: SIZE
//	             magic: 2 compresscodec: none crc: CRC isvalid: true          (one line)
//	             offset: O position: POS CreateTime: TS size: … magic: 0|1 … (magic 0/1)
//	             | offset: O CreateTime: TS keySize: K valueSize: V sequence: Q headerKeys: [a,b]
//	               [endTxnMarker: COMMIT coordinatorEpoch: C | controlType: NAME(id)]
//	               [key: …] [payload: …]                                    (deep iteration)
//	             Found N invalid bytes at the end of <name>                 (torn tail)
//	.index       offset: O position: P       (<file> is empty. for no entries)
//	.timeindex   timestamp: T offset: O
//	.snapshot    producerId: … producerEpoch: … coordinatorEpoch: … currentTxnFirstOffset: …
//	             lastTimestamp: … firstSequence: … lastSequence: … lastOffset: … offsetDelta: … timestamp: …
//	.txnindex    version: 0 producerId: P firstOffset: F lastOffset: L lastStableOffset: S
//	.checkpoint  (KRaft snapshot) Snapshot end offset: O, epoch: E, then as .log
//
// Files Kafka's tool ignores ("Ignoring unknown file"), in qk's own format:
//
//	recovery-point-offset-checkpoint, replication-offset-checkpoint,
//	log-start-offset-checkpoint, cleaner-offset-checkpoint
//	             topic: T partition: P offset: O   (sorted by topic, partition)
//	leader-epoch-checkpoint
//	             epoch: E startOffset: S           (file order)
//	partition.metadata
//	             topicId: <URL-safe base64 UUID>
//	meta.properties
//	             version: 0 broker.id: N cluster.id: C   (KRaft: node.id, directory.id)
//	.kafka_cleanshutdown
//	             brokerEpoch: E                    (-1: the empty file of Kafka <= 3.6)
//
// A checkpoint or index with no entries prints "<file> is empty.".
//
// # JSON lines
//
// With Options.JSON every batch, record and entry is one JSON object on its
// own line, with "file" (the name as given) and "type" (batch, record,
// offsetIndexEntry, timeIndexEntry, producerSnapshotEntry, abortedTxn,
// checkpointEntry, leaderEpochEntry, partitionMetadata, metaProperties,
// cleanShutdown, sanityCheck, empty, invalidBytes) first, then the text
// line's fields under Kafka's names in the same order: baseOffset,
// lastOffset, count, …, compresscodec, crc, isvalid. The text line's
// "CreateTime: X" becomes "timestampType":"CreateTime","maxTimestamp":X (a
// record's "timestamp":X), OptionalLong fields are a number or null, and
// --offsets-decoder keys and payloads are embedded as JSON objects. The
// Dumping and Log starting offset lines are not repeated.
//
// # Verification reports and problems
//
// As in Kafka, index entries are checked against the .log next to them and
// deep iteration watches for offset gaps; the findings are printed to the
// error stream after the last file (Mismatches in :<path>, Found timestamp
// mismatch in :<path>, The following indexed offsets are not found in the
// log., Non-consecutive offsets in <path>). Healthy data produces them
// (follower-built indexes, Kafka < 3.8 time indexes, compacted logs), so
// they are reports only.
//
// Damage is a Problem, printed at once as "Error: <reason>" after
// everything readable, and returned from Dump as an *Error: a corrupt or
// torn batch ("corrupt batch at position P of F: record size 0 smaller than
// minimum record overhead (14)"), a CRC mismatch (after the batch line's
// isvalid: false, one line per file), an index with a partial entry, an
// index whose .log is missing, a corrupt snapshot or checkpoint, an
// unreadable file. Kafka's tool would print a stack trace for most of
// these, or nothing at all for a torn tail and a CRC mismatch.
//
// Decoding of batches, records, legacy messages, compression and the
// checkpoint formats is broker/record's and broker/log/checkpoint's; this
// package only walks and prints. The exceptions are small and print-only:
// the 34-byte .txnindex entry and the __consumer_offsets schemas
// (offsets.go).
package inspect
