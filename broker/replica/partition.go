package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/replica/isr"
	"github.com/qk-project/qk/broker/replica/quota"
)

// Partition is one partition hosted by this broker.
type Partition struct {
	m     *Manager
	topic string
	index int32
	// log is the partition's log. It changes only when the replica moves
	// to another log dir (movedir.go), under mu's write lock: every append
	// loads it under the read lock.
	log atomic.Pointer[log.Log]
	// stats are the topic's traffic counters (Manager.TopicStats).
	stats *TopicStats

	mu          sync.RWMutex
	topicID     [16]byte
	leader      int32
	leaderEpoch int32
	replicas    []int32
	isr         []int32
	// partitionEpoch is the version of the partition's state node (the
	// LeaderAndIsr's zkVersion): an ISR change is asked against it.
	partitionEpoch int32
	config         config.Topic
	// leaderThrottled and followerThrottled: the topic's
	// leader/follower.replication.throttled.replicas name this broker's
	// replica, worked out once per config (setConfigLocked) rather than
	// at every fetch.
	leaderThrottled, followerThrottled bool

	// hwMu serialises "read LEO, raise HW" so that concurrent appends
	// and follower fetches never move the high watermark backwards; it
	// guards leaderState.
	hwMu sync.Mutex
	// leaderState is the replication state while this broker leads (nil
	// otherwise): each follower's fetch state and the ISR the high
	// watermark counts (isr.Leader, pure rules).
	leaderState *isr.Leader
	// hwMoved is closed (and replaced) when the high watermark advances
	// or the leadership ends: WaitHighWatermark waits on it. Guarded by
	// hwMu.
	hwMoved chan struct{}
}

// Topic is the partition's topic.
func (p *Partition) Topic() string { return p.topic }

// Index is the partition number.
func (p *Partition) Index() int32 { return p.index }

// Log is the partition's log.
func (p *Partition) Log() *log.Log { return p.log.Load() }

// State is a snapshot of the leader state.
type State struct {
	TopicID     [16]byte
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Config      config.Topic
}

// State returns the partition's current leader state.
func (p *Partition) State() State {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return State{TopicID: p.topicID, Leader: p.leader, LeaderEpoch: p.leaderEpoch,
		Replicas: slices.Clone(p.replicas), ISR: slices.Clone(p.isr), Config: p.config}
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leader == p.m.cfg.BrokerID
}

func (p *Partition) makeLeaderOrFollower(st PartitionState) error {
	p.mu.Lock()
	if st.LeaderEpoch < p.leaderEpoch {
		cur := p.leaderEpoch
		p.mu.Unlock()
		return fmt.Errorf("%w: state epoch %d, applied %d", ErrStaleEpoch, st.LeaderEpoch, cur)
	}
	newEpoch := st.LeaderEpoch > p.leaderEpoch
	wasLeader := p.leader == p.m.cfg.BrokerID
	if st.Leader == p.m.cfg.BrokerID && p.leaderEpoch < 0 {
		// Opened by this process: a leadership at an epoch its log
		// already holds (or has gone past) would append under an epoch an
		// earlier leadership used, which leader epochs exist to tell apart
		// (a log newer than the metadata: a data dir taken over from
		// another cluster, or metadata restored from a backup). Refused,
		// with the log's epoch for the controller to go above.
		if latest, ok := p.Log().MaxEpochSeen(); ok && latest >= st.LeaderEpoch {
			p.mu.Unlock()
			return &LogEpochAheadError{Requested: st.LeaderEpoch, Latest: latest}
		}
	}
	p.topicID = st.TopicID
	p.leader = st.Leader
	p.leaderEpoch = st.LeaderEpoch
	p.replicas = slices.Clone(st.Replicas)
	if wasLeader && st.Leader == p.m.cfg.BrokerID {
		// The controller changed the ISR of a partition led here (a
		// controlled shutdown of a follower, a reassignment): counted as
		// the leader's own changes are (onISRUpdate); the same ISR
		// arriving both ways changes nothing the second time.
		p.m.countISRChange(len(p.isr), len(st.ISR))
	}
	p.isr = slices.Clone(st.ISR)
	p.partitionEpoch = st.PartitionEpoch
	p.setConfigLocked(st.Config)
	isLeader := p.leader == p.m.cfg.BrokerID
	p.mu.Unlock()

	if err := p.Log().SetConfig(p.m.LogConfig(st.Config)); err != nil {
		return err
	}
	if !isLeader {
		p.hwMu.Lock()
		p.leaderState = nil
		p.wakeHWLocked()
		p.hwMu.Unlock()
		if wasLeader {
			// Produces waiting for the ISR, and fetches, learn at once.
			p.m.cfg.OnHighWatermark(p.topic, p.index)
		}
		if wasLeader || newEpoch {
			p.m.lg.Info("became follower", "topic", p.topic, "partition", p.index, "leader", st.Leader,
				"leader_epoch", st.LeaderEpoch, "offset", p.Log().LogEndOffset())
		}
		return nil
	}
	if latest, ok := p.Log().LatestEpoch(); !ok || st.LeaderEpoch > latest {
		if err := p.Log().AssignLeaderEpoch(st.LeaderEpoch); err != nil {
			return err
		}
	}
	p.hwMu.Lock()
	if newEpoch || !wasLeader || p.leaderState == nil {
		// A new leadership: followers start over (their offsets are
		// unknown until they fetch in this epoch).
		p.leaderState = isr.NewLeader(isr.State{ID: p.m.cfg.BrokerID, Epoch: st.LeaderEpoch, Replicas: st.Replicas,
			ISR: st.ISR, LEO: p.Log().LogEndOffset(), HW: p.Log().HighWatermark()}, p.m.now().UnixMilli())
	} else {
		// The same leadership with a new ISR (the controller's answer to a
		// change, or another's): committed.
		p.leaderState.Commit(st.ISR)
	}
	p.hwMu.Unlock()
	if newEpoch || !wasLeader {
		p.m.lg.Info("became leader", "topic", p.topic, "partition", p.index, "leader_epoch", st.LeaderEpoch,
			"isr", st.ISR, "offset", p.Log().LogEndOffset())
	}
	p.maybeIncrementHighWatermark()
	return nil
}

// CheckLeader returns nil if this broker leads the partition in
// currentLeaderEpoch (-1: any epoch), else why not.
func (p *Partition) CheckLeader(currentLeaderEpoch int32) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.checkLeaderLocked(currentLeaderEpoch)
}

func (p *Partition) checkLeaderLocked(currentLeaderEpoch int32) error {
	switch {
	case currentLeaderEpoch >= 0 && currentLeaderEpoch < p.leaderEpoch:
		return ErrFencedLeaderEpoch
	case currentLeaderEpoch > p.leaderEpoch:
		return ErrUnknownLeaderEpoch
	case p.leader != p.m.cfg.BrokerID:
		return ErrNotLeaderOrFollower
	}
	return nil
}

// AppendAsLeader appends one validated record batch from a producer.
// With requiredAcks -1 it first checks that the ISR has at least
// min.insync.replicas members. The high watermark then advances to the
// smallest log end offset of the ISR (here: the leader's own).
func (p *Partition) AppendAsLeader(batch []byte, requiredAcks int16) (log.AppendInfo, error) {
	info, _, err := p.appendAsLeader(batch, requiredAcks, nil, false)
	return info, err
}

// AppendAsCoordinator is AppendAsLeader with acks=-1 for a batch a
// coordinator wrote in a producer's name (TxnOffsetCommit's offsets in
// the transactional producer's id and epoch): its sequence is not
// checked (log.Log.AppendAsCoordinator).
func (p *Partition) AppendAsCoordinator(batch []byte) (log.AppendInfo, error) {
	info, _, err := p.appendAsLeader(batch, -1, nil, true)
	return info, err
}

// AppendAsLeaderAsync is AppendAsLeader that does not wait for a flush
// that flush.messages calls for: see log.Log.AppendAsync. When pending is
// true, flushed is called once the batch is durable or cannot become so.
func (p *Partition) AppendAsLeaderAsync(batch []byte, requiredAcks int16, flushed func(error)) (info log.AppendInfo, pending bool, err error) {
	return p.appendAsLeader(batch, requiredAcks, flushed, false)
}

func (p *Partition) appendAsLeader(batch []byte, requiredAcks int16, flushed func(error), coordinator bool) (log.AppendInfo, bool, error) {
	// The read lock is held across the append, as Kafka's
	// leaderIsrUpdateLock: a role change (the write lock) waits for it, so
	// no append lands under an epoch the partition no longer leads in.
	p.mu.RLock()
	if err := p.checkLeaderLocked(-1); err != nil {
		p.mu.RUnlock()
		return log.AppendInfo{}, false, err
	}
	epoch := p.leaderEpoch
	if requiredAcks == -1 && len(p.isr) < p.config.MinInsyncReplicas {
		isr, minISR := len(p.isr), p.config.MinInsyncReplicas
		p.mu.RUnlock()
		return log.AppendInfo{}, false, fmt.Errorf("%w: isr %d, min.insync.replicas %d", ErrNotEnoughReplicas, isr, minISR)
	}
	var (
		info    log.AppendInfo
		pending bool
		err     error
	)
	switch {
	case coordinator:
		info, err = p.Log().AppendAsCoordinator(batch, epoch)
	case flushed != nil:
		info, pending, err = p.Log().AppendAsync(batch, epoch, flushed)
	default:
		info, err = p.Log().Append(batch, epoch)
	}
	p.mu.RUnlock()
	if err != nil {
		return info, false, err
	}
	if !info.Duplicate {
		p.stats.BytesIn.Add(uint64(len(batch)))
		p.stats.MessagesIn.Add(uint64(info.NumRecords))
	}
	p.maybeIncrementHighWatermark()
	return info, pending, nil
}

// maybeIncrementHighWatermark tells the leader state the log's end offset
// and raises the log's high watermark to what the state allows: the
// smallest log end offset in the ISR (the leader's own when it is alone).
func (p *Partition) maybeIncrementHighWatermark() {
	p.hwMu.Lock()
	if p.leaderState == nil {
		p.hwMu.Unlock()
		return
	}
	p.leaderState.Appended(p.Log().LogEndOffset())
	advanced := p.applyHighWatermarkLocked()
	followers := p.leaderState.Followers() > 0
	p.hwMu.Unlock()
	// Followers long-poll at the log end: the append is news to them
	// even when the high watermark stays.
	if advanced || followers {
		p.m.cfg.OnHighWatermark(p.topic, p.index)
	}
}

// applyHighWatermarkLocked moves the log's high watermark up to the
// leader state's; hwMu is held.
func (p *Partition) applyHighWatermarkLocked() bool {
	old := p.Log().HighWatermark()
	if hw := p.leaderState.HW(); hw > old && p.Log().SetHighWatermark(hw) > old {
		p.wakeHWLocked()
		return true
	}
	return false
}

// wakeHWLocked wakes WaitHighWatermark; hwMu is held.
func (p *Partition) wakeHWLocked() {
	if p.hwMoved != nil {
		close(p.hwMoved)
		p.hwMoved = nil
	}
}

// WaitHighWatermark waits until the high watermark reaches offset (the
// ISR has everything below it), for writers that answer only once their
// records are committed (the group coordinator's offset commits). It
// fails with ErrNotLeaderOrFollower when the leadership ends first, or
// the context's error.
func (p *Partition) WaitHighWatermark(ctx context.Context, offset int64) error {
	for {
		p.hwMu.Lock()
		if p.leaderState == nil {
			p.hwMu.Unlock()
			return fmt.Errorf("%w: leadership ended before the records were committed", ErrNotLeaderOrFollower)
		}
		if p.Log().HighWatermark() >= offset {
			p.hwMu.Unlock()
			return nil
		}
		if p.hwMoved == nil {
			p.hwMoved = make(chan struct{})
		}
		ch := p.hwMoved
		p.hwMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FollowerFetch records a fetch from follower replica at fetchOffset (its
// log end offset) on the leader: its fetch state, and the high watermark
// it lets advance (Kafka's updateFollowerFetchState). The caller reads
// the records after it, up to the log end (ReadForFollower).
func (p *Partition) FollowerFetch(replica int32, fetchOffset int64) error {
	p.mu.RLock()
	err := p.checkLeaderLocked(-1)
	leaderEpoch, partitionEpoch, cur := p.leaderEpoch, p.partitionEpoch, p.isr
	p.mu.RUnlock()
	if err != nil {
		return err
	}
	p.hwMu.Lock()
	if p.leaderState == nil {
		p.hwMu.Unlock()
		return ErrNotLeaderOrFollower
	}
	p.leaderState.Appended(p.Log().LogEndOffset())
	if _, err := p.leaderState.FollowerFetched(replica, fetchOffset, p.m.now().UnixMilli()); err != nil {
		p.hwMu.Unlock()
		return fmt.Errorf("%w: %v", ErrNotLeaderOrFollower, err)
	}
	advanced := p.applyHighWatermarkLocked()
	next, expand := p.maybeExpandISRLocked(leaderEpoch, partitionEpoch, cur)
	p.hwMu.Unlock()
	if advanced {
		p.m.cfg.OnHighWatermark(p.topic, p.index)
	}
	if expand {
		p.m.lg.Info("expanding ISR", "topic", p.topic, "partition", p.index, "isr", cur, "new_isr", next,
			"follower", replica, "follower_leo", fetchOffset)
		p.sendISRUpdate(next, leaderEpoch, partitionEpoch)
	}
	return nil
}

// setConfigLocked takes the topic's config. Called with mu held.
func (p *Partition) setConfigLocked(cfg config.Topic) {
	p.config = cfg
	p.leaderThrottled = quota.Throttled(cfg.LeaderReplicationThrottledReplicas, p.index, p.m.cfg.BrokerID)
	p.followerThrottled = quota.Throttled(cfg.FollowerReplicationThrottledReplicas, p.index, p.m.cfg.BrokerID)
}

// LeaderThrottled reports whether the topic's
// leader.replication.throttled.replicas names this broker's replica of
// the partition: what it sends followers not in the ISR is held under
// the leader replication quota. As in Kafka, the list names leaders (the
// brokers sending), not the followers fetching.
func (p *Partition) LeaderThrottled() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leaderThrottled
}

// IsReplicaInSync reports whether replica is in the ISR (Kafka's
// isReplicaInSync): an in-sync follower is never throttled.
func (p *Partition) IsReplicaInSync(replica int32) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Contains(p.isr, replica)
}

// ReadForFollower reads from offset for a follower: up to the log end,
// not the high watermark (a follower replicates what is not committed
// yet). The caller releases the region as for ReadForConsumer.
func (p *Partition) ReadForFollower(offset int64, maxBytes int32) (log.ReadInfo, error) {
	return p.Log().ReadRetained(offset, maxBytes, p.Log().LogEndOffset())
}

// FollowerState is the leader's view of follower replica (false when this
// broker does not lead or replica is not a follower).
func (p *Partition) FollowerState(replica int32) (isr.Follower, bool) {
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	if p.leaderState == nil {
		return isr.Follower{}, false
	}
	return p.leaderState.Follower(replica)
}

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.Log().HighWatermark() }

// LastStableOffset is the offset below which no transaction is open
// or undecided (log.Log.LastStableOffset): the end of what a
// read_committed consumer may read.
func (p *Partition) LastStableOffset() int64 { return p.Log().LastStableOffset() }

// ReadForConsumer reads from offset for a consumer: at most maxBytes
// (the first batch whole even if larger) and nothing at or above the
// high watermark; for read_committed nothing at or above the last stable
// offset, with the aborted transactions of the data read taken from the
// same view of the log (log.Log.ReadCommitted). The region holds its
// segment file open (log.Log.ReadRetained): the caller must call
// Region.Release once the bytes are sent or dropped.
func (p *Partition) ReadForConsumer(offset int64, maxBytes int32, readCommitted bool) (log.ReadInfo, error) {
	if readCommitted {
		return p.Log().ReadCommitted(offset, maxBytes, true)
	}
	return p.Log().ReadRetained(offset, maxBytes, p.Log().HighWatermark())
}

// AppendMarker writes a transaction marker (COMMIT or ABORT) for a
// producer as the leader, on the coordinator's WriteTxnMarkers: it
// closes the producer's transaction on this partition. Like a produce
// with acks=-1 it needs min.insync.replicas in the ISR; the caller waits
// for the high watermark to pass it (WaitHighWatermark) before it
// answers, as Kafka's markers are written with acks=all.
func (p *Partition) AppendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, nowMs int64) (log.AppendInfo, error) {
	p.mu.RLock()
	if err := p.checkLeaderLocked(-1); err != nil {
		p.mu.RUnlock()
		return log.AppendInfo{}, err
	}
	if len(p.isr) < p.config.MinInsyncReplicas {
		isr, minISR := len(p.isr), p.config.MinInsyncReplicas
		p.mu.RUnlock()
		return log.AppendInfo{}, fmt.Errorf("%w: isr %d, min.insync.replicas %d", ErrNotEnoughReplicas, isr, minISR)
	}
	info, err := p.Log().AppendMarker(producerID, producerEpoch, coordinatorEpoch, commit, p.leaderEpoch, nowMs)
	p.mu.RUnlock()
	if err != nil {
		return info, err
	}
	p.maybeIncrementHighWatermark()
	return info, nil
}

// Config is the topic's effective configuration.
func (p *Partition) Config() config.Topic {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.config
}

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leaderEpoch
}

// TopicID is the id of the partition's topic.
func (p *Partition) TopicID() [16]byte {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.topicID
}
