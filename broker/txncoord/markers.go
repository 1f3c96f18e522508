package txncoord

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/txn"
)

// MarkerSender is how the coordinator reaches the partitions' leaders.
type MarkerSender interface {
	// Leader is the partition's leader in this broker's metadata:
	// exists is false when the topic is gone (deleted: its markers are
	// skipped, as Kafka does), leader -1 when it has none right now.
	Leader(topic string, partition int32) (leader int32, exists bool)
	// WriteTxnMarkers sends one request to broker id (this broker
	// included) and returns its answer.
	WriteTxnMarkers(ctx context.Context, id int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// markerEntry is one transaction's markers for partitions led by one
// broker, on behalf of __transaction_state partition txnPart.
type markerEntry struct {
	txnPart int32
	mk      *txn.Markers
}

// markerQueue batches the markers to send per destination broker (one
// WriteTxnMarkers request carries every transaction queued for it, as
// Kafka's TransactionMarkerChannelManager drains its queue per broker)
// and retries until each is written or cancelled. Markers of partitions
// without a leader wait and are routed again.
type markerQueue struct {
	c *Coordinator

	mu       sync.Mutex
	pending  map[int32][]markerEntry // by destination broker
	wake     map[int32]chan struct{}
	orphaned []markerEntry // no leader yet
	inFlight int
	closed   bool
	stop     chan struct{}
	wg       sync.WaitGroup
}

// markerRetry is the wait before markers whose partitions had no leader,
// or whose send failed, are routed again.
const markerRetry = 200 * time.Millisecond

func newMarkerQueue(c *Coordinator) *markerQueue {
	q := &markerQueue{c: c, pending: map[int32][]markerEntry{}, wake: map[int32]chan struct{}{}, stop: make(chan struct{})}
	q.wg.Add(1)
	go q.retryLoop()
	return q
}

func (q *markerQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	close(q.stop)
	q.wg.Wait()
}

// InFlight is the number of transactions' markers queued or being sent.
func (q *markerQueue) inFlightCount() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.orphaned) + q.inFlight
	for _, es := range q.pending {
		n += len(es)
	}
	return n
}

// send routes mk's partitions to their leaders and queues them.
func (q *markerQueue) send(txnPart int32, mk *txn.Markers) {
	byBroker := map[int32][]txn.TopicPartition{}
	var gone, leaderless []txn.TopicPartition
	for _, tp := range mk.Partitions {
		leader, exists := q.c.cfg.Markers.Leader(tp.Topic, tp.Partition)
		switch {
		case !exists:
			gone = append(gone, tp)
		case leader < 0:
			leaderless = append(leaderless, tp)
		default:
			byBroker[leader] = append(byBroker[leader], tp)
		}
	}
	if len(gone) > 0 {
		// A deleted topic takes no marker: written, as Kafka skips it.
		errs := map[txn.TopicPartition]*kerr.Error{}
		for _, tp := range gone {
			errs[tp] = nil
		}
		q.c.lg.Info("skipping markers of deleted partitions", "transactional_id", mk.TransactionalID, "partitions", gone)
		q.written(markerEntry{txnPart, subset(mk, gone)}, errs)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if len(leaderless) > 0 {
		q.orphaned = append(q.orphaned, markerEntry{txnPart, subset(mk, leaderless)})
	}
	for id, tps := range byBroker {
		q.pending[id] = append(q.pending[id], markerEntry{txnPart, subset(mk, tps)})
		w, ok := q.wake[id]
		if !ok {
			w = make(chan struct{}, 1)
			q.wake[id] = w
			q.wg.Add(1)
			go q.sender(id, w)
		}
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func subset(mk *txn.Markers, tps []txn.TopicPartition) *txn.Markers {
	s := *mk
	s.Partitions = tps
	return &s
}

// retryLoop routes the leaderless markers again every markerRetry.
func (q *markerQueue) retryLoop() {
	defer q.wg.Done()
	t := time.NewTicker(markerRetry)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		q.mu.Lock()
		again := q.orphaned
		q.orphaned = nil
		q.mu.Unlock()
		for _, e := range again {
			q.send(e.txnPart, e.mk)
		}
	}
}

// sender is broker id's loop: it takes everything queued for id and
// sends it as one request, one request at a time.
func (q *markerQueue) sender(id int32, wake chan struct{}) {
	defer q.wg.Done()
	for {
		select {
		case <-q.stop:
			return
		case <-wake:
		}
		for {
			q.mu.Lock()
			batch := q.take(id)
			q.inFlight += len(batch)
			q.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			q.deliver(id, batch)
			q.mu.Lock()
			q.inFlight -= len(batch)
			q.mu.Unlock()
		}
	}
}

// take removes the entries queued for id, at most one per producer id
// (the response is keyed by producer id); q.mu is held.
func (q *markerQueue) take(id int32) []markerEntry {
	var batch, rest []markerEntry
	seen := map[int64]bool{}
	for _, e := range q.pending[id] {
		if seen[e.mk.ProducerID] {
			rest = append(rest, e)
			continue
		}
		seen[e.mk.ProducerID] = true
		batch = append(batch, e)
	}
	if len(rest) > 0 {
		q.pending[id] = rest
	} else {
		delete(q.pending, id)
	}
	return batch
}

// deliver sends one request to id and hands each transaction's answer
// to the core. A failed send routes everything again after markerRetry
// (the leaders may have moved).
func (q *markerQueue) deliver(id int32, batch []markerEntry) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for _, e := range batch {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = e.mk.ProducerID, e.mk.ProducerEpoch, e.mk.Commit, e.mk.CoordinatorEpoch
		byTopic := map[string][]int32{}
		var order []string
		for _, tp := range e.mk.Partitions {
			if _, ok := byTopic[tp.Topic]; !ok {
				order = append(order, tp.Topic)
			}
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		for _, t := range order {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic, rt.Partitions = t, byTopic[t]
			m.Topics = append(m.Topics, rt)
		}
		req.Markers = append(req.Markers, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.c.cfg.WriteTimeout)
	resp, err := q.c.cfg.Markers.WriteTxnMarkers(ctx, id, req)
	cancel()
	if err != nil {
		q.c.lg.Debug("WriteTxnMarkers failed; routing again", "broker_id", id, "transactions", len(batch), "err", err)
		q.mu.Lock()
		if !q.closed {
			q.orphaned = append(q.orphaned, batch...)
		}
		q.mu.Unlock()
		return
	}
	byPID := map[int64]*kmsg.WriteTxnMarkersResponseMarker{}
	for i := range resp.Markers {
		byPID[resp.Markers[i].ProducerID] = &resp.Markers[i]
	}
	for _, e := range batch {
		errs := map[txn.TopicPartition]*kerr.Error{}
		if m, ok := byPID[e.mk.ProducerID]; ok {
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					tp := txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}
					if !slices.Contains(e.mk.Partitions, tp) {
						continue
					}
					ke, _ := kerr.ErrorForCode(p.ErrorCode).(*kerr.Error)
					errs[tp] = ke
				}
			}
		}
		q.written(e, errs)
	}
}

// written hands a transaction's marker answers to the core and carries
// out what follows (markers again, or the completion write).
func (q *markerQueue) written(e markerEntry, errs map[txn.TopicPartition]*kerr.Error) {
	r := q.c.decide(e.txnPart, func(tp *txn.Partition) txn.Result { return tp.MarkersWritten(e.mk, errs) })
	if r.Markers == nil && r.Append == nil {
		return
	}
	if r.Markers != nil && r.Append == nil {
		// Partitions to try again: their leaders may have moved.
		q.mu.Lock()
		if !q.closed {
			q.orphaned = append(q.orphaned, markerEntry{e.txnPart, r.Markers})
		}
		q.mu.Unlock()
		return
	}
	q.c.follow(e.txnPart, r)
}
