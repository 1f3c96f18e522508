package api

import (
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/purgatory"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
)

// Fetch: v4-18
//
// Behavior:
// * The response is framed by hand (fetchframe.go): fixed fields from
//   memory, each partition's records as a file region of its segment, sent
//   with sendfile(2) without passing through user space
// * Bytes: partitions are read in request order (an incremental fetch:
//   in its session's order); each gets at most
//   min(partition_max_bytes, what is left of max_bytes), except that the
//   first batch of the first partition with data is returned whole
//   however large (Kafka's minOneMessage, so a consumer can always make
//   progress); later regions are cut at their limit, which may leave a
//   partial batch at the end, as Kafka does
// * Consumers read up to the high watermark; read_committed up to the last
//   stable offset (no open or undecided transaction below it), with the
//   aborted transactions that overlap the records returned, taken from
//   the same view of the log (log.Log.ReadCommitted). Aborted
//   transactions: null for read_uncommitted
// * Followers (replica id >= 0, ReplicaState from v15) read up to the log
//   end; their fetch offset is their log end offset, which the leader
//   records (the high watermark follows the ISR). A follower whose
//   last_fetched_epoch (v12+) ends earlier on the leader, or which the
//   leader does not have, gets no records and the diverging epoch (the
//   leader's largest epoch at or below it and where it ends), and
//   truncates there
// * Errors per partition: OFFSET_OUT_OF_RANGE (offsets -1), UNKNOWN_TOPIC_OR_PARTITION,
//   UNKNOWN_TOPIC_ID (v13+), NOT_LEADER_OR_FOLLOWER (with the leader in
//   current_leader and node_endpoints from v12/v16), FENCED_LEADER_EPOCH /
//   UNKNOWN_LEADER_EPOCH against current_leader_epoch (v9+)
// * Long poll: with fewer than min_bytes available, no error and a positive
//   max_wait, the fetch waits in the fetch purgatory keyed by the
//   partitions it reads (an incremental fetch: all of its session's);
//   every advance of a high watermark re-checks the fetches waiting on
//   that partition, and the wait's timer answers with whatever is there.
//   No handler goroutine waits
// * Fetch sessions (KIP-227, fetchsession.go), from v7: a full fetch with
//   epoch 0 gets a new session id when the cache has room
//   (max.incremental.fetch.session.cache.slots, eviction by Kafka's
//   rules); an incremental fetch (id, epoch > 0) updates the session's
//   partitions with its own, drops the forgotten ones, reads every
//   partition of the session and answers only those with news (records,
//   a changed high watermark or log start offset, an error). Partitions
//   that returned records move to the end of the session. Whether a
//   session is made, and what an incremental answer holds, is settled
//   when the response is framed, after any wait. Epoch -1 asks for no
//   session (and closes the one named); epoch 0 on a session closes it
//   and opens another. Session errors, at the top level with no
//   partitions: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
//   FETCH_SESSION_TOPIC_ID_ERROR (a v13+ session used by an older
//   request, or the other way). Sessions of v13+ requests key partitions
//   by topic id, older ones by name. Followers' sessions are privileged
//   in eviction, as Kafka's
// * Replication throttle (leader.replication.throttled.rate and the
//   topic's leader.replication.throttled.replicas naming this broker for
//   the partition, or *): a follower not in the ISR gets no records of a
//   throttled partition while the leader quota is exceeded (its high
//   watermark and log start still); the records sent of throttled
//   partitions are charged to the quota
// * Client quotas (quota.go), consumers only: the estimated response size
//   counts against consumer_byte_rate and the handler time against
//   request_percentage when the response is built; over either, the
//   answer is empty (no partitions, the session untouched, the fetch
//   quota's record taken back) with throttle_time_ms, and the connection
//   is muted for it
//
// Version notes:
// * v4: isolation level, last stable offset, aborted transactions
// * v5: log start offset; v7: sessions, top-level error; v9: current
//   leader epoch; v11: rack (ignored), preferred read replica (-1)
// * v12: flexible, diverging epoch / current leader tags; v13: topic ids
// * v15: replica state instead of replica id; v16: node endpoints
// * v17: replica directory id (ignored); v18: high watermark tag (ignored)

// delayedFetch is one Fetch request, answered at once or after waiting
// in the fetch purgatory. The purgatory runs TryComplete, OnExpiration
// and OnComplete one at a time, under the operation's lock.
type delayedFetch struct {
	purgatory.Base
	h   *Handler
	c   *call
	req *kmsg.FetchRequest
	ctx *fetchContext // the partitions read, and what the session makes of the answer

	resp       fetchResponse
	bytes      int64
	partitions int  // partitions read
	stop       bool // an error or a condition that answers at once
	// denied are the topics (by name) the principal may not READ, or
	// every topic for a follower fetch without CLUSTER_ACTION; decided
	// once per request (nil without an authorizer).
	denied    map[string]bool
	deniedAll bool
}

// authorize decides the fetch's topics once, before the first read: a
// follower needs CLUSTER_ACTION on the cluster, a consumer READ on each
// topic (KafkaApis.handleFetchRequest); what is refused is answered
// TOPIC_AUTHORIZATION_FAILED.
func (f *delayedFetch) authorize(snap *controller.Snapshot) {
	if f.h.authorizer() == nil {
		return
	}
	replicaID := f.req.ReplicaID
	if f.c.version >= 15 {
		replicaID = f.req.ReplicaState.ID
	}
	if replicaID >= 0 {
		f.deniedAll = !f.c.authorizeCluster(acl.ClusterAction)
		return
	}
	ta := f.c.topicAuth(acl.Read)
	for i := range f.ctx.parts {
		pt := &f.ctx.parts[i]
		name := pt.topic
		if t := f.topic(snap, pt); t != nil {
			name = t.Name
		} else if f.ctx.usesTopicIDs {
			continue // UNKNOWN_TOPIC_ID, whatever the ACLs
		}
		if !ta.ok(name) {
			if f.denied == nil {
				f.denied = map[string]bool{}
			}
			f.denied[strings.Clone(name)] = true
		}
	}
}

func (h *Handler) handleFetch(c *call) {
	req := c.req.(*kmsg.FetchRequest)
	f := &delayedFetch{h: h, c: c, req: req, ctx: h.newFetchContext(req, c.version)}
	if f.ctx.kind == sessionErrorContext {
		f.resp = fetchResponse{version: c.version}
		f.respond()
		return
	}
	f.authorize(h.cfg.Cache.Snapshot())
	received := c.r.ReceivedAt
	if received.IsZero() {
		received = h.now()
	}
	// A long poll waits max_wait_ms by design: the watchdog counts only
	// what is beyond (network/watchdog.go).
	c.r.SetWait(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	wait := time.Duration(req.MaxWaitMillis)*time.Millisecond - h.now().Sub(received)
	h.cfg.Fetches.TryCompleteElseWatch(f, wait, f.keys()...)
}

// replicaID is the fetching replica's id: >= 0 for a follower (from
// ReplicaState from v15), -1 for a consumer.
func (f *delayedFetch) replicaID() int32 {
	if f.c.version >= 15 {
		return f.req.ReplicaState.ID
	}
	return f.req.ReplicaID
}

// throttle applies the client quotas to a consumer's fetch, as Kafka's
// handleFetchRequest: the estimated response size is recorded in the
// fetch quota and the handler time in the request quota; when either
// throttles, the fetch quota's record is taken back and the response
// becomes an empty one with the throttle time
// (FetchContext.getThrottledResponse), the connection muted for it.
// It reports whether it did. Follower fetches are exempt.
func (f *delayedFetch) throttle() bool {
	c := f.c
	q := c.h.cfg.Quotas
	if q == nil || f.replicaID() >= 0 || (c.start.IsZero() && !q.Get(clientquota.Fetch).Enabled()) {
		return false // no quota applies: two atomic loads
	}
	now := c.h.now()
	size := f.resp.estimatedSize()
	d := max(c.requestThrottle(now), c.byteThrottle(clientquota.Fetch, size, now))
	if d <= 0 {
		return false
	}
	q.Get(clientquota.Fetch).Unrecord(c.quotaUser(), clientID(c.r), float64(size), now)
	f.h.throttledFetchResponse(f.ctx, &f.resp)
	f.resp.throttleMs = throttleMillis(d)
	c.r.SetThrottle(d)
	return true
}

// keys are the purgatory keys of the known partitions read (all of an
// incremental session's). Their names come from the metadata cache,
// never from the request: request strings alias the frame, which is
// reused once the response is written, while a completed operation's
// keys may stay in the purgatory's maps until the next purge. Unknown
// topics need no key: they answer at once.
func (f *delayedFetch) keys() []purgatory.Key {
	snap := f.h.cfg.Cache.Snapshot()
	keys := make([]purgatory.Key, 0, len(f.ctx.parts))
	var t *controller.Topic
	for i := range f.ctx.parts {
		pt := &f.ctx.parts[i]
		if i == 0 || !samePartTopic(pt, &f.ctx.parts[i-1]) {
			t = f.topic(snap, pt)
		}
		if t != nil {
			keys = append(keys, purgatory.Key{Topic: t.Name, Partition: pt.partition})
		}
	}
	return keys
}

// samePartTopic tells whether two parts are of one topic.
func samePartTopic(a, b *fetchPart) bool { return a.topic == b.topic && a.topicID == b.topicID }

// topic is the metadata of a part's topic: by id for v13+, or nil.
func (f *delayedFetch) topic(snap *controller.Snapshot, pt *fetchPart) *controller.Topic {
	if f.ctx.usesTopicIDs {
		t, _ := snap.TopicByID(pt.topicID)
		return t
	}
	return snap.Topics[pt.topic]
}

// TryComplete re-reads the partitions and completes the fetch when there
// is enough to answer: min_bytes, an error, or no partition to wait on.
func (f *delayedFetch) TryComplete() bool {
	f.read()
	if f.stop || f.bytes >= int64(f.req.MinBytes) || f.partitions == 0 {
		return f.ForceComplete()
	}
	return false
}

// OnExpiration reads once more, so the answer has what arrived last.
func (f *delayedFetch) OnExpiration() { f.read() }

// OnComplete sends the response.
func (f *delayedFetch) OnComplete() { f.respond() }

// read builds the response from the logs as they are now: one response
// partition per part, topics grouped as the parts run.
func (f *delayedFetch) read() {
	h, req, v := f.h, f.req, f.c.version
	snap := h.cfg.Cache.Snapshot()
	readCommitted := req.IsolationLevel == 1
	remaining := int64(req.MaxBytes)
	if v < 3 || req.MaxBytes <= 0 {
		remaining = 1<<31 - 1
	}
	replicaID := f.replicaID() // >= 0: a follower's fetch
	first := true              // no partition has returned data yet
	f.resp.releaseRegions()    // of an earlier read of this fetch
	f.resp = fetchResponse{version: v}
	f.bytes, f.stop, f.partitions = 0, false, 0
	var endpoints map[int32]bool

	var ft *fetchTopic
	var name string
	var topic *controller.Topic
	var topicErr error
	for i := range f.ctx.parts {
		pt := &f.ctx.parts[i]
		if i == 0 || !samePartTopic(pt, &f.ctx.parts[i-1]) {
			f.resp.topics = append(f.resp.topics, fetchTopic{topic: pt.topic, topicID: pt.topicID})
			ft = &f.resp.topics[len(f.resp.topics)-1]
			name, topicErr = pt.topic, nil
			topic = f.topic(snap, pt)
			if topic != nil {
				name = topic.Name
			} else if f.ctx.usesTopicIDs {
				topicErr = errUnknownTopicID
			}
			if f.deniedAll || f.denied[name] {
				topicErr = kerr.TopicAuthorizationFailed
			}
		}
		f.partitions++
		fp := newFetchPartition(pt.partition, 0)
		err := topicErr
		var p *replica.Partition
		if err == nil {
			p, err = h.cfg.Replicas.Partition(name, pt.partition)
			// An offline replica (its log dir failed) answers
			// KAFKA_STORAGE_ERROR, not NOT_LEADER_OR_FOLLOWER.
			if err != nil && topic != nil && pt.partition >= 0 && int(pt.partition) < len(topic.Partitions) && !errors.Is(err, replica.ErrOffline) {
				err = replica.ErrNotLeaderOrFollower
				pi := topic.Partitions[pt.partition]
				if v >= 12 && pi.Leader >= 0 {
					fp.currentLeaderID, fp.currentLeaderEpoch = pi.Leader, pi.LeaderEpoch
					if endpoints == nil {
						endpoints = map[int32]bool{}
					}
					endpoints[pi.Leader] = true
				}
			}
		}
		if err == nil {
			err = p.CheckLeader(pt.currentLeaderEpoch)
		}
		diverged := false
		if err == nil && replicaID >= 0 {
			// A follower: where its last epoch diverges from this log
			// (Fetch v12+, KIP-595's diverging epoch), it is told and
			// truncates; else its fetch offset is its log end, which the
			// high watermark follows.
			if v >= 12 && pt.lastFetchedEpoch >= 0 {
				e, end := p.EndOffsetForEpoch(pt.lastFetchedEpoch)
				if e < pt.lastFetchedEpoch || end < pt.fetchOffset {
					fp.divergingEpoch, fp.divergingEndOffset = e, end
					fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = p.HighWatermark(), p.LastStableOffset(), p.Log().LogStartOffset()
					diverged = true
					f.stop = true
				}
			}
			if !diverged {
				err = p.FollowerFetch(replicaID, pt.fetchOffset)
			}
		}
		throttled := false
		if err == nil && !diverged && replicaID >= 0 && h.cfg.LeaderQuota != nil && p.LeaderThrottled() {
			// Kafka's shouldLeaderThrottle: a follower out of the ISR
			// gets no records of a throttled partition while the leader
			// quota is exceeded (it waits, as any fetch short of
			// min_bytes); one in the ISR is never held back.
			fp.throttled = true
			if !p.IsReplicaInSync(replicaID) && h.cfg.LeaderQuota.Exceeded(h.now()) {
				throttled = true
				fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = p.HighWatermark(), p.LastStableOffset(), p.Log().LogStartOffset()
			}
		}
		if err == nil && !diverged && !throttled {
			limit := min(int64(pt.maxBytes), remaining)
			var info log.ReadInfo
			if replicaID >= 0 {
				info, err = p.ReadForFollower(pt.fetchOffset, int32(min(limit, 1<<31-1)))
			} else {
				info, err = p.ReadForConsumer(pt.fetchOffset, int32(min(limit, 1<<31-1)), readCommitted)
			}
			if err == nil {
				fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = info.HighWatermark, info.LastStableOffset, info.LogStartOffset
				if readCommitted {
					// From the same view of the log as the records
					// (log.Log.ReadCommitted), so that no aborted batch
					// of the region goes unlisted.
					fp.abortedTxns = make([]abortedTxn, 0, len(info.AbortedTransactions))
					for _, a := range info.AbortedTransactions {
						fp.abortedTxns = append(fp.abortedTxns, abortedTxn{producerID: a.ProducerID, firstOffset: a.FirstOffset})
					}
				}
				r := info.Region
				if !first && r.Length > limit {
					r.Length = max(limit, 0)
				}
				if r.Length > 0 {
					fp.records = r
					first = false
					remaining -= r.Length
					f.bytes += r.Length
					if replicaID < 0 {
						fp.countOut = p // counted once sent (respond), not at each read
					}
				} else {
					r.Release()
				}
			}
		}
		if err != nil {
			fp.errorCode = errorCode(err)
			if errors.Is(err, log.ErrOffsetOutOfRange) {
				fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = -1, -1, -1
			}
			f.stop = true
		}
		ft.partitions = append(ft.partitions, fp)
	}
	if v >= 16 {
		for id := range endpoints {
			if b, ok := snap.Brokers[id]; ok {
				if e, ok := b.Endpoint(f.c.r.Listener); ok {
					var rack *string
					if b.Rack != "" {
						r := b.Rack
						rack = &r
					}
					f.resp.nodeEndpoint = append(f.resp.nodeEndpoint, fetchNodeEndpoint{nodeID: id, host: e.Host, port: e.Port, rack: rack})
				}
			}
		}
	}
}

// respond frames and sends the response.
func (f *delayedFetch) respond() {
	if !f.throttle() {
		f.h.finishFetchResponse(f.ctx, &f.resp)
	}
	if q := f.h.cfg.LeaderQuota; q != nil {
		// What is sent of throttled partitions counts against the leader
		// quota (Kafka's sizeOfThrottledPartitions), whoever fetched it.
		var n int64
		for i := range f.resp.topics {
			for j := range f.resp.topics[i].partitions {
				if rp := &f.resp.topics[i].partitions[j]; rp.throttled {
					n += rp.records.Length
				}
			}
		}
		q.Record(f.h.now(), n)
	}
	for i := range f.resp.topics {
		for j := range f.resp.topics[i].partitions {
			if rp := &f.resp.topics[i].partitions[j]; rp.countOut != nil {
				rp.countOut.CountBytesOut(rp.records.Length)
			}
		}
	}
	bp := bufPool.Get().(*[]byte)
	var hdr [5]byte
	h := f.c.header(hdr[:0])
	parts := f.resp.frame((*bp)[:0], h)
	if len(parts) > 0 && len(parts[0].Bytes) > 0 {
		*bp = parts[0].Bytes[:0]
	}
	resp := &f.resp
	f.c.r.Respond(&network.Response{
		Parts: parts,
		Done: func(error) {
			// The bytes are on the socket or dropped: the segment files
			// may be closed now (ReadForConsumer holds them open).
			resp.releaseRegions()
			if cap(*bp) <= 1<<20 {
				bufPool.Put(bp)
			}
		},
	})
}
