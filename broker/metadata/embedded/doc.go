// Package embedded is an in-process metadata.Store: a ZooKeeper-like tree
// in memory, made durable by a log and a snapshot in one directory. It
// backs single-node mode (`qk broker start` with no --zookeeper) and
// in-process multi-broker tests, where every broker gets its own Session
// of one shared Store.
//
// Semantics are ZooKeeper's (see metadata.Store and storetest): every
// committed change gets the next zxid; a Multi is one change with one
// zxid; sequential names count the parent's child creations (its CVersion
// counts deletions too, as ZooKeeper reports it); watches are
// one-shot. Ephemeral nodes live in memory only: they vanish when their
// session ends and on restart, as after a ZooKeeper session expiry.
//
// # Files
//
// The directory (a broker uses <log.dirs[0]>/__qk_metadata) holds two
// files. All integers are big-endian; CRCs are CRC-32C (Castagnoli).
//
//	metadata.log: one record per committed change, appended and fsynced
//	before the change is acknowledged or its watches fire
//
//	+-----------+-----------+--------------------------------------------+
//	| len   u32 | crc   u32 | body (len bytes)                           |
//	+-----------+-----------+--------------------------------------------+
//	  crc covers the 4 length bytes and the body
//
//	body:
//	+---------+----------+----------+-------+----------+-----+----------+
//	| type u8 | zxid i64 | time i64 | n u32 | effect 1 | ... | effect n |
//	+---------+----------+----------+-------+----------+-----+----------+
//	  type is 1 (a committed change); time is the commit time in ms
//
//	effect:
//	+---------+----------------------+----------------------------------+
//	| kind u8 | path (u32 len+bytes) | put (1):    stat | data          |
//	|         |                      | stat (2):   stat                 |
//	|         |                      | delete (3): nothing              |
//	+---------+----------------------+----------------------------------+
//	stat: czxid i64 | mzxid i64 | pzxid i64 | ctime i64 | mtime i64 |
//	      version i32 | cversion i32                      (48 bytes)
//	data: u32 len, bytes
//
//	metadata.snapshot: the persistent tree at one zxid, written to
//	metadata.snapshot.tmp, fsynced and renamed (vfs.WriteFileAtomic)
//
//	+--------+--------+----------+---------+---------------------+---------+
//	| "QKMS" | ver u8 | zxid i64 | n u32   | n nodes, pre-order  | crc u32 |
//	|        |  (1)   |          |         | path, stat, data    |         |
//	+--------+--------+----------+---------+---------------------+---------+
//	  crc covers everything before it; "/" is the first node
//
// Records hold effects, the resulting state of each persistent node that
// a change touched, not the requests: replay re-runs no logic, so
// sequential names, versions and zxids come back exactly. Changes to
// ephemeral nodes are logged only for their effect on persistent parents
// (CVersion, Pzxid) and for their zxid, so that zxids (broker epochs, in
// Kafka's use) never go backwards across a restart.
//
// After every WithSnapshotEvery records (or log bytes), and at Close, the
// store writes a snapshot and truncates the log to zero bytes.
//
// # Recovery
//
// Open removes a stale metadata.snapshot.tmp, loads the snapshot (a bad
// checksum is a *CorruptError: it was renamed into place whole, so damage
// means the disk lost data), then replays log records with a zxid above
// the snapshot's (a crash between the snapshot's rename and the log's
// truncation leaves older records behind). The first bad record ends the
// log:
//
//   - a header or record that runs past the end of the file is a torn
//     write of an unacknowledged change: it is cut off;
//   - a record that fails its CRC, or whose length is impossible, is cut
//     off as well if nothing but zeros follows it (a crash can leave
//     allocated but unwritten blocks);
//   - otherwise the damage is in acknowledged data, and Open returns a
//     *CorruptError naming the file and offset rather than drop changes
//     silently. So does a record that passes its CRC but does not decode
//     or replay (zxid not increasing, parent missing).
//
// A cut is logged at Warn with the offset and the number of bytes lost.
//
// # Invariants
//
//   - A change is acknowledged, and its watches fire, only after its record
//     is fsynced; every acknowledged change survives a crash, and no
//     unacknowledged change is ever partly visible after one.
//   - Record zxids strictly increase; the snapshot's zxid is at least that
//     of every record it includes.
//   - Every node's parent exists; ephemeral nodes have no children and
//     never reach the files.
//   - If a log write or sync fails, the change is undone in memory and the
//     store refuses every later write (reads still work) until it is
//     reopened: only a restart can tell whether the record reached the
//     disk.
//
// # Locks
//
// One RWMutex guards the tree, the sessions, the watches and the files;
// a write holds it across its fsync. See broker/LOCKS.md.
package embedded
