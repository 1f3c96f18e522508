package scram

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrAuthenticationFailed is a failed SCRAM exchange: the broker answers
// SASL_AUTHENTICATION_FAILED and closes the connection. Its text never
// says whether the user or the password was wrong, as Kafka's does not.
var ErrAuthenticationFailed = errors.New("authentication failed")

// Lookup finds a user's stored credential for the server's mechanism.
type Lookup func(user string) (Credential, bool)

// Server is the broker's side of one SCRAM exchange (RFC 5802, Kafka's
// ScramSaslServer), as pure logic: two client messages in, two server
// messages out, then the authenticated user. It holds no lock and does
// no I/O; the SaslAuthenticate handler feeds it the bytes.
//
//	client-first  n,,n=alice,r=<client nonce>
//	server-first  r=<client nonce><server nonce>,s=<salt>,i=<iterations>
//	client-final  c=biws,r=<nonce>,p=<proof>
//	server-final  v=<server signature>
type Server struct {
	mech  Mechanism
	look  Lookup
	nonce func() string

	step            int
	user            string
	gs2Header       string
	cred            Credential
	nonceFull       string
	clientFirstBare string
	serverFirst     string
}

// NewServer starts an exchange for mechanism m. nonce makes the server's
// nonce (nil: 24 random bytes, base64; tests pass a fixed one).
func NewServer(m Mechanism, look Lookup, nonce func() string) *Server {
	if nonce == nil {
		nonce = randomNonce
	}
	return &Server{mech: m, look: look, nonce: nonce}
}

func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return base64.RawStdEncoding.EncodeToString(b)
}

// User is the user the exchange is for (known after the first message).
func (s *Server) User() string { return s.user }

// Step takes the client's next message and returns the server's answer;
// done is true once the client is authenticated (the answer is then the
// server-final message the client checks the server with). Any error
// ends the exchange: the connection is closed.
func (s *Server) Step(msg []byte) (resp []byte, done bool, err error) {
	switch s.step {
	case 0:
		s.step = 1
		out, err := s.clientFirst(string(msg))
		return []byte(out), false, err
	case 1:
		s.step = 2
		out, err := s.clientFinal(string(msg))
		return []byte(out), err == nil, err
	}
	return nil, false, fmt.Errorf("%w: the exchange is over", ErrAuthenticationFailed)
}

// clientFirst parses "gs2-header n=user,r=nonce[,extensions]" and answers
// with the salt, the iterations and the combined nonce.
func (s *Server) clientFirst(msg string) (string, error) {
	// gs2-header: channel binding flag, optional authzid.
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return "", fmt.Errorf("%w: malformed client-first message", ErrAuthenticationFailed)
	}
	switch {
	case flag == "n", flag == "y":
	case strings.HasPrefix(flag, "p="):
		return "", fmt.Errorf("%w: channel binding is not supported", ErrAuthenticationFailed)
	default:
		return "", fmt.Errorf("%w: malformed client-first message", ErrAuthenticationFailed)
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return "", fmt.Errorf("%w: malformed client-first message", ErrAuthenticationFailed)
	}
	s.gs2Header = flag + "," + authzid + ","
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) == 2 {
		return "", fmt.Errorf("%w: malformed client-first message", ErrAuthenticationFailed)
	}
	user, err := decodeSaslName(attrs[0][2:])
	if err != nil {
		return "", err
	}
	for _, ext := range attrs[2:] {
		// Kafka's extensions; tokenauth asks for a delegation token,
		// which qk does not issue.
		if k, v, _ := strings.Cut(ext, "="); k == "tokenauth" && v == "true" {
			return "", fmt.Errorf("%w: delegation tokens are not supported", ErrAuthenticationFailed)
		}
	}
	if authzid != "" {
		if !strings.HasPrefix(authzid, "a=") {
			return "", fmt.Errorf("%w: malformed authorization id", ErrAuthenticationFailed)
		}
		if az, err := decodeSaslName(authzid[2:]); err != nil || az != user {
			return "", fmt.Errorf("%w: the client asked for an authorization id other than its user name", ErrAuthenticationFailed)
		}
	}
	s.user = user
	cred, ok := s.look(user)
	if !ok {
		return "", fmt.Errorf("%w: invalid credentials", ErrAuthenticationFailed)
	}
	s.cred = cred
	s.clientFirstBare = bare
	s.nonceFull = attrs[1][2:] + s.nonce()
	s.serverFirst = "r=" + s.nonceFull + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return s.serverFirst, nil
}

// clientFinal checks "c=<gs2 header>,r=<nonce>[,...],p=<proof>" against
// the stored key and answers with the server signature.
func (s *Server) clientFinal(msg string) (string, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return "", fmt.Errorf("%w: malformed client-final message", ErrAuthenticationFailed)
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", fmt.Errorf("%w: malformed client-final message", ErrAuthenticationFailed)
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cbind) != s.gs2Header {
		return "", fmt.Errorf("%w: channel binding does not match the client-first message", ErrAuthenticationFailed)
	}
	// Kafka's ScramSaslServer accepts any nonce that ends with the
	// server's (endsWith, not equals), and librdkafka relies on it: up to
	// at least 2.0 it sends its own nonce followed by the combined one.
	// The proof covers the message as sent, so this loosens nothing.
	if !strings.HasSuffix(attrs[1][2:], s.nonceFull) {
		return "", fmt.Errorf("%w: nonce mismatch", ErrAuthenticationFailed)
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return "", fmt.Errorf("%w: malformed client proof", ErrAuthenticationFailed)
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	// ClientKey = proof XOR HMAC(StoredKey, AuthMessage); it is right
	// when its hash is the stored key.
	sig := s.mech.HMAC(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ sig[j]
	}
	if !hmac.Equal(s.mech.Hash(clientKey), s.cred.StoredKey) {
		return "", fmt.Errorf("%w: invalid credentials", ErrAuthenticationFailed)
	}
	return "v=" + base64.StdEncoding.EncodeToString(s.mech.HMAC(s.cred.ServerKey, authMessage)), nil
}

// decodeSaslName undoes RFC 5802's escaping of ',' (=2C) and '=' (=3D).
func decodeSaslName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: malformed user name", ErrAuthenticationFailed)
		}
		i += 2
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: empty user name", ErrAuthenticationFailed)
	}
	return b.String(), nil
}
