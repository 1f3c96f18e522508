package replica

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/qk-project/qk/broker/log"
)

// TopicStats counts one topic's client traffic on this broker (Kafka's
// BrokerTopicMetrics): what producers appended here as leader and what
// consumers fetched, replication excluded. Each hosted Partition holds a
// pointer to its topic's, resolved when the partition is created, so the
// produce and fetch paths add to atomics and look nothing up.
type TopicStats struct {
	BytesIn    atomic.Uint64
	MessagesIn atomic.Uint64
	BytesOut   atomic.Uint64

	partitions int // hosted partitions of the topic; guarded by Manager.mu
}

// ISRChanges counts the ISR changes of partitions led here (Kafka's
// IsrShrinksPerSec and IsrExpandsPerSec): those this broker asked for and
// the controller accepted, and those the controller made (a follower's
// controlled shutdown).
type ISRChanges struct {
	Shrinks, Expands uint64
}

// topicStatsLocked returns the topic's stats, creating them; m.mu is held
// for writing.
func (m *Manager) topicStatsLocked(topic string) *TopicStats {
	ts := m.topicStats[topic]
	if ts == nil {
		ts = &TopicStats{}
		m.topicStats[topic] = ts
	}
	return ts
}

// TopicStats returns the traffic counters of every topic with a partition
// hosted here. The counters are live: read them with Load.
func (m *Manager) TopicStats() map[string]*TopicStats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.topicStats)
}

// countISRChange counts an ISR of a partition led here going from
// before to after members.
func (m *Manager) countISRChange(before, after int) {
	switch {
	case after < before:
		m.isrShrinks.Add(1)
	case after > before:
		m.isrExpands.Add(1)
	}
}

// ISRChanges returns the ISR shrinks and expands so far.
func (m *Manager) ISRChanges() ISRChanges {
	return ISRChanges{Shrinks: m.isrShrinks.Load(), Expands: m.isrExpands.Load()}
}

// CountBytesOut adds n bytes fetched by a consumer (not a follower) to the
// topic's BytesOut.
func (p *Partition) CountBytesOut(n int64) {
	if n > 0 {
		p.stats.BytesOut.Add(uint64(n))
	}
}

// FollowerStatus is the leader's view of one follower, for status pages.
type FollowerStatus struct {
	ID int32
	// LogEndOffset is the follower's LEO as of its last fetch, -1 before
	// its first fetch in this leader epoch.
	LogEndOffset int64
	// LastCaughtUpMs is when (ms since the epoch) it last had every
	// record the leader had, 0 if never in this leader epoch.
	LastCaughtUpMs int64
	InISR          bool
}

// Status is a snapshot of a hosted partition, leader or follower.
type Status struct {
	Topic       string
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	IsLeader    bool
	Replicas    []int32
	ISR         []int32
	// MinInsyncReplicas is the topic's min.insync.replicas.
	MinInsyncReplicas int
	LogStartOffset    int64
	LogEndOffset      int64
	HighWatermark     int64
	LastStableOffset  int64
	Size              int64
	// OpenTransactions are the partition's open transactions, oldest
	// first (log.Log.OngoingTxnStarts).
	OpenTransactions []log.TxnStart
	// Followers are the leader's followers by id; nil on a follower.
	Followers []FollowerStatus
}

// Status returns the partition's state. It takes the partition's locks
// one after the other, briefly, and never together (LOCKS.md), so the
// fields are each current but not one atomic snapshot.
func (p *Partition) Status() Status {
	p.mu.RLock()
	st := Status{Topic: p.topic, Partition: p.index, Leader: p.leader, LeaderEpoch: p.leaderEpoch,
		IsLeader: p.leader == p.m.cfg.BrokerID, Replicas: slices.Clone(p.replicas), ISR: slices.Clone(p.isr),
		MinInsyncReplicas: p.config.MinInsyncReplicas}
	p.mu.RUnlock()
	if st.IsLeader {
		p.hwMu.Lock()
		if ls := p.leaderState; ls != nil {
			for _, r := range st.Replicas {
				f, ok := ls.Follower(r)
				if !ok {
					continue
				}
				st.Followers = append(st.Followers, FollowerStatus{ID: r, LogEndOffset: f.LEO,
					LastCaughtUpMs: f.LastCaughtUpMs, InISR: slices.Contains(st.ISR, r)})
			}
		}
		p.hwMu.Unlock()
	}
	st.LogStartOffset = p.Log().LogStartOffset()
	st.LogEndOffset = p.Log().LogEndOffset()
	st.HighWatermark = p.Log().HighWatermark()
	st.LastStableOffset = p.LastStableOffset()
	st.OpenTransactions = p.Log().OngoingTxnStarts()
	st.Size = p.Log().Size()
	return st
}

// Health is what the partition gauges of a broker count: Kafka's
// UnderReplicatedPartitions and UnderMinIsrPartitionCount count the
// partitions this broker leads.
type Health struct {
	Hosted, Leader  int
	UnderReplicated int // led here, ISR smaller than the replicas
	UnderMinISR     int // led here, ISR smaller than min.insync.replicas
	AtMinISR        int // led here, ISR exactly min.insync.replicas
	// LogSizes are the partitions' log sizes in bytes (Health(true)).
	LogSizes map[log.TopicPartition]int64
}

// Health counts the hosted partitions by replication state, taking each
// partition's read lock briefly; with sizes it also reads every log's
// size.
func (m *Manager) Health(sizes bool) Health {
	var h Health
	if sizes {
		h.LogSizes = map[log.TopicPartition]int64{}
	}
	m.mu.RLock()
	ps := slices.Collect(maps.Values(m.partitions))
	m.mu.RUnlock()
	for _, p := range ps {
		h.Hosted++
		p.mu.RLock()
		leader := p.leader == p.m.cfg.BrokerID
		nISR, nReplicas, minISR := len(p.isr), len(p.replicas), p.config.MinInsyncReplicas
		p.mu.RUnlock()
		if leader {
			h.Leader++
			if nISR < nReplicas {
				h.UnderReplicated++
			}
			if nISR < minISR {
				h.UnderMinISR++
			}
			if nISR == minISR {
				h.AtMinISR++
			}
		}
		if sizes {
			h.LogSizes[log.TopicPartition{Topic: p.topic, Partition: p.index}] = p.Log().Size()
		}
	}
	return h
}

// TxnStats is one hosted partition's transactions, for the gauges.
type TxnStats struct {
	Topic     string
	Partition int32
	IsLeader  bool
	// HighWatermark and LastStableOffset are read under one hold of the
	// log's lock: HighWatermark - LastStableOffset is what read_committed
	// consumers cannot read yet.
	HighWatermark    int64
	LastStableOffset int64
	// OpenTransactions counts the open transactions; Oldest is the
	// oldest (by first offset) when there is one.
	OpenTransactions int
	Oldest           log.TxnStart
}

// TxnStats returns every hosted partition's transaction state, in no
// order, taking each log's read lock briefly.
func (m *Manager) TxnStats() []TxnStats {
	m.mu.RLock()
	ps := slices.Collect(maps.Values(m.partitions))
	m.mu.RUnlock()
	out := make([]TxnStats, 0, len(ps))
	for _, p := range ps {
		p.mu.RLock()
		leader := p.leader == p.m.cfg.BrokerID
		p.mu.RUnlock()
		off := p.Log().FetchOffsetSnapshot()
		open := p.Log().OngoingTxnStarts()
		ts := TxnStats{Topic: p.topic, Partition: p.index, IsLeader: leader, HighWatermark: off.HighWatermark,
			LastStableOffset: off.LastStableOffset, OpenTransactions: len(open)}
		if len(open) > 0 {
			ts.Oldest = open[0]
		}
		out = append(out, ts)
	}
	return out
}
