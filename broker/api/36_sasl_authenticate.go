package api

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/security/sasl"
)

// SaslAuthenticate: v0-2
//
// Behavior:
// * Carries one token of the exchange the SaslHandshake chose: PLAIN's
//   one message, SCRAM's client-first and client-final
// * Wrong credentials: SASL_AUTHENTICATION_FAILED with Kafka's message
//   (never saying whether the user or the password was wrong), a Warn
//   line naming the user and the address, then the connection closes
// * Out of order (no handshake, or on a listener without SASL):
//   ILLEGAL_SASL_STATE, then it closes
// * Once authenticated, the connection serves every API and may send
//   requests up to socket.request.max.bytes (sasl.server.max.receive.size
//   before)
//
// Version notes:
// * v1: session_lifetime_ms, connections.max.reauth.ms when set (KIP-368)
// * v2: flexible

func (h *Handler) handleSaslAuthenticate(c *call) {
	req := c.req.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	a := h.auth(c.r)
	if a.session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate on a listener without SASL"
		resp.ErrorMessage = &msg
		c.respond(resp)
		return
	}
	out, done, lifetime, err := a.session.Authenticate(req.SASLAuthBytes, h.now())
	var ae *sasl.AuthError
	switch {
	case errors.As(err, &ae):
		h.authFailed(c.r, err)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := ae.ClientMessage()
		resp.ErrorMessage = &msg
		c.r.CloseAfterResponse()
	case err != nil:
		h.lg.Warn("closing connection: SaslAuthenticate out of order", "listener", c.r.Listener, "remote", addr(c.r), "err", err)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		c.r.CloseAfterResponse()
	default:
		resp.SASLAuthBytes = out
		if done {
			h.authenticated(c.r, a)
			resp.SessionLifetimeMillis = lifetime.Milliseconds()
		}
	}
	c.respond(resp)
}
