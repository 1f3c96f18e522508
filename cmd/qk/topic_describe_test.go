//go:build linux

package main

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/admin"
	"github.com/qk-project/qk/broker/brokertest"
)

// describeJSON runs `qk topic describe --format json` with args and returns
// the partitions it lists by topic.
func describeJSON(t *testing.T, args ...string) (map[string][]admin.PartitionView, error) {
	t.Helper()
	out, stderr, err := runQK(t, append([]string{"topic", "describe", "--format", "json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var d admin.TopicDescriptions
	require.NoError(t, json.Unmarshal([]byte(out), &d), "stdout %q, stderr %q", out, stderr)
	got := map[string][]admin.PartitionView{}
	for _, v := range d {
		require.NotEmpty(t, v.Partitions, "topic %s listed without partitions", v.Name)
		got[v.Name] = v.Partitions
	}
	return got, nil
}

// partitionIDs are the partition numbers of each topic.
func partitionIDs(d map[string][]admin.PartitionView) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range d {
		for _, p := range ps {
			out[t] = append(out[t], p.Partition)
		}
	}
	return out
}

// waitDescribe polls `qk topic describe --format json args...` until ok
// accepts what it lists, failing after timeout with the last answer.
func waitDescribe(t *testing.T, timeout time.Duration, what string, ok func(map[string][]admin.PartitionView) bool, args ...string) map[string][]admin.PartitionView {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := describeJSON(t, args...)
		if err == nil && ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: last %v, err %v", what, timeout, partitionIDs(got), err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval, not synchronisation
	}
}

// TestTopicDescribeFiltersCluster: the health filters of `qk topic
// describe` on a three-broker qk cluster. qk has replication factor 1, so
// no partition is under-replicated; a topic with min.insync.replicas=2 is
// under min ISR everywhere and one with the default 1 at it; internal
// topics are left out with --exclude-internal; when a broker stops, exactly
// its partitions become unavailable (leader -1) and, leaderless, under min
// ISR too.
func TestTopicDescribeFiltersCluster(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("offsets.topic.num.partitions", "2"),
		brokertest.WithConfig("offsets.topic.replication.factor", "1"))
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "every broker to see all three", func() bool {
			return len(b.Cache().Snapshot().Brokers) == 3
		})
	}
	seeds := "-b=" + strings.Join(c.Addrs(), ",")
	_, _, err := runQK(t, "topic", "create", "strict", "-p", "6", "-r", "1", "-c", "min.insync.replicas=2", seeds)
	require.NoError(t, err)
	_, _, err = runQK(t, "topic", "create", "plain", "-p", "3", "-r", "1", seeds)
	require.NoError(t, err)

	// A group's coordinator lookup creates __consumer_offsets.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = "g"
	waitFor(t, 20*time.Second, "a group coordinator", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		return err == nil && resp.ErrorCode == 0
	})

	everything := func(want map[string][]int32) func(map[string][]admin.PartitionView) bool {
		return func(got map[string][]admin.PartitionView) bool {
			return equalIDs(partitionIDs(got), want)
		}
	}
	all := map[string][]int32{"strict": {0, 1, 2, 3, 4, 5}, "plain": {0, 1, 2}, "__consumer_offsets": {0, 1}}
	waitDescribe(t, 20*time.Second, "every topic led", everything(all), "--at-min-isr-partitions", "--under-min-isr-partitions", seeds)

	got, err := describeJSON(t, "--under-min-isr-partitions", seeds)
	require.NoError(t, err)
	require.Equal(t, map[string][]int32{"strict": {0, 1, 2, 3, 4, 5}}, partitionIDs(got))
	got, err = describeJSON(t, "--at-min-isr-partitions", seeds)
	require.NoError(t, err)
	require.Equal(t, map[string][]int32{"plain": {0, 1, 2}, "__consumer_offsets": {0, 1}}, partitionIDs(got))
	got, err = describeJSON(t, "--at-min-isr-partitions", "--exclude-internal", seeds)
	require.NoError(t, err)
	require.Equal(t, map[string][]int32{"plain": {0, 1, 2}}, partitionIDs(got))
	got, err = describeJSON(t, "plain", "--under-min-isr-partitions", seeds)
	require.NoError(t, err)
	require.Empty(t, got)

	// Without a partition filter, --exclude-internal describes every
	// other topic in full.
	out, _, err := runQK(t, "topic", "describe", "--exclude-internal", seeds)
	require.NoError(t, err)
	require.Contains(t, out, "NAME        plain\n")
	require.Contains(t, out, "NAME        strict\n")
	require.NotContains(t, out, "__consumer_offsets")

	// Nothing matches: nothing printed, or [] in json.
	for _, f := range []string{"--under-replicated-partitions", "--unavailable-partitions"} {
		out, _, err := runQK(t, "topic", "describe", f, seeds)
		require.NoError(t, err)
		require.Empty(t, out, f)
		out, _, err = runQK(t, "topic", "describe", f, "--format", "json", seeds)
		require.NoError(t, err)
		require.Equal(t, "[]\n", out, f)
	}

	// Stop a broker that is not the controller: its partitions, and only
	// those, lose their leader.
	before, err := describeJSON(t, "--exclude-internal", seeds)
	require.NoError(t, err)
	ctrl := c.Brokers[0].Cache().Snapshot().ControllerID
	var victim *brokertest.Broker
	var live []string
	for _, b := range c.Brokers {
		if b.ID != ctrl && victim == nil {
			victim = b
			continue
		}
		live = append(live, b.Addr)
	}
	theirs := map[string][]int32{}
	for topic, ps := range before {
		for _, p := range ps {
			if p.Leader == victim.ID {
				theirs[topic] = append(theirs[topic], p.Partition)
			}
		}
	}
	require.NotEmpty(t, theirs, "round-robin leaders give %s partitions", victim)
	victim.Stop()
	seeds = "-b=" + strings.Join(live, ",")
	leaderless := func(got map[string][]admin.PartitionView) bool {
		for _, ps := range got {
			for _, p := range ps {
				if p.Leader != -1 {
					return false
				}
			}
		}
		return equalIDs(partitionIDs(got), theirs)
	}
	unavailable := waitDescribe(t, 30*time.Second, "the stopped broker's partitions unavailable", leaderless,
		"--unavailable-partitions", "--exclude-internal", seeds)
	for _, ps := range unavailable {
		for _, p := range ps {
			require.Equal(t, []int32{victim.ID}, p.Replicas)
			require.Equal(t, int64(-1), p.HighWatermark, "no leader answers ListOffsets")
		}
	}

	// Under min ISR: all of strict, and plain's leaderless partitions.
	got, err = describeJSON(t, "--under-min-isr-partitions", "--exclude-internal", seeds)
	require.NoError(t, err)
	want := map[string][]int32{"strict": {0, 1, 2, 3, 4, 5}}
	if len(theirs["plain"]) > 0 {
		want["plain"] = theirs["plain"]
	}
	require.Equal(t, want, partitionIDs(got))

	// The text is Kafka's partition lines only: a header and one row each.
	out, _, err = runQK(t, "topic", "describe", "strict", "plain", "--unavailable-partitions", seeds)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Regexp(t, `^TOPIC +PARTITION +LEADER +EPOCH +REPLICAS +ISR +OFFLINE +LOG-START-OFFSET +HIGH-WATERMARK$`, lines[0])
	n := 0
	for _, ps := range theirs {
		n += len(ps)
	}
	require.Len(t, lines, 1+n, out)
	for _, l := range lines[1:] {
		require.Regexp(t, `^(strict|plain) +[0-9]+ +-1 +[0-9]+ +\[[0-9]+\] `, l)
	}
}

// waitFor polls cond until it holds, failing after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
	}
}

// equalIDs compares partition numbers by topic, in any order.
func equalIDs(got, want map[string][]int32) bool {
	if len(got) != len(want) {
		return false
	}
	for t, w := range want {
		if !slices.Equal(slices.Sorted(slices.Values(got[t])), slices.Sorted(slices.Values(w))) {
			return false
		}
	}
	return true
}

// TestTopicDescribeFiltersKfake: under-replicated and the other filters on
// a replicated topic, which qk cannot make. kfake's three brokers hold
// "repl" with replication factor 3 and min.insync.replicas=2; kfake always
// reports the full replica set in sync, so its Metadata answers are
// rewritten: partition 1's ISR shrinks to its leader, partition 2's to
// two replicas and partition 3 loses its leader.
func TestTopicDescribeFiltersKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(4, "other"))
	require.NoError(t, err)
	defer c.Close()
	seeds := "-b=" + strings.Join(c.ListenAddrs(), ",")
	_, _, err = runQK(t, "topic", "create", "repl", "-p", "4", "-r", "3", "-c", "min.insync.replicas=2", seeds)
	require.NoError(t, err)

	// kfake answers a Metadata itself; its answer is taken once here and
	// replayed, shrunk, from then on.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	base, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	c.ControlKey(int16(kmsg.Metadata), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.MetadataRequest)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Brokers = base.Brokers
		resp.ClusterID = base.ClusterID
		resp.ControllerID = base.ControllerID
		for _, bt := range base.Topics {
			if req.Topics != nil && !slices.ContainsFunc(req.Topics, func(rt kmsg.MetadataRequestTopic) bool {
				return rt.Topic != nil && bt.Topic != nil && *rt.Topic == *bt.Topic
			}) {
				continue
			}
			mt := bt
			mt.Partitions = nil
			for _, bp := range bt.Partitions {
				mp := bp
				if *bt.Topic == "repl" {
					switch bp.Partition {
					case 1:
						mp.ISR = []int32{bp.Leader}
					case 2:
						mp.ISR = bp.Replicas[:2]
					case 3:
						mp.Leader = -1
						mp.ErrorCode = 5 // LEADER_NOT_AVAILABLE
					}
				}
				mt.Partitions = append(mt.Partitions, mp)
			}
			resp.Topics = append(resp.Topics, mt)
		}
		return resp, nil, true
	})

	for _, tc := range []struct {
		name string
		args []string
		want map[string][]int32
	}{
		{"under-replicated", []string{"--under-replicated-partitions"}, map[string][]int32{"repl": {1, 2}}},
		{"under-min-isr", []string{"--under-min-isr-partitions"}, map[string][]int32{"repl": {1, 3}}},
		{"at-min-isr", []string{"--at-min-isr-partitions"}, map[string][]int32{"repl": {2}}},
		{"unavailable", []string{"--unavailable-partitions"}, map[string][]int32{"repl": {3}}},
		{"several", []string{"--unavailable-partitions", "--under-replicated-partitions"}, map[string][]int32{"repl": {1, 2, 3}}},
		{"named other", []string{"other", "--under-replicated-partitions", "--unavailable-partitions"}, map[string][]int32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := describeJSON(t, append(tc.args, seeds)...)
			require.NoError(t, err)
			require.Equal(t, tc.want, partitionIDs(got))
			require.ElementsMatch(t, slices.Collect(maps.Keys(tc.want)), slices.Collect(maps.Keys(got)))
		})
	}
	out, _, err := runQK(t, "topic", "describe", "--under-replicated-partitions", seeds)
	require.NoError(t, err)
	require.Regexp(t, `^TOPIC +PARTITION +LEADER +EPOCH +REPLICAS +ISR +OFFLINE +LOG-START-OFFSET +HIGH-WATERMARK
repl +1 +[0-9]+ +[0-9]+ +\[[0-9]+ [0-9]+ [0-9]+\] +\[[0-9]+\] +\[\] +0 +0
repl +2 +[0-9]+ +[0-9]+ +\[[0-9]+ [0-9]+ [0-9]+\] +\[[0-9]+ [0-9]+\] +\[\] +0 +0
$`, out)
}
