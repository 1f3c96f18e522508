//go:build linux

package broker_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/log"
)

func ptr(s string) *string { return &s }

// rawCreateTopics sends CreateTopics v7 and returns the topic results.
func rawCreateTopics(t *testing.T, c *rawConn, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) []kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 10000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	resp := kmsg.NewPtrCreateTopicsResponse()
	c.roundTrip(req, resp)
	require.Len(t, resp.Topics, len(topics))
	return resp.Topics
}

func topicReq(name string, partitions int32, rf int16, configs map[string]*string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, v
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func TestCreateTopicsErrors(t *testing.T) {
	b := brokertest.StartBroker(t)
	c := dialRaw(t, b.Addr)
	require.Equal(t, int16(0), rawCreateTopics(t, c, false, topicReq("exists", 1, 1, nil))[0].ErrorCode)
	require.Equal(t, int16(0), rawCreateTopics(t, c, false, topicReq("a.b", 1, 1, nil))[0].ErrorCode)

	assigned := topicReq("assigned", -1, -1, nil)
	for p := range int32(3) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{0}
		assigned.ReplicaAssignment = append(assigned.ReplicaAssignment, a)
	}
	badAssign := topicReq("bad-assign", -1, -1, nil)
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{7}
	badAssign.ReplicaAssignment = append(badAssign.ReplicaAssignment, a)
	both := topicReq("both", 2, 1, nil)
	both.ReplicaAssignment = assigned.ReplicaAssignment

	for _, tc := range []struct {
		name string
		req  kmsg.CreateTopicsRequestTopic
		want int16
	}{
		{"ok", topicReq("fresh", 3, 1, map[string]*string{"retention.ms": ptr("60000")}), 0},
		{"defaults", topicReq("defaults", -1, -1, nil), 0},
		{"assignment", assigned, 0},
		{"exists", topicReq("exists", 1, 1, nil), kerr.TopicAlreadyExists.Code},
		{"empty name", topicReq("", 1, 1, nil), kerr.InvalidTopicException.Code},
		{"dot", topicReq(".", 1, 1, nil), kerr.InvalidTopicException.Code},
		{"dotdot", topicReq("..", 1, 1, nil), kerr.InvalidTopicException.Code},
		{"slash", topicReq("a/b", 1, 1, nil), kerr.InvalidTopicException.Code},
		{"too long", topicReq(strings.Repeat("x", 250), 1, 1, nil), kerr.InvalidTopicException.Code},
		{"249 is fine", topicReq(strings.Repeat("y", 249), 1, 1, nil), 0},
		{"collides", topicReq("a_b", 1, 1, nil), kerr.InvalidTopicException.Code},
		{"zero partitions", topicReq("zero", 0, 1, nil), kerr.InvalidPartitions.Code},
		{"rf above brokers", topicReq("rf2", 1, 2, nil), kerr.InvalidReplicationFactor.Code},
		{"rf zero", topicReq("rf0", 1, 0, nil), kerr.InvalidReplicationFactor.Code},
		{"unknown config", topicReq("cfg1", 1, 1, map[string]*string{"no.such.config": ptr("1")}), kerr.InvalidConfig.Code},
		{"bad config value", topicReq("cfg2", 1, 1, map[string]*string{"retention.ms": ptr("soon")}), kerr.InvalidConfig.Code},
		{"null config value", topicReq("cfg3", 1, 1, map[string]*string{"retention.ms": nil}), kerr.InvalidRequest.Code},
		{"unknown broker", badAssign, kerr.InvalidReplicaAssignment.Code},
		{"assignment and count", both, kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rawCreateTopics(t, c, false, tc.req)[0]
			require.Equal(t, tc.want, got.ErrorCode, "error %v: %v", kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage)
			if tc.want == 0 {
				require.NotEqual(t, [16]byte{}, got.TopicID)
				require.Positive(t, got.NumPartitions)
				require.Equal(t, int16(1), got.ReplicationFactor)
				require.NotEmpty(t, got.Configs)
			} else {
				require.NotNil(t, got.ErrorMessage)
			}
		})
	}

	// A name twice in one request is refused for both.
	dup := rawCreateTopics(t, c, false, topicReq("twice", 1, 1, nil), topicReq("twice", 1, 1, nil))
	require.Equal(t, kerr.InvalidRequest.Code, dup[0].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, dup[1].ErrorCode)

	// validate_only checks and creates nothing.
	v := rawCreateTopics(t, c, true, topicReq("validated", 4, 1, nil))[0]
	require.Equal(t, int16(0), v.ErrorCode)
	require.Equal(t, int32(4), v.NumPartitions)
	v = rawCreateTopics(t, c, true, topicReq("exists", 4, 1, nil))[0]
	require.Equal(t, kerr.TopicAlreadyExists.Code, v.ErrorCode)

	adm := newAdmin(t, b.Addr)
	topics, err := adm.ListTopics(testCtx(t))
	require.NoError(t, err)
	require.False(t, topics.Has("validated"), "validate_only created the topic")
	require.Equal(t, 3, len(topics["assigned"].Partitions))
	require.Equal(t, 1, len(topics["defaults"].Partitions), "num.partitions default")
	for _, p := range topics["assigned"].Partitions {
		require.Equal(t, []int32{0}, p.Replicas)
		require.Equal(t, int32(0), p.Leader)
	}
	require.DirExists(t, filepath.Join(b.Dir, "fresh-2"))
}

func TestMetadata(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithConfig("auto.create.topics.enable", "false"))
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "meta", 3, nil)
	c := dialRaw(t, b.Addr)
	for v := int16(0); v <= 13; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		for _, n := range []string{"meta", "missing"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = ptr(n)
			req.Topics = append(req.Topics, rt)
		}
		resp := kmsg.NewPtrMetadataResponse()
		c.roundTrip(req, resp)
		require.Len(t, resp.Brokers, 1, "v%d", v)
		require.Equal(t, b.Addr, net.JoinHostPort(resp.Brokers[0].Host, strconv.Itoa(int(resp.Brokers[0].Port))))
		require.Len(t, resp.Topics, 2)
		meta, missing := resp.Topics[0], resp.Topics[1]
		require.Equal(t, int16(0), meta.ErrorCode)
		require.Len(t, meta.Partitions, 3)
		for _, p := range meta.Partitions {
			require.Equal(t, int32(0), p.Leader)
			require.Equal(t, []int32{0}, p.Replicas)
			require.Equal(t, []int32{0}, p.ISR)
		}
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, missing.ErrorCode, "v%d: no auto-creation", v)
		if v >= 1 {
			require.Equal(t, int32(0), resp.ControllerID)
		}
		if v >= 2 {
			require.Equal(t, b.ClusterID(), *resp.ClusterID)
		}
		if v >= 10 {
			require.NotEqual(t, [16]byte{}, meta.TopicID)
		}
		if v >= 8 {
			require.Equal(t, int32(-2147483648), meta.AuthorizedOperations)
		}
	}
}

func TestAutoCreateTopics(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithConfig("num.partitions", "4"))
	// Metadata with auto creation allowed creates the topic complete.
	cl := newClient(t, []string{b.Addr}, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto"))
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("x")}).FirstErr())
	topics, err := newAdmin(t, b.Addr).ListTopics(testCtx(t))
	require.NoError(t, err)
	require.Len(t, topics["auto"].Partitions, 4)

	// Produce to an unknown topic creates it too.
	c := dialRaw(t, b.Addr)
	p := rawProduce(t, c, "made-by-produce", idempotentBatch(t, -1, -1, 2))
	require.Equal(t, int16(0), p.ErrorCode)
	require.Equal(t, int64(0), p.BaseOffset)
	p = rawProduce(t, c, "bad name!", idempotentBatch(t, -1, -1, 2))
	require.Equal(t, kerr.InvalidTopicException.Code, p.ErrorCode)
}

func TestTopicConfigs(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "cfg", 1, map[string]*string{"retention.ms": ptr("3600000")})

	describe := func() map[string]kadm.Config {
		rc, err := adm.DescribeTopicConfigs(ctx, "cfg")
		require.NoError(t, err)
		require.Len(t, rc, 1)
		require.NoError(t, rc[0].Err)
		out := map[string]kadm.Config{}
		for _, c := range rc[0].Configs {
			out[c.Key] = c
		}
		return out
	}
	got := describe()
	require.Equal(t, "3600000", *got["retention.ms"].Value)
	require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, got["retention.ms"].Source)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, got["segment.bytes"].Source)
	require.Equal(t, "1073741824", *got["segment.bytes"].Value)
	require.Equal(t, "delete", *got["cleanup.policy"].Value)

	// Incremental: SET, DELETE, APPEND to a list.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: ptr("1048576")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: ptr("compact")},
	}, "cfg")
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	got = describe()
	require.Equal(t, "1048576", *got["segment.bytes"].Value)
	require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, got["segment.bytes"].Source)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, got["retention.ms"].Source)
	require.ElementsMatch(t, []string{"delete", "compact"}, strings.Split(*got["cleanup.policy"].Value, ","))
	// Applied to the log at once.
	require.Equal(t, int64(1048576), partitionLog(t, b, "cfg", 0).Config().SegmentBytes)

	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: ptr("delete")}}, "cfg")
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	require.Equal(t, "compact", *describe()["cleanup.policy"].Value)

	// Errors: unknown key INVALID_CONFIG, bad value INVALID_REQUEST,
	// APPEND to a non-list INVALID_CONFIG, unknown topic.
	for _, tc := range []struct {
		op   kadm.AlterConfig
		want error
	}{
		{kadm.AlterConfig{Name: "no.such", Value: ptr("1")}, kerr.InvalidConfig},
		{kadm.AlterConfig{Name: "retention.ms", Value: ptr("never")}, kerr.InvalidRequest},
		{kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: ptr("1")}, kerr.InvalidConfig},
	} {
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{tc.op}, "cfg")
		require.NoError(t, err)
		require.ErrorIs(t, resp[0].Err, tc.want, "%+v", tc.op)
	}
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: ptr("1")}}, "nope")
	require.NoError(t, err)
	require.ErrorIs(t, resp[0].Err, kerr.UnknownTopicOrPartition)

	// validate_only changes nothing.
	resp, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.bytes", Value: ptr("2097152")}}, "cfg")
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	require.Equal(t, "1048576", *describe()["segment.bytes"].Value)

	// Legacy AlterConfigs replaces every override.
	resp, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: ptr("5000")}}, "cfg")
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	got = describe()
	require.Equal(t, "5000", *got["max.message.bytes"].Value)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, got["segment.bytes"].Source, "replaced, not merged")
}

func TestBrokerConfigs(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	rc, err := adm.DescribeBrokerConfigs(ctx, 0)
	require.NoError(t, err)
	require.NoError(t, rc[0].Err)
	byKey := map[string]kadm.Config{}
	for _, c := range rc[0].Configs {
		byKey[c.Key] = c
	}
	require.Equal(t, "0", *byKey["broker.id"].Value)
	require.Equal(t, b.Dir, *byKey["log.dirs"].Value)

	// A cluster-wide dynamic default changes the topic default at once.
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: ptr("7200000")}})
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	createTopic(t, adm, "inherits", 1, nil)
	tc, err := adm.DescribeTopicConfigs(ctx, "inherits")
	require.NoError(t, err)
	for _, c := range tc[0].Configs {
		if c.Key == "retention.ms" {
			require.Equal(t, "7200000", *c.Value)
			require.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, c.Source)
		}
	}
	require.Equal(t, int64(7200000), partitionLog(t, b, "inherits", 0).Config().RetentionMs)

	// Read-only settings cannot be altered at run time.
	resp, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "broker.id", Value: ptr("3")}}, 0)
	require.NoError(t, err)
	require.ErrorIs(t, resp[0].Err, kerr.InvalidRequest)
}

// TestReplicationThrottledRateConfigs: the dynamic-only replication quota
// settings are accepted by IncrementalAlterConfigs and AlterConfigs on the
// broker's resource and the cluster default, as kafka-reassign-partitions
// --throttle sets them, and DescribeConfigs shows them.
func TestReplicationThrottledRateConfigs(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	describe := func() map[string]kadm.Config {
		rc, err := adm.DescribeBrokerConfigs(ctx, 0)
		require.NoError(t, err)
		require.NoError(t, rc[0].Err)
		out := map[string]kadm.Config{}
		for _, c := range rc[0].Configs {
			out[c.Key] = c
		}
		return out
	}
	got := describe()
	require.Equal(t, "9223372036854775807", *got["leader.replication.throttled.rate"].Value)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, got["follower.replication.throttled.rate"].Source)

	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.rate", Value: ptr("1048576")},
		{Name: "follower.replication.throttled.rate", Value: ptr("2097152")},
	}, 0)
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	got = describe()
	require.Equal(t, "1048576", *got["leader.replication.throttled.rate"].Value)
	require.Equal(t, kmsg.ConfigSourceDynamicBrokerConfig, got["leader.replication.throttled.rate"].Source)
	require.Equal(t, int64(1048576), b.Server.Config().LeaderReplicationThrottledRate)
	require.Equal(t, int64(2097152), b.Server.Config().FollowerReplicationThrottledRate)

	// The cluster default, by the legacy AlterConfigs (which replaces the
	// resource's whole set).
	resp, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "follower.replication.throttled.rate", Value: ptr("4096")}})
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	require.Equal(t, int64(2097152), b.Server.Config().FollowerReplicationThrottledRate, "the per-broker value wins")

	resp, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"}}, 0)
	require.NoError(t, err)
	require.NoError(t, resp[0].Err)
	require.Equal(t, int64(4096), b.Server.Config().FollowerReplicationThrottledRate)
	require.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, describe()["follower.replication.throttled.rate"].Source)

	resp, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: ptr("-5")}}, 0)
	require.NoError(t, err)
	require.ErrorIs(t, resp[0].Err, kerr.InvalidRequest)
}

func TestDeleteTopics(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "doomed", 2, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("doomed"))
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr())
	before, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	oldID := before["doomed"].ID

	resp, err := adm.DeleteTopics(ctx, "doomed", "never-existed")
	require.NoError(t, err)
	require.NoError(t, resp["doomed"].Err)
	require.ErrorIs(t, resp["never-existed"].Err, kerr.UnknownTopicOrPartition)
	// The partition dirs are renamed aside at once and removed after
	// file.delete.delay.ms (60 s by default), as Kafka does.
	entries, err := os.ReadDir(b.Dir)
	require.NoError(t, err)
	aside := 0
	for _, e := range entries {
		require.NotContains(t, []string{"doomed-0", "doomed-1"}, e.Name(), "partition dir left behind")
		if strings.HasPrefix(e.Name(), "doomed-") && strings.HasSuffix(e.Name(), "-delete") {
			aside++
		}
	}
	require.Equal(t, 2, aside)
	// A new client: kgo answers metadata requests from a recent cache.
	after, err := newAdmin(t, b.Addr).ListTopics(ctx)
	require.NoError(t, err)
	require.False(t, after.Has("doomed"), "%+v", after["doomed"])

	// The name can be used again, for a new topic with a new id and no data.
	createTopic(t, adm, "doomed", 1, nil)
	again, err := newAdmin(t, b.Addr).ListTopics(ctx)
	require.NoError(t, err)
	require.NotEqual(t, oldID, again["doomed"].ID)
	end, err := adm.ListEndOffsets(ctx, "doomed")
	require.NoError(t, err)
	o, _ := end.Lookup("doomed", 0)
	require.Equal(t, int64(0), o.Offset)
}

func TestDeleteTopicDisabled(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithConfig("delete.topic.enable", "false"))
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "kept", 1, nil)
	resp, err := adm.DeleteTopics(testCtx(t), "kept")
	require.NoError(t, err)
	require.ErrorIs(t, resp["kept"].Err, kerr.TopicDeletionDisabled)
}

func TestCreatePartitions(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "grow", 1, nil)
	resp, err := adm.UpdatePartitions(ctx, 3, "grow")
	require.NoError(t, err)
	require.NoError(t, resp["grow"].Err)
	resp, err = adm.UpdatePartitions(ctx, 2, "grow")
	require.NoError(t, err)
	require.ErrorIs(t, resp["grow"].Err, kerr.InvalidPartitions)
	resp, err = adm.UpdatePartitions(ctx, 2, "absent")
	require.NoError(t, err)
	require.ErrorIs(t, resp["absent"].Err, kerr.UnknownTopicOrPartition)

	cl := newClient(t, []string{b.Addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 2, Value: []byte("new")}).FirstErr())
	got := consume(t, []string{b.Addr}, "grow", 1)
	require.Equal(t, int32(2), got[0].Partition)
}

func TestDeleteRecords(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "trim", 1, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("trim"))
	for i := range 10 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 5})
	resp, err := adm.DeleteRecords(ctx, offs)
	require.NoError(t, err)
	r, _ := resp.Lookup("trim", 0)
	require.NoError(t, r.Err)
	require.Equal(t, int64(5), r.LowWatermark)
	start, err := adm.ListStartOffsets(ctx, "trim")
	require.NoError(t, err)
	s, _ := start.Lookup("trim", 0)
	require.Equal(t, int64(5), s.Offset)
	got := consume(t, []string{b.Addr}, "trim", 5)
	require.Equal(t, int64(5), got[0].Offset)

	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 99})
	resp, err = adm.DeleteRecords(ctx, offs)
	require.NoError(t, err)
	r, _ = resp.Lookup("trim", 0)
	require.ErrorIs(t, r.Err, kerr.OffsetOutOfRange)
}

func TestDescribeLogDirsAndCluster(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "sized", 2, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("sized"))
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1000)}).FirstErr())

	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	require.NoError(t, err)
	var total int64
	var parts int
	dirs.Each(func(d kadm.DescribedLogDir) {
		require.NoError(t, d.Err)
		require.Equal(t, b.Dir, d.Dir)
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			parts++
			total += p.Size
		})
	})
	require.Equal(t, 2, parts)
	require.Positive(t, total)

	meta, err := adm.BrokerMetadata(ctx)
	require.NoError(t, err)
	require.Equal(t, b.ClusterID(), meta.Cluster)
	require.Equal(t, int32(0), meta.Controller)

	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 1
	req.EndpointType = 1
	resp, err := req.RequestWith(ctx, newClient(t, []string{b.Addr}))
	require.NoError(t, err)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, b.ClusterID(), resp.ClusterID)
	require.Len(t, resp.Brokers, 1)
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "epochs", 1, nil)
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("epochs"))
	for range 3 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr())
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "epochs"
	for _, cur := range []int32{0, 5} {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, cur, 0
		rt.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{rt}
		resp, err := req.RequestWith(ctx, newClient(t, []string{b.Addr}))
		require.NoError(t, err)
		p := resp.Topics[0].Partitions[0]
		if cur == 0 {
			require.Equal(t, int16(0), p.ErrorCode)
			require.Equal(t, int32(0), p.LeaderEpoch)
			require.Equal(t, int64(3), p.EndOffset)
		} else {
			require.Equal(t, kerr.UnknownLeaderEpoch.Code, p.ErrorCode)
		}
	}
}

func TestApiVersionsMatchesTable(t *testing.T) {
	b := brokertest.StartBroker(t)
	c := dialRaw(t, b.Addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "qk-test", "1.0"
	resp := kmsg.NewPtrApiVersionsResponse()
	c.roundTrip(req, resp)
	require.Equal(t, int16(0), resp.ErrorCode)
	keys := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	require.Equal(t, [2]int16{3, 13}, keys[0], "Produce")
	require.Equal(t, [2]int16{4, 18}, keys[1], "Fetch")
	require.Len(t, keys, 48) // 29 (with AlterReplicaLogDirs, ElectLeaders, the two reassignment, the two SCRAM credential, the two client quota, the three ACL and the two SASL APIs) + the 11 group APIs + the 8 transaction APIs (with DescribeProducers)
	// Transactions: not the versions of transaction version 2 (KIP-890 part 2).
	require.Equal(t, [2]int16{0, 4}, keys[24], "AddPartitionsToTxn")
	require.Equal(t, [2]int16{0, 3}, keys[25], "AddOffsetsToTxn")
	require.Equal(t, [2]int16{0, 4}, keys[26], "EndTxn")
	require.Equal(t, [2]int16{0, 1}, keys[27], "WriteTxnMarkers")
	require.Equal(t, [2]int16{0, 4}, keys[28], "TxnOffsetCommit")
	require.Equal(t, [2]int16{0, 0}, keys[61], "DescribeProducers")
	require.Equal(t, [2]int16{0, 0}, keys[65], "DescribeTransactions")
	require.Equal(t, [2]int16{0, 2}, keys[66], "ListTransactions")
	require.Equal(t, [2]int16{0, 1}, keys[48], "DescribeClientQuotas")
	require.Equal(t, [2]int16{0, 1}, keys[49], "AlterClientQuotas")
	require.Equal(t, [2]int16{0, 0}, keys[50], "DescribeUserScramCredentials")
	require.Equal(t, [2]int16{0, 0}, keys[51], "AlterUserScramCredentials")
	require.Equal(t, [2]int16{0, 1}, keys[45], "AlterPartitionReassignments")
	require.Equal(t, [2]int16{0, 0}, keys[46], "ListPartitionReassignments")
	require.Equal(t, [2]int16{0, 5}, keys[18], "ApiVersions")
}

// partitionLog reaches the broker's log of a partition.
func partitionLog(t *testing.T, b *brokertest.Broker, topic string, partition int32) *log.Log {
	t.Helper()
	p, err := b.Replicas().Partition(topic, partition)
	require.NoError(t, err)
	return p.Log()
}

// TestApiVersionsV5 checks the cluster and node a client expects.
func TestApiVersionsV5(t *testing.T) {
	b := brokertest.StartBroker(t)
	c := dialRaw(t, b.Addr)
	for _, tc := range []struct {
		cluster *string
		node    int32
		want    *kerr.Error
	}{
		{nil, -1, nil},
		{ptr(b.ClusterID()), 0, nil},
		{ptr("someone-else"), 0, kerr.RebootstrapRequired},
		{ptr(b.ClusterID()), 7, kerr.RebootstrapRequired},
		{ptr(b.ClusterID()), -1, kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 5
		req.ClientSoftwareName, req.ClientSoftwareVersion = "qk-test", "1"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		resp := kmsg.NewPtrApiVersionsResponse()
		c.roundTrip(req, resp)
		want := int16(0)
		if tc.want != nil {
			want = tc.want.Code
		}
		require.Equal(t, want, resp.ErrorCode, "%+v", tc)
		require.NotEmpty(t, resp.ApiKeys)
	}
}
