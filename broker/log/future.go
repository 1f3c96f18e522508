package log

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
)

// Future logs: moving a replica between log dirs (KIP-113). A future log
// is a second log of a partition, in the directory the replica moves to,
// named <topic>-<partition>.<uuid>-future as Kafka names it. The replica
// manager copies the current log into it (ReplicaAlterLogDirsThread) and,
// once it has caught up with appends stopped, PromoteFutureLog makes it
// the partition's log: it is renamed <topic>-<partition> and the current
// log's directory is deleted as DeleteLog deletes one. A future log found
// at start-up is loaded, so that the move resumes, as in Kafka.

// futureDirSuffix ends the directory name of a future log.
const futureDirSuffix = "-future"

// ErrLogDirNotFound is LOG_DIR_NOT_FOUND: the directory is not one of the
// broker's log.dirs.
var ErrLogDirNotFound = errors.New("log: not a configured log directory")

// futureLog is a future log and the log dir it is in.
type futureLog struct {
	log *Log
	dir string
}

// futureDirName is <topic>-<partition>.<uuid, 32 hex>-future, the topic
// cut so that the name fits 255 bytes (Kafka's logFutureDirName).
func futureDirName(tp TopicPartition) string {
	var id [16]byte
	rand.Read(id[:])
	suffix := fmt.Sprintf("-%d.%s%s", tp.Partition, hex.EncodeToString(id[:]), futureDirSuffix)
	return tp.Topic[:min(len(tp.Topic), 255-len(suffix))] + suffix
}

// parseFutureDirName returns the partition of a future log's directory.
func parseFutureDirName(name string) (TopicPartition, bool) {
	base, ok := strings.CutSuffix(name, futureDirSuffix)
	if !ok {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(base, '.')
	if i < 0 || len(base)-i-1 != 32 {
		return TopicPartition{}, false
	}
	if _, err := hex.DecodeString(base[i+1:]); err != nil {
		return TopicPartition{}, false
	}
	topic, partition, ok := ParseTopicPartition(base[:i])
	return TopicPartition{Topic: topic, Partition: partition}, ok
}

// checkDir returns dir cleaned if it is an online log dir.
func (m *Manager) checkDir(dir string) (string, error) {
	dir = filepath.Clean(dir)
	if !slices.Contains(m.cfg.LogDirs, dir) {
		return "", fmt.Errorf("%w: %s", ErrLogDirNotFound, dir)
	}
	if _, off := m.offline[dir]; off {
		return "", fmt.Errorf("%w: %s", ErrLogDirOffline, dir)
	}
	return dir, nil
}

// CheckLogDir reports whether dir can take a log: ErrLogDirNotFound when
// it is not one of log.dirs, ErrLogDirOffline when it is offline.
func (m *Manager) CheckLogDir(dir string) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, err := m.checkDir(dir)
	return err
}

// SetPreferredDir makes dir the log dir of the partition's log when it is
// created (AlterReplicaLogDirs for a replica this broker does not have
// yet, as Kafka's maybeUpdatePreferredLogDir).
func (m *Manager) SetPreferredDir(topic string, partition int32, dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, err := m.checkDir(dir)
	if err != nil {
		return err
	}
	m.preferred[TopicPartition{Topic: topic, Partition: partition}] = dir
	return nil
}

// CreateFutureLog returns the future log of a partition in dir, creating
// it (empty, with the current log's topic id) if there is none there; a
// future log in another dir is removed first (the move changed its
// destination). The partition must have a current log, in another dir.
func (m *Manager) CreateFutureLog(topic string, partition int32, dir string, cfg Config) (*Log, error) {
	tp := TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	dir, err := m.checkDir(dir)
	cur, ok := m.logs[tp]
	switch {
	case err != nil:
	case !ok:
		err = fmt.Errorf("%s: %w", tp, ErrUnknownLog)
	case m.dirOf[tp] == dir:
		err = fmt.Errorf("future log of %s: the log is in %s already", tp, dir)
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if f, ok := m.futures[tp]; ok {
		if f.dir == dir {
			m.mu.Unlock()
			return f.log, nil
		}
		delete(m.futures, tp)
		m.mu.Unlock()
		m.removeFuture(tp, f)
		m.mu.Lock()
	}
	m.creations.Add(1)
	defer m.creations.Done()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}

	path := dir + "/" + futureDirName(tp)
	l, err := Open(path, cfg, WithFS(m.fsys), WithLogger(m.lg), WithClock(m.now), WithCleanShutdown(true), m.reporter(dir))
	if err != nil {
		if isDeviceError(err) {
			m.reportFailure(dir, err)
		}
		return nil, fmt.Errorf("create future log %s: %w", tp, err)
	}
	if id, err := checkpoint.ReadPartitionMetadata(m.fsys, cur.Dir()); err == nil {
		err = l.WritePartitionMetadata(id)
		if err != nil {
			l.closeWithoutFlush()
			_ = m.fsys.RemoveAll(path)
			return nil, fmt.Errorf("create future log %s: %w", tp, err)
		}
	}
	m.mu.Lock()
	_, stillThere := m.logs[tp]
	_, other := m.futures[tp]
	if m.closed || !stillThere || other {
		m.mu.Unlock()
		l.closeWithoutFlush()
		_ = m.fsys.RemoveAll(path)
		return nil, fmt.Errorf("create future log %s: the partition changed meanwhile: %w", tp, ErrClosed)
	}
	m.futures[tp] = futureLog{log: l, dir: dir}
	m.mu.Unlock()
	m.lg.Info("created future log", "topic", topic, "partition", partition, "dir", dir)
	return l, nil
}

// FutureLog returns the future log of a partition and its dir.
func (m *Manager) FutureLog(topic string, partition int32) (*Log, string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.futures[TopicPartition{Topic: topic, Partition: partition}]
	return f.log, f.dir, ok
}

// FutureLogs returns every future log by partition, with its dir.
func (m *Manager) FutureLogs() map[TopicPartition]LogDirStatus {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[TopicPartition]LogDirStatus, len(m.futures))
	for tp, f := range m.futures {
		out[tp] = LogDirStatus{Dir: f.dir}
	}
	return out
}

// AbortFutureLog removes a partition's future log (the move was
// cancelled, or the partition deleted).
func (m *Manager) AbortFutureLog(topic string, partition int32) {
	tp := TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	f, ok := m.futures[tp]
	delete(m.futures, tp)
	m.mu.Unlock()
	if ok {
		m.removeFuture(tp, f)
	}
}

// removeFuture closes a future log no longer listed and removes its
// directory (nothing reads it but DescribeLogDirs' size).
func (m *Manager) removeFuture(tp TopicPartition, f futureLog) {
	f.log.closeWithoutFlush()
	if err := m.fsys.RemoveAll(f.log.Dir()); err != nil {
		m.lg.Warn("future log not removed; it is removed at the next start", "topic", tp.Topic,
			"partition", tp.Partition, "dir", f.log.Dir(), "err", err)
		return
	}
	m.lg.Info("removed future log", "topic", tp.Topic, "partition", tp.Partition, "dir", f.dir)
}

// PromoteFutureLog makes the partition's future log its log (Kafka's
// replaceCurrentWithFutureLog). The caller has stopped every write to the
// current log and copied all of it: the future log's end is the current
// one's. The future log is flushed and closed, renamed
// <topic>-<partition>, and opened again with the current log's log start
// offset and high watermark; the current log's directory is then renamed
// for deletion and removed after file.delete.delay.ms, like DeleteLog's,
// so reads already handed out stay valid. As in Kafka, a crash between
// the two renames leaves the partition in two log dirs, which the next
// start refuses to guess about (it names both).
func (m *Manager) PromoteFutureLog(topic string, partition int32) (*Log, error) {
	tp := TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	cur, ok := m.logs[tp]
	f, fok := m.futures[tp]
	curDir := m.dirOf[tp]
	if !ok || !fok || m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("promote future log of %s: %w", tp, ErrUnknownLog)
	}
	m.creations.Add(1)
	defer m.creations.Done()
	m.mu.Unlock()
	fl := f.log
	if fl.LogEndOffset() != cur.LogEndOffset() {
		return nil, fmt.Errorf("promote future log of %s: it ends at %d, the log at %d", tp, fl.LogEndOffset(), cur.LogEndOffset())
	}
	lso, hw, leo := cur.LogStartOffset(), cur.HighWatermark(), cur.LogEndOffset()
	cfg := cur.Config()
	if err := fl.Close(); err != nil {
		m.AbortFutureLog(topic, partition)
		return nil, fmt.Errorf("promote future log of %s: %w", tp, err)
	}
	final := f.dir + "/" + tp.String()
	if err := m.fsys.Rename(fl.Dir(), final); err != nil {
		if isIOError(err) {
			m.reportFailure(f.dir, err)
		}
		m.AbortFutureLog(topic, partition)
		return nil, fmt.Errorf("promote future log of %s: %w", tp, err)
	}
	if err := m.fsys.SyncDir(f.dir); err != nil {
		m.reportFailure(f.dir, err)
		return nil, fmt.Errorf("promote future log of %s: %w", tp, err)
	}
	// The current log: nothing more written, then renamed away.
	cur.stop()
	doomed := curDir + "/" + deleteDirName(tp)
	if err := m.fsys.Rename(cur.Dir(), doomed); err != nil {
		// Both dirs hold the partition: the dir of the current log is
		// not to be trusted any more.
		m.reportFailure(curDir, err)
		return nil, fmt.Errorf("promote future log of %s: %w", tp, err)
	}
	if err := m.fsys.SyncDir(curDir); err != nil {
		m.lg.Warn("promote future log: directory sync failed", "topic", topic, "partition", partition, "err", err)
	}
	nl, err := Open(final, cfg, WithFS(m.fsys), WithLogger(m.lg), WithClock(m.now), WithCleanShutdown(true),
		WithRecoveryPoint(leo), WithLogStartOffset(lso), WithHighWatermark(hw), m.reporter(f.dir))
	if err != nil {
		if isIOError(err) {
			m.reportFailure(f.dir, err)
		}
		return nil, fmt.Errorf("promote future log of %s: reopen: %w", tp, err)
	}
	m.mu.Lock()
	delete(m.futures, tp)
	m.perDir[curDir]--
	m.put(tp, nl, f.dir)
	closing := m.closed
	if !closing {
		m.deleting.Add(1)
	}
	m.mu.Unlock()
	if closing {
		if err := m.removeDoomed(cur, doomed, curDir); err != nil {
			m.lg.Warn("delete log failed; the directory is removed at the next start", "topic", topic,
				"partition", partition, "err", err)
		}
	} else {
		m.removeLater(cur, doomed, curDir)
	}
	m.lg.Info("replica moved to another log dir", "topic", topic, "partition", partition,
		"from", curDir, "to", f.dir, "log_end_offset", leo)
	return nl, nil
}

// CopyTo copies the batches of l from dst's log end offset on into dst (a
// future log), at most about maxBytes (at least one batch), keeping their
// offsets and leader epochs (AppendAsFollower), as Kafka's
// ReplicaAlterLogDirsThread fetches from the current replica. It returns
// the bytes copied; 0 when dst has caught up. First dst is made a prefix
// of l again where l changed under it: truncated (a replica that became a
// follower), by the leader epochs as a follower truncates, or moved past
// by retention (dst restarts at the batch holding l's log start offset).
func (l *Log) CopyTo(dst *Log, maxBytes int32) (int64, error) {
	if fe, ok := dst.LatestEpoch(); ok {
		if e, end := l.EndOffsetForEpoch(fe); e != UndefinedEpoch {
			if e != fe {
				// l never had dst's latest epoch: keep what both have of e.
				if _, dend := dst.EndOffsetForEpoch(e); dend != UndefinedEpochOffset {
					end = min(end, dend)
				}
			}
			if end < dst.LogEndOffset() {
				if _, err := dst.TruncateTo(end); err != nil {
					return 0, err
				}
			}
		}
	}
	if leo := l.LogEndOffset(); dst.LogEndOffset() > leo {
		if _, err := dst.TruncateTo(leo); err != nil {
			return 0, err
		}
	}
	off := dst.LogEndOffset()
	if off >= l.LogEndOffset() {
		return 0, nil
	}
	// Below l's log start (a new future log, or retention moved past it):
	// from the batch holding the log start on, dst restarting there.
	behind := off < l.LogStartOffset()
	info, err := l.ReadRetained(max(off, l.LogStartOffset()), maxBytes, -1)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, info.Region.Length)
	_, err = info.Region.File.ReadAt(buf, info.Region.Position)
	info.Region.Release()
	if err != nil {
		return 0, fmt.Errorf("copy %s: read: %w", l.dir, err)
	}
	// Whole batches from off on (the region may start with a batch below
	// it and end inside one).
	start, end := 0, 0
	for p := 0; p+record.BatchHeaderSize <= len(buf); {
		size := record.Batch(buf[p:]).Size()
		if size <= 0 || p+size > len(buf) {
			break
		}
		if record.Batch(buf[p:]).LastOffset() < off {
			start = p + size
		}
		p += size
		end = p
	}
	if start >= end {
		return 0, nil
	}
	if behind {
		if base := record.Batch(buf[start:]).BaseOffset(); base != off {
			if err := dst.TruncateFullyAndStartAt(base); err != nil {
				return 0, err
			}
		}
	}
	if _, err := dst.AppendAsFollower(buf[start:end]); err != nil {
		return 0, err
	}
	return int64(end - start), nil
}
