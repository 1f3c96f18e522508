package acl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAuthorize(t *testing.T) {
	const alice, bob, carol = "User:alice", "User:bob", "User:carol"
	set := (*Set)(nil).With(map[Resource][]Entry{
		{Topic, "orders", Literal}: {
			{alice, "*", Read, Allow},
			{bob, "*", All, Allow},
			{bob, "10.0.0.9", Write, Deny},
		},
		{Topic, "*", Literal}:            {{carol, "*", Describe, Allow}},
		{Topic, "pay", Prefixed}:         {{alice, "*", Write, Allow}},
		{Topic, "payroll", Prefixed}:     {{alice, "*", Write, Deny}},
		{Topic, "pub-", Prefixed}:        {{WildcardPrincipal, "*", Read, Allow}},
		{Topic, "pub-secret", Literal}:   {{WildcardPrincipal, "*", All, Deny}},
		{Group, "g", Literal}:            {{alice, "10.0.0.1", Read, Allow}},
		{Cluster, ClusterName, Literal}:  {{alice, "*", AlterConfigs, Allow}, {alice, "*", Alter, Allow}},
		{TransactionalID, "tx", Literal}: {{alice, "*", Delete, Allow}},
	})
	az := &Authorizer{SuperUsers: map[string]bool{"User:admin": true}}
	open := &Authorizer{AllowEveryoneIfNoACLFound: true}
	for name, tc := range map[string]struct {
		az        *Authorizer
		principal string
		host      string
		op        Operation
		t         ResourceType
		res       string
		allowed   bool
		reason    Reason
	}{
		"literal allow":                          {az, alice, "1.1.1.1", Read, Topic, "orders", true, ReasonAllowACL},
		"other op":                               {az, alice, "1.1.1.1", Write, Topic, "orders", false, ReasonNoAllowACL},
		"read implies describe":                  {az, alice, "1.1.1.1", Describe, Topic, "orders", true, ReasonAllowACL},
		"read does not imply alter":              {az, alice, "1.1.1.1", Alter, Topic, "orders", false, ReasonNoAllowACL},
		"all allows anything":                    {az, bob, "1.1.1.1", Delete, Topic, "orders", true, ReasonAllowACL},
		"deny wins on its host":                  {az, bob, "10.0.0.9", Write, Topic, "orders", false, ReasonDenyACL},
		"deny is for write only":                 {az, bob, "10.0.0.9", Read, Topic, "orders", true, ReasonAllowACL},
		"deny write not describe":                {az, bob, "10.0.0.9", Describe, Topic, "orders", true, ReasonAllowACL},
		"wildcard resource":                      {az, carol, "1.1.1.1", Describe, Topic, "anything", true, ReasonAllowACL},
		"wildcard resource, other op":            {az, carol, "1.1.1.1", Read, Topic, "anything", false, ReasonNoAllowACL},
		"prefixed allow":                         {az, alice, "1.1.1.1", Write, Topic, "payments", true, ReasonAllowACL},
		"prefix implies describe":                {az, alice, "1.1.1.1", Describe, Topic, "payments", true, ReasonAllowACL},
		"longer prefixed deny wins":              {az, alice, "1.1.1.1", Write, Topic, "payroll-2024", false, ReasonDenyACL},
		"prefix is not the name":                 {az, alice, "1.1.1.1", Write, Topic, "pa", false, ReasonNoAllowACL},
		"prefix equals name":                     {az, alice, "1.1.1.1", Write, Topic, "pay", true, ReasonAllowACL},
		"wildcard principal":                     {az, "User:zed", "1.1.1.1", Read, Topic, "pub-news", true, ReasonAllowACL},
		"literal deny over prefix allow":         {az, "User:zed", "1.1.1.1", Read, Topic, "pub-secret", false, ReasonDenyACL},
		"deny all denies describe":               {az, alice, "1.1.1.1", Describe, Topic, "pub-secret", false, ReasonDenyACL},
		"host must match":                        {az, alice, "10.0.0.2", Read, Group, "g", false, ReasonNoAllowACL},
		"host matches":                           {az, alice, "10.0.0.1", Read, Group, "g", true, ReasonAllowACL},
		"alter configs implies describe configs": {az, alice, "1.1.1.1", DescribeConfigs, Cluster, ClusterName, true, ReasonAllowACL},
		"alter implies describe":                 {az, alice, "1.1.1.1", Describe, Cluster, ClusterName, true, ReasonAllowACL},
		"describe configs implies nothing":       {az, alice, "1.1.1.1", AlterConfigs, Topic, "orders", false, ReasonNoAllowACL},
		"delete implies describe":                {az, alice, "1.1.1.1", Describe, TransactionalID, "tx", true, ReasonAllowACL},
		"other type same name":                   {az, alice, "1.1.1.1", Read, Group, "orders", false, ReasonNoAllowACL},
		"super user":                             {az, "User:admin", "1.1.1.1", Write, Topic, "payroll-x", true, ReasonSuperUser},
		"super user over deny":                   {az, "User:admin", "1.1.1.1", Read, Topic, "pub-secret", true, ReasonSuperUser},
		"no acl, closed":                         {az, alice, "1.1.1.1", Read, Group, "nothing", false, ReasonNoAllowACL},
		"no acl, allow everyone":                 {open, alice, "1.1.1.1", Read, Group, "nothing", true, ReasonNoACLAllowEveryone},
		// Kafka's rule: any ACL on the resource, whoever it names,
		// turns allow.everyone off for it.
		"acl for someone else, allow everyone": {open, carol, "1.1.1.1", Read, Group, "g", false, ReasonNoAllowACL},
		"wildcard acl counts, allow everyone":  {open, alice, "1.1.1.1", Read, Topic, "anything", false, ReasonNoAllowACL},
		"deny with allow everyone":             {open, bob, "10.0.0.9", Write, Topic, "orders", false, ReasonDenyACL},
		"no super users":                       {open, "User:admin", "1.1.1.1", Write, Topic, "orders", false, ReasonNoAllowACL},
	} {
		t.Run(name, func(t *testing.T) {
			allowed, reason := tc.az.Authorize(set, tc.principal, tc.host, tc.op, tc.t, tc.res)
			require.Equal(t, tc.allowed, allowed)
			require.Equal(t, tc.reason, reason, "reason %s", reason)
		})
	}
	ok, r := az.Authorize(nil, alice, "1.1.1.1", Read, Topic, "x")
	require.False(t, ok)
	require.Equal(t, ReasonNoAllowACL, r)
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers(" User:admin ; User:ops;")
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"User:admin": true, "User:ops": true}, got)
	_, err = ParseSuperUsers("admin")
	require.Error(t, err)
}

func BenchmarkAuthorize(b *testing.B) {
	changes := map[Resource][]Entry{}
	for i := range 1000 {
		name := "topic-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		changes[Resource{Topic, name, Literal}] = []Entry{{"User:alice", "*", Read, Allow}, {"User:bob", "*", Write, Allow}}
		changes[Resource{Topic, name[:8], Prefixed}] = []Entry{{"User:carol", "*", Read, Allow}}
	}
	s := (*Set)(nil).With(changes)
	az := &Authorizer{}
	b.ReportAllocs()
	for b.Loop() {
		az.Authorize(s, "User:carol", "10.0.0.1", Describe, Topic, "topic-qa")
	}
}
