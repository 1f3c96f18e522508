//go:build linux && integration

package broker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/clientquota"
)

// quotaEntries are the alterations of the cluster tests: one entity of
// each shape that matters to resolution.
var quotaEntries = []kadm.AlterClientQuotaEntry{
	{Entity: quotaEntity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{setQuota("producer_byte_rate", 1048576)}},
	{Entity: quotaEntity("user", "alice", "client-id", "app"), Ops: []kadm.AlterClientQuotaOp{setQuota("consumer_byte_rate", 2097152)}},
	{Entity: quotaEntity("user", "<default>", "client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{setQuota("request_percentage", 12.5)}},
	{Entity: quotaEntity("client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{setQuota("producer_byte_rate", 1000)}},
}

// describeOn describes every quota entity on broker id (not strict, no
// components: all of them).
func describeOn(t *testing.T, cl *kgo.Client, id int32) *kmsg.DescribeClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(id)))
	require.NoError(t, err)
	require.Zero(t, resp.ErrorCode)
	return resp
}

// quotasResolved reports whether a broker's cache resolves the quotas
// quotaEntries set.
func quotasResolved(b *brokertest.Broker) bool {
	s := b.Server.Cache().Snapshot()
	p, ok1 := s.ClientQuota(clientquota.Produce, "alice", "app")
	f, ok2 := s.ClientQuota(clientquota.Fetch, "alice", "app")
	r, ok3 := s.ClientQuota(clientquota.Request, "bob", "x")
	o, ok4 := s.ClientQuota(clientquota.Produce, "bob", "x")
	return ok1 && ok2 && ok3 && ok4 &&
		p == clientquota.Match{Entity: clientquota.Entity{User: clientquota.Named("alice")}, Limit: 1048576, Sensor: clientquota.SensorKey{User: "alice"}} &&
		f.Limit == 2097152 && f.Sensor == (clientquota.SensorKey{User: "alice", Client: "app"}) &&
		r.Limit == 12.5 && r.Sensor == (clientquota.SensorKey{User: "bob", Client: "x"}) &&
		o.Limit == 1000 && o.Sensor == (clientquota.SensorKey{Client: "x"})
}

func checkDescribed(t *testing.T, resp *kmsg.DescribeClientQuotasResponse) {
	t.Helper()
	require.Len(t, resp.Entries, 4)
	// Entity order: alice, alice/app, <default>/<default>, clients/<default>.
	e := resp.Entries[1]
	require.Equal(t, "user", e.Entity[0].Type)
	require.Equal(t, "alice", *e.Entity[0].Name)
	require.Equal(t, "client-id", e.Entity[1].Type)
	require.Equal(t, "app", *e.Entity[1].Name)
	require.Equal(t, "consumer_byte_rate", e.Values[0].Key)
	require.Equal(t, 2097152.0, e.Values[0].Value)
	require.Nil(t, resp.Entries[2].Entity[0].Name, "the default user")
	require.Equal(t, 12.5, resp.Entries[2].Values[0].Value)
}

func TestClientQuotasCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and restarts three brokers")
	}
	c := brokertest.StartCluster(t, 3)
	cl := newClient(t, []string{c.Brokers[0].Addr})
	adm := kadm.NewClient(cl)
	res, err := adm.AlterClientQuotas(testCtx(t), quotaEntries)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err, "%v", r.Entity)
	}
	// Any broker describes it (from the store) at once, and every
	// broker's cache follows /config/changes.
	for _, b := range c.Brokers {
		checkDescribed(t, describeOn(t, cl, b.ID))
		waitFor(t, 10*time.Second, b.String()+" resolves the quotas", func() bool { return quotasResolved(b) })
	}

	// An alter on another broker is seen by the first.
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{rawEntry([]kmsg.AlterClientQuotasRequestEntryOp{rawOp("producer_byte_rate", 0, true)},
		kmsg.StringPtr("client-id"), nil)}
	resp, err := req.RequestWith(testCtx(t), cl.Broker(2))
	require.NoError(t, err)
	require.Zero(t, resp.Entries[0].ErrorCode)
	waitFor(t, 10*time.Second, "broker 0 drops the default client quota", func() bool {
		_, ok := c.Brokers[0].Server.Cache().Snapshot().ClientQuota(clientquota.Produce, "bob", "x")
		return !ok
	})
	require.Len(t, describeOn(t, cl, 1).Entries, 3)

	// Put it back, restart every broker: the quotas are in the store.
	res, err = adm.AlterClientQuotas(testCtx(t), quotaEntries[3:])
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	for _, b := range c.Brokers {
		b.Restart()
	}
	cl = newClient(t, c.Addrs())
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, b.String()+" resolves the quotas after a restart", func() bool { return quotasResolved(b) })
		checkDescribed(t, describeOn(t, cl, b.ID))
	}
}

func TestClientQuotasSingleNodeRestart(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := kadm.NewClient(newClient(t, []string{b.Addr}))
	res, err := adm.AlterClientQuotas(testCtx(t), quotaEntries)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	require.True(t, quotasResolved(b), "the altering broker syncs its cache before answering")
	b.Restart()
	require.True(t, quotasResolved(b), "read at start-up")
	cl := newClient(t, []string{b.Addr})
	checkDescribed(t, describeOn(t, cl, b.ID))
	// kadm's view, strict, one entity.
	qs, err := kadm.NewClient(cl).DescribeClientQuotas(testCtx(t), true, []kadm.DescribeClientQuotaComponent{
		{Type: "user", MatchName: kmsg.StringPtr("alice"), MatchType: kmsg.QuotasMatchTypeExact},
		{Type: "client-id", MatchName: kmsg.StringPtr("app"), MatchType: kmsg.QuotasMatchTypeExact},
	})
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, kadm.ClientQuotaValues{{Key: "consumer_byte_rate", Value: 2097152}}, qs[0].Values)
}
