package admin

import (
	"bytes"
	"testing"
	"text/tabwriter"

	"github.com/stretchr/testify/require"
)

func TestQuotaConfigsText(t *testing.T) {
	v := &QuotaConfigs{
		Quotas: []QuotaConfig{
			{Entity: []QuotaPart{{Type: "clients", Name: "app"}, {Type: "users", Name: "alice"}}, Values: map[string]float64{"request_percentage": 12.5, "producer_byte_rate": 1e7}},
			{Entity: []QuotaPart{{Type: "users", Default: true}}, Values: map[string]float64{"consumer_byte_rate": 1024}},
		},
		Scram: []UserScram{{User: "alice", Credentials: []ScramCredential{{Mechanism: "SCRAM-SHA-256", Iterations: 4096}}}},
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	v.Text(tw)
	require.NoError(t, tw.Flush())
	require.Equal(t, "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1.0E7, request_percentage=12.5\n"+
		"Quota configs for the default user-principal are consumer_byte_rate=1024.0\n"+
		"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096\n", buf.String())
}

func TestParseConfigList(t *testing.T) {
	got, err := ParseConfigList("producer_byte_rate=1048576, consumer_byte_rate=2097152,k=[a,b]")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"producer_byte_rate": "1048576", "consumer_byte_rate": "2097152", "k": "a,b"}, got)
	_, err = ParseConfigList("producer_byte_rate")
	require.Error(t, err)
}

func TestCheckQuotaParts(t *testing.T) {
	require.NoError(t, CheckQuotaParts([]QuotaPart{{Type: "users", Name: "a"}, {Type: "clients", Default: true}}, true))
	require.NoError(t, CheckQuotaParts([]QuotaPart{{Type: "users", All: true}}, false))
	for _, bad := range [][]QuotaPart{
		nil,
		{{Type: "users", All: true}},
		{{Type: "topics", Name: "t"}},
		{{Type: "users", Name: "a"}, {Type: "users", Name: "b"}},
		{{Type: "users", Name: "a"}, {Type: "clients", Name: "b"}, {Type: "clients", Name: "c"}},
	} {
		require.ErrorIs(t, CheckQuotaParts(bad, true), ErrQuotaEntity, "%v", bad)
	}
}
