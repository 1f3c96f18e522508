package admin

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func tp(t string, p int32) TopicPartition { return TopicPartition{t, p} }

func TestParseReassignment(t *testing.T) {
	r, err := ParseReassignment([]byte(`{"version":1,"partitions":[
		{"topic":"foo","partition":0,"replicas":[1,2]},
		{"topic":"foo","partition":1,"replicas":[2,3],"log_dirs":["any","/data/b"]}]}`))
	require.NoError(t, err)
	require.Equal(t, []PartitionReassignment{
		{Topic: "foo", Partition: 0, Replicas: []int32{1, 2}, LogDirs: []string{"any", "any"}},
		{Topic: "foo", Partition: 1, Replicas: []int32{2, 3}, LogDirs: []string{"any", "/data/b"}},
	}, r.Partitions)
	require.Equal(t, map[TopicPartitionReplica]string{{"foo", 1, 3}: "/data/b"}, r.LogDirs)

	r, err = ParseReassignment([]byte(`{"partitions":[]}`))
	require.NoError(t, err, "version defaults to 1")
	require.Empty(t, r.Partitions)

	for _, tc := range []struct{ name, json, want string }{
		{"version", `{"version":2,"partitions":[]}`, "Not supported version field value 2"},
		{"not json", `{"version":1,`, "The input string is not a valid JSON"},
		{"trailing", `{"version":1} {}`, "The input string is not a valid JSON"},
		{"type", `{"partitions":[{"topic":"foo","partition":"0","replicas":[1]}]}`, `"partitions.partition" has the wrong type`},
		{"no topic", `{"partitions":[{"partition":0,"replicas":[1]}]}`, `partition entry 0: no "topic"`},
		{"no replicas", `{"partitions":[{"topic":"foo","partition":0}]}`, `partition entry 0: no "replicas"`},
		{"log dirs", `{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`,
			"Size of replicas list [1, 2] is different from size of log dirs list [any] for partition foo-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseReassignment([]byte(tc.json))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Kafka's parseExecuteAssignmentArgs checks, in its order and words.
func TestValidateExecute(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"empty", `{"version":1,"partitions":[]}`, "Partition reassignment list cannot be empty"},
		{"no partitions key", `{"version":1}`, "Partition reassignment list cannot be empty"},
		{"empty replicas", `{"partitions":[{"topic":"foo","partition":0,"replicas":[1]},{"topic":"foo","partition":1,"replicas":[]}]}`,
			"Partition replica list cannot be empty"},
		{"duplicate partitions", `{"partitions":[{"topic":"foo","partition":1,"replicas":[1]},{"topic":"bar","partition":0,"replicas":[1]},
			{"topic":"foo","partition":1,"replicas":[2]},{"topic":"bar","partition":0,"replicas":[2]}]}`,
			"Partition reassignment contains duplicate topic partitions: bar-0,foo-1"},
		{"duplicate replicas", `{"partitions":[{"topic":"foo","partition":0,"replicas":[1,1,2]},{"topic":"bar","partition":1,"replicas":[3,2,3,2]}]}`,
			"Partition replica lists may not contain duplicate entries: foo-0 contains multiple entries for 1. bar-1 contains multiple entries for 2,3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseReassignment([]byte(tc.json))
			require.NoError(t, err)
			_, err = r.ValidateExecute()
			require.EqualError(t, err, tc.want)
		})
	}
	r, err := ParseReassignment([]byte(`{"partitions":[{"topic":"foo","partition":0,"replicas":[3,1]}]}`))
	require.NoError(t, err)
	got, err := r.ValidateExecute()
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition][]int32{tp("foo", 0): {3, 1}}, got)
}

func TestParseGenerateArgs(t *testing.T) {
	brokers, topics, err := ParseGenerateArgs([]byte(`{"version":1,"topics":[{"topic":"foo"},{"topic":"bar"}]}`), "3,1,2")
	require.NoError(t, err)
	require.Equal(t, []int32{3, 1, 2}, brokers)
	require.Equal(t, []string{"foo", "bar"}, topics)
	for _, tc := range []struct{ name, json, brokers, want string }{
		{"duplicate brokers", `{"topics":[]}`, "1,2,1,2", "Broker list contains duplicate entries: 1,2"},
		{"duplicate topics", `{"topics":[{"topic":"foo"},{"topic":"foo"}]}`, "1", "List of topics to reassign contains duplicate entries: foo"},
		{"bad broker", `{"topics":[]}`, "1,x", `--broker-list "1,x": For input string: "x"`},
		{"version", `{"version":3,"topics":[]}`, "1", "Not supported version field value 3"},
		{"no topic", `{"topics":[{"name":"foo"}]}`, "1", `topic entry 0: no "topic"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseGenerateArgs([]byte(tc.json), tc.brokers)
			require.EqualError(t, err, tc.want)
		})
	}
}

// The JSON is Jackson's compact form, sorted, and reads back.
func TestFormatReassignmentJSON(t *testing.T) {
	parts := map[TopicPartition][]int32{tp("foo", 10): {1}, tp("foo", 2): {3, 1}, tp("bar", 0): {2, 1}}
	got := FormatReassignmentJSON(parts, map[TopicPartitionReplica]string{{"foo", 2, 1}: "/d<1>"})
	want := `{"version":1,"partitions":[` +
		`{"topic":"bar","partition":0,"replicas":[2,1],"log_dirs":["any","any"]},` +
		`{"topic":"foo","partition":2,"replicas":[3,1],"log_dirs":["any","/d<1>"]},` +
		`{"topic":"foo","partition":10,"replicas":[1],"log_dirs":["any"]}]}`
	require.Equal(t, want, got)
	r, err := ParseReassignment([]byte(got))
	require.NoError(t, err)
	back, err := r.ValidateExecute()
	require.NoError(t, err)
	require.Equal(t, parts, back)
	require.Equal(t, `{"version":1,"partitions":[]}`, FormatReassignmentJSON(nil, nil))
}

// Kafka's lines for each action, byte for byte.
func TestReassignText(t *testing.T) {
	cur := map[TopicPartition][]int32{tp("foo", 0): {1, 2}, tp("foo", 1): {2, 3}}
	for _, tc := range []struct{ name, got, want string }{
		{"generate", generateText(cur, map[TopicPartition][]int32{tp("foo", 0): {4, 5}, tp("foo", 1): {5, 4}}),
			"Current partition replica assignment\n" +
				`{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"foo","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}` + "\n\n" +
				"Proposed partition reassignment configuration\n" +
				`{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[4,5],"log_dirs":["any","any"]},{"topic":"foo","partition":1,"replicas":[5,4],"log_dirs":["any","any"]}]}` + "\n"},
		{"execute", currentAssignmentText(map[TopicPartition][]int32{tp("foo", 1): {1}}, cur),
			"Current partition replica assignment\n\n" +
				`{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}` + "\n\n" +
				"Save this to use as the --reassignment-json-file option during rollback\n"},
		{"verify", statesText(map[TopicPartition]PartitionState{
			tp("foo", 0):  {Current: []int32{1, 2}, Target: []int32{1, 2}, Done: true},
			tp("bar", 3):  {Current: []int32{1, 2, 3}, Target: []int32{3}},
			tp("foo", 1):  {Current: []int32{2, 3}, Target: []int32{3, 2}, Done: true},
			tp("gone", 0): {Target: []int32{1}, Done: true},
		}),
			"Status of partition reassignment:\n" +
				"Reassignment of partition bar-3 is still in progress.\n" +
				"Reassignment of partition foo-0 is completed.\n" +
				"There is no active reassignment of partition foo-1, but replica set is 2,3 rather than 3,2.\n" +
				"There is no active reassignment of partition gone-0, but replica set is  rather than 1.\n"},
		{"moves", moveStatesText(map[TopicPartitionReplica]LogDirMove{
			{"foo", 0, 1}: {Target: "/a", Current: "/a"},
			{"foo", 0, 2}: {Target: "/a", Current: "/b", Future: "/a"},
			{"foo", 1, 2}: {Target: "/a", Current: "/b", Future: "/c"},
			{"foo", 2, 2}: {Target: "/a", Current: "/b"},
			{"foo", 3, 3}: {Target: "/a", Offline: true},
			{"foo", 4, 3}: {Target: "/a", Missing: true},
		}),
			"Reassignment of replica foo-0-1 completed successfully.\n" +
				"Reassignment of replica foo-0-2 is still in progress.\n" +
				"Partition foo-1 on broker 2 is being moved to log dir /c instead of /a.\n" +
				"Partition foo-2 on broker 2 is not being moved from log dir /b to /a.\n" +
				"Partition foo-3 is not found in any live log dir on broker 3. There is likely an offline log directory on the broker.\n" +
				"Partition foo-4 cannot be found in any live log directory on broker 3.\n"},
		{"list none", listText(nil), "No partition reassignments found.\n"},
		{"list", listText(map[TopicPartition]OngoingReassignment{
			tp("foo", 1): {Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{1}},
			tp("bar", 0): {Replicas: []int32{4, 5}, Adding: []int32{5}},
			tp("foo", 0): {Replicas: []int32{1, 2}},
		}),
			"Current partition reassignments:\n" +
				"bar-0: replicas: 4,5. adding: 5.\n" +
				"foo-0: replicas: 1,2.\n" +
				"foo-1: replicas: 1,2,3. adding: 3. removing: 1.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, tc.got) })
	}
}

// The throttled replicas Kafka's tool computes: the leader side lists
// the current replicas (sources), the follower side the added ones; a
// partition already moving keeps the sources of that move.
func TestReassignThrottles(t *testing.T) {
	ongoing := map[TopicPartition]OngoingReassignment{
		// Moving from 1,2 to 2,3: all replicas 1,2,3 while 3 is added.
		tp("bar", 0): {Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{1}},
	}
	proposed := map[TopicPartition][]int32{
		tp("foo", 0):  {3, 4},
		tp("foo", 10): {1, 2, 5},
		tp("baz", 0):  {2, 1}, // a reorder: no destination
		tp("bar", 0):  {2, 4}, // resubmitted elsewhere with --additional
	}
	current := map[TopicPartition][]int32{
		tp("foo", 0): {1, 2}, tp("foo", 10): {1, 2}, tp("baz", 0): {1, 2}, tp("bar", 0): {1, 2, 3},
	}
	m, err := proposedMoves(ongoing, proposed, current)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"foo": "0:1,0:2,10:1,10:2", "bar": "0:1,0:2", "baz": "0:1,0:2"}, m.leaderThrottles())
	require.Equal(t, map[string]string{"foo": "0:3,0:4,10:5", "bar": "0:4", "baz": ""}, m.followerThrottles())
	require.Equal(t, []int32{1, 2, 3, 4, 5}, m.reassigningBrokers())

	_, err = proposedMoves(nil, map[TopicPartition][]int32{tp("x", 0): {1}}, nil)
	require.EqualError(t, err, "Trying to reassign a topic partition x-0 with 0 replicas")
}

func TestProposeAssignment(t *testing.T) {
	current := map[TopicPartition][]int32{
		tp("foo", 0): {0, 1}, tp("foo", 1): {1, 0}, tp("foo", 2): {0, 1},
		tp("bar", 0): {0},
	}
	zero := func(int) int { return 0 }
	got, err := proposeAssignment(current, []int32{3, 4, 5}, nil, zero)
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition][]int32{
		tp("foo", 0): {3, 4}, tp("foo", 1): {4, 5}, tp("foo", 2): {5, 3},
		tp("bar", 0): {3},
	}, got)

	// Rack-aware: racks alternate (3 a, 5 b, 4 a), so each partition spans both.
	got, err = proposeAssignment(current, []int32{3, 4, 5}, map[int32]string{3: "a", 4: "a", 5: "b"}, zero)
	require.NoError(t, err)
	require.Equal(t, map[TopicPartition][]int32{
		tp("foo", 0): {3, 5}, tp("foo", 1): {5, 4}, tp("foo", 2): {4, 5},
		tp("bar", 0): {3},
	}, got)

	_, err = proposeAssignment(current, []int32{3}, nil, zero)
	require.EqualError(t, err, "Replication factor: 2 larger than available brokers: 1.")
}
