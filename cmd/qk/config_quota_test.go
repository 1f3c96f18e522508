//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/clientquota"
)

// qk config with kafka-configs.sh's entity flags against an in-process
// broker: quotas are set, printed in kafka-configs.sh's words, resolved
// by the broker's cache, and removed.
func TestConfigQuotas(t *testing.T) {
	b := brokertest.StartBroker(t)
	run := func(args ...string) (string, error) {
		out, stderr, err := runQK(t, append([]string{"config"}, append(args, "-b", b.Addr)...)...)
		if err != nil {
			return out, &cmdError{err: err, stderr: stderr}
		}
		return out, nil
	}

	out, err := run("alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	require.NoError(t, err)
	require.Equal(t, "Completed updating config for user alice.\n", out)
	out, err = run("alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app", "--add-config", "request_percentage=12.5")
	require.NoError(t, err)
	require.Equal(t, "Completed updating config for user alice.\n", out)
	out, err = run("alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=10485760")
	require.NoError(t, err)
	require.Equal(t, "Completed updating default config for clients in the cluster.\n", out)
	// The default user's default client, names and defaults paired in order.
	out, err = run("alter", "--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-name", "batch", "--add-config", "consumer_byte_rate=1000")
	require.NoError(t, err)
	require.Equal(t, "Completed updating default config for users in the cluster.\n", out)

	out, err = run("describe", "--entity-type", "users", "--entity-name", "alice")
	require.NoError(t, err)
	require.Equal(t, "Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0\n", out)
	out, err = run("describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients")
	require.NoError(t, err)
	require.Equal(t, "Quota configs for user-principal 'alice', client-id 'app' are request_percentage=12.5\n", out)
	out, err = run("describe", "--entity-type", "clients", "--entity-default")
	require.NoError(t, err)
	require.Equal(t, "Quota configs for the default client-id are producer_byte_rate=1.048576E7\n", out)
	out, err = run("describe", "--entity-type", "users", "--entity-type", "clients")
	require.NoError(t, err)
	require.Equal(t, "Quota configs for the default user-principal, client-id 'batch' are consumer_byte_rate=1000.0\n"+
		"Quota configs for user-principal 'alice', client-id 'app' are request_percentage=12.5\n", out)
	out, err = run("describe", "--entity-type", "users", "--entity-name", "alice", "--format", "json")
	require.NoError(t, err)
	require.JSONEq(t, `{"quotas":[{"entity":[{"type":"users","name":"alice"}],"values":{"consumer_byte_rate":2097152,"producer_byte_rate":1048576}}]}`, out)

	s := b.Cache().Snapshot()
	m, ok := s.ClientQuota(clientquota.Request, "alice", "app")
	require.True(t, ok)
	require.Equal(t, 12.5, m.Limit)
	m, ok = s.ClientQuota(clientquota.Produce, "bob", "x")
	require.True(t, ok)
	require.Equal(t, 10485760.0, m.Limit)

	out, err = run("alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "consumer_byte_rate")
	require.NoError(t, err)
	require.Equal(t, "Completed updating config for user alice.\n", out)
	out, err = run("describe", "--entity-type", "users", "--entity-name", "alice")
	require.NoError(t, err)
	require.Equal(t, "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0\n", out)

	// Validation, client side and broker side.
	for _, args := range [][]string{
		{"alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1"},
		{"alter", "--entity-type", "topics", "--entity-name", "t", "--add-config", "producer_byte_rate=1"},
		{"alter", "--entity-type", "users", "--entity-name", "a", "--entity-type", "users", "--entity-name", "b", "--add-config", "producer_byte_rate=1"},
		{"alter", "--entity-type", "users", "--entity-name", "a", "--entity-name", "b", "--add-config", "producer_byte_rate=1"},
		{"alter", "--entity-type", "users", "--entity-name", "a", "--add-config", "producer_byte_rate=fast"},
		{"alter", "--entity-type", "users", "--entity-name", "a", "--add-config", "retention.ms=1"},
		{"alter", "--entity-type", "users", "--entity-name", "a", "--topic", "t", "--add-config", "producer_byte_rate=1"},
	} {
		_, err := run(args...)
		require.Error(t, err, "%v", args)
	}
	out, err = run("alter", "--entity-type", "clients", "--entity-name", "dry", "--add-config", "producer_byte_rate=1", "--dry-run")
	require.NoError(t, err)
	require.Equal(t, "Completed updating config for client dry. (validated only; nothing changed)\n", out)
	out, err = run("describe", "--entity-type", "clients", "--entity-name", "dry")
	require.NoError(t, err)
	require.Empty(t, out)
}
