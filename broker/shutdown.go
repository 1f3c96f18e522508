package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/controller/channel"
)

// controlledShutdownTimeout bounds one ControlledShutdown round trip
// (Kafka's controller.socket.timeout.ms).
const controlledShutdownTimeout = 30 * time.Second

// errPartitionsRemaining: the controller could not move every leadership
// off this broker yet.
var errPartitionsRemaining = errors.New("partitions still led by this broker")

// controlledShutdown asks the controller to move this broker's
// leaderships to other replicas before the broker leaves (Kafka's
// controlled shutdown, controlled.shutdown.enable): tried
// controlled.shutdown.max.retries more times, controlled.shutdown.retry.backoff.ms
// apart, while the controller answers with partitions remaining or
// cannot be reached; then the broker shuts down anyway, as Kafka's does.
// Partitions with one replica cannot move: they go offline when the
// broker's registration goes.
func (s *Server) controlledShutdown(ctx context.Context) {
	cfg := s.cfg.Load()
	if !cfg.ControlledShutdownEnable || s.cache == nil || s.ctrl == nil {
		return
	}
	if s.lastOfLocalCluster.Load() {
		s.lg.Info("controlled shutdown skipped: the other brokers of the local cluster have stopped")
		return
	}
	backoff := time.Duration(cfg.ControlledShutdownBackoffMs) * time.Millisecond
	for attempt := 0; attempt <= cfg.ControlledShutdownMaxRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				s.lg.Warn("controlled shutdown cut short; shutting down", "err", ctx.Err())
				return
			case <-time.After(backoff):
			}
		}
		n, err := s.askControlledShutdown(ctx)
		if err == nil {
			s.lg.Info("controlled shutdown succeeded", "attempt", attempt+1)
			return
		}
		s.lg.Warn("controlled shutdown failed", "attempt", attempt+1, "of", cfg.ControlledShutdownMaxRetries+1,
			"partitions_remaining", n, "err", err)
	}
	s.lg.Warn("proceeding to shut down without a controlled shutdown")
}

// askControlledShutdown sends one ControlledShutdown to the controller
// (itself, in-process, when this broker is it) and returns how many
// partitions it still leads.
func (s *Server) askControlledShutdown(ctx context.Context) (int, error) {
	id, epoch := s.static.BrokerID, s.brokerEpoch.Load()
	snap := s.cache.Snapshot()
	ctrlID := snap.ControllerID
	if ctrlID == id && s.ctrl.IsActive() {
		remaining, err := s.ctrl.ControlledShutdown(ctx, id, epoch)
		if err == nil && len(remaining) > 0 {
			err = errPartitionsRemaining
		}
		return len(remaining), err
	}
	b, ok := snap.Brokers[ctrlID]
	if !ok {
		return 0, fmt.Errorf("no controller known (controller id %d)", ctrlID)
	}
	e, ok := b.Endpoint(s.static.InterBrokerListenerName)
	if !ok {
		return 0, fmt.Errorf("controller %d has no endpoint on listener %s", ctrlID, s.static.InterBrokerListenerName)
	}
	// A channel of its own: it negotiates the version and retries a
	// lost connection, within the timeout below.
	ch := channel.New(s.channelConfig(channel.Config{ControllerID: id, Logger: s.lg, RequestTimeout: controlledShutdownTimeout}))
	defer ch.Close()
	ch.AddBroker(ctrlID, e.Host+":"+strconv.Itoa(int(e.Port)))
	req := kmsg.NewPtrControlledShutdownRequest()
	req.BrokerID, req.BrokerEpoch = id, epoch
	rctx, cancel := context.WithTimeout(ctx, controlledShutdownTimeout)
	defer cancel()
	// A controller that goes while it is asked (it is shutting down too)
	// is replaced within moments, and the new one tells every broker: the
	// next attempt asks it, instead of this one retrying a dead address
	// for the whole timeout.
	moved := make(chan struct{})
	go func() {
		if s.cache.WaitFor(rctx, func(sn *controller.Snapshot) bool { return sn.ControllerID != ctrlID }) == nil {
			close(moved)
			cancel()
		}
	}()
	r, err := ch.Request(rctx, ctrlID, req)
	if err != nil {
		select {
		case <-moved:
			return 0, fmt.Errorf("the controller moved from broker %d while it was asked", ctrlID)
		default:
		}
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return 0, fmt.Errorf("controller %d at %s did not answer within %s", ctrlID, e.Host, controlledShutdownTimeout)
	}
	if err != nil {
		return 0, err
	}
	resp := r.(*kmsg.ControlledShutdownResponse)
	if resp.ErrorCode != 0 {
		return len(resp.PartitionsRemaining), kerr.ErrorForCode(resp.ErrorCode)
	}
	if len(resp.PartitionsRemaining) > 0 {
		return len(resp.PartitionsRemaining), errPartitionsRemaining
	}
	return 0, nil
}
