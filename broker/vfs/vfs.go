// Package vfs is the file-system seam of the broker's storage. The log,
// the metadata store and the inspectors reach disk only through FS and File,
// so tests can swap the operating system for a crashable in-memory file
// system (Mem) or one that fails chosen operations (Faulty).
//
// The interface is deliberately small: what a log-structured store needs
// (sequential append, positional reads, truncate, sync, rename, directory
// sync) and nothing more.
package vfs

import (
	"io"
	"io/fs"
	"os"
)

// File is an open file. ReadAt and WriteAt never move the offset used by
// Write. Fd returns the operating-system descriptor for zero-copy sends, or
// ^uintptr(0) when the file has none (in-memory files).
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	Stat() (fs.FileInfo, error)
	Sync() error
	Truncate(size int64) error
	Name() string
	Fd() uintptr
}

// FS is a file system.
type FS interface {
	// OpenFile is os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Open(name string) (File, error)
	Create(name string) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(path string, perm fs.FileMode) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	// SyncDir fsyncs a directory so that creations, renames and removals in
	// it survive a crash.
	SyncDir(name string) error
}

// OS is the real file system.
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Fd() uintptr { return f.File.Fd() }

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (o osFS) Open(name string) (File, error) { return o.OpenFile(name, os.O_RDONLY, 0) }

func (o osFS) Create(name string) (File, error) {
	return o.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadFile reads a whole file through fsys.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFileAtomic writes data to name so that after a crash the file holds
// either its old or its new content: write name.tmp, fsync it, rename it
// over name, fsync the directory. This is how Kafka writes checkpoints.
// On failure before the rename it removes name.tmp, best effort: a stale
// temp file is harmless (the next write truncates it) but untidy.
func WriteFileAtomic(fsys FS, dir, name string, data []byte) error {
	path := dir + "/" + name
	tmp := path + ".tmp"
	if err := writeSynced(fsys, tmp, data); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	return fsys.SyncDir(dir)
}

// writeSynced creates or truncates name, writes data and fsyncs it.
func writeSynced(fsys FS, name string, data []byte) error {
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
