package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// impl is one FS under test. newFS returns the file system and an existing,
// empty directory in it to work under.
type impl struct {
	name  string
	newFS func(t *testing.T) (FS, string)
}

func impls() []impl {
	newMem := func(t *testing.T) (FS, string) {
		m := NewMem()
		require.NoError(t, m.MkdirAll("/work/dir", 0o755))
		return m, "/work/dir"
	}
	return []impl{
		{"os", func(t *testing.T) (FS, string) { return OS, t.TempDir() }},
		{"mem", newMem},
		{"faulty-os", func(t *testing.T) (FS, string) { return NewFaulty(OS, nil), t.TempDir() }},
		{"faulty-mem", func(t *testing.T) (FS, string) {
			m, dir := newMem(t)
			return NewFaulty(m, FailPath(OpAny, "never-matches", nil)), dir
		}},
	}
}

// conformance holds the behaviours every FS must share with the operating
// system. Each case gets a fresh file system and directory.
var conformance = []struct {
	name string
	run  func(t *testing.T, fsys FS, dir string)
}{
	{"create write read", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		f, err := fsys.Create(p)
		require.NoError(t, err)
		require.Equal(t, p, f.Name())
		n, err := f.Write([]byte("hello "))
		require.NoError(t, err)
		require.Equal(t, 6, n)
		_, err = f.Write([]byte("world"))
		require.NoError(t, err)
		pos, err := f.Seek(0, io.SeekStart)
		require.NoError(t, err)
		require.Zero(t, pos)
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Equal(t, "hello world", string(got))
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())

		got, err = ReadFile(fsys, p)
		require.NoError(t, err)
		require.Equal(t, "hello world", string(got))
	}},
	{"open missing", func(t *testing.T, fsys FS, dir string) {
		_, err := fsys.Open(filepath.Join(dir, "nope"))
		requirePathErr(t, err, fs.ErrNotExist)
		_, err = fsys.OpenFile(filepath.Join(dir, "nope"), os.O_RDWR, 0)
		requirePathErr(t, err, fs.ErrNotExist)
		_, err = fsys.Create(filepath.Join(dir, "no-dir", "f"))
		requirePathErr(t, err, fs.ErrNotExist)
		_, err = fsys.Stat(filepath.Join(dir, "nope"))
		requirePathErr(t, err, fs.ErrNotExist)
	}},
	{"create under a file fails", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		writeFile(t, fsys, p, "x")
		_, err := fsys.Create(filepath.Join(p, "g"))
		require.Error(t, err)
		require.Error(t, fsys.MkdirAll(filepath.Join(p, "sub"), 0o755))
	}},
	{"O_EXCL", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		f, err := fsys.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		_, err = fsys.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		requirePathErr(t, err, fs.ErrExist)
	}},
	{"O_CREATE without O_TRUNC keeps content", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		writeFile(t, fsys, p, "abc")
		f, err := fsys.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		_, err = f.Write([]byte("X"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, "Xbc", readFile(t, fsys, p))
	}},
	{"O_TRUNC", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		writeFile(t, fsys, p, "old content")
		f, err := fsys.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		require.NoError(t, err)
		requireSize(t, f, 0)
		_, err = f.Write([]byte("new"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, "new", readFile(t, fsys, p))
		// Create truncates too.
		f, err = fsys.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, "", readFile(t, fsys, p))
	}},
	{"O_APPEND", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		writeFile(t, fsys, p, "abc")
		f, err := fsys.OpenFile(p, os.O_RDWR|os.O_APPEND, 0)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Seek(0, io.SeekStart)
		require.NoError(t, err)
		_, err = f.Write([]byte("def"))
		require.NoError(t, err)
		pos, err := f.Seek(0, io.SeekCurrent)
		require.NoError(t, err)
		require.EqualValues(t, 6, pos)
		_, err = f.WriteAt([]byte("z"), 0)
		require.Error(t, err, "WriteAt on an O_APPEND file")
		require.Equal(t, "abcdef", readFile(t, fsys, p))
	}},
	{"access modes", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		writeFile(t, fsys, p, "abc")

		r, err := fsys.Open(p)
		require.NoError(t, err)
		defer r.Close()
		_, err = r.Write([]byte("x"))
		require.Error(t, err)
		_, err = r.WriteAt([]byte("x"), 0)
		require.Error(t, err)
		require.Error(t, r.Truncate(0))
		require.NoError(t, r.Sync(), "fsync on a read-only descriptor is allowed")

		w, err := fsys.OpenFile(p, os.O_WRONLY, 0)
		require.NoError(t, err)
		defer w.Close()
		_, err = w.Read(make([]byte, 1))
		require.Error(t, err)
		_, err = w.ReadAt(make([]byte, 1), 0)
		require.Error(t, err)
		require.Equal(t, "abc", readFile(t, fsys, p))
	}},
	{"read at end", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		writeFile(t, fsys, p, "abc")
		f, err := fsys.Open(p)
		require.NoError(t, err)
		defer f.Close()

		buf := make([]byte, 5)
		n, err := f.ReadAt(buf, 1)
		require.ErrorIs(t, err, io.EOF, "short ReadAt")
		require.Equal(t, 2, n)
		require.Equal(t, "bc", string(buf[:n]))
		n, err = f.ReadAt(buf, 3)
		require.ErrorIs(t, err, io.EOF)
		require.Zero(t, n)
		n, err = f.ReadAt(buf[:3], 0)
		require.NoError(t, err, "a full ReadAt ending at EOF")
		require.Equal(t, 3, n)
		_, err = f.ReadAt(buf, -1)
		require.Error(t, err)

		n, err = f.Read(buf)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		n, err = f.Read(buf)
		require.ErrorIs(t, err, io.EOF)
		require.Zero(t, n)
	}},
	{"ReadAt and WriteAt leave the offset alone", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		f, err := fsys.Create(p)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Write([]byte("0123"))
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("AB"), 1)
		require.NoError(t, err)
		_, err = f.ReadAt(make([]byte, 2), 0)
		require.NoError(t, err)
		_, err = f.Write([]byte("45"))
		require.NoError(t, err)
		require.Equal(t, "0AB345", readFile(t, fsys, p))
	}},
	{"WriteAt past end zero-fills", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		f, err := fsys.Create(p)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Write([]byte("ab"))
		require.NoError(t, err)
		n, err := f.WriteAt([]byte("z"), 5)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, "ab\x00\x00\x00z", readFile(t, fsys, p))
		requireSize(t, f, 6)
	}},
	{"seek", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		f, err := fsys.Create(p)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Write([]byte("0123456789"))
		require.NoError(t, err)

		for _, tc := range []struct {
			offset int64
			whence int
			want   int64
		}{
			{2, io.SeekStart, 2},
			{3, io.SeekCurrent, 5},
			{-1, io.SeekCurrent, 4},
			{-2, io.SeekEnd, 8},
			{0, io.SeekEnd, 10},
			{5, io.SeekEnd, 15},
		} {
			got, err := f.Seek(tc.offset, tc.whence)
			require.NoError(t, err)
			require.Equal(t, tc.want, got, "Seek(%d, %d)", tc.offset, tc.whence)
		}
		_, err = f.Seek(-1, io.SeekStart)
		require.Error(t, err)

		// Writing after seeking past the end leaves a zero-filled gap.
		_, err = f.Seek(12, io.SeekStart)
		require.NoError(t, err)
		_, err = f.Write([]byte("x"))
		require.NoError(t, err)
		require.Equal(t, "0123456789\x00\x00x", readFile(t, fsys, p))

		_, err = f.Seek(3, io.SeekStart)
		require.NoError(t, err)
		buf := make([]byte, 2)
		_, err = io.ReadFull(f, buf)
		require.NoError(t, err)
		require.Equal(t, "34", string(buf))
	}},
	{"truncate", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		f, err := fsys.Create(p)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Write([]byte("0123456789"))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(4))
		require.Equal(t, "0123", readFile(t, fsys, p))
		require.NoError(t, f.Truncate(6))
		require.Equal(t, "0123\x00\x00", readFile(t, fsys, p))
		require.Error(t, f.Truncate(-1))
		// The write offset is not moved by Truncate.
		_, err = f.Write([]byte("x"))
		require.NoError(t, err)
		require.Equal(t, "0123\x00\x00\x00\x00\x00\x00x", readFile(t, fsys, p))
	}},
	{"stat", func(t *testing.T, fsys FS, dir string) {
		before := time.Now().Add(-2 * time.Second)
		p := filepath.Join(dir, "f.log")
		writeFile(t, fsys, p, "12345")

		fi, err := fsys.Stat(p)
		require.NoError(t, err)
		require.Equal(t, "f.log", fi.Name())
		require.EqualValues(t, 5, fi.Size())
		require.False(t, fi.IsDir())
		require.True(t, fi.Mode().IsRegular())
		require.True(t, fi.ModTime().After(before), "modtime %v", fi.ModTime())

		f, err := fsys.Open(p)
		require.NoError(t, err)
		defer f.Close()
		fi, err = f.Stat()
		require.NoError(t, err)
		require.Equal(t, "f.log", fi.Name())
		require.EqualValues(t, 5, fi.Size())

		fi, err = fsys.Stat(dir)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		require.True(t, fi.Mode().IsDir())
		require.Equal(t, filepath.Base(dir), fi.Name())
	}},
	{"stat follows writes", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		f, err := fsys.Create(p)
		require.NoError(t, err)
		defer f.Close()
		requireSize(t, f, 0)
		_, err = f.Write(make([]byte, 100))
		require.NoError(t, err)
		requireSize(t, f, 100)
		fi, err := fsys.Stat(p)
		require.NoError(t, err)
		require.EqualValues(t, 100, fi.Size())
	}},
	{"open directory", func(t *testing.T, fsys FS, dir string) {
		d, err := fsys.Open(dir)
		require.NoError(t, err)
		fi, err := d.Stat()
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		_, err = d.Read(make([]byte, 1))
		require.Error(t, err)
		require.NoError(t, d.Sync(), "fsync of a directory descriptor")
		require.NoError(t, d.Close())

		_, err = fsys.OpenFile(dir, os.O_RDWR, 0)
		require.Error(t, err)
	}},
	{"read dir", func(t *testing.T, fsys FS, dir string) {
		for _, name := range []string{"c", "a", "b.index", "b.log"} {
			writeFile(t, fsys, filepath.Join(dir, name), name)
		}
		require.NoError(t, fsys.MkdirAll(filepath.Join(dir, "topic-0"), 0o755))

		entries, err := fsys.ReadDir(dir)
		require.NoError(t, err)
		var got []string
		for _, e := range entries {
			got = append(got, fmt.Sprintf("%s dir=%v", e.Name(), e.IsDir()))
		}
		require.Equal(t, []string{"a dir=false", "b.index dir=false", "b.log dir=false", "c dir=false", "topic-0 dir=true"}, got)
		info, err := entries[2].Info()
		require.NoError(t, err)
		require.EqualValues(t, 5, info.Size())
		require.True(t, entries[4].Type().IsDir())

		entries, err = fsys.ReadDir(filepath.Join(dir, "topic-0"))
		require.NoError(t, err)
		require.Empty(t, entries)

		_, err = fsys.ReadDir(filepath.Join(dir, "missing"))
		requirePathErr(t, err, fs.ErrNotExist)
		_, err = fsys.ReadDir(filepath.Join(dir, "a"))
		require.Error(t, err)
	}},
	{"mkdir all", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "a", "b", "c")
		require.NoError(t, fsys.MkdirAll(p, 0o755))
		require.NoError(t, fsys.MkdirAll(p, 0o755), "existing directory")
		fi, err := fsys.Stat(filepath.Join(dir, "a", "b"))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		writeFile(t, fsys, filepath.Join(p, "f"), "x")
		require.Equal(t, "x", readFile(t, fsys, filepath.Join(p, "f")))
	}},
	{"remove", func(t *testing.T, fsys FS, dir string) {
		f := filepath.Join(dir, "f")
		sub := filepath.Join(dir, "sub")
		writeFile(t, fsys, f, "x")
		require.NoError(t, fsys.MkdirAll(sub, 0o755))
		writeFile(t, fsys, filepath.Join(sub, "g"), "y")

		require.NoError(t, fsys.Remove(f))
		_, err := fsys.Stat(f)
		requirePathErr(t, err, fs.ErrNotExist)
		requirePathErr(t, fsys.Remove(f), fs.ErrNotExist)

		err = fsys.Remove(sub)
		require.Error(t, err, "non-empty directory")
		require.ErrorIs(t, err, fs.ErrExist, "ENOTEMPTY matches fs.ErrExist")
		require.NoError(t, fsys.Remove(filepath.Join(sub, "g")))
		require.NoError(t, fsys.Remove(sub))
		_, err = fsys.Stat(sub)
		requirePathErr(t, err, fs.ErrNotExist)
	}},
	{"remove all", func(t *testing.T, fsys FS, dir string) {
		sub := filepath.Join(dir, "topic-0.deleted")
		require.NoError(t, fsys.MkdirAll(filepath.Join(sub, "deep"), 0o755))
		writeFile(t, fsys, filepath.Join(sub, "a"), "x")
		writeFile(t, fsys, filepath.Join(sub, "deep", "b"), "y")
		require.NoError(t, fsys.RemoveAll(sub))
		_, err := fsys.Stat(sub)
		requirePathErr(t, err, fs.ErrNotExist)
		require.NoError(t, fsys.RemoveAll(sub), "missing is fine")
		require.NoError(t, fsys.RemoveAll(filepath.Join(dir, "x", "y")), "missing parent is fine")

		f := filepath.Join(dir, "f")
		writeFile(t, fsys, f, "x")
		require.NoError(t, fsys.RemoveAll(f), "a plain file")
		_, err = fsys.Stat(f)
		requirePathErr(t, err, fs.ErrNotExist)
	}},
	{"rename", func(t *testing.T, fsys FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		writeFile(t, fsys, a, "new")
		writeFile(t, fsys, b, "old")
		require.NoError(t, fsys.Rename(a, b), "replaces an existing file")
		require.Equal(t, "new", readFile(t, fsys, b))
		_, err := fsys.Stat(a)
		requirePathErr(t, err, fs.ErrNotExist)

		err = fsys.Rename(a, b)
		require.ErrorIs(t, err, fs.ErrNotExist)
		var le *os.LinkError
		require.ErrorAs(t, err, &le)

		require.NoError(t, fsys.Rename(b, b), "onto itself")
		require.Equal(t, "new", readFile(t, fsys, b))
	}},
	{"rename keeps open handles", func(t *testing.T, fsys FS, dir string) {
		a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "a.log.deleted")
		f, err := fsys.Create(a)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Write([]byte("abc"))
		require.NoError(t, err)
		require.NoError(t, fsys.Rename(a, b))
		_, err = f.Write([]byte("def"))
		require.NoError(t, err)
		require.Equal(t, "abcdef", readFile(t, fsys, b))
		requireSize(t, f, 6)
	}},
	{"rename directory", func(t *testing.T, fsys FS, dir string) {
		src := filepath.Join(dir, "topic-0")
		dst := filepath.Join(dir, "topic-0.abc-delete")
		require.NoError(t, fsys.MkdirAll(src, 0o755))
		writeFile(t, fsys, filepath.Join(src, "00000000000000000000.log"), "batch")
		require.NoError(t, fsys.Rename(src, dst))
		require.Equal(t, "batch", readFile(t, fsys, filepath.Join(dst, "00000000000000000000.log")))
		_, err := fsys.Stat(src)
		requirePathErr(t, err, fs.ErrNotExist)

		require.Error(t, fsys.Rename(dst, filepath.Join(dst, "inside")), "into itself")
		writeFile(t, fsys, filepath.Join(dir, "file"), "x")
		require.Error(t, fsys.Rename(dst, filepath.Join(dir, "file")), "directory over a file")
		require.Error(t, fsys.Rename(filepath.Join(dir, "file"), dst), "file over a directory")
	}},
	{"removed file stays readable through an open handle", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "f")
		writeFile(t, fsys, p, "still here")
		f, err := fsys.Open(p)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, fsys.Remove(p))
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Equal(t, "still here", string(got))
	}},
	{"closed file", func(t *testing.T, fsys FS, dir string) {
		f, err := fsys.Create(filepath.Join(dir, "f"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.ErrorIs(t, f.Close(), fs.ErrClosed)
		_, err = f.Write([]byte("x"))
		require.ErrorIs(t, err, fs.ErrClosed)
		_, err = f.Read(make([]byte, 1))
		require.ErrorIs(t, err, fs.ErrClosed)
		_, err = f.ReadAt(make([]byte, 1), 0)
		require.ErrorIs(t, err, fs.ErrClosed)
		_, err = f.WriteAt([]byte("x"), 0)
		require.ErrorIs(t, err, fs.ErrClosed)
		_, err = f.Seek(0, io.SeekStart)
		require.ErrorIs(t, err, fs.ErrClosed)
		require.ErrorIs(t, f.Sync(), fs.ErrClosed)
		require.ErrorIs(t, f.Truncate(0), fs.ErrClosed)
		_, err = f.Stat()
		require.ErrorIs(t, err, fs.ErrClosed)
	}},
	{"sync dir", func(t *testing.T, fsys FS, dir string) {
		require.NoError(t, fsys.SyncDir(dir))
		require.ErrorIs(t, fsys.SyncDir(filepath.Join(dir, "missing")), fs.ErrNotExist)
	}},
	{"write file atomic", func(t *testing.T, fsys FS, dir string) {
		require.NoError(t, WriteFileAtomic(fsys, dir, "cp", []byte("one")))
		require.NoError(t, WriteFileAtomic(fsys, dir, "cp", []byte("two")))
		require.Equal(t, "two", readFile(t, fsys, filepath.Join(dir, "cp")))
		_, err := fsys.Stat(filepath.Join(dir, "cp.tmp"))
		require.ErrorIs(t, err, fs.ErrNotExist, "temp file renamed away")
		require.Error(t, WriteFileAtomic(fsys, filepath.Join(dir, "missing"), "cp", []byte("x")))
	}},
	{"mkdir all sync", func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "logs", "topic-0")
		require.NoError(t, MkdirAllSync(fsys, p, 0o755))
		require.NoError(t, MkdirAllSync(fsys, p, 0o755))
		fi, err := fsys.Stat(p)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		writeFile(t, fsys, filepath.Join(dir, "file"), "x")
		require.Error(t, MkdirAllSync(fsys, filepath.Join(dir, "file"), 0o755))
	}},
	{"concurrent use", func(t *testing.T, fsys FS, dir string) {
		// Meant for -race: writers append to their own files while readers
		// read the shared one and the directory is listed and synced.
		shared := filepath.Join(dir, "shared")
		writeFile(t, fsys, shared, "0123456789")
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				f, err := fsys.Create(filepath.Join(dir, fmt.Sprintf("w%d", i)))
				if !assertNoError(t, err) {
					return
				}
				defer f.Close()
				r, err := fsys.Open(shared)
				if !assertNoError(t, err) {
					return
				}
				defer r.Close()
				buf := make([]byte, 4)
				for j := range 50 {
					_, err := f.Write([]byte{byte(j)})
					assertNoError(t, err)
					_, err = r.ReadAt(buf, int64(j%6))
					assertNoError(t, err)
					if j%10 == 0 {
						assertNoError(t, f.Sync())
						_, err = fsys.ReadDir(dir)
						assertNoError(t, err)
						assertNoError(t, fsys.SyncDir(dir))
					}
				}
			})
		}
		wg.Wait()
		for i := range 4 {
			fi, err := fsys.Stat(filepath.Join(dir, fmt.Sprintf("w%d", i)))
			require.NoError(t, err)
			require.EqualValues(t, 50, fi.Size())
		}
	}},
}

func TestConformance(t *testing.T) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) {
			for _, tc := range conformance {
				t.Run(tc.name, func(t *testing.T) {
					fsys, dir := im.newFS(t)
					tc.run(t, fsys, dir)
				})
			}
		})
	}
}

func TestFd(t *testing.T) {
	m := NewMem()
	f, err := m.Create("/f")
	require.NoError(t, err)
	require.Equal(t, ^uintptr(0), f.Fd())

	f, err = OS.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	require.NotEqual(t, ^uintptr(0), f.Fd())
}

func writeFile(t testing.TB, fsys FS, name, data string) {
	t.Helper()
	f, err := fsys.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func readFile(t testing.TB, fsys FS, name string) string {
	t.Helper()
	b, err := ReadFile(fsys, name)
	require.NoError(t, err)
	return string(b)
}

func requireSize(t testing.TB, f File, want int64) {
	t.Helper()
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, want, fi.Size())
}

// requirePathErr checks that err is an *fs.PathError matching target, so
// callers can rely on both errors.Is and errors.As.
func requirePathErr(t testing.TB, err, target error) {
	t.Helper()
	require.ErrorIs(t, err, target)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
}

// assertNoError is for goroutines, where require's FailNow must not run.
func assertNoError(t testing.TB, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}
