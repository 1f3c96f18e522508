package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/vfs"
)

// wal is the store's durable state: the snapshot file and the log of
// records committed since. Its fields are guarded by db.mu.
type wal struct {
	fsys vfs.FS
	dir  string
	f    vfs.File // the log, open for reading and writing
	end  int64    // where the next record goes: just after the last valid one

	records       int   // records appended since the last snapshot attempt
	snapBase      int64 // log size at the last snapshot attempt
	snapshotEvery int   // take a snapshot after this many records...
	snapshotBytes int64 // ...or this many log bytes
}

func (w *wal) logPath() string      { return w.dir + "/" + LogFile }
func (w *wal) snapshotPath() string { return w.dir + "/" + SnapshotFile }

// append writes one record and syncs the log.
func (w *wal) append(zxid, timeMs int64, effects []effect) error {
	rec := encodeRecord(zxid, timeMs, effects)
	if _, err := w.f.WriteAt(rec, w.end); err != nil {
		return fmt.Errorf("write %s: %w", w.logPath(), err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.logPath(), err)
	}
	w.end += int64(len(rec))
	w.records++
	return nil
}

func (w *wal) snapshotDue() bool {
	return w.records >= w.snapshotEvery || w.end-w.snapBase >= w.snapshotBytes
}

// snapshot writes the persistent tree to the snapshot file atomically and
// then empties the log. A crash between the two leaves a log whose records
// are all in the snapshot already: replay skips records whose zxid is not
// above the snapshot's. A snapshot that cannot be written is logged and
// retried after as many records (or bytes) again; a log that cannot be
// emptied fails the store, as a failed append does.
func (d *db) snapshot() error {
	w := d.wal
	count := d.visitPersistent(nil)
	b := encodeSnapshot(d.zxid, count, func(fn func(string, *metadata.Stat, []byte)) { d.visitPersistent(fn) })
	w.records, w.snapBase = 0, w.end
	if err := vfs.WriteFileAtomic(w.fsys, w.dir, SnapshotFile, b); err != nil {
		d.lg.Warn("metadata snapshot not written", "zxid", d.zxid, "err", err)
		return fmt.Errorf("embedded: write snapshot: %w", err)
	}
	if err := w.f.Truncate(0); err != nil {
		d.failed = fmt.Errorf("embedded: truncate %s after snapshot: %w", w.logPath(), err)
		d.lg.Error("metadata log not truncated after snapshot", "err", err)
		return d.failed
	}
	if err := w.f.Sync(); err != nil {
		d.failed = fmt.Errorf("embedded: sync %s after snapshot: %w", w.logPath(), err)
		d.lg.Error("metadata log not synced after snapshot", "err", err)
		return d.failed
	}
	w.end, w.snapBase = 0, 0
	d.lg.Debug("wrote metadata snapshot", "zxid", d.zxid, "nodes", count, "bytes", len(b))
	return nil
}

// load opens dir, reads the snapshot and replays the log into d. A torn
// tail of the log is cut off with a warning; any other damage is a
// *CorruptError.
func (d *db) load(w *wal) error {
	if err := vfs.MkdirAllSync(w.fsys, w.dir, 0o755); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	// A crash inside WriteFileAtomic leaves the temp file; it is useless.
	if err := w.fsys.Remove(w.snapshotPath() + ".tmp"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("embedded: %w", err)
	}
	snapZxid, err := d.loadSnapshot(w)
	if err != nil {
		return err
	}
	f, err := w.fsys.OpenFile(w.logPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	w.f = f
	if err := w.fsys.SyncDir(w.dir); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	return d.replay(w, snapZxid)
}

func (d *db) loadSnapshot(w *wal) (int64, error) {
	b, err := vfs.ReadFile(w.fsys, w.snapshotPath())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: %w", err)
	}
	zxid, err := decodeSnapshot(b, func(path string, st metadata.Stat, data []byte) error {
		if path == "/" {
			if d.visitPersistent(nil) != 1 {
				return fmt.Errorf("root is not the first node")
			}
		}
		return d.applyEffect(effect{kind: effectPut, path: path, stat: st, data: data})
	})
	if err != nil {
		return 0, &CorruptError{Path: w.snapshotPath(), Reason: err.Error()}
	}
	d.zxid = zxid
	return zxid, nil
}

// replay applies the log's records with a zxid above snapZxid. It stops
// at the first record that is incomplete or fails its checksum: if
// nothing but that record (or zeros) follows, it is a torn write and is
// truncated away; otherwise the log is corrupt.
func (d *db) replay(w *wal, snapZxid int64) error {
	info, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	size := info.Size()
	buf := make([]byte, size)
	if _, err := w.f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("embedded: read %s: %w", w.logPath(), err)
	}
	corrupt := func(off int64, format string, args ...any) error {
		return &CorruptError{Path: w.logPath(), Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	var off int64
	lastZxid := snapZxid
	applied := 0
	for off < size {
		body, reason, tail := nextFrame(buf[off:])
		if reason != "" {
			if !tail {
				return corrupt(off, "%s, and more data follows it", reason)
			}
			d.lg.Warn("truncating torn tail of metadata log",
				"path", w.logPath(), "offset", off, "lost_bytes", size-off, "reason", reason)
			if err := w.f.Truncate(off); err != nil {
				return fmt.Errorf("embedded: truncate %s: %w", w.logPath(), err)
			}
			if err := w.f.Sync(); err != nil {
				return fmt.Errorf("embedded: sync %s: %w", w.logPath(), err)
			}
			break
		}
		zxid, effects, err := decodeBody(body)
		if err != nil {
			return corrupt(off, "undecodable record: %v", err)
		}
		if zxid > snapZxid {
			if zxid <= lastZxid {
				return corrupt(off, "zxid %d does not follow %d", zxid, lastZxid)
			}
			for _, e := range effects {
				if err := d.applyEffect(e); err != nil {
					return corrupt(off, "zxid %d: %v", zxid, err)
				}
			}
			lastZxid = zxid
			applied++
		}
		off += recordHeaderLen + int64(len(body))
	}
	w.end = off
	w.records = applied
	d.zxid = lastZxid
	return nil
}

// nextFrame checks the record at the start of b. If it is bad, reason
// says why and tail whether it can be a torn write: nothing but the bad
// record, or zeros (blocks allocated but never written), follows it.
func nextFrame(b []byte) (body []byte, reason string, tail bool) {
	if len(b) < recordHeaderLen {
		return nil, "incomplete record header", true
	}
	n := int64(binary.BigEndian.Uint32(b[0:4]))
	if n < minRecordBody {
		return nil, fmt.Sprintf("record length %d too small", n), allZero(b)
	}
	end := recordHeaderLen + n
	if end > int64(len(b)) {
		return nil, fmt.Sprintf("record of %d bytes runs past the end of the file", end), true
	}
	body = b[recordHeaderLen:end]
	if got, want := recordCRC(b[0:4], body), binary.BigEndian.Uint32(b[4:8]); got != want {
		return nil, fmt.Sprintf("checksum %08x, want %08x", got, want), allZero(b[end:])
	}
	return body, "", false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
