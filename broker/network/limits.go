//go:build linux

package network

import (
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"
)

// connQuotas is Kafka's ConnectionQuotas: the connection counts, broker-wide
// and per IP address, and the broker-wide connection creation rate. It is
// used on the accept path (acceptor goroutines) and when a connection
// closes (its processor), never per request, so a mutex is cheap enough.
type connQuotas struct {
	maxConns  int // math.MaxInt: no limit
	maxPerIP  int
	overrides map[netip.Addr]int
	rate      float64 // connections per second; 0: no limit
	lg        *slog.Logger

	mu       sync.Mutex
	total    int
	perIP    map[netip.Addr]int
	window   rateWindow
	lastWarn time.Time // last "too many connections" line
	muted    int       // refusals not logged since lastWarn
}

// warnEvery spaces the "too many connections" lines, so that a flood of
// connections over a limit does not flood the log.
const warnEvery = time.Second

func newConnQuotas(cfg Config, overrides map[netip.Addr]int, lg *slog.Logger) *connQuotas {
	limit := func(v int) int {
		switch {
		case v == NoConnections:
			return 0
		case v <= 0:
			return math.MaxInt
		}
		return v
	}
	return &connQuotas{
		maxConns:  limit(cfg.MaxConnections),
		maxPerIP:  limit(cfg.MaxConnectionsPerIP),
		overrides: overrides,
		rate:      cfg.MaxConnectionCreationRate,
		lg:        lg,
		perIP:     make(map[netip.Addr]int),
		window:    newRateWindow(cfg.QuotaWindowNum, cfg.QuotaWindowSize),
	}
}

// ipOf is the address a connection is counted under: the remote IP, with
// IPv4-mapped IPv6 addresses unmapped so that both spellings count as one.
func ipOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// throttle records a new connection in the creation rate and returns how
// long the acceptor must wait before handing it on (0: none): Kafka's
// broker-wide connection rate quota, whose acceptor waits the same way.
func (q *connQuotas) throttle(now time.Time) time.Duration {
	if q.rate <= 0 {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.window.record(now)
	return q.window.throttle(now, q.rate)
}

// inc counts a new connection from ip. It returns false, with the setting
// that refuses it and its limit, when ip or the broker is at its limit.
func (q *connQuotas) inc(ip netip.Addr) (ok bool, setting string, limit int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	perIP := q.maxPerIP
	setting = "max.connections.per.ip"
	if v, ok := q.overrides[ip]; ok {
		perIP, setting = v, "max.connections.per.ip.overrides"
	}
	switch {
	case q.perIP[ip] >= perIP:
		return false, setting, perIP
	case q.total >= q.maxConns:
		return false, "max.connections", q.maxConns
	}
	q.total++
	q.perIP[ip]++
	return true, "", 0
}

// dec releases a connection counted by inc.
func (q *connQuotas) dec(ip netip.Addr) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total--
	if n := q.perIP[ip] - 1; n > 0 {
		q.perIP[ip] = n
	} else {
		delete(q.perIP, ip)
	}
}

// refused logs a connection closed over a limit, at most once per
// warnEvery; the line says how many refusals went unlogged before it.
func (q *connQuotas) refused(now time.Time, listener string, remote net.Addr, setting string, limit int) {
	q.mu.Lock()
	if now.Sub(q.lastWarn) < warnEvery {
		q.muted++
		q.mu.Unlock()
		return
	}
	q.lastWarn = now
	muted := q.muted
	q.muted = 0
	q.mu.Unlock()
	q.lg.Warn("closing connection: too many connections", "listener", listener, "remote", addrString(remote),
		"setting", setting, "limit", limit, "unlogged_refusals", muted)
}

// rateWindow is Kafka's Rate over a SampledStat of counts: samples of
// size each, the oldest dropped once it is num*size old. The rate divides
// the count by the time since the oldest sample began, but by at least
// num-1 sample sizes, so a burst after a quiet spell is spread over the
// whole window as Kafka does (Rate.windowSize): with Kafka's defaults
// (quota.window.num 11, quota.window.size.seconds 1) a rate of R lets a
// burst of about 10*R connections through before throttling starts.
type rateWindow struct {
	size    time.Duration
	samples []rateSample
	cur     int
}

type rateSample struct {
	start time.Time
	count float64
}

func newRateWindow(num int, size time.Duration) rateWindow {
	return rateWindow{size: size, samples: make([]rateSample, num)}
}

func (w *rateWindow) record(now time.Time) {
	s := &w.samples[w.cur]
	if s.start.IsZero() || now.Sub(s.start) >= w.size {
		w.cur = (w.cur + 1) % len(w.samples)
		w.samples[w.cur] = rateSample{start: now}
	}
	w.samples[w.cur].count++
}

// rate returns the events per second over the window.
func (w *rateWindow) rate(now time.Time) float64 {
	span := time.Duration(len(w.samples)) * w.size
	var total float64
	oldest := now
	for i := range w.samples {
		s := &w.samples[i]
		if s.start.IsZero() {
			continue
		}
		if now.Sub(s.start) >= span {
			*s = rateSample{} // obsolete (SampledStat.purgeObsoleteSamples)
			continue
		}
		total += s.count
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	return total / w.windowSize(now, oldest).Seconds()
}

// windowSize is Kafka's Rate.windowSize: the time covered, at least
// num-1 whole samples.
func (w *rateWindow) windowSize(now, oldest time.Time) time.Duration {
	elapsed := now.Sub(oldest)
	full := int(elapsed / w.size)
	if minFull := len(w.samples) - 1; full < minFull {
		elapsed += time.Duration(minFull-full) * w.size
	}
	return max(elapsed, time.Millisecond)
}

// throttle is Kafka's QuotaUtils.boundedThrottleTime: the wait that
// brings the rate back to quota, at most the whole window.
func (w *rateWindow) throttle(now time.Time, quota float64) time.Duration {
	r := w.rate(now)
	if r <= quota {
		return 0
	}
	oldest := now
	for i := range w.samples {
		if s := w.samples[i].start; !s.IsZero() && s.Before(oldest) {
			oldest = s
		}
	}
	d := time.Duration((r - quota) / quota * float64(w.windowSize(now, oldest)))
	return min(d, time.Duration(len(w.samples))*w.size)
}

// The memory bound (queued.max.request.bytes, Kafka's MemoryPool). Frame
// bytes are counted when their buffer is allocated (a frame's buffer grows
// as its bytes arrive, see growFrame) and uncounted when the request is
// released, after its response has been written. A processor that finds
// the count at or above the limit when it is about to start a frame stops
// reading all its connections (memBlocked) until memory is freed; as in
// Kafka's non-strict pool, the frame being read may take the count past
// the limit, so a request larger than the limit is still served. Nothing
// is dropped: unread bytes wait in the kernel and TCP slows the clients.
//
// Wake-ups: a muted processor sets its memMuted flag and the server's
// count of muted processors, then looks at the count again; a release
// that brings the count under the limit clears the flags it finds set
// and wakes those processors through their inbox. One of the two always
// sees the other (sequentially consistent atomics), so no wake-up is lost.
// With the limit off (the default) each costs one branch.

// memAvailable reports whether p may start a new frame; if not, p is
// muted until a release wakes it.
func (p *processor) memAvailable() bool {
	s := p.srv
	if s.memLimit <= 0 || s.mem.Load() < s.memLimit {
		return true
	}
	p.memBlocked = true
	if !p.memMuted.Load() {
		p.memMuted.Store(true)
		s.memMutedN.Add(1)
	}
	if s.mem.Load() < s.memLimit && p.memMuted.CompareAndSwap(true, false) {
		s.memMutedN.Add(-1)
		p.memBlocked = false
		return true
	}
	return false
}

// allocMem counts n more bytes of frames in flight.
func (s *Server) allocMem(n int) {
	if s.memLimit > 0 {
		s.mem.Add(int64(n))
	}
}

// freeMem uncounts n bytes and wakes muted processors if that brought the
// count under the limit.
func (s *Server) freeMem(n int) {
	if s.memLimit <= 0 || n == 0 {
		return
	}
	if v := s.mem.Add(-int64(n)); v >= s.memLimit || s.memMutedN.Load() == 0 {
		return
	}
	for _, p := range s.procs {
		if p.memMuted.CompareAndSwap(true, false) {
			s.memMutedN.Add(-1)
			p.memHasRoom()
		}
	}
}

// MemoryInFlight is the number of request bytes read and not yet answered
// that count against QueuedMaxRequestBytes (0 when it is off).
func (s *Server) MemoryInFlight() int64 { return s.mem.Load() }
