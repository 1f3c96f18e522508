package acl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		op       Operation
		enum, zk string
	}{
		{All, "ALL", "All"},
		{Read, "READ", "Read"},
		{DescribeConfigs, "DESCRIBE_CONFIGS", "DescribeConfigs"},
		{IdempotentWrite, "IDEMPOTENT_WRITE", "IdempotentWrite"},
		{ClusterAction, "CLUSTER_ACTION", "ClusterAction"},
		{DescribeTokens, "DESCRIBE_TOKENS", "DescribeTokens"},
	} {
		require.Equal(t, tc.enum, tc.op.String())
		require.Equal(t, tc.zk, tc.op.ZKName())
		require.Equal(t, tc.op, ParseOperation(tc.zk))
		require.Equal(t, tc.op, ParseOperation(tc.enum))
	}
	require.Equal(t, OpUnknown, ParseOperation("describeconfigs"), "Kafka upper-cases: DESCRIBECONFIGS is unknown")
	require.Equal(t, Read, ParseOperation("read"))
	require.Equal(t, "TransactionalId", TransactionalID.ZKName())
	require.Equal(t, "DelegationToken", DelegationToken.ZKName())
	require.Equal(t, "TRANSACTIONAL_ID", TransactionalID.String())
	require.Equal(t, TransactionalID, ParseResourceType("TransactionalId"))
	require.Equal(t, TransactionalID, ParseResourceType("transactional_id"))
	require.Equal(t, ResourceUnknown, ParseResourceType("Topics"))
	require.Equal(t, "Allow", Allow.ZKName())
	require.Equal(t, Deny, ParsePermission("DENY"))
	require.Equal(t, Prefixed, ParsePatternType("prefixed"))
	require.Equal(t, PatternMatch, ParsePatternType("MATCH"))
	require.Equal(t, "ResourcePattern(resourceType=TOPIC, name=t1, patternType=LITERAL)", Resource{Topic, "t1", Literal}.String())
	require.Equal(t, "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)", Entry{"User:alice", "*", Read, Allow}.String())
}

func TestPaths(t *testing.T) {
	require.Equal(t, "/kafka-acl/Topic/orders", Resource{Topic, "orders", Literal}.Path())
	require.Equal(t, "/kafka-acl/Cluster/kafka-cluster", Resource{Cluster, ClusterName, Literal}.Path())
	require.Equal(t, "/kafka-acl/TransactionalId/tx", Resource{TransactionalID, "tx", Literal}.Path())
	require.Equal(t, "/kafka-acl-extended/prefixed/Group/app-", Resource{Group, "app-", Prefixed}.Path())
	require.Equal(t, []string{
		"/kafka-acl", "/kafka-acl/Topic", "/kafka-acl/Group", "/kafka-acl/Cluster", "/kafka-acl/TransactionalId",
		"/kafka-acl/DelegationToken", "/kafka-acl/User",
		"/kafka-acl-extended/prefixed", "/kafka-acl-extended/prefixed/Topic", "/kafka-acl-extended/prefixed/Group",
		"/kafka-acl-extended/prefixed/Cluster", "/kafka-acl-extended/prefixed/TransactionalId",
		"/kafka-acl-extended/prefixed/DelegationToken", "/kafka-acl-extended/prefixed/User",
		"/kafka-acl-changes", "/kafka-acl-extended-changes",
	}, Paths())
}

// Bytes as Kafka's AclAuthorizer writes them (Jackson, AclEntry.toMap
// order) and as it reads them.
func TestEntriesJSON(t *testing.T) {
	entries := []Entry{
		{"User:alice", "*", Read, Allow},
		{"User:bob", "10.0.0.1", DescribeConfigs, Deny},
		{"User:*", "*", All, Allow},
		{"User:c<&>", "*", IdempotentWrite, Allow},
	}
	got := MarshalEntries(entries)
	require.Equal(t, `{"version":1,"acls":[`+
		`{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},`+
		`{"principal":"User:bob","permissionType":"Deny","operation":"DescribeConfigs","host":"10.0.0.1"},`+
		`{"principal":"User:*","permissionType":"Allow","operation":"All","host":"*"},`+
		`{"principal":"User:c<&>","permissionType":"Allow","operation":"IdempotentWrite","host":"*"}]}`, string(got))
	back, err := UnmarshalEntries(got)
	require.NoError(t, err)
	require.ElementsMatch(t, entries, back)
	require.Equal(t, `{"version":1,"acls":[]}`, string(MarshalEntries(nil)))

	for name, tc := range map[string]struct {
		data string
		want []Entry
		err  bool
	}{
		"kafka doc example, spaces, other order": {data: `{"version": 1, "acls": [ { "host":"host1", "permissionType": "Deny","operation": "Read","principal": "User:alice"}]}`,
			want: []Entry{{"User:alice", "host1", Read, Deny}}},
		"enum names":    {data: `{"version":1,"acls":[{"principal":"User:a","permissionType":"ALLOW","operation":"ALTER_CONFIGS","host":"*"}]}`, want: []Entry{{"User:a", "*", AlterConfigs, Allow}}},
		"duplicates":    {data: `{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Read","host":"*"},{"principal":"User:a","permissionType":"Allow","operation":"Read","host":"*"}]}`, want: []Entry{{"User:a", "*", Read, Allow}}},
		"empty":         {data: ``},
		"version 2":     {data: `{"version":2,"acls":[]}`, err: true},
		"no version":    {data: `{"acls":[]}`, err: true},
		"bad operation": {data: `{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Fly","host":"*"}]}`, err: true},
		"bad principal": {data: `{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","operation":"Read","host":"*"}]}`, err: true},
		"not json":      {data: `{`, err: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := UnmarshalEntries([]byte(tc.data))
			if tc.err {
				require.ErrorIs(t, err, ErrMalformed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestChangeNotification(t *testing.T) {
	p, d := ChangeNotification(Resource{Topic, "orders", Literal})
	require.Equal(t, "/kafka-acl-changes/acl_changes_", p)
	require.Equal(t, "TOPIC:orders", string(d))
	p, d = ChangeNotification(Resource{TransactionalID, "tx:1", Literal})
	require.Equal(t, "TRANSACTIONAL_ID:tx:1", string(d))
	r, err := ParseChangeNotification(LiteralChangesPath, d)
	require.NoError(t, err)
	require.Equal(t, Resource{TransactionalID, "tx:1", Literal}, r)
	p, d = ChangeNotification(Resource{Group, "app-", Prefixed})
	require.Equal(t, "/kafka-acl-extended-changes/acl_changes_", p)
	require.Equal(t, `{"version":1,"resourceType":"GROUP","name":"app-","patternType":"PREFIXED"}`, string(d))
	r, err = ParseChangeNotification(ExtendedChangesPath, d)
	require.NoError(t, err)
	require.Equal(t, Resource{Group, "app-", Prefixed}, r)

	// What older Kafkas wrote (kafka.security.auth.Resource names).
	r, err = ParseChangeNotification(LiteralChangesPath, []byte("Topic:t1"))
	require.NoError(t, err)
	require.Equal(t, Resource{Topic, "t1", Literal}, r)
	for _, bad := range []string{"t1", "Fly:t1", ""} {
		_, err = ParseChangeNotification(LiteralChangesPath, []byte(bad))
		require.ErrorIs(t, err, ErrMalformed, bad)
	}
	_, err = ParseChangeNotification(ExtendedChangesPath, []byte(`{"version":1,"resourceType":"TOPIC","name":"x","patternType":"LITERALLY"}`))
	require.ErrorIs(t, err, ErrMalformed)
}

func ptr(s string) *string { return &s }

func TestSet(t *testing.T) {
	var s *Set
	require.Equal(t, 0, s.Len())
	a := Entry{"User:a", "*", Read, Allow}
	b := Entry{"User:b", "*", Write, Deny}
	s = s.With(map[Resource][]Entry{
		{Topic, "t1", Literal}:      {b, a, a},
		{Topic, "t", Prefixed}:      {a},
		{Group, "g", Literal}:       {a},
		{Topic, "x", Literal}:       nil,
		{ResourceAny, "x", Literal}: {a},
	})
	require.Equal(t, 4, s.Len())
	require.Equal(t, []Entry{a, b}, s.Entries(Resource{Topic, "t1", Literal}))
	require.Equal(t, []Resource{{Topic, "t1", Literal}, {Topic, "t", Prefixed}, {Group, "g", Literal}}, s.Resources())
	s2 := s.With(map[Resource][]Entry{{Topic, "t1", Literal}: nil})
	require.Equal(t, 2, s2.Len())
	require.Equal(t, 4, s.Len(), "the old set is unchanged")
	require.Nil(t, s2.Entries(Resource{Topic, "t1", Literal}))
	require.Len(t, s.Entries(Resource{Topic, "t1", Literal}), 2)
}

func TestFilter(t *testing.T) {
	a := Entry{"User:a", "*", Read, Allow}
	d := Entry{"User:b", "1.2.3.4", Write, Deny}
	s := (*Set)(nil).With(map[Resource][]Entry{
		{Topic, "orders", Literal}:      {a, d},
		{Topic, "*", Literal}:           {a},
		{Topic, "ord", Prefixed}:        {a},
		{Topic, "orders", Prefixed}:     {a},
		{Topic, "other", Literal}:       {a},
		{Group, "orders", Literal}:      {a},
		{Cluster, ClusterName, Literal}: {d},
	})
	res := func(bs []Binding) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.Resource.Type.String()+"/"+b.Resource.Pattern.String()+"/"+b.Resource.Name+" "+b.Entry.Principal)
		}
		return out
	}
	for name, tc := range map[string]struct {
		f    Filter
		want []string
	}{
		"everything": {Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny},
			[]string{"TOPIC/LITERAL/* User:a", "TOPIC/LITERAL/orders User:a", "TOPIC/LITERAL/orders User:b", "TOPIC/LITERAL/other User:a",
				"TOPIC/PREFIXED/ord User:a", "TOPIC/PREFIXED/orders User:a", "GROUP/LITERAL/orders User:a", "CLUSTER/LITERAL/kafka-cluster User:b"}},
		"literal orders": {Filter{Type: Topic, Name: ptr("orders"), Pattern: Literal, Operation: OpAny, Permission: PermissionAny},
			[]string{"TOPIC/LITERAL/orders User:a", "TOPIC/LITERAL/orders User:b"}},
		"any orders": {Filter{Type: Topic, Name: ptr("orders"), Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny},
			[]string{"TOPIC/LITERAL/orders User:a", "TOPIC/LITERAL/orders User:b", "TOPIC/PREFIXED/orders User:a"}},
		"match orders": {Filter{Type: Topic, Name: ptr("orders"), Pattern: PatternMatch, Operation: OpAny, Permission: PermissionAny},
			[]string{"TOPIC/LITERAL/* User:a", "TOPIC/LITERAL/orders User:a", "TOPIC/LITERAL/orders User:b", "TOPIC/PREFIXED/ord User:a", "TOPIC/PREFIXED/orders User:a"}},
		"match ordinal": {Filter{Type: Topic, Name: ptr("ordinal"), Pattern: PatternMatch, Operation: OpAny, Permission: PermissionAny},
			[]string{"TOPIC/LITERAL/* User:a", "TOPIC/PREFIXED/ord User:a"}},
		"prefixed, no name": {Filter{Type: Topic, Pattern: Prefixed, Operation: OpAny, Permission: PermissionAny},
			[]string{"TOPIC/PREFIXED/ord User:a", "TOPIC/PREFIXED/orders User:a"}},
		"principal b, deny": {Filter{Type: ResourceAny, Pattern: PatternAny, Principal: ptr("User:b"), Operation: OpAny, Permission: Deny},
			[]string{"TOPIC/LITERAL/orders User:b", "CLUSTER/LITERAL/kafka-cluster User:b"}},
		"host exact": {Filter{Type: ResourceAny, Pattern: PatternAny, Host: ptr("1.2.3.4"), Operation: Write, Permission: PermissionAny},
			[]string{"TOPIC/LITERAL/orders User:b", "CLUSTER/LITERAL/kafka-cluster User:b"}},
		"principal wildcard is not expanded": {Filter{Type: ResourceAny, Pattern: PatternAny, Principal: ptr("User:*"), Operation: OpAny, Permission: PermissionAny}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, tc.f.Validate())
			require.Equal(t, tc.want, res(s.Bindings(tc.f)))
		})
	}
	require.Error(t, Filter{Type: ResourceUnknown, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}.Validate())
	require.Error(t, Filter{Type: ResourceAny, Pattern: PatternUnknown, Operation: OpAny, Permission: PermissionAny}.Validate())
	require.Error(t, Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpUnknown, Permission: PermissionAny}.Validate())
	require.Equal(t, []Resource{{Topic, "x", Literal}, {Topic, "x", Prefixed}}, Filter{Type: Topic, Name: ptr("x"), Pattern: PatternAny}.Resources())
	require.Nil(t, Filter{Type: Topic, Name: ptr("x"), Pattern: PatternMatch}.Resources())
	require.Nil(t, Filter{Type: ResourceAny, Name: ptr("x"), Pattern: Literal}.Resources())
}

func TestValidate(t *testing.T) {
	ok := Binding{Resource{Topic, "t", Literal}, Entry{"User:a", "*", Read, Allow}}
	require.NoError(t, Validate(ok))
	for name, tc := range map[string]struct {
		change func(*Binding)
		msg    string
	}{
		"any type":       {func(b *Binding) { b.Resource.Type = ResourceAny }, "Invalid resourceType ANY"},
		"unknown type":   {func(b *Binding) { b.Resource.Type = 42 }, "Invalid resourceType UNKNOWN"},
		"match pattern":  {func(b *Binding) { b.Resource.Pattern = PatternMatch }, "Invalid patternType MATCH"},
		"any operation":  {func(b *Binding) { b.Entry.Operation = OpAny }, "Invalid operation ANY"},
		"any permission": {func(b *Binding) { b.Entry.Permission = PermissionAny }, "Invalid permissionType ANY"},
		"cluster name":   {func(b *Binding) { b.Resource = Resource{Cluster, "c", Literal} }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		"empty name":     {func(b *Binding) { b.Resource.Name = "" }, "Invalid empty resource name"},
		"slash":          {func(b *Binding) { b.Resource.Name = "a/b" }, "ACL binding contains invalid resource name: a/b"},
		"principal":      {func(b *Binding) { b.Entry.Principal = "*" }, "Could not parse principal from `*` (no colon is present separating the principal type from the principal name)"},
	} {
		t.Run(name, func(t *testing.T) {
			b := ok
			tc.change(&b)
			err := Validate(b)
			var ie *InvalidError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, tc.msg, ie.Msg)
		})
	}
}
