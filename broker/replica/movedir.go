package replica

import (
	"errors"
	"fmt"
	"time"

	"github.com/qk-project/qk/broker/log"
)

// Moving a replica between the broker's log dirs (KIP-113,
// AlterReplicaLogDirs). AlterLogDir creates the partition's future log in
// the destination dir; a mover goroutine per partition (Kafka's
// ReplicaAlterLogDirsThread) copies the current log into it, throttled by
// replica.alter.log.dirs.io.max.bytes.per.second, and once it has caught
// up takes the partition's write lock (no append runs), copies what came
// meanwhile and swaps the logs (log.Manager.PromoteFutureLog). The
// partition is served from the current log throughout; readers holding
// it keep reading its files until they are deleted, after
// file.delete.delay.ms. A move that finds its future log gone (cancelled,
// the partition deleted, the destination dir offline) ends.

// ErrReplicaNotAvailable is REPLICA_NOT_AVAILABLE: AlterReplicaLogDirs for
// a replica this broker does not host (yet). Its log will be created in
// the asked dir.
var ErrReplicaNotAvailable = errors.New("replica: replica not available")

// moveChunk is the most bytes one copy step moves; the throttle is checked
// between steps.
const moveChunk = 1 << 20

// AlterLogDir moves the partition's replica to the log dir dir. A replica
// already there has a move to elsewhere cancelled; one not hosted here
// gets dir as its log dir when it is created, and ErrReplicaNotAvailable.
func (m *Manager) AlterLogDir(topic string, partition int32, dir string) error {
	logs := m.cfg.Logs
	if err := logs.CheckLogDir(dir); err != nil {
		return err
	}
	p, err := m.Partition(topic, partition)
	if errors.Is(err, ErrUnknownTopicOrPartition) {
		if err := logs.SetPreferredDir(topic, partition, dir); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s-%d is not hosted here; its log will be created in %s", ErrReplicaNotAvailable, topic, partition, dir)
	}
	if err != nil {
		return err
	}
	if cur, ok := logs.DirOf(topic, partition); ok && cur == dir {
		logs.AbortFutureLog(topic, partition)
		return nil
	}
	if _, err := logs.CreateFutureLog(topic, partition, dir, p.Log().Config()); err != nil {
		return err
	}
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	running := m.movers[tp]
	m.movers[tp] = true
	m.mu.Unlock()
	if !running {
		m.lg.Info("moving replica to another log dir", "topic", topic, "partition", partition, "dir", dir)
		m.loops.Go(func() { m.move(p) })
	}
	return nil
}

// resumeMove starts the mover of a partition whose future log was found at
// start-up (a move the last process did not finish).
func (m *Manager) resumeMove(p *Partition) {
	if _, dir, ok := m.cfg.Logs.FutureLog(p.topic, p.index); ok {
		if err := m.AlterLogDir(p.topic, p.index, dir); err != nil {
			m.lg.Warn("replica move not resumed", "topic", p.topic, "partition", p.index, "dir", dir, "err", err)
		}
	}
}

// move copies p's log into its future log until it can swap them.
func (m *Manager) move(p *Partition) {
	tp := log.TopicPartition{Topic: p.topic, Partition: p.index}
	defer func() {
		m.mu.Lock()
		delete(m.movers, tp)
		m.mu.Unlock()
	}()
	logs := m.cfg.Logs
	for {
		select {
		case <-m.stop:
			return // the future log stays: the move resumes at the next start
		default:
		}
		future, _, ok := logs.FutureLog(p.topic, p.index)
		if !ok {
			return
		}
		if cur, err := m.Partition(p.topic, p.index); err != nil || cur != p {
			logs.AbortFutureLog(p.topic, p.index) // no longer hosted as it was
			return
		}
		n, err := p.Log().CopyTo(future, moveChunk)
		if err != nil {
			m.lg.Warn("replica move failed; it stops", "topic", p.topic, "partition", p.index, "err", err)
			logs.AbortFutureLog(p.topic, p.index)
			return
		}
		if n > 0 {
			if !m.throttleMove(n) {
				return
			}
			continue
		}
		done, err := m.swapLogs(p, future)
		if err != nil {
			m.lg.Warn("replica move failed at the swap; it stops", "topic", p.topic, "partition", p.index, "err", err)
			return
		}
		if done {
			return
		}
	}
}

// throttleMove records n bytes moved and waits while the move rate is over
// replica.alter.log.dirs.io.max.bytes.per.second; false when the Manager
// is closing.
func (m *Manager) throttleMove(n int64) bool {
	q := m.cfg.AlterLogDirsQuota
	if q == nil {
		return true
	}
	q.Record(m.now(), n)
	for q.Exceeded(m.now()) {
		t := time.NewTimer(10 * time.Millisecond) // the quota's samples are 1 s: 10 ms is fine-grained enough
		select {
		case <-m.stop:
			t.Stop()
			return false
		case <-t.C:
		}
	}
	return true
}

// swapLogs makes the caught-up future log the partition's log, with
// appends stopped (the partition's write lock). It reports false when
// appends came meanwhile and did not fit one more copy step: the mover
// goes on copying.
func (m *Manager) swapLogs(p *Partition, future *log.Log) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.Log()
	for range 4 {
		n, err := cur.CopyTo(future, moveChunk)
		if err != nil {
			m.cfg.Logs.AbortFutureLog(p.topic, p.index)
			return false, err
		}
		if n == 0 {
			break
		}
	}
	if future.LogEndOffset() != cur.LogEndOffset() {
		return false, nil
	}
	// A leader epoch begun with no batch yet (a new leadership) is in the
	// current log's epoch cache only: the future log takes it too.
	if le, ok := cur.LatestEpoch(); ok {
		if fe, ok := future.LatestEpoch(); !ok || fe < le {
			if err := future.AssignLeaderEpoch(le); err != nil {
				m.cfg.Logs.AbortFutureLog(p.topic, p.index)
				return false, err
			}
		}
	}
	nl, err := m.cfg.Logs.PromoteFutureLog(p.topic, p.index)
	if err != nil {
		return false, err
	}
	p.log.Store(nl)
	return true, nil
}
