// Package checkpoint reads and writes the small files of a Kafka log
// directory: offset checkpoints, leader-epoch checkpoints,
// partition.metadata, meta.properties, the clean-shutdown marker and
// producer-state snapshots. Files are byte-compatible with Apache Kafka's,
// so a log dir can move between Kafka and qk in either direction.
//
// All I/O goes through vfs.FS. Every write goes through
// vfs.WriteFileAtomic (write name.tmp, fsync, rename over name, fsync the
// directory), so after a crash a file holds its old content or its new
// content, never a torn mix. Decoding is strict: a file that is not exactly
// what Kafka would write is refused with a *CorruptError naming the file,
// the line (for text formats) and what is wrong; its Unwrap gives one of
// ErrUnsupportedVersion, ErrCountMismatch, ErrMalformed, ErrChecksum or
// ErrTruncated. Each Read function has a Decode twin on bytes, and each
// Write function an Encode twin, for the inspect tools and for fuzzing.
//
// A missing file is never silently "empty": Read functions return an error
// matching fs.ErrNotExist and the caller decides what absence means. The
// exception is ReadCleanShutdown, whose whole purpose is to report
// presence.
//
// # Offset checkpoints
//
// recovery-point-offset-checkpoint, replication-offset-checkpoint,
// log-start-offset-checkpoint and cleaner-offset-checkpoint share Kafka's
// text CheckpointFile layout, "\n" line endings:
//
//	+----------------------------+
//	| 0                          |  version, always 0
//	| 3                          |  number of entry lines
//	| invoice 0 90867            |  topic SP partition SP offset
//	| invoice 2 90808            |
//	| __consumer_offsets 17 1    |
//	+----------------------------+
//
// A 0-byte file means no entries (Kafka creates checkpoint files empty).
// Kafka writes entries in hash-map order; qk sorts by topic, partition.
//
// # Leader-epoch checkpoint
//
// <partition dir>/leader-epoch-checkpoint, same layout, ascending epochs:
//
//	+---------+
//	| 0       |  version
//	| 2       |  count
//	| 0 0     |  epoch SP startOffset
//	| 2 7     |  (epoch 1 never wrote a record)
//	+---------+
//
// # partition.metadata
//
// <partition dir>/partition.metadata, no final newline; the topic ID is
// the 16-byte UUID in URL-safe base64 without padding (22 characters). The
// zero UUID is invalid. Kafka 2.8 could leave the file empty
// (ErrNoTopicID).
//
//	version: 0\n
//	topic_id: vqSmEBIuSwm33bh8npzjMw
//
// # meta.properties
//
// java.util.Properties.store output: an empty comment, a comment with the
// write time in java.util.Date.toString form, then keys in any order.
//
//	#
//	#Sat Jun 15 15:20:35 IST 2024
//	broker.id=1                       version 0 (ZooKeeper mode)
//	version=0
//	cluster.id=me8yH9c8R6mtXeFUcVEoWQ
//
// KRaft dirs have version=1, node.id instead of broker.id, a required
// cluster.id and, from Kafka 3.7, directory.id.
//
// # .kafka_cleanshutdown
//
// Present only between a clean shutdown and the next start-up. Kafka 3.6
// and earlier write it empty; 3.7+ write one line of JSON, no newline:
//
//	{"version":0,"brokerEpoch":42}
//
// # Producer-state snapshot (<offset>.snapshot)
//
// Binary, big-endian; the CRC-32C (Castagnoli) covers everything after the
// CRC field. 10 + 46*count bytes exactly.
//
//	 0       2           6           10
//	+-------+-----------+-----------+------------------------------+
//	|version|  crc32c   |   count   |  count x 46-byte entries     |
//	| int16 |  uint32   |   int32   |                              |
//	|  = 1  |  of [6,end)           |                              |
//	+-------+-----------+-----------+------------------------------+
//
//	entry:
//	 0              8      10         14             22          26
//	+--------------+------+----------+--------------+-----------+
//	| producerId   |epoch | lastSeq  | lastOffset   |offsetDelta|
//	| int64        |int16 | int32    | int64        | int32     |
//	+--------------+------+----------+--------------+-----------+
//	 26             34         38                  46
//	+--------------+----------+-------------------+
//	| timestamp    |coordEpoch| currentTxnFirstOff|
//	| int64        | int32    | int64 (-1 = none) |
//	+--------------+----------+-------------------+
//
// An empty snapshot is the 10 bytes 00 01 48 67 4b c7 00 00 00 00.
package checkpoint
