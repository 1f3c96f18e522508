package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// InitProducerId: v0-5
//
// Behavior:
// * Idempotent producers (no transactional id): a new producer id, epoch
//   0, every time, as Kafka's coordinator does for them (a producer id and
//   epoch sent from v3 on are not needed to bump anything). Ids come from
//   blocks of 1000 reserved in /latest_producer_id_block
//   (metadata.AllocateProducerIDBlock), so they are unique across
//   brokers and restarts
// * A transactional id: the transaction coordinator (txn.go), when this
//   broker leads the id's __transaction_state partition
//   (NOT_COORDINATOR otherwise): a new producer id or a bumped epoch,
//   KIP-360's resume with the producer's id and epoch, fencing of an
//   open transaction (CONCURRENT_TRANSACTIONS, retried by the client)
//
// Version notes:
// * v1: no change; v2: flexible; v3: producer id and epoch (KIP-360)
// * v4: no change on the wire; v5: KIP-890 epoch bumps (transactions)

func (h *Handler) handleInitProducerID(c *call) {
	req := c.req.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// A transactional producer needs WRITE on its id; an idempotent one
	// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka 2.8+).
	switch {
	case req.TransactionalID != nil && !c.authorize(acl.Write, acl.TransactionalID, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		c.respond(resp)
		return
	case req.TransactionalID == nil && !c.allowed(acl.IdempotentWrite, acl.Cluster, acl.ClusterName, false) && !c.mayWriteSomeTopic():
		c.authorizeCluster(acl.IdempotentWrite) // the audit line
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		c.respond(resp)
		return
	}
	if req.TransactionalID != nil {
		h.initTransactionalProducerID(c, req, resp)
		return
	}
	ctx, cancel := c.ctx(0)
	defer cancel()
	id, err := h.nextProducerID(ctx)
	if err != nil {
		h.lg.Warn("cannot allocate a producer id", "err", err)
		resp.ErrorCode = errorCode(err)
		c.respond(resp)
		return
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	c.respond(resp)
}

// nextProducerID is a new producer id from the broker's allocator.
func (h *Handler) nextProducerID(ctx context.Context) (int64, error) {
	return h.producerIDs.Next(ctx)
}
