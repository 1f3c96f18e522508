package fetcher

import (
	"cmp"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The follower's half of a fetch session (KIP-227), after Kafka's
// FetchSessionHandler.
//
// A fetcher opens a session with a full fetch (SessionID 0, Epoch 0) that
// names every partition; the leader answers with a session id. Every
// later fetch is incremental: it carries the id and the next epoch and
// names only the partitions whose fetch parameters changed since the
// session last heard of them (added ones included) and, as forgotten
// topics, those no longer fetched. The leader fetches every partition of
// the session and answers only those with news. With hundreds of
// partitions per leader that turns a steady-state fetch from O(partitions)
// bytes each way into O(changes).
//
// The handler's view of the session is updated when a request is built,
// not when its answer arrives: any failure (a session error, a network
// error, a top-level error) makes the next request full, which resends
// everything, so the two sides never need to agree on what a lost request
// said.
//
//	state            next request
//	id 0, epoch 0    full, asks for a new session
//	id n, epoch 0    full, closes session n and asks for a new one
//	id n, epoch e>0  incremental on session n
//
//	answer                                        next state
//	FETCH_SESSION_ID_NOT_FOUND                    id 0, epoch 0
//	any other top-level error, or no answer       id n, epoch 0
//	full answer with session id m (0: none)       id m, epoch 1 (or 0, 0)
//	incremental answer with session id 0          id 0, epoch 0 (leader closed it)
//	incremental answer                            id n, epoch e+1

// partitionData is what a fetch asks of one partition: the fields Kafka
// compares (FetchRequest.PartitionData) to decide whether an incremental
// fetch must name the partition.
type partitionData struct {
	TopicID            [16]byte
	FetchOffset        int64
	LogStartOffset     int64
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// sessionPartition is one partition a fetcher wants to fetch now.
type sessionPartition struct {
	TP
	partitionData
}

// sessionRequest is what one Fetch must carry for its session.
type sessionRequest struct {
	SessionID    int32
	SessionEpoch int32
	// Full: ToSend is every partition fetched.
	Full bool
	// ToSend are the partitions to name, in the order given to build.
	ToSend []sessionPartition
	// ToForget are the partitions to forget (incremental only), with the
	// topic id the session knows them by.
	ToForget []sessionPartition
	// Partitions is how many partitions the session holds with this
	// request: what the leader fetches.
	Partitions int
}

// Empty reports whether there is no request to send: no partition to
// fetch and none to forget (Kafka's buildFetch returning None). An
// incremental request that names nothing is not empty: it fetches the
// whole session (and is the follower's long poll).
func (r *sessionRequest) Empty() bool { return r.Partitions == 0 && len(r.ToForget) == 0 }

// fetchSessionHandler is the fetcher's state of its session with one
// leader (Kafka's FetchSessionHandler). It is owned by the fetcher's
// goroutine and needs no lock.
type fetchSessionHandler struct {
	id    int32
	epoch int32
	// parts is what the leader's session holds, as of the last request
	// built.
	parts map[TP]partitionData
}

func newFetchSessionHandler() *fetchSessionHandler {
	return &fetchSessionHandler{parts: map[TP]partitionData{}}
}

// build returns what the next Fetch carries to fetch next (the partitions
// to fetch now, in request order) and takes next as the session's
// partitions.
func (h *fetchSessionHandler) build(next []sessionPartition) sessionRequest {
	r := sessionRequest{SessionID: h.id, SessionEpoch: h.epoch, Partitions: len(next)}
	if h.id == 0 || h.epoch == 0 {
		r.Full = true
		r.ToSend = next
		h.parts = make(map[TP]partitionData, len(next))
		for _, p := range next {
			h.parts[p.TP] = p.partitionData
		}
		return r
	}
	seen := make(map[TP]bool, len(next))
	for _, p := range next {
		seen[p.TP] = true
		prev, ok := h.parts[p.TP]
		switch {
		case !ok:
			// Added.
		case prev.TopicID != p.TopicID && prev.TopicID != [16]byte{} && p.TopicID != [16]byte{}:
			// Replaced: the topic was deleted and created again under
			// the same name. The leader keys a v13+ session by topic id
			// (every qk leader speaks v13+), so the old id is forgotten
			// and the new one added, as Kafka's handler does.
			r.ToForget = append(r.ToForget, sessionPartition{TP: p.TP, partitionData: prev})
		case prev == p.partitionData:
			continue // unchanged: the leader's session has it
		}
		r.ToSend = append(r.ToSend, p)
		h.parts[p.TP] = p.partitionData
	}
	for tp, prev := range h.parts {
		if !seen[tp] {
			r.ToForget = append(r.ToForget, sessionPartition{TP: tp, partitionData: prev})
			delete(h.parts, tp)
		}
	}
	slices.SortFunc(r.ToForget, func(a, b sessionPartition) int { return compareTP(a.TP, b.TP) })
	return r
}

// handleResponse takes the answer to a request built by build: its
// top-level error code and session id. It reports whether the answer's
// partitions may be used; false means the next request is full.
func (h *fetchSessionHandler) handleResponse(req *sessionRequest, errorCode int16, sessionID int32) bool {
	if errorCode != 0 {
		if errorCode == kerr.FetchSessionIDNotFound.Code {
			h.id, h.epoch = 0, 0
		} else {
			h.epoch = 0 // close the session and open another
		}
		return false
	}
	switch {
	case req.Full && sessionID == 0:
		// The leader keeps no session (cache full, or sessions off):
		// keep asking with full fetches.
		h.id, h.epoch = 0, 0
	case req.Full:
		h.id, h.epoch = sessionID, 1
	case sessionID == 0:
		// The leader closed the session (it became empty): its answer is
		// a sessionless one, with whatever it fetched.
		h.id, h.epoch = 0, 0
	default:
		h.epoch = nextEpoch(h.epoch)
	}
	return true
}

// handleError takes a request that got no answer: the next one closes the
// session and opens another (the leader may or may not have moved its
// epoch).
func (h *fetchSessionHandler) handleError() { h.epoch = 0 }

// nextEpoch is Kafka's FetchMetadata.nextEpoch: epochs count up from 1 and
// wrap from MaxInt32 to 1.
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

func compareTP(a, b TP) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}
