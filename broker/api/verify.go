package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/txn"
)

// Transaction verification (KIP-890 part 1,
// transaction.partition.verification.enable): before a producer's first
// transactional batch to a partition opens a transaction there, the
// leader asks the transactional id's coordinator (AddPartitionsToTxn v4,
// verify only; itself when it is the coordinator) whether the partition
// is in the producer's ongoing transaction. No: INVALID_TXN_STATE, so a
// produce to a partition the producer did not add, or one that arrives
// after its transaction ended (a late retry of a stalled producer), is
// refused instead of opening a transaction that no marker will close.
// The log's verification guard (log/verify.go) covers a marker landing
// between the ask and the append. A coordinator that cannot answer
// makes the produce NOT_ENOUGH_REPLICAS, which producers retry, as
// Kafka's AddPartitionsToTxnManager maps it.

// TxnVerifier asks a transactional id's coordinator which of tps are in
// the producer's ongoing transaction: an error per partition (nil: in
// it), or an error for all when the coordinator could not be asked.
type TxnVerifier func(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tps []txn.TopicPartition) (map[txn.TopicPartition]*kerr.Error, error)

// txnVerification is one partition's verification for a produce.
type txnVerification struct {
	log   *log.Log
	pid   int64
	token uint64
	err   error // the produce's error for the partition, when refused
}

// verificationOn reports whether a produce's transactional batches are
// verified at all: it carries a transactional id and verification is on.
func (h *Handler) verificationOn(req *kmsg.ProduceRequest, version int16) bool {
	return req.TransactionID != nil && h.cfg.VerifyTxn != nil && h.broker().TransactionPartitionVerificationEnable && version < 13
}

// verifying reports whether a produce must verify its transactional
// batches: verification is on and some batch would open a transaction.
func (h *Handler) verifying(req *kmsg.ProduceRequest, version int16) bool {
	if !h.verificationOn(req, version) {
		return false
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			bt := record.Batch(rp.Records)
			if len(bt) < record.BatchHeaderSize || !bt.IsTransactional() {
				continue
			}
			p, err := h.cfg.Replicas.Partition(rt.Topic, rp.Partition)
			if err != nil {
				continue
			}
			if e, ok := p.Log().Producer(bt.ProducerID()); !ok || e.CurrentTxnFirstOffset < 0 {
				return true
			}
		}
	}
	return false
}

// verifyProduce verifies the partitions of a produce whose transactional
// batches would open a transaction, in one ask of the coordinator, and
// returns each one's outcome. The caller runs detached (it waits on a
// round trip).
func (h *Handler) verifyProduce(ctx context.Context, req *kmsg.ProduceRequest) map[txn.TopicPartition]*txnVerification {
	out := map[txn.TopicPartition]*txnVerification{}
	var tps []txn.TopicPartition
	var pid int64 = -1
	var epoch int16 = -1
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			bt := record.Batch(rp.Records)
			if len(bt) < record.BatchHeaderSize || !bt.IsTransactional() {
				continue
			}
			p, err := h.cfg.Replicas.Partition(rt.Topic, rp.Partition)
			if err != nil {
				continue // producePartition answers it
			}
			token := p.Log().StartTxnVerification(bt.ProducerID())
			if token == 0 {
				continue // the transaction is open here already
			}
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			out[tp] = &txnVerification{log: p.Log(), pid: bt.ProducerID(), token: token}
			tps = append(tps, tp)
			pid, epoch = bt.ProducerID(), bt.ProducerEpoch()
		}
	}
	if len(tps) == 0 {
		return out
	}
	errs, err := h.cfg.VerifyTxn(ctx, *req.TransactionID, pid, epoch, tps)
	for _, tp := range tps {
		v := out[tp]
		var verr *kerr.Error
		switch {
		case err != nil:
			verr = kerr.CoordinatorNotAvailable
		default:
			verr = errs[tp]
			if _, answered := errs[tp]; !answered {
				verr = kerr.CoordinatorNotAvailable
			}
		}
		if verr == nil {
			if !v.log.VerifyTxnGuard(v.pid, v.token) {
				v.err = fmt.Errorf("%w: a transaction marker arrived while %s was being verified", kerr.InvalidTxnState, tp)
			}
			continue
		}
		v.log.DropTxnGuard(v.pid, v.token)
		v.err = produceVerifyError(verr, err)
		h.lg.Debug("transactional produce not verified", "transactional_id", *req.TransactionID, "producer_id", pid,
			"partition", tp.String(), "err", v.err)
	}
	return out
}

// produceVerifyError is what the produce answers when the coordinator
// said no (or could not say).
func produceVerifyError(verr *kerr.Error, askErr error) error {
	switch verr {
	case kerr.InvalidProducerEpoch, kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.InvalidTxnState, kerr.TransactionAbortable, kerr.InvalidProducerIDMapping:
		return fmt.Errorf("%w: the partition is not in the producer's ongoing transaction", kerr.InvalidTxnState)
	}
	if askErr != nil {
		return fmt.Errorf("%w: the transaction coordinator could not verify the partition: %v", replica.ErrNotEnoughReplicas, askErr)
	}
	return fmt.Errorf("%w: the transaction coordinator could not verify the partition: %s", replica.ErrNotEnoughReplicas, verr.Message)
}
