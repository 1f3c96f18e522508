//go:build linux && integration

package broker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
)

// ACLs end to end: created through kadm on one broker, in ZooKeeper's
// bytes as Kafka writes them, seen by every broker's DescribeAcls and
// cache, deleted, and kept over a restart.
func TestACLs(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		b := brokertest.StartBroker(t, brokertest.WithAuthorizer())
		testACLs(t, []*brokertest.Broker{b})
	})
	t.Run("cluster", func(t *testing.T) {
		c := brokertest.StartCluster(t, 3, brokertest.WithAuthorizer())
		testACLs(t, c.Brokers)
	})
}

func testACLs(t *testing.T, brokers []*brokertest.Broker) {
	ctx := testCtx(t)
	first, last := brokers[0], brokers[len(brokers)-1]
	adm := newAdmin(t, first.Addr)

	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead))
	require.NoError(t, err)
	require.NoError(t, firstCreateErr(created))
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Topics("pay").ResourcePatternType(kadm.ACLPatternPrefixed).
		Deny("User:bob").DenyHosts("10.0.0.1").Operations(kadm.OpWrite))
	require.NoError(t, err)
	require.NoError(t, firstCreateErr(created))
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Clusters().Allow("User:alice").Operations(kadm.OpIdempotentWrite))
	require.NoError(t, err)
	require.NoError(t, firstCreateErr(created))

	// The nodes, byte for byte what Kafka's AclAuthorizer writes.
	st := first.MetadataStore()
	for path, want := range map[string]string{
		"/kafka-acl/Topic/orders":                `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`,
		"/kafka-acl-extended/prefixed/Topic/pay": `{"version":1,"acls":[{"principal":"User:bob","permissionType":"Deny","operation":"Write","host":"10.0.0.1"}]}`,
		"/kafka-acl/Cluster/kafka-cluster":       `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"IdempotentWrite","host":"*"}]}`,
	} {
		data, _, err := st.Get(ctx, path)
		require.NoError(t, err, path)
		require.Equal(t, want, string(data), path)
	}
	require.ElementsMatch(t, []string{"TOPIC:orders", "CLUSTER:kafka-cluster"}, changeData(t, st, acl.LiteralChangesPath))
	require.Equal(t, []string{`{"version":1,"resourceType":"TOPIC","name":"pay","patternType":"PREFIXED"}`}, changeData(t, st, acl.ExtendedChangesPath))
	for _, p := range acl.Paths() {
		_, ok, err := st.Exists(ctx, p)
		require.NoError(t, err)
		require.True(t, ok, p)
	}

	// Every broker answers DescribeAcls with them, within seconds. The
	// client learns every broker first (Broker(id) needs it).
	var addrs []string
	for _, b := range brokers {
		addrs = append(addrs, b.Addr)
	}
	cl := newClient(t, addrs)
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	require.NoError(t, err)
	describe := func(b *brokertest.Broker) []string {
		resp := describeFilter(t, cl, b, kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny)
		var out []string
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				out = append(out, acl.Binding{
					Resource: acl.Resource{Type: acl.ResourceType(r.ResourceType), Name: r.ResourceName, Pattern: acl.PatternType(r.ResourcePatternType)},
					Entry:    acl.Entry{Principal: a.Principal, Host: a.Host, Operation: acl.Operation(a.Operation), Permission: acl.Permission(a.PermissionType)},
				}.String())
			}
		}
		return out
	}
	want := []string{
		"ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL) (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
		"ResourcePattern(resourceType=TOPIC, name=pay, patternType=PREFIXED) (principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY)",
		"ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL) (principal=User:alice, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)",
	}
	require.Equal(t, want, describe(first), "the writing broker sees its change at once")
	for _, b := range brokers {
		waitFor(t, 10*time.Second, b.String()+" describing the acls", func() bool { return slices.Equal(describe(b), want) })
	}
	az := &acl.Authorizer{}
	ok, _ := az.Authorize(last.Cache().Snapshot().ACLs(), "User:alice", "10.1.1.1", acl.Describe, acl.Topic, "orders")
	require.True(t, ok, "read implies describe, in the last broker's cache")

	// Validation and filters.
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Groups("a/b").Allow("User:alice").Operations(kadm.OpRead))
	require.NoError(t, err)
	require.ErrorIs(t, firstCreateErr(created), kerr.InvalidRequest)
	payments := "payments"
	resp := describeFilter(t, cl, last, kmsg.ACLResourceTypeTopic, &payments, kmsg.ACLResourcePatternTypeMatch)
	require.Len(t, resp.Resources, 1)
	require.Equal(t, "pay", resp.Resources[0].ResourceName)

	// Delete from the last broker; the node goes with its last ACL.
	deleted, err := newAdmin(t, last.Addr).DeleteACLs(ctx, kadm.NewACLs().Topics("orders").Allow().AllowHosts().Operations(kadm.OpAny))
	require.NoError(t, err)
	var n int
	for _, d := range deleted {
		require.NoError(t, d.Err)
		n += len(d.Deleted)
	}
	require.Equal(t, 1, n)
	_, ok, err = st.Exists(ctx, "/kafka-acl/Topic/orders")
	require.NoError(t, err)
	require.False(t, ok)
	for _, b := range brokers {
		waitFor(t, 10*time.Second, b.String()+" forgetting the acl", func() bool { return len(describe(b)) == 2 })
	}

	// A restart reads them back.
	last.Restart()
	cl = newClient(t, []string{last.Addr})
	require.Equal(t, want[1:], describe(last))
}

func firstCreateErr(rs kadm.CreateACLsResults) error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

func changeData(t *testing.T, st metadata.Store, parent string) []string {
	t.Helper()
	names, _, err := st.Children(testCtx(t), parent)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		require.Regexp(t, `^acl_changes_\d{10}$`, n)
		data, _, err := st.Get(testCtx(t), parent+"/"+n)
		require.NoError(t, err)
		out = append(out, string(data))
	}
	return out
}

// describeFilter sends DescribeAcls to broker b.
func describeFilter(t *testing.T, cl *kgo.Client, b *brokertest.Broker, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType) *kmsg.DescribeACLsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = rt, name, pt
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(b.ID)))
	require.NoError(t, err)
	require.Zero(t, resp.ErrorCode)
	return resp
}

// Without an authorizer the ACL APIs answer SECURITY_DISABLED, as Kafka.
func TestACLsSecurityDisabled(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny))
	require.NoError(t, err)
	require.NotEmpty(t, described)
	require.ErrorIs(t, described[0].Err, kerr.SecurityDisabled)
	require.Equal(t, "No Authorizer is configured on the broker", described[0].ErrMessage)
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpRead))
	require.NoError(t, err)
	require.ErrorIs(t, firstCreateErr(created), kerr.SecurityDisabled)
	_, ok, err := b.MetadataStore().Exists(ctx, acl.LiteralPath)
	require.NoError(t, err)
	require.False(t, ok, "no /kafka-acl without an authorizer, as Kafka")
}
