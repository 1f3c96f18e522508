// Package scram holds SCRAM credentials (RFC 5802, RFC 7677) as Kafka
// keeps them: derived from a salted password, stored under
// /config/users/<user> as "salt=..,stored_key=..,server_key=..,iterations=n"
// (Kafka's ScramCredentialUtils format), one config key per mechanism.
//
// It is pure: no store, no network. The broker's credential APIs
// (DescribeUserScramCredentials, AlterUserScramCredentials), its metadata
// cache and the SASL/SCRAM authenticator all share it, so the format has
// one definition.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Mechanism is a SCRAM mechanism with Kafka's wire type (ScramMechanism):
// 1 SCRAM-SHA-256, 2 SCRAM-SHA-512; 0 is Kafka's UNKNOWN.
type Mechanism int8

// The mechanisms Kafka supports.
const (
	Unknown Mechanism = 0
	SHA256  Mechanism = 1
	SHA512  Mechanism = 2
)

// Mechanisms are the known mechanisms, in Kafka's order.
var Mechanisms = []Mechanism{SHA256, SHA512}

// Iteration bounds Kafka accepts in AlterUserScramCredentials: the
// mechanisms' minimum (4096 for both, as RFC 7677 recommends) and the
// broker's fixed maximum.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// ErrMalformed is wrapped when a stored credential is not in Kafka's
// format.
var ErrMalformed = errors.New("scram: malformed credential")

// String is the mechanism's name, also its config key under
// /config/users/<user>: "SCRAM-SHA-256".
func (m Mechanism) String() string {
	switch m {
	case SHA256:
		return "SCRAM-SHA-256"
	case SHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN"
}

// ParseMechanism returns the mechanism named name (case-sensitive, as
// Kafka's ScramMechanism.fromMechanismName), or Unknown.
func ParseMechanism(name string) Mechanism {
	for _, m := range Mechanisms {
		if m.String() == name {
			return m
		}
	}
	return Unknown
}

// Known reports whether m is a mechanism this package derives keys for.
func (m Mechanism) Known() bool { return m == SHA256 || m == SHA512 }

func (m Mechanism) hash() func() hash.Hash {
	if m == SHA512 {
		return sha512.New
	}
	return sha256.New
}

// Credential is what the server keeps for one user and mechanism: never
// the password nor the salted password, from which a client's proof
// could be forged.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// SaltedPassword is Hi(password, salt, i) of RFC 5802: PBKDF2 with the
// mechanism's HMAC and an output as long as its hash. Clients compute it
// (KIP-554 sends it instead of the password); qk's tools do too.
func (m Mechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	if !m.Known() {
		return nil, fmt.Errorf("scram: unknown mechanism %d", m)
	}
	h := m.hash()
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// FromSaltedPassword derives the stored credential: ClientKey =
// HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey), ServerKey
// = HMAC(SaltedPassword, "Server Key"), as Kafka's
// ScramFormatter.generateCredential.
func (m Mechanism) FromSaltedPassword(salt, saltedPassword []byte, iterations int) Credential {
	clientKey := m.HMAC(saltedPassword, []byte("Client Key"))
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.Hash(clientKey),
		ServerKey:  m.HMAC(saltedPassword, []byte("Server Key")),
		Iterations: iterations,
	}
}

// FromPassword is FromSaltedPassword of the password's salted form.
func (m Mechanism) FromPassword(password string, salt []byte, iterations int) (Credential, error) {
	sp, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return m.FromSaltedPassword(salt, sp, iterations), nil
}

// HMAC is the mechanism's HMAC(key, msg).
func (m Mechanism) HMAC(key, msg []byte) []byte {
	mac := hmac.New(m.hash(), key)
	mac.Write(msg)
	return mac.Sum(nil)
}

// Hash is the mechanism's H(b).
func (m Mechanism) Hash(b []byte) []byte {
	h := m.hash()()
	h.Write(b)
	return h.Sum(nil)
}

// String formats c as Kafka stores it (ScramCredentialUtils
// .credentialToString): standard padded base64.
func (c Credential) String() string {
	enc := base64.StdEncoding.EncodeToString
	return "salt=" + enc(c.Salt) + ",stored_key=" + enc(c.StoredKey) +
		",server_key=" + enc(c.ServerKey) + ",iterations=" + strconv.Itoa(c.Iterations)
}

// Parse reads a credential in Kafka's format: exactly the four keys, in
// any order, as credentialFromString accepts.
func Parse(s string) (Credential, error) {
	var c Credential
	seen := map[string]bool{}
	for tok := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" || seen[k] {
			return Credential{}, fmt.Errorf("%w: %q", ErrMalformed, tok)
		}
		seen[k] = true
		var err error
		switch k {
		case "salt":
			c.Salt, err = base64.StdEncoding.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = base64.StdEncoding.DecodeString(v)
		case "server_key":
			c.ServerKey, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		default:
			err = errors.New("unknown key")
		}
		if err != nil {
			return Credential{}, fmt.Errorf("%w: %s: %v", ErrMalformed, k, err)
		}
	}
	if len(seen) != 4 {
		return Credential{}, fmt.Errorf("%w: want salt, stored_key, server_key and iterations", ErrMalformed)
	}
	return c, nil
}

// Sanitize is Kafka's Sanitizer.sanitize, the user's node name under
// /config/users: Java's URL form encoding with '*' and ' ' as %2A and
// %20, so only [A-Za-z0-9._-] stay as they are and every other byte of
// the UTF-8 name is %XX (upper-case hex).
func Sanitize(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// Desanitize is Kafka's Sanitizer.desanitize (Java's URLDecoder): %XX is
// a byte and '+' a space.
func Desanitize(name string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(name) {
				return "", fmt.Errorf("scram: bad escape in %q", name)
			}
			v, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("scram: bad escape in %q", name)
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
