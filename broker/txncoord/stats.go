package txncoord

import "github.com/qk-project/qk/broker/txn"

// Stats is what the coordinator's gauges report.
type Stats struct {
	// States counts the transactional ids of the loaded partitions by
	// state (txn.State); partitions still loading are not counted.
	States txn.StateCounts
	// Partitions is the number of __transaction_state partitions this
	// broker coordinates, Loading those of them still loading.
	Partitions, Loading int
	// MarkersInFlight is the number of transactions whose markers are
	// queued or being sent.
	MarkersInFlight int
}

// Stats counts the coordinator's transactions under its lock, each
// partition's ids once; the marker queue is read after, under its own.
func (c *Coordinator) Stats() Stats {
	var s Stats
	c.mu.Lock()
	for _, tp := range c.parts {
		s.Partitions++
		if tp.Loading() {
			s.Loading++
			continue
		}
		n := tp.CountStates()
		for i := range n {
			s.States[i] += n[i]
		}
	}
	c.mu.Unlock()
	s.MarkersInFlight = c.markers.inFlightCount()
	return s
}
