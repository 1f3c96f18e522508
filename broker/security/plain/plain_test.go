package plain

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
)

// Users from the JAAS line Kafka's documentation gives for a broker's
// PLAIN listener, and franz-go's PLAIN client against them.
func TestJAASAndFranzGoClient(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret"
		user_alice="alice \"quoted\" secret";`)
	require.NoError(t, err)
	require.Equal(t, "required", j.Flag)
	require.Equal(t, "admin", j.Options["username"])
	users, err := j.Users()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"admin": "admin-secret", "alice": `alice "quoted" secret`}, users)

	for _, tc := range []struct {
		user, pass string
		ok         bool
	}{
		{"alice", `alice "quoted" secret`, true},
		{"admin", "admin-secret", true},
		{"alice", "wrong", false},
		{"mallory", "admin-secret", false},
	} {
		_, msg, err := kplain.Auth{User: tc.user, Pass: tc.pass}.AsMechanism().Authenticate(context.Background(), "broker:9092")
		require.NoError(t, err)
		got, err := Authenticate(msg, users)
		if tc.ok {
			require.NoError(t, err)
			require.Equal(t, tc.user, got)
		} else {
			require.ErrorIs(t, err, ErrAuthenticationFailed)
		}
	}
}

func TestAuthenticateMalformed(t *testing.T) {
	users := map[string]string{"alice": "pw"}
	for name, msg := range map[string]string{
		"no separators":  "alicepw",
		"one separator":  "alice\x00pw",
		"four parts":     "\x00alice\x00pw\x00x",
		"empty user":     "\x00\x00pw",
		"empty password": "\x00alice\x00",
	} {
		_, err := Authenticate([]byte(msg), users)
		require.ErrorIs(t, err, ErrAuthenticationFailed, name)
	}
	_, err := Authenticate([]byte("admin\x00alice\x00pw"), users)
	require.ErrorContains(t, err, "authorization id")
	u, err := Authenticate([]byte("alice\x00alice\x00pw"), users)
	require.NoError(t, err)
	require.Equal(t, "alice", u)
}

func TestParseJAASErrors(t *testing.T) {
	for name, s := range map[string]string{
		"no semicolon":  `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b"`,
		"bad flag":      `org.apache.kafka.common.security.plain.PlainLoginModule mandatory;`,
		"no flag":       `org.apache.kafka.common.security.plain.PlainLoginModule;`,
		"open quote":    `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b;`,
		"not key=value": `org.apache.kafka.common.security.plain.PlainLoginModule required junk;`,
	} {
		_, err := ParseJAAS(s)
		require.Error(t, err, name)
	}
	j, err := ParseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required;`)
	require.NoError(t, err)
	_, err = j.Users()
	require.ErrorContains(t, err, "want org.apache.kafka.common.security.plain.PlainLoginModule")
}
