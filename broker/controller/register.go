package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/qk-project/qk/broker/metadata"
)

// ErrBrokerRegistered means another live session holds this broker id.
var ErrBrokerRegistered = errors.New("controller: broker id already registered")

// Registration is what Register writes and how long it waits.
type Registration struct {
	BrokerID  int32
	Endpoints []metadata.Endpoint
	Rack      string
	// HTTPEndpoint is the URL of the broker's admin HTTP server, written
	// as qk_http_endpoint ("" writes nothing).
	HTTPEndpoint string
	Now          time.Time
	// WaitForOldSession bounds the wait for an earlier session's node of
	// the same id to go (0: fail at once, as Kafka does).
	WaitForOldSession time.Duration
	Logger            *slog.Logger
}

// Register creates this broker's ephemeral /brokers/ids/<id> node with its
// advertised endpoints and returns the broker epoch (the node's creation
// zxid), as Kafka's KafkaZkClient.registerBroker does.
//
// If the node exists and belongs to another session, it is either another
// live broker with this id or this broker's previous process, restarted
// before ZooKeeper expired its session. Kafka 3.x fails with NodeExists
// and exits; Register waits up to WaitForOldSession for the node to go
// (the old session's expiry deletes it), saying so in the log, and fails
// with ErrBrokerRegistered only if it stays.
func Register(ctx context.Context, s metadata.Store, r Registration) (int64, error) {
	lg := r.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	data := metadata.MarshalBrokerRegistration(metadata.BrokerRegistration{
		Endpoints: r.Endpoints, JMXPort: -1, Timestamp: r.Now.UnixMilli(), Rack: r.Rack, HTTPEndpoint: r.HTTPEndpoint,
	})
	path := metadata.BrokerPath(r.BrokerID)
	deadline := time.Now().Add(r.WaitForOldSession)
	for {
		_, err := metadata.CreateAll(ctx, s, path, data, metadata.Ephemeral)
		if err == nil {
			break
		}
		if !errors.Is(err, metadata.ErrNodeExists) {
			return 0, fmt.Errorf("register broker %d: %w", r.BrokerID, err)
		}
		// Watch first, then look: a deletion in between still fires.
		gone, werr := s.Watch(ctx, path, metadata.WatchExists)
		if werr != nil {
			return 0, fmt.Errorf("register broker %d: %w", r.BrokerID, werr)
		}
		st, ok, err := s.Exists(ctx, path)
		if err != nil {
			return 0, fmt.Errorf("register broker %d: %w", r.BrokerID, err)
		}
		if !ok {
			continue
		}
		if st.EphemeralOwner == s.SessionID() {
			break // ours: an earlier attempt of this call made it
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return 0, fmt.Errorf("%w: %s exists, owned by ZooKeeper session %#x (another broker with id %d is running, or its session has not expired)",
				ErrBrokerRegistered, path, st.EphemeralOwner, r.BrokerID)
		}
		lg.Warn("broker id registered by an earlier session; waiting for it to expire",
			"path", path, "session", fmt.Sprintf("%#x", st.EphemeralOwner), "wait", wait.Round(time.Millisecond).String())
		timer := time.NewTimer(wait)
		select {
		case <-gone:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return 0, fmt.Errorf("register broker %d: %w", r.BrokerID, ctx.Err())
		}
		timer.Stop()
	}
	stat, ok, err := s.Exists(ctx, path)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("register broker %d: %s vanished", r.BrokerID, path)
	}
	return stat.Czxid, nil
}
