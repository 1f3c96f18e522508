package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors for conditions the operating system reports with an errno that the
// io/fs sentinels do not cover. errNotEmpty matches fs.ErrExist, as
// syscall.ENOTEMPTY does, so callers can test either file system alike.
var (
	errNotDir   = errors.New("not a directory")
	errIsDir    = errors.New("is a directory")
	errNotEmpty = notEmptyError{}
	errBadMode  = errors.New("bad file descriptor")
	errAppendAt = errors.New("invalid use of WriteAt on file opened with O_APPEND")
	errNegative = errors.New("negative offset")
	errRenameIn = errors.New("cannot move a directory into itself")
)

type notEmptyError struct{}

func (notEmptyError) Error() string        { return "directory not empty" }
func (notEmptyError) Is(target error) bool { return target == fs.ErrExist }

// MemFS is an in-memory FS that can simulate power loss.
//
// Like a real disk with a page cache, every file keeps two versions of its
// bytes: the current content that reads see, and the durable content as of
// its last File.Sync. Every directory likewise keeps its current entries and
// the entries as of its last SyncDir. CrashClone builds a new MemFS from the
// durable versions only, which is what a machine sees after losing power.
// The rules are strict on purpose (pebble's strict MemFS is the model):
//
//   - a created file, directory or rename survives a crash only once the
//     parent directory has been synced (both parents for a rename across
//     directories);
//   - file bytes survive only once the file has been synced, whatever name
//     it is reached by;
//   - a removal is undone by a crash unless the parent has been synced.
//
// The root directory always exists. Names are cleaned with path.Clean and a
// leading "/" is ignored, so "/a/b", "a/b" and "a//b/" are one file.
//
// MemFS is safe for concurrent use. Lock order: memFile.mu, then MemFS.mu.
type MemFS struct {
	mu   sync.RWMutex
	root *memNode
	now  func() time.Time
}

// memNode is an inode: a file or a directory. All fields are guarded by the
// owning MemFS's mu.
type memNode struct {
	isDir   bool
	mode    fs.FileMode // permission bits only
	modTime time.Time

	// Files. synced[:dirtyFrom] == data[:dirtyFrom] always holds, so Sync
	// copies only what changed since the previous Sync rather than the
	// whole file: a segment that is appended to and synced over and over
	// costs linear time, not quadratic.
	data      []byte
	synced    []byte
	dirtyFrom int

	// Directories.
	children       map[string]*memNode
	syncedChildren map[string]*memNode
}

func newDirNode(perm fs.FileMode, now time.Time) *memNode {
	return &memNode{
		isDir:          true,
		mode:           perm & fs.ModePerm,
		modTime:        now,
		children:       map[string]*memNode{},
		syncedChildren: map[string]*memNode{},
	}
}

// NewMem returns an empty in-memory file system holding only its root
// directory.
func NewMem() *MemFS {
	m := &MemFS{now: time.Now}
	m.root = newDirNode(0o755, m.now())
	return m
}

var _ FS = (*MemFS)(nil)

// CrashClone returns a new MemFS holding only what was durable in m: every
// directory as of its last SyncDir and every file's bytes as of its last
// File.Sync. m itself is not changed and stays usable, so a test can keep
// writing and take several crash images.
func (m *MemFS) CrashClone() *MemFS { return m.crashClone(nil) }

// CrashCloneWithTail is CrashClone, except that each file whose current
// content runs past its durable content also keeps a random-length prefix
// (possibly empty, possibly all) of the bytes beyond the durable length. A
// real page cache writes dirty pages back on its own schedule, so after a
// crash a log may end in part of a batch that was never synced: recovery
// must cope with such torn tails. Unsynced overwrites inside the durable
// range are not kept.
func (m *MemFS) CrashCloneWithTail(rng *rand.Rand) *MemFS { return m.crashClone(rng) }

func (m *MemFS) crashClone(rng *rand.Rand) *MemFS {
	m.mu.RLock()
	defer m.mu.RUnlock()
	clone := &MemFS{now: m.now}
	// seen maps an old node to its clone so that a node reachable under
	// two durable names (a rename whose source directory was not synced)
	// stays one node, as one inode with two links would.
	seen := map[*memNode]*memNode{}
	var cloneNode func(n *memNode) *memNode
	cloneNode = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		c := &memNode{isDir: n.isDir, mode: n.mode, modTime: n.modTime}
		seen[n] = c
		if n.isDir {
			c.children = make(map[string]*memNode, len(n.syncedChildren))
			c.syncedChildren = make(map[string]*memNode, len(n.syncedChildren))
			for name, child := range n.syncedChildren {
				cc := cloneNode(child)
				c.children[name] = cc
				c.syncedChildren[name] = cc
			}
			return c
		}
		keep := len(n.synced)
		data := slices.Clone(n.synced)
		if rng != nil && len(n.data) > keep {
			extra := rng.IntN(len(n.data) - keep + 1)
			data = append(data, n.data[keep:keep+extra]...)
		}
		c.data = data
		c.synced = slices.Clone(data)
		c.dirtyFrom = len(data)
		return c
	}
	clone.root = cloneNode(m.root)
	return clone
}

// split turns a name into its cleaned path components; the root is nil.
func split(name string) []string {
	p := path.Clean("/" + filepath.ToSlash(name))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walk returns the directory holding the last component of parts. The
// caller holds m.mu.
func (m *MemFS) walkParent(op, name string, parts []string) (*memNode, error) {
	dir := m.root
	for _, p := range parts[:len(parts)-1] {
		child, ok := dir.children[p]
		if !ok {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if !child.isDir {
			return nil, &fs.PathError{Op: op, Path: name, Err: errNotDir}
		}
		dir = child
	}
	return dir, nil
}

// lookup returns the node at name. The caller holds m.mu.
func (m *MemFS) lookup(op, name string) (*memNode, error) {
	parts := split(name)
	if len(parts) == 0 {
		return m.root, nil
	}
	dir, err := m.walkParent(op, name, parts)
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[parts[len(parts)-1]]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

// OpenFile opens name with os.OpenFile's flags: O_RDONLY, O_WRONLY or
// O_RDWR, optionally with O_APPEND, O_CREATE, O_EXCL and O_TRUNC. Other
// flags (O_SYNC) are accepted and ignored.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	access := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	writable := access == os.O_WRONLY || access == os.O_RDWR
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := split(name)
	var n *memNode
	if len(parts) == 0 {
		n = m.root
	} else {
		dir, err := m.walkParent("open", name, parts)
		if err != nil {
			return nil, err
		}
		base := parts[len(parts)-1]
		n = dir.children[base]
		switch {
		case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
		case n == nil && flag&os.O_CREATE == 0:
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		case n == nil:
			now := m.now()
			n = &memNode{mode: perm & fs.ModePerm, modTime: now}
			dir.children[base] = n
			dir.modTime = now
		}
	}
	if n.isDir && (writable || flag&os.O_CREATE != 0) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
	}
	if flag&os.O_TRUNC != 0 && writable && len(n.data) > 0 {
		n.truncate(0)
		n.modTime = m.now()
	}
	return &memFile{
		fs:       m,
		n:        n,
		name:     name,
		readable: access == os.O_RDONLY || access == os.O_RDWR,
		writable: writable,
		append:   flag&os.O_APPEND != 0,
	}, nil
}

// Open opens name for reading.
func (m *MemFS) Open(name string) (File, error) { return m.OpenFile(name, os.O_RDONLY, 0) }

// Create creates or truncates name for reading and writing, as os.Create.
func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Remove removes a file or an empty directory.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := split(name)
	if len(parts) == 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrInvalid}
	}
	dir, err := m.walkParent("remove", name, parts)
	if err != nil {
		return err
	}
	base := parts[len(parts)-1]
	n, ok := dir.children[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.isDir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errNotEmpty}
	}
	delete(dir.children, base)
	dir.modTime = m.now()
	return nil
}

// RemoveAll removes name and everything below it. A missing name is not an
// error.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := split(name)
	if len(parts) == 0 {
		return &fs.PathError{Op: "removeall", Path: name, Err: fs.ErrInvalid}
	}
	dir, err := m.walkParent("removeall", name, parts)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	base := parts[len(parts)-1]
	if _, ok := dir.children[base]; ok {
		delete(dir.children, base)
		dir.modTime = m.now()
	}
	return nil
}

// Rename renames a file or directory. An existing file at newname is
// replaced; an existing directory at newname is replaced only by a
// directory and only if it is empty, as rename(2) does.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	linkErr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	oldParts, newParts := split(oldname), split(newname)
	if len(oldParts) == 0 || len(newParts) == 0 {
		return linkErr(fs.ErrInvalid)
	}
	oldDir, err := m.walkParent("rename", oldname, oldParts)
	if err != nil {
		return linkErr(fs.ErrNotExist)
	}
	oldBase := oldParts[len(oldParts)-1]
	n, ok := oldDir.children[oldBase]
	if !ok {
		return linkErr(fs.ErrNotExist)
	}
	newDir, err := m.walkParent("rename", newname, newParts)
	if err != nil {
		return linkErr(errors.Unwrap(err))
	}
	newBase := newParts[len(newParts)-1]
	if oldDir == newDir && oldBase == newBase {
		return nil
	}
	if n.isDir && len(newParts) > len(oldParts) && slices.Equal(newParts[:len(oldParts)], oldParts) {
		return linkErr(errRenameIn)
	}
	if target, ok := newDir.children[newBase]; ok {
		switch {
		case target.isDir && !n.isDir:
			return linkErr(errIsDir)
		case !target.isDir && n.isDir:
			return linkErr(errNotDir)
		case target.isDir && len(target.children) > 0:
			return linkErr(errNotEmpty)
		}
	}
	delete(oldDir.children, oldBase)
	newDir.children[newBase] = n
	now := m.now()
	oldDir.modTime, newDir.modTime = now, now
	return nil
}

// MkdirAll creates path and any missing parents. Each new directory is
// durable only once its parent is synced: see MkdirAllSync.
func (m *MemFS) MkdirAll(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir := m.root
	for _, p := range split(name) {
		child, ok := dir.children[p]
		if !ok {
			now := m.now()
			child = newDirNode(perm, now)
			dir.children[p] = child
			dir.modTime = now
		} else if !child.isDir {
			return &fs.PathError{Op: "mkdir", Path: name, Err: errNotDir}
		}
		dir = child
	}
	return nil
}

// ReadDir lists a directory sorted by name, as os.ReadDir.
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &fs.PathError{Op: "readdirent", Path: name, Err: errNotDir}
	}
	out := make([]fs.DirEntry, 0, len(n.children))
	for childName, child := range n.children {
		out = append(out, fs.FileInfoToDirEntry(child.info(childName)))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// Stat describes name.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return n.info(baseName(name)), nil
}

// SyncDir makes the current entries of directory name durable.
func (m *MemFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("open", name)
	if err != nil {
		return err
	}
	if !n.isDir {
		return &fs.PathError{Op: "sync", Path: name, Err: errNotDir}
	}
	n.syncDir()
	return nil
}

func (n *memNode) syncDir() {
	clear(n.syncedChildren)
	for k, v := range n.children {
		n.syncedChildren[k] = v
	}
}

func (n *memNode) syncFile() {
	n.synced = append(n.synced[:n.dirtyFrom], n.data[n.dirtyFrom:]...)
	n.dirtyFrom = len(n.data)
}

func (n *memNode) markDirty(off int) {
	if off < n.dirtyFrom {
		n.dirtyFrom = off
	}
}

// truncate sets the current length to size, zero-filling when it grows.
func (n *memNode) truncate(size int) {
	n.markDirty(min(size, len(n.data)))
	if size <= len(n.data) {
		n.data = n.data[:size]
		return
	}
	n.data = append(n.data, make([]byte, size-len(n.data))...)
}

// writeAt writes p at off, zero-filling any gap past the current end.
func (n *memNode) writeAt(p []byte, off int) {
	if end := off + len(p); end > len(n.data) {
		n.truncate(end)
	}
	n.markDirty(off)
	copy(n.data[off:], p)
}

func (n *memNode) info(name string) fs.FileInfo {
	mode := n.mode
	if n.isDir {
		mode |= fs.ModeDir
	}
	return memFileInfo{name: name, size: int64(len(n.data)), mode: mode, modTime: n.modTime}
}

func baseName(name string) string {
	parts := split(name)
	if len(parts) == 0 {
		return "/"
	}
	return parts[len(parts)-1]
}

type memFileInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (fi memFileInfo) Name() string       { return fi.name }
func (fi memFileInfo) Size() int64        { return fi.size }
func (fi memFileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi memFileInfo) ModTime() time.Time { return fi.modTime }
func (fi memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memFileInfo) Sys() any           { return nil }

// memFile is an open handle. mu guards pos and closed; the node's fields
// are guarded by fs.mu.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	readable bool
	writable bool
	append   bool

	mu     sync.Mutex
	pos    int64
	closed bool
}

var _ File = (*memFile)(nil)

func (f *memFile) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// check reports why op cannot run on f. The caller holds f.mu.
func (f *memFile) check(op string, needRead, needWrite bool) error {
	switch {
	case f.closed:
		return f.pathErr(op, fs.ErrClosed)
	case f.n.isDir && (needRead || needWrite):
		return f.pathErr(op, errIsDir)
	case needRead && !f.readable, needWrite && !f.writable:
		return f.pathErr(op, errBadMode)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("read", true, false); err != nil {
		return 0, err
	}
	n, err := f.readAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && (n > 0 || len(p) == 0) {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	err := f.check("read", true, false)
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, f.pathErr("readat", errNegative)
	}
	return f.readAt(p, off)
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("write", false, true); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.append {
		f.pos = int64(len(f.n.data))
	}
	f.n.writeAt(p, int(f.pos))
	f.n.modTime = f.fs.now()
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	err := f.check("write", false, true)
	f.mu.Unlock()
	switch {
	case err != nil:
		return 0, err
	case f.append:
		return 0, f.pathErr("writeat", errAppendAt)
	case off < 0:
		return 0, f.pathErr("writeat", errNegative)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.n.writeAt(p, int(off))
	f.n.modTime = f.fs.now()
	return len(p), nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("seek", false, false); err != nil {
		return 0, err
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.pos
	case io.SeekEnd:
		f.fs.mu.RLock()
		base = int64(len(f.n.data))
		f.fs.mu.RUnlock()
	default:
		return 0, f.pathErr("seek", fs.ErrInvalid)
	}
	if base+offset < 0 {
		return 0, f.pathErr("seek", fs.ErrInvalid)
	}
	f.pos = base + offset
	return f.pos, nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.pathErr("close", fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("stat", false, false); err != nil {
		return nil, err
	}
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	return f.n.info(baseName(f.name)), nil
}

// Sync makes the file's current bytes durable. On a directory handle it
// makes the directory's entries durable, as fsync(2) on a directory does.
func (f *memFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("sync", false, false); err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.n.isDir {
		f.n.syncDir()
	} else {
		f.n.syncFile()
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check("truncate", false, true); err != nil {
		return err
	}
	if size < 0 {
		return f.pathErr("truncate", fs.ErrInvalid)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.n.truncate(int(size))
	f.n.modTime = f.fs.now()
	return nil
}

func (f *memFile) Name() string { return f.name }

// Fd returns ^uintptr(0): an in-memory file has no descriptor, so callers
// that would use sendfile fall back to copying.
func (f *memFile) Fd() uintptr { return ^uintptr(0) }

// String dumps the current tree, one line per node, for test failure
// messages: "d /dir", "f /dir/file 12 (synced 8)".
func (m *MemFS) String() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var b bytes.Buffer
	var walk func(prefix string, n *memNode)
	walk = func(prefix string, n *memNode) {
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			c := n.children[name]
			p := prefix + "/" + name
			_, durable := n.syncedChildren[name]
			mark := ""
			if !durable {
				mark = " (entry not synced)"
			}
			if c.isDir {
				b.WriteString("d " + p + mark + "\n")
				walk(p, c)
				continue
			}
			b.WriteString("f " + p + " " + strconv.Itoa(len(c.data)) + " (synced " + strconv.Itoa(len(c.synced)) + ")" + mark + "\n")
		}
	}
	walk("", m.root)
	return b.String()
}
