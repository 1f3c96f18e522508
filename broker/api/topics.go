package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/qk-project/qk/broker/controller"
)

// validTopicName applies Kafka's Topic.validate: 1 to 249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func validTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is illegal, it can't be empty", errInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be \".\" or \"..\"", errInvalidTopic)
	case len(name) > 249:
		return fmt.Errorf("%w: topic name is illegal, it can't be longer than 249 characters, topic name: %s", errInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", errInvalidTopic, name)
		}
	}
	return nil
}

// isInternalTopic names the topics Kafka marks internal.
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}

// autoCreateTopic creates a topic with the broker's num.partitions and
// default.replication.factor, as Metadata and Produce do for an unknown
// topic when auto.create.topics.enable is set. A topic that another
// request created meanwhile is returned as found.
func (h *Handler) autoCreateTopic(ctx context.Context, name string) (*controller.Topic, error) {
	if err := validTopicName(name); err != nil {
		return nil, err
	}
	if !h.cfg.Cache.Snapshot().Updated() {
		// A broker just started, before the controller's metadata: it
		// knows neither the topics nor the live brokers, so a creation
		// would be refused (or made with a replication factor for no
		// brokers). The client retries, and by then it knows.
		return nil, errLeaderNotAvailable
	}
	b := h.broker()
	t, err := h.createTopicFromAnyBroker(ctx, controller.TopicSpec{
		Name:              name,
		NumPartitions:     int32(b.NumPartitions),
		ReplicationFactor: int16(b.DefaultReplicationFactor),
	})
	switch {
	case err == nil:
		h.lg.Info("auto-created topic", "topic", name, "partitions", b.NumPartitions)
		return t, nil
	case errorCode(err) == errorCode(controller.ErrTopicExists):
		if t, ok := h.cfg.Cache.Snapshot().Topics[name]; ok {
			return t, nil
		}
		return nil, errLeaderNotAvailable
	}
	return nil, err
}

// createTopicFromAnyBroker creates a topic through the controller when
// this broker is it, else by writing its assignment to the store for the
// controller to pick up, as a Kafka broker auto-creates topics (and
// __consumer_offsets) in ZooKeeper mode.
func (h *Handler) createTopicFromAnyBroker(ctx context.Context, spec controller.TopicSpec) (*controller.Topic, error) {
	t, err := h.cfg.Controller.CreateTopic(ctx, spec, false)
	if errors.Is(err, controller.ErrNotController) && !errors.Is(err, controller.ErrFenced) {
		return h.cfg.Controller.CreateTopicInStore(ctx, spec)
	}
	return t, err
}
