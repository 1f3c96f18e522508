package log

import (
	"errors"
	"fmt"
	"time"

	"github.com/qk-project/qk/broker/log/checkpoint"
)

// cleanerCheckpoint passes a partition's entry of cleaner-offset-checkpoint
// to Open (-1 when absent).
func cleanerCheckpoint(offsets map[TopicPartition]int64, tp TopicPartition) Option {
	off, ok := offsets[tp]
	if !ok {
		off = -1
	}
	return WithCleanerCheckpoint(off)
}

// startCleaner starts the background cleaner (one thread, as
// log.cleaner.threads=1): it cleans the dirtiest qualifying log, again at
// once while there was something to clean, else after
// log.cleaner.backoff.ms.
func (m *Manager) startCleaner() {
	if !m.cfg.CleanerEnable {
		return
	}
	backoff := interval(m.cfg.CleanerBackoffMs, 15_000)
	if backoff <= 0 {
		backoff = 15 * time.Second
	}
	m.lg.Debug("starting log cleaner", "backoff", backoff.String())
	m.wg.Go(func() {
		t := time.NewTimer(backoff)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
			wait := backoff
			if cleaned, err := m.CleanDirtiest(); err != nil {
				m.lg.Warn("log cleaner failed", "err", err)
			} else if cleaned {
				wait = 0
			}
			t.Reset(wait)
		}
	})
}

// CleanDirtiest cleans the compacted log with the highest dirty ratio
// among those that qualify (min.cleanable.dirty.ratio reached or
// max.compaction.lag.ms passed), and reports whether it cleaned one.
func (m *Manager) CleanDirtiest() (bool, error) {
	var best *Log
	bestRatio := -1.0
	for _, l := range m.Logs() {
		if ratio, ok := l.DirtyRatio(); ok && ratio > bestRatio {
			best, bestRatio = l, ratio
		}
	}
	if best == nil {
		return false, nil
	}
	st, err := m.clean(best, false)
	return st.Cleaned, err
}

// CleanNow cleans one partition's log at once, below
// min.cleanable.dirty.ratio too (tests, an admin trigger); the lag rules
// still apply. A log that does not compact is left alone.
func (m *Manager) CleanNow(topic string, partition int32) (CleanStats, error) {
	l, ok := m.GetLog(topic, partition)
	if !ok {
		return CleanStats{}, fmt.Errorf("clean %s-%d: %w", topic, partition, ErrUnknownLog)
	}
	return m.clean(l, true)
}

func (m *Manager) clean(l *Log, force bool) (CleanStats, error) {
	st, err := l.Compact(CleanOptions{DedupeBufferSize: m.cfg.CleanerDedupeBufferSize, Force: force})
	if err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrCleanAborted) {
			return st, nil
		}
		return st, fmt.Errorf("clean %s-%d: %w", l.Topic(), l.Partition(), err)
	}
	if st.Cleaned {
		if err := m.CheckpointCleanerOffsets(); err != nil {
			return st, err
		}
	}
	return st, nil
}

// CheckpointCleanerOffsets writes cleaner-offset-checkpoint in every log
// dir: the first dirty offset of each compacted log that was cleaned.
func (m *Manager) CheckpointCleanerOffsets() error {
	return m.writeCheckpoints(checkpoint.CleanerOffsetFile, m.byDir(func(l *Log) (int64, bool) {
		off := l.FirstDirtyOffset()
		return off, off >= 0 && l.Config().compacts()
	}))
}
