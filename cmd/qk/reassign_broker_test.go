//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// These tests move partitions on qk brokers, so they need the broker side
// of reassignment: AlterPartitionReassignments (45) and
// ListPartitionReassignments (46), and the two throttled rates as dynamic
// broker configs; requireReassignmentAPIs fails them, with what is
// missing, if a broker lacks any of it.

// requireReassignmentAPIs fails t unless every broker advertises the two
// reassignment APIs and accepts leader/follower.replication.throttled.rate
// (checked with a validate-only IncrementalAlterConfigs).
func requireReassignmentAPIs(t *testing.T, adm *kadm.Client) {
	t.Helper()
	skip := func(msg string) {
		t.Helper()
		t.Fatal(msg)
	}
	vs, err := adm.ApiVersions(t.Context())
	require.NoError(t, err)
	for _, v := range vs.Sorted() {
		for _, key := range []int16{int16(kmsg.AlterPartitionAssignments), int16(kmsg.ListPartitionReassignments)} {
			if _, ok := v.KeyMaxVersion(key); !ok {
				skip(fmt.Sprintf("broker %d does not serve API key %d (%s) yet", v.NodeID, key, kmsg.NameForKey(key)))
			}
		}
	}
	rate := "1048576"
	resp, err := adm.ValidateAlterBrokerConfigs(t.Context(), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: &rate},
		{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: &rate},
	}, 0)
	require.NoError(t, err)
	for _, r := range resp {
		if r.Err != nil {
			skip(fmt.Sprintf("broker %s does not accept the throttled rates yet: %v %s", r.Name, r.Err, r.ErrMessage))
		}
	}
}

// reassignQK starts three qk brokers and returns the bootstrap list, an
// admin client and a kgo client.
func reassignQK(t *testing.T) (string, *kadm.Client, *kgo.Client) {
	t.Helper()
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("auto.leader.rebalance.enable", "false"),
		brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("moves"))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	requireReassignmentAPIs(t, adm)
	return strings.Join(c.Addrs(), ","), adm, cl
}

// A partition moves to other brokers through --execute, --verify reports
// it in progress and then completed and clears the throttles, and its
// records are all there on the new replicas.
func TestReassignPartitionsQK(t *testing.T) {
	bootstrap, adm, cl := reassignQK(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err := adm.CreateTopic(ctx, 1, 1, nil, "moves")
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record %d", i)}).FirstErr())
	}
	from := replicasOf(t, adm, "moves")[0]
	var to []int32
	for b := range int32(3) {
		if b != from[0] {
			to = append(to, b)
		}
	}
	qk := func(args ...string) string {
		t.Helper()
		out, stderr, err := runQK(t, append([]string{"reassign-partitions", "--bootstrap-server", bootstrap}, args...)...)
		require.NoError(t, err, stderr)
		return out
	}
	plan := writeFile(t, "plan.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[%s]}]}`, joinReplicas(to)))
	out := qk("--execute", "--reassignment-json-file", plan, "--throttle", "10000000")
	require.Contains(t, out, "Successfully started partition reassignment for moves-0\n")
	require.Contains(t, out, "The inter-broker throttle limit was set to 10000000 B/s\n")

	var last string
	require.Eventually(t, func() bool {
		last = qk("--verify", "--reassignment-json-file", plan)
		return strings.Contains(last, "Reassignment of partition moves-0 is completed.")
	}, 30*time.Second, 200*time.Millisecond, "verify: %s", last)
	require.Contains(t, last, "Clearing broker-level throttles on brokers 0,1,2\nClearing topic-level throttles on topic moves\n")
	// The controller has it; every broker's metadata follows.
	require.Eventually(t, func() bool { return slices.Equal(to, replicasOf(t, adm, "moves")[0]) }, 10*time.Second, 20*time.Millisecond,
		"the target replicas in the metadata")
	require.Equal(t, "No partition reassignments found.\n", qk("--list"))
	require.Empty(t, topicConfigs(t, adm, "moves")["leader.replication.throttled.replicas"])

	// Every record is on the new leader.
	cons, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ConsumeTopics("moves"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cons.Close()
	n := 0
	for n < 1000 {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err())
		n += fs.NumRecords()
	}
	require.Equal(t, 1000, n)
}

// --execute refuses to start while another reassignment runs unless
// --additional, --list shows the running one, and --cancel puts it back.
// A reassignment only stays in progress long enough when the brokers
// throttle replication, so without that the test stops after the
// completed move.
func TestReassignPartitionsCancelQK(t *testing.T) {
	bootstrap, adm, cl := reassignQK(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err := adm.CreateTopic(ctx, 1, 1, nil, "moves")
	require.NoError(t, err)
	for range 200 { // 2 MB: 2000 s at 1 KB/s; random, so no codec shrinks it
		value := make([]byte, 10000)
		_, _ = rand.Read(value)
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr())
	}
	from := replicasOf(t, adm, "moves")[0]
	to := []int32{(from[0] + 1) % 3}
	plan := writeFile(t, "plan.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[%s]}]}`, joinReplicas(to)))
	run := func(args ...string) (string, error) {
		out, _, err := runQK(t, append([]string{"reassign-partitions", "--bootstrap-server", bootstrap}, args...)...)
		return out, err
	}
	_, err = run("--execute", "--reassignment-json-file", plan, "--throttle", "1024")
	require.NoError(t, err)
	list, err := run("--list")
	require.NoError(t, err)
	if list == "No partition reassignments found.\n" {
		t.Fatal("the move finished at once: the brokers did not throttle replication")
	}
	require.Equal(t, fmt.Sprintf("Current partition reassignments:\nmoves-0: replicas: %d,%d. adding: %d. removing: %d.\n",
		to[0], from[0], to[0], from[0]), list)

	_, err = run("--execute", "--reassignment-json-file", plan)
	require.ErrorContains(t, err, "Cannot execute because there is an existing partition assignment.")
	out, err := run("--verify", "--reassignment-json-file", plan)
	require.NoError(t, err)
	require.Equal(t, "Status of partition reassignment:\nReassignment of partition moves-0 is still in progress.\n\n", out,
		"no throttle is cleared while it runs")

	out, err = run("--cancel", "--reassignment-json-file", plan)
	require.NoError(t, err)
	require.Equal(t, "Successfully cancelled partition reassignment for: moves-0\n"+
		"None of the specified partition moves are active.\n"+
		"Clearing broker-level throttles on brokers 0,1,2\nClearing topic-level throttles on topic moves\n", out)
	require.Eventually(t, func() bool {
		return joinReplicas(replicasOf(t, adm, "moves")[0]) == joinReplicas(from)
	}, 10*time.Second, 100*time.Millisecond, "the replicas are back")
}

// A replica moves between a qk broker's two log dirs through log_dirs in
// the reassignment JSON (KIP-113) with --replica-alter-log-dirs-throttle:
// --execute starts the move and sets the throttle, --verify reports it
// completed and clears the throttle, the replica is in the new dir and
// its records are all there.
func TestReassignLogDirsQK(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithLogDirs(2))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("moves"))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err = adm.CreateTopic(ctx, 1, 1, nil, "moves")
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record %d", i)}).FirstErr())
	}
	dirOf := func() string {
		t.Helper()
		dirs, err := adm.DescribeBrokerLogDirs(ctx, b.ID, nil)
		require.NoError(t, err)
		cur := ""
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "moves" && !p.IsFuture {
				cur = p.Dir
			}
		})
		return cur
	}
	from := dirOf()
	to := b.Dirs[0]
	if from == to {
		to = b.Dirs[1]
	}
	qk := func(args ...string) string {
		t.Helper()
		out, stderr, err := runQK(t, append([]string{"reassign-partitions", "--bootstrap-server", b.Addr}, args...)...)
		require.NoError(t, err, stderr)
		return out
	}
	plan := writeFile(t, "plan.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[%d],"log_dirs":[%q]}]}`, b.ID, to))
	out := qk("--execute", "--reassignment-json-file", plan, "--replica-alter-log-dirs-throttle", "10000000")
	require.Contains(t, out, "The replica-alter-dir throttle limit was set to 10000000 B/s\n")
	require.Contains(t, out, fmt.Sprintf("Successfully started log directory move for: moves-0-%d\n", b.ID))

	var last string
	require.Eventually(t, func() bool {
		last = qk("--verify", "--reassignment-json-file", plan)
		return strings.Contains(last, fmt.Sprintf("Reassignment of replica moves-0-%d completed successfully.", b.ID))
	}, 30*time.Second, 200*time.Millisecond, "verify: %s", last)
	require.Contains(t, last, "Clearing broker-level throttles on broker "+fmt.Sprint(b.ID)+"\n")
	require.Equal(t, to, dirOf())

	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("moves"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cons.Close()
	n := 0
	for n < 1000 {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) {
			require.Equal(t, fmt.Sprintf("record %d", n), string(r.Value))
			n++
		})
	}
}
