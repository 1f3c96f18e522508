//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/security/scram"
)

// qk user against an in-process broker, end to end: the credential is
// stored, shown in kafka-configs.sh's words, verifies its password in
// the broker's cache, and goes away again.
func TestUser(t *testing.T) {
	b := brokertest.StartBroker(t)
	run := func(args ...string) (string, error) {
		out, stderr, err := runQK(t, append([]string{"user"}, append(args, "-b", b.Addr)...)...)
		if err != nil {
			return out, &cmdError{err: err, stderr: stderr}
		}
		return out, nil
	}

	out, err := run("alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]")
	require.NoError(t, err)
	require.Equal(t, "Completed updating config for user alice.\n", out)
	out, err = run("alter", "--entity-name", "bob@example.com", "--add-config", "SCRAM-SHA-512=[iterations=16384,password=bob-secret]")
	require.NoError(t, err)
	require.Equal(t, "Completed updating config for user bob@example.com.\n", out)

	out, err = run("describe", "--entity-name", "alice")
	require.NoError(t, err)
	require.Equal(t, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n", out)
	out, err = run("describe")
	require.NoError(t, err)
	require.Equal(t, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"+
		"SCRAM credential configs for user-principal 'bob@example.com' are SCRAM-SHA-512=iterations=16384\n", out)
	out, err = run("describe", "--entity-name", "alice", "--format", "json")
	require.NoError(t, err)
	require.JSONEq(t, `{"users":[{"user":"alice","credentials":[{"mechanism":"SCRAM-SHA-256","iterations":8192},{"mechanism":"SCRAM-SHA-512","iterations":4096}]}]}`, out)

	// The password the command salted verifies against what the broker
	// keeps: the stored key is H(HMAC(Hi(password), "Client Key")).
	cred, ok := b.Cache().Snapshot().ScramCredential("alice", scram.SHA256)
	require.True(t, ok)
	again, err := scram.SHA256.FromPassword("alice-secret", cred.Salt, cred.Iterations)
	require.NoError(t, err)
	require.Equal(t, cred, again)
	require.Len(t, cred.Salt, 24, "kadm's random salt")

	out, err = run("alter", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256")
	require.NoError(t, err)
	require.Equal(t, "Completed updating config for user alice.\n", out)
	out, err = run("describe", "--entity-name", "alice")
	require.NoError(t, err)
	require.Equal(t, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096\n", out)

	// Errors.
	_, err = run("alter", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256")
	require.ErrorContains(t, err, "RESOURCE_NOT_FOUND")
	_, err = run("alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]")
	require.ErrorContains(t, err, "outside the allowed 4096 to 16384 range")
	_, err = run("alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-1=[password=x]")
	require.ErrorContains(t, err, "unknown SCRAM mechanism")
	_, err = run("alter", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192]")
	require.ErrorContains(t, err, "no password")
	_, err = run("alter", "--entity-name", "alice")
	require.ErrorContains(t, err, "nothing to alter")
	out, err = run("describe", "--entity-name", "nobody")
	require.Error(t, err)
	require.True(t, strings.HasPrefix(out, "Error retrieving SCRAM credential configs for user-principal 'nobody': RESOURCE_NOT_FOUND"), out)

}

type cmdError struct {
	err    error
	stderr string
}

func (e *cmdError) Error() string { return e.err.Error() + ": " + e.stderr }
