package controller

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

func startQuotaCache(t *testing.T) (*Cache, metadata.Store) {
	t.Helper()
	st := embedded.New()
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, metadata.EnsureKafkaPaths(t.Context(), st))
	c := NewCache(CacheConfig{Store: st, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(c.Close)
	return c, st
}

func waitQuotas(t *testing.T, c *Cache, want clientquota.Quotas) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := c.WaitFor(ctx, func(s *Snapshot) bool { return s.ClientQuotas().Equal(want) })
	require.NoError(t, err, "cache has %v, want %v", c.Snapshot().ClientQuotas(), want)
}

// TestCacheClientQuotasFromKafkaNodes writes the nodes and notifications
// byte for byte as Kafka's AdminZkClient does, and the cache follows.
func TestCacheClientQuotasFromKafkaNodes(t *testing.T) {
	c, st := startQuotaCache(t)
	ctx := t.Context()
	write := func(path, data, entityPath string) {
		t.Helper()
		_, err := st.Set(ctx, path, []byte(data), metadata.AnyVersion)
		if err != nil {
			_, err = metadata.CreateAll(ctx, st, path, []byte(data), 0)
		}
		require.NoError(t, err)
		_, err = st.Create(ctx, metadata.ConfigChangesPath+"/"+metadata.ConfigChangePrefix,
			[]byte(`{"version":2,"entity_path":"`+entityPath+`"}`), metadata.Sequential)
		require.NoError(t, err)
	}
	// A user/client node created first makes /config/users/alice with no
	// data, as Kafka's createRecursive does.
	write("/config/users/alice/clients/app", `{"version":1,"config":{"consumer_byte_rate":"2097152"}}`, "users/alice/clients/app")
	alice, app := clientquota.Named("alice"), clientquota.Named("app")
	want := clientquota.Quotas{{User: alice, Client: app}: {"consumer_byte_rate": 2097152}}
	waitQuotas(t, c, want)

	write("/config/users/alice", `{"version":1,"config":{"producer_byte_rate":"1048576","SCRAM-SHA-256":"salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"}}`, "users/alice")
	write("/config/users/<default>/clients/<default>", `{"version":1,"config":{"request_percentage":"12.5"}}`, "users/<default>/clients/<default>")
	write("/config/clients/<default>", `{"version":1,"config":{"producer_byte_rate":"100","bogus":"x"}}`, "clients/<default>")
	// A user with SCRAM credentials only is no quota entity.
	write("/config/users/bob", `{"version":1,"config":{"SCRAM-SHA-512":"salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"}}`, "users/bob")
	write("/config/clients/my%2Fapp", `{"version":1,"config":{"controller_mutation_rate":"10.0"}}`, "clients/my%2Fapp")
	want[clientquota.Entity{User: alice}] = clientquota.Values{"producer_byte_rate": 1048576}
	want[clientquota.Entity{User: clientquota.Default, Client: clientquota.Default}] = clientquota.Values{"request_percentage": 12.5}
	want[clientquota.Entity{Client: clientquota.Default}] = clientquota.Values{"producer_byte_rate": 100}
	want[clientquota.Entity{Client: clientquota.Named("my/app")}] = clientquota.Values{"controller_mutation_rate": 10}
	waitQuotas(t, c, want)
	// A sync may read the users for SCRAM before bob's node and the
	// quotas after the last one: wait for the sync that follows.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, c.WaitFor(wctx, func(s *Snapshot) bool { return len(s.ScramUsers()) == 2 }))

	s := c.Snapshot()
	m, ok := s.ClientQuota(clientquota.Produce, "alice", "app")
	require.True(t, ok)
	require.Equal(t, clientquota.Match{Entity: clientquota.Entity{User: alice}, Limit: 1048576, Sensor: clientquota.SensorKey{User: "alice"}}, m)
	m, ok = s.ClientQuota(clientquota.Produce, "bob", "x")
	require.True(t, ok)
	require.Equal(t, 100.0, m.Limit)
	_, ok = s.ClientQuota(clientquota.Fetch, "bob", "x")
	require.False(t, ok)
	// The scram code still reads the user nodes (alice's empty parent
	// included).
	_, ok = s.ScramCredential("alice", 1)
	require.True(t, ok)
	require.ElementsMatch(t, []string{"alice", "bob"}, s.ScramUsers())

	// Removing a quota (Kafka writes the node without the key).
	write("/config/users/alice", `{"version":1,"config":{"SCRAM-SHA-256":"salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"}}`, "users/alice")
	delete(want, clientquota.Entity{User: alice})
	waitQuotas(t, c, want)
}

// TestUpdateEntityConfigKeepsOtherKeys: a quota write changes its keys
// only, and stores what Kafka stores.
func TestUpdateEntityConfigKeepsOtherKeys(t *testing.T) {
	c, st := startQuotaCache(t)
	ctx := t.Context()
	const cred = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"
	_, err := metadata.WriteEntityConfig(ctx, st, metadata.ConfigUsers, "alice", map[string]string{"SCRAM-SHA-256": cred})
	require.NoError(t, err)
	p, err := metadata.UpdateEntityConfig(ctx, st, metadata.ConfigUsers, "alice", func(cfg map[string]string) error {
		cfg["producer_byte_rate"] = "1048576"
		return nil
	})
	require.NoError(t, err)
	data, _, err := st.Get(ctx, p)
	require.NoError(t, err)
	require.JSONEq(t, `{"version":2,"entity_path":"users/alice"}`, string(data))
	data, _, err = st.Get(ctx, "/config/users/alice")
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"config":{"SCRAM-SHA-256":"`+cred+`","producer_byte_rate":"1048576"}}`, string(data))

	p, err = metadata.UpdateEntityConfig(ctx, st, metadata.ConfigUsers, "<default>/clients/app", func(cfg map[string]string) error {
		cfg["request_percentage"] = "200.0"
		return nil
	})
	require.NoError(t, err)
	data, _, err = st.Get(ctx, p)
	require.NoError(t, err)
	require.JSONEq(t, `{"version":2,"entity_path":"users/<default>/clients/app"}`, string(data))
	data, _, err = st.Get(ctx, "/config/users/<default>/clients/app")
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"config":{"request_percentage":"200.0"}}`, string(data))

	waitQuotas(t, c, clientquota.Quotas{
		{User: clientquota.Named("alice")}:                            {"producer_byte_rate": 1048576},
		{User: clientquota.Default, Client: clientquota.Named("app")}: {"request_percentage": 200},
	})
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, c.WaitFor(wctx, func(s *Snapshot) bool { _, ok := s.ScramCredential("alice", 1); return ok }))
}
