package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests run qk reassign-partitions against franz-go's kfake as a
// real server: it speaks AlterPartitionReassignments (45) and
// ListPartitionReassignments (46) but, being one process, accepts a
// reassignment without moving anything and never has one in progress.
// So they cover the requests, the throttle configs and every line that
// does not need a reassignment to run; reassign_broker_test.go runs a
// real move on qk brokers once qk serves the two APIs.

// reassignCluster starts a three-broker kfake with topic "orders" of
// three partitions on two replicas each, and returns its bootstrap list,
// an admin client and a function returning the reassignments requested so
// far (observed with kfake's control hook, which lets kfake answer).
func reassignCluster(t *testing.T) (string, *kadm.Client, func() map[TopicPartitionKey][]int32) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = adm.CreateTopic(ctx, 3, 2, nil, "orders")
	require.NoError(t, err)
	var mu sync.Mutex
	asked := map[TopicPartitionKey][]int32{}
	c.ControlKey(int16(kmsg.AlterPartitionAssignments), func(r kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, t := range r.(*kmsg.AlterPartitionAssignmentsRequest).Topics {
			for _, p := range t.Partitions {
				asked[TopicPartitionKey{t.Topic, p.Partition}] = p.Replicas
			}
		}
		return nil, nil, false
	})
	return strings.Join(c.ListenAddrs(), ","), adm, func() map[TopicPartitionKey][]int32 {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(asked)
	}
}

// TopicPartitionKey names a partition in the tests' maps.
type TopicPartitionKey struct {
	Topic     string
	Partition int32
}

// replicasOf is each partition's replicas, as the cluster reports them.
func replicasOf(t *testing.T, adm *kadm.Client, topic string) map[int32][]int32 {
	t.Helper()
	td, err := adm.ListTopics(t.Context(), topic)
	require.NoError(t, err)
	out := map[int32][]int32{}
	for p, d := range td[topic].Partitions {
		out[p] = d.Replicas
	}
	return out
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func joinReplicas(rs []int32) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r)
	}
	return strings.Join(s, ",")
}

func TestReassignPartitionsKfake(t *testing.T) {
	bootstrap, adm, asked := reassignCluster(t)
	cur := replicasOf(t, adm, "orders")
	qk := func(args ...string) (string, error) {
		out, stderr, err := runQK(t, append([]string{"reassign-partitions", "--bootstrap-server", bootstrap}, args...)...)
		require.Empty(t, stderr)
		return out, err
	}
	curJSON := fmt.Sprintf(`{"version":1,"partitions":[`+
		`{"topic":"orders","partition":0,"replicas":[%s],"log_dirs":["any","any"]},`+
		`{"topic":"orders","partition":1,"replicas":[%s],"log_dirs":["any","any"]},`+
		`{"topic":"orders","partition":2,"replicas":[%s],"log_dirs":["any","any"]}]}`,
		joinReplicas(cur[0]), joinReplicas(cur[1]), joinReplicas(cur[2]))

	t.Run("generate", func(t *testing.T) {
		old := reassignIntN
		reassignIntN = func(int) int { return 0 }
		t.Cleanup(func() { reassignIntN = old })
		move := writeFile(t, "move.json", `{"version":1,"topics":[{"topic":"orders"}]}`)
		out, err := qk("--generate", "--topics-to-move-json-file", move, "--broker-list", "2,1")
		require.NoError(t, err)
		// Start 0, shift 0 over brokers 1,2: leaders 1,2,1.
		require.Equal(t, "Current partition replica assignment\n"+curJSON+"\n\n"+
			"Proposed partition reassignment configuration\n"+
			`{"version":1,"partitions":[`+
			`{"topic":"orders","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},`+
			`{"topic":"orders","partition":1,"replicas":[2,1],"log_dirs":["any","any"]},`+
			`{"topic":"orders","partition":2,"replicas":[1,2],"log_dirs":["any","any"]}]}`+"\n", out)

		_, err = qk("--generate", "--topics-to-move-json-file", writeFile(t, "m.json", `{"topics":[{"topic":"nope"}]}`), "--broker-list", "0,1")
		require.EqualError(t, err, "Topic nope not found.")
		_, err = qk("--generate", "--topics-to-move-json-file", move, "--broker-list", "1,7")
		require.EqualError(t, err, "Replication factor: 2 larger than available brokers: 1.", "unknown brokers are left out, as Kafka")
	})

	// orders-0 moves to 0,2 and orders-1 to 1,2 (whatever they are now),
	// throttled.
	plan := writeFile(t, "plan.json", `{"version":1,"partitions":[
		{"topic":"orders","partition":0,"replicas":[0,2]},
		{"topic":"orders","partition":1,"replicas":[1,2],"log_dirs":["any","any"]}]}`)
	t.Run("execute", func(t *testing.T) {
		out, err := qk("--execute", "--reassignment-json-file", plan, "--throttle", "1048576")
		require.NoError(t, err)
		rollback := fmt.Sprintf(`{"version":1,"partitions":[`+
			`{"topic":"orders","partition":0,"replicas":[%s],"log_dirs":["any","any"]},`+
			`{"topic":"orders","partition":1,"replicas":[%s],"log_dirs":["any","any"]}]}`, joinReplicas(cur[0]), joinReplicas(cur[1]))
		require.Equal(t, "Current partition replica assignment\n\n"+rollback+"\n\n"+
			"Save this to use as the --reassignment-json-file option during rollback\n"+
			"Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.\n"+
			"The inter-broker throttle limit was set to 1048576 B/s\n"+
			"Successfully started partition reassignments for orders-0,orders-1\n", out)
		require.Equal(t, map[TopicPartitionKey][]int32{{"orders", 0}: {0, 2}, {"orders", 1}: {1, 2}}, asked())

		cfg := topicConfigs(t, adm, "orders")
		wantLeader := throttleList(map[int32][]int32{0: cur[0], 1: cur[1]}, nil)
		wantFollower := throttleList(map[int32][]int32{0: {0, 2}, 1: {1, 2}}, map[int32][]int32{0: cur[0], 1: cur[1]})
		require.Equal(t, wantLeader, cfg["leader.replication.throttled.replicas"])
		require.Equal(t, wantFollower, cfg["follower.replication.throttled.replicas"])
		rate := brokerConfig(t, adm, 2, "leader.replication.throttled.rate")
		require.Equal(t, "1048576", rate)
		require.Equal(t, "1048576", brokerConfig(t, adm, 2, "follower.replication.throttled.rate"))
	})

	t.Run("verify", func(t *testing.T) {
		out, err := qk("--verify", "--reassignment-json-file", plan)
		require.NoError(t, err)
		// kfake moved nothing: the replicas are not those asked for.
		want := "Status of partition reassignment:\n"
		for p, target := range [][]int32{{0, 2}, {1, 2}} {
			if joinReplicas(cur[int32(p)]) == joinReplicas(target) {
				want += fmt.Sprintf("Reassignment of partition orders-%d is completed.\n", p)
			} else {
				want += fmt.Sprintf("There is no active reassignment of partition orders-%d, but replica set is %s rather than %s.\n",
					p, joinReplicas(cur[int32(p)]), joinReplicas(target))
			}
		}
		want += "\nClearing broker-level throttles on brokers 0,1,2\nClearing topic-level throttles on topic orders\n"
		require.Equal(t, want, out)
		cfg := topicConfigs(t, adm, "orders")
		require.NotContains(t, cfg, "leader.replication.throttled.replicas")
		require.NotContains(t, cfg, "follower.replication.throttled.replicas")
		require.Empty(t, brokerConfig(t, adm, 2, "leader.replication.throttled.rate"))

		// Resubmitting the current assignment completes at once.
		same := writeFile(t, "same.json", curJSON)
		_, err = qk("--execute", "--reassignment-json-file", same)
		require.NoError(t, err)
		out, err = qk("--verify", "--reassignment-json-file", same, "--preserve-throttles")
		require.NoError(t, err)
		require.Equal(t, "Status of partition reassignment:\n"+
			"Reassignment of partition orders-0 is completed.\n"+
			"Reassignment of partition orders-1 is completed.\n"+
			"Reassignment of partition orders-2 is completed.\n\n", out)
	})

	t.Run("list and cancel", func(t *testing.T) {
		before := asked()
		out, err := qk("--list")
		require.NoError(t, err)
		require.Equal(t, "No partition reassignments found.\n", out)
		out, err = qk("--cancel", "--reassignment-json-file", plan)
		require.NoError(t, err)
		require.Equal(t, "None of the specified partition reassignments are active.\n"+
			"None of the specified partition moves are active.\n"+
			"Clearing broker-level throttles on brokers 0,1,2\nClearing topic-level throttles on topic orders\n", out)
		out, err = qk("--cancel", "--reassignment-json-file", plan, "--preserve-throttles")
		require.NoError(t, err)
		require.NotContains(t, out, "Clearing")
		require.Equal(t, before, asked(), "nothing to cancel: no AlterPartitionReassignments")
	})

	t.Run("execute refused", func(t *testing.T) {
		for _, tc := range []struct{ name, json, want string }{
			{"unknown broker", `{"partitions":[{"topic":"orders","partition":0,"replicas":[0,9]}]}`, "Unknown broker id 9"},
			{"unknown partition", `{"partitions":[{"topic":"orders","partition":7,"replicas":[0,1]}]}`, "Unable to find partition: orders-7"},
			{"unknown topic", `{"partitions":[{"topic":"gone","partition":0,"replicas":[0,1]}]}`, "Topic gone not found."},
			{"duplicate", `{"partitions":[{"topic":"orders","partition":0,"replicas":[0,0]}]}`,
				"Partition replica lists may not contain duplicate entries: orders-0 contains multiple entries for 0"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := qk("--execute", "--reassignment-json-file", writeFile(t, "bad.json", tc.json))
				require.EqualError(t, err, tc.want)
				require.Empty(t, out, "nothing printed before the checks pass")
			})
		}
	})

	// kfake keeps a partition's log dir and moves it at once: the moves
	// start, and verify sees them done, or not where asked.
	t.Run("log dirs", func(t *testing.T) {
		b := cur[2][0]
		moveFile := func(dir string) string {
			return writeFile(t, "dirs.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"orders","partition":2,"replicas":[%s],"log_dirs":["%s","any"]}]}`,
				joinReplicas(cur[2]), dir))
		}
		plan := moveFile("/data/a")
		out, err := qk("--execute", "--reassignment-json-file", plan, "--replica-alter-log-dirs-throttle", "2048", "--timeout", "2000")
		require.NoError(t, err)
		require.Equal(t, "Current partition replica assignment\n\n"+
			fmt.Sprintf(`{"version":1,"partitions":[{"topic":"orders","partition":2,"replicas":[%s],"log_dirs":["any","any"]}]}`, joinReplicas(cur[2]))+"\n\n"+
			"Save this to use as the --reassignment-json-file option during rollback\n"+
			"Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.\n"+
			"The replica-alter-dir throttle limit was set to 2048 B/s\n"+
			"Successfully started partition reassignment for orders-2\n"+
			fmt.Sprintf("Successfully started log directory move for: orders-2-%d\n", b), out)
		require.Equal(t, "2048", brokerConfig(t, adm, b, "replica.alter.log.dirs.io.max.bytes.per.second"))

		out, err = qk("--verify", "--reassignment-json-file", plan)
		require.NoError(t, err)
		require.Equal(t, "Status of partition reassignment:\nReassignment of partition orders-2 is completed.\n"+
			fmt.Sprintf("Reassignment of replica orders-2-%d completed successfully.\n", b)+
			"Clearing broker-level throttles on brokers 0,1,2\nClearing topic-level throttles on topic orders\n", out)
		require.Empty(t, brokerConfig(t, adm, b, "replica.alter.log.dirs.io.max.bytes.per.second"))

		out, err = qk("--verify", "--reassignment-json-file", moveFile("/data/b"), "--preserve-throttles")
		require.NoError(t, err)
		require.Contains(t, out, fmt.Sprintf("Partition orders-2 on broker %d is not being moved from log dir /data/a to /data/b.\n", b))
	})

	t.Run("completion", func(t *testing.T) {
		out, _, err := runQK(t, "__complete", "reassign-partitions", "-b", bootstrap, "--broker-list", "")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(out, "0,1,2\n0\n1\n2\n:4\n"), out)
		out, _, err = runQK(t, "__complete", "reassign-partitions", "--reassignment-json-file", "")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(out, "json\n:8\n"), out)
	})

	t.Run("command-config", func(t *testing.T) {
		props := writeFile(t, "admin.properties", "bootstrap.servers="+bootstrap+"\nclient.id=ops\n")
		out, _, err := runQK(t, "reassign-partitions", "--command-config", props, "--list")
		require.NoError(t, err)
		require.Equal(t, "No partition reassignments found.\n", out)
		props = writeFile(t, "kerberos.properties", "sasl.kerberos.service.name=kafka\n")
		_, _, err = runQK(t, "reassign-partitions", "--command-config", props, "--list")
		require.ErrorContains(t, err, `admin client property "sasl.kerberos.service.name" is not supported by qk`)
	})
}

// throttleList is the "partition:broker" list Kafka sets: for each
// partition the brokers of rs not in exclude, sorted as strings.
func throttleList(rs, exclude map[int32][]int32) string {
	var c []string
	for p, bs := range rs {
		for _, b := range bs {
			skip := false
			for _, x := range exclude[p] {
				skip = skip || x == b
			}
			if !skip {
				c = append(c, fmt.Sprintf("%d:%d", p, b))
			}
		}
	}
	slices.Sort(c)
	return strings.Join(c, ",")
}

func topicConfigs(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rc, err := adm.DescribeTopicConfigs(t.Context(), topic)
	require.NoError(t, err)
	r, err := rc.On(topic, nil)
	require.NoError(t, err)
	out := map[string]string{}
	for _, c := range r.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
			out[c.Key] = *c.Value
		}
	}
	return out
}

func brokerConfig(t *testing.T, adm *kadm.Client, broker int32, key string) string {
	t.Helper()
	rc, err := adm.DescribeBrokerConfigs(t.Context(), broker)
	require.NoError(t, err)
	for _, r := range rc {
		for _, c := range r.Configs {
			if c.Key == key && c.Value != nil && c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				return *c.Value
			}
		}
	}
	return ""
}

// Kafka's option rules, before any connection.
func TestReassignPartitionsArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no action", nil, "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"},
		{"two actions", []string{"--list", "--verify"}, "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"},
		{"missing file", []string{"--execute"}, `Missing required argument "[reassignment-json-file]"`},
		{"missing broker list", []string{"--generate", "--topics-to-move-json-file", "x.json"}, `Missing required argument "[broker-list]"`},
		{"throttle with verify", []string{"--verify", "--reassignment-json-file", "x", "--throttle", "10"}, `Option "[throttle]" can't be used with action "[verify]"`},
		{"additional with list", []string{"--list", "--additional"}, `Option "[additional]" can't be used with action "[list]"`},
		{"timeout with generate", []string{"--generate", "--topics-to-move-json-file", "x", "--broker-list", "1", "--timeout", "5"},
			`Option "[timeout]" can't be used with action "[generate]"`},
		{"no such file", []string{"--verify", "--reassignment-json-file", "/nonexistent/plan.json"}, "--reassignment-json-file: open /nonexistent/plan.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runQK(t, append([]string{"reassign-partitions", "-b", "127.0.0.1:1"}, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
		})
	}
	out, _, err := runQK(t, "reassign-partitions", "--help")
	require.NoError(t, err)
	for _, flag := range []string{"--bootstrap-server", "--generate", "--execute", "--verify", "--cancel", "--list",
		"--topics-to-move-json-file", "--broker-list", "--disable-rack-aware", "--reassignment-json-file", "--throttle",
		"--replica-alter-log-dirs-throttle", "--additional", "--timeout", "--preserve-throttles", "--command-config", "Examples:"} {
		require.Contains(t, out, flag)
	}
}
