package replica

import (
	"errors"
	"fmt"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/replica/fetcher"
	"github.com/qk-project/qk/broker/replica/isr"
)

// A Partition is the fetcher's Follower while this broker follows: the
// fetcher appends the leader's batches to its log as they are, and moves
// its high watermark to the leader's (up to its own log end). Every call
// names the leader epoch the fetch was made in; one made before a role
// change is refused (errNotFollowing), so a fetch in flight when the
// broker becomes leader or follows another leader changes nothing.
var _ fetcher.Follower = (*Partition)(nil)

// errNotFollowing: the partition no longer follows at that leader epoch.
var errNotFollowing = errors.New("replica: not following at that leader epoch")

// following checks, under mu, that the partition follows at leaderEpoch.
func (p *Partition) following(leaderEpoch int32) error {
	if p.leader == p.m.cfg.BrokerID || p.leader < 0 || p.leaderEpoch != leaderEpoch {
		return fmt.Errorf("%w %d (leader %d, epoch %d)", errNotFollowing, leaderEpoch, p.leader, p.leaderEpoch)
	}
	return nil
}

// FetchState is where the next fetch from the leader starts.
func (p *Partition) FetchState() (offset int64, lastFetchedEpoch, leaderEpoch int32) {
	p.mu.RLock()
	leaderEpoch = p.leaderEpoch
	p.mu.RUnlock()
	lastFetchedEpoch = -1
	if e, ok := p.Log().LatestEpoch(); ok {
		lastFetchedEpoch = e
	}
	return p.Log().LogEndOffset(), lastFetchedEpoch, leaderEpoch
}

// AppendFetched appends the leader's batches byte for byte (offsets,
// leader epochs, producer fields and CRCs as the leader wrote them) and
// takes the leader's high watermark up to its own log end, and its log
// start offset.
func (p *Partition) AppendFetched(batches []byte, leaderHW, leaderLogStart int64, leaderEpoch int32) error {
	// The read lock is held across the append: a role change (which takes
	// the write lock) never races it, as Kafka's leaderIsrUpdateLock.
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.following(leaderEpoch); err != nil {
		return err
	}
	if len(batches) > 0 {
		if _, err := p.Log().AppendAsFollower(batches); err != nil {
			return err
		}
	}
	old := p.Log().HighWatermark()
	hw := p.Log().SetHighWatermark(isr.FollowerHW(leaderHW, p.Log().LogEndOffset()))
	if leaderLogStart > p.Log().LogStartOffset() {
		if _, err := p.Log().DeleteRecordsBefore(min(leaderLogStart, hw)); err != nil && !errors.Is(err, log.ErrAboveHighWatermark) {
			return err
		}
	}
	if hw > old {
		p.m.cfg.OnHighWatermark(p.topic, p.index)
	}
	return nil
}

// Truncate removes the records from offset on, after a divergence from
// the leader.
func (p *Partition) Truncate(offset int64, leaderEpoch int32) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.following(leaderEpoch); err != nil {
		return err
	}
	_, err := p.Log().TruncateTo(offset)
	return err
}

// TruncateFullyAndStartAt empties the log to restart at offset.
func (p *Partition) TruncateFullyAndStartAt(offset int64, leaderEpoch int32) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.following(leaderEpoch); err != nil {
		return err
	}
	return p.Log().TruncateFullyAndStartAt(offset)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch from this replica's log.
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return p.Log().EndOffsetForEpoch(epoch)
}

// FollowerThrottled reports whether the topic's
// follower.replication.throttled.replicas names this broker's replica of
// the partition: its fetches are held under the follower replication
// quota while it catches up.
func (p *Partition) FollowerThrottled() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.followerThrottled
}
