package checkpoint

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
)

// writer is one checkpoint file kind: write version v (1 or 2) of some
// content, and read back whatever is there.
type writer struct {
	name  string
	write func(fsys vfs.FS, v int) error
	read  func(fsys vfs.FS) (any, error)
}

var writers = []writer{
	{"offsets",
		func(fsys vfs.FS, v int) error {
			m := map[TopicPartition]int64{{"t", 0}: int64(v)}
			if v == 2 {
				m[TopicPartition{"u", 1}] = 99
			}
			return WriteOffsets(fsys, "/logs", RecoveryPointFile, m)
		},
		func(fsys vfs.FS) (any, error) { return ReadOffsets(fsys, "/logs/"+RecoveryPointFile) }},
	{"leader epochs",
		func(fsys vfs.FS, v int) error {
			return WriteLeaderEpochs(fsys, "/logs", []EpochEntry{{0, 0}, {int32(v), int64(v) * 10}})
		},
		func(fsys vfs.FS) (any, error) { return ReadLeaderEpochs(fsys, "/logs/"+LeaderEpochFile) }},
	{"partition metadata",
		func(fsys vfs.FS, v int) error { return WritePartitionMetadata(fsys, "/logs", [16]byte{byte(v)}) },
		func(fsys vfs.FS) (any, error) { return ReadPartitionMetadata(fsys, "/logs") }},
	{"meta properties",
		func(fsys vfs.FS, v int) error {
			return WriteMetaProperties(fsys, "/logs", MetaProperties{BrokerID: int32(v), ClusterID: "c"})
		},
		func(fsys vfs.FS) (any, error) { return ReadMetaProperties(fsys, "/logs") }},
	{"clean shutdown",
		func(fsys vfs.FS, v int) error { return WriteCleanShutdown(fsys, "/logs", int64(v)) },
		func(fsys vfs.FS) (any, error) {
			present, epoch, err := ReadCleanShutdown(fsys, "/logs")
			if !present && err == nil {
				err = fs.ErrNotExist
			}
			return epoch, err
		}},
}

// TestWritesAreAtomic fails each I/O step of every Write function in turn,
// and also crashes just before it, and checks that the file then reads as
// its old content or its new content, never as garbage or an error. With
// no old content, "missing" is the other allowed outcome.
func TestWritesAreAtomic(t *testing.T) {
	for _, w := range writers {
		for _, existing := range []bool{true, false} {
			name := w.name + "/replace"
			if !existing {
				name = w.name + "/first"
			}
			t.Run(name, func(t *testing.T) {
				// What versions 1 and 2 read back as, from a clean run.
				var want [3]any
				for v := 1; v <= 2; v++ {
					m := newDir(t)
					require.NoError(t, w.write(m, v))
					got, err := w.read(m)
					require.NoError(t, err)
					want[v] = got
				}
				check := func(t *testing.T, fsys vfs.FS, when string) {
					t.Helper()
					got, err := w.read(fsys)
					if !existing && errors.Is(err, fs.ErrNotExist) {
						return
					}
					require.NoError(t, err, when)
					if existing {
						require.Contains(t, []any{want[1], want[2]}, got, when)
					} else {
						require.Equal(t, want[2], got, when)
					}
				}
				for step := 1; ; step++ {
					m := newDir(t)
					if existing {
						require.NoError(t, w.write(m, 1))
					}
					n := 0
					inject := vfs.InjectorFunc(func(op vfs.Op, _ string) error {
						if n++; n != step {
							return nil
						}
						check(t, m.CrashClone(), "crash before "+op.String())
						return vfs.ErrInjected
					})
					err := w.write(vfs.NewFaulty(m, inject), 2)
					if n < step {
						require.NoError(t, err)
						check(t, m.CrashClone(), "crash after success")
						got, err := w.read(m.CrashClone())
						require.NoError(t, err)
						require.Equal(t, want[2], got, "durable once written")
						require.GreaterOrEqual(t, step, 7, "every step was failed once")
						return
					}
					require.ErrorIs(t, err, vfs.ErrInjected)
					require.ErrorContains(t, err, "checkpoint: ")
					check(t, m, "after failure")
					check(t, m.CrashClone(), "crash after failure")
				}
			})
		}
	}
}
