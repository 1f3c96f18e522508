package replica

import (
	"slices"
	"strconv"
	"time"
)

// ISRUpdate asks the controller for a new ISR of a partition this broker
// leads (AlterPartition).
type ISRUpdate struct {
	Topic          string
	TopicID        [16]byte
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// ISRUpdateResult is the controller's answer: the partition's state (for
// a refusal too, when the controller knows it) or the error.
type ISRUpdateResult struct {
	Err            error
	ISR            []int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

// isrLoop checks every half of replica.lag.time.max.ms which followers
// fell out of sync, as Kafka's isr-expiration task, so that a stalled
// follower leaves the ISR within 1.5 × the lag.
func (m *Manager) isrLoop() {
	every := time.Duration(m.cfg.ReplicaLagTimeMaxMs/2) * time.Millisecond
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		now := m.now().UnixMilli()
		for _, p := range m.Partitions() {
			p.maybeShrinkISR(now)
		}
	}
}

// maybeShrinkISR asks to take the out-of-sync followers out of the ISR.
func (p *Partition) maybeShrinkISR(nowMs int64) {
	if p.m.cfg.AlterISR == nil {
		return
	}
	p.mu.RLock()
	leaderEpoch, partitionEpoch, cur := p.leaderEpoch, p.partitionEpoch, slices.Clone(p.isr)
	p.mu.RUnlock()
	p.hwMu.Lock()
	ls := p.leaderState
	if ls == nil {
		p.hwMu.Unlock()
		return
	}
	out := ls.ToShrink(nowMs, p.m.cfg.ReplicaLagTimeMaxMs)
	if len(out) == 0 {
		p.hwMu.Unlock()
		return
	}
	next := slices.DeleteFunc(slices.Clone(cur), func(r int32) bool { return slices.Contains(out, r) })
	ls.Propose(next)
	// What KAFKA-7838 asks: the leader's HW and LEO and each follower's
	// LEO when the ISR shrinks.
	attrs := []any{"topic", p.topic, "partition", p.index, "isr", cur, "new_isr", next, "out_of_sync", out,
		"high_watermark", ls.HW(), "log_end_offset", ls.LEO(), "lag_time_max_ms", p.m.cfg.ReplicaLagTimeMaxMs}
	for _, r := range out {
		if f, ok := ls.Follower(r); ok {
			attrs = append(attrs, "replica_"+strconv.Itoa(int(r))+"_leo", f.LEO, "replica_"+strconv.Itoa(int(r))+"_caught_up_ms_ago", nowMs-f.LastCaughtUpMs)
		}
	}
	p.hwMu.Unlock()
	p.m.lg.Warn("shrinking ISR", attrs...)
	p.sendISRUpdate(next, leaderEpoch, partitionEpoch)
}

// maybeExpandISR asks to add the followers that caught up; hwMu is held.
func (p *Partition) maybeExpandISRLocked(leaderEpoch, partitionEpoch int32, cur []int32) (next []int32, ok bool) {
	if p.m.cfg.AlterISR == nil || p.leaderState == nil {
		return nil, false
	}
	in := p.leaderState.ToExpand()
	if len(in) == 0 {
		return nil, false
	}
	next = append(slices.Clone(cur), in...)
	p.leaderState.Propose(next)
	return next, true
}

func (p *Partition) sendISRUpdate(next []int32, leaderEpoch, partitionEpoch int32) {
	p.mu.RLock()
	topicID := p.topicID
	p.mu.RUnlock()
	p.m.cfg.AlterISR(ISRUpdate{Topic: p.topic, TopicID: topicID, Partition: p.index, LeaderEpoch: leaderEpoch,
		PartitionEpoch: partitionEpoch, NewISR: next}, func(r ISRUpdateResult) { p.onISRUpdate(leaderEpoch, r) })
}

// onISRUpdate applies the controller's answer, if the partition is still
// led at the epoch it was asked in: the new ISR and partition epoch, or,
// refused, the state the controller has (same leader epoch) or nothing.
func (p *Partition) onISRUpdate(leaderEpoch int32, r ISRUpdateResult) {
	p.mu.Lock()
	if p.leader != p.m.cfg.BrokerID || p.leaderEpoch != leaderEpoch {
		p.mu.Unlock()
		return
	}
	adopt := r.LeaderEpoch == leaderEpoch && r.ISR != nil && r.PartitionEpoch >= p.partitionEpoch
	if adopt {
		p.m.countISRChange(len(p.isr), len(r.ISR))
		p.isr, p.partitionEpoch = slices.Clone(r.ISR), r.PartitionEpoch
	}
	p.mu.Unlock()
	p.hwMu.Lock()
	advanced := false
	if ls := p.leaderState; ls != nil {
		if adopt {
			advanced = ls.Commit(r.ISR)
		} else {
			advanced = ls.Abort()
		}
		if advanced {
			advanced = p.applyHighWatermarkLocked()
		}
	}
	p.hwMu.Unlock()
	if r.Err != nil {
		p.m.lg.Info("ISR change refused", "topic", p.topic, "partition", p.index, "err", r.Err, "isr", r.ISR)
	}
	if advanced {
		p.m.cfg.OnHighWatermark(p.topic, p.index)
	}
}
