package embedded_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
	"github.com/qk-project/qk/broker/vfs"
)

// fakeClock returns a clock that advances 1 ms per call, so that two runs
// of one workload produce identical Stats.
func fakeClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func logSize(t testing.TB, fsys vfs.FS) int64 {
	t.Helper()
	fi, err := fsys.Stat(dir + "/" + embedded.LogFile)
	require.NoError(t, err)
	return fi.Size()
}

func readLog(t testing.TB, fsys vfs.FS) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, dir+"/"+embedded.LogFile)
	require.NoError(t, err)
	return b
}

// writeLog replaces the log's content (synced, so a later CrashClone keeps
// it).
func writeLog(t testing.TB, fsys vfs.FS, b []byte) {
	t.Helper()
	f, err := fsys.OpenFile(dir+"/"+embedded.LogFile, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// TestCrashAfterEveryStep: power is lost after each call returns; the
// store reopened from what was durable holds exactly the state that call
// left, and its zxids carry on above every zxid handed out before.
func TestCrashAfterEveryStep(t *testing.T) {
	for _, every := range []int{3, 1 << 20} {
		t.Run(fmt.Sprintf("snapshot-every=%d", every), func(t *testing.T) {
			mem := vfs.NewMem()
			s, err := embedded.Open(mem, dir, embedded.WithSnapshotEvery(every, 0))
			require.NoError(t, err)
			defer s.Close()
			w := newWorkload(t, 1, s)
			for i := range 120 {
				err := w.step()
				require.True(t, err == nil || rejected(err), "step %d: %v", i, err)
				want, maxZxid := dump(t, s)

				crashed := mem.CrashClone()
				s2, err := embedded.Open(crashed, dir)
				require.NoError(t, err)
				got, _ := dump(t, s2)
				require.Equal(t, want, got, "after step %d", i)
				p, err := s2.Create(ctx, "/probe", nil, metadata.Ephemeral)
				require.NoError(t, err)
				_, st, err := s2.Get(ctx, p)
				require.NoError(t, err)
				require.Greater(t, st.Czxid, maxZxid, "zxid went backwards after step %d", i)
				require.NoError(t, s2.Close())
			}
		})
	}
}

// TestCrashDuringStep takes a crash image before every file-system
// operation (and one keeping a random part of unsynced appends): whatever
// the moment of the crash, the reopened store holds the state before or
// after the call that was running, never anything in between.
func TestCrashDuringStep(t *testing.T) {
	for _, seed := range []uint64{2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mem := vfs.NewMem()
			rng := rand.New(rand.NewPCG(seed, 7))
			type image struct {
				step int
				op   vfs.Op
				fsys *vfs.MemFS
			}
			var (
				mu     sync.Mutex
				step   int
				images []image
			)
			faulty := vfs.NewFaulty(mem, vfs.InjectorFunc(func(op vfs.Op, _ string) error {
				mu.Lock()
				defer mu.Unlock()
				images = append(images, image{step, op, mem.CrashClone()}, image{step, op, mem.CrashCloneWithTail(rng)})
				return nil
			}))
			s, err := embedded.Open(faulty, dir, embedded.WithSnapshotEvery(3, 0))
			require.NoError(t, err)
			first, _ := dump(t, s)
			models := []tree{first}
			w := newWorkload(t, seed, s)
			for i := 1; i <= 60; i++ {
				mu.Lock()
				step = i
				mu.Unlock()
				err := w.step()
				require.True(t, err == nil || rejected(err), "step %d: %v", i, err)
				m, _ := dump(t, s)
				models = append(models, m)
			}
			mu.Lock()
			step = len(models)
			mu.Unlock()
			require.NoError(t, s.Close())
			models = append(models, models[len(models)-1])

			t.Logf("%d crash images", len(images))
			for _, img := range images {
				got := reopen(t, img.fsys)
				before := models[max(img.step-1, 0)]
				after := models[img.step]
				if !assertEqualAny(got, before, after) {
					require.Equal(t, after, got, "crash before %s in step %d: neither the state before nor after", img.op, img.step)
				}
			}
		})
	}
}

func assertEqualAny(got tree, wants ...tree) bool {
	for _, w := range wants {
		if fmt.Sprint(got) == fmt.Sprint(w) {
			return true
		}
	}
	return false
}

// committedRun runs a workload without snapshots and returns the crash
// image at the end, the state after every record and the log size after
// every record.
func committedRun(t *testing.T, seed uint64, steps int) (*vfs.MemFS, []tree, []int64) {
	t.Helper()
	mem := vfs.NewMem()
	s, err := embedded.Open(mem, dir, embedded.WithSnapshotEvery(1<<30, 1<<40))
	require.NoError(t, err)
	m, _ := dump(t, s)
	models, sizes := []tree{m}, []int64{logSize(t, mem)}
	w := newWorkload(t, seed, s)
	for range steps {
		err := w.step()
		require.True(t, err == nil || rejected(err), "%v", err)
		if size := logSize(t, mem); size != sizes[len(sizes)-1] {
			m, _ := dump(t, s)
			models, sizes = append(models, m), append(sizes, size)
		}
	}
	image := mem.CrashClone()
	require.NoError(t, s.Close())
	return image, models, sizes
}

// TestTornTailEveryByte cuts the log at every byte of its last records:
// the store always comes back with every whole record and none of the cut
// one, and it can write again where the cut record was.
func TestTornTailEveryByte(t *testing.T) {
	image, models, sizes := committedRun(t, 4, 50)
	require.Greater(t, len(sizes), 10)
	full := readLog(t, image)
	n := len(sizes) - 1
	for k := n - 4; k <= n; k++ {
		for cut := sizes[k-1]; cut < sizes[k]; cut++ {
			c := image.CrashClone()
			writeLog(t, c, full[:cut])
			var logs bytes.Buffer
			s, err := embedded.Open(c, dir, embedded.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			require.NoError(t, err, "cut at %d", cut)
			got, _ := dump(t, s)
			require.Equal(t, models[k-1], got, "record %d cut at byte %d", k, cut)
			if cut > sizes[k-1] {
				require.Contains(t, logs.String(), "truncating torn tail of metadata log")
				require.Contains(t, logs.String(), fmt.Sprintf("offset=%d lost_bytes=%d", sizes[k-1], cut-sizes[k-1]))
			}
			require.Equal(t, sizes[k-1], logSize(t, c), "the torn tail is cut off")
			_, err = s.Create(ctx, "/after-repair", []byte("x"), 0)
			require.NoError(t, err)
			crashed := c.CrashClone()
			require.NoError(t, s.Close())
			got = reopen(t, crashed)
			require.Contains(t, got, "/after-repair")
			require.Len(t, got, len(models[k-1])+1)
		}
	}
	require.Equal(t, models[n], reopen(t, image))
}

// TestCorruption is a table of damaged files (etcd's corruptFunc style):
// tails that a crash can leave are repaired; damage to acknowledged
// records or to the snapshot stops Open with a *CorruptError.
func TestCorruption(t *testing.T) {
	image, models, sizes := committedRun(t, 5, 40)
	n := len(sizes) - 1
	require.Greater(t, n, 5)
	full := readLog(t, image)
	mid := n / 2

	withSnapshot := image.CrashClone()
	s, err := embedded.Open(withSnapshot, dir)
	require.NoError(t, err)
	require.NoError(t, s.Snapshot())
	_, err = s.Create(ctx, "/after-snapshot", nil, 0)
	require.NoError(t, err)
	withSnapshot = withSnapshot.CrashClone()
	require.NoError(t, s.Close())
	afterSnapshot := reopen(t, withSnapshot.CrashClone())
	require.Contains(t, afterSnapshot, "/after-snapshot")

	flip := func(b []byte, i int64) []byte {
		b = bytes.Clone(b)
		b[i] ^= 0x40
		return b
	}
	cases := []struct {
		name    string
		base    *vfs.MemFS
		corrupt func(t *testing.T, fsys *vfs.MemFS)
		want    tree  // state after a repair
		offset  int64 // for a *CorruptError of the log; -1: of the snapshot
		fatal   bool
	}{
		{name: "last record body flipped", base: image, want: models[n-1],
			corrupt: func(t *testing.T, fsys *vfs.MemFS) { writeLog(t, fsys, flip(full, sizes[n]-3)) }},
		{name: "last record crc flipped", base: image, want: models[n-1],
			corrupt: func(t *testing.T, fsys *vfs.MemFS) { writeLog(t, fsys, flip(full, sizes[n-1]+5)) }},
		{name: "last record length grown", base: image, want: models[n-1],
			corrupt: func(t *testing.T, fsys *vfs.MemFS) { writeLog(t, fsys, flip(full, sizes[n-1]+2)) }},
		{name: "zeros after the last record", base: image, want: models[n],
			corrupt: func(t *testing.T, fsys *vfs.MemFS) {
				writeLog(t, fsys, append(bytes.Clone(full), make([]byte, 300)...))
			}},
		{name: "partial header after the last record", base: image, want: models[n],
			corrupt: func(t *testing.T, fsys *vfs.MemFS) { writeLog(t, fsys, append(bytes.Clone(full), 0, 0, 1)) }},
		{name: "torn record followed by zeros", base: image, want: models[n-1],
			corrupt: func(t *testing.T, fsys *vfs.MemFS) {
				b := bytes.Clone(full)
				clear(b[sizes[n]-10:])
				writeLog(t, fsys, append(b, make([]byte, 4096)...))
			}},
		{name: "middle record flipped", base: image, corrupt: func(t *testing.T, fsys *vfs.MemFS) {
			writeLog(t, fsys, flip(full, sizes[mid]-1))
		}, fatal: true, offset: sizes[mid-1]},
		{name: "middle record length shrunk", base: image, corrupt: func(t *testing.T, fsys *vfs.MemFS) {
			writeLog(t, fsys, flip(full, sizes[mid-1]+3))
		}, fatal: true, offset: sizes[mid-1]},
		{name: "last record length shrunk", base: image, corrupt: func(t *testing.T, fsys *vfs.MemFS) {
			b := bytes.Clone(full)
			b[sizes[n-1]+3] -= 4
			writeLog(t, fsys, b)
		}, fatal: true, offset: sizes[n-1]},
		{name: "garbage with a tiny length after the last record", base: image, corrupt: func(t *testing.T, fsys *vfs.MemFS) {
			writeLog(t, fsys, append(bytes.Clone(full), 0, 0, 0, 3, 9, 9, 9, 9, 1, 2, 3))
		}, fatal: true, offset: sizes[n]},
		{name: "record repeated", base: image, corrupt: func(t *testing.T, fsys *vfs.MemFS) {
			writeLog(t, fsys, append(bytes.Clone(full), full[sizes[n-1]:]...))
		}, fatal: true, offset: sizes[n]},
		{name: "snapshot flipped", base: withSnapshot, corrupt: func(t *testing.T, fsys *vfs.MemFS) {
			b, err := vfs.ReadFile(fsys, dir+"/"+embedded.SnapshotFile)
			require.NoError(t, err)
			require.NoError(t, vfs.WriteFileAtomic(fsys, dir, embedded.SnapshotFile, flip(b, int64(len(b)/2))))
		}, fatal: true, offset: -1},
		{name: "snapshot truncated", base: withSnapshot, corrupt: func(t *testing.T, fsys *vfs.MemFS) {
			b, err := vfs.ReadFile(fsys, dir+"/"+embedded.SnapshotFile)
			require.NoError(t, err)
			require.NoError(t, vfs.WriteFileAtomic(fsys, dir, embedded.SnapshotFile, b[:len(b)-1]))
		}, fatal: true, offset: -1},
		{name: "stale snapshot temp file", base: withSnapshot, want: afterSnapshot,
			corrupt: func(t *testing.T, fsys *vfs.MemFS) {
				require.NoError(t, vfs.WriteFileAtomic(fsys, dir, embedded.SnapshotFile+".tmp", []byte("half a snap")))
			}},
		{name: "records older than the snapshot", base: withSnapshot, want: afterSnapshot,
			corrupt: func(t *testing.T, fsys *vfs.MemFS) {
				writeLog(t, fsys, append(bytes.Clone(full), readLog(t, fsys)...))
			}},
		{name: "log missing", base: image, want: models[0],
			corrupt: func(t *testing.T, fsys *vfs.MemFS) { require.NoError(t, fsys.Remove(dir+"/"+embedded.LogFile)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tc.base.CrashClone()
			tc.corrupt(t, fsys)
			s, err := embedded.Open(fsys, dir)
			if tc.fatal {
				require.ErrorIs(t, err, embedded.ErrCorrupt)
				var ce *embedded.CorruptError
				require.ErrorAs(t, err, &ce)
				if tc.offset >= 0 {
					require.Equal(t, dir+"/"+embedded.LogFile, ce.Path)
					require.Equal(t, tc.offset, ce.Offset, "%v", err)
				} else {
					require.Equal(t, dir+"/"+embedded.SnapshotFile, ce.Path)
				}
				return
			}
			require.NoError(t, err)
			got, _ := dump(t, s)
			require.NoError(t, s.Close())
			require.Equal(t, tc.want, got)
			_, err = fsys.Stat(dir + "/" + embedded.SnapshotFile + ".tmp")
			require.ErrorIs(t, err, fs.ErrNotExist)
		})
	}
}

// TestFaults fails the nth file-system operation of each kind while a
// workload runs. A failed commit is undone in memory and the store then
// refuses writes (but serves reads); a failed snapshot is only logged. In
// every case the store reopened from the files, with or without a crash,
// holds the state before or after the failing call.
func TestFaults(t *testing.T) {
	const seed, steps = 6, 40
	// The reference run: the state after every step, without faults.
	ref := func() []tree {
		s, err := embedded.Open(vfs.NewMem(), dir, embedded.WithSnapshotEvery(4, 0), embedded.WithClock(fakeClock()))
		require.NoError(t, err)
		defer s.Close()
		first, _ := dump(t, s)
		models := []tree{first}
		w := newWorkload(t, seed, s)
		for range steps {
			err := w.step()
			require.True(t, err == nil || rejected(err), "%v", err)
			m, _ := dump(t, s)
			models = append(models, m)
		}
		return models
	}()

	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpTruncate, vfs.OpCreate, vfs.OpRename, vfs.OpSyncDir, vfs.OpClose} {
		for _, nth := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 20, 30, 45} {
			t.Run(fmt.Sprintf("%s-%d", op, nth), func(t *testing.T) {
				mem := vfs.NewMem()
				faulty := vfs.NewFaulty(mem, nil, vfs.WithPartialWrites(rand.New(rand.NewPCG(uint64(nth), 1))))
				var logs bytes.Buffer
				s, err := embedded.Open(faulty, dir, embedded.WithSnapshotEvery(4, 0), embedded.WithClock(fakeClock()),
					embedded.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				require.NoError(t, err)
				faulty.SetInjector(vfs.FailNth(op, nth, nil))
				w := newWorkload(t, seed, s)
				failedAt := 0
				for i := 1; i <= steps; i++ {
					err := w.step()
					if err != nil && !rejected(err) {
						require.ErrorIs(t, err, vfs.ErrInjected)
						failedAt = i
						break
					}
				}
				last := steps
				t.Logf("%s: failed at step %d", t.Name(), failedAt)
				if failedAt > 0 {
					last = failedAt
					got, _ := dump(t, s)
					require.Equal(t, ref[failedAt-1], got, "a failed commit is undone in memory")
					_, err := s.Create(ctx, "/after-failure", nil, 0)
					require.ErrorIs(t, err, vfs.ErrInjected, "writes fail once the log has failed")
				}
				crashed := mem.CrashClone()
				_ = s.Close() // may fail if the fault hits Close
				for name, fsys := range map[string]*vfs.MemFS{"restart": mem, "crash": crashed} {
					got := reopen(t, fsys)
					if !assertEqualAny(got, ref[max(last-1, 0)], ref[last]) {
						require.Equal(t, ref[last], got, "%s after a fault in step %d", name, last)
					}
				}
			})
		}
	}
}

// TestSnapshotAndReplay checks the files: snapshots are taken every N
// records and at Close, the log holds only what came after, and a reopen
// replays snapshot then log.
func TestSnapshotAndReplay(t *testing.T) {
	mem := vfs.NewMem()
	s, err := embedded.Open(mem, dir, embedded.WithSnapshotEvery(4, 0))
	require.NoError(t, err)
	_, err = mem.Stat(dir + "/" + embedded.SnapshotFile)
	require.ErrorIs(t, err, fs.ErrNotExist, "no snapshot before the first 4 records")
	require.Zero(t, logSize(t, mem))

	for i := range 10 {
		_, err := s.Create(ctx, fmt.Sprintf("/n%d", i), []byte{byte(i)}, 0)
		require.NoError(t, err)
		if i%4 == 3 {
			require.Zero(t, logSize(t, mem), "log emptied by the snapshot after record %d", i+1)
		} else {
			require.NotZero(t, logSize(t, mem))
		}
	}
	_, err = mem.Stat(dir + "/" + embedded.SnapshotFile)
	require.NoError(t, err)
	want, _ := dump(t, s)
	// 8 records are in the snapshot, 2 in the log.
	require.Equal(t, want, reopen(t, mem.CrashClone()))

	require.NoError(t, s.Close())
	require.Zero(t, logSize(t, mem), "Close snapshots and empties the log")
	require.Equal(t, want, reopen(t, mem))
}

// TestZxidsSurviveRestart: zxids spent on ephemeral nodes only (a broker
// registration, in Kafka the broker epoch) are never handed out again
// after a restart.
func TestZxidsSurviveRestart(t *testing.T) {
	mem := vfs.NewMem()
	s, err := embedded.Open(mem, dir)
	require.NoError(t, err)
	require.NoError(t, metadata.EnsurePath(ctx, s, "/brokers/ids"))
	_, err = s.Create(ctx, "/brokers/ids/0", []byte("{}"), metadata.Ephemeral)
	require.NoError(t, err)
	st, err := s.Set(ctx, "/brokers/ids/0", []byte("{1}"), 0)
	require.NoError(t, err)
	epoch := st.Mzxid
	crashed := mem.CrashClone()
	require.NoError(t, s.Close())

	for name, fsys := range map[string]vfs.FS{"crash": crashed, "restart": mem} {
		s, err := embedded.Open(fsys, dir)
		require.NoError(t, err)
		_, ok, err := s.Exists(ctx, "/brokers/ids/0")
		require.NoError(t, err)
		require.False(t, ok, "%s: ephemeral nodes do not survive", name)
		_, err = s.Create(ctx, "/brokers/ids/0", nil, metadata.Ephemeral)
		require.NoError(t, err)
		_, st, err := s.Get(ctx, "/brokers/ids/0")
		require.NoError(t, err)
		require.Greater(t, st.Czxid, epoch, "%s: the new broker epoch is above the old one", name)
		require.NoError(t, s.Close())
	}
}

func TestSessionIDsDifferAcrossRestarts(t *testing.T) {
	mem := vfs.NewMem()
	clock := fakeClock()
	seen := map[int64]bool{}
	for range 3 {
		s, err := embedded.Open(mem, dir, embedded.WithClock(clock))
		require.NoError(t, err)
		s2, err := s.NewSession()
		require.NoError(t, err)
		for _, id := range []int64{s.SessionID(), s2.SessionID()} {
			require.NotZero(t, id)
			require.False(t, seen[id], "session id %#x reused", id)
			seen[id] = true
		}
		require.NoError(t, s.Close())
	}
}

func TestExpireSession(t *testing.T) {
	s := embedded.New()
	defer s.Close()
	broker, err := s.NewSession()
	require.NoError(t, err)
	require.NoError(t, metadata.EnsurePath(ctx, s, "/brokers/ids"))
	_, err = broker.Create(ctx, "/brokers/ids/1", nil, metadata.Ephemeral)
	require.NoError(t, err)
	own, err := broker.Watch(ctx, "/brokers/ids", metadata.WatchChildren)
	require.NoError(t, err)
	other, err := s.Watch(ctx, "/brokers/ids/1", metadata.WatchExists)
	require.NoError(t, err)

	require.ErrorContains(t, s.ExpireSession(12345), "no open session")
	require.NoError(t, s.ExpireSession(broker.SessionID()))
	<-broker.Done()
	ev := <-own
	require.Equal(t, metadata.EventNotWatching, ev.Type)
	require.ErrorIs(t, ev.Err, metadata.ErrSessionExpired)
	require.Equal(t, metadata.Event{Type: metadata.EventDeleted, Path: "/brokers/ids/1"}, <-other)
	_, _, err = broker.Get(ctx, "/brokers/ids")
	require.ErrorIs(t, err, metadata.ErrSessionExpired)
	require.NoError(t, broker.Close())
	require.ErrorContains(t, s.ExpireSession(broker.SessionID()), "no open session")

	// The broker registers again with a new session.
	again, err := broker.OpenSession(ctx)
	require.NoError(t, err)
	_, err = again.Create(ctx, "/brokers/ids/1", nil, metadata.Ephemeral)
	require.NoError(t, err)
}

func TestClosedStore(t *testing.T) {
	s := embedded.New()
	sess, err := s.NewSession()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	<-sess.Done()
	_, _, err = sess.Get(ctx, "/")
	require.ErrorIs(t, err, metadata.ErrClosed)
	require.NoError(t, sess.Close())
	_, err = s.NewSession()
	require.ErrorIs(t, err, metadata.ErrClosed)
	_, err = s.OpenSession(ctx)
	require.ErrorIs(t, err, metadata.ErrClosed)
	_, err = sess.OpenSession(ctx)
	require.ErrorIs(t, err, metadata.ErrClosed)
	require.ErrorIs(t, s.ExpireSession(sess.SessionID()), metadata.ErrClosed)
	require.ErrorIs(t, s.Snapshot(), metadata.ErrClosed)
}

func TestOpenErrors(t *testing.T) {
	mem := vfs.NewMem()
	require.NoError(t, vfs.WriteFileAtomic(mem, "/", "file", []byte("x")))
	_, err := embedded.Open(mem, "/file/meta")
	require.Error(t, err)

	// A log that cannot be opened: the directory cannot be created.
	faulty := vfs.NewFaulty(vfs.NewMem(), vfs.FailPath(vfs.OpCreate, embedded.LogFile, nil))
	_, err = embedded.Open(faulty, dir)
	require.ErrorIs(t, err, vfs.ErrInjected)

	faulty = vfs.NewFaulty(vfs.NewMem(), vfs.FailPath(vfs.OpOpen, embedded.SnapshotFile, nil))
	_, err = embedded.Open(faulty, dir)
	require.ErrorIs(t, err, vfs.ErrInjected)
}

func TestOnRealDisk(t *testing.T) {
	d := t.TempDir()
	s, err := embedded.Open(vfs.OS, d)
	require.NoError(t, err)
	require.NoError(t, metadata.EnsurePath(ctx, s, "/config/topics"))
	_, err = s.Create(ctx, "/config/topics/t", []byte(`{"version":1,"config":{}}`), 0)
	require.NoError(t, err)
	want, _ := dump(t, s)
	require.NoError(t, s.Close())
	s, err = embedded.Open(vfs.OS, d)
	require.NoError(t, err)
	got, _ := dump(t, s)
	require.NoError(t, s.Close())
	require.Equal(t, want, got)
}

// TestSnapshotFailure: a snapshot that cannot be written is reported by
// Snapshot and logged by the automatic one, and the store carries on with
// the log.
func TestSnapshotFailure(t *testing.T) {
	mem := vfs.NewMem()
	faulty := vfs.NewFaulty(mem, vfs.FailPath(vfs.OpRename, embedded.SnapshotFile, nil))
	var logs bytes.Buffer
	s, err := embedded.Open(faulty, dir, embedded.WithSnapshotEvery(2, 0),
		embedded.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	for i := range 5 {
		_, err := s.Create(ctx, fmt.Sprintf("/n%d", i), nil, 0)
		require.NoError(t, err)
	}
	require.Contains(t, logs.String(), "metadata snapshot not written")
	require.ErrorIs(t, s.Snapshot(), vfs.ErrInjected)
	_, err = s.Create(ctx, "/after", nil, 0)
	require.NoError(t, err)
	want, _ := dump(t, s)
	require.NoError(t, s.Close(), "a failed snapshot at Close is only logged")
	_, err = mem.Stat(dir + "/" + embedded.SnapshotFile)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Equal(t, want, reopen(t, mem))
}
