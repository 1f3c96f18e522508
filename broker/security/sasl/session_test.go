package sasl

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sasl"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/qk-project/qk/broker/security/scram"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func testConfig(t *testing.T) *Config {
	creds := map[string]map[scram.Mechanism]scram.Credential{"alice": {}}
	for _, m := range scram.Mechanisms {
		c, err := m.FromPassword("alice-secret", []byte("salt-of-alice"), 4096)
		require.NoError(t, err)
		creds["alice"][m] = c
	}
	return &Config{
		Mechanisms: []string{Plain, ScramSHA256, ScramSHA512},
		PlainUsers: map[string]string{"bob": "bob-secret"},
		Scram: func(user string, m scram.Mechanism) (scram.Credential, bool) {
			c, ok := creds[user][m]
			return c, ok
		},
	}
}

// run drives a session with one of franz-go's client mechanisms, as a
// client would over SaslAuthenticate, and returns the session's outcome.
func run(t *testing.T, s *Session, version int16, m sasl.Mechanism) (done bool, lifetime time.Duration, err error) {
	t.Helper()
	if _, err := s.Handshake(version, m.Name()); err != nil {
		return false, 0, err
	}
	cs, msg, err := m.Authenticate(context.Background(), "broker:9092")
	require.NoError(t, err)
	for range 4 {
		require.True(t, s.Raw() == (version == 0))
		resp, done, lifetime, err := s.Authenticate(msg, t0)
		if err != nil || done {
			if done {
				cdone, _, cerr := cs.Challenge(resp)
				require.NoError(t, cerr, "the client accepts the server's last message")
				require.True(t, cdone)
			}
			return done, lifetime, err
		}
		_, msg, err = cs.Challenge(resp)
		require.NoError(t, err)
	}
	t.Fatal("exchange did not end")
	return
}

func TestMechanisms(t *testing.T) {
	plainAuth := func(u, p string) sasl.Mechanism { return kplain.Auth{User: u, Pass: p}.AsMechanism() }
	scram256 := func(u, p string) sasl.Mechanism { return kscram.Auth{User: u, Pass: p}.AsSha256Mechanism() }
	scram512 := func(u, p string) sasl.Mechanism { return kscram.Auth{User: u, Pass: p}.AsSha512Mechanism() }
	tests := []struct {
		name      string
		mech      sasl.Mechanism
		version   int16
		principal string
		failUser  string // "": success
	}{
		{"plain v1", plainAuth("bob", "bob-secret"), 1, "User:bob", ""},
		{"plain v0 raw tokens", plainAuth("bob", "bob-secret"), 0, "User:bob", ""},
		{"plain wrong password", plainAuth("bob", "nope"), 1, "", "bob"},
		{"plain unknown user", plainAuth("carol", "bob-secret"), 1, "", "carol"},
		{"scram-sha-256", scram256("alice", "alice-secret"), 1, "User:alice", ""},
		{"scram-sha-512", scram512("alice", "alice-secret"), 1, "User:alice", ""},
		{"scram-sha-512 v0 raw tokens", scram512("alice", "alice-secret"), 0, "User:alice", ""},
		{"scram wrong password", scram512("alice", "nope"), 1, "", "alice"},
		{"scram unknown user", scram256("mallory", "x"), 1, "", "mallory"},
		{"scram user is not a plain user", scram256("bob", "bob-secret"), 1, "", "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSession(testConfig(t))
			require.True(t, s.Allows(18))
			require.True(t, s.Allows(17))
			require.False(t, s.Allows(0), "no Produce before authentication")
			require.False(t, s.Allows(36), "no SaslAuthenticate before a handshake")
			done, lifetime, err := run(t, s, tt.version, tt.mech)
			if tt.failUser != "" {
				var ae *AuthError
				require.ErrorAs(t, err, &ae)
				require.ErrorIs(t, err, ErrAuthenticationFailed)
				require.Equal(t, tt.failUser, ae.User)
				require.NotContains(t, ae.ClientMessage(), "secret")
				require.NotContains(t, err.Error(), "secret", "the log line carries no password")
				require.False(t, s.Authenticated())
				require.False(t, s.Allows(18), "a failed session serves nothing")
				return
			}
			require.NoError(t, err)
			require.True(t, done)
			require.Zero(t, lifetime)
			require.Equal(t, tt.principal, s.Principal())
			require.True(t, s.Allows(0))
			require.False(t, s.Raw())
			require.False(t, s.Expired(t0.Add(1000*time.Hour)), "no connections.max.reauth.ms: no expiry")
		})
	}
}

func TestHandshakeErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.Mechanisms = []string{ScramSHA512}
	s := NewSession(cfg)
	enabled, err := s.Handshake(1, Plain)
	require.ErrorIs(t, err, ErrUnsupportedMechanism)
	require.Equal(t, []string{ScramSHA512}, enabled)
	require.False(t, s.Allows(18))

	s = NewSession(cfg)
	_, err = s.Handshake(1, "GSSAPI")
	require.ErrorIs(t, err, ErrUnsupportedMechanism)

	s = NewSession(cfg)
	_, _, _, err = s.Authenticate([]byte("x"), t0)
	require.ErrorIs(t, err, ErrIllegalState)

	s = NewSession(cfg)
	_, err = s.Handshake(1, ScramSHA512)
	require.NoError(t, err)
	_, err = s.Handshake(1, ScramSHA512)
	require.ErrorIs(t, err, ErrIllegalState, "a second handshake mid-exchange")
}

// TestReauthentication: KIP-368. With connections.max.reauth.ms the
// session has a lifetime; once over, requests other than a
// re-authentication are refused; re-authenticating as the same principal
// with the same mechanism renews it, as anyone else fails.
func TestReauthentication(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxReauth = time.Minute
	s := NewSession(cfg)
	good := kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()
	done, lifetime, err := run(t, s, 1, good)
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, time.Minute, lifetime)
	require.False(t, s.Expired(t0.Add(59*time.Second)))
	require.True(t, s.Expired(t0.Add(time.Minute)))

	// Re-authentication: the session stays authenticated meanwhile.
	_, err = s.Handshake(1, ScramSHA256)
	require.NoError(t, err)
	require.True(t, s.Authenticated())
	require.False(t, s.Expired(t0.Add(2*time.Minute)), "a re-authentication in progress is not expiry")
	cs, msg, _ := good.Authenticate(context.Background(), "b")
	resp, _, _, err := s.Authenticate(msg, t0)
	require.NoError(t, err)
	_, msg, _ = cs.Challenge(resp)
	_, done, lifetime, err = s.Authenticate(msg, t0.Add(2*time.Minute))
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, time.Minute, lifetime)
	require.False(t, s.Expired(t0.Add(2*time.Minute+59*time.Second)), "renewed from the re-authentication")

	// Another mechanism, or another user, fails.
	_, err = s.Handshake(1, ScramSHA512)
	require.ErrorIs(t, err, ErrIllegalState)

	s = NewSession(cfg)
	_, _, err = run(t, s, 1, kplain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())
	require.NoError(t, err)
	_, _, err = run(t, s, 1, kplain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())
	require.NoError(t, err, "the same user again")
	cfg.PlainUsers["carol"] = "carol-secret"
	_, _, err = run(t, s, 1, kplain.Auth{User: "carol", Pass: "carol-secret"}.AsMechanism())
	var ae *AuthError
	require.True(t, errors.As(err, &ae), "re-authenticating as someone else: %v", err)
	require.Equal(t, "carol", ae.User)
}
