package txncoord

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/qk-project/qk/broker/txn"
)

// timers runs the two periodic duties of Kafka's TransactionStateManager:
// every AbortInterval, transactions past their timeout are aborted with
// a bumped epoch (the stalled producer is fenced: its late produce or
// EndTxn finds a newer epoch); every ExpireInterval, transactional ids
// idle for transactional.id.expiration.ms are removed with a tombstone.
func (c *Coordinator) timers() {
	defer c.wg.Done()
	abort := time.NewTicker(c.cfg.AbortInterval)
	defer abort.Stop()
	expire := time.NewTicker(c.cfg.ExpireInterval)
	defer expire.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-abort.C:
			c.AbortTimedOut()
		case <-expire.C:
			c.ExpireTransactionalIDs()
		}
	}
}

// AbortTimedOut aborts, with an epoch bump, every Ongoing transaction
// of the partitions led here that is older than its timeout.
func (c *Coordinator) AbortTimedOut() {
	c.mu.Lock()
	type work struct {
		p int32
		r txn.Result
	}
	var todo []work
	now := c.nowMs()
	for _, p := range slices.Sorted(maps.Keys(c.parts)) {
		tp := c.parts[p]
		if tp.Loading() {
			continue
		}
		for _, r := range tp.AbortTimedOutTransactions(now) {
			if r.Invariant != nil {
				c.lg.Error("transaction coordinator invariant broken", "partition", p, "err", r.Invariant)
			}
			if r.Append != nil {
				c.lg.Info("aborting timed-out transaction", "partition", p, "transactional_id", r.Append.TransactionalID,
					"producer_id", r.Append.Transit.ProducerID, "new_epoch", r.Append.Transit.ProducerEpoch)
			}
			todo = append(todo, work{p, r})
		}
	}
	c.mu.Unlock()
	for _, w := range todo {
		c.carryBackground(w.p, w.r)
	}
}

// ExpireTransactionalIDs writes the tombstones of idle transactional ids.
func (c *Coordinator) ExpireTransactionalIDs() {
	c.mu.Lock()
	type work struct {
		p int32
		a *txn.Append
	}
	var todo []work
	now := c.nowMs()
	for _, p := range slices.Sorted(maps.Keys(c.parts)) {
		tp := c.parts[p]
		if tp.Loading() {
			continue
		}
		for _, a := range tp.ExpireTransactionalIDs(now) {
			todo = append(todo, work{p, a})
		}
	}
	c.mu.Unlock()
	for _, w := range todo {
		c.lg.Info("expiring transactional id", "partition", w.p, "transactional_id", w.a.TransactionalID)
		c.carryBackground(w.p, txn.Result{Append: w.a})
	}
}

// carryBackground carries out a Result no client waits for.
func (c *Coordinator) carryBackground(p int32, r txn.Result) {
	if r.Append == nil {
		c.follow(p, r)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.WriteTimeout)
		defer cancel()
		c.carry(ctx, p, r)
	}()
}
