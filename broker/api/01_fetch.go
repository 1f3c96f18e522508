package api

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/purgatory"
	"github.com/qk-project/qk/broker/replica"
)

// Fetch: v4-18
//
// Behavior:
// * The response is framed by hand (fetchframe.go): fixed fields from
//   memory, each partition's records as a file region of its segment, sent
//   with sendfile(2) without passing through user space
// * Bytes: partitions are read in request order; each gets at most
//   min(partition_max_bytes, what is left of max_bytes), except that the
//   first batch of the first partition with data is returned whole
//   however large (Kafka's minOneMessage, so a consumer can always make
//   progress); later regions are cut at their limit, which may leave a
//   partial batch at the end, as Kafka does
// * Consumers read up to the high watermark; read_committed up to the last
//   stable offset, which without transactions is the high watermark.
//   Aborted transactions: null for read_uncommitted, [] for read_committed
// * Errors per partition: OFFSET_OUT_OF_RANGE (offsets -1), UNKNOWN_TOPIC_OR_PARTITION,
//   UNKNOWN_TOPIC_ID (v13+), NOT_LEADER_OR_FOLLOWER (with the leader in
//   current_leader and node_endpoints from v12/v16), FENCED_LEADER_EPOCH /
//   UNKNOWN_LEADER_EPOCH against current_leader_epoch (v9+)
// * Long poll: with fewer than min_bytes available, no error and a positive
//   max_wait, the fetch waits in the fetch purgatory keyed by its
//   partitions; every advance of a high watermark re-checks the fetches
//   waiting on that partition, and the wait's timer answers with whatever
//   is there. No handler goroutine waits
// * Fetch sessions (KIP-227) are not kept: every answer has session id 0,
//   which tells the client to send full fetches; a request naming a
//   session (id != 0), which a client only sends after a broker gave it
//   one, gets FETCH_SESSION_ID_NOT_FOUND. Forgotten topics are ignored
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

	resp       fetchResponse
	bytes      int64
	partitions int  // partitions asked for
	stop       bool // an error or a condition that answers at once
}

func (h *Handler) handleFetch(c *call) {
	req := c.req.(*kmsg.FetchRequest)
	f := &delayedFetch{h: h, c: c, req: req}
	if req.SessionID != 0 {
		f.resp = fetchResponse{version: c.version, errorCode: kerr.FetchSessionIDNotFound.Code}
		f.respond()
		return
	}
	received := c.r.ReceivedAt
	if received.IsZero() {
		received = h.now()
	}
	wait := time.Duration(req.MaxWaitMillis)*time.Millisecond - h.now().Sub(received)
	h.cfg.Fetches.TryCompleteElseWatch(f, wait, f.keys()...)
}

// keys are the purgatory keys of the request's known partitions. Their
// names come from the metadata cache, never from the request: request
// strings alias the frame, which is reused once the response is written,
// while a completed operation's keys may stay in the purgatory's maps
// until the next purge. Unknown topics need no key: they answer at once.
func (f *delayedFetch) keys() []purgatory.Key {
	snap := f.h.cfg.Cache.Snapshot()
	var keys []purgatory.Key
	for _, rt := range f.req.Topics {
		var t *controller.Topic
		var ok bool
		if f.c.version >= 13 {
			t, ok = snap.TopicByID(rt.TopicID)
		} else {
			t, ok = snap.Topics[rt.Topic]
		}
		if !ok {
			continue
		}
		for _, rp := range rt.Partitions {
			keys = append(keys, purgatory.Key{Topic: t.Name, Partition: rp.Partition})
		}
	}
	return keys
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

// read builds the response from the logs as they are now.
func (f *delayedFetch) read() {
	h, req, v := f.h, f.req, f.c.version
	snap := h.cfg.Cache.Snapshot()
	readCommitted := req.IsolationLevel == 1
	remaining := int64(req.MaxBytes)
	if v < 3 || req.MaxBytes <= 0 {
		remaining = 1<<31 - 1
	}
	// replicaID >= 0: a follower's fetch (ReplicaState from v15).
	replicaID := req.ReplicaID
	if v >= 15 {
		replicaID = req.ReplicaState.ID
	}
	first := true           // no partition has returned data yet
	f.resp.releaseRegions() // of an earlier read of this fetch
	f.resp = fetchResponse{version: v}
	f.bytes, f.stop, f.partitions = 0, false, 0
	var endpoints map[int32]bool

	for _, rt := range req.Topics {
		ft := fetchTopic{topic: rt.Topic, topicID: rt.TopicID}
		name := rt.Topic
		var topic *controller.Topic
		var topicErr error
		if v >= 13 {
			t, ok := snap.TopicByID(rt.TopicID)
			if ok {
				name, topic = t.Name, t
			} else {
				topicErr = errUnknownTopicID
			}
		} else {
			topic = snap.Topics[name]
		}
		for _, rp := range rt.Partitions {
			f.partitions++
			fp := newFetchPartition(rp.Partition, 0)
			err := topicErr
			var p *replica.Partition
			if err == nil {
				p, err = h.cfg.Replicas.Partition(name, rp.Partition)
				if err != nil && topic != nil && rp.Partition >= 0 && int(rp.Partition) < len(topic.Partitions) {
					err = replica.ErrNotLeaderOrFollower
					pi := topic.Partitions[rp.Partition]
					if v >= 12 && pi.Leader >= 0 {
						fp.currentLeaderID, fp.currentLeaderEpoch = pi.Leader, pi.LeaderEpoch
						if endpoints == nil {
							endpoints = map[int32]bool{}
						}
						endpoints[pi.Leader] = true
					}
				}
			}
			epoch := int32(-1)
			if v >= 9 {
				epoch = rp.CurrentLeaderEpoch
			}
			if err == nil {
				err = p.CheckLeader(epoch)
			}
			diverged := false
			if err == nil && replicaID >= 0 {
				// A follower: where its last epoch diverges from this log
				// (Fetch v12+, KIP-595's diverging epoch), it is told and
				// truncates; else its fetch offset is its log end, which
				// the high watermark follows.
				if v >= 12 && rp.LastFetchedEpoch >= 0 {
					e, end := p.EndOffsetForEpoch(rp.LastFetchedEpoch)
					if e < rp.LastFetchedEpoch || end < rp.FetchOffset {
						fp.divergingEpoch, fp.divergingEndOffset = e, end
						fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = p.HighWatermark(), p.HighWatermark(), p.Log().LogStartOffset()
						diverged = true
						f.stop = true
					}
				}
				if !diverged {
					err = p.FollowerFetch(replicaID, rp.FetchOffset)
				}
			}
			if err == nil && !diverged {
				limit := min(int64(rp.PartitionMaxBytes), remaining)
				var info log.ReadInfo
				if replicaID >= 0 {
					info, err = p.ReadForFollower(rp.FetchOffset, int32(min(limit, 1<<31-1)))
				} else {
					info, err = p.ReadForConsumer(rp.FetchOffset, int32(min(limit, 1<<31-1)), readCommitted)
				}
				if err == nil {
					fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = info.HighWatermark, info.HighWatermark, info.LogStartOffset
					if readCommitted {
						fp.abortedTxns = []abortedTxn{}
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
		f.resp.topics = append(f.resp.topics, ft)
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
