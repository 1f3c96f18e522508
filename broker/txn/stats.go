package txn

// StateCounts counts transactional ids by state, indexed by State (Kafka's
// ids, Empty to PrepareEpochFence; PrepareEpochFence is never a stored
// state, so it counts 0).
type StateCounts [PrepareEpochFence + 1]int

// CountStates counts the partition's transactional ids by their current
// state (not the pending one), for metrics. It allocates nothing.
func (p *Partition) CountStates() StateCounts {
	var c StateCounts
	for _, m := range p.txns {
		if m.State >= 0 && int(m.State) < len(c) {
			c[m.State]++
		}
	}
	return c
}
