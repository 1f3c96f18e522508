// Package fetcher is Kafka's ReplicaFetcherManager: the threads that copy
// a leader's records to this broker's follower replicas.
//
// For every leader broker there are num.replica.fetchers fetchers (a
// partition goes to the one its topic and partition hash to, as Kafka's
// getFetcherId), each with its own connection (a controller/channel
// sender) and one Fetch in flight. A fetch names this broker as a
// replica (ReplicaID, ReplicaState from v15), the follower's log end
// offset, the leader epoch it follows (CurrentLeaderEpoch) and the epoch
// of its last record (LastFetchedEpoch, v12+). The leader answers with its
// batches as it wrote them, which the follower appends byte for byte, and
// its high watermark, which the follower takes up to its own log end; or
// with a diverging epoch, where the follower truncates by the rule of
// replica/isr.TruncateTo (the end of the last epoch both have), never to
// its high watermark alone. A partition whose fetch fails waits
// replica.fetch.backoff.ms; one the leader refuses as not leading it (at
// this epoch) is asked for again after 25 ms, doubling up to that, since
// the leader is usually just behind with the same LeaderAndIsr (or the
// controller's next one moves the partition).
//
// Each fetcher keeps a fetch session (KIP-227, session.go) with its
// leader: after a full first fetch, a request names only the partitions
// whose fetch state changed and forgets those no longer fetched, and the
// leader answers only the partitions with news. A partition added by
// LeaderAndIsr joins the next incremental fetch; one removed (or backing
// off after an error, or held back by the follower quota) is forgotten.
//
// The follower replication quota (follower.replication.throttled.rate,
// package quota) holds back the partitions whose topic lists this broker
// in follower.replication.throttled.replicas, while the quota is exceeded
// and the replica has not caught up to the leader's high watermark
// (Kafka's shouldFollowerThrottle); the bytes fetched for them are
// charged to the quota.
package fetcher

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/replica/isr"
	"github.com/qk-project/qk/broker/replica/quota"
)

// Follower is a local follower replica a fetcher feeds.
type Follower interface {
	// FetchState is where the next fetch starts: the log end offset, the
	// epoch of the last record (-1: none) and the leader epoch the
	// replica follows.
	FetchState() (offset int64, lastFetchedEpoch, leaderEpoch int32)
	// AppendFetched appends the leader's batches as they are and takes
	// the leader's high watermark (up to its own log end) and log start
	// offset. It fails if the replica no longer follows at leaderEpoch.
	AppendFetched(batches []byte, leaderHW, leaderLogStart int64, leaderEpoch int32) error
	// Truncate removes records from offset on (a divergence).
	Truncate(offset int64, leaderEpoch int32) error
	// TruncateFullyAndStartAt empties the log to restart at offset (the
	// leader's log starts past everything it has).
	TruncateFullyAndStartAt(offset int64, leaderEpoch int32) error
	// EndOffsetForEpoch is its own OffsetForLeaderEpoch answer.
	EndOffsetForEpoch(epoch int32) (int32, int64)
	// HighWatermark is its high watermark.
	HighWatermark() int64
	// FollowerThrottled reports whether the topic's
	// follower.replication.throttled.replicas names this replica.
	FollowerThrottled() bool
}

// Sender sends requests to one leader broker (controller/channel).
type Sender interface {
	AddBroker(id int32, addr string)
	Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error)
	Close()
}

// Config wires a Manager.
type Config struct {
	BrokerID int32
	// NumFetchers is num.replica.fetchers (per leader broker).
	NumFetchers int
	// MaxWait, MinBytes, MaxBytes, PartitionMaxBytes: replica.fetch.wait.max.ms,
	// replica.fetch.min.bytes, replica.fetch.response.max.bytes,
	// replica.fetch.max.bytes.
	MaxWait           time.Duration
	MinBytes          int32
	MaxBytes          int32
	PartitionMaxBytes int32
	// Backoff is replica.fetch.backoff.ms.
	Backoff time.Duration
	// NewSender makes the connection of one fetcher.
	NewSender func() Sender
	// Quota is the follower replication quota
	// (follower.replication.throttled.rate), shared by every fetcher;
	// nil throttles nothing.
	Quota *quota.Quota
	// Now is the quota's clock; nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Stats counts what a Manager's fetchers sent since it started.
type Stats struct {
	// FullFetches and IncrementalFetches count the Fetch requests sent;
	// FullPartitions and IncrementalPartitions the partitions they
	// named, ForgottenPartitions those incremental fetches forgot.
	FullFetches           int64
	IncrementalFetches    int64
	FullPartitions        int64
	IncrementalPartitions int64
	ForgottenPartitions   int64
	// SessionErrors counts answers with a top-level error (a session
	// the leader no longer has, a wrong epoch), each followed by a full
	// fetch.
	SessionErrors int64
	// ThrottledPartitions counts partitions left out of a fetch by the
	// follower quota; ThrottledBytes the bytes fetched for throttled
	// partitions (charged to the quota).
	ThrottledPartitions int64
	ThrottledBytes      int64
}

// stats are the counters behind Stats.
type stats struct {
	fullFetches, incrementalFetches                            atomic.Int64
	fullPartitions, incrementalPartitions, forgottenPartitions atomic.Int64
	sessionErrors                                              atomic.Int64
	throttledPartitions, throttledBytes                        atomic.Int64
}

// TP names a partition.
type TP struct {
	Topic     string
	Partition int32
}

// Leader is the broker a partition is fetched from.
type Leader struct {
	ID   int32
	Addr string
}

type fetcherKey struct {
	leader int32
	index  int
}

// Manager runs the fetchers.
type Manager struct {
	cfg Config
	lg  *slog.Logger

	mu       sync.Mutex // guards fetchers and where
	fetchers map[fetcherKey]*fetcher
	where    map[TP]fetcherKey
	closed   bool

	stats stats
}

// New returns a Manager with no fetchers.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NumFetchers <= 0 {
		cfg.NumFetchers = 1
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 500 * time.Millisecond
	}
	if cfg.MinBytes <= 0 {
		cfg.MinBytes = 1
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 10 << 20
	}
	if cfg.PartitionMaxBytes <= 0 {
		cfg.PartitionMaxBytes = 1 << 20
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{cfg: cfg, lg: cfg.Logger.With("component", "replica-fetcher"),
		fetchers: map[fetcherKey]*fetcher{}, where: map[TP]fetcherKey{}}
}

// fetcherIndex is Kafka's getFetcherId: the topic's and partition's hash
// modulo num.replica.fetchers.
func (m *Manager) fetcherIndex(tp TP) int {
	h := fnv.New32a()
	h.Write([]byte(tp.Topic))
	return int((h.Sum32() + uint32(tp.Partition)) % uint32(m.cfg.NumFetchers))
}

// Add starts fetching tp from leader into f (moving it off the fetcher of
// a previous leader).
func (m *Manager) Add(leader Leader, tp TP, topicID [16]byte, f Follower) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	key := fetcherKey{leader.ID, m.fetcherIndex(tp)}
	if old, ok := m.where[tp]; ok && old != key {
		m.fetchers[old].remove(tp)
	}
	ft, ok := m.fetchers[key]
	if !ok || ft.addr != leader.Addr {
		if ok {
			ft.stop()
		}
		ft = m.newFetcher(key, leader)
		m.fetchers[key] = ft
	}
	m.where[tp] = key
	ft.add(tp, topicID, f)
}

// Remove stops fetching the partitions (they lead now, or are gone). It
// returns once no fetch response is being applied to them.
func (m *Manager) Remove(tps ...TP) {
	m.mu.Lock()
	var touched []*fetcher
	for _, tp := range tps {
		if key, ok := m.where[tp]; ok {
			ft := m.fetchers[key]
			ft.remove(tp)
			delete(m.where, tp)
			touched = append(touched, ft)
		}
	}
	m.mu.Unlock()
	for _, ft := range touched {
		ft.applyMu.Lock() // waits for a response being applied
		ft.applyMu.Unlock()
	}
}

// Stats returns the counts of requests sent so far.
func (m *Manager) Stats() Stats {
	s := &m.stats
	return Stats{
		FullFetches: s.fullFetches.Load(), IncrementalFetches: s.incrementalFetches.Load(),
		FullPartitions: s.fullPartitions.Load(), IncrementalPartitions: s.incrementalPartitions.Load(),
		ForgottenPartitions: s.forgottenPartitions.Load(), SessionErrors: s.sessionErrors.Load(),
		ThrottledPartitions: s.throttledPartitions.Load(), ThrottledBytes: s.throttledBytes.Load(),
	}
}

// Partitions is how many partitions are fetched.
func (m *Manager) Partitions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.where)
}

// Close stops every fetcher.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	fs := m.fetchers
	m.fetchers = map[fetcherKey]*fetcher{}
	m.where = map[TP]fetcherKey{}
	m.mu.Unlock()
	for _, ft := range fs {
		ft.stop()
	}
}

func (m *Manager) newFetcher(key fetcherKey, leader Leader) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	ft := &fetcher{m: m, key: key, addr: leader.Addr, ctx: ctx, cancel: cancel,
		parts: map[TP]*partition{}, wake: make(chan struct{}, 1), sender: m.cfg.NewSender(), session: newFetchSessionHandler(),
		lg: m.lg.With("leader", leader.ID, "fetcher", key.index)}
	ft.sender.AddBroker(leader.ID, leader.Addr)
	ft.wg.Go(ft.run)
	return ft
}

// partition is one partition of a fetcher.
type partition struct {
	tp      TP
	topicID [16]byte
	f       Follower
	// backoffUntil: not fetched before (after an error).
	backoffUntil time.Time
	// waits counts the refusals in a row that mean the leader has not
	// caught up with the controller yet (waitForLeader).
	waits int
	// leaderHW is the leader's high watermark as last answered (-1: not
	// yet); the replica is caught up (Kafka's isReplicaInSync, never
	// throttled) when its log end reaches it.
	leaderHW int64
}

// fetcher fetches from one leader, one request at a time.
type fetcher struct {
	m      *Manager
	key    fetcherKey
	addr   string
	sender Sender
	lg     *slog.Logger

	mu    sync.Mutex // guards parts and their backoffUntil and leaderHW
	parts map[TP]*partition
	// session is the fetch session with the leader; only the run
	// goroutine uses it.
	session *fetchSessionHandler
	// applyMu is held while a response is applied, so that Remove can
	// wait until its partitions are left alone.
	applyMu sync.Mutex
	wake    chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (ft *fetcher) add(tp TP, topicID [16]byte, f Follower) {
	ft.mu.Lock()
	ft.parts[tp] = &partition{tp: tp, topicID: topicID, f: f, leaderHW: -1}
	ft.mu.Unlock()
	ft.poke()
}

func (ft *fetcher) remove(tp TP) {
	ft.mu.Lock()
	delete(ft.parts, tp)
	ft.mu.Unlock()
}

func (ft *fetcher) poke() {
	select {
	case ft.wake <- struct{}{}:
	default:
	}
}

func (ft *fetcher) stop() {
	ft.cancel()
	ft.sender.Close()
	ft.wg.Wait()
}

// fetchItem is one partition of a request, with the state it was built
// from.
type fetchItem struct {
	p                *partition
	offset           int64
	lastFetchedEpoch int32
	leaderEpoch      int32
	throttled        bool // listed in follower.replication.throttled.replicas
}

// throttleRecheck is how soon partitions held back by the follower quota
// are looked at again when nothing else is fetched.
const throttleRecheck = 100 * time.Millisecond

func (ft *fetcher) run() {
	for ft.ctx.Err() == nil {
		items, wait := ft.ready()
		sr := ft.session.build(ft.sessionPartitions(items))
		if sr.Empty() {
			t := time.NewTimer(wait)
			select {
			case <-ft.ctx.Done():
			case <-ft.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		req := ft.request(&sr)
		ft.count(&sr)
		resp, err := ft.send(req)
		if err != nil {
			ft.session.handleError()
			if ft.ctx.Err() == nil {
				ft.lg.Debug("fetch failed", "err", err)
				ft.backoffAll(items)
			}
			continue
		}
		if !ft.session.handleResponse(&sr, resp.ErrorCode, resp.SessionID) {
			err := kerr.ErrorForCode(resp.ErrorCode)
			ft.m.stats.sessionErrors.Add(1)
			switch {
			case errors.Is(err, kerr.FetchSessionIDNotFound), errors.Is(err, kerr.InvalidFetchSessionEpoch),
				errors.Is(err, kerr.FetchSessionTopicIDError):
				// The leader lost or moved the session (restarted,
				// evicted it): the next fetch is full, at once.
				ft.lg.Debug("fetch session error; next fetch is full", "session_id", sr.SessionID, "epoch", sr.SessionEpoch, "err", err)
			default:
				ft.lg.Debug("fetch failed", "err", err)
				ft.backoffAll(items)
			}
			continue
		}
		ft.apply(items, resp)
	}
}

// sessionPartitions are the fetch parameters of items, as the session
// compares them.
func (ft *fetcher) sessionPartitions(items []fetchItem) []sessionPartition {
	out := make([]sessionPartition, len(items))
	for i, it := range items {
		out[i] = sessionPartition{TP: it.p.tp, partitionData: partitionData{
			TopicID: it.p.topicID, FetchOffset: it.offset, LogStartOffset: -1, MaxBytes: ft.m.cfg.PartitionMaxBytes,
			CurrentLeaderEpoch: it.leaderEpoch, LastFetchedEpoch: it.lastFetchedEpoch,
		}}
	}
	return out
}

func (ft *fetcher) count(sr *sessionRequest) {
	st := &ft.m.stats
	if sr.Full {
		st.fullFetches.Add(1)
		st.fullPartitions.Add(int64(len(sr.ToSend)))
		return
	}
	st.incrementalFetches.Add(1)
	st.incrementalPartitions.Add(int64(len(sr.ToSend)))
	st.forgottenPartitions.Add(int64(len(sr.ToForget)))
}

// ready lists the partitions to fetch now, or how long until one is.
// A partition the follower quota throttles is left out while the quota
// is exceeded, unless it has caught up with the leader's high watermark
// (Kafka's shouldFollowerThrottle).
func (ft *fetcher) ready() ([]fetchItem, time.Duration) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	now := time.Now()
	wait := time.Second
	q := ft.m.cfg.Quota
	exceeded := -1 // the quota, asked once per request: 0 no, 1 yes
	var out []fetchItem
	for _, p := range ft.parts {
		if now.Before(p.backoffUntil) {
			wait = min(wait, p.backoffUntil.Sub(now))
			continue
		}
		offset, last, epoch := p.f.FetchState()
		it := fetchItem{p: p, offset: offset, lastFetchedEpoch: last, leaderEpoch: epoch}
		if q != nil && p.f.FollowerThrottled() {
			it.throttled = true
			inSync := p.leaderHW >= 0 && offset >= p.leaderHW
			if exceeded < 0 {
				exceeded = 0
				if q.Exceeded(ft.m.cfg.Now()) {
					exceeded = 1
				}
			}
			if !inSync && exceeded == 1 {
				ft.m.stats.throttledPartitions.Add(1)
				wait = min(wait, throttleRecheck)
				continue
			}
		}
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b fetchItem) int { return compareTP(a.p.tp, b.p.tp) })
	return out, wait
}

// request builds the Fetch of sr, valid at every version the channel may
// pick: names and topic ids, replica id and replica state.
func (ft *fetcher) request(sr *sessionRequest) *kmsg.FetchRequest {
	cfg := ft.m.cfg
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = cfg.BrokerID
	req.ReplicaState.ID = cfg.BrokerID
	req.ReplicaState.Epoch = -1
	req.MaxWaitMillis = int32(cfg.MaxWait / time.Millisecond)
	req.MinBytes = cfg.MinBytes
	req.MaxBytes = cfg.MaxBytes
	req.IsolationLevel = 0
	req.SessionID, req.SessionEpoch = sr.SessionID, sr.SessionEpoch
	var cur *kmsg.FetchRequestTopic
	for _, sp := range sr.ToSend {
		if cur == nil || cur.Topic != sp.Topic || cur.TopicID != sp.TopicID {
			req.Topics = append(req.Topics, kmsg.NewFetchRequestTopic())
			cur = &req.Topics[len(req.Topics)-1]
			cur.Topic, cur.TopicID = sp.Topic, sp.TopicID
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = sp.Partition
		fp.CurrentLeaderEpoch = sp.CurrentLeaderEpoch
		fp.FetchOffset = sp.FetchOffset
		fp.LastFetchedEpoch = sp.LastFetchedEpoch
		fp.LogStartOffset = sp.LogStartOffset
		fp.PartitionMaxBytes = sp.MaxBytes
		cur.Partitions = append(cur.Partitions, fp)
	}
	var forgot *kmsg.FetchRequestForgottenTopic
	for _, sp := range sr.ToForget {
		if forgot == nil || forgot.Topic != sp.Topic || forgot.TopicID != sp.TopicID {
			req.ForgottenTopics = append(req.ForgottenTopics, kmsg.NewFetchRequestForgottenTopic())
			forgot = &req.ForgottenTopics[len(req.ForgottenTopics)-1]
			forgot.Topic, forgot.TopicID = sp.Topic, sp.TopicID
		}
		forgot.Partitions = append(forgot.Partitions, sp.Partition)
	}
	return req
}

// send sends req to the leader and waits for the answer (which may carry
// a top-level error).
func (ft *fetcher) send(req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	r, err := ft.sender.Request(ft.ctx, ft.key.leader, req)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.FetchResponse), nil
}

func (ft *fetcher) backoffAll(items []fetchItem) {
	ft.mu.Lock()
	until := time.Now().Add(ft.m.cfg.Backoff)
	for _, it := range items {
		it.p.backoffUntil = until
	}
	ft.mu.Unlock()
}

func (ft *fetcher) backoff(p *partition) {
	ft.mu.Lock()
	p.backoffUntil = time.Now().Add(ft.m.cfg.Backoff)
	ft.mu.Unlock()
}

// firstLeaderWait is the first wait of a partition whose leader refused
// it as not (yet) leading: the controller tells every replica at once, so
// a follower often asks before its leader has applied the same
// LeaderAndIsr. The wait doubles with each refusal in a row up to
// replica.fetch.backoff.ms, Kafka's one wait for every error; starting at
// it made the first acks=all write to a new partition take a second.
const firstLeaderWait = 25 * time.Millisecond

// waitForLeader backs p off after such a refusal.
func (ft *fetcher) waitForLeader(p *partition) {
	ft.mu.Lock()
	d := min(firstLeaderWait<<min(p.waits, 10), ft.m.cfg.Backoff)
	p.waits++
	p.backoffUntil = time.Now().Add(d)
	ft.mu.Unlock()
}

// still reports whether p is still this fetcher's.
func (ft *fetcher) still(p *partition) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.parts[p.tp] == p
}

// apply applies a response to the partitions it answers: of an
// incremental fetch, those of the session's (items) with news; the others
// have nothing new.
func (ft *fetcher) apply(items []fetchItem, resp *kmsg.FetchResponse) {
	ft.applyMu.Lock()
	defer ft.applyMu.Unlock()
	byName := map[TP]fetchItem{}
	byID := map[[16]byte]string{}
	for _, it := range items {
		byName[it.p.tp] = it
		byID[it.p.topicID] = it.p.tp.Topic
	}
	for _, t := range resp.Topics {
		name := t.Topic
		if resp.Version >= 13 {
			name = byID[t.TopicID]
		}
		for _, rp := range t.Partitions {
			it, ok := byName[TP{Topic: name, Partition: rp.Partition}]
			if !ok || !ft.still(it.p) {
				continue
			}
			if it.throttled && len(rp.RecordBatches) > 0 {
				n := int64(len(rp.RecordBatches))
				ft.m.cfg.Quota.Record(ft.m.cfg.Now(), n)
				ft.m.stats.throttledBytes.Add(n)
			}
			if err := ft.applyPartition(it, rp); err != nil {
				ft.lg.Warn("cannot apply fetched records; backing off", "topic", name, "partition", rp.Partition, "err", err)
				ft.backoff(it.p)
			}
		}
	}
}

// errRetriable: the partition waits for the controller or the leader.
var errRetriable = errors.New("fetcher: retriable")

func (ft *fetcher) applyPartition(it fetchItem, rp kmsg.FetchResponseTopicPartition) error {
	p := it.p
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
		ft.mu.Lock()
		p.waits = 0
		ft.mu.Unlock()
	case errors.Is(err, kerr.OffsetOutOfRange):
		return ft.outOfRange(it)
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.FencedLeaderEpoch),
		errors.Is(err, kerr.UnknownLeaderEpoch), errors.Is(err, kerr.UnknownTopicOrPartition),
		errors.Is(err, kerr.UnknownTopicID):
		// The leader has moved, or not caught up with the controller yet:
		// the next LeaderAndIsr tells.
		ft.lg.Debug("leader refused the fetch", "topic", p.tp.Topic, "partition", p.tp.Partition, "err", err)
		ft.waitForLeader(p)
		return nil
	case errors.Is(err, kerr.KafkaStorageError):
		ft.lg.Debug("leader cannot read the partition", "topic", p.tp.Topic, "partition", p.tp.Partition, "err", err)
		ft.backoff(p)
		return nil
	default:
		return err
	}
	if rp.DivergingEpoch.Epoch >= 0 && rp.DivergingEpoch.EndOffset >= 0 {
		own, end := p.f.EndOffsetForEpoch(rp.DivergingEpoch.Epoch)
		tr := isr.TruncateTo(isr.EpochEnd{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset},
			isr.EpochEnd{Epoch: own, EndOffset: end}, it.offset, p.f.HighWatermark())
		ft.lg.Info("truncating to the last epoch in common with the leader", "topic", p.tp.Topic, "partition", p.tp.Partition,
			"offset", tr.Offset, "log_end_offset", it.offset, "leader_epoch", rp.DivergingEpoch.Epoch, "leader_end_offset", rp.DivergingEpoch.EndOffset)
		return p.f.Truncate(tr.Offset, it.leaderEpoch)
	}
	if err := p.f.AppendFetched(rp.RecordBatches, rp.HighWatermark, rp.LogStartOffset, it.leaderEpoch); err != nil {
		return err
	}
	ft.mu.Lock()
	p.leaderHW = rp.HighWatermark
	ft.mu.Unlock()
	return nil
}

// outOfRange handles OFFSET_OUT_OF_RANGE: the follower is ahead of the
// leader's end (an unclean election elected a shorter replica: truncate
// to the leader's end) or behind its start (retention removed what it
// lacks: start over at the leader's start), as Kafka's
// handleOutOfRangeError, asking the leader with ListOffsets.
func (ft *fetcher) outOfRange(it fetchItem) error {
	latest, err := ft.listOffset(it, -1)
	if err != nil {
		return err
	}
	if it.offset > latest {
		ft.lg.Warn("follower ahead of the leader's log end; truncating", "topic", it.p.tp.Topic, "partition", it.p.tp.Partition,
			"log_end_offset", it.offset, "leader_log_end_offset", latest)
		return it.p.f.Truncate(latest, it.leaderEpoch)
	}
	earliest, err := ft.listOffset(it, -2)
	if err != nil {
		return err
	}
	if it.offset < earliest {
		ft.lg.Warn("follower behind the leader's log start; starting over there", "topic", it.p.tp.Topic,
			"partition", it.p.tp.Partition, "log_end_offset", it.offset, "leader_log_start_offset", earliest)
		return it.p.f.TruncateFullyAndStartAt(earliest, it.leaderEpoch)
	}
	return fmt.Errorf("%w: offset %d out of range, leader's log %d-%d", errRetriable, it.offset, earliest, latest)
}

// listOffset asks the leader, as a replica, for its log end (-1) or
// start (-2).
func (ft *fetcher) listOffset(it fetchItem, timestamp int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = ft.m.cfg.BrokerID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = it.p.tp.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.Timestamp = it.p.tp.Partition, it.leaderEpoch, timestamp
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	r, err := ft.sender.Request(ft.ctx, ft.key.leader, req)
	if err != nil {
		return 0, err
	}
	resp := r.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("fetcher: malformed ListOffsets answer")
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return 0, kerr.ErrorForCode(rp.ErrorCode)
	}
	return rp.Offset, nil
}
