//go:build linux

package network

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The request watchdog: every request gets an answer or its connection
// is closed (Handler's contract), and a request that has neither after
// request.timeout.ms is a broker bug, or a broker so overloaded that
// clients have given up on it. Either way the client is waiting for
// something that is not coming (a consumer's Close waiting minutes for
// its session-closing Fetch), and nothing else in the broker says so.
//
// The watchdog says so: each processor, on the tick it already has for
// idle connections, walks the requests in flight on its connections
// (at most MaxInFlightPerConnection each, in conn.issued) and logs, once
// per request, at Warn, each one unanswered for longer than its limit,
// with its API, version, correlation id, connection and age, and counts
// it (Stats.RequestsOverdue, the qk_network_requests_overdue_total
// metric). It costs the hot path one slice store per request read and
// one per response taken; no timer per request.
//
// A request's limit is RequestTimeout plus the wait the request itself
// asks for (Request.SetWait: a fetch's max_wait_ms, a produce's
// timeout_ms): a long poll of 30 s is answered after 30 s by design, and
// only time beyond its own wait is the broker's. request.timeout.ms is
// the client's own bound for the same thing (Kafka's clients add it to
// fetch.max.wait.ms likewise), so a request the watchdog reports is one
// its client has, by its own settings, already timed out.

// SetWait tells the watchdog how long the request itself asks the broker
// to wait before answering (a fetch's max_wait_ms, a produce's
// timeout_ms); it is added to the RequestTimeout after which an
// unanswered request is reported. Call it from Handle, before completing.
func (r *Request) SetWait(d time.Duration) {
	r.waitMs.Store(int32(min(max(d.Milliseconds(), 0), 1<<31-1)))
}

// watchInterval is how often a processor scans for overdue requests: a
// tenth of the timeout, between 10 ms and 1 s.
func watchInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/10, 10*time.Millisecond), time.Second)
}

// scanOverdue reports the requests of p's connections unanswered past
// their limit, each once. It runs on the processor goroutine, which owns
// conn.issued and Request.overdue; the fields it reads of a Request are
// set before the request is queued, except state and waitMs (atomic).
func (p *processor) scanOverdue(timeout time.Duration) {
	for _, c := range p.conns {
		if c.inFlight == 0 {
			continue
		}
		for _, r := range c.issued {
			if r == nil || r.overdue || r.state.Load() != 0 {
				continue
			}
			limit := timeout + time.Duration(r.waitMs.Load())*time.Millisecond
			age := p.now.Sub(r.ReceivedAt)
			if age < limit {
				continue
			}
			r.overdue = true
			p.srv.overdue.Add(1)
			p.lg.Warn("request unanswered past request.timeout.ms", "api", kmsg.NameForKey(r.ApiKey),
				"api_key", r.ApiKey, "api_version", r.ApiVersion, "correlation_id", r.CorrelationID,
				"listener", c.listener, "remote", addrString(c.remote), "client_id", clientIDString(r.ClientID),
				"connection", c.id, "age", age.Round(time.Millisecond), "limit", limit,
				"handled", r.seq < c.turn.nextSeq(), "in_flight", c.inFlight)
		}
	}
}

func clientIDString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
