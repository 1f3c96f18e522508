package api

import (
	"crypto/x509"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/security/sasl"
)

// ListenerAuth is how a listener authenticates its clients, from its
// security protocol (listener.security.protocol.map) and settings.
type ListenerAuth struct {
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	// SASL is the listener's SASL configuration; nil on PLAINTEXT and
	// SSL listeners.
	SASL *sasl.Config
	// SSLPrincipal names the principal of a verified client certificate
	// (ssl.principal.mapping.rules), without "User:". Nil, or a client
	// without a certificate, is User:ANONYMOUS, as in Kafka.
	SSLPrincipal func(*x509.Certificate) (string, error)
}

// Anonymous is the principal of a client that did not authenticate
// (PLAINTEXT, or SSL without a client certificate). It is not a super
// user.
const Anonymous = "User:ANONYMOUS"

// connAuth is a connection's authentication, kept in its
// network.Request.Attachment. A connection's requests are handled one
// at a time, in order, so only the handler of its current request
// touches the session; principal is fixed once set (a re-authentication
// must keep it).
type connAuth struct {
	mu        sync.Mutex // guards principal for readers outside Handle
	session   *sasl.Session
	principal string
}

// auth returns the connection's authentication state, made on its first
// request.
func (h *Handler) auth(r *network.Request) *connAuth {
	slot := r.Attachment()
	if a, ok := slot.Load().(*connAuth); ok {
		return a
	}
	a := &connAuth{}
	la := h.cfg.Listeners[r.Listener]
	switch {
	case la != nil && la.SASL != nil:
		a.session = sasl.NewSession(la.SASL)
	case r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && la != nil && la.SSLPrincipal != nil:
		a.principal = Anonymous
		name, err := la.SSLPrincipal(r.TLS.PeerCertificates[0])
		if err != nil {
			h.lg.Warn("client certificate maps to no principal; treating the connection as User:ANONYMOUS",
				"listener", r.Listener, "remote", addr(r), "subject", r.TLS.PeerCertificates[0].Subject.String(), "err", err)
		} else {
			a.principal = "User:" + name
		}
	default:
		a.principal = Anonymous
	}
	slot.Store(a)
	return a
}

// Principal is the principal a request's connection authenticated as:
// User:<name> from SASL or from the client certificate, else
// User:ANONYMOUS. It is what ACLs are checked against.
func (h *Handler) Principal(r *network.Request) string {
	a := h.auth(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.principal == "" {
		return Anonymous // unreachable on a served request: SASL gates first
	}
	return a.principal
}

// admit decides whether a request may be served on its connection's
// authentication: on a SASL listener, before authentication only
// ApiVersions, SaslHandshake and then SaslAuthenticate are, as Kafka's
// SaslServerAuthenticator allows; anything else closes the connection.
// An authenticated session past its connections.max.reauth.ms lifetime
// is closed at its next request unless that request re-authenticates.
func (h *Handler) admit(r *network.Request) bool {
	a := h.auth(r)
	s := a.session
	if s == nil {
		return true
	}
	if s.Expired(h.now()) && r.ApiKey != apiKeySaslHandshake {
		h.lg.Info("closing connection: SASL session expired (connections.max.reauth.ms) without re-authentication",
			"listener", r.Listener, "remote", addr(r), "principal", s.Principal(), "api", kmsg.NameForKey(r.ApiKey))
		r.CloseConnection()
		return false
	}
	if !s.Allows(r.ApiKey) {
		h.lg.Warn("closing connection: request before SASL authentication", "listener", r.Listener,
			"remote", addr(r), "api", apiName(r.ApiKey), "client_id", clientID(r))
		r.CloseConnection()
		return false
	}
	return true
}

func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return "unknown"
}

const (
	apiKeySaslHandshake    = 17
	apiKeySaslAuthenticate = 36
)

// authenticated records a finished authentication: the principal, and
// the connection's frame limit lifted from sasl.server.max.receive.size.
func (h *Handler) authenticated(r *network.Request, a *connAuth) {
	a.mu.Lock()
	first := a.principal == ""
	a.principal = a.session.Principal()
	a.mu.Unlock()
	r.SetMaxRequestSize(0)
	if first {
		h.lg.Debug("authenticated", "listener", r.Listener, "remote", addr(r),
			"principal", a.principal, "mechanism", a.session.Mechanism())
	}
}

// authFailed logs a refused authentication with the user and the
// address, as operators grep for them.
func (h *Handler) authFailed(r *network.Request, err error) {
	var ae *sasl.AuthError
	if errors.As(err, &ae) {
		h.lg.Warn("authentication failed", "listener", r.Listener, "remote", addr(r), "mechanism", ae.Mechanism,
			"user", ae.User, "reason", ae.Reason.Error())
		return
	}
	h.lg.Warn("authentication failed", "listener", r.Listener, "remote", addr(r), "err", err)
}

// handleRawSASLToken serves a bare SASL token, sent after SaslHandshake
// v0 (Kafka 0.10's framing): the answer is the server's token with only
// the size prefix; a refusal closes the connection without an answer, as
// Kafka does for these clients.
func (h *Handler) handleRawSASLToken(r *network.Request) {
	a := h.auth(r)
	if a.session == nil || !a.session.Raw() {
		h.lg.Warn("closing connection: SASL token outside a SaslHandshake v0 exchange", "listener", r.Listener, "remote", addr(r))
		r.CloseConnection()
		return
	}
	resp, done, _, err := a.session.Authenticate(r.Frame, h.now())
	if err != nil {
		h.authFailed(r, err)
		r.CloseConnection()
		return
	}
	if done {
		h.authenticated(r, a)
		r.SetRawFrames(false)
	}
	r.Respond(&network.Response{Parts: []network.Part{{Bytes: resp}}})
}
