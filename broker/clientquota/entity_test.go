package clientquota

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResolveOrder removes the levels one by one, most specific first,
// and checks the next one is chosen with its sensor key.
func TestResolveOrder(t *testing.T) {
	levels := []struct {
		e      Entity
		sensor SensorKey
	}{
		{Entity{User: Named("alice"), Client: Named("app")}, SensorKey{"alice", "app"}},
		{Entity{User: Named("alice"), Client: Default}, SensorKey{"alice", "app"}},
		{Entity{User: Named("alice")}, SensorKey{"alice", ""}},
		{Entity{User: Default, Client: Named("app")}, SensorKey{"alice", "app"}},
		{Entity{User: Default, Client: Default}, SensorKey{"alice", "app"}},
		{Entity{User: Default}, SensorKey{"alice", ""}},
		{Entity{Client: Named("app")}, SensorKey{"", "app"}},
		{Entity{Client: Default}, SensorKey{"", "app"}},
	}
	q := Quotas{
		// Entities of other users and clients never match.
		{User: Named("bob")}:                        {ProducerByteRate: 1},
		{User: Named("alice"), Client: Named("x")}:  {ProducerByteRate: 1},
		{User: Default, Client: Named("x")}:         {ProducerByteRate: 1},
		{Client: Named("x")}:                        {ProducerByteRate: 1},
		{User: Named("alice"), Client: Named("ap")}: {ProducerByteRate: 1},
	}
	for i, l := range levels {
		q[l.e] = Values{ProducerByteRate: float64(100 + i), ConsumerByteRate: 7}
	}
	for i, l := range levels {
		t.Run(l.e.String(), func(t *testing.T) {
			m, ok := q.Resolve(Produce, "alice", "app")
			require.True(t, ok)
			require.Equal(t, Match{Entity: l.e, Limit: float64(100 + i), Sensor: l.sensor}, m)
		})
		delete(q, l.e)
	}
	_, ok := q.Resolve(Produce, "alice", "app")
	require.False(t, ok)
}

func TestResolvePerType(t *testing.T) {
	q := Quotas{
		{User: Named("alice"), Client: Named("app")}: {ConsumerByteRate: 10},
		{User: Named("alice")}:                       {ProducerByteRate: 20},
		{Client: Default}:                            {RequestPercentage: 30, ProducerByteRate: 40},
	}
	tests := []struct {
		t      Type
		user   string
		client string
		want   Match
		ok     bool
	}{
		{Fetch, "alice", "app", Match{Entity{User: Named("alice"), Client: Named("app")}, 10, SensorKey{"alice", "app"}}, true},
		{Produce, "alice", "app", Match{Entity{User: Named("alice")}, 20, SensorKey{"alice", ""}}, true},
		{Request, "alice", "app", Match{Entity{Client: Default}, 30, SensorKey{"", "app"}}, true},
		{Produce, "bob", "", Match{Entity{Client: Default}, 40, SensorKey{"", ""}}, true},
		{Fetch, "bob", "app", Match{}, false},
		{ControllerMutation, "alice", "app", Match{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.t.String()+"/"+tt.user+"/"+tt.client, func(t *testing.T) {
			got, ok := q.Resolve(tt.t, tt.user, tt.client)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
	require.True(t, q.Has(Request))
	require.False(t, q.Has(ControllerMutation))
}

func TestPath(t *testing.T) {
	tests := []struct {
		e          Entity
		typ, name  string
		kafkaNames string
	}{
		{Entity{User: Named("alice")}, "users", "alice", "user-principal 'alice'"},
		{Entity{User: Named("alice"), Client: Named("app")}, "users", "alice/clients/app", "user-principal 'alice', client-id 'app'"},
		{Entity{User: Named("alice"), Client: Default}, "users", "alice/clients/<default>", "user-principal 'alice', the default client-id"},
		{Entity{User: Default}, "users", "<default>", "the default user-principal"},
		{Entity{User: Default, Client: Named("app")}, "users", "<default>/clients/app", "the default user-principal, client-id 'app'"},
		{Entity{User: Default, Client: Default}, "users", "<default>/clients/<default>", "the default user-principal, the default client-id"},
		{Entity{Client: Named("app")}, "clients", "app", "client-id 'app'"},
		{Entity{Client: Default}, "clients", "<default>", "the default client-id"},
		// Kafka's Sanitizer: URL-encoding, with '*' and ' ' escaped.
		{Entity{User: Named("CN=a b,O=*"), Client: Named("my/app")}, "users", "CN%3Da%20b%2CO%3D%2A/clients/my%2Fapp", "user-principal 'CN=a b,O=*', client-id 'my/app'"},
		{Entity{User: Named("<default>")}, "users", "%3Cdefault%3E", "user-principal '<default>'"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.name, func(t *testing.T) {
			typ, name := tt.e.Path()
			require.Equal(t, tt.typ, typ)
			require.Equal(t, tt.name, name)
			back, err := ParsePath(typ, name)
			require.NoError(t, err)
			require.Equal(t, tt.e, back)
			require.Equal(t, tt.kafkaNames, tt.e.String())
			require.NoError(t, tt.e.Valid())
		})
	}
	for _, bad := range [][2]string{
		{"users", "alice/clients"}, {"users", "alice/topics/x"}, {"users", "a/clients/b/c"},
		{"clients", "a/b"}, {"topics", "x"}, {"users", ""}, {"users", "%zz"},
	} {
		_, err := ParsePath(bad[0], bad[1])
		require.ErrorIs(t, err, ErrInvalidEntity, "%s/%s", bad[0], bad[1])
	}
	require.ErrorIs(t, Entity{}.Valid(), ErrInvalidEntity)
	require.ErrorIs(t, Entity{User: Named("")}.Valid(), ErrInvalidEntity)
	require.ErrorIs(t, Entity{User: Default, Client: Named("")}.Valid(), ErrInvalidEntity)
}

func TestCheckValue(t *testing.T) {
	tests := []struct {
		key  string
		v    float64
		want string
		ok   bool
	}{
		{ProducerByteRate, 1048576, "1048576", true},
		{ConsumerByteRate, 2097152.0000001, "2097152", true},
		{ProducerByteRate, 1.5, "", false},
		{ProducerByteRate, 0, "0", true},
		{ProducerByteRate, -1, "", false},
		{ProducerByteRate, 1e300, "9223372036854775807", true},
		{RequestPercentage, 12.5, "12.5", true},
		{RequestPercentage, 200, "200.0", true},
		{ControllerMutationRate, 10, "10.0", true},
		{"SCRAM-SHA-256", 1, "", false},
		{"retention.ms", 1, "", false},
	}
	for _, tt := range tests {
		got, err := CheckValue(tt.key, tt.v)
		if !tt.ok {
			require.ErrorIs(t, err, ErrInvalidValue, "%s=%v", tt.key, tt.v)
			continue
		}
		require.NoError(t, err, "%s=%v", tt.key, tt.v)
		require.Equal(t, tt.want, got)
	}
}

func TestParseValues(t *testing.T) {
	vals, bad := ParseValues(map[string]string{
		ProducerByteRate:  "1048576",
		RequestPercentage: "12.5",
		ConsumerByteRate:  "fast",
		"SCRAM-SHA-256":   "salt=...,stored_key=...,server_key=...,iterations=4096",
	})
	require.Equal(t, Values{ProducerByteRate: 1048576, RequestPercentage: 12.5}, vals)
	require.Equal(t, []string{ConsumerByteRate}, bad)
	vals, bad = ParseValues(map[string]string{"SCRAM-SHA-512": "x"})
	require.Nil(t, vals)
	require.Nil(t, bad)
}

func TestDescribe(t *testing.T) {
	alice, app := Named("alice"), Named("app")
	q := Quotas{
		{User: alice}:                  {ProducerByteRate: 1},
		{User: alice, Client: app}:     {ProducerByteRate: 2},
		{User: alice, Client: Default}: {ProducerByteRate: 3},
		{User: Default}:                {ProducerByteRate: 4},
		{User: Default, Client: app}:   {ProducerByteRate: 5},
		{Client: app}:                  {ProducerByteRate: 6},
		{Client: Default}:              {ProducerByteRate: 7},
		{User: Named("bob")}:           {}, // only SCRAM keys: not a quota entity
	}
	exact := func(p Part) *Filter { return &Filter{Part: p} }
	anyPart := &Filter{Any: true}
	tests := []struct {
		name         string
		user, client *Filter
		strict       bool
		want         []Entity
	}{
		{"everything", nil, nil, false, []Entity{{User: alice}, {User: alice, Client: app}, {User: alice, Client: Default},
			{User: Default}, {User: Default, Client: app}, {Client: app}, {Client: Default}}},
		{"no components, strict: nothing", nil, nil, true, nil},
		{"user exact, strict", exact(alice), nil, true, []Entity{{User: alice}}},
		{"user exact, not strict", exact(alice), nil, false, []Entity{{User: alice}, {User: alice, Client: app}, {User: alice, Client: Default}}},
		{"default user, strict", exact(Default), nil, true, []Entity{{User: Default}}},
		{"any user, strict", anyPart, nil, true, []Entity{{User: alice}, {User: Default}}},
		{"any user and client", anyPart, anyPart, true, []Entity{{User: alice, Client: app}, {User: alice, Client: Default}, {User: Default, Client: app}}},
		{"client exact, strict", nil, exact(app), true, []Entity{{Client: app}}},
		{"client exact, not strict", nil, exact(app), false, []Entity{{User: alice, Client: app}, {User: Default, Client: app}, {Client: app}}},
		{"default client, strict", nil, exact(Default), true, []Entity{{Client: Default}}},
		{"user and client exact", exact(alice), exact(app), true, []Entity{{User: alice, Client: app}}},
		{"unknown user", exact(Named("carol")), nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, q.Describe(tt.user, tt.client, tt.strict))
		})
	}
}
