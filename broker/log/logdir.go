package log

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Log directory failure, Kafka's KIP-112. An I/O error in any log of a
// directory, or in one of the directory's own files (the checkpoints),
// means the disk under it can no longer be trusted: the whole directory
// goes offline, not just the log that hit the error. Every path that can
// hit one reports to one failure channel (reportFailure); a single loop
// (failureLoop) takes the directory offline: its logs are failed and
// closed and leave the Manager, the failure is logged once at ERROR with
// the directory and the cause, and ManagerConfig.OnLogDirFailure tells
// the broker, which stops serving the partitions and notifies the
// controller. An offline directory comes back only at the next start.

// LogDirFailure is what OnLogDirFailure receives when a directory goes
// offline.
type LogDirFailure struct {
	Dir string
	// Err is the I/O error that took the directory offline.
	Err error
	// Partitions are the partitions whose logs were in it.
	Partitions []TopicPartition
	// AllOffline is set when no log directory is left online: Kafka's
	// broker then shuts down.
	AllOffline bool
}

// LogDirStatus is one configured log directory and, when it is offline,
// the error that took it offline.
type LogDirStatus struct {
	Dir string
	Err error
}

// reporter is the failure reporter of the logs of dir.
func (m *Manager) reporter(dir string) Option {
	return WithFailureReporter(func(err error) { m.reportFailure(dir, err) })
}

// reportFailure queues dir for the failure loop. It takes only failMu, a
// leaf lock, and never blocks: a Log calls it with its own lock held.
func (m *Manager) reportFailure(dir string, err error) {
	m.failMu.Lock()
	if _, seen := m.failing[dir]; !seen {
		m.failing[dir] = err
		m.failQueue = append(m.failQueue, dir)
	}
	m.failMu.Unlock()
	select {
	case m.failWake <- struct{}{}:
	default:
	}
}

// failureLoop takes the reported directories offline, one at a time, in
// the order they failed.
func (m *Manager) failureLoop() {
	for {
		select {
		case <-m.stop:
			return
		case <-m.failWake:
		}
		for {
			m.failMu.Lock()
			if len(m.failQueue) == 0 {
				m.failMu.Unlock()
				break
			}
			dir := m.failQueue[0]
			m.failQueue = m.failQueue[1:]
			err := m.failing[dir]
			m.failMu.Unlock()
			m.handleDirFailure(dir, err)
		}
	}
}

// handleDirFailure takes dir offline: its logs leave the Manager (so no
// loop or request finds them), each is failed and closed, and the broker
// is told.
func (m *Manager) handleDirFailure(dir string, cause error) {
	m.mu.Lock()
	if _, already := m.offline[dir]; already || m.closed {
		m.mu.Unlock()
		return
	}
	m.offline[dir] = cause
	tps, logs := m.takeDirLocked(dir)
	allOffline := len(m.offline) == len(m.cfg.LogDirs)
	m.mu.Unlock()

	offline := fmt.Errorf("%w: %s: %w", ErrLogDirOffline, dir, cause)
	for _, l := range logs {
		l.failClosed(offline)
	}
	slices.SortFunc(tps, compareTP)
	m.lg.Error("log directory offline: its partitions stop being served here until the broker restarts",
		"dir", dir, "err", cause, "partitions", len(tps), "all_offline", allOffline)
	if m.cfg.OnLogDirFailure != nil {
		m.cfg.OnLogDirFailure(LogDirFailure{Dir: dir, Err: cause, Partitions: tps, AllOffline: allOffline})
	}
}

// takeDirLocked removes the logs and future logs of dir from the Manager
// and returns them (the partitions of its logs, and every Log). The
// caller holds m.mu and closes them after releasing it.
func (m *Manager) takeDirLocked(dir string) ([]TopicPartition, []*Log) {
	var tps []TopicPartition
	var logs []*Log
	for tp, d := range m.dirOf {
		if d == dir {
			tps = append(tps, tp)
			logs = append(logs, m.logs[tp])
			delete(m.logs, tp)
			delete(m.dirOf, tp)
		}
	}
	for tp, f := range m.futures {
		if f.dir == dir {
			logs = append(logs, f.log)
			delete(m.futures, tp)
		}
	}
	m.perDir[dir] = 0
	return tps, logs
}

// OfflineDirs returns the offline log directories, sorted.
func (m *Manager) OfflineDirs() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.offline))
}

// OnlineDirs returns the log directories that are online, in config order.
func (m *Manager) OnlineDirs() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for _, d := range m.cfg.LogDirs {
		if _, off := m.offline[d]; !off {
			out = append(out, d)
		}
	}
	return out
}

// LogDirs returns every configured log directory, in config order, with
// the error of those offline.
func (m *Manager) LogDirs() []LogDirStatus {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]LogDirStatus, len(m.cfg.LogDirs))
	for i, d := range m.cfg.LogDirs {
		out[i] = LogDirStatus{Dir: d, Err: m.offline[d]}
	}
	return out
}

// DirOf returns the log directory holding a partition's log.
func (m *Manager) DirOf(topic string, partition int32) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, ok := m.dirOf[TopicPartition{Topic: topic, Partition: partition}]
	return d, ok
}

// pickDir returns the online log dir holding the fewest partitions (Kafka's
// default placement), under m.mu.
func (m *Manager) pickDir() (string, bool) {
	best, found := "", false
	for _, d := range m.cfg.LogDirs {
		if _, off := m.offline[d]; off {
			continue
		}
		if !found || m.perDir[d] < m.perDir[best] {
			best, found = d, true
		}
	}
	return best, found
}

// loadFailed decides what a directory that failed to load means. An I/O
// error takes it offline (Kafka goes on with the other directories); any
// other error, such as a partition found in two directories, stops the
// start. It returns the error that stops the start, if any.
func (m *Manager) loadFailed(dir string, err error) error {
	if !isIOError(err) {
		return err
	}
	m.mu.Lock()
	m.offline[dir] = err
	_, logs := m.takeDirLocked(dir)
	m.mu.Unlock()
	for _, l := range logs {
		l.closeWithoutFlush()
	}
	m.failMu.Lock()
	m.failing[dir] = err
	m.failMu.Unlock()
	m.lg.Error("log directory offline: it failed to load", "dir", dir, "err", err)
	return nil
}

// errAllOffline is the start's error when every log dir failed to load.
func errAllOffline(errs []error) error {
	return fmt.Errorf("%w: every log directory failed: %w", ErrLogDirOffline, errors.Join(errs...))
}

// compareTP orders partitions by topic, then partition.
func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}
