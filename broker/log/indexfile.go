package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/qk-project/qk/broker/vfs"
)

// indexPendingBytes is how many bytes of new entries an index buffers
// before writing them out with one WriteAt. Entries live in memory anyway;
// the file only has to be complete when it is flushed, trimmed or closed
// (an active index is rebuilt after a crash), so buffering keeps index
// maintenance off the per-append syscall path.
const indexPendingBytes = 4096

// indexFile is what the offset and time indexes share: an in-memory copy of
// the encoded entries (byte-for-byte what the file holds, like Kafka's mmap)
// and the name of the file, preallocated while the index is active and
// trimmed to the entries when it is not.
//
// An index holds no file descriptor. Lookups read mem only, so the file is
// opened just for the operation that changes it — a batched write-out of
// entries, a truncation or resize, a flush — and closed before that
// operation returns. A segment thus costs one descriptor (its .log), as in
// Kafka, whose indexes are memory-mapped and their descriptors closed:
// with three per segment, a broker with many partitions ran out of
// descriptors at start-up. The price is an open and a close per write-out;
// a flush writes its entries and fsyncs through one descriptor, outside
// the log's lock (claimFlush, run), and skips an index that did not change
// since its last fsync (gen, syncedGen). The file's name is kept up to
// date across renames (rename, renameToDeleted, the cleaner's
// renameSegmentFiles), since every operation opens it by name.
//
// What an fsync through a fresh descriptor cannot report is a write-back
// error of an inode that was evicted from memory while no descriptor held
// it (Kafka's mmap holds the file). For an index the lost page reads as
// zeros on disk (the file's blocks are fresh: preallocated, re-extended
// after a cut, or new), which ends its entries early at the next load:
// offset lookups still find the same batches (scanning more of the .log),
// but a short time index understates the segment's largest timestamp.
// That takes a write-back error and the inode's eviction, both before the
// next flush of the index.
type indexFile struct {
	fsys         vfs.FS
	path         string
	entrySize    int
	maxIndexSize int64 // configured size of an active index file (rounded)
	fileSize     int64 // current length of the file
	mem          []byte
	written      int // mem[:written] is in the file

	// gen counts the changes made to the file (writes, truncations, a
	// flush's claimed entries); it is changed under the log's write lock.
	// syncedGen is the gen the last successful fsync covered; it is read
	// and written only with the log's flushMu held (indexFlush.run), or
	// on a segment no other goroutine sees (the cleaner's).
	gen       uint64
	syncedGen uint64
}

// openIndexFile opens path, creating it preallocated to maxIndexSize when it
// does not exist. With load set it returns the file's bytes for the caller
// to parse; otherwise the index starts empty (the caller resets it). The
// file is closed again before it returns.
func openIndexFile(fsys vfs.FS, path string, entrySize int, maxIndexSize int64, load bool) (*indexFile, []byte, error) {
	x := newIndexFile(fsys, path, entrySize, maxIndexSize)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil, x.create()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open index %s: %w", path, err)
	}
	defer f.Close() // read only: nothing to report
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("stat index %s: %w", path, err)
	}
	x.fileSize = st.Size()
	if !load || x.fileSize == 0 {
		return x, nil, nil
	}
	raw := make([]byte, x.fileSize)
	if _, err := f.ReadAt(raw, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("read index %s: %w", path, err)
	}
	return x, raw, nil
}

func newIndexFile(fsys vfs.FS, path string, entrySize int, maxIndexSize int64) *indexFile {
	return &indexFile{fsys: fsys, path: path, entrySize: entrySize, maxIndexSize: roundDown(maxIndexSize, entrySize)}
}

// create makes the file, empty and preallocated to maxIndexSize.
func (x *indexFile) create() error {
	f, err := x.fsys.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("open index %s: %w", x.path, err)
	}
	x.gen++
	err = f.Truncate(x.maxIndexSize)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("preallocate index %s: %w", x.path, err)
	}
	x.fileSize = x.maxIndexSize
	return nil
}

// update opens the file, runs fn on it and closes it. A failed close is an
// error too: it may report a failed write.
func (x *indexFile) update(fn func(f vfs.File) error) error {
	f, err := x.fsys.OpenFile(x.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open index %s: %w", x.path, err)
	}
	x.gen++
	err = fn(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close index %s: %w", x.path, cerr)
	}
	return err
}

// setLoaded adopts the first n entries of raw as the index content.
func (x *indexFile) setLoaded(raw []byte, n int) {
	b := raw[:n*x.entrySize]
	if cap(raw) > 2*len(b)+4096 {
		// Mostly preallocated zeros: do not keep them.
		b = append([]byte(nil), b...)
	}
	x.mem = b
	x.written = len(b)
}

func roundDown(n int64, unit int) int64 {
	if n < 0 {
		return 0
	}
	return n - n%int64(unit)
}

func (x *indexFile) entries() int    { return len(x.mem) / x.entrySize }
func (x *indexFile) maxEntries() int { return int(x.fileSize / int64(x.entrySize)) }

// add appends one encoded entry; the caller checked that there is room.
// The entry reaches the file in a later batched write.
func (x *indexFile) add(e []byte) error {
	x.mem = append(x.mem, e...)
	if len(x.mem)-x.written >= indexPendingBytes {
		return x.writePending()
	}
	return nil
}

// writePending writes the entries not yet in the file.
func (x *indexFile) writePending() error {
	if x.written >= len(x.mem) {
		return nil
	}
	return x.update(x.writePendingTo)
}

// writePendingTo writes the entries not yet in the file through f.
func (x *indexFile) writePendingTo(f vfs.File) error {
	if x.written >= len(x.mem) {
		return nil
	}
	if _, err := f.WriteAt(x.mem[x.written:], int64(x.written)); err != nil {
		return fmt.Errorf("write index %s: %w", x.path, err)
	}
	x.written = len(x.mem)
	return nil
}

// truncateEntries keeps the first n entries. Entries already written past
// them are zeroed in the file (cut, then re-extended), so the file never
// shows stale entries after the valid ones.
func (x *indexFile) truncateEntries(n int) error {
	x.mem = x.mem[:n*x.entrySize]
	if x.written <= len(x.mem) {
		return nil
	}
	x.written = len(x.mem)
	return x.update(func(f vfs.File) error {
		if err := f.Truncate(int64(x.written)); err != nil {
			return fmt.Errorf("truncate index %s: %w", x.path, err)
		}
		if err := f.Truncate(x.fileSize); err != nil {
			return fmt.Errorf("truncate index %s: %w", x.path, err)
		}
		return nil
	})
}

// trim shrinks the file to exactly its entries (Kafka's trimToValidSize).
func (x *indexFile) trim() error {
	return x.resizeTo(int64(len(x.mem)))
}

// resize sets the file length to size rounded down to whole entries, never
// below the current entries (Kafka's resize, used to re-grow the index of a
// segment that becomes active again).
func (x *indexFile) resize(size int64) error {
	return x.resizeTo(max(roundDown(size, x.entrySize), int64(len(x.mem))))
}

// resizeTo writes pending entries and sets the file length, with one open
// of the file, or none when there is nothing to do.
func (x *indexFile) resizeTo(size int64) error {
	if x.written >= len(x.mem) && size == x.fileSize {
		return nil
	}
	return x.update(func(f vfs.File) error {
		if err := x.writePendingTo(f); err != nil {
			return err
		}
		if size == x.fileSize {
			return nil
		}
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("resize index %s to %d: %w", x.path, size, err)
		}
		x.fileSize = size
		return nil
	})
}

// reset drops every entry and re-preallocates a zeroed file.
func (x *indexFile) reset() error {
	x.mem = x.mem[:0]
	x.written = 0
	return x.update(func(f vfs.File) error {
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("reset index %s: %w", x.path, err)
		}
		x.fileSize = 0
		if err := f.Truncate(x.maxIndexSize); err != nil {
			return fmt.Errorf("resize index %s to %d: %w", x.path, x.maxIndexSize, err)
		}
		x.fileSize = x.maxIndexSize
		return nil
	})
}

// flush writes pending entries and fsyncs the file (open, write, fsync,
// close), unless nothing changed since the last fsync. The caller holds
// the log's write lock and flushMu (or owns the index).
func (x *indexFile) flush() error {
	return x.claimFlush().run()
}

// indexFlush is a flush's share of one index: the entries that were not in
// the file yet, claimed under the log's write lock and written without it,
// and the gen the fsync covers.
type indexFlush struct {
	x       *indexFile
	pending []byte
	at      int64
	gen     uint64
}

// claimFlush takes the pending entries for a flush to write: they count as
// written from now on, so later write-outs (appends, a roll's trim) write
// only what follows them and never cut the file below them. The caller
// holds the log's write lock and flushMu; while flushMu is held nothing
// shortens the entries (truncation, reset) so the claimed bytes stay as
// they are, whatever is appended meanwhile.
func (x *indexFile) claimFlush() indexFlush {
	n := len(x.mem)
	f := indexFlush{x: x, pending: x.mem[x.written:n:n], at: int64(x.written)}
	if len(f.pending) > 0 {
		x.written = n
		x.gen++
	}
	f.gen = x.gen
	return f
}

// needed says whether run has anything to do. Same locking as run.
func (f indexFlush) needed() bool {
	return len(f.pending) > 0 || f.gen > f.x.syncedGen
}

// run writes the claimed entries and fsyncs the file through one
// descriptor, opened and closed here, or does nothing when there is
// nothing to write and the file was fsynced since its last change. Runs
// with flushMu held but not the log's lock (syncedGen and the file name
// are only changed under flushMu). An fsync through a fresh descriptor
// covers the writes made through earlier ones: on Linux it writes back
// the inode's dirty pages, and since 4.16 reports a write-back error that
// no descriptor has seen yet (errseq). A failure fails the log (the
// caller's), so claimed entries that were not written are not given back.
func (f indexFlush) run() error {
	if !f.needed() {
		return nil
	}
	x := f.x
	file, err := x.fsys.OpenFile(x.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open index %s: %w", x.path, err)
	}
	if len(f.pending) > 0 {
		if _, err := file.WriteAt(f.pending, f.at); err != nil {
			file.Close()
			return fmt.Errorf("write index %s: %w", x.path, err)
		}
	}
	err = file.Sync()
	if cerr := file.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync index %s: %w", x.path, err)
	}
	x.syncedGen = f.gen
	return nil
}

// close writes pending entries and trims the file when asked. The index
// holds no descriptor, so nothing is left to close.
func (x *indexFile) close(trim bool) error {
	if trim {
		return x.trim()
	}
	return x.writePending()
}

func (x *indexFile) rename(newPath string) error {
	if err := x.fsys.Rename(x.path, newPath); err != nil {
		return fmt.Errorf("rename index %s: %w", x.path, err)
	}
	x.path = newPath
	return nil
}
