package txncoord

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/txn"
)

// heldSender answers WriteTxnMarkers only once release is closed; "gone"
// has no leader.
type heldSender struct {
	release chan struct{}
}

func (s heldSender) Leader(topic string, _ int32) (int32, bool) {
	if topic == "gone" {
		return -1, true
	}
	return 1, true
}

func (s heldSender) WriteTxnMarkers(ctx context.Context, _ int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func waitStats(t *testing.T, c *Coordinator, what string, ok func(Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok(c.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, c.Stats())
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// TestStats: partitions loading are counted apart and their ids not at
// all; markers count while queued, sent and unanswered, or waiting for a
// leader.
func TestStats(t *testing.T) {
	release := make(chan struct{})
	c := New(Config{Partitions: 2, Markers: heldSender{release: release}})
	defer c.Close()

	c.mu.Lock()
	c.parts[0] = txn.NewPartition(0, 1, c.cfg.Txn)
	c.parts[1] = txn.NewPartition(1, 1, c.cfg.Txn)
	c.parts[1].Loaded(0)
	c.mu.Unlock()
	if s := c.Stats(); s.Partitions != 2 || s.Loading != 1 || s.States != (txn.StateCounts{}) || s.MarkersInFlight != 0 {
		t.Fatalf("Stats = %+v, want 2 partitions, 1 loading, no ids, no markers", s)
	}

	c.markers.send(1, &txn.Markers{TransactionalID: "a", ProducerID: 7, Commit: true,
		Partitions: []txn.TopicPartition{{Topic: "out", Partition: 0}}})
	c.markers.send(1, &txn.Markers{TransactionalID: "b", ProducerID: 8,
		Partitions: []txn.TopicPartition{{Topic: "gone", Partition: 0}}})
	waitStats(t, c, "two transactions' markers in flight", func(s Stats) bool { return s.MarkersInFlight == 2 })
	close(release)
	waitStats(t, c, "the answered markers gone", func(s Stats) bool { return s.MarkersInFlight == 1 })
}
