package api

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/security/acl"
	"github.com/qk-project/qk/broker/txn"
)

// The transaction APIs (KIP-98), answered by the transaction
// coordinator's driver (broker/txncoord) over the pure core (broker/txn):
//
// * AddPartitionsToTxn v0-4: WRITE on the transactional id, WRITE on
//   each topic (TOPIC_AUTHORIZATION_FAILED, the others
//   OPERATION_NOT_ATTEMPTED), unknown partitions
//   UNKNOWN_TOPIC_OR_PARTITION; v4+ batches transactions and carries
//   KIP-890's verify-only checks between brokers, with CLUSTER_ACTION.
//   v5 (transaction version 2) is not served
// * AddOffsetsToTxn v0-3: WRITE on the id, READ on the group; adds the
//   group's __consumer_offsets partition
// * EndTxn v0-4: WRITE on the id; answered once PrepareCommit or
//   PrepareAbort is in the transaction log, markers follow. v5 (an epoch
//   bump per transaction, KIP-890 part 2) is not served
// * WriteTxnMarkers v0-1 (from coordinators, and kafka-transactions.sh
//   abort): CLUSTER_ACTION; each marker is written with acks=all and
//   answered once replicated; a marker to __consumer_offsets then
//   commits or drops the producer's pending offsets
// * TxnOffsetCommit v0-4: WRITE on the id, READ on the group and topics;
//   the group coordinator keeps the offsets pending until the marker
// * DescribeTransactions v0, ListTransactions v0-2: DESCRIBE on each id

// txnErr is the code of a coordinator answer (0 for none).
func txnErr(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

func (h *Handler) txnUnavailable() bool { return h.cfg.Txn == nil }

// initTransactionalProducerID is InitProducerId with a transactional id.
func (h *Handler) initTransactionalProducerID(c *call, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	if h.txnUnavailable() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		c.respond(resp)
		return
	}
	pid, epoch := int64(-1), int16(-1)
	if c.version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	ctx, cancel := c.ctx(0)
	defer cancel()
	r := h.cfg.Txn.InitProducerID(ctx, txn.InitProducerIDRequest{Version: c.version, TransactionalID: *req.TransactionalID,
		TimeoutMs: req.TransactionTimeoutMillis, ProducerID: pid, ProducerEpoch: epoch})
	resp.ErrorCode = txnErr(r.Err)
	if r.Err == nil {
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch
	}
	c.respond(resp)
}

func (h *Handler) handleAddPartitionsToTxn(c *call) {
	req := c.req.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	ctx, cancel := c.ctx(0)
	defer cancel()
	if c.version < 4 {
		for _, t := range h.addPartitions(ctx, c, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topicsOf(req.Topics)) {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.topic
			for _, p := range t.parts {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.partition, p.code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		c.respond(resp)
		return
	}
	// v4+: between brokers (the verification of KIP-890) or from an admin
	// client batching transactions.
	if !c.authorizeCluster(acl.ClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		c.respond(resp)
		return
	}
	for _, tr := range req.Transactions {
		var topics []txnTopic
		for _, t := range tr.Topics {
			topics = append(topics, txnTopic{topic: t.Topic, partitions: t.Partitions})
		}
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = tr.TransactionalID
		for _, t := range h.addPartitions(ctx, c, tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, topics) {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = t.topic
			for _, p := range t.parts {
				tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				tp.Partition, tp.ErrorCode = p.partition, p.code
				tt.Partitions = append(tt.Partitions, tp)
			}
			rt.Topics = append(rt.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	c.respond(resp)
}

type txnTopic struct {
	topic      string
	partitions []int32
}

func topicsOf(ts []kmsg.AddPartitionsToTxnRequestTopic) []txnTopic {
	var out []txnTopic
	for _, t := range ts {
		out = append(out, txnTopic{topic: t.Topic, partitions: t.Partitions})
	}
	return out
}

type txnPartitionCode struct {
	partition int32
	code      int16
}

type txnTopicCodes struct {
	topic string
	parts []txnPartitionCode
}

// addPartitions adds (or, verifyOnly, checks) partitions of one
// transaction and returns a code per partition, as Kafka's
// handleAddPartitionsToTxnRequest: authorization and unknown partitions
// first, the others then OPERATION_NOT_ATTEMPTED.
func (h *Handler) addPartitions(ctx context.Context, c *call, id string, pid int64, epoch int16, verifyOnly bool, topics []txnTopic) []txnTopicCodes {
	out := make([]txnTopicCodes, len(topics))
	all := func(code int16) []txnTopicCodes {
		for i, t := range topics {
			out[i] = txnTopicCodes{topic: t.topic}
			for _, p := range t.partitions {
				out[i].parts = append(out[i].parts, txnPartitionCode{p, code})
			}
		}
		return out
	}
	if !verifyOnly && !c.authorize(acl.Write, acl.TransactionalID, id) {
		return all(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	if h.txnUnavailable() {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	snap := h.cfg.Cache.Snapshot()
	bad := map[txn.TopicPartition]int16{}
	var tps []txn.TopicPartition
	ta := c.topicAuth(acl.Write)
	for _, t := range topics {
		ti, known := snap.Topics[t.topic]
		for _, p := range t.partitions {
			tp := txn.TopicPartition{Topic: t.topic, Partition: p}
			switch {
			case !verifyOnly && !ta.ok(t.topic):
				bad[tp] = kerr.TopicAuthorizationFailed.Code
			case !known || p < 0 || int(p) >= len(ti.Partitions):
				bad[tp] = kerr.UnknownTopicOrPartition.Code
			default:
				tps = append(tps, tp)
			}
		}
	}
	var errs map[txn.TopicPartition]*kerr.Error
	var topErr *kerr.Error
	switch {
	case len(bad) > 0:
		topErr = kerr.OperationNotAttempted
	case verifyOnly:
		r := h.cfg.Txn.Verify(txn.VerifyRequest{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Partitions: tps})
		topErr, errs = r.Err, r.PartitionErrs
	default:
		r := h.cfg.Txn.AddPartitions(ctx, txn.AddPartitionsRequest{Version: c.version, TransactionalID: id,
			ProducerID: pid, ProducerEpoch: epoch, Partitions: tps})
		topErr = r.Err
	}
	for i, t := range topics {
		out[i] = txnTopicCodes{topic: t.topic}
		for _, p := range t.partitions {
			tp := txn.TopicPartition{Topic: t.topic, Partition: p}
			code, isBad := bad[tp]
			switch {
			case isBad:
			case errs != nil && errs[tp] != nil:
				code = errs[tp].Code
			default:
				code = txnErr(topErr)
			}
			out[i].parts = append(out[i].parts, txnPartitionCode{p, code})
		}
	}
	return out
}

func (h *Handler) handleAddOffsetsToTxn(c *call) {
	req := c.req.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !c.authorize(acl.Write, acl.TransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !c.authorize(acl.Read, acl.Group, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case h.txnUnavailable() || h.cfg.Groups == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		ctx, cancel := c.ctx(0)
		defer cancel()
		r := h.cfg.Txn.AddOffsets(ctx, txn.AddOffsetsRequest{Version: c.version, TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, OffsetsPartition: h.cfg.Groups.PartitionFor(req.Group)})
		resp.ErrorCode = txnErr(r.Err)
	}
	c.respond(resp)
}

func (h *Handler) handleEndTxn(c *call) {
	req := c.req.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	switch {
	case !c.authorize(acl.Write, acl.TransactionalID, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case h.txnUnavailable():
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		ctx, cancel := c.ctx(0)
		defer cancel()
		r := h.cfg.Txn.EndTxn(ctx, txn.EndTxnRequest{Version: c.version, TransactionalID: req.TransactionalID,
			ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Commit: req.Commit})
		resp.ErrorCode = txnErr(r.Err)
	}
	c.respond(resp)
}

// markerWaitTimeout bounds the wait for a marker's replication.
const markerWaitTimeout = 30 * time.Second

func (h *Handler) handleWriteTxnMarkers(c *call) {
	req := c.req.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	ok := c.authorizeCluster(acl.ClusterAction)
	type pending struct {
		m, t, p  int
		part     *replica.Partition
		required int64
		offsets  bool // a __consumer_offsets partition: the group coordinator completes the transaction
		commit   bool
		pid      int64
	}
	var waits []pending
	now := h.now().UnixMilli()
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for ti, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if !ok {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				part, err := h.cfg.Replicas.Partition(t.Topic, p)
				var required int64
				if err == nil {
					var info log.AppendInfo
					info, err = part.AppendMarker(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed, now)
					required = info.LastOffset + 1
				}
				if err != nil {
					rp.ErrorCode = errorCode(err)
					h.lg.Debug("transaction marker not written", "topic", t.Topic, "partition", p, "producer_id", m.ProducerID, "err", err)
				} else {
					waits = append(waits, pending{mi, ti, len(rt.Partitions), part, required, t.Topic == group.Topic, m.Committed, m.ProducerID})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	// Answered once every marker is replicated (acks=all).
	ctx, cancel := context.WithTimeout(h.stopping, markerWaitTimeout)
	defer cancel()
	for _, w := range waits {
		code := int16(0)
		if err := w.part.WaitHighWatermark(ctx, w.required); err != nil {
			code = kerr.NotEnoughReplicasAfterAppend.Code
			if errors.Is(err, replica.ErrNotLeaderOrFollower) {
				code = kerr.NotLeaderForPartition.Code
			}
		} else if w.offsets && h.cfg.Groups != nil {
			h.cfg.Groups.CompleteTxn(resp.Markers[w.m].Topics[w.t].Partitions[w.p].Partition, w.pid, w.commit)
		}
		resp.Markers[w.m].Topics[w.t].Partitions[w.p].ErrorCode = code
	}
	c.respond(resp)
}

func (h *Handler) handleTxnOffsetCommit(c *call) {
	req := c.req.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	snap := h.cfg.Cache.Snapshot()
	var topErr error
	switch {
	case !c.authorize(acl.Write, acl.TransactionalID, req.TransactionalID):
		topErr = kerr.TransactionalIDAuthorizationFailed
	case !c.authorize(acl.Read, acl.Group, req.Group):
		topErr = kerr.GroupAuthorizationFailed
	case h.cfg.Groups == nil:
		topErr = kerr.CoordinatorNotAvailable
	}
	type slot struct{ t, p, i int }
	var slots []slot
	var commits []group.Commit
	ta := c.topicAuth(acl.Read)
	for ti, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		_, known := snap.Topics[rt.Topic]
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case topErr != nil:
				sp.ErrorCode = errorCode(topErr)
			case !ta.ok(rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !known && !snap.Updated():
				// A broker just started: its coordinator loaded before the
				// controller's metadata came. Retriable, unlike an
				// unknown topic to a transactional client.
				sp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			case !known:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				epoch := int32(-1)
				if c.version >= 2 {
					epoch = rp.LeaderEpoch
				}
				slots = append(slots, slot{ti, len(st.Partitions), len(commits)})
				commits = append(commits, group.Commit{TopicPartition: group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition},
					Offset: rp.Offset, LeaderEpoch: epoch, Metadata: rp.Metadata})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(commits) > 0 {
		if verr := h.verifyTxnOffsetCommit(c, req); verr != nil {
			for _, sl := range slots {
				resp.Topics[sl.t].Partitions[sl.p].ErrorCode = errorCode(verr)
			}
			c.respond(resp)
			return
		}
		tc := group.TxnCommit{ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Generation: -1, Commits: commits}
		if c.version >= 3 {
			tc.MemberID, tc.InstanceID, tc.Generation = req.MemberID, req.InstanceID, req.Generation
		}
		errs, err := h.cfg.Groups.TxnCommitOffsets(req.Group, tc)
		for _, s := range slots {
			code := errorCode(err)
			if err == nil {
				code = errorCode(errs[s.i])
			}
			resp.Topics[s.t].Partitions[s.p].ErrorCode = code
		}
	}
	c.respond(resp)
}

func (h *Handler) handleDescribeTransactions(c *call) {
	req := c.req.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		switch {
		case !c.authorize(acl.Describe, acl.TransactionalID, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case h.txnUnavailable():
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
		default:
			ts, err := h.cfg.Txn.Describe(id)
			st.ErrorCode = txnErr(err)
			if err == nil {
				st.State, st.TimeoutMillis, st.StartTimestamp = ts.State.String(), ts.TimeoutMs, ts.StartMs
				st.ProducerID, st.ProducerEpoch = ts.ProducerID, ts.ProducerEpoch
				st.Topics = describedTopics(ts.Partitions)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	c.respond(resp)
}

func describedTopics(tps []txn.TopicPartition) []kmsg.DescribeTransactionsResponseTransactionStateTopic {
	var out []kmsg.DescribeTransactionsResponseTransactionStateTopic
	for _, tp := range tps {
		if n := len(out); n > 0 && out[n-1].Topic == tp.Topic {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
		out = append(out, t)
	}
	return out
}

func (h *Handler) handleListTransactions(c *call) {
	req := c.req.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if h.txnUnavailable() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		c.respond(resp)
		return
	}
	var states []txn.State
	for _, s := range req.StateFilters {
		st, ok := txn.ParseState(s)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
			continue
		}
		states = append(states, st)
	}
	if len(resp.UnknownStateFilters) > 0 && len(states) == 0 {
		// Only unknown states asked for: nothing matches (Kafka).
		c.respond(resp)
		return
	}
	var pattern *regexp.Regexp
	if c.version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			c.respond(resp)
			return
		}
		pattern = re
	}
	duration := int64(-1)
	if c.version >= 1 {
		duration = req.DurationFilterMillis
	}
	list, loading := h.cfg.Txn.List(req.ProducerIDFilters, states, duration)
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	for _, ts := range list {
		if pattern != nil && !pattern.MatchString(ts.TransactionalID) {
			continue
		}
		if !c.allowed(acl.Describe, acl.TransactionalID, ts.TransactionalID, false) {
			continue
		}
		lt := kmsg.NewListTransactionsResponseTransactionState()
		lt.TransactionalID, lt.ProducerID, lt.TransactionState = ts.TransactionalID, ts.ProducerID, ts.State.String()
		resp.TransactionStates = append(resp.TransactionStates, lt)
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		if a.TransactionalID < b.TransactionalID {
			return -1
		}
		if a.TransactionalID > b.TransactionalID {
			return 1
		}
		return 0
	})
	c.respond(resp)
}

// verifyTxnOffsetCommit is KIP-890's check for TxnOffsetCommit: the
// group's __consumer_offsets partition must be in the producer's ongoing
// transaction (AddOffsetsToTxn), or the offsets would open a transaction
// there that no marker closes. The offsets partition's log guards the
// append against a marker landing meanwhile.
func (h *Handler) verifyTxnOffsetCommit(c *call, req *kmsg.TxnOffsetCommitRequest) error {
	if h.cfg.VerifyTxn == nil || !h.broker().TransactionPartitionVerificationEnable {
		return nil
	}
	p := h.cfg.Groups.PartitionFor(req.Group)
	part, err := h.cfg.Replicas.Partition(group.Topic, p)
	if err != nil {
		return kerr.NotCoordinator
	}
	token := part.Log().StartTxnVerification(req.ProducerID)
	if token == 0 {
		return nil // its transaction is open on the partition already
	}
	tp := txn.TopicPartition{Topic: group.Topic, Partition: p}
	ctx, cancel := c.ctx(0)
	defer cancel()
	errs, askErr := h.cfg.VerifyTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})
	verr, answered := errs[tp]
	switch {
	case askErr == nil && answered && verr == nil:
		if !part.Log().VerifyTxnGuard(req.ProducerID, token) {
			return kerr.InvalidTxnState
		}
		return nil
	case verr == kerr.InvalidProducerEpoch || verr == kerr.ProducerFenced:
		part.Log().DropTxnGuard(req.ProducerID, token)
		if c.version < 3 {
			return kerr.InvalidProducerEpoch
		}
		return kerr.ProducerFenced
	case verr == kerr.InvalidTxnState || verr == kerr.InvalidProducerIDMapping:
		part.Log().DropTxnGuard(req.ProducerID, token)
		return kerr.InvalidTxnState
	case verr == kerr.ConcurrentTransactions:
		part.Log().DropTxnGuard(req.ProducerID, token)
		return kerr.ConcurrentTransactions
	}
	part.Log().DropTxnGuard(req.ProducerID, token)
	return kerr.CoordinatorNotAvailable
}
