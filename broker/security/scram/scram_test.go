package scram

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
)

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

func xor(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out
}

// TestRFC7677 checks the derivation against the SCRAM-SHA-256 exchange
// of RFC 7677 section 3 (user "user", password "pencil"): a credential
// derived from the password must verify the client's proof and produce
// the server's signature given there.
func TestRFC7677(t *testing.T) {
	salt := b64(t, "W22ZaJ0SNY7soEsUEjb6gQ==")
	c, err := SHA256.FromPassword("pencil", salt, 4096)
	require.NoError(t, err)
	const nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	auth := []byte("n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=" + nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=" + nonce)
	proof := b64(t, "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	// The server's check: H(ClientProof XOR ClientSignature) == StoredKey.
	clientKey := xor(proof, SHA256.HMAC(c.StoredKey, auth))
	require.Equal(t, c.StoredKey, SHA256.Hash(clientKey))
	require.Equal(t, b64(t, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="), SHA256.HMAC(c.ServerKey, auth))
}

// TestSaltedPasswordLength: the salted password is a PBKDF2 output as
// long as the mechanism's hash (RFC 5802 Hi).
func TestSaltedPasswordLength(t *testing.T) {
	for _, m := range Mechanisms {
		sp, err := m.SaltedPassword("pw", []byte("salt"), MinIterations)
		require.NoError(t, err)
		require.Len(t, sp, m.hash()().Size(), m.String())
	}
	_, err := Unknown.SaltedPassword("pw", []byte("salt"), MinIterations)
	require.Error(t, err)
}

// TestPBKDF2 is a known PBKDF2-HMAC-SHA256 answer (RFC 7914 section 11:
// P="passwd", S="salt", c=1), so Hi is the function RFC 5802 names.
func TestPBKDF2(t *testing.T) {
	sp, err := SHA256.SaltedPassword("passwd", []byte("salt"), 1)
	require.NoError(t, err)
	require.Equal(t, "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc", hexs(sp))
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestFormatParse(t *testing.T) {
	c := Credential{Salt: []byte("salt"), StoredKey: []byte{1, 2, 3}, ServerKey: []byte{0xff}, Iterations: 8192}
	s := c.String()
	require.Equal(t, "salt=c2FsdA==,stored_key=AQID,server_key=/w==,iterations=8192", s)
	got, err := Parse(s)
	require.NoError(t, err)
	require.Equal(t, c, got)
	// Any order, as Kafka's Properties-based parser.
	got, err = Parse("iterations=8192,server_key=/w==,salt=c2FsdA==,stored_key=AQID")
	require.NoError(t, err)
	require.Equal(t, c, got)

	for _, bad := range []string{
		"", "salt=c2FsdA==", "salt=c2FsdA==,stored_key=AQID,server_key=/w==",
		"salt=c2FsdA==,stored_key=AQID,server_key=/w==,iterations=x",
		"salt=!!,stored_key=AQID,server_key=/w==,iterations=1",
		"salt=c2FsdA==,stored_key=AQID,server_key=/w==,iterations=1,extra=1",
		"salt=c2FsdA==,salt=c2FsdA==,server_key=/w==,iterations=1",
		"=x,stored_key=AQID,server_key=/w==,iterations=1",
	} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, ErrMalformed, bad)
	}
}

func TestMechanism(t *testing.T) {
	require.Equal(t, SHA256, ParseMechanism("SCRAM-SHA-256"))
	require.Equal(t, SHA512, ParseMechanism("SCRAM-SHA-512"))
	require.Equal(t, Unknown, ParseMechanism("scram-sha-256"))
	require.Equal(t, "UNKNOWN", Mechanism(7).String())
}

// TestSanitize: user principals with special characters become
// URL-encoded node names (as Java's URLEncoder with Kafka's '*' and ' '
// replacements would write them) and come back.
func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"alice", "alice"},
		{"a.b-c_d", "a.b-c_d"},
		{"user1@domain", "user1%40domain"},
		{"CN=Some characters !@#$%&*()_-+=';:,/~", "CN%3DSome%20characters%20%21%40%23%24%25%26%2A%28%29_-%2B%3D%27%3B%3A%2C%2F%7E"},
		{"ü", "%C3%BC"},
	} {
		require.Equal(t, tc.out, Sanitize(tc.in), tc.in)
		back, err := Desanitize(tc.out)
		require.NoError(t, err)
		require.Equal(t, tc.in, back)
	}
	back, err := Desanitize("a+b")
	require.NoError(t, err)
	require.Equal(t, "a b", back)
	_, err = Desanitize("a%4")
	require.Error(t, err)
}

// TestKnownCredentialStrings: credential strings in Kafka's format from
// an independent generator's tests (password "admin-secret", 4096
// iterations), one per mechanism, must come out byte for byte.
func TestKnownCredentialStrings(t *testing.T) {
	for _, tc := range []struct {
		m    Mechanism
		salt string
		want string
	}{
		{SHA256, "2z6zo9xma93c5art4afp5tubr", "salt=Mno2em85eG1hOTNjNWFydDRhZnA1dHVicg==,stored_key=S/mR1wYGMoSUC7Av4Kqbuiit96ZTeXGsfZuR7cUfbxM=,server_key=Ap6C1LoBF0qOOvYulwH5f3oog1VlsxF4fosugF+lTVQ=,iterations=4096"},
		{SHA512, "ejkufgc04s6u1n5fkqzhl2ypy", "salt=ZWprdWZnYzA0czZ1MW41ZmtxemhsMnlweQ==,stored_key=SKtYXmLy0BEeLkj1aiunNFMw6ZlBA16DcJY5SpJ0WDJafANNp4QP+XDgZmkCwO7vhzxbK5FxgCa8lKfNRF0TBw==,server_key=JxzpmkDoCqp5lIpzAH+Djt2gxgG4dQw1Ox2Vkf/awx7PWk19JCimZGbKnPyOedd+aHCH0Xsv0gjXC6UM7LbElg==,iterations=4096"},
	} {
		c, err := tc.m.FromPassword("admin-secret", []byte(tc.salt), 4096)
		require.NoError(t, err)
		require.Equal(t, tc.want, c.String(), tc.m.String())
		parsed, err := Parse(tc.want)
		require.NoError(t, err)
		require.Equal(t, c, parsed)
	}
}
