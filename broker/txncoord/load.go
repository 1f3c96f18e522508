package txncoord

import (
	"errors"
	"time"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/txn"
)

// OnLeader makes this broker the coordinator of __transaction_state
// partition p at leaderEpoch (the coordinator epoch): it loads the
// partition's transactions from its log, answering
// COORDINATOR_LOAD_IN_PROGRESS meanwhile, then sends the markers of
// transactions caught between PrepareCommit/PrepareAbort and their
// completion. Called again with the same epoch it does nothing.
func (c *Coordinator) OnLeader(p, leaderEpoch int32) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if old := c.parts[p]; old != nil {
		if old.CoordinatorEpoch() == leaderEpoch {
			c.mu.Unlock()
			return
		}
		old.Unload()
	}
	tp := txn.NewPartition(p, leaderEpoch, c.cfg.Txn)
	c.parts[p] = tp
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		c.load(p, tp)
	}()
}

// OnResign drops partition p: this broker no longer leads it. Its
// markers in flight are cancelled (their answers find no partition) and
// late writes answer NOT_COORDINATOR.
func (c *Coordinator) OnResign(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tp := c.parts[p]; tp != nil {
		tp.Unload()
		delete(c.parts, p)
		c.lg.Info("resigned as transaction coordinator", "partition", p)
	}
}

// load replays the partition's log into tp, unless tp is replaced
// meanwhile, then ends the load.
func (c *Coordinator) load(p int32, tp *txn.Partition) {
	start := time.Now()
	part, err := c.cfg.Replicas.Partition(Topic, p)
	if err != nil {
		c.lg.Error("cannot load transaction log partition", "partition", p, "err", err)
		return
	}
	current := func() bool { return !c.closed && c.parts[p] == tp }
	n, bad := 0, 0
	err = part.ScanLog(0, func(b record.Batch) error {
		if b.IsControl() {
			return nil
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !current() {
			return errReplaced
		}
		return b.Iterate(func(r *record.Record) error {
			n++
			if err := tp.Replay(r.Key, r.Value); err != nil {
				bad++
				c.lg.Warn("skipping __transaction_state record", "partition", p, "offset", r.Offset(b), "err", err)
			}
			return nil
		})
	})
	if err == errReplaced {
		return
	}
	if err != nil {
		// What was read stands; the rest of the log could not be: the
		// partition is served from it, as Kafka's load ends at a read
		// error, and the error is loud.
		c.lg.Error("transaction log partition loaded in part", "partition", p, "records", n, "err", err)
	}
	c.mu.Lock()
	if !current() {
		c.mu.Unlock()
		return
	}
	results := tp.Loaded(c.nowMs())
	ids := tp.Len()
	c.mu.Unlock()
	c.lg.Info("loaded transaction log partition", "partition", p, "coordinator_epoch", tp.CoordinatorEpoch(),
		"records", n, "skipped", bad, "transactional_ids", ids, "completing", len(results),
		"took", time.Since(start).Round(time.Millisecond))
	for _, r := range results {
		if r.Invariant != nil {
			c.lg.Error("transaction coordinator invariant broken", "partition", p, "err", r.Invariant)
		}
		c.follow(p, r)
	}
}

var errReplaced = errors.New("txncoord: partition replaced while loading")
