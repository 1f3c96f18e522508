package scram

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sasl"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// rfc7677 is the SCRAM-SHA-256 exchange of RFC 7677 section 3: user
// "user", password "pencil".
var rfc7677 = struct {
	salt, serverNonce                                  string
	clientFirst, serverFirst, clientFinal, serverFinal string
}{
	salt:        "W22ZaJ0SNY7soEsUEjb6gQ==",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

func rfcLookup(t *testing.T) Lookup {
	salt, err := base64.StdEncoding.DecodeString(rfc7677.salt)
	require.NoError(t, err)
	cred, err := SHA256.FromPassword("pencil", salt, 4096)
	require.NoError(t, err)
	return func(user string) (Credential, bool) { return cred, user == "user" }
}

// The server side of RFC 7677's exchange, message for message.
func TestServerRFC7677(t *testing.T) {
	s := NewServer(SHA256, rfcLookup(t), func() string { return rfc7677.serverNonce })
	out, done, err := s.Step([]byte(rfc7677.clientFirst))
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, rfc7677.serverFirst, string(out))
	require.Equal(t, "user", s.User())
	out, done, err = s.Step([]byte(rfc7677.clientFinal))
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, rfc7677.serverFinal, string(out))
	_, _, err = s.Step([]byte("more"))
	require.ErrorIs(t, err, ErrAuthenticationFailed, "nothing after the end")
}

// What ends an exchange, each with ErrAuthenticationFailed.
func TestServerRefuses(t *testing.T) {
	finalWith := func(final string) func(*Server) error {
		return func(s *Server) error {
			if _, _, err := s.Step([]byte(rfc7677.clientFirst)); err != nil {
				return err
			}
			_, _, err := s.Step([]byte(final))
			return err
		}
	}
	first := func(msg string) func(*Server) error {
		return func(s *Server) error { _, _, err := s.Step([]byte(msg)); return err }
	}
	for name, run := range map[string]func(*Server) error{
		"unknown user":     first("n,,n=mallory,r=abc"),
		"channel binding":  first("p=tls-unique,,n=user,r=abc"),
		"other authzid":    first("n,a=admin,n=user,r=abc"),
		"delegation token": first("n,,n=user,r=abc,tokenauth=true"),
		"no nonce":         first("n,,n=user"),
		"bad escape":       first("n,,n=us=er,r=abc"),
		"not scram":        first("hello"),
		"wrong proof":      finalWith("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
		"other nonce":      finalWith("c=biws,r=rOprNGfwEbeRWgbNEkqOxx,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
		"other cbind":      finalWith("c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
		"no proof":         finalWith("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"),
		"proof not base64": finalWith("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=!!"),
		"short proof":      finalWith("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"),
	} {
		t.Run(name, func(t *testing.T) {
			s := NewServer(SHA256, rfcLookup(t), func() string { return rfc7677.serverNonce })
			require.ErrorIs(t, run(s), ErrAuthenticationFailed)
		})
	}
	// The same authzid as the user is accepted.
	s := NewServer(SHA256, rfcLookup(t), nil)
	_, _, err := s.Step([]byte("n,a=user,n=user,r=abc"))
	require.NoError(t, err)
}

// franz-go's SCRAM client, as Kafka clients speak it, against the server:
// both mechanisms, a user name needing escapes, a wrong password refused.
func TestServerWithFranzGoClient(t *testing.T) {
	for _, m := range Mechanisms {
		for _, tc := range []struct {
			user, stored, given string
			ok                  bool
		}{
			{"alice", "alice-secret", "alice-secret", true},
			{"a,b=c", "pw", "pw", true},
			{"alice", "alice-secret", "wrong", false},
		} {
			cred, err := m.FromPassword(tc.stored, []byte("0123456789abcdef"), 4096)
			require.NoError(t, err)
			srv := NewServer(m, func(u string) (Credential, bool) { return cred, u == tc.user }, nil)
			auth := kscram.Auth{User: tc.user, Pass: tc.given}
			var mech sasl.Mechanism
			if m == SHA256 {
				mech = auth.AsSha256Mechanism()
			} else {
				mech = auth.AsSha512Mechanism()
			}
			sess, msg, err := mech.Authenticate(context.Background(), "broker:9092")
			require.NoError(t, err)
			var serr error
			for i := 0; i < 3; i++ {
				resp, done, err := srv.Step(msg)
				if err != nil {
					serr = err
					break
				}
				cdone, next, err := sess.Challenge(resp)
				require.NoError(t, err, "%s %s: the client rejects the server", m, tc.user)
				if done {
					require.True(t, cdone)
					break
				}
				msg = next
			}
			if tc.ok {
				require.NoError(t, serr, "%s %s", m, tc.user)
				require.Equal(t, tc.user, srv.User())
			} else {
				require.True(t, errors.Is(serr, ErrAuthenticationFailed), "%s: a wrong password is refused: %v", m, serr)
			}
		}
	}
}

// TestLibrdkafkaNonce: librdkafka (2.0, Debian's kcat) sends its client
// nonce followed by the combined nonce in client-final. Kafka's server
// accepts a nonce that ends with its own, so qk does too; the proof is
// over the message as sent, so a wrong password still fails, and a nonce
// that does not end with the server's is refused.
func TestLibrdkafkaNonce(t *testing.T) {
	salt, err := base64.StdEncoding.DecodeString(rfc7677.salt)
	require.NoError(t, err)
	salted, err := SHA256.SaltedPassword("pencil", salt, 4096)
	require.NoError(t, err)
	clientNonce := "rOprNGfwEbeRWgbNEkqO"
	for _, tc := range []struct {
		name, nonce string
		ok          bool
	}{
		{"combined nonce", clientNonce + rfc7677.serverNonce, true},
		{"librdkafka's doubled nonce", clientNonce + clientNonce + rfc7677.serverNonce, true},
		{"another nonce", clientNonce + "x" + rfc7677.serverNonce[1:], false},
	} {
		s := NewServer(SHA256, rfcLookup(t), func() string { return rfc7677.serverNonce })
		first, _, err := s.Step([]byte("n,,n=user,r=" + clientNonce))
		require.NoError(t, err)
		without := "c=biws,r=" + tc.nonce
		auth := "n=user,r=" + clientNonce + "," + string(first) + "," + without
		clientKey := SHA256.HMAC(salted, []byte("Client Key"))
		sig := SHA256.HMAC(SHA256.Hash(clientKey), []byte(auth))
		proof := make([]byte, len(clientKey))
		for i := range proof {
			proof[i] = clientKey[i] ^ sig[i]
		}
		_, done, err := s.Step([]byte(without + ",p=" + base64.StdEncoding.EncodeToString(proof)))
		require.Equal(t, tc.ok, done && err == nil, "%s: %v", tc.name, err)
	}
}
