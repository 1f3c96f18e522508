//go:build linux

package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/metadata"
)

func quotaEntity(kv ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(kv); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: kv[i]}
		if kv[i+1] != "<default>" {
			c.Name = kmsg.StringPtr(kv[i+1])
		}
		e = append(e, c)
	}
	return e
}

func setQuota(key string, v float64) kadm.AlterClientQuotaOp {
	return kadm.AlterClientQuotaOp{Key: key, Value: v}
}

// alterQuotasRaw sends one AlterClientQuotas to broker id and returns
// each entry's error code.
func alterQuotasRaw(t *testing.T, cl *kgo.Client, id int32, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []int16 {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	resp, err := req.RequestWith(testCtx(t), cl.Broker(int(id)))
	require.NoError(t, err)
	var out []int16
	for _, e := range resp.Entries {
		out = append(out, e.ErrorCode)
	}
	return out
}

func rawEntry(ops []kmsg.AlterClientQuotasRequestEntryOp, kv ...*string) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewAlterClientQuotasRequestEntryEntity()
		c.Type, c.Name = *kv[i], kv[i+1]
		e.Entity = append(e.Entity, c)
	}
	e.Ops = ops
	return e
}

func rawOp(key string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
	o := kmsg.NewAlterClientQuotasRequestEntryOp()
	o.Key, o.Value, o.Remove = key, v, remove
	return o
}

func TestClientQuotasValidation(t *testing.T) {
	c := brokertest.StartCluster(t, 1)
	b := c.Brokers[0]
	cl := newClient(t, []string{b.Addr})
	s := kmsg.StringPtr
	rate := []kmsg.AlterClientQuotasRequestEntryOp{rawOp("producer_byte_rate", 1024, false)}
	invalid := kerr.InvalidRequest.Code
	got := alterQuotasRaw(t, cl, b.ID, false,
		rawEntry(rate),                                       // no entity
		rawEntry(rate, s("user"), s("")),                     // empty name
		rawEntry(rate, s("user"), s("a"), s("user"), s("b")), // type twice
		rawEntry(rate, s("group"), s("a")),                   // unknown type
		rawEntry(rate, s("ip"), s("127.0.0.1")),              // no ip quotas
		rawEntry([]kmsg.AlterClientQuotasRequestEntryOp{rawOp("retention.ms", 1, false)}, s("user"), s("a")),
		rawEntry([]kmsg.AlterClientQuotasRequestEntryOp{rawOp("SCRAM-SHA-256", 0, true)}, s("user"), s("a")),
		rawEntry([]kmsg.AlterClientQuotasRequestEntryOp{rawOp("producer_byte_rate", 1.5, false)}, s("user"), s("a")),
		rawEntry([]kmsg.AlterClientQuotasRequestEntryOp{rawOp("request_percentage", -1, false)}, s("user"), s("a")),
		rawEntry(rate, s("user"), s("ok")),
	)
	require.Equal(t, []int16{invalid, invalid, invalid, invalid, invalid, invalid, invalid, invalid, invalid, 0}, got)

	// validate_only writes nothing.
	require.Equal(t, []int16{0}, alterQuotasRaw(t, cl, b.ID, true, rawEntry(rate, s("client-id"), s("dry"))))
	_, _, err := c.Store.Get(testCtx(t), "/config/clients/dry")
	require.ErrorIs(t, err, metadata.ErrNoNode)

	// Describe's filter errors are top-level.
	describe := func(comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = comps
		resp, err := req.RequestWith(testCtx(t), cl)
		require.NoError(t, err)
		return resp
	}
	comp := func(typ string, mt kmsg.QuotasMatchType, match *string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = typ, mt, match
		return c
	}
	for _, tt := range []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", kmsg.QuotasMatchTypeExact, nil)}, invalid},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", kmsg.QuotasMatchTypeDefault, s("a"))}, invalid},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", kmsg.QuotasMatchTypeAny, s("a"))}, invalid},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 7, nil)}, invalid},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("", kmsg.QuotasMatchTypeAny, nil)}, invalid},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", kmsg.QuotasMatchTypeAny, nil), comp("user", kmsg.QuotasMatchTypeAny, nil)}, invalid},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("ip", kmsg.QuotasMatchTypeAny, nil), comp("user", kmsg.QuotasMatchTypeAny, nil)}, invalid},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("group", kmsg.QuotasMatchTypeAny, nil)}, kerr.UnsupportedVersion.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("ip", kmsg.QuotasMatchTypeAny, nil)}, 0},
	} {
		resp := describe(tt.comps...)
		require.Equal(t, tt.code, resp.ErrorCode, "%+v: %v", tt.comps, resp.ErrorMessage)
		require.Empty(t, resp.Entries)
	}
}

// TestClientQuotasKeepScram: quotas and SCRAM credentials share the user
// node; neither write loses the other.
func TestClientQuotasKeepScram(t *testing.T) {
	c := brokertest.StartCluster(t, 1)
	b := c.Brokers[0]
	cl := newClient(t, []string{b.Addr})
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	up, _ := saltedUpsert(t, "alice", 1, "secret", 4096)
	_, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{up})
	require.NoError(t, err)
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{setQuota("producer_byte_rate", 1048576)}}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	cfg, err := metadata.ReadEntityConfig(ctx, c.Store, metadata.ConfigUsers, "alice")
	require.NoError(t, err)
	require.Contains(t, cfg, "SCRAM-SHA-256")
	require.Equal(t, "1048576", cfg["producer_byte_rate"])
	described, err := adm.DescribeUserSCRAMs(ctx, "alice")
	require.NoError(t, err)
	require.NoError(t, described["alice"].Err)
	// The SCRAM-only describe of quotas lists alice for her quota only.
	qs, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}})
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, kadm.ClientQuotaValues{{Key: "producer_byte_rate", Value: 1048576}}, qs[0].Values)
	require.True(t, b.Server.Cache().Snapshot().ClientQuotas().Has(clientquota.Produce))
}
