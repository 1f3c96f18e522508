package api

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/clientquota"
)

// Client quotas (KIP-13, KIP-124, KIP-219), as Kafka's KafkaApis applies
// its QuotaManagers:
//
//   - Produce: the request's size (header and body) is recorded in the
//     produce quota (producer_byte_rate) once the batches are appended,
//     and the handler time in the request quota unless acks=0. The
//     response carries the larger throttle time; the connection is muted
//     for it once the response is queued. An acks=0 produce is muted
//     without a response.
//   - Fetch from a consumer: the estimated response size is recorded in
//     the fetch quota (consumer_byte_rate) and the handler time in the
//     request quota when the response is built (after any long poll).
//     When either throttles, the fetch quota's record is taken back and
//     the client gets an empty response with the throttle time
//     (FetchContext.getThrottledResponse): its session is left as it
//     was, so the next fetch reads the same offsets. Follower fetches
//     are exempt (they have replication quotas).
//   - Every other API but the exempt ones: the handler time as a
//     percentage of one thread (request_percentage) is recorded when the
//     response is sent (sendResponseMaybeThrottle) and the throttle time
//     goes into the response's throttle_time_ms where its version has
//     one; the connection is muted for it in any case.
//
// Handler time is the time in Handle (Kafka's requestThreadTimeNanos):
// from its start to the response, or to Handle's return when the
// response is sent later (a delayed produce, a long-poll fetch, a
// JoinGroup waiting for its group).
//
// Every version is answered at once and then muted, KIP-219's way. Kafka
// delays the response instead for versions before KIP-219 (Produce < 6,
// Fetch < 8 and the like); muting after an immediate response holds such
// a client back just as well, since it cannot send its next request
// before the throttle time either, and keeps one code path.
//
// Each broker measures and enforces its own traffic against the whole
// quota, as Kafka does: a client spreading its load over n brokers may
// reach n times its quota in all.

// quotaExempt: the request quota does not apply to the API, as Kafka
// exempts the cluster actions (inter-broker requests) and the requests
// of authentication, which come before a principal is known.
func (a *api) quotaExempt() bool {
	return a.control || a.key == apiKeyApiVersions || a.key == apiKeySaslHandshake || a.key == apiKeySaslAuthenticate
}

// startQuota notes when Handle began for the request quota: only when
// request quotas are set, so the unlimited path reads one atomic.
func (c *call) startQuota(a *api) {
	q := c.h.cfg.Quotas
	if q == nil || a.quotaExempt() || !q.Get(clientquota.Request).Enabled() {
		return
	}
	c.start = time.Now()
}

// endHandle marks Handle's return, after which a response sent later
// charges no more handler time.
func (c *call) endHandle() {
	if !c.start.IsZero() {
		c.handled.Store(int64(max(time.Since(c.start), 1)))
	}
}

// quotaUser is the user of the request's quotas: its principal's name
// ("ANONYMOUS" for a client that did not authenticate).
func (c *call) quotaUser() string {
	if c.user == "" {
		c.user, _ = strings.CutPrefix(c.h.Principal(c.r), "User:")
	}
	return c.user
}

// requestThrottle records the request's handler time in the request
// quota, once, and returns its throttle time; zero when the API is
// exempt or no request quota is set.
func (c *call) requestThrottle(now time.Time) time.Duration {
	if c.start.IsZero() || c.requestRecorded {
		return 0
	}
	c.requestRecorded = true
	d := time.Duration(c.handled.Load())
	if d == 0 {
		d = time.Since(c.start)
	}
	return c.h.cfg.Quotas.Get(clientquota.Request).RecordAndGetThrottle(c.quotaUser(), clientID(c.r),
		clientquota.PercentOfThread(d), now)
}

// byteThrottle records n bytes in the quota of type t (produce or
// fetch) and returns its throttle time; zero when no quota of t is set.
func (c *call) byteThrottle(t clientquota.Type, n int64, now time.Time) time.Duration {
	q := c.h.cfg.Quotas
	if q == nil || !q.Get(t).Enabled() {
		return 0
	}
	return q.Get(t).RecordAndGetThrottle(c.quotaUser(), clientID(c.r), float64(n), now)
}

// applyThrottle puts the throttle time (the larger of what the call's
// handler set and the request quota's) into resp, where its version
// has the field, and mutes the connection for it. respond calls it.
func (c *call) applyThrottle(resp kmsg.Response) {
	if c.start.IsZero() && c.throttle == 0 {
		return
	}
	d := max(c.throttle, c.requestThrottle(c.h.now()))
	if d <= 0 {
		return
	}
	if tr, ok := resp.(kmsg.SetThrottleResponse); ok {
		tr.SetThrottle(throttleMillis(d))
	}
	c.r.SetThrottle(d)
}

// throttleMillis is d as a throttle_time_ms field.
func throttleMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), 1<<31-1))
}
