package group

import "github.com/qk-project/qk/broker/record"

// TxnCommit is TxnOffsetCommit's request, past the authorizer: a
// transactional producer's offsets for a group, pending until its
// transaction's marker reaches the group's offsets partition
// (txnoffsets.go).
type TxnCommit struct {
	ProducerID    int64
	ProducerEpoch int16
	// KIP-447: the consumer's group metadata, when the producer passes
	// it ("" and -1 otherwise).
	MemberID   string
	InstanceID *string
	Generation int32
	Commits    []Commit
}

// TxnCommitOffsets handles TxnOffsetCommit (Kafka's
// GroupCoordinator.handleTxnCommitOffsets): it checks the member, writes
// the offsets as one transactional batch of the producer's (its id and
// epoch, so the partition tracks the open transaction and its marker
// closes it) and answers once the offsets partition's ISR has it. The
// offsets stay pending until CompleteTxn. The transaction coordinator has
// already checked that the group's partition is in the transaction
// (AddOffsetsToTxn). Per-partition errors in order, or a group error.
func (c *Coordinator) TxnCommitOffsets(id string, tc TxnCommit) ([]error, error) {
	c.mu.Lock()
	e, err := c.groupLocked(id, false)
	if err != nil {
		c.unlock()
		return nil, err
	}
	if e == nil {
		// A producer that commits without a consumer's generation may
		// commit to a group that does not exist yet, as in Kafka.
		e, _ = c.groupLocked(id, true)
	}
	if cerr := e.g.CheckTxnCommit(tc.MemberID, tc.InstanceID, tc.Generation); cerr != nil {
		c.dropIfUnusedLocked(id, e)
		c.unlock()
		return nil, cerr
	}
	now := c.now()
	errs := make([]error, len(tc.Commits))
	var recs []kv
	offsets := map[TopicPartition]Offset{}
	for i, cm := range tc.Commits {
		v, err := c.offsetValue(cm, now, -1)
		if err != nil {
			errs[i] = err
			continue
		}
		recs = append(recs, kv{OffsetKey(id, cm.Topic, cm.Partition).AppendTo(nil), v.AppendTo(nil)})
		offsets[cm.TopicPartition] = v.offset()
	}
	if len(recs) == 0 {
		c.dropIfUnusedLocked(id, e)
		c.unlock()
		return errs, nil
	}
	e.g.AddPendingTxnOffsets(tc.ProducerID, offsets)
	opts := record.DefaultBatchOptions()
	opts.Transactional = true
	opts.ProducerID, opts.ProducerEpoch = tc.ProducerID, tc.ProducerEpoch
	// A coordinator's write: the sequence is not checked (Kafka's
	// AppendOrigin.COORDINATOR writes 0 likewise).
	opts.BaseSequence = 0
	p, info, aerr := c.appendBatchLocked(e.partition, recs, opts)
	if aerr != nil {
		e.g.FailPendingTxnOffsets(tc.ProducerID, offsets)
		c.dropIfUnusedLocked(id, e)
		c.unlock()
		c.lg.Warn("transactional offset commit not stored", "group", id, "producer_id", tc.ProducerID, "err", aerr)
		return fillErr(errs, storeError(aerr)), nil
	}
	e.g.TxnOffsetsAppended(tc.ProducerID, offsets, info.FirstOffset)
	c.scheduleLocked(id, e)
	c.unlock()

	if werr := c.awaitCommitted(p, info.LastOffset+1); werr != nil {
		c.lg.Warn("transactional offset commit not replicated", "group", id, "producer_id", tc.ProducerID, "err", werr)
		// The batch is in the leader's log: its transaction's marker
		// decides, as for any record of the transaction.
		return fillErr(errs, storeError(werr)), nil
	}
	return errs, nil
}

// fillErr sets err for every partition that has no error yet.
func fillErr(errs []error, err error) []error {
	for i := range errs {
		if errs[i] == nil {
			errs[i] = err
		}
	}
	return errs
}

// CompleteTxn applies a transaction marker written to an offsets
// partition this broker leads: COMMIT makes the producer's pending
// offsets of the partition's groups committed, ABORT drops them (Kafka's
// GroupMetadataManager.handleTxnCompletion). The caller appended the
// marker first (WriteTxnMarkers).
func (c *Coordinator) CompleteTxn(partition int32, producerID int64, commit bool) {
	c.mu.Lock()
	defer c.unlock()
	for id, e := range c.groups {
		if e.partition != partition {
			continue
		}
		if e.g.CompleteTxn(producerID, commit) {
			c.dropIfUnusedLocked(id, e)
		}
	}
}

// UnstableOffsets reports, of tps, those of group id with a
// transactional offset pending: OffsetFetch with require_stable answers
// them UNSTABLE_OFFSET_COMMIT, so that a consumer does not start from an
// offset its producer may still abort. A group this broker does not
// coordinate has none (FetchOffsets reports that error).
func (c *Coordinator) UnstableOffsets(id string, tps []TopicPartition) map[TopicPartition]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.groupLocked(id, false)
	if err != nil || e == nil {
		return nil
	}
	var out map[TopicPartition]bool
	check := func(tp TopicPartition) {
		if e.g.UnstableOffset(tp) {
			if out == nil {
				out = map[TopicPartition]bool{}
			}
			out[tp] = true
		}
	}
	if tps == nil {
		for _, m := range e.g.txnOffsets {
			for tp := range m {
				check(tp)
			}
		}
		return out
	}
	for _, tp := range tps {
		check(tp)
	}
	return out
}
