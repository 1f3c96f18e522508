package metadata

import (
	"context"
	"log/slog"
	"sync"
)

// ProducerIDs hands out producer ids from blocks of ProducerIDBlockSize
// reserved in /latest_producer_id_block (AllocateProducerIDBlock), so
// they are unique across brokers and restarts: Kafka's
// ZkProducerIdManager, shared by InitProducerId for idempotent producers
// and the transaction coordinator. Safe for concurrent use.
type ProducerIDs struct {
	store    Store
	brokerID int32
	lg       *slog.Logger

	mu    sync.Mutex
	next  int64
	end   int64
	valid bool
}

// NewProducerIDs returns an allocator that reserves its first block on
// first use. lg may be nil.
func NewProducerIDs(store Store, brokerID int32, lg *slog.Logger) *ProducerIDs {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &ProducerIDs{store: store, brokerID: brokerID, lg: lg}
}

// Next returns an unused producer id, reserving a new block when the
// current one is used up.
func (p *ProducerIDs) Next(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.valid || p.next > p.end {
		start, end, err := AllocateProducerIDBlock(ctx, p.store, p.brokerID, ProducerIDBlockSize)
		if err != nil {
			return 0, err
		}
		p.next, p.end, p.valid = start, end, true
		p.lg.Info("reserved producer id block", "start", start, "end", end)
	}
	id := p.next
	p.next++
	return id, nil
}
