package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

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
	resp, err := ch.Request(ctx, id, req)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		return nil, fmt.Errorf("WriteTxnMarkers answered with %T", resp)
	}
	return r, nil
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
