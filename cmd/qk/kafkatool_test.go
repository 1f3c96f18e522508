package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests run the Kafka shell tools (log-dirs, delete-records,
// get-offsets, broker-api-versions, topic create --replica-assignment)
// against franz-go's kfake; kafkatool_broker_test.go runs the same
// checks (checkKafkaTools) against qk brokers. The expected lines are
// Kafka's formats with the values computed from what each test wrote.

// toolCluster is a cluster the checks run against.
type toolCluster struct {
	bootstrap string
	adm       *kadm.Client
	cl        *kgo.Client
	brokers   []int32 // sorted
	// exactAssignment: the cluster places replicas as asked (kfake
	// takes only the partition count and replication factor from a
	// replica assignment).
	exactAssignment bool
}

// newToolCluster connects to bootstrap and lists its brokers.
func newToolCluster(t *testing.T, addrs []string) toolCluster {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	bs, err := adm.ListBrokers(t.Context())
	require.NoError(t, err)
	ids := bs.NodeIDs()
	slices.Sort(ids)
	return toolCluster{bootstrap: strings.Join(addrs, ","), adm: adm, cl: cl, brokers: ids}
}

// tool runs qk with --bootstrap-server and returns stdout, stderr, error.
func (c toolCluster) tool(t *testing.T, cmd string, args ...string) (string, string, error) {
	t.Helper()
	flag := "--bootstrap-server"
	if cmd == "topic" {
		flag = "-b" // qk's own command
	}
	return runQK(t, append([]string{cmd, flag, c.bootstrap}, args...)...)
}

// mustTool is tool that must succeed with nothing on stderr.
func (c toolCluster) mustTool(t *testing.T, cmd string, args ...string) string {
	t.Helper()
	out, stderr, err := c.tool(t, cmd, args...)
	require.NoError(t, err, "qk %s %v: %s", cmd, args, stderr)
	require.Empty(t, stderr)
	return out
}

// produceN writes n records to topic's partition p and waits for them.
func (c toolCluster) produceN(t *testing.T, topic string, p int32, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v%d", i)}
		require.NoError(t, c.cl.ProduceSync(ctx, r).FirstErr())
	}
}

// checkKafkaTools creates a topic of three partitions on the cluster's
// brokers with --replica-assignment, writes 5, 3 and 0 records to them and
// checks each tool's lines against the counts.
func checkKafkaTools(t *testing.T, c toolCluster) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	bs := c.brokers
	require.NotEmpty(t, bs)
	at := func(i int) int32 { return bs[i%len(bs)] }
	// Partition i on brokers i, i+1 (of the cluster's, in turn); one
	// replica when the cluster has one broker.
	rf := min(2, len(bs))
	var assign []string
	want := map[int32][]int32{}
	for p := range 3 {
		var ids []string
		for r := range rf {
			ids = append(ids, fmt.Sprint(at(p+r)))
			want[int32(p)] = append(want[int32(p)], at(p+r))
		}
		assign = append(assign, strings.Join(ids, ":"))
	}
	out := c.mustTool(t, "topic", "create", "tools", "--replica-assignment", strings.Join(assign, ","))
	require.Regexp(t, `(?m)^tools +created$`, out)
	td, err := c.adm.ListTopics(ctx, "tools")
	require.NoError(t, err)
	require.NoError(t, td["tools"].Err)
	got := map[int32][]int32{}
	for p, d := range td["tools"].Partitions {
		got[p] = d.Replicas
	}
	require.Len(t, got, 3)
	for p := range int32(3) {
		require.Len(t, got[p], rf)
	}
	if c.exactAssignment {
		require.Equal(t, want, got, "replicas as --replica-assignment %s", strings.Join(assign, ","))
	}
	c.produceN(t, "tools", 0, 5)
	c.produceN(t, "tools", 1, 3)

	t.Run("get-offsets", func(t *testing.T) {
		require.Equal(t, "tools:0:5\ntools:1:3\ntools:2:0\n", c.mustTool(t, "get-offsets", "--topic", "tools"))
		require.Equal(t, "tools:0:0\ntools:1:0\ntools:2:0\n", c.mustTool(t, "get-offsets", "--topic", "to.ls", "--time", "-2"))
		require.Equal(t, "tools:1:3\n", c.mustTool(t, "get-offsets", "--topic", "tools", "--partitions", "1", "--time", "latest"))
		require.Equal(t, "tools:0:5\ntools:1:3\n", c.mustTool(t, "get-offsets", "--topic-partitions", "tools:-2"))
		// A timestamp after every record: no offset, so no line (the
		// empty partition has none either).
		future := fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())
		require.Empty(t, c.mustTool(t, "get-offsets", "--topic", "tools", "--time", future))
		// Without --topic every topic, sorted: tools after the rest.
		all := c.mustTool(t, "get-offsets")
		require.Regexp(t, `(?s)tools:0:5\ntools:1:3\ntools:2:0\n$`, all)
		lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
		require.True(t, slices.IsSortedFunc(lines, func(a, b string) int {
			return strings.Compare(strings.SplitN(a, ":", 2)[0], strings.SplitN(b, ":", 2)[0])
		}), "sorted by topic: %q", lines)
		for _, l := range lines {
			require.Regexp(t, `^[^:]+:\d+:\d+$`, l)
		}
	})

	t.Run("delete-records", func(t *testing.T) {
		f := writeFile(t, "del.json", `{"partitions":[{"topic":"tools","partition":1,"offset":-1},{"topic":"tools","partition":0,"offset":2}],"version":1}`)
		out := c.mustTool(t, "delete-records", "--offset-json-file", f)
		require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\n"+
			"partition: tools-0\tlow_watermark: 2\npartition: tools-1\tlow_watermark: 3\n", out)
		require.Equal(t, "tools:0:2\ntools:1:3\ntools:2:0\n", c.mustTool(t, "get-offsets", "--topic", "tools", "--time", "earliest"))
		// Past the high watermark: the partition's error as Java names it.
		f = writeFile(t, "far.json", `{"partitions":[{"topic":"tools","partition":0,"offset":99}]}`)
		out, _, err := c.tool(t, "delete-records", "--offset-json-file", f)
		require.EqualError(t, err, "delete records: 1 of 1 partitions failed")
		require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\n"+
			"partition: tools-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "+kerr.OffsetOutOfRange.Description+"\n", out)
	})

	t.Run("log-dirs", func(t *testing.T) {
		out := c.mustTool(t, "log-dirs", "--describe", "--topic-list", "tools")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Len(t, lines, 3)
		require.Equal(t, "Querying brokers for log directories information", lines[0])
		require.Equal(t, "Received log directory information from brokers "+joinIDs(bs), lines[1])
		doc := parseLogDirs(t, lines[2])
		require.Equal(t, 1, doc.Version)
		var ids []int32
		hosted := map[int32][]string{}
		for _, b := range doc.Brokers {
			ids = append(ids, b.Broker)
			for _, d := range b.LogDirs {
				require.NotEmpty(t, d.LogDir)
				require.Nil(t, d.Error)
				for _, p := range d.Partitions {
					require.False(t, p.IsFuture)
					require.GreaterOrEqual(t, p.Size, int64(0))
					hosted[b.Broker] = append(hosted[b.Broker], p.Partition)
				}
			}
		}
		require.Equal(t, bs, ids)
		// Each broker reports exactly the partitions it holds replicas
		// of (kfake, one store for all its brokers, reports every
		// partition on each).
		wantHosted := map[int32][]string{}
		for p := range int32(3) {
			for _, r := range got[p] {
				wantHosted[r] = append(wantHosted[r], fmt.Sprintf("tools-%d", p))
			}
		}
		for b := range hosted {
			slices.Sort(hosted[b])
			slices.Sort(wantHosted[b])
		}
		if c.exactAssignment {
			require.Equal(t, wantHosted, hosted)
		}

		// --broker-list: only those brokers, in the lines and the JSON.
		last := bs[len(bs)-1]
		out = c.mustTool(t, "log-dirs", "--describe", "--broker-list", fmt.Sprint(last), "--topic-list", "nosuch")
		lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Equal(t, fmt.Sprintf("Received log directory information from brokers %d", last), lines[1])
		doc = parseLogDirs(t, lines[2])
		require.Len(t, doc.Brokers, 1)
		require.Equal(t, last, doc.Brokers[0].Broker)
		for _, d := range doc.Brokers[0].LogDirs {
			require.Empty(t, d.Partitions, "--topic-list nosuch shows no partitions")
		}
		_, _, err := c.tool(t, "log-dirs", "--describe", "--broker-list", "4242,"+fmt.Sprint(last))
		require.EqualError(t, err, "ERROR: The given brokers do not exist from --broker-list: 4242. Current existent brokers: "+joinIDs(bs))
	})

	t.Run("broker-api-versions", func(t *testing.T) {
		out := c.mustTool(t, "broker-api-versions")
		vs, err := c.adm.ApiVersions(ctx)
		require.NoError(t, err)
		blocks := strings.Split(strings.TrimSuffix(out, ")\n"), ")\n")
		require.Len(t, blocks, len(bs))
		head := regexp.MustCompile(`^127\.0\.0\.1:\d+ \(id: (\d+) rack: (\S+)\) -> \($`)
		for i, b := range blocks {
			lines := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
			m := head.FindStringSubmatch(lines[0])
			require.NotNil(t, m, "first line %q", lines[0])
			require.Equal(t, fmt.Sprint(bs[i]), m[1])
			bv, ok := vs[bs[i]]
			require.True(t, ok)
			entries := lines[1:]
			for j, e := range entries {
				if j < len(entries)-1 {
					require.True(t, strings.HasSuffix(e, ","), "line %q ends with a comma", e)
					e = strings.TrimSuffix(e, ",")
				} else {
					require.False(t, strings.HasSuffix(e, ","), "the last line %q has no comma", e)
				}
				require.Regexp(t, `^\t(\w+)\((\d+)\): (UNSUPPORTED|\d+( to \d+)? \[usable: \d+\])$`, e)
			}
			// Produce and ApiVersions, computed from the broker's answer
			// and franz-go's newest versions.
			for _, key := range []int16{0, 18} {
				lo, hi, ok := bv.KeyVersions(key)
				require.True(t, ok)
				usable := min(kmsg.RequestForKey(key).MaxVersion(), hi)
				want := fmt.Sprintf("\t%s(%d): %d to %d [usable: %d],", kafkaAPIName(key), key, lo, hi, usable)
				require.Contains(t, entries, want)
			}
		}
	})
}

// logDirsDoc is kafka-log-dirs.sh's JSON, as a script would read it.
type logDirsDoc struct {
	Version int `json:"version"`
	Brokers []struct {
		Broker  int32 `json:"broker"`
		LogDirs []struct {
			LogDir     string  `json:"logDir"`
			Error      *string `json:"error"`
			Partitions []struct {
				Partition string `json:"partition"`
				Size      int64  `json:"size"`
				OffsetLag int64  `json:"offsetLag"`
				IsFuture  bool   `json:"isFuture"`
			} `json:"partitions"`
		} `json:"logDirs"`
	} `json:"brokers"`
}

func parseLogDirs(t *testing.T, line string) logDirsDoc {
	t.Helper()
	var doc logDirsDoc
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc), "log-dirs JSON %s", line)
	// Kafka's field order.
	require.Regexp(t, `^\{"version":1,"brokers":\[(\{"broker":\d+,"logDirs":\[.*\]\},?)*\]\}$`, line)
	return doc
}

func TestKafkaToolsKfake(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	checkKafkaTools(t, newToolCluster(t, kc.ListenAddrs()))
}

// A log dir that failed shows the Java exception class of its error and no
// partitions (kfake answers through a control function).
func TestLogDirsErrorKfake(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	kc.ControlKey(int16(kmsg.DescribeLogDirs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		resp := r.(*kmsg.DescribeLogDirsRequest).ResponseKind().(*kmsg.DescribeLogDirsResponse)
		bad := kmsg.NewDescribeLogDirsResponseDir()
		bad.Dir, bad.ErrorCode = "/disk2", kerr.KafkaStorageError.Code
		good := kmsg.NewDescribeLogDirsResponseDir()
		good.Dir = "/disk1"
		rt := kmsg.NewDescribeLogDirsResponseDirTopic()
		rt.Topic = "t"
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size, rp.OffsetLag = 0, 123, 4
		rt.Partitions = append(rt.Partitions, rp)
		good.Topics = append(good.Topics, rt)
		resp.Dirs = append(resp.Dirs, bad, good)
		return resp, nil, true
	})
	c := newToolCluster(t, kc.ListenAddrs())
	out := c.mustTool(t, "log-dirs", "--describe")
	require.Equal(t, "Querying brokers for log directories information\n"+
		"Received log directory information from brokers 0\n"+
		`{"version":1,"brokers":[{"broker":0,"logDirs":[`+
		`{"logDir":"/disk1","error":null,"partitions":[{"partition":"t-0","size":123,"offsetLag":4,"isFuture":false}]},`+
		`{"logDir":"/disk2","error":"org.apache.kafka.common.errors.KafkaStorageException","partitions":[]}]}]}`+"\n", out)
}

// An API the broker lacks is UNSUPPORTED, one the client does not know is
// UNKNOWN(key), a range of one version is one number, and a broker whose
// oldest version is past franz-go's newest is "node too new".
func TestWriteNodeAPIVersions(t *testing.T) {
	key := func(k, lo, hi int16) kmsg.ApiVersionsResponseApiKey {
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = k, lo, hi
		return v
	}
	produceMax := (&kmsg.ProduceRequest{}).MaxVersion()
	var b strings.Builder
	writeNodeAPIVersions(&b, []kmsg.ApiVersionsResponseApiKey{
		key(18, 0, 3), key(0, produceMax+1, produceMax+2), key(3, 0, 999), key(1000, 0, 1), key(46, 0, 0),
	})
	lines := strings.Split(b.String(), "\n")
	require.Equal(t, "(", lines[0])
	require.Equal(t, fmt.Sprintf("\tProduce(0): %d to %d [unusable: node too new],", produceMax+1, produceMax+2), lines[1])
	require.Equal(t, "\tFetch(1): UNSUPPORTED,", lines[2])
	require.Contains(t, lines, fmt.Sprintf("\tMetadata(3): 0 to 999 [usable: %d],", (&kmsg.MetadataRequest{}).MaxVersion()))
	require.Contains(t, lines, "\tApiVersions(18): 0 to 3 [usable: 3],")
	require.Contains(t, lines, "\tInitProducerId(22): UNSUPPORTED,")
	require.Contains(t, lines, "\tListPartitionReassignments(46): 0 [usable: 0],")
	require.Contains(t, lines, "\tAlterPartitionReassignments(45): UNSUPPORTED,")
	require.NotContains(t, b.String(), "Vote(52)", "controller-only APIs are not listed")
	require.NotContains(t, b.String(), "LeaderAndIsr(4)")
	require.Equal(t, "\tUNKNOWN(1000): 0 to 1", lines[len(lines)-3])
	require.Equal(t, ")", lines[len(lines)-2])
	require.Equal(t, "", lines[len(lines)-1])
}

func TestJavaExceptionName(t *testing.T) {
	for _, tc := range []struct {
		err  *kerr.Error
		want string
	}{
		{kerr.KafkaStorageError, "org.apache.kafka.common.errors.KafkaStorageException"},
		{kerr.UnknownTopicOrPartition, "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"},
		{kerr.OffsetOutOfRange, "org.apache.kafka.common.errors.OffsetOutOfRangeException"},
		{kerr.TopicAuthorizationFailed, "org.apache.kafka.common.errors.TopicAuthorizationException"},
		{kerr.NotLeaderForPartition, "org.apache.kafka.common.errors.NotLeaderOrFollowerException"},
		{kerr.RequestTimedOut, "org.apache.kafka.common.errors.TimeoutException"},
		{kerr.UnknownServerError, "org.apache.kafka.common.errors.UnknownServerException"},
		{kerr.LogDirNotFound, "org.apache.kafka.common.errors.LogDirNotFoundException"},
		{kerr.InvalidRecord, "org.apache.kafka.common.InvalidRecordException"},
		{kerr.PolicyViolation, "org.apache.kafka.common.errors.PolicyViolationException"},
		{kerr.NetworkException, "org.apache.kafka.common.errors.NetworkException"},
		{kerr.SaslAuthenticationFailed, "org.apache.kafka.common.errors.SaslAuthenticationException"},
		{kerr.GroupIDNotFound, "org.apache.kafka.common.errors.GroupIdNotFoundException"},
		{kerr.TopicAlreadyExists, "org.apache.kafka.common.errors.TopicExistsException"},
		{kerr.InvalidProducerEpoch, "org.apache.kafka.common.errors.InvalidProducerEpochException"},
	} {
		t.Run(tc.err.Message, func(t *testing.T) {
			require.Equal(t, tc.want, javaExceptionName(tc.err))
		})
	}
}

func TestParseReplicaAssignment(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    [][]int32
		wantErr string
	}{
		{in: "1:2:3,2:3:1", want: [][]int32{{1, 2, 3}, {2, 3, 1}}},
		{in: "0", want: [][]int32{{0}}},
		{in: " 4 : 5 ,5:4", want: [][]int32{{4, 5}, {5, 4}}},
		{in: "1:2:1,2:3", wantErr: "Partition replica lists may not contain duplicate entries: 1"},
		{in: "1:2,2:3:1", wantErr: "Partition 1 has different replication factor: [2, 3, 1]"},
		{in: "1:x", wantErr: `--replica-assignment "1:x": partition 0: "x" is not a broker id`},
		{in: "1,,2", wantErr: `--replica-assignment "1,,2": partition 1: "" is not a broker id`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseReplicaAssignment(tc.in)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseDeleteRecordsJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []deleteRecordsOffset
		wantErr  string
	}{
		{name: "sorted", in: `{"partitions":[{"topic":"b","partition":0,"offset":-1},{"topic":"a","partition":2,"offset":3},{"topic":"a","partition":1,"offset":0}],"version":1}`,
			want: []deleteRecordsOffset{{"a", 1, 0}, {"a", 2, 3}, {"b", 0, -1}}},
		{name: "no version", in: `{"partitions":[{"topic":"a","partition":0,"offset":1}]}`, want: []deleteRecordsOffset{{"a", 0, 1}}},
		{name: "not json", in: `{"partitions":`, wantErr: "The input string is not a valid JSON: unexpected end of JSON input"},
		{name: "version 2", in: `{"partitions":[],"version":2}`, wantErr: "Not supported version field value 2"},
		{name: "no partitions", in: `{"version":1}`, wantErr: "Missing partitions field"},
		{name: "no offset", in: `{"partitions":[{"topic":"a","partition":0}]}`, wantErr: "partitions[0]: No such field exists: `offset`"},
		{name: "duplicate", in: `{"partitions":[{"topic":"a","partition":0,"offset":1},{"topic":"a","partition":0,"offset":2}]}`,
			wantErr: "Offset json file contains duplicate topic partitions: a-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDeleteRecordsJSON([]byte(tc.in))
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseOffsetTime(t *testing.T) {
	for in, want := range map[string]int64{
		"latest": -1, "-1": -1, "earliest": -2, "-2": -2, "max-timestamp": -3, "-3": -3,
		"earliest-local": -4, "latest-tiered": -5, "0": 0, "1700000000000": 1700000000000,
	} {
		got, err := parseOffsetTime(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "now", "-6", "1.5", "LATEST"} {
		_, err := parseOffsetTime(bad)
		require.ErrorContains(t, err, "Malformed time argument "+bad+". Please use -1 or latest", bad)
	}
}

func TestTopicPartitionFilters(t *testing.T) {
	f, err := parseTopicPartitions("orders:1,pay.*:2-4,audit,:7-,logs:-2")
	require.NoError(t, err)
	for _, tc := range []struct {
		topic string
		p     int32
		want  bool
	}{
		{"orders", 1, true}, {"orders", 0, false}, {"orders2", 1, false},
		{"payments", 2, true}, {"payments", 3, true}, {"payments", 4, false},
		{"audit", 0, true}, {"audit", 99, true},
		{"anything", 7, true}, {"anything", 6, false},
		{"logs", 1, true}, {"logs", 2, false},
	} {
		require.Equal(t, tc.want, f.allowed(tc.topic, tc.p), "%s-%d", tc.topic, tc.p)
	}
	_, err = parseTopicPartitions("a:b")
	require.EqualError(t, err, "Invalid rule specification: a:b")

	f, err = topicAndPartitionsFilter("a,b", true, "0,2")
	require.NoError(t, err)
	require.True(t, f.allowed("a", 0))
	require.True(t, f.allowed("b", 2))
	require.False(t, f.allowed("b", 1))
	require.False(t, f.allowed("ab", 0), "the regex matches whole names")
	f, err = topicAndPartitionsFilter("", false, "")
	require.NoError(t, err)
	require.True(t, f.allowed("x", 9))
	_, err = topicAndPartitionsFilter("(", true, "")
	require.ErrorContains(t, err, `--topic "(": error parsing regexp`)
}

// Every tool fails with one line naming the address when no broker
// answers, and prints nothing on stdout.
func TestKafkaToolsUnreachable(t *testing.T) {
	del := writeFile(t, "del.json", `{"partitions":[{"topic":"t","partition":0,"offset":1}]}`)
	for _, args := range [][]string{
		{"log-dirs", "--describe"},
		{"delete-records", "--offset-json-file", del},
		{"get-offsets", "--topic", "t"},
		{"broker-api-versions"},
	} {
		t.Run(args[0], func(t *testing.T) {
			out, _, err := runQK(t, append(args, "--bootstrap-server", "127.0.0.1:1", "--request-timeout", "1s")...)
			require.ErrorContains(t, err, "cannot reach cluster at 127.0.0.1:1")
			require.Empty(t, out)
		})
	}
}

// --command-config gives the bootstrap servers and client.id; a property
// qk cannot honour is refused.
func TestKafkaToolsCommandConfig(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "cc"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	t.Setenv("QK_BROKERS", "")
	props := writeFile(t, "admin.properties", "bootstrap.servers="+strings.Join(kc.ListenAddrs(), ",")+"\nclient.id=ops-tool\n")
	out, stderr, err := runQK(t, "get-offsets", "--command-config", props, "--topic", "cc")
	require.NoError(t, err, stderr)
	require.Equal(t, "cc:0:0\ncc:1:0\n", out)
	bad := writeFile(t, "bad.properties", "linger.ms=5\n")
	_, _, err = runQK(t, "broker-api-versions", "--command-config", bad, "--bootstrap-server", kc.ListenAddrs()[0])
	require.ErrorContains(t, err, `admin client property "linger.ms" is not supported by qk`)
}

// A topic create with --replica-assignment that the cluster refuses reports
// the broker's error after the other topics' results.
func TestTopicCreateReplicaAssignmentErrorsKfake(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(2))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	c := newToolCluster(t, kc.ListenAddrs())
	out := c.mustTool(t, "topic", "create", "a", "--replica-assignment", "0:1,1:0", "--dry-run")
	require.Regexp(t, `(?m)^a +validated$`, out)
	td, err := c.adm.ListTopics(t.Context(), "a")
	require.NoError(t, err)
	require.ErrorIs(t, td["a"].Err, kerr.UnknownTopicOrPartition, "--dry-run creates nothing")
	out = c.mustTool(t, "topic", "create", "a", "--replica-assignment", "0:1,1:0")
	require.Regexp(t, `(?m)^a +created$`, out)
	out = c.mustTool(t, "topic", "create", "a", "--replica-assignment", "0:1", "--if-not-exists")
	require.Regexp(t, `(?m)^a +exists$`, out)
	out, _, err = c.tool(t, "topic", "create", "b", "a", "--replica-assignment", "1:0")
	require.ErrorContains(t, err, "create topic a: TOPIC_ALREADY_EXISTS")
	require.Regexp(t, `(?m)^b +created$`, out)
	// The broker's message follows its error code.
	kc.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.CreateTopicsRequest)
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, kerr.PolicyViolation.Code
			st.ErrorMessage = kmsg.StringPtr("three replicas at least")
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	out, _, err = c.tool(t, "topic", "create", "c", "--replica-assignment", "0:1")
	require.EqualError(t, err, "create topic c: POLICY_VIOLATION: three replicas at least")
	require.Empty(t, out)
}

// A broker that refuses ApiVersions is "-> ERROR: <exception>: <message>"
// as Kafka prints a failed broker, the other brokers are still printed and
// the exit status is 1.
func TestBrokerAPIVersionsErrorKfake(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(2))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	c := newToolCluster(t, kc.ListenAddrs())
	kc.ControlKey(int16(kmsg.ApiVersions), func(r kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		req := r.(*kmsg.ApiVersionsRequest)
		// Only qk's own request on broker 1, not the client's handshake.
		if req.ClientSoftwareName != "qk" || kc.CurrentNode() != 1 {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil, true
	})
	out, _, err := c.tool(t, "broker-api-versions")
	require.EqualError(t, err, "broker-api-versions: 1 of 2 brokers did not answer")
	require.Regexp(t, `(?m)^127\.0\.0\.1:\d+ \(id: 0 rack: \S+\) -> \($`, out)
	require.Regexp(t, `(?m)^127\.0\.0\.1:\d+ \(id: 1 rack: \S+\) -> ERROR: org\.apache\.kafka\.common\.errors\.ClusterAuthorizationException: Cluster authorization failed\.$`, out)
}
