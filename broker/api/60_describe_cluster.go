package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-2
//
// Behavior:
// * Cluster id, controller id and the live brokers with their endpoint on
//   the request's listener
// * Endpoint type (v1): 1 (brokers) only; 2 (controllers) is
//   UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers
// * Cluster authorized operations: all when asked (no authorizer), else
//   -2147483648
// * v2: fenced brokers: qk has none, so every listed broker is unfenced
//
// Version notes:
// * v0: flexible from the start; v1: endpoint type; v2: include fenced

func (h *Handler) handleDescribeCluster(c *call) {
	req := c.req.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if c.version >= 1 {
		resp.EndpointType = req.EndpointType
		if req.EndpointType != 1 {
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			msg := "qk brokers serve the broker endpoints only (endpoint type 1)"
			resp.ErrorMessage = &msg
			c.respond(resp)
			return
		}
	}
	snap := h.cfg.Cache.Snapshot()
	resp.ClusterID = snap.ClusterID
	resp.ControllerID = snap.ControllerID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = c.clusterOperations()
	}
	for _, mb := range h.brokerList(snap, c.r.Listener) {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
	c.respond(resp)
}
