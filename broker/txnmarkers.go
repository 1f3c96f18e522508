package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller/channel"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/txn"
	"github.com/qk-project/qk/broker/txncoord"
)

// txnMarkers is the transaction coordinator's way to the partitions'
// leaders (txncoord.MarkerSender): leaders from the metadata cache,
// WriteTxnMarkers over the inter-broker listener, this broker included,
// one connection per broker (Kafka's TransactionMarkerChannelManager,
// client id "broker-<id>-txn-marker-sender").
type txnMarkers struct {
	s *Server

	mu    sync.Mutex // guards ch and addrs
	ch    *channel.Manager
	addrs map[int32]string
}

var _ txncoord.MarkerSender = (*txnMarkers)(nil)

func (m *txnMarkers) Leader(topic string, partition int32) (int32, bool) {
	t, ok := m.s.cache.Snapshot().Topics[topic]
	if !ok {
		return -1, false
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, false
	}
	return t.Partitions[partition].Leader, true
}

func (m *txnMarkers) WriteTxnMarkers(ctx context.Context, id int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp, err := m.request(ctx, id, req)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		return nil, fmt.Errorf("WriteTxnMarkers answered with %T", resp)
	}
	return r, nil
}

// request sends one inter-broker request to broker id.
func (m *txnMarkers) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	b, ok := m.s.cache.Snapshot().Brokers[id]
	if !ok {
		return nil, fmt.Errorf("broker %d is not live", id)
	}
	e, ok := b.Endpoint(m.s.static.InterBrokerListenerName)
	if !ok {
		return nil, fmt.Errorf("broker %d has no endpoint on listener %s", id, m.s.static.InterBrokerListenerName)
	}
	addr := net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
	m.mu.Lock()
	if m.ch == nil {
		m.ch = channel.New(m.s.channelConfig(channel.Config{ControllerID: m.s.static.BrokerID, Logger: m.s.lg,
			ClientID: "broker-" + strconv.Itoa(int(m.s.static.BrokerID)) + "-txn-marker-sender"}))
		m.addrs = map[int32]string{}
	}
	if m.addrs[id] != addr {
		m.ch.AddBroker(id, addr)
		m.addrs[id] = addr
	}
	ch := m.ch
	m.mu.Unlock()
	return ch.Request(ctx, id, req)
}

// verifyTxn is the produce path's ask of a transactional id's
// coordinator (KIP-890): itself when it leads the id's
// __transaction_state partition, else AddPartitionsToTxn v4 verify-only
// to the leader, as Kafka's AddPartitionsToTxnManager sends it.
func (s *Server) verifyTxn(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) (map[txn.TopicPartition]*kerr.Error, error) {
	p := s.txn.PartitionFor(id)
	t, ok := s.cache.Snapshot().Topics[txncoord.Topic]
	if !ok || int(p) >= len(t.Partitions) {
		return nil, fmt.Errorf("no %s partition %d", txncoord.Topic, p)
	}
	leader := t.Partitions[p].Leader
	if leader == s.static.BrokerID {
		r := s.txn.Verify(txn.VerifyRequest{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Partitions: tps})
		if r.PartitionErrs == nil {
			return nil, fmt.Errorf("transaction coordinator: %v", r.Err)
		}
		return r.PartitionErrs, nil
	}
	if leader < 0 {
		return nil, fmt.Errorf("%s partition %d has no leader", txncoord.Topic, p)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = id, pid, epoch, true
	byTopic := map[string]int{}
	for _, tp := range tps {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(tr.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic = tp.Topic
			tr.Topics = append(tr.Topics, rt)
		}
		tr.Topics[i].Partitions = append(tr.Topics[i].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, tr)
	resp, err := s.txnMarkers.request(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		return nil, fmt.Errorf("AddPartitionsToTxn answered with %T", resp)
	}
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return nil, err
	}
	out := map[txn.TopicPartition]*kerr.Error{}
	for _, rt := range r.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				ke, _ := kerr.ErrorForCode(p.ErrorCode).(*kerr.Error)
				out[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = ke
			}
		}
	}
	return out, nil
}

func (m *txnMarkers) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ch != nil {
		m.ch.Close()
		m.ch = nil
	}
}

// newTxnCoordinator builds the transaction coordinator from the broker's
// settings.
func (s *Server) newTxnCoordinator(pids *metadata.ProducerIDs) *txncoord.Coordinator {
	cfg := s.static
	s.txnMarkers = &txnMarkers{s: s}
	tc := txn.DefaultConfig()
	tc.TransactionMaxTimeoutMs = int32(cfg.TransactionMaxTimeoutMs)
	tc.TransactionalIDExpirationMs = int64(cfg.TransactionalIDExpirationMs)
	return txncoord.New(txncoord.Config{
		BrokerID:           cfg.BrokerID,
		Partitions:         cfg.TransactionStateLogNumPartitions,
		Txn:                tc,
		Replicas:           s.replicas,
		AllocateProducerID: pids.Next,
		Markers:            s.txnMarkers,
		WriteTimeout:       time.Duration(cfg.RequestTimeoutMs) * time.Millisecond,
		AbortInterval:      time.Duration(cfg.TransactionAbortTimedOutTransactionCleanupIntervalMs) * time.Millisecond,
		ExpireInterval:     time.Duration(cfg.TransactionRemoveExpiredTransactionCleanupIntervalMs) * time.Millisecond,
		Logger:             s.lg,
		Clock:              s.now,
	})
}
