package httpapi

import (
	"net/http"
	"slices"
)

// partitionsJSON is GET /v1/partitions (the contract with qk top).
type partitionsJSON struct {
	BrokerID   int32           `json:"broker_id"`
	Partitions []partitionJSON `json:"partitions"`
}

type partitionJSON struct {
	Topic            string  `json:"topic"`
	Partition        int32   `json:"partition"`
	Role             string  `json:"role"` // "leader" or "follower"
	LeaderID         int32   `json:"leader_id"`
	LeaderEpoch      int32   `json:"leader_epoch"`
	Replicas         []int32 `json:"replicas"`
	ISR              []int32 `json:"isr"`
	LogStartOffset   int64   `json:"log_start_offset"`
	LogEndOffset     int64   `json:"log_end_offset"`
	HighWatermark    int64   `json:"high_watermark"`
	LastStableOffset int64   `json:"last_stable_offset"`
	SizeBytes        int64   `json:"size_bytes"`
	// OpenTransactions are the partition's open transactions, oldest
	// first ([] when none): what holds LastStableOffset below
	// HighWatermark.
	OpenTransactions []openTxnJSON  `json:"open_transactions"`
	Followers        []followerJSON `json:"followers"` // [] on a follower
}

type openTxnJSON struct {
	ProducerID  int64 `json:"producer_id"`
	FirstOffset int64 `json:"first_offset"`
	// StartTimestamp is when (ms, the broker's clock) this replica
	// appended the transaction's first batch, or opened the log after a
	// restart (log.TxnStart); AgeMs is the time since.
	StartTimestamp int64 `json:"start_timestamp"`
	AgeMs          int64 `json:"age_ms"`
}

type followerJSON struct {
	BrokerID     int32 `json:"broker_id"`
	LogEndOffset int64 `json:"log_end_offset"`
	// Lag is the leader's LEO minus the follower's, in records (the
	// leader's LEO while the follower has not fetched in this epoch).
	Lag int64 `json:"lag"`
	// LastCaughtUpMsAgo: ms since the follower last reached the leader's
	// LEO, -1 if never in this leader epoch.
	LastCaughtUpMsAgo int64 `json:"last_caught_up_ms_ago"`
	InISR             bool  `json:"in_isr"`
}

// servePartitions answers every hosted partition, sorted by topic then
// partition (replica.Manager.Partitions' order). Each partition's locks
// are taken briefly, one partition at a time.
func (s *Server) servePartitions(w http.ResponseWriter, _ *http.Request) {
	out := partitionsJSON{BrokerID: s.cfg.BrokerID, Partitions: []partitionJSON{}}
	st := s.state.Load()
	if st == nil || st.Replicas == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	nowMs := s.cfg.Now().UnixMilli()
	ps := st.Replicas.Partitions()
	out.Partitions = make([]partitionJSON, 0, len(ps))
	for _, p := range ps {
		ps := p.Status()
		pj := partitionJSON{
			Topic: ps.Topic, Partition: ps.Partition, Role: "follower", LeaderID: ps.Leader, LeaderEpoch: ps.LeaderEpoch,
			Replicas: nonNil(ps.Replicas), ISR: nonNil(ps.ISR),
			LogStartOffset: ps.LogStartOffset, LogEndOffset: ps.LogEndOffset, HighWatermark: ps.HighWatermark,
			LastStableOffset: ps.LastStableOffset, SizeBytes: ps.Size, OpenTransactions: []openTxnJSON{},
			Followers: []followerJSON{},
		}
		for _, t := range ps.OpenTransactions {
			pj.OpenTransactions = append(pj.OpenTransactions, openTxnJSON{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset,
				StartTimestamp: t.StartTimestamp, AgeMs: max(nowMs-t.StartTimestamp, 0)})
		}
		if ps.IsLeader {
			pj.Role = "leader"
			for _, f := range ps.Followers {
				fj := followerJSON{BrokerID: f.ID, LogEndOffset: f.LogEndOffset, Lag: ps.LogEndOffset - max(f.LogEndOffset, 0),
					LastCaughtUpMsAgo: -1, InISR: f.InISR}
				fj.Lag = max(fj.Lag, 0)
				if f.LastCaughtUpMs > 0 {
					fj.LastCaughtUpMsAgo = max(nowMs-f.LastCaughtUpMs, 0)
				}
				pj.Followers = append(pj.Followers, fj)
			}
		}
		out.Partitions = append(out.Partitions, pj)
	}
	writeJSON(w, http.StatusOK, out)
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}

// healthJSON is GET /v1/health.
type healthJSON struct {
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons"`
}

// serveHealth answers 200 when the broker serves, else 503 with why: the
// broker's own reasons (Config.Health) and, once its metadata is loaded,
// whether a controller is known.
func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	reasons := s.cfg.Health()
	if st := s.state.Load(); st != nil && st.Cache != nil && st.Cache.Snapshot().ControllerID < 0 {
		reasons = append(reasons, "no controller known")
	}
	if reasons == nil {
		reasons = []string{}
	}
	code := http.StatusOK
	if len(reasons) > 0 {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, healthJSON{Ready: len(reasons) == 0, Reasons: reasons})
}
