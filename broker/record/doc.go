// Package record reads and writes Kafka's on-disk and on-wire record
// formats: RecordBatch v2 (magic 2), read-only legacy messages (magic 0 and
// 1), control records and the four compression codecs. It is pure byte
// manipulation with no I/O, shared by the log, the API handlers and the
// inspection tools.
//
// # Framing shared by every magic
//
// A log is entries back to back. Every entry begins with the same 12-byte
// log overhead, and byte 16 is always the magic, so a reader looks at the
// first 17 bytes (HeaderPrefixSize) before it knows what bytes 12..15 mean:
//
//	 0               8           12          16  17
//	+---------------+-----------+-----------+---+------------------
//	| offset int64  | size int32|  (magic-  | m | ... size-5 bytes
//	|               |           | specific) |   |
//	+---------------+-----------+-----------+---+------------------
//	total entry size = 12 + size;  size >= 14 (MinMessageOverhead)
//
// Iterator walks such a sequence with FileLogInputStream's rules: a tail of
// 17 bytes or less, or an entry whose size runs past the end, ends the walk
// quietly (a torn write); a size below 14 is corruption.
//
// # RecordBatch v2 header (61 bytes, big-endian)
//
//	 0                   8           12                  16  17
//	+-------------------+-----------+-------------------+---+---------------+
//	| baseOffset int64  | batchLen  | partitionLeader-  | 2 | crc uint32    |
//	|                   | int32     | Epoch int32       |   | (CRC-32C)     |
//	+-------------------+-----------+-------------------+---+---------------+
//	 21          23                  27                          35
//	+-----------+-------------------+---------------------------+
//	| attrs     | lastOffsetDelta   | baseTimestamp int64       |
//	| int16     | int32             | (or deleteHorizonMs)      |
//	+-----------+-------------------+---------------------------+
//	 35                          43                          51
//	+---------------------------+---------------------------+
//	| maxTimestamp int64        | producerId int64          |
//	+---------------------------+---------------------------+
//	 51          53                  57                  61
//	+-----------+-------------------+-------------------+--------------------+
//	| producer- | baseSequence      | recordsCount      | records ...        |
//	| Epoch i16 | int32             | int32             | (compressed whole  |
//	|           |                   |                   |  when codec != 0)  |
//	+-----------+-------------------+-------------------+--------------------+
//
//	attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
//	            bit 3 timestampType (LogAppendTime), bit 4 transactional,
//	            bit 5 control, bit 6 hasDeleteHorizonMs
//
// The CRC covers bytes 21 to the end, so baseOffset and
// partitionLeaderEpoch can be rewritten in place without re-checksumming;
// attributes and maxTimestamp (LogAppendTime) cannot.
//
// # Record (inside the records section)
//
//	+-----------+-------+--------------+-------------+--------+-----+
//	| length    | attrs | timestamp-   | offsetDelta | keyLen | key |
//	| varint    | int8  | Delta varlong| varint      | varint |     |
//	+-----------+-------+--------------+-------------+--------+-----+
//	+----------+-------+-------------+----------------------------------+
//	| valueLen | value | headerCount | headers: keyLen varint, key,     |
//	| varint   |       | varint      |   valueLen varint, value  (x N)  |
//	+----------+-------+-------------+----------------------------------+
//	varint/varlong = zigzag + base-128, at most 5/10 bytes; length -1 = null
//	(key, value, header value); header keys are never null.
//
// # Legacy message (magic 0 and 1)
//
//	 0               8           12          16  17      18 (v1 only)   26
//	+---------------+-----------+-----------+---+-------+--------------+
//	| offset int64  | size int32| crc uint32| m | attrs | timestamp i64|
//	+---------------+-----------+-----------+---+-------+--------------+
//	+------------------+-----+--------------------+-------+
//	| keyLen int32(-1) | key | valueLen int32(-1) | value |
//	+------------------+-----+--------------------+-------+
//	crc = CRC-32 (IEEE) from the magic byte to the end.
//
// A compressed legacy batch is one wrapper message whose value is the
// compressed bytes of a whole inner message set; see LegacyMessage.Inner for
// the offset and timestamp rules.
//
// # Invariants
//
//   - A batch's total size is 12 + batchLength and at least 61 bytes; a
//     legacy message's is 12 + size, at least 26 (magic 0) or 34 (magic 1).
//   - recordsCount is the uncompressed record count, 0 <= count <=
//     lastOffsetDelta + 1 (compaction removes records but keeps
//     lastOffsetDelta); a batch's last offset is baseOffset+lastOffsetDelta.
//   - Records fill the (decompressed) records section exactly: each record
//     consumes exactly its length, there are exactly recordsCount of them,
//     and no bytes follow.
//   - A control batch holds one control record: key = version int16 +
//     type int16; for ABORT/COMMIT the value is version int16 +
//     coordinatorEpoch int32.
//   - Views (Batch, Record, LegacyMessage, Entry) alias their input and
//     never copy; decompressed data lives in a fresh buffer owned by the
//     decoded records. Every length read from input is checked against the
//     bytes remaining before it is used, and decompressed output is capped
//     at MaxDecompressedSize, so corrupt input yields a *CorruptError and
//     never a panic or an outsized allocation.
package record
