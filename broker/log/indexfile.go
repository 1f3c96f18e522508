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
// and the file, preallocated while the index is active and trimmed to the
// entries when it is not.
type indexFile struct {
	fsys         vfs.FS
	path         string
	f            vfs.File
	entrySize    int
	maxIndexSize int64 // configured size of an active index file (rounded)
	fileSize     int64 // current length of the file
	mem          []byte
	written      int // mem[:written] is in the file
}

// openIndexFile opens path, creating it preallocated to maxIndexSize when it
// does not exist. With load set it returns the file's bytes for the caller
// to parse; otherwise the index starts empty (the caller resets it).
func openIndexFile(fsys vfs.FS, path string, entrySize int, maxIndexSize int64, load bool) (*indexFile, []byte, error) {
	x := &indexFile{
		fsys:         fsys,
		path:         path,
		entrySize:    entrySize,
		maxIndexSize: roundDown(maxIndexSize, entrySize),
	}
	created := false
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		created = true
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open index %s: %w", path, err)
	}
	x.f = f
	if created {
		if err := f.Truncate(x.maxIndexSize); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("preallocate index %s: %w", path, err)
		}
		x.fileSize = x.maxIndexSize
		return x, nil, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat index %s: %w", path, err)
	}
	x.fileSize = st.Size()
	if !load || x.fileSize == 0 {
		return x, nil, nil
	}
	raw := make([]byte, x.fileSize)
	if _, err := f.ReadAt(raw, 0); err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, nil, fmt.Errorf("read index %s: %w", path, err)
	}
	return x, raw, nil
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
	if _, err := x.f.WriteAt(x.mem[x.written:], int64(x.written)); err != nil {
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
	if err := x.f.Truncate(int64(x.written)); err != nil {
		return fmt.Errorf("truncate index %s: %w", x.path, err)
	}
	if err := x.f.Truncate(x.fileSize); err != nil {
		return fmt.Errorf("truncate index %s: %w", x.path, err)
	}
	return nil
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

func (x *indexFile) resizeTo(size int64) error {
	if err := x.writePending(); err != nil {
		return err
	}
	if size == x.fileSize {
		return nil
	}
	if err := x.f.Truncate(size); err != nil {
		return fmt.Errorf("resize index %s to %d: %w", x.path, size, err)
	}
	x.fileSize = size
	return nil
}

// reset drops every entry and re-preallocates a zeroed file.
func (x *indexFile) reset() error {
	x.mem = x.mem[:0]
	x.written = 0
	if err := x.f.Truncate(0); err != nil {
		return fmt.Errorf("reset index %s: %w", x.path, err)
	}
	x.fileSize = 0
	return x.resizeTo(x.maxIndexSize)
}

func (x *indexFile) flush() error {
	if err := x.writePending(); err != nil {
		return err
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("sync index %s: %w", x.path, err)
	}
	return nil
}

// close writes pending entries, trims the file when asked, and closes it.
func (x *indexFile) close(trim bool) error {
	var err error
	if trim {
		err = x.trim()
	} else {
		err = x.writePending()
	}
	if cerr := x.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close index %s: %w", x.path, cerr)
	}
	return err
}

func (x *indexFile) rename(newPath string) error {
	if err := x.fsys.Rename(x.path, newPath); err != nil {
		return fmt.Errorf("rename index %s: %w", x.path, err)
	}
	x.path = newPath
	return nil
}
