package vfs

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFailNth(t *testing.T) {
	f := NewFaulty(NewMem(), FailNth(OpWrite, 2, nil))
	file, err := f.Create("/f")
	require.NoError(t, err)
	_, err = file.Write([]byte("a"))
	require.NoError(t, err)
	n, err := file.Write([]byte("b"))
	require.ErrorIs(t, err, ErrInjected)
	require.Zero(t, n, "no partial writes unless asked")
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "write", pe.Op)
	require.Equal(t, "/f", pe.Path)
	_, err = file.WriteAt([]byte("c"), 1)
	require.NoError(t, err, "only the nth fails")
	require.Equal(t, "ac", readFile(t, f, "/f"))
}

func TestFailAfter(t *testing.T) {
	boom := errors.New("disk gone")
	f := NewFaulty(NewMem(), FailAfter(OpSync, 2, boom))
	file, err := f.Create("/f")
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.ErrorIs(t, file.Sync(), boom)
	require.ErrorIs(t, file.Sync(), boom)
	require.NoError(t, f.SyncDir("/"), "other ops pass")
}

func TestFailPath(t *testing.T) {
	f := NewFaulty(NewMem(), FailPath(OpCreate, ".tmp", nil))
	_, err := f.Create("/cp")
	require.NoError(t, err)
	_, err = f.Create("/cp.tmp")
	require.ErrorIs(t, err, ErrInjected)
	_, err = f.OpenFile("/x.tmp", os.O_RDWR|os.O_CREATE, 0o644)
	require.ErrorIs(t, err, ErrInjected, "OpenFile with O_CREATE is a create")
	require.ErrorIs(t, WriteFileAtomic(f, "/", "cp", []byte("x")), ErrInjected)
}

func TestFaultyOpAny(t *testing.T) {
	var seen []Op
	record := InjectorFunc(func(op Op, _ string) error {
		seen = append(seen, op)
		return nil
	})
	f := NewFaulty(NewMem(), record)
	require.NoError(t, f.MkdirAll("/d", 0o755))
	require.NoError(t, WriteFileAtomic(f, "/d", "cp", []byte("x")))
	_, err := ReadFile(f, "/d/cp")
	require.NoError(t, err)
	_, err = f.ReadDir("/d")
	require.NoError(t, err)
	_, err = f.Stat("/d/cp")
	require.NoError(t, err)
	require.NoError(t, f.Remove("/d/cp"))
	require.NoError(t, f.RemoveAll("/d"))
	file, err := f.OpenFile("/g", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = file.Seek(0, 0)
	require.NoError(t, err)
	require.NoError(t, file.Truncate(0))
	_, err = file.Stat()
	require.NoError(t, err)
	_, err = file.ReadAt(make([]byte, 1), 0)
	require.Error(t, err, "EOF")
	require.NoError(t, file.Close())
	require.Equal(t, []Op{
		OpMkdir,
		OpCreate, OpWrite, OpSync, OpClose, OpRename, OpSyncDir,
		OpOpen, OpRead, OpRead, OpClose,
		OpReadDir, OpStat, OpRemove, OpRemove,
		OpCreate, OpSeek, OpTruncate, OpStat, OpRead, OpClose,
	}, seen)

	// FailNth(OpAny, n) steps through every operation in turn.
	f = NewFaulty(NewMem(), FailNth(OpAny, 4, nil)) // mkdir, create, write, sync
	require.NoError(t, f.MkdirAll("/d", 0o755))
	err = WriteFileAtomic(f, "/d", "cp", []byte("x"))
	require.ErrorIs(t, err, ErrInjected)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "sync", pe.Op)
}

func TestFaultyPartialWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	mem := NewMem()
	f := NewFaulty(mem, FailAfter(OpWrite, 1, nil), WithPartialWrites(rng))
	sizes := map[int]bool{}
	payload := []byte("0123456789abcdef")
	for range 200 {
		file, err := f.Create("/f")
		require.NoError(t, err)
		n, err := file.Write(payload)
		require.ErrorIs(t, err, ErrInjected)
		require.Less(t, n, len(payload))
		require.Equal(t, string(payload[:n]), readFile(t, mem, "/f"))
		sizes[n] = true

		n, err = file.WriteAt(payload, 100)
		require.ErrorIs(t, err, ErrInjected)
		require.Less(t, n, len(payload))
		require.NoError(t, file.Close())
	}
	require.Greater(t, len(sizes), 5, "prefix lengths vary")
	require.True(t, sizes[0])
}

func TestFaultyCloseReleases(t *testing.T) {
	f := NewFaulty(NewMem(), FailNth(OpClose, 1, nil))
	file, err := f.Create("/f")
	require.NoError(t, err)
	require.ErrorIs(t, file.Close(), ErrInjected)
	require.ErrorIs(t, file.Close(), fs.ErrClosed, "the inner file was closed anyway")
}

func TestFaultySetInjector(t *testing.T) {
	f := NewFaulty(NewMem(), nil)
	require.NoError(t, WriteFileAtomic(f, "/", "cp", []byte("1")))
	f.SetInjector(FailNth(OpRename, 1, nil))
	require.ErrorIs(t, WriteFileAtomic(f, "/", "cp", []byte("2")), ErrInjected)
	requireMissing(t, f, "/cp.tmp")
	require.Equal(t, "1", readFile(t, f, "/cp"))
	f.SetInjector(nil)
	require.NoError(t, WriteFileAtomic(f, "/", "cp", []byte("3")))
	require.Equal(t, "3", readFile(t, f, "/cp"))
}

func TestFaultyFd(t *testing.T) {
	f := NewFaulty(NewMem(), FailAfter(OpAny, 2, nil))
	file, err := f.Create("/f")
	require.NoError(t, err)
	require.Equal(t, ^uintptr(0), file.Fd())
	require.Equal(t, "/f", file.Name())
}

func TestOpString(t *testing.T) {
	for op := OpAny; op < numOps; op++ {
		require.NotEmpty(t, op.String())
		require.NotContains(t, op.String(), "Op(")
	}
	require.Equal(t, "syncdir", OpSyncDir.String())
	require.Equal(t, "Op(99)", Op(99).String())
}

// TestWriteFileAtomicCrash crashes WriteFileAtomic before each of its steps
// and fails each step in turn, and checks that the file always holds its
// old or its new content, never a mix, nothing, or a torn prefix.
func TestWriteFileAtomicCrash(t *testing.T) {
	const oldData, newData = "old checkpoint\n", "new checkpoint, longer\n"
	for _, tc := range []struct {
		name     string
		existing bool // the file had durable old content
	}{{"replace", true}, {"first write", false}} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(t *testing.T, fsys FS, when string) {
				t.Helper()
				b, err := ReadFile(fsys, "/d/cp")
				if !tc.existing && errors.Is(err, fs.ErrNotExist) {
					return
				}
				require.NoError(t, err, when)
				require.Contains(t, []string{oldData, newData}, string(b), "%s; tree:\n%v", when, fsys)
			}
			steps := 0
			for step := 1; ; step++ {
				mem := newDurableDir(t)
				if tc.existing {
					require.NoError(t, WriteFileAtomic(mem, "/d", "cp", []byte(oldData)))
				}
				var ops []Op
				inject := InjectorFunc(func(op Op, _ string) error {
					ops = append(ops, op)
					if len(ops) != step {
						return nil
					}
					// Power fails just before this operation...
					check(t, mem.CrashClone(), "crash before "+op.String())
					check(t, mem.CrashCloneWithTail(rand.New(rand.NewPCG(uint64(step), 0))), "torn crash before "+op.String())
					// ...or the operation fails.
					return ErrInjected
				})
				err := WriteFileAtomic(NewFaulty(mem, inject), "/d", "cp", []byte(newData))
				if len(ops) < step {
					// Every step was covered; this run had no failure.
					require.NoError(t, err)
					require.Equal(t, newData, readFile(t, mem.CrashClone(), "/d/cp"))
					break
				}
				steps++
				require.ErrorIs(t, err, ErrInjected, "step %d (%v)", step, ops[step-1])
				check(t, mem, "live after failed "+ops[step-1].String())
				check(t, mem.CrashClone(), "crash after failed "+ops[step-1].String())
			}
			require.GreaterOrEqual(t, steps, 6, "create, write, sync, close, rename, syncdir")
		})
	}
}

// TestFaultyEveryOp fails each kind of operation once and checks that the
// call reports the injected error under the operation's name.
func TestFaultyEveryOp(t *testing.T) {
	for _, tc := range []struct {
		op  Op
		run func(fsys FS, f File) error
	}{
		{OpOpen, func(fsys FS, _ File) error { _, err := fsys.Open("/d/f"); return err }},
		{OpOpen, func(fsys FS, _ File) error { _, err := fsys.OpenFile("/d/f", os.O_RDWR, 0); return err }},
		{OpCreate, func(fsys FS, _ File) error { _, err := fsys.Create("/d/g"); return err }},
		{OpRead, func(_ FS, f File) error { _, err := f.Read(make([]byte, 1)); return err }},
		{OpRead, func(_ FS, f File) error { _, err := f.ReadAt(make([]byte, 1), 0); return err }},
		{OpWrite, func(_ FS, f File) error { _, err := f.Write([]byte("x")); return err }},
		{OpWrite, func(_ FS, f File) error { _, err := f.WriteAt([]byte("x"), 0); return err }},
		{OpSeek, func(_ FS, f File) error { _, err := f.Seek(0, 0); return err }},
		{OpSync, func(_ FS, f File) error { return f.Sync() }},
		{OpTruncate, func(_ FS, f File) error { return f.Truncate(0) }},
		{OpClose, func(_ FS, f File) error { return f.Close() }},
		{OpStat, func(_ FS, f File) error { _, err := f.Stat(); return err }},
		{OpStat, func(fsys FS, _ File) error { _, err := fsys.Stat("/d/f"); return err }},
		{OpRename, func(fsys FS, _ File) error { return fsys.Rename("/d/f", "/d/h") }},
		{OpRemove, func(fsys FS, _ File) error { return fsys.Remove("/d/f") }},
		{OpRemove, func(fsys FS, _ File) error { return fsys.RemoveAll("/d") }},
		{OpMkdir, func(fsys FS, _ File) error { return fsys.MkdirAll("/d/e", 0o755) }},
		{OpReadDir, func(fsys FS, _ File) error { _, err := fsys.ReadDir("/d"); return err }},
		{OpSyncDir, func(fsys FS, _ File) error { return fsys.SyncDir("/d") }},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			mem := NewMem()
			require.NoError(t, mem.MkdirAll("/d", 0o755))
			writeFile(t, mem, "/d/f", "abc")
			fsys := NewFaulty(mem, nil)
			f, err := fsys.OpenFile("/d/f", os.O_RDWR, 0)
			require.NoError(t, err)
			defer f.Close()
			fsys.SetInjector(FailPath(tc.op, "/d", nil))
			err = tc.run(fsys, f)
			require.ErrorIs(t, err, ErrInjected)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.op.String(), pe.Op)
			require.Equal(t, "abc", readFile(t, mem, "/d/f"), "nothing reached the inner FS")
		})
	}
}

func TestMemErrorText(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/d/e", 0o755))
	require.EqualError(t, m.Remove("/d"), "remove /d: directory not empty")
	_, err := m.Open("/nope")
	require.EqualError(t, err, "open /nope: file does not exist")
}
