package admin

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDescribeFilterMatch: which partitions each kafka-topics.sh report
// option picks, from replicas, ISR, leader and min.insync.replicas. Brokers
// 1, 2 and 3 are live.
func TestDescribeFilterMatch(t *testing.T) {
	live := map[int32]bool{1: true, 2: true, 3: true}
	type match struct{ underRepl, underMinISR, atMinISR, unavailable bool }
	for _, tc := range []struct {
		name     string
		replicas []int32
		isr      []int32
		leader   int32
		minISR   int
		want     match
	}{
		{"healthy rf3", []int32{1, 2, 3}, []int32{1, 2, 3}, 1, 2, match{}},
		{"one follower out", []int32{1, 2, 3}, []int32{1, 2}, 1, 2, match{underRepl: true, atMinISR: true}},
		{"two followers out", []int32{1, 2, 3}, []int32{1}, 1, 2, match{underRepl: true, underMinISR: true}},
		{"isr at min, full", []int32{1, 2}, []int32{1, 2}, 2, 2, match{atMinISR: true}},
		{"rf1 min1", []int32{1}, []int32{1}, 1, 1, match{atMinISR: true}},
		{"rf1 min2", []int32{1}, []int32{1}, 1, 2, match{underMinISR: true}},
		// Kafka keeps the last ISR member when the leader is lost: no
		// leader is under min ISR whatever the ISR says.
		{"no leader, isr kept", []int32{1}, []int32{1}, -1, 1, match{underMinISR: true, atMinISR: true, unavailable: true}},
		{"no leader, empty isr", []int32{1, 2}, []int32{}, -1, 1, match{underRepl: true, underMinISR: true, unavailable: true}},
		{"leader not live", []int32{7, 1}, []int32{7, 1}, 7, 2, match{atMinISR: true, unavailable: true}},
		{"leader not live, isr shrunk", []int32{7, 1}, []int32{7}, 7, 1, match{underRepl: true, atMinISR: true, unavailable: true}},
		{"min isr unknown", []int32{1, 2}, []int32{1, 2}, 1, -1, match{}},
		{"min isr unknown, no leader", []int32{1, 2}, []int32{1}, -1, -1, match{underRepl: true, underMinISR: true, unavailable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PartitionView{Leader: tc.leader, Replicas: tc.replicas, ISR: tc.isr}
			got := match{
				underRepl:   DescribeFilter{UnderReplicated: true}.Match(p, tc.minISR, live),
				underMinISR: DescribeFilter{UnderMinISR: true}.Match(p, tc.minISR, live),
				atMinISR:    DescribeFilter{AtMinISR: true}.Match(p, tc.minISR, live),
				unavailable: DescribeFilter{Unavailable: true}.Match(p, tc.minISR, live),
			}
			require.Equal(t, tc.want, got)
			// Filters add up: a partition is shown if any matches.
			all := DescribeFilter{UnderReplicated: true, UnderMinISR: true, AtMinISR: true, Unavailable: true}
			require.Equal(t, got != match{}, all.Match(p, tc.minISR, live))
			// No partition filter (--exclude-internal alone): everything.
			require.True(t, DescribeFilter{}.Match(p, tc.minISR, live))
			require.True(t, DescribeFilter{ExcludeInternal: true}.Match(p, tc.minISR, live))
		})
	}
}

func TestMinInsyncReplicas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs []ConfigView
		want    int
	}{
		{"default", []ConfigView{{Name: "cleanup.policy", Value: "delete"}, {Name: "min.insync.replicas", Value: "1", Source: "DEFAULT"}}, 1},
		{"override", []ConfigView{{Name: "min.insync.replicas", Value: "2", Source: "DYNAMIC_TOPIC"}}, 2},
		{"missing", []ConfigView{{Name: "retention.ms", Value: "1"}}, -1},
		{"not a number", []ConfigView{{Name: "min.insync.replicas", Value: "(sensitive)"}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, minInsyncReplicas(tc.configs))
		})
	}
}

// crafted is a cluster qk cannot produce (it has replication factor 1):
// "repl" is replicated three ways with partition 1 down to one in-sync
// replica and partition 2 led by broker 9, which is not live.
func crafted() kadm.TopicDetails {
	pd := func(p, leader int32, replicas, isr []int32) kadm.PartitionDetail {
		return kadm.PartitionDetail{Topic: "repl", Partition: p, Leader: leader, Replicas: replicas, ISR: isr}
	}
	return kadm.TopicDetails{
		"repl": {Topic: "repl", Partitions: kadm.PartitionDetails{
			0: pd(0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}),
			1: pd(1, 2, []int32{2, 3, 1}, []int32{2}),
			2: pd(2, 9, []int32{9, 1, 2}, []int32{9, 1, 2}),
		}},
		"healthy": {Topic: "healthy", Partitions: kadm.PartitionDetails{
			0: {Topic: "healthy", Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		}},
		"__consumer_offsets": {Topic: "__consumer_offsets", IsInternal: true, Partitions: kadm.PartitionDetails{
			0: {Topic: "__consumer_offsets", Partition: 0, Leader: -1, Replicas: []int32{4}, ISR: []int32{4}},
		}},
		"__transaction_state": {Topic: "__transaction_state", Partitions: kadm.PartitionDetails{}},
	}
}

// TestDescribeTopicFiltered runs the assembly of describe (topic
// selection, filtering, offsets) on crafted metadata.
func TestDescribeTopicFiltered(t *testing.T) {
	td := crafted()
	live := map[int32]bool{1: true, 2: true, 3: true}
	configs := map[string][]ConfigView{
		"repl":    {{Name: "min.insync.replicas", Value: "2", Source: "DYNAMIC_TOPIC"}},
		"healthy": {{Name: "min.insync.replicas", Value: "1", Source: "DEFAULT"}},
	}
	ends := kadm.ListedOffsets{"repl": {0: {Offset: 10}, 1: {Offset: 11}, 2: {Err: kerr.NotLeaderForPartition}}}
	describe := func(f DescribeFilter, names ...string) map[string][]int32 {
		t.Helper()
		topics, err := selectTopics(td, names, f.ExcludeInternal)
		require.NoError(t, err)
		got := map[string][]int32{}
		for _, name := range topics {
			v, ok := describeTopic(td[name], configs[name], f, live, nil, ends)
			if !ok {
				continue
			}
			got[name] = []int32{}
			for _, p := range v.Partitions {
				got[name] = append(got[name], p.Partition)
			}
		}
		return got
	}
	for _, tc := range []struct {
		name  string
		f     DescribeFilter
		names []string
		want  map[string][]int32
	}{
		{"no filter", DescribeFilter{}, nil, map[string][]int32{"repl": {0, 1, 2}, "healthy": {0}, "__consumer_offsets": {0}, "__transaction_state": {}}},
		{"exclude internal", DescribeFilter{ExcludeInternal: true}, nil, map[string][]int32{"repl": {0, 1, 2}, "healthy": {0}}},
		{"exclude internal, named", DescribeFilter{ExcludeInternal: true}, []string{"__consumer_offsets", "healthy"}, map[string][]int32{"healthy": {0}}},
		{"under-replicated", DescribeFilter{UnderReplicated: true}, nil, map[string][]int32{"repl": {1}}},
		{"under-min-isr", DescribeFilter{UnderMinISR: true}, nil, map[string][]int32{"repl": {1}, "__consumer_offsets": {0}}},
		{"at-min-isr", DescribeFilter{AtMinISR: true}, nil, map[string][]int32{"healthy": {0}}},
		{"unavailable", DescribeFilter{Unavailable: true}, nil, map[string][]int32{"repl": {2}, "__consumer_offsets": {0}}},
		{"unavailable, exclude internal", DescribeFilter{Unavailable: true, ExcludeInternal: true}, nil, map[string][]int32{"repl": {2}}},
		{"unavailable, named healthy", DescribeFilter{Unavailable: true}, []string{"healthy"}, map[string][]int32{}},
		{"several", DescribeFilter{UnderReplicated: true, Unavailable: true}, []string{"repl"}, map[string][]int32{"repl": {1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, describe(tc.f, tc.names...))
		})
	}

	v, ok := describeTopic(td["repl"], configs["repl"], DescribeFilter{UnderReplicated: true, Unavailable: true}, live, nil, ends)
	require.True(t, ok)
	require.Equal(t, []PartitionView{
		{Partition: 1, Leader: 2, Replicas: []int32{2, 3, 1}, ISR: []int32{2}, OfflineReplicas: []int32{}, LogStartOffset: -1, HighWatermark: 11},
		{Partition: 2, Leader: 9, Replicas: []int32{9, 1, 2}, ISR: []int32{9, 1, 2}, OfflineReplicas: []int32{}, LogStartOffset: -1, HighWatermark: -1},
	}, v.Partitions)

	_, err := selectTopics(td, []string{"nosuch"}, false)
	require.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
}

// TestPartitionListText: with a partition filter the text is the matching
// partitions alone, each naming its topic, and nothing when none match;
// json is the topics with those partitions.
func TestPartitionListText(t *testing.T) {
	l := PartitionList{
		{Name: "orders", Partitions: []PartitionView{
			{Partition: 3, Leader: -1, LeaderEpoch: 4, Replicas: []int32{2}, ISR: []int32{2}, OfflineReplicas: []int32{2}, LogStartOffset: -1, HighWatermark: -1},
		}},
		{Name: "payments", Partitions: []PartitionView{
			{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, OfflineReplicas: []int32{}, LogStartOffset: 0, HighWatermark: 12},
		}},
	}
	var b bytes.Buffer
	require.NoError(t, Print(&b, "text", l))
	require.Equal(t, ""+
		"TOPIC     PARTITION  LEADER  EPOCH  REPLICAS  ISR  OFFLINE  LOG-START-OFFSET  HIGH-WATERMARK\n"+
		"orders    3          -1      4      [2]       [2]  [2]      -1                -1\n"+
		"payments  0          1       0      [1 2]     [1]  []       0                 12\n", b.String())

	for _, empty := range []PartitionList{{}, nil} {
		b.Reset()
		require.NoError(t, Print(&b, "text", empty))
		require.Empty(t, b.String(), "no matching partition prints nothing")
	}
	b.Reset()
	require.NoError(t, Print(&b, "json", PartitionList{}))
	require.Equal(t, "[]\n", b.String())
	b.Reset()
	require.NoError(t, Print(&b, "yaml", PartitionList{}))
	require.Equal(t, "[]\n", b.String())

	var want bytes.Buffer
	b.Reset()
	require.NoError(t, Print(&b, "json", l))
	require.NoError(t, Print(&want, "json", TopicDescriptions(l)))
	require.Equal(t, want.String(), b.String())
}
