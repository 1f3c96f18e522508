package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrInjected is the error the injector helpers return when given a nil
// error: a failure that FaultyFS made up.
var ErrInjected = errors.New("vfs: injected error")

// Op names a kind of file-system operation that an Injector may fail.
type Op int

// The operations FaultyFS asks its Injector about. OpAny matches every
// operation in the helper injectors; FaultyFS never passes it to MaybeFail.
const (
	OpAny      Op = iota
	OpOpen        // FS.Open, FS.OpenFile without O_CREATE
	OpCreate      // FS.Create, FS.OpenFile with O_CREATE
	OpRead        // File.Read, File.ReadAt
	OpWrite       // File.Write, File.WriteAt
	OpSeek        // File.Seek
	OpSync        // File.Sync
	OpTruncate    // File.Truncate
	OpClose       // File.Close
	OpStat        // FS.Stat, File.Stat
	OpRename      // FS.Rename (path is the old name)
	OpRemove      // FS.Remove, FS.RemoveAll
	OpMkdir       // FS.MkdirAll
	OpReadDir     // FS.ReadDir
	OpSyncDir     // FS.SyncDir
	numOps
)

var opNames = [numOps]string{
	"any", "open", "create", "read", "write", "seek", "sync", "truncate",
	"close", "stat", "rename", "remove", "mkdir", "readdir", "syncdir",
}

func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

func (o Op) matches(op Op) bool { return o == OpAny || o == op }

// An Injector decides, before each operation reaches the wrapped FS,
// whether it fails. A non-nil error fails the operation with that error
// (wrapped in an *fs.PathError); nil lets it through. MaybeFail is called
// from whatever goroutine does the I/O, so stateful injectors must be safe
// for concurrent use.
type Injector interface {
	MaybeFail(op Op, path string) error
}

// InjectorFunc adapts a function to Injector. Besides failing operations,
// such a function can watch them: a crash test can take a MemFS.CrashClone
// before each operation and so observe every intermediate state.
type InjectorFunc func(op Op, path string) error

// MaybeFail calls f.
func (f InjectorFunc) MaybeFail(op Op, path string) error { return f(op, path) }

func orInjected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

// FailNth fails only the nth (1-based) operation matching op, with err, or
// ErrInjected if err is nil. Counting lets a test step a failure through
// every point of a procedure: run it with n = 1, 2, ... until it succeeds.
func FailNth(op Op, n int, err error) Injector {
	err = orInjected(err)
	var count atomic.Int64
	return InjectorFunc(func(o Op, _ string) error {
		if op.matches(o) && count.Add(1) == int64(n) {
			return err
		}
		return nil
	})
}

// FailAfter fails the nth (1-based) operation matching op and every
// matching operation after it, as a disk that has gone bad stays bad.
func FailAfter(op Op, n int, err error) Injector {
	err = orInjected(err)
	var count atomic.Int64
	return InjectorFunc(func(o Op, _ string) error {
		if op.matches(o) && count.Add(1) >= int64(n) {
			return err
		}
		return nil
	})
}

// FailPath fails every operation matching op whose path contains substr.
func FailPath(op Op, substr string, err error) Injector {
	err = orInjected(err)
	return InjectorFunc(func(o Op, path string) error {
		if op.matches(o) && strings.Contains(path, substr) {
			return err
		}
		return nil
	})
}

// FaultyFS wraps an FS and fails the operations its Injector picks. Files
// it opens are wrapped too, so per-file operations (writes, syncs) can be
// failed as well.
type FaultyFS struct {
	inner  FS
	inject atomic.Pointer[Injector]

	// partial, when set, makes an injected Write or WriteAt first write a
	// random prefix of its buffer, as a short write on a full disk does.
	partialMu sync.Mutex
	partial   *rand.Rand
}

var _ FS = (*FaultyFS)(nil)

// FaultyOption configures a FaultyFS.
type FaultyOption func(*FaultyFS)

// WithPartialWrites makes a failed Write or WriteAt write a prefix of
// random length (from 0 to all but one byte) before returning the injected
// error, with the count of bytes written. Without it a failed write writes
// nothing.
func WithPartialWrites(rng *rand.Rand) FaultyOption {
	return func(f *FaultyFS) { f.partial = rng }
}

// NewFaulty wraps inner. A nil inject fails nothing.
func NewFaulty(inner FS, inject Injector, opts ...FaultyOption) *FaultyFS {
	f := &FaultyFS{inner: inner}
	f.SetInjector(inject)
	for _, o := range opts {
		o(f)
	}
	return f
}

// SetInjector replaces the injector, so a test can set a store up
// fault-free and then arm failures. A nil inject fails nothing.
func (f *FaultyFS) SetInjector(inject Injector) {
	if inject == nil {
		f.inject.Store(nil)
		return
	}
	f.inject.Store(&inject)
}

// maybeFail asks the injector about op and wraps its error so that the
// failure names the operation and path, as an OS error would.
func (f *FaultyFS) maybeFail(op Op, path string) error {
	p := f.inject.Load()
	if p == nil {
		return nil
	}
	if err := (*p).MaybeFail(op, path); err != nil {
		return &fs.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

// partialLen returns how many bytes of an n-byte write to let through
// before failing it.
func (f *FaultyFS) partialLen(n int) int {
	if f.partial == nil || n <= 1 {
		return 0
	}
	f.partialMu.Lock()
	defer f.partialMu.Unlock()
	return f.partial.IntN(n)
}

func (f *FaultyFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	if err := f.maybeFail(op, name); err != nil {
		return nil, err
	}
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *FaultyFS) Open(name string) (File, error) {
	if err := f.maybeFail(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *FaultyFS) Create(name string) (File, error) {
	if err := f.maybeFail(OpCreate, name); err != nil {
		return nil, err
	}
	file, err := f.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f}, nil
}

func (f *FaultyFS) Remove(name string) error {
	if err := f.maybeFail(OpRemove, name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

func (f *FaultyFS) RemoveAll(name string) error {
	if err := f.maybeFail(OpRemove, name); err != nil {
		return err
	}
	return f.inner.RemoveAll(name)
}

func (f *FaultyFS) Rename(oldname, newname string) error {
	if err := f.maybeFail(OpRename, oldname); err != nil {
		return err
	}
	return f.inner.Rename(oldname, newname)
}

func (f *FaultyFS) MkdirAll(path string, perm fs.FileMode) error {
	if err := f.maybeFail(OpMkdir, path); err != nil {
		return err
	}
	return f.inner.MkdirAll(path, perm)
}

func (f *FaultyFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.maybeFail(OpReadDir, name); err != nil {
		return nil, err
	}
	return f.inner.ReadDir(name)
}

func (f *FaultyFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.maybeFail(OpStat, name); err != nil {
		return nil, err
	}
	return f.inner.Stat(name)
}

func (f *FaultyFS) SyncDir(name string) error {
	if err := f.maybeFail(OpSyncDir, name); err != nil {
		return err
	}
	return f.inner.SyncDir(name)
}

// faultyFile wraps a File opened through a FaultyFS. Fd and Name pass
// through unchecked: they do no I/O.
type faultyFile struct {
	File
	fs *FaultyFS
}

func (f *faultyFile) Read(p []byte) (int, error) {
	if err := f.fs.maybeFail(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.maybeFail(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if err := f.fs.maybeFail(OpWrite, f.Name()); err != nil {
		n, _ := f.File.Write(p[:f.fs.partialLen(len(p))])
		return n, err
	}
	return f.File.Write(p)
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.maybeFail(OpWrite, f.Name()); err != nil {
		n, _ := f.File.WriteAt(p[:f.fs.partialLen(len(p))], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultyFile) Seek(offset int64, whence int) (int64, error) {
	if err := f.fs.maybeFail(OpSeek, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Seek(offset, whence)
}

func (f *faultyFile) Sync() error {
	if err := f.fs.maybeFail(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultyFile) Truncate(size int64) error {
	if err := f.fs.maybeFail(OpTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *faultyFile) Stat() (fs.FileInfo, error) {
	if err := f.fs.maybeFail(OpStat, f.Name()); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

// Close always releases the wrapped file, even when it reports an injected
// failure: close(2) frees the descriptor whatever it returns, and tests
// must not leak handles.
func (f *faultyFile) Close() error {
	injected := f.fs.maybeFail(OpClose, f.Name())
	err := f.File.Close()
	if injected != nil {
		return injected
	}
	return err
}
