package admin

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
)

func TestParseScramConfigs(t *testing.T) {
	got, err := ParseScramConfigs("SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=p=q]")
	require.NoError(t, err)
	require.Equal(t, []ScramUpsert{
		{Mechanism: kadm.ScramSha256, Password: "alice-secret", Iterations: 8192},
		{Mechanism: kadm.ScramSha512, Password: "p=q", Iterations: DefaultScramIterations},
	}, got)
	got, err = ParseScramConfigs("")
	require.NoError(t, err)
	require.Empty(t, got)
	for _, bad := range []string{
		"SCRAM-SHA-256", "SCRAM-SHA-256=password=x", "SCRAM-SHA-1=[password=x]",
		"SCRAM-SHA-256=[iterations=x,password=y]", "SCRAM-SHA-256=[salt=x,password=y]",
		"SCRAM-SHA-256=[iterations=8192]",
	} {
		_, err := ParseScramConfigs(bad)
		require.Error(t, err, bad)
	}
}

func TestUserScramsText(t *testing.T) {
	v := &UserScrams{Users: []UserScram{
		{User: "alice", Credentials: []ScramCredential{{"SCRAM-SHA-256", 8192}, {"SCRAM-SHA-512", 4096}}},
		{User: "nobody", Error: "RESOURCE_NOT_FOUND: no credentials"},
	}}
	var b bytes.Buffer
	require.NoError(t, Print(&b, "text", v))
	require.Equal(t, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"+
		"Error retrieving SCRAM credential configs for user-principal 'nobody': RESOURCE_NOT_FOUND: no credentials\n", b.String())
	b.Reset()
	require.NoError(t, Print(&b, "text", &UserAltered{User: "alice"}))
	require.Equal(t, "Completed updating config for user alice.\n", b.String())
}
