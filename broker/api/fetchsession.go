package api

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch sessions (KIP-227), after Kafka's FetchSession.scala.
//
// A session remembers the partitions of a fetcher and, for each, the
// fetch parameters it sent last and what the session's last response told
// it (high watermark, log start offset). An incremental request names only
// the partitions whose parameters changed and those to forget; its answer
// names only the partitions with something new. A request is turned into a
// fetchContext (Kafka's FetchManager.newContext):
//
//	session_id  epoch   context
//	0           0       full: every partition named; a session is created
//	                    at response time if the cache has room
//	0           -1      sessionless (no session), as v<7
//	id          -1      the session is closed; sessionless
//	id          0       the session is closed; full (a new session)
//	id          >0      incremental if id is cached and epoch is the
//	                    session's, else FETCH_SESSION_ID_NOT_FOUND or
//	                    INVALID_FETCH_SESSION_EPOCH; a request whose version
//	                    disagrees with the session on topic ids gets
//	                    FETCH_SESSION_TOPIC_ID_ERROR
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions. When it is full a new session may evict (Kafka's tryEvict):
// first the least recently used session, if unused for longer than
// min.incremental.fetch.session.eviction.ms; else the least valuable
// evictable session, if the new one is worth at least as much. Value
// orders by privileged (a follower's, replica id >= 0) then size then id;
// a consumer session is evictable by followers at once and by anyone once
// older than the eviction time, a follower session only by then. Sessions
// are not expired otherwise.

const (
	// sessionIDInvalid is "no session" (Kafka's INVALID_SESSION_ID).
	sessionIDInvalid = 0
	// epochInitial opens a session; epochFinal asks for none.
	epochInitial = 0
	epochFinal   = -1
)

// nextEpoch is Kafka's FetchMetadata.nextEpoch: epochs count up from 1
// and wrap from MaxInt32 to 1; a negative epoch stays final.
func nextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return epochFinal
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// sessionKey identifies a partition in a session: by topic id in a
// session of v13+ requests, by name in the others (Kafka's
// CachedPartition equality).
type sessionKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// cachedPartition is one partition of a session (Kafka's CachedPartition).
type cachedPartition struct {
	key sessionKey
	// The fetcher's last request parameters.
	maxBytes           int32
	fetchOffset        int64
	logStartOffset     int64 // the fetcher's
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	// What the session's last response said: -1 until one did, and the
	// high watermark again after an error, so the partition is sent once
	// the error is gone.
	highWatermark       int64
	localLogStartOffset int64

	prev, next *cachedPartition // the session's order
}

// update takes a request's parameters (Kafka's updateRequestParams).
func (p *cachedPartition) update(fp *fetchPart) {
	p.maxBytes, p.fetchOffset, p.logStartOffset = fp.maxBytes, fp.fetchOffset, fp.logStartOffset
	p.currentLeaderEpoch, p.lastFetchedEpoch = fp.currentLeaderEpoch, fp.lastFetchedEpoch
}

// mustRespond tells whether the partition's answer goes in an incremental
// response, recording what it says when update is set (Kafka's
// maybeUpdateResponseData): records, a changed high watermark or log
// start offset, a diverging epoch for a follower, or an error. qk sends
// no preferred replica, and its last stable offset is the high watermark.
func (p *cachedPartition) mustRespond(r *fetchPartition, update bool) bool {
	must := r.records.Length > 0 || r.divergingEpoch != -1
	if p.highWatermark != r.highWatermark {
		must = true
		if update {
			p.highWatermark = r.highWatermark
		}
	}
	if p.localLogStartOffset != r.logStartOffset {
		must = true
		if update {
			p.localLogStartOffset = r.logStartOffset
		}
	}
	if r.errorCode != 0 {
		must = true
		if update {
			p.highWatermark = -1
		}
	}
	return must
}

// fetchSession is one session (Kafka's FetchSession).
type fetchSession struct {
	id           int32
	privileged   bool // a follower's
	usesTopicIDs bool // created by a v13+ request
	created      time.Time

	// Guarded by fetchSessionCache.mu: the cache's bookkeeping, updated
	// by touch.
	lastUsed   time.Time
	cachedSize int // partitions at the last touch; -1: not in the cache
	// evictable by any new session / by a privileged one, as of the
	// last touch (Kafka's evictableByAll and evictableByPrivileged).
	evictableByAll, evictableByPrivileged bool

	mu         sync.Mutex // guards what follows
	epoch      int32      // the epoch the next request must carry
	parts      map[sessionKey]*cachedPartition
	head, tail *cachedPartition
}

func (s *fetchSession) pushBack(p *cachedPartition) {
	p.prev, p.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = p
	} else {
		s.head = p
	}
	s.tail = p
}

func (s *fetchSession) unlink(p *cachedPartition) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

// add puts a new partition at the end, or updates one already there
// (a request naming a partition twice: the last parameters win).
func (s *fetchSession) add(fp *fetchPart) (*cachedPartition, bool) {
	k := fp.sessionKey(s.usesTopicIDs)
	if p, ok := s.parts[k]; ok {
		p.update(fp)
		return p, false
	}
	k.topic = strings.Clone(k.topic) // the request's aliases its frame
	p := &cachedPartition{key: k, highWatermark: -1, localLogStartOffset: -1}
	p.update(fp)
	s.parts[k] = p
	s.pushBack(p)
	return p, true
}

// fetchSessionCache is Kafka's FetchSessionCache (unsharded).
type fetchSessionCache struct {
	maxEntries int
	eviction   time.Duration

	mu       sync.Mutex // sessions, their bookkeeping fields and the counts; before fetchSession.mu
	sessions map[int32]*fetchSession
	stats    FetchSessionStats
}

// FetchSessionStats counts the fetch sessions of a Handler.
type FetchSessionStats struct {
	// Sessions and Partitions are in the cache now (Kafka's
	// NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached).
	Sessions   int
	Partitions int
	// Created, Evicted and Incremental count since start: sessions
	// created, sessions evicted to make room, and incremental fetch
	// requests served from a session.
	Created     int64
	Evicted     int64
	Incremental int64
}

func newFetchSessionCache(maxEntries int, eviction time.Duration) *fetchSessionCache {
	return &fetchSessionCache{maxEntries: maxEntries, eviction: eviction, sessions: map[int32]*fetchSession{}}
}

// Stats returns the current counts.
func (c *fetchSessionCache) Stats() FetchSessionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Sessions = len(c.sessions)
	return s
}

// newSessionID is a random positive id no cached session has.
// Called under mu.
func (c *fetchSessionCache) newSessionID() int32 {
	for {
		id := rand.Int32N(math.MaxInt32-1) + 1
		if _, ok := c.sessions[id]; !ok {
			return id
		}
	}
}

// maybeCreate creates a session of size partitions, built by fill, if
// there is room or room can be made; it returns the session id, or 0.
func (c *fetchSessionCache) maybeCreate(now time.Time, privileged, usesTopicIDs bool, size int, fill func(*fetchSession)) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.maxEntries && !c.tryEvict(privileged, size, now) {
		return sessionIDInvalid
	}
	s := &fetchSession{
		id: c.newSessionID(), privileged: privileged, usesTopicIDs: usesTopicIDs,
		created: now, cachedSize: -1, epoch: nextEpoch(epochInitial),
		parts: make(map[sessionKey]*cachedPartition, size),
	}
	fill(s) // s is not shared yet
	c.sessions[s.id] = s
	c.stats.Created++
	c.touch(s, now)
	return s.id
}

// evictKey orders sessions by value (Kafka's EvictableKey): unprivileged
// before privileged, then fewer partitions, then a smaller id.
func evictKeyLess(aPriv bool, aSize int, aID int32, bPriv bool, bSize int, bID int32) bool {
	if aPriv != bPriv {
		return !aPriv
	}
	if aSize != bSize {
		return aSize < bSize
	}
	return aID < bID
}

// tryEvict removes one session to make room for a new one of size
// partitions (Kafka's tryEvict). Called under mu.
func (c *fetchSessionCache) tryEvict(privileged bool, size int, now time.Time) bool {
	var lru, least *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		evictable := s.evictableByAll || (privileged && s.evictableByPrivileged)
		if evictable && (least == nil || evictKeyLess(s.privileged, s.cachedSize, s.id, least.privileged, least.cachedSize, least.id)) {
			least = s
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > c.eviction:
		c.remove(lru)
		c.stats.Evicted++
		return true
	case least == nil:
		return false
	case evictKeyLess(privileged, size, 0, least.privileged, least.cachedSize, least.id):
		// The new session is worth less than the least valuable one.
		return false
	default:
		c.remove(least)
		c.stats.Evicted++
		return true
	}
}

// touch marks s used now and refreshes its size and evictability
// (Kafka's touch). Called under mu, with s.mu held or s not yet shared.
func (c *fetchSessionCache) touch(s *fetchSession, now time.Time) {
	s.lastUsed = now
	if s.cachedSize >= 0 {
		c.stats.Partitions -= s.cachedSize
	}
	s.cachedSize = len(s.parts)
	c.stats.Partitions += s.cachedSize
	old := now.Sub(s.created) > c.eviction
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

// remove takes s out of the cache. Called under mu.
func (c *fetchSessionCache) remove(s *fetchSession) bool {
	if c.sessions[s.id] != s {
		return false
	}
	delete(c.sessions, s.id)
	c.stats.Partitions -= s.cachedSize
	s.cachedSize = -1
	return true
}

// fetchContextKind is what a Fetch request does with sessions (Kafka's
// FetchContext classes).
type fetchContextKind uint8

const (
	sessionlessContext fetchContextKind = iota
	fullContext
	incrementalContext
	sessionErrorContext
)

// fetchContext is a Fetch request's view of the sessions: which
// partitions it reads and how its response is built.
type fetchContext struct {
	kind         fetchContextKind
	errorCode    int16 // sessionErrorContext
	usesTopicIDs bool  // v13+
	privileged   bool  // from a follower
	session      *fetchSession
	reqEpoch     int32 // incremental: the request's epoch
	// parts are the partitions read: the request's in its order, or an
	// incremental session's, copied with the session locked.
	parts []fetchPart
}

// fetchPart is one partition a fetch reads, with its parameters.
type fetchPart struct {
	topic              string // v<13; for v13+ resolved at each read
	topicID            [16]byte
	partition          int32
	fetchOffset        int64
	logStartOffset     int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	cached             *cachedPartition // incremental: the session's entry
}

func (p *fetchPart) sessionKey(byID bool) sessionKey {
	if byID {
		return sessionKey{topicID: p.topicID, partition: p.partition}
	}
	return sessionKey{topic: p.topic, partition: p.partition}
}

// requestParts are the partitions of a request, in its order.
func requestParts(req *kmsg.FetchRequest, v int16) []fetchPart {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	parts := make([]fetchPart, 0, n)
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			fp := fetchPart{
				topicID: rt.TopicID, partition: rp.Partition, fetchOffset: rp.FetchOffset,
				logStartOffset: -1, maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: -1, lastFetchedEpoch: -1,
			}
			if v < 13 {
				fp.topic, fp.topicID = rt.Topic, [16]byte{}
			}
			if v >= 5 {
				fp.logStartOffset = rp.LogStartOffset
			}
			if v >= 9 {
				fp.currentLeaderEpoch = rp.CurrentLeaderEpoch
			}
			if v >= 12 {
				fp.lastFetchedEpoch = rp.LastFetchedEpoch
			}
			parts = append(parts, fp)
		}
	}
	return parts
}

// newFetchContext is Kafka's FetchManager.newContext.
func (h *Handler) newFetchContext(req *kmsg.FetchRequest, v int16) *fetchContext {
	fc := &fetchContext{usesTopicIDs: v >= 13}
	if v >= 15 {
		fc.privileged = req.ReplicaState.ID >= 0
	} else {
		fc.privileged = req.ReplicaID >= 0
	}
	id, epoch := req.SessionID, req.SessionEpoch
	if v < 7 {
		id, epoch = sessionIDInvalid, epochFinal
	}
	c := h.sessions
	if epoch == epochInitial || epoch == epochFinal {
		if id != sessionIDInvalid {
			// A full request on a session closes it.
			c.mu.Lock()
			if s, ok := c.sessions[id]; ok && c.remove(s) {
				h.lg.Debug("closed fetch session", "session_id", id, "epoch", epoch)
			}
			c.mu.Unlock()
		}
		fc.kind = fullContext
		if epoch == epochFinal || c.maxEntries == 0 {
			fc.kind = sessionlessContext
		}
		fc.parts = requestParts(req, v)
		return fc
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[id]
	if !ok {
		h.lg.Debug("fetch session not found", "session_id", id, "epoch", epoch)
		fc.kind, fc.errorCode = sessionErrorContext, kerr.FetchSessionIDNotFound.Code
		return fc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != epoch:
		h.lg.Debug("invalid fetch session epoch", "session_id", id, "epoch", epoch, "want", s.epoch)
		fc.kind, fc.errorCode = sessionErrorContext, kerr.InvalidFetchSessionEpoch.Code
		return fc
	case s.usesTopicIDs != fc.usesTopicIDs:
		h.lg.Debug("fetch session topic id usage differs", "session_id", id, "api_version", v)
		fc.kind, fc.errorCode = sessionErrorContext, kerr.FetchSessionTopicIDError.Code
		return fc
	}
	// The request's partitions update the session's; forgotten ones go.
	reqParts := requestParts(req, v)
	for i := range reqParts {
		s.add(&reqParts[i])
	}
	for i := range req.ForgottenTopics {
		ft := &req.ForgottenTopics[i]
		for _, p := range ft.Partitions {
			k := sessionKey{topicID: ft.TopicID, partition: p}
			if !s.usesTopicIDs {
				k = sessionKey{topic: ft.Topic, partition: p}
			}
			if cp, ok := s.parts[k]; ok {
				delete(s.parts, k)
				s.unlink(cp)
			}
		}
	}
	if len(s.parts) == 0 {
		c.remove(s)
		h.lg.Debug("closed empty fetch session", "session_id", id)
		fc.kind, fc.parts = sessionlessContext, reqParts
		return fc
	}
	c.touch(s, h.now())
	s.epoch = nextEpoch(s.epoch)
	c.stats.Incremental++
	fc.kind, fc.session, fc.reqEpoch = incrementalContext, s, epoch
	fc.parts = make([]fetchPart, 0, len(s.parts))
	for p := s.head; p != nil; p = p.next {
		fc.parts = append(fc.parts, fetchPart{
			topic: p.key.topic, topicID: p.key.topicID, partition: p.key.partition,
			fetchOffset: p.fetchOffset, logStartOffset: p.logStartOffset, maxBytes: p.maxBytes,
			currentLeaderEpoch: p.currentLeaderEpoch, lastFetchedEpoch: p.lastFetchedEpoch,
			cached: p,
		})
	}
	return fc
}

// throttledFetchResponse makes resp the answer to a fetch over its
// client quota (Kafka's FetchContext.getThrottledResponse): no partitions
// and no change to any session, whose id an incremental fetch gets back
// (INVALID_FETCH_SESSION_EPOCH if another request moved it on); a full
// fetch creates none. The caller sets the throttle time.
func (h *Handler) throttledFetchResponse(fc *fetchContext, resp *fetchResponse) {
	resp.releaseRegions()
	resp.topics, resp.nodeEndpoint, resp.errorCode, resp.sessionID = nil, nil, 0, sessionIDInvalid
	switch fc.kind {
	case sessionErrorContext:
		resp.errorCode = fc.errorCode
	case incrementalContext:
		s := fc.session
		s.mu.Lock()
		resp.sessionID = s.id
		if s.epoch != nextEpoch(fc.reqEpoch) {
			resp.errorCode = kerr.InvalidFetchSessionEpoch.Code
		}
		s.mu.Unlock()
	}
}

// finish completes resp, read for fc's partitions (one response
// partition per part, in order), as the context wants (Kafka's
// updateAndGenerateResponseData): a full context creates its session,
// an incremental one keeps only the partitions with news and records
// them in the session. Regions of dropped partitions are released.
func (h *Handler) finishFetchResponse(fc *fetchContext, resp *fetchResponse) {
	switch fc.kind {
	case sessionErrorContext:
		resp.releaseRegions()
		resp.topics, resp.errorCode, resp.sessionID = nil, fc.errorCode, sessionIDInvalid

	case sessionlessContext:
		resp.sessionID = sessionIDInvalid

	case fullContext:
		now := h.now()
		resp.sessionID = h.sessions.maybeCreate(now, fc.privileged, fc.usesTopicIDs, len(fc.parts), func(s *fetchSession) {
			k := 0
			for i := range resp.topics {
				for j := range resp.topics[i].partitions {
					rp := &resp.topics[i].partitions[j]
					cp, _ := s.add(&fc.parts[k])
					cp.mustRespond(rp, true)
					k++
				}
			}
		})
		if resp.sessionID != sessionIDInvalid {
			h.lg.Debug("created fetch session", "session_id", resp.sessionID, "partitions", len(fc.parts), "privileged", fc.privileged)
		}

	case incrementalContext:
		s := fc.session
		s.mu.Lock()
		defer s.mu.Unlock()
		resp.sessionID = s.id
		if want := nextEpoch(fc.reqEpoch); s.epoch != want {
			// Another request moved the session on meanwhile.
			h.lg.Debug("fetch session epoch moved on, possible duplicate request", "session_id", s.id, "epoch", s.epoch, "want", want)
			resp.releaseRegions()
			resp.topics, resp.errorCode = nil, kerr.InvalidFetchSessionEpoch.Code
			return
		}
		k := 0
		topics := resp.topics[:0]
		for i := range resp.topics {
			t := resp.topics[i]
			kept := t.partitions[:0]
			for j := range t.partitions {
				rp := t.partitions[j]
				cp := fc.parts[k].cached
				k++
				if !cp.mustRespond(&rp, true) {
					rp.records.Release()
					continue
				}
				if rp.records.Length > 0 && s.parts[cp.key] == cp {
					// Partitions that returned data go last, so the
					// others get their turn at max_bytes next time.
					s.unlink(cp)
					s.pushBack(cp)
				}
				kept = append(kept, rp)
			}
			if len(kept) > 0 {
				t.partitions = kept
				topics = append(topics, t)
			}
		}
		resp.topics = topics
	}
}
