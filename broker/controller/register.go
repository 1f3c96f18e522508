package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qk-project/qk/broker/metadata"
)

// ErrBrokerRegistered means another live session holds this broker id.
var ErrBrokerRegistered = errors.New("controller: broker id already registered")

// Register creates this broker's ephemeral /brokers/ids/<id> node with its
// advertised endpoints and returns the broker epoch (the node's creation
// zxid), as Kafka's KafkaZkClient.registerBroker does.
func Register(ctx context.Context, s metadata.Store, id int32, endpoints []metadata.Endpoint, rack string, now time.Time) (int64, error) {
	data := metadata.MarshalBrokerRegistration(metadata.BrokerRegistration{
		Endpoints: endpoints, JMXPort: -1, Timestamp: now.UnixMilli(), Rack: rack,
	})
	path := metadata.BrokerPath(id)
	if _, err := metadata.CreateAll(ctx, s, path, data, metadata.Ephemeral); err != nil {
		if errors.Is(err, metadata.ErrNodeExists) {
			return 0, fmt.Errorf("%w: %s exists (another broker with id %d is running)", ErrBrokerRegistered, path, id)
		}
		return 0, fmt.Errorf("register broker %d: %w", id, err)
	}
	stat, ok, err := s.Exists(ctx, path)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("register broker %d: %s vanished", id, path)
	}
	return stat.Czxid, nil
}
