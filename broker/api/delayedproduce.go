package api

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/purgatory"
	"github.com/qk-project/qk/broker/replica"
)

// delayedProduce is one partition of an acks=-1 produce whose batch is
// above the high watermark: it waits in the produce purgatory, keyed by
// the partition, until the ISR has it (Kafka's DelayedProduce). Every
// advance of the partition's high watermark, and every change of its
// leadership, re-checks it; the request's timeout answers
// REQUEST_TIMED_OUT. Reached, an ISR that shrank below
// min.insync.replicas meanwhile answers NOT_ENOUGH_REPLICAS_AFTER_APPEND.
type delayedProduce struct {
	purgatory.Base
	p           *replica.Partition
	required    int64 // the batch's last offset + 1
	leaderEpoch int32
	done        func(error)
	err         error
}

func (d *delayedProduce) check() (bool, error) {
	st := d.p.State()
	if !d.p.IsLeader() || st.LeaderEpoch != d.leaderEpoch {
		return true, fmt.Errorf("%w: leadership moved while waiting for the in-sync replicas", replica.ErrNotLeaderOrFollower)
	}
	if d.p.HighWatermark() < d.required {
		return false, nil
	}
	if len(st.ISR) < st.Config.MinInsyncReplicas {
		return true, fmt.Errorf("%w: isr %d, min.insync.replicas %d", replica.ErrNotEnoughReplicasAfterAppend,
			len(st.ISR), st.Config.MinInsyncReplicas)
	}
	return true, nil
}

// TryComplete completes once the high watermark passed the batch or the
// leadership moved.
func (d *delayedProduce) TryComplete() bool {
	ok, err := d.check()
	if !ok {
		return false
	}
	d.err = err
	return d.ForceComplete()
}

// OnExpiration: the request's timeout passed first.
func (d *delayedProduce) OnExpiration() {
	if ok, err := d.check(); ok {
		d.err = err
		return
	}
	d.err = fmt.Errorf("%w: the in-sync replicas did not all have the batch within the request's timeout", kerr.RequestTimedOut)
}

// OnComplete answers the partition.
func (d *delayedProduce) OnComplete() { d.done(d.err) }

// HighWatermarkAdvanced wakes the fetches and produces waiting on a
// partition: its high watermark moved, or its log end (followers fetch
// up to it), or its leadership.
func (h *Handler) HighWatermarkAdvanced(topic string, partition int32) {
	k := purgatory.Key{Topic: topic, Partition: partition}
	h.cfg.Fetches.CheckAndComplete(k)
	if h.cfg.Produces != nil {
		h.cfg.Produces.CheckAndComplete(k)
	}
}
