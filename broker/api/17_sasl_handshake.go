package api

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/sasl"
)

// SaslHandshake: v0-1
//
// Behavior:
// * On a SASL listener, picks the mechanism of the connection's
//   authentication (or re-authentication, KIP-368, once authenticated);
//   the response lists the enabled mechanisms
// * A mechanism that is not enabled is UNSUPPORTED_SASL_MECHANISM, then
//   the connection closes; a handshake in the middle of an exchange is
//   ILLEGAL_SASL_STATE, then it closes
// * On a listener without SASL: ILLEGAL_SASL_STATE, as Kafka answers
//
// Version notes:
// * v0: the SASL tokens follow as bare size-prefixed frames
// * v1: the tokens follow in SaslAuthenticate requests

func (h *Handler) handleSaslHandshake(c *call) {
	req := c.req.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	a := h.auth(c.r)
	if a.session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.respond(resp)
		return
	}
	enabled, err := a.session.Handshake(c.version, req.Mechanism)
	resp.SupportedMechanisms = enabled
	switch {
	case errors.Is(err, sasl.ErrUnsupportedMechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	case err != nil:
		resp.ErrorCode = kerr.IllegalSaslState.Code
	}
	if err != nil {
		h.lg.Warn("closing connection: SASL handshake refused", "listener", c.r.Listener, "remote", addr(c.r),
			"mechanism", req.Mechanism, "err", err)
		c.r.CloseAfterResponse()
	} else if c.version == 0 {
		c.r.SetRawFrames(true)
	}
	c.respond(resp)
}
