// Package sasl is the broker's side of SASL authentication on a
// connection (Kafka's SaslServerAuthenticator), as a pure state machine:
// a SaslHandshake picks the mechanism, SaslAuthenticate tokens run its
// exchange (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), and the session ends
// authenticated as User:<name>, with a lifetime when
// connections.max.reauth.ms is set (KIP-368). It does no I/O and keeps
// no clock: the api layer feeds it the requests, the time, and carries
// out what it answers (respond, close, change the connection's framing).
package sasl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qk-project/qk/broker/security/plain"
	"github.com/qk-project/qk/broker/security/scram"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Implemented are the mechanisms qk's broker serves.
var Implemented = []string{Plain, ScramSHA256, ScramSHA512}

// Errors the api layer maps to Kafka's codes. Each ends the session: the
// connection is closed after the answer.
var (
	// ErrUnsupportedMechanism: UNSUPPORTED_SASL_MECHANISM, answered with
	// the enabled mechanisms.
	ErrUnsupportedMechanism = errors.New("sasl: unsupported SASL mechanism")
	// ErrIllegalState: ILLEGAL_SASL_STATE, a request out of order.
	ErrIllegalState = errors.New("sasl: illegal SASL state")
	// ErrAuthenticationFailed: SASL_AUTHENTICATION_FAILED.
	ErrAuthenticationFailed = errors.New("sasl: authentication failed")
)

// AuthError is a failed authentication: the user it was for (as far as
// the client's messages said) for the broker's log line, and the reason,
// which is logged but never sent to the client.
type AuthError struct {
	Mechanism string
	User      string
	Reason    error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("sasl: %s authentication of user %q failed: %v", e.Mechanism, e.User, e.Reason)
}

func (e *AuthError) Unwrap() error { return ErrAuthenticationFailed }

// ClientMessage is what the client is told, in Kafka's words; it never
// says whether the user or the password was wrong.
func (e *AuthError) ClientMessage() string {
	if e.Mechanism == Plain {
		return "Authentication failed: Invalid username or password"
	}
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + e.Mechanism
}

// Config is a listener's SASL configuration.
type Config struct {
	// Mechanisms are sasl.enabled.mechanisms, upper-case.
	Mechanisms []string
	// PlainUsers are the PLAIN users (user_<name> options of the
	// listener's plain.sasl.jaas.config), name to password.
	PlainUsers map[string]string
	// Scram looks up a SCRAM credential (the metadata cache's
	// /config/users).
	Scram func(user string, m scram.Mechanism) (scram.Credential, bool)
	// MaxReauth is connections.max.reauth.ms: an authenticated session
	// lasts this long, then the client must re-authenticate or be
	// disconnected at its next request (0: forever).
	MaxReauth time.Duration
	// Nonce makes SCRAM server nonces; nil is random (tests fix it).
	Nonce func() string
}

type state uint8

const (
	// stateHandshake: waiting for a SaslHandshake (also while
	// authenticated: a handshake then starts a re-authentication).
	stateHandshake state = iota
	// stateAuthenticate: a mechanism is chosen, tokens are exchanged.
	stateAuthenticate
	stateFailed
)

// Session is one connection's authentication. The zero value is not
// usable; use NewSession.
type Session struct {
	cfg   *Config
	state state
	// raw: SaslHandshake v0 was used, so tokens come as bare frames,
	// without SaslAuthenticate around them.
	raw  bool
	mech string
	// exchange in progress
	scramSrv *scram.Server

	authenticated bool
	principal     string // User:<name> once authenticated
	expires       time.Time
	reauth        bool // the exchange in progress re-authenticates
}

// NewSession starts a connection's authentication with cfg, which must
// stay unchanged while the session lives.
func NewSession(cfg *Config) *Session { return &Session{cfg: cfg} }

// Authenticated reports whether the connection has authenticated (and,
// during a re-authentication, still counts as the earlier principal).
func (s *Session) Authenticated() bool { return s.authenticated }

// Principal is "User:<name>" once authenticated, else "".
func (s *Session) Principal() string { return s.principal }

// Mechanism is the mechanism the session authenticated with.
// (A re-authentication must keep the mechanism, so the handshake's is
// the session's throughout.)
func (s *Session) Mechanism() string { return s.mech }

// Raw reports whether tokens come as bare frames (SaslHandshake v0).
func (s *Session) Raw() bool { return s.raw && s.state == stateAuthenticate }

// Expired reports whether the authenticated session's lifetime
// (connections.max.reauth.ms) is over at now: the connection is closed
// at its next request other than a re-authentication, as Kafka does.
func (s *Session) Expired(now time.Time) bool {
	return s.authenticated && !s.expires.IsZero() && !now.Before(s.expires) && s.state == stateHandshake
}

// Allows reports whether a request of apiKey may be served now. Before
// authentication a SASL listener serves ApiVersions and SaslHandshake,
// then SaslAuthenticate once a handshake picked a mechanism; anything
// else is out of order and closes the connection.
func (s *Session) Allows(apiKey int16) bool {
	if s.state == stateFailed {
		return false
	}
	if s.authenticated && s.state == stateHandshake {
		return true
	}
	switch apiKey {
	case 18: // ApiVersions
		return s.state == stateHandshake || s.authenticated
	case 17: // SaslHandshake
		return s.state == stateHandshake
	case 36: // SaslAuthenticate
		return s.state == stateAuthenticate && !s.raw
	}
	return s.authenticated
}

// Handshake takes a SaslHandshake of the given version asking for mech.
// It returns the enabled mechanisms (the response lists them) and
// ErrUnsupportedMechanism or ErrIllegalState on failure. Version 0 means
// the tokens follow as bare frames; a handshake on an authenticated
// session begins a re-authentication (KIP-368), which must keep the
// mechanism.
func (s *Session) Handshake(version int16, mech string) ([]string, error) {
	enabled := s.cfg.Mechanisms
	if s.state != stateHandshake {
		s.state = stateFailed
		return enabled, fmt.Errorf("%w: SaslHandshake while a %s exchange is in progress", ErrIllegalState, s.mech)
	}
	if !slices.Contains(enabled, mech) || !slices.Contains(Implemented, mech) {
		s.state = stateFailed
		return enabled, fmt.Errorf("%w: %q (enabled: %s)", ErrUnsupportedMechanism, mech, strings.Join(enabled, ", "))
	}
	if s.authenticated {
		if version == 0 {
			s.state = stateFailed
			return enabled, fmt.Errorf("%w: re-authentication needs SaslHandshake v1", ErrIllegalState)
		}
		if mech != s.mech {
			s.state = stateFailed
			return enabled, fmt.Errorf("%w: re-authentication with %s, the session used %s", ErrIllegalState, mech, s.mech)
		}
		s.reauth = true
	}
	s.state, s.mech, s.raw = stateAuthenticate, mech, version == 0
	switch mech {
	case ScramSHA256, ScramSHA512:
		m := scram.ParseMechanism(mech)
		look := func(user string) (scram.Credential, bool) {
			if s.cfg.Scram == nil {
				return scram.Credential{}, false
			}
			return s.cfg.Scram(user, m)
		}
		s.scramSrv = scram.NewServer(m, look, s.cfg.Nonce)
	}
	return enabled, nil
}

// Authenticate takes the client's next token and returns the server's
// answer. done is true once the client is authenticated: the connection
// then serves every API (and lifetime is the session's, 0 for none, which
// SaslAuthenticate v1+ returns as session_lifetime_ms). Any error ends the
// session; an *AuthError (wrapping ErrAuthenticationFailed) is a refusal.
func (s *Session) Authenticate(token []byte, now time.Time) (resp []byte, done bool, lifetime time.Duration, err error) {
	if s.state != stateAuthenticate {
		s.state = stateFailed
		return nil, false, 0, fmt.Errorf("%w: SaslAuthenticate before a SaslHandshake", ErrIllegalState)
	}
	var user string
	switch s.mech {
	case Plain:
		user, err = plain.Authenticate(token, s.cfg.PlainUsers)
		if err != nil {
			return s.fail(plainUser(token), err)
		}
		resp, done = []byte{}, true
	default:
		resp, done, err = s.scramSrv.Step(token)
		if err != nil {
			return s.fail(s.scramSrv.User(), err)
		}
		if !done {
			return resp, false, 0, nil
		}
		user = s.scramSrv.User()
	}
	principal := "User:" + user
	if s.reauth && principal != s.principal {
		s.state = stateFailed
		return nil, false, 0, &AuthError{Mechanism: s.mech, User: user,
			Reason: fmt.Errorf("re-authentication as %s, the session is %s", principal, s.principal)}
	}
	s.state, s.scramSrv, s.reauth = stateHandshake, nil, false
	s.authenticated, s.principal = true, principal
	s.expires = time.Time{}
	if s.cfg.MaxReauth > 0 {
		s.expires, lifetime = now.Add(s.cfg.MaxReauth), s.cfg.MaxReauth
	}
	return resp, true, lifetime, nil
}

func (s *Session) fail(user string, reason error) ([]byte, bool, time.Duration, error) {
	s.state = stateFailed
	return nil, false, 0, &AuthError{Mechanism: s.mech, User: user, Reason: reason}
}

// plainUser is the user name a PLAIN message names, for the log line of
// a refusal ("" when the message is malformed).
func plainUser(msg []byte) string {
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}
