package replica

import (
	"time"

	"github.com/qk-project/qk/broker/log"
)

// A hanging transaction is one still open in a partition longer than
// transaction.max.timeout.ms: by then its coordinator should have
// committed or aborted it (a transaction cannot have a longer timeout),
// so its markers were lost or never sent (a coordinator bug, or a
// producer that wrote to a partition it never added, before KIP-890).
// Its partition's last stable offset stays at its first offset, and
// read_committed consumers stop there. Kafka leaves finding these to
// `kafka-transactions.sh find-hanging`; qk also logs each one at WARN,
// once, from the leader.

// hangingKey names one transaction: a producer's transaction in a
// partition is the one starting at firstOffset.
type hangingKey struct {
	tp          log.TopicPartition
	producerID  int64
	firstOffset int64
}

// hangingTxnLoop checks the partitions led here for hanging transactions
// every quarter of transaction.max.timeout.ms, at most every 10 s.
func (m *Manager) hangingTxnLoop() {
	every := min(max(time.Duration(m.cfg.TransactionMaxTimeoutMs)*time.Millisecond/4, 10*time.Millisecond), 10*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	warned := map[hangingKey]bool{}
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.checkHangingTransactions(m.now().UnixMilli(), warned)
	}
}

// checkHangingTransactions logs at WARN each open transaction of a
// partition led here that is older than transaction.max.timeout.ms and
// not in warned yet, and adds it there; warned forgets the transactions
// that are no longer open or no longer led here. It returns how many it
// logged.
func (m *Manager) checkHangingTransactions(nowMs int64, warned map[hangingKey]bool) int {
	maxMs := m.cfg.TransactionMaxTimeoutMs
	seen := map[hangingKey]bool{}
	n := 0
	for _, p := range m.Partitions() {
		p.mu.RLock()
		leader := p.leader == p.m.cfg.BrokerID
		p.mu.RUnlock()
		if !leader {
			continue
		}
		tp := log.TopicPartition{Topic: p.topic, Partition: p.index}
		for _, t := range p.Log().OngoingTxnStarts() {
			age := nowMs - t.StartTimestamp
			if age <= maxMs {
				continue
			}
			k := hangingKey{tp: tp, producerID: t.ProducerID, firstOffset: t.FirstOffset}
			seen[k] = true
			if warned[k] {
				continue
			}
			warned[k] = true
			n++
			m.lg.Warn("hanging transaction: open longer than transaction.max.timeout.ms; its partition's last stable offset is stuck at its first offset",
				"topic", p.topic, "partition", p.index, "producer_id", t.ProducerID, "first_offset", t.FirstOffset,
				"age_ms", age, "transaction_max_timeout_ms", maxMs, "last_stable_offset", p.Log().LastStableOffset(),
				"high_watermark", p.Log().HighWatermark())
		}
	}
	for k := range warned {
		if !seen[k] {
			delete(warned, k)
		}
	}
	return n
}
