package api

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/network"
)

// ApiVersions: v0-5
//
// Behavior:
// * Lists every row of the handlers.go table: key, min and max version
// * A version above 5 is answered at v0 with UNSUPPORTED_VERSION and the
//   key list, so the client retries with a version it finds there
// * The response header is always v0 (no tagged fields), even for the
//   flexible v3+, as Kafka does so that any client can read it
// * v3+: ClientSoftwareName and ClientSoftwareVersion must match Kafka's
//   pattern, else INVALID_REQUEST (with the key list)
//
// Version notes:
// * v1: ThrottleMillis
// * v3: flexible; client software name and version; features (none here)
// * v4: no change on the wire
// * v5: the cluster id and node id the client expects (KIP-1242): both
//   set and either not this broker's is REBOOTSTRAP_REQUIRED, only one
//   set INVALID_REQUEST

var softwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (h *Handler) handleApiVersions(c *call) {
	req := c.req.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiVersionKeys()
	if h.FromController(c.r) {
		resp.ApiKeys = controlKeys
	}
	if c.version >= 3 && (!softwarePattern.MatchString(req.ClientSoftwareName) || !softwarePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	if c.version >= 5 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID == -1):
			resp.ErrorCode = kerr.InvalidRequest.Code
		case req.ClusterID != nil && (*req.ClusterID != h.cfg.Cache.Snapshot().ClusterID || req.NodeID != h.cfg.BrokerID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
		}
	}
	c.respond(resp)
}

// unsupportedApiVersions answers an ApiVersions request of a version qk
// does not know: v0, UNSUPPORTED_VERSION, the key list. The body is not
// decoded (a newer version may not decode as any known one).
func (h *Handler) unsupportedApiVersions(r *network.Request) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiVersionKeys()
	c := &call{h: h, r: r, key: r.ApiKey, version: 0}
	c.respond(resp)
}
