package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/acl"
)

// LeaderAndIsr (4): v0-7, StopReplica (5): v0-4, UpdateMetadata (6): v0-8,
// ControlledShutdown (7): v1-3
//
// Behavior:
// * Inter-broker requests: the controller's to every broker
//   (LeaderAndIsr, StopReplica, UpdateMetadata) and a broker's to the
//   controller (ControlledShutdown). Served only on the inter-broker
//   listener and not listed in ApiVersions (clients have no use for
//   them); elsewhere the connection is closed
// * Decoded here, served by the broker (Config.Control), which fences
//   them by controller epoch and broker epoch (STALE_CONTROLLER_EPOCH,
//   STALE_BROKER_EPOCH)
// * They are not held while the broker starts: its start-up waits for
//   the controller's first UpdateMetadata
//
// Version notes:
// * ControlledShutdown v0 has a request header without client id, which
//   qk does not parse; Kafka's brokers have sent v1+ since 0.9

func (h *Handler) handleControl(c *call) {
	// Inter-broker requests need CLUSTER_ACTION (the brokers' principals
	// are super users, or granted it); refused, the connection closes,
	// since these requests have no error for it that every version has.
	if !c.authorizeCluster(acl.ClusterAction) {
		c.r.CloseConnection()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := h.cfg.Control(ctx, c.req)
	if err != nil {
		h.lg.Warn("closing connection: control request failed", "api", kmsg.NameForKey(c.key), "err", err, "remote", addr(c.r))
		c.r.CloseConnection()
		return
	}
	c.respond(resp)
}
