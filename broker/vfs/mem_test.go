package vfs

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// newDurableDir returns a MemFS with a directory /d whose own entry is
// durable, so that tests see only the effects they are about.
func newDurableDir(t *testing.T) *MemFS {
	t.Helper()
	m := NewMem()
	require.NoError(t, MkdirAllSync(m, "/d", 0o755))
	return m
}

func requireMissing(t *testing.T, fsys FS, name string) {
	t.Helper()
	_, err := fsys.Stat(name)
	require.ErrorIs(t, err, fs.ErrNotExist, "%s should be gone; tree:\n%v", name, fsys)
}

func TestCrashUnsyncedDataLost(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/seg.log")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))

	_, err = f.Write([]byte("synced "))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte("lost"))
	require.NoError(t, err)

	c := m.CrashClone()
	require.Equal(t, "synced ", readFile(t, c, "/d/seg.log"))
	require.Equal(t, "synced lost", readFile(t, m, "/d/seg.log"), "the original is untouched")

	require.NoError(t, f.Sync())
	require.Equal(t, "synced lost", readFile(t, m.CrashClone(), "/d/seg.log"))
}

func TestCrashCreatedFileNeedsDirSync(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/new")
	require.NoError(t, err)
	_, err = f.Write([]byte("data"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())

	requireMissing(t, m.CrashClone(), "/d/new")

	require.NoError(t, m.SyncDir("/d"))
	require.Equal(t, "data", readFile(t, m.CrashClone(), "/d/new"))
}

func TestCrashDirSyncWithoutFileSync(t *testing.T) {
	// The entry is durable but the bytes are not: the file comes back empty,
	// which is what ext4 gives for a created, renamed, never-fsynced file.
	m := newDurableDir(t)
	writeFile(t, m, "/d/f", "unsynced")
	require.NoError(t, m.SyncDir("/d"))
	c := m.CrashClone()
	require.Equal(t, "", readFile(t, c, "/d/f"))
}

func TestCrashRenameNeedsDirSync(t *testing.T) {
	m := newDurableDir(t)
	for _, name := range []string{"/d/a", "/d/b"} {
		f, err := m.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte(name))
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	require.NoError(t, m.SyncDir("/d"))

	require.NoError(t, m.Rename("/d/a", "/d/b"))
	c := m.CrashClone()
	require.Equal(t, "/d/a", readFile(t, c, "/d/a"), "rename undone")
	require.Equal(t, "/d/b", readFile(t, c, "/d/b"), "old target back")

	require.NoError(t, m.SyncDir("/d"))
	c = m.CrashClone()
	requireMissing(t, c, "/d/a")
	require.Equal(t, "/d/a", readFile(t, c, "/d/b"))
}

func TestCrashRenameAcrossDirectories(t *testing.T) {
	m := NewMem()
	require.NoError(t, MkdirAllSync(m, "/x", 0o755))
	require.NoError(t, MkdirAllSync(m, "/y", 0o755))
	f, err := m.Create("/x/f")
	require.NoError(t, err)
	_, err = f.Write([]byte("v"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/x"))

	require.NoError(t, m.Rename("/x/f", "/y/f"))
	require.NoError(t, m.SyncDir("/y"))
	// Only the target directory was synced: the file shows under both names.
	c := m.CrashClone()
	require.Equal(t, "v", readFile(t, c, "/x/f"))
	require.Equal(t, "v", readFile(t, c, "/y/f"))

	require.NoError(t, m.SyncDir("/x"))
	c = m.CrashClone()
	requireMissing(t, c, "/x/f")
	require.Equal(t, "v", readFile(t, c, "/y/f"))
}

func TestCrashRemoveNeedsDirSync(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/d"))

	require.NoError(t, m.Remove("/d/f"))
	require.Equal(t, "x", readFile(t, m.CrashClone(), "/d/f"), "unlink undone")
	require.NoError(t, m.SyncDir("/d"))
	requireMissing(t, m.CrashClone(), "/d/f")
}

func TestCrashDirectories(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/logs/topic-0", 0o755))
	f, err := m.Create("/logs/topic-0/f")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/logs/topic-0"))
	// topic-0 itself was never recorded in /logs, nor /logs in /.
	requireMissing(t, m.CrashClone(), "/logs")

	require.NoError(t, m.SyncDir("/"))
	c := m.CrashClone()
	requireMissing(t, c, "/logs/topic-0")
	fi, err := c.Stat("/logs")
	require.NoError(t, err)
	require.True(t, fi.IsDir())

	require.NoError(t, m.SyncDir("/logs"))
	_, err = m.CrashClone().Stat("/logs/topic-0/f")
	require.NoError(t, err)

	// MkdirAllSync does all of that at once.
	require.NoError(t, MkdirAllSync(m, "/other/a/b", 0o755))
	fi, err = m.CrashClone().Stat("/other/a/b")
	require.NoError(t, err)
	require.True(t, fi.IsDir())

	// RemoveAll of a synced tree is undone until the parent is synced.
	require.NoError(t, m.RemoveAll("/logs"))
	_, err = m.CrashClone().Stat("/logs/topic-0/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/"))
	requireMissing(t, m.CrashClone(), "/logs")
}

func TestCrashTruncateAndOverwrite(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())

	require.NoError(t, f.Truncate(4))
	_, err = f.WriteAt([]byte("AB"), 1)
	require.NoError(t, err)
	require.Equal(t, "0123456789", readFile(t, m.CrashClone(), "/d/f"), "nothing synced since")

	require.NoError(t, f.Sync())
	require.Equal(t, "0AB3", readFile(t, m.CrashClone(), "/d/f"))
}

func TestCrashCloneIsIndependent(t *testing.T) {
	m := newDurableDir(t)
	require.NoError(t, WriteFileAtomic(m, "/d", "f", []byte("one")))
	c := m.CrashClone()

	require.NoError(t, WriteFileAtomic(c, "/d", "f", []byte("clone")))
	require.NoError(t, WriteFileAtomic(m, "/d", "g", []byte("orig")))
	require.Equal(t, "one", readFile(t, m, "/d/f"))
	require.Equal(t, "clone", readFile(t, c, "/d/f"))
	requireMissing(t, c, "/d/g")

	// A clone of a clone is still durable.
	require.Equal(t, "clone", readFile(t, c.CrashClone(), "/d/f"))
}

func TestCrashCloneWithTail(t *testing.T) {
	const synced, full = "batch1|", "batch1|batch2|batch3|"
	m := newDurableDir(t)
	f, err := m.Create("/d/seg.log")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write([]byte(synced))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte(full[len(synced):]))
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(1, 2))
	lengths := map[int]bool{}
	for range 500 {
		got := readFile(t, m.CrashCloneWithTail(rng), "/d/seg.log")
		require.True(t, len(got) >= len(synced), "lost synced bytes: %q", got)
		require.True(t, len(got) <= len(full))
		require.Equal(t, full[:len(got)], got, "must be a prefix")
		lengths[len(got)] = true
	}
	require.True(t, lengths[len(synced)], "sometimes nothing unsynced survives")
	require.True(t, lengths[len(full)], "sometimes everything survives")
	require.Greater(t, len(lengths), 5, "torn lengths in between")
}

// TestCrashModel runs random writes, truncates and syncs against a model of
// the current and durable bytes, checking every crash image against it.
// Mem's incremental sync (only the range dirtied since the last Sync is
// copied) is what this guards.
func TestCrashModel(t *testing.T) {
	for seed := range uint64(50) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			m := newDurableDir(t)
			f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
			require.NoError(t, err)
			require.NoError(t, m.SyncDir("/d"))
			var cur, durable []byte
			for step := range 200 {
				switch rng.IntN(5) {
				case 0, 1: // append
					p := randBytes(rng, rng.IntN(20))
					_, err := f.Seek(0, 2)
					require.NoError(t, err)
					_, err = f.Write(p)
					require.NoError(t, err)
					cur = append(cur, p...)
				case 2: // overwrite, possibly past the end
					p := randBytes(rng, 1+rng.IntN(10))
					off := rng.IntN(len(cur) + 5)
					_, err := f.WriteAt(p, int64(off))
					require.NoError(t, err)
					if end := off + len(p); end > len(cur) {
						cur = append(cur, make([]byte, end-len(cur))...)
					}
					copy(cur[off:], p)
				case 3: // truncate
					size := rng.IntN(len(cur) + 5)
					require.NoError(t, f.Truncate(int64(size)))
					if size < len(cur) {
						cur = cur[:size]
					} else {
						cur = append(cur, make([]byte, size-len(cur))...)
					}
				case 4:
					require.NoError(t, f.Sync())
					durable = bytes.Clone(cur)
				}
				require.Equal(t, string(cur), readFile(t, m, "/d/f"), "step %d current", step)
				require.Equal(t, string(durable), readFile(t, m.CrashClone(), "/d/f"), "step %d durable", step)
			}
		})
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestMemPaths(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("a/b", 0o755))
	writeFile(t, m, "/a//b/./f", "x")
	require.Equal(t, "x", readFile(t, m, "a/b/f"))
	require.Equal(t, "x", readFile(t, m, "/a/b/../b/f"))
	fi, err := m.Stat("/")
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	entries, err := m.ReadDir(".")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "a", entries[0].Name())
	require.Error(t, m.Remove("/"))
	require.Error(t, m.Rename("/", "/x"))
}

func TestMemString(t *testing.T) {
	m := newDurableDir(t)
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	_, err = f.Write([]byte("abc"))
	require.NoError(t, err)
	require.Equal(t, "d /d\nf /d/f 3 (synced 0) (entry not synced)\n", m.String())
}

func TestMemModeAndModTime(t *testing.T) {
	m := NewMem()
	f, err := m.OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode())
	first := fi.ModTime()
	require.False(t, first.IsZero())

	require.NoError(t, m.MkdirAll("/dir", 0o750))
	fi, err = m.Stat("/dir")
	require.NoError(t, err)
	require.Equal(t, fs.ModeDir|0o750, fi.Mode())
	require.Nil(t, fi.Sys())
}
