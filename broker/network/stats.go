//go:build linux

package network

import (
	"net"
	"slices"
	"time"
)

// Stats is a snapshot of the server's counters, for metrics.
type Stats struct {
	ConnectionsAccepted uint64
	ConnectionsClosed   uint64
	// Requests, BytesIn and BytesOut count over all connections, open and
	// closed. BytesIn includes size prefixes; BytesOut too.
	Requests uint64
	BytesIn  uint64
	BytesOut uint64
	// WritesBlocked counts writes that found a socket's send buffer full and
	// waited for EPOLLOUT: slow readers, or large responses.
	WritesBlocked uint64
	// RequestsOverdue counts the requests left unanswered past their
	// limit (Config.RequestTimeout plus the request's own wait), each
	// counted and logged once (see watchdog.go).
	RequestsOverdue uint64
	// RequestQueueSize is the number of requests waiting for a handler.
	RequestQueueSize int
	// Connections lists the open connections, by ID.
	Connections []ConnStats
}

// ConnStats are the counters of one open connection.
type ConnStats struct {
	ID         uint64
	Listener   string
	RemoteAddr net.Addr
	LocalAddr  net.Addr
	Opened     time.Time
	Requests   uint64
	BytesIn    uint64
	BytesOut   uint64
}

// Stats returns a snapshot of the counters. It may be called at any time
// from any goroutine.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	procs, q := s.procs, s.queue
	s.mu.Unlock()
	var st Stats
	for _, p := range procs {
		p.statsMu.Lock()
		st.ConnectionsAccepted += p.accepted
		st.ConnectionsClosed += p.closed
		st.Requests += p.closedTotals.requests
		st.BytesIn += p.closedTotals.bytesIn
		st.BytesOut += p.closedTotals.bytesOut
		for _, c := range p.live {
			cs := ConnStats{
				ID:         c.id,
				Listener:   c.listener,
				RemoteAddr: c.remote,
				LocalAddr:  c.local,
				Opened:     c.opened,
				Requests:   c.requests.Load(),
				BytesIn:    c.bytesIn.Load(),
				BytesOut:   c.bytesOut.Load(),
			}
			st.Requests += cs.Requests
			st.BytesIn += cs.BytesIn
			st.BytesOut += cs.BytesOut
			st.Connections = append(st.Connections, cs)
		}
		p.statsMu.Unlock()
		st.WritesBlocked += p.writesBlocked.Load()
	}
	st.RequestsOverdue = s.overdue.Load()
	if q != nil {
		st.RequestQueueSize = q.len()
	}
	slices.SortFunc(st.Connections, func(a, b ConnStats) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return st
}

// Load is what the broker's metrics read at every scrape: cheap, no
// allocation, no per-connection work (Stats lists every connection).
type Load struct {
	// Processors is the number of processors (num.network.threads).
	Processors int
	// Idle is the time all processors together spent waiting for events
	// since they started; divided by Processors × the wall time over an
	// interval it is Kafka's NetworkProcessorAvgIdlePercent.
	Idle time.Duration
	// RequestQueueSize is the number of requests waiting for a handler.
	RequestQueueSize int
	// RequestsOverdue is Stats.RequestsOverdue.
	RequestsOverdue uint64
}

// Load returns the processors' idle time and the request queue's length.
// It may be called at any time from any goroutine.
func (s *Server) Load() Load {
	s.mu.Lock()
	procs, q := s.procs, s.queue
	s.mu.Unlock()
	l := Load{Processors: len(procs)}
	now := time.Now()
	for _, p := range procs {
		p.idleMu.Lock()
		l.Idle += p.idle
		if !p.parkedAt.IsZero() {
			l.Idle += now.Sub(p.parkedAt)
		}
		p.idleMu.Unlock()
	}
	if q != nil {
		l.RequestQueueSize = q.len()
	}
	l.RequestsOverdue = s.overdue.Load()
	return l
}
