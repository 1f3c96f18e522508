package log

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/vfs"
)

// errorCounter is a slog handler that counts ERROR records (and passes
// every record on to the test's logger).
type errorCounter struct {
	slog.Handler
	mu     *sync.Mutex
	errors *[]string
}

func newErrorCounter(t *testing.T) (*slog.Logger, func() []string) {
	var mu sync.Mutex
	var msgs []string
	h := errorCounter{Handler: testLogger(t).Handler(), mu: &mu, errors: &msgs}
	return slog.New(h), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(msgs)
	}
}

func (h errorCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		*h.errors = append(*h.errors, r.Message)
		h.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h errorCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return errorCounter{Handler: h.Handler.WithAttrs(as), mu: h.mu, errors: h.errors}
}

func (h errorCounter) WithGroup(name string) slog.Handler {
	return errorCounter{Handler: h.Handler.WithGroup(name), mu: h.mu, errors: h.errors}
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dirFailureManager opens a Manager over testDirs on a faulty in-memory
// file system, with four partitions (two per dir) holding three batches
// each, flushed. It returns the failures it was told of.
func dirFailureManager(t *testing.T, fault *vfs.FaultyFS, lg *slog.Logger) (*Manager, chan LogDirFailure) {
	t.Helper()
	failures := make(chan LogDirFailure, 4)
	cfg := managerConfig(t, fault)
	cfg.Logger = lg
	cfg.OnLogDirFailure = func(f LogDirFailure) { failures <- f }
	m, err := OpenManager(cfg)
	require.NoError(t, err)
	for p := range int32(4) {
		l, err := m.CreateLog("t", p, cfg.DefaultConfig)
		require.NoError(t, err)
		for range 3 {
			_, err := l.Append(makeBatch(t, 2, 1000, 50), 0)
			require.NoError(t, err)
		}
		require.NoError(t, l.Flush(l.LogEndOffset()))
	}
	return m, failures
}

// partitionsIn returns the partitions of t whose log is in dir.
func partitionsIn(m *Manager, dir string) []TopicPartition {
	var out []TopicPartition
	for p := range int32(4) {
		if d, ok := m.DirOf("t", p); ok && d == dir {
			out = append(out, TopicPartition{Topic: "t", Partition: p})
		}
	}
	return out
}

// TestLogDirFailureTakesDirOffline: an ENOSPC on one log's append takes
// its whole dir offline: the append fails with ErrFailed and the cause,
// OnLogDirFailure names the dir and all its partitions, they leave the
// Manager, one ERROR line is logged, the other dir goes on serving and
// takes new logs, a log that may be in the offline dir is not created
// afresh, the offline dir gets no clean-shutdown marker, and a restart
// with the disk healthy brings back every flushed record.
func TestLogDirFailureTakesDirOffline(t *testing.T) {
	mem := vfs.NewMem()
	fault := vfs.NewFaulty(mem, nil)
	lg, errorLines := newErrorCounter(t)
	m, failures := dirFailureManager(t, fault, lg)
	d1, d2 := testDirs[0], testDirs[1]
	in1, in2 := partitionsIn(m, d1), partitionsIn(m, d2)
	require.Len(t, in1, 2)
	require.Len(t, in2, 2)

	fault.SetInjector(vfs.FailPath(vfs.OpWrite, d1+"/", syscall.ENOSPC))
	l, _ := m.GetLog("t", in1[0].Partition)
	_, err := l.Append(makeBatch(t, 2, 1000, 50), 0)
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, syscall.ENOSPC)

	var f LogDirFailure
	select {
	case f = <-failures:
	case <-time.After(10 * time.Second):
		t.Fatal("no log dir failure reported")
	}
	require.Equal(t, d1, f.Dir)
	require.ErrorIs(t, f.Err, syscall.ENOSPC)
	require.Equal(t, in1, f.Partitions)
	require.False(t, f.AllOffline)
	fault.SetInjector(nil)

	require.Equal(t, []string{d1}, m.OfflineDirs())
	require.Equal(t, []string{d2}, m.OnlineDirs())
	st := m.LogDirs()
	require.Len(t, st, 2)
	require.ErrorIs(t, st[0].Err, syscall.ENOSPC)
	require.NoError(t, st[1].Err)
	for _, tp := range in1 {
		_, ok := m.GetLog(tp.Topic, tp.Partition)
		require.False(t, ok, "%s is still served from the offline dir", tp)
	}
	// The other log of the offline dir, held by a reader, refuses writes
	// with the dir's error.
	other, err := m.GetOrCreateLog("t", in1[1].Partition, m.cfg.DefaultConfig, false)
	require.ErrorIs(t, err, ErrLogDirOffline, "a log that may be in the offline dir is created afresh")
	require.Nil(t, other)
	_, err = l.Append(makeBatch(t, 1, 1000, 50), 0)
	require.ErrorIs(t, err, ErrFailed)

	for _, tp := range in2 {
		l, ok := m.GetLog(tp.Topic, tp.Partition)
		require.True(t, ok)
		_, err := l.Append(makeBatch(t, 2, 1000, 50), 0)
		require.NoError(t, err)
	}
	nl, err := m.CreateLog("new", 0, m.cfg.DefaultConfig)
	require.NoError(t, err)
	require.Equal(t, d2+"/new-0", nl.Dir())
	require.NoError(t, m.CheckpointRecoveryPoints(), "checkpoints skip the offline dir")

	require.NoError(t, m.Close())
	require.Equal(t, []string{"log directory offline: its partitions stop being served here until the broker restarts"},
		errorLines(), "one ERROR line for the failure")
	clean, _, err := checkpoint.ReadCleanShutdown(mem, d1)
	require.NoError(t, err)
	require.False(t, clean, "the offline dir got a clean-shutdown marker")
	clean, _, err = checkpoint.ReadCleanShutdown(mem, d2)
	require.NoError(t, err)
	require.True(t, clean)

	// The disk is healthy again: a restart serves everything flushed.
	m2, err := OpenManager(managerConfig(t, mem))
	require.NoError(t, err)
	defer m2.Close()
	require.Empty(t, m2.OfflineDirs())
	for _, tp := range in1 {
		l, ok := m2.GetLog(tp.Topic, tp.Partition)
		require.True(t, ok)
		require.Equal(t, int64(6), l.LogEndOffset(), "%s lost flushed records", tp)
	}
	for _, tp := range in2 {
		l, _ := m2.GetLog(tp.Topic, tp.Partition)
		require.Equal(t, int64(8), l.LogEndOffset())
	}
}

// TestLogDirFailureFromCheckpoint: a checkpoint file that cannot be
// written takes its dir offline too (it is the dir's own file, not a
// log's), and when the last dir goes, AllOffline says so.
func TestLogDirFailureFromCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	fault := vfs.NewFaulty(mem, nil)
	m, failures := dirFailureManager(t, fault, testLogger(t))
	defer m.Close()
	fault.SetInjector(vfs.FailPath(vfs.OpAny, testDirs[1]+"/"+checkpoint.RecoveryPointFile, syscall.EIO))
	require.ErrorIs(t, m.CheckpointRecoveryPoints(), syscall.EIO)
	f := <-failures
	require.Equal(t, testDirs[1], f.Dir)
	require.False(t, f.AllOffline)

	fault.SetInjector(vfs.FailPath(vfs.OpSync, testDirs[0]+"/", syscall.EIO))
	l, _ := m.GetLog("t", partitionsIn(m, testDirs[0])[0].Partition)
	_, err := l.Append(makeBatch(t, 1, 1000, 50), 0)
	require.NoError(t, err)
	require.ErrorIs(t, l.Flush(l.LogEndOffset()), syscall.EIO)
	f = <-failures
	require.Equal(t, testDirs[0], f.Dir)
	require.True(t, f.AllOffline)
	_, err = m.CreateLog("late", 0, m.cfg.DefaultConfig)
	require.ErrorIs(t, err, ErrLogDirOffline)
}

// TestLogDirFailureAtLoad: a dir that fails to load with an I/O error is
// offline from the start and the other serves; when every dir fails the
// Manager does not open.
func TestLogDirFailureAtLoad(t *testing.T) {
	mem := vfs.NewMem()
	m, _ := dirFailureManager(t, vfs.NewFaulty(mem, nil), testLogger(t))
	in2 := partitionsIn(m, testDirs[1])
	require.NoError(t, m.Close())

	fault := vfs.NewFaulty(mem, vfs.FailPath(vfs.OpReadDir, testDirs[0], syscall.EIO))
	m2, err := OpenManager(managerConfig(t, fault))
	require.NoError(t, err)
	require.Equal(t, []string{testDirs[0]}, m2.OfflineDirs())
	for _, tp := range in2 {
		_, ok := m2.GetLog(tp.Topic, tp.Partition)
		require.True(t, ok)
	}
	_, err = m2.GetOrCreateLog("t", 9, m2.cfg.DefaultConfig, false)
	require.ErrorIs(t, err, ErrLogDirOffline)
	require.NoError(t, m2.Close())

	fault.SetInjector(vfs.FailPath(vfs.OpReadDir, "/kafka/d", syscall.EIO))
	_, err = OpenManager(managerConfig(t, fault))
	require.ErrorIs(t, err, ErrLogDirOffline)
	require.ErrorIs(t, err, syscall.EIO)

	// A logical error (not I/O) still stops the start: the same partition
	// in both dirs.
	fault.SetInjector(nil)
	require.NoError(t, vfs.MkdirAllSync(mem, testDirs[0]+"/"+in2[0].String(), 0o755))
	_, err = OpenManager(managerConfig(t, mem))
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrLogDirOffline))
}
