package metadata_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

var ctx = context.Background()

// Real payloads, copied from the ZooKeeper snapshot of a Kafka 3.0.0
// cluster (kafka-formats.md §5, fixture kafka300-zk-zookeeper-snapshot).
const (
	realClusterID      = `{"version":"1","id":"ZAJx9RX0SFuisj92dpmVfg"}`
	realController     = `{"version":1,"brokerid":0,"timestamp":"1638888537571"}`
	realBroker         = `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://tuyen-laptop:9092"],"jmx_port":-1,"port":9092,"host":"tuyen-laptop","version":5,"timestamp":"1638888537455"}`
	realTopic          = `{"partitions":{"0":[0],"1":[0],"2":[0]},"topic_id":"2P63MtzYTASmr9ZbB4Mf_Q","adding_replicas":{},"removing_replicas":{},"version":3}`
	realPartitionState = `{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}`
	realTopicConfig    = `{"version":1,"config":{}}`
	realOffsetsConfig  = `{"version":1,"config":{"compression.type":"producer","cleanup.policy":"compact","segment.bytes":"104857600"}}`
	realProducerIDs    = `{"version":1,"broker":0,"block_start":"0","block_end":"999"}`
)

func newStore(t *testing.T) *embedded.Store {
	s := embedded.New()
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPaths(t *testing.T) {
	for got, want := range map[string]string{
		metadata.BrokerPath(0):                                                    "/brokers/ids/0",
		metadata.BrokerPath(1001):                                                 "/brokers/ids/1001",
		metadata.TopicPath("orders"):                                              "/brokers/topics/orders",
		metadata.TopicPartitionsPath("orders"):                                    "/brokers/topics/orders/partitions",
		metadata.PartitionPath("orders", 7):                                       "/brokers/topics/orders/partitions/7",
		metadata.PartitionStatePath("__consumer_offsets", 49):                     "/brokers/topics/__consumer_offsets/partitions/49/state",
		metadata.EntityConfigPath(metadata.ConfigTopics, "orders"):                "/config/topics/orders",
		metadata.EntityConfigPath(metadata.ConfigBrokers, metadata.DefaultEntity): "/config/brokers/<default>",
		metadata.DeleteTopicPath("orders"):                                        "/admin/delete_topics/orders",
	} {
		require.Equal(t, want, got)
		require.NoError(t, metadata.ValidatePath(got))
	}
}

func TestValidatePath(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/a-b_c.d", "/config/brokers/<default>", "/a/...", "/ünï"} {
		require.NoError(t, metadata.ValidatePath(p), p)
	}
	for _, p := range []string{"", "a", "/a/", "//a", "/a//b", "/./a", "/a/..", "/a\x00", "/a\x1f", "/a\u0085", "/\xff", "/a\ufff0", "/a\ue000"} {
		require.ErrorIs(t, metadata.ValidatePath(p), metadata.ErrBadPath, "%q", p)
	}
	require.Equal(t, "/", metadata.Parent("/a"))
	require.Equal(t, "/a", metadata.Parent("/a/b"))
	require.Equal(t, "/a", metadata.Parent("/a/"), "the parent of a sequential prefix")
	require.Equal(t, "/a", metadata.Join("/", "a"))
	require.Equal(t, "/a/b", metadata.Join("/a", "b"))
}

func TestBrokerRegistrationReal(t *testing.T) {
	b, err := metadata.UnmarshalBrokerRegistration([]byte(realBroker))
	require.NoError(t, err)
	require.Equal(t, metadata.BrokerRegistration{
		Version:   5,
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "tuyen-laptop", Port: 9092}},
		JMXPort:   -1,
		Timestamp: 1638888537455,
		Features:  map[string]metadata.FeatureRange{},
	}, b)
	require.Equal(t, realBroker, string(metadata.MarshalBrokerRegistration(b)), "byte for byte as Kafka 3.0 wrote it")
}

func TestBrokerRegistrationVersions(t *testing.T) {
	cases := []struct {
		name string
		json string
		want metadata.BrokerRegistration
	}{
		{"v1", `{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}`,
			metadata.BrokerRegistration{Version: 1, JMXPort: 9999, Timestamp: 2233345666,
				Endpoints: []metadata.Endpoint{{"PLAINTEXT", "PLAINTEXT", "localhost", 9092}}}},
		{"v2", `{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666","endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"]}`,
			metadata.BrokerRegistration{Version: 2, JMXPort: 9999, Timestamp: 2233345666,
				Endpoints: []metadata.Endpoint{{"PLAINTEXT", "PLAINTEXT", "host1", 9092}, {"SSL", "SSL", "host1", 9093}}}},
		{"v3 rack", `{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666","endpoints":["PLAINTEXT://host1:9092"],"rack":"dc1"}`,
			metadata.BrokerRegistration{Version: 3, JMXPort: 9999, Timestamp: 2233345666, Rack: "dc1",
				Endpoints: []metadata.Endpoint{{"PLAINTEXT", "PLAINTEXT", "host1", 9092}}}},
		{"v4 listeners", `{"version":4,"host":null,"port":-1,"jmx_port":9999,"timestamp":"2233345666","endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],"listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"SASL_PLAINTEXT"},"rack":"dc1"}`,
			metadata.BrokerRegistration{Version: 4, JMXPort: 9999, Timestamp: 2233345666, Rack: "dc1",
				Endpoints: []metadata.Endpoint{{"CLIENT", "SSL", "host1", 9092}, {"REPLICATION", "SASL_PLAINTEXT", "host1", 9093}}}},
		{"v5 features and unknown fields", `{"version":5,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1","endpoints":["PLAINTEXT://h:9092","INTERNAL://[::1]:9093"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","INTERNAL":"PLAINTEXT"},"features":{"metadata.version":{"min_version":1,"first_active_version":2,"max_version":3}},"future":{"x":[1]}}`,
			metadata.BrokerRegistration{Version: 5, JMXPort: -1, Timestamp: 1,
				Endpoints: []metadata.Endpoint{{"PLAINTEXT", "PLAINTEXT", "h", 9092}, {"INTERNAL", "PLAINTEXT", "::1", 9093}},
				Features:  map[string]metadata.FeatureRange{"metadata.version": {MinVersion: 1, MaxVersion: 3}}}},
		{"numeric timestamp, no jmx_port", `{"version":5,"endpoints":["PLAINTEXT://:9092"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"timestamp":1638888537455}`,
			metadata.BrokerRegistration{Version: 5, JMXPort: -1, Timestamp: 1638888537455,
				Endpoints: []metadata.Endpoint{{"PLAINTEXT", "PLAINTEXT", "", 9092}}}},
		{"lower-case listener", `{"version":4,"endpoints":["client://h:1"],"listener_security_protocol_map":{"client":"SSL"},"jmx_port":-1,"timestamp":"5"}`,
			metadata.BrokerRegistration{Version: 4, JMXPort: -1, Timestamp: 5,
				Endpoints: []metadata.Endpoint{{"CLIENT", "SSL", "h", 1}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := metadata.UnmarshalBrokerRegistration([]byte(tc.json))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			again, err := metadata.UnmarshalBrokerRegistration(metadata.MarshalBrokerRegistration(got))
			require.NoError(t, err)
			if tc.want.Version == 5 && tc.want.Features == nil {
				tc.want.Features = map[string]metadata.FeatureRange{}
			}
			require.Equal(t, tc.want, again, "round trip")
		})
	}
}

func TestBrokerRegistrationHTTPEndpoint(t *testing.T) {
	b := metadata.BrokerRegistration{
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "h", Port: 9092}},
		JMXPort:   -1, Timestamp: 7, HTTPEndpoint: "http://127.0.0.1:9644",
	}
	data := metadata.MarshalBrokerRegistration(b)
	require.JSONEq(t, `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
		"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"port":9092,"host":"h",
		"version":5,"timestamp":"7","qk_http_endpoint":"http://127.0.0.1:9644"}`, string(data))
	got, err := metadata.UnmarshalBrokerRegistration(data)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9644", got.HTTPEndpoint)

	// Without it (Kafka's own registrations, a qk broker with the HTTP
	// server disabled): decoded as "", and not written.
	got, err = metadata.UnmarshalBrokerRegistration([]byte(realBroker))
	require.NoError(t, err)
	require.Empty(t, got.HTTPEndpoint)
	b.HTTPEndpoint = ""
	require.NotContains(t, string(metadata.MarshalBrokerRegistration(b)), "qk_http_endpoint")
}

func TestBrokerRegistrationMarshal(t *testing.T) {
	b := metadata.BrokerRegistration{
		Endpoints: []metadata.Endpoint{
			{Listener: "INTERNAL", SecurityProtocol: "SSL", Host: "10.0.0.1", Port: 9093},
			{Listener: "EXTERNAL", SecurityProtocol: "PLAINTEXT", Host: "::1", Port: 9092},
		},
		JMXPort: -1, Timestamp: 42, Rack: "r1",
	}
	require.JSONEq(t, `{"features":{},"listener_security_protocol_map":{"INTERNAL":"SSL","EXTERNAL":"PLAINTEXT"},
		"endpoints":["INTERNAL://10.0.0.1:9093","EXTERNAL://[::1]:9092"],"jmx_port":-1,"port":9092,"host":"::1",
		"version":5,"timestamp":"42","rack":"r1"}`, string(metadata.MarshalBrokerRegistration(b)))

	b.Version = 4
	b.Endpoints = b.Endpoints[:1]
	require.JSONEq(t, `{"listener_security_protocol_map":{"INTERNAL":"SSL"},"endpoints":["INTERNAL://10.0.0.1:9093"],
		"jmx_port":-1,"port":-1,"host":null,"version":4,"timestamp":"42","rack":"r1"}`, string(metadata.MarshalBrokerRegistration(b)))
}

func TestBrokerRegistrationErrors(t *testing.T) {
	for name, data := range map[string]string{
		"not json":            `{"version":5`,
		"no version":          `{"endpoints":["PLAINTEXT://h:1"]}`,
		"version 0":           `{"version":0,"host":"h","port":1}`,
		"v1 without host":     `{"version":1,"port":1}`,
		"v2 without endpoint": `{"version":2,"host":"h","port":1}`,
		"endpoint no scheme":  `{"version":2,"endpoints":["h:1"]}`,
		"endpoint no port":    `{"version":2,"endpoints":["PLAINTEXT://h"]}`,
		"endpoint bad port":   `{"version":2,"endpoints":["PLAINTEXT://h:x"]}`,
		"unknown listener":    `{"version":4,"endpoints":["A://h:1"],"listener_security_protocol_map":{"B":"SSL"}}`,
		"bad timestamp":       `{"version":5,"endpoints":[],"timestamp":"soon"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := metadata.UnmarshalBrokerRegistration([]byte(data))
			require.ErrorIs(t, err, metadata.ErrMalformed)
		})
	}
}

func TestTopicAssignment(t *testing.T) {
	a, err := metadata.UnmarshalTopicAssignment([]byte(realTopic))
	require.NoError(t, err)
	id, err := metadata.ParseUUID("2P63MtzYTASmr9ZbB4Mf_Q")
	require.NoError(t, err)
	require.Equal(t, metadata.TopicAssignment{
		TopicID:          id,
		Partitions:       map[int32][]int32{0: {0}, 1: {0}, 2: {0}},
		AddingReplicas:   map[int32][]int32{},
		RemovingReplicas: map[int32][]int32{},
	}, a)
	require.Equal(t, realTopic, string(metadata.MarshalTopicAssignment(a)))

	cases := []struct {
		name, json string
		want       metadata.TopicAssignment
	}{
		{"v1", `{"version":1,"partitions":{"0":[1,2],"1":[2,3]}}`, metadata.TopicAssignment{
			Partitions: map[int32][]int32{0: {1, 2}, 1: {2, 3}}, AddingReplicas: map[int32][]int32{}, RemovingReplicas: map[int32][]int32{}}},
		{"v2", `{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}`, metadata.TopicAssignment{
			Partitions: map[int32][]int32{0: {1, 2}}, AddingReplicas: map[int32][]int32{}, RemovingReplicas: map[int32][]int32{}}},
		{"reassigning", `{"version":3,"partitions":{"0":[1,2,3],"1":[2]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]},"topic_id":"joH35UhYSU2YfK2dMFa9TQ","extra":true}`, metadata.TopicAssignment{
			TopicID:    mustUUID(t, "joH35UhYSU2YfK2dMFa9TQ"),
			Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2}}, AddingReplicas: map[int32][]int32{0: {3}}, RemovingReplicas: map[int32][]int32{0: {1}}}},
		{"no partitions", `{"version":3}`, metadata.TopicAssignment{
			Partitions: map[int32][]int32{}, AddingReplicas: map[int32][]int32{}, RemovingReplicas: map[int32][]int32{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := metadata.UnmarshalTopicAssignment([]byte(tc.json))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			again, err := metadata.UnmarshalTopicAssignment(metadata.MarshalTopicAssignment(got))
			require.NoError(t, err)
			require.Equal(t, tc.want, again)
		})
	}

	// Kafka writes no topic_id when there is none and drops empty
	// reassignment lists; replicas are never null.
	require.JSONEq(t, `{"version":3,"partitions":{"0":[],"1":[5]},"adding_replicas":{},"removing_replicas":{"1":[4]}}`,
		string(metadata.MarshalTopicAssignment(metadata.TopicAssignment{
			Partitions:       map[int32][]int32{0: nil, 1: {5}},
			AddingReplicas:   map[int32][]int32{0: {}},
			RemovingReplicas: map[int32][]int32{1: {4}},
		})))

	for name, data := range map[string]string{
		"bad partition": `{"version":3,"partitions":{"x":[1]}}`,
		"bad topic id":  `{"version":3,"partitions":{},"topic_id":"short"}`,
		"bad replicas":  `{"version":3,"partitions":{"0":"1,2"}}`,
	} {
		_, err := metadata.UnmarshalTopicAssignment([]byte(data))
		require.ErrorIs(t, err, metadata.ErrMalformed, name)
	}
}

func mustUUID(t *testing.T, s string) [16]byte {
	id, err := metadata.ParseUUID(s)
	require.NoError(t, err)
	return id
}

func TestPartitionState(t *testing.T) {
	s, err := metadata.UnmarshalPartitionState([]byte(realPartitionState))
	require.NoError(t, err)
	require.Equal(t, metadata.PartitionState{Leader: 0, LeaderEpoch: 0, ISR: []int32{0}, ControllerEpoch: 1}, s)
	require.Equal(t, realPartitionState, string(metadata.MarshalPartitionState(s)))

	recovering := `{"controller_epoch":7,"leader":3,"version":1,"leader_epoch":12,"isr":[3],"leader_recovery_state":1}`
	s, err = metadata.UnmarshalPartitionState([]byte(recovering))
	require.NoError(t, err)
	require.Equal(t, metadata.PartitionState{Leader: 3, LeaderEpoch: 12, ISR: []int32{3}, ControllerEpoch: 7, LeaderRecoveryState: 1}, s)
	require.Equal(t, recovering, string(metadata.MarshalPartitionState(s)))

	offline := metadata.PartitionState{Leader: metadata.NoLeader, LeaderEpoch: 4, ControllerEpoch: 2}
	require.Equal(t, `{"controller_epoch":2,"leader":-1,"version":1,"leader_epoch":4,"isr":[]}`,
		string(metadata.MarshalPartitionState(offline)))

	for name, data := range map[string]string{
		"no isr":      `{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0}`,
		"null isr":    `{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":null}`,
		"no leader":   `{"controller_epoch":1,"version":1,"leader_epoch":0,"isr":[0]}`,
		"no epoch":    `{"controller_epoch":1,"leader":0,"version":1,"isr":[0]}`,
		"no c. epoch": `{"leader":0,"version":1,"leader_epoch":0,"isr":[0]}`,
		"string isr":  `{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":"0"}`,
		"empty":       ``,
	} {
		_, err := metadata.UnmarshalPartitionState([]byte(data))
		require.ErrorIs(t, err, metadata.ErrMalformed, name)
	}
}

func TestEntityConfig(t *testing.T) {
	c, err := metadata.UnmarshalEntityConfig([]byte(realTopicConfig))
	require.NoError(t, err)
	require.Empty(t, c)
	require.Equal(t, realTopicConfig, string(metadata.MarshalEntityConfig(c)))
	require.Equal(t, realTopicConfig, string(metadata.MarshalEntityConfig(nil)))

	c, err = metadata.UnmarshalEntityConfig([]byte(realOffsetsConfig))
	require.NoError(t, err)
	want := map[string]string{"compression.type": "producer", "cleanup.policy": "compact", "segment.bytes": "104857600"}
	require.Equal(t, want, c)
	require.JSONEq(t, realOffsetsConfig, string(metadata.MarshalEntityConfig(c)))

	c, err = metadata.UnmarshalEntityConfig([]byte(`{"version":1,"config":{"a":"1","b":2,"c":true,"d":null},"x":1}`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1", "b": "2", "c": "true"}, c)
	c, err = metadata.UnmarshalEntityConfig([]byte(`{"version":1}`))
	require.NoError(t, err)
	require.Empty(t, c)
	_, err = metadata.UnmarshalEntityConfig([]byte(`[]`))
	require.ErrorIs(t, err, metadata.ErrMalformed)
}

func TestConfigChange(t *testing.T) {
	for _, p := range []string{"topics/my-topic", "brokers/1", "brokers/<default>", "users/alice/clients/c1"} {
		data := metadata.MarshalConfigChange(p)
		require.Equal(t, `{"version":2,"entity_path":"`+p+`"}`, string(data))
		got, err := metadata.UnmarshalConfigChange(data)
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	got, err := metadata.UnmarshalConfigChange([]byte(`{"version":1,"entity_type":"topics","entity_name":"t"}`))
	require.NoError(t, err)
	require.Equal(t, "topics/t", got)
	for _, bad := range []string{`{"version":2}`, `{"version":1,"entity_path":"topics/t"}`, `{}`, `nope`} {
		_, err := metadata.UnmarshalConfigChange([]byte(bad))
		require.ErrorIs(t, err, metadata.ErrMalformed, bad)
	}
}

func TestController(t *testing.T) {
	c, err := metadata.UnmarshalController([]byte(realController))
	require.NoError(t, err)
	require.Equal(t, metadata.ControllerInfo{Version: 1, BrokerID: 0, Timestamp: 1638888537571, KRaftControllerEpoch: -1}, c)
	require.Equal(t, realController, string(metadata.MarshalController(c)))
	require.Equal(t, realController, string(metadata.MarshalController(metadata.ControllerInfo{BrokerID: 0, Timestamp: 1638888537571})))

	v2 := `{"version":2,"brokerid":3,"timestamp":"1700000000000","kraftControllerEpoch":-1}`
	c, err = metadata.UnmarshalController([]byte(v2))
	require.NoError(t, err)
	require.Equal(t, metadata.ControllerInfo{Version: 2, BrokerID: 3, Timestamp: 1700000000000, KRaftControllerEpoch: -1}, c)
	require.Equal(t, v2, string(metadata.MarshalController(c)))

	_, err = metadata.UnmarshalController([]byte(`{"version":1,"timestamp":"1"}`))
	require.ErrorIs(t, err, metadata.ErrMalformed)

	require.Equal(t, "17", string(metadata.MarshalControllerEpoch(17)))
	epoch, err := metadata.UnmarshalControllerEpoch([]byte("3"))
	require.NoError(t, err)
	require.Equal(t, int32(3), epoch)
	for _, bad := range []string{"", "x", "99999999999", `{"epoch":1}`} {
		_, err := metadata.UnmarshalControllerEpoch([]byte(bad))
		require.ErrorIs(t, err, metadata.ErrMalformed, bad)
	}
}

func TestClusterID(t *testing.T) {
	id, err := metadata.UnmarshalClusterID([]byte(realClusterID))
	require.NoError(t, err)
	require.Equal(t, "ZAJx9RX0SFuisj92dpmVfg", id)
	require.Equal(t, realClusterID, string(metadata.MarshalClusterID(id)))
	id, err = metadata.UnmarshalClusterID([]byte(`{"version":1,"id":"x"}`))
	require.NoError(t, err, "a numeric version is tolerated")
	require.Equal(t, "x", id)
	for _, bad := range []string{`{"version":"1"}`, `{"id":1}`, ``} {
		_, err := metadata.UnmarshalClusterID([]byte(bad))
		require.ErrorIs(t, err, metadata.ErrMalformed, bad)
	}
}

func TestProducerIDBlock(t *testing.T) {
	b, err := metadata.UnmarshalProducerIDBlock([]byte(realProducerIDs))
	require.NoError(t, err)
	require.Equal(t, metadata.ProducerIDBlock{BrokerID: 0, Start: 0, End: 999}, b)
	require.Equal(t, realProducerIDs, string(metadata.MarshalProducerIDBlock(b)))
	b, err = metadata.UnmarshalProducerIDBlock([]byte(`{"version":1,"broker":2,"block_start":1000,"block_end":1999}`))
	require.NoError(t, err)
	require.Equal(t, metadata.ProducerIDBlock{BrokerID: 2, Start: 1000, End: 1999}, b)
	big := metadata.ProducerIDBlock{BrokerID: 1, Start: math.MaxInt64 - 999, End: math.MaxInt64}
	b, err = metadata.UnmarshalProducerIDBlock(metadata.MarshalProducerIDBlock(big))
	require.NoError(t, err)
	require.Equal(t, big, b)
	for _, bad := range []string{
		`{"version":1,"broker":0,"block_start":"10","block_end":"9"}`,
		`{"version":1,"broker":0,"block_start":"0"}`,
		`{"version":1,"broker":0,"block_start":"x","block_end":"9"}`,
		`{"version":1,"broker":0,"block_start":"0","block_end":"99999999999999999999"}`,
	} {
		_, err := metadata.UnmarshalProducerIDBlock([]byte(bad))
		require.ErrorIs(t, err, metadata.ErrMalformed, bad)
	}
}

func TestUUID(t *testing.T) {
	for _, s := range []string{"2P63MtzYTASmr9ZbB4Mf_Q", "joH35UhYSU2YfK2dMFa9TQ", "p2a6A643TvyiebymerLQTg", "AAAAAAAAAAAAAAAAAAAAAA"} {
		id, err := metadata.ParseUUID(s)
		require.NoError(t, err)
		require.Equal(t, s, metadata.FormatUUID(id))
		padded, err := metadata.ParseUUID(s + "==")
		require.NoError(t, err)
		require.Equal(t, id, padded)
	}
	for _, bad := range []string{"", "short", "2P63MtzYTASmr9ZbB4Mf/Q", "2P63MtzYTASmr9ZbB4Mf_QAA"} {
		_, err := metadata.ParseUUID(bad)
		require.ErrorIs(t, err, metadata.ErrMalformed, bad)
	}
	seen := map[[16]byte]bool{}
	valid := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{21}$`)
	for range 1000 {
		id := metadata.NewUUID()
		require.False(t, seen[id])
		seen[id] = true
		require.Regexp(t, valid, metadata.FormatUUID(id))
		require.Equal(t, byte(0x40), id[6]&0xf0, "version 4")
	}
}

func TestEnsureKafkaPaths(t *testing.T) {
	s := newStore(t)
	require.NoError(t, metadata.EnsureKafkaPaths(ctx, s))
	require.NoError(t, metadata.EnsureKafkaPaths(ctx, s), "idempotent")
	var got []string
	var walk func(p string)
	walk = func(p string) {
		got = append(got, p)
		names, _, err := s.Children(ctx, p)
		require.NoError(t, err)
		for _, n := range names {
			walk(metadata.Join(p, n))
		}
	}
	walk("/")
	require.ElementsMatch(t, []string{
		"/", "/consumers", "/brokers", "/brokers/ids", "/brokers/topics", "/brokers/seqid",
		"/config", "/config/changes", "/config/topics", "/config/clients", "/config/users", "/config/brokers", "/config/ips",
		"/admin", "/admin/delete_topics", "/isr_change_notification", "/latest_producer_id_block", "/log_dir_event_notification",
	}, got)
	for _, p := range got {
		data, _, err := s.Get(ctx, p)
		require.NoError(t, err)
		require.Empty(t, data, "%s is created without data", p)
	}
}

func TestAllocateProducerIDBlock(t *testing.T) {
	s := newStore(t)
	// The node does not exist yet: it is created.
	start, end, err := metadata.AllocateProducerIDBlock(ctx, s, 0, metadata.ProducerIDBlockSize)
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 999}, [2]int64{start, end})
	data, _, err := s.Get(ctx, metadata.ProducerIDBlockPath)
	require.NoError(t, err)
	require.JSONEq(t, realProducerIDs, string(data))

	start, end, err = metadata.AllocateProducerIDBlock(ctx, s, 2, 10)
	require.NoError(t, err)
	require.Equal(t, [2]int64{1000, 1009}, [2]int64{start, end})
	data, _, err = s.Get(ctx, metadata.ProducerIDBlockPath)
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"broker":2,"block_start":"1000","block_end":"1009"}`, string(data))

	// Empty node, as EnsureKafkaPaths leaves it: the first block is 0.
	s2 := newStore(t)
	require.NoError(t, metadata.EnsureKafkaPaths(ctx, s2))
	start, _, err = metadata.AllocateProducerIDBlock(ctx, s2, 1, 1000)
	require.NoError(t, err)
	require.Zero(t, start)

	_, err = s2.Set(ctx, metadata.ProducerIDBlockPath,
		metadata.MarshalProducerIDBlock(metadata.ProducerIDBlock{Start: math.MaxInt64 - 1500, End: math.MaxInt64 - 500}), metadata.AnyVersion)
	require.NoError(t, err)
	_, _, err = metadata.AllocateProducerIDBlock(ctx, s2, 1, 1000)
	require.ErrorIs(t, err, metadata.ErrProducerIDsExhausted)
	_, _, err = metadata.AllocateProducerIDBlock(ctx, s2, 1, 0)
	require.Error(t, err)
	_, err = s2.Set(ctx, metadata.ProducerIDBlockPath, []byte("junk"), metadata.AnyVersion)
	require.NoError(t, err)
	_, _, err = metadata.AllocateProducerIDBlock(ctx, s2, 1, 1000)
	require.ErrorIs(t, err, metadata.ErrMalformed)
}

// TestAllocateProducerIDBlockConcurrent: brokers racing for blocks each
// get their own, and together they leave no gap.
func TestAllocateProducerIDBlockConcurrent(t *testing.T) {
	s := newStore(t)
	const brokers, blocks = 6, 20
	var mu sync.Mutex
	var got [][2]int64
	var wg sync.WaitGroup
	errs := make(chan error, brokers)
	for b := range brokers {
		sess, err := s.NewSession()
		require.NoError(t, err)
		wg.Go(func() {
			for range blocks {
				start, end, err := metadata.AllocateProducerIDBlock(ctx, sess, int32(b), 100)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got = append(got, [2]int64{start, end})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	slices.SortFunc(got, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	require.Len(t, got, brokers*blocks)
	for i, blk := range got {
		require.Equal(t, [2]int64{int64(i) * 100, int64(i)*100 + 99}, blk)
	}
}

func TestNextBrokerID(t *testing.T) {
	s := newStore(t)
	for want := int32(1001); want <= 1003; want++ {
		id, err := metadata.NextBrokerID(ctx, s, 1000)
		require.NoError(t, err)
		require.Equal(t, want, id)
	}
	_, st, err := s.Get(ctx, metadata.BrokerSeqIDPath)
	require.NoError(t, err)
	require.Equal(t, int32(3), st.Version)
	require.Zero(t, st.DataLength, "/brokers/seqid stays empty")

	_, err = metadata.NextBrokerID(ctx, s, math.MaxInt32)
	require.ErrorContains(t, err, "generated broker id 2147483651 (version 4 of /brokers/seqid + 2147483647) is not an int32")
}

func TestGetOrCreateClusterID(t *testing.T) {
	s := newStore(t)
	id, err := metadata.GetOrCreateClusterID(ctx, s, "first")
	require.NoError(t, err)
	require.Equal(t, "first", id)
	id, err = metadata.GetOrCreateClusterID(ctx, s, "second")
	require.NoError(t, err)
	require.Equal(t, "first", id)
	data, _, err := s.Get(ctx, metadata.ClusterIDPath)
	require.NoError(t, err)
	require.Equal(t, `{"version":"1","id":"first"}`, string(data))
}

func TestEntityConfigHelpers(t *testing.T) {
	s := newStore(t)
	cfg, err := metadata.ReadEntityConfig(ctx, s, metadata.ConfigTopics, "t")
	require.NoError(t, err)
	require.Empty(t, cfg)

	watch, err := s.Watch(ctx, metadata.ConfigChangesPath, metadata.WatchExists)
	require.NoError(t, err)
	p, err := metadata.WriteEntityConfig(ctx, s, metadata.ConfigTopics, "t", map[string]string{"retention.ms": "1000"})
	require.NoError(t, err)
	require.Equal(t, "/config/changes/config_change_0000000000", p)
	require.Equal(t, metadata.EventCreated, (<-watch).Type)
	data, _, err := s.Get(ctx, p)
	require.NoError(t, err)
	require.Equal(t, `{"version":2,"entity_path":"topics/t"}`, string(data))

	p, err = metadata.WriteEntityConfig(ctx, s, metadata.ConfigBrokers, metadata.DefaultEntity, map[string]string{"log.cleaner.threads": "2"})
	require.NoError(t, err)
	require.Equal(t, "/config/changes/config_change_0000000001", p)
	data, _, err = s.Get(ctx, p)
	require.NoError(t, err)
	require.Equal(t, `{"version":2,"entity_path":"brokers/<default>"}`, string(data))

	_, err = metadata.WriteEntityConfig(ctx, s, metadata.ConfigTopics, "t", map[string]string{"retention.ms": "2000", "cleanup.policy": "compact"})
	require.NoError(t, err)
	cfg, err = metadata.ReadEntityConfig(ctx, s, metadata.ConfigTopics, "t")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"retention.ms": "2000", "cleanup.policy": "compact"}, cfg)
	data, st, err := s.Get(ctx, "/config/topics/t")
	require.NoError(t, err)
	require.Equal(t, int32(1), st.Version)
	require.JSONEq(t, `{"version":1,"config":{"retention.ms":"2000","cleanup.policy":"compact"}}`, string(data))
}

// TestZKSnapshot reads every node of a real Kafka 3.0 ZooKeeper snapshot,
// decodes each with the codec for its path, checks that re-encoding gives
// the same JSON, and loads the whole tree into an embedded store, where
// EnsureKafkaPaths finds nothing to add.
func TestZKSnapshot(t *testing.T) {
	nodes := readZKSnapshot(t, "kafka300-zk-zookeeper-snapshot/data/zookeeper/version-2/snapshot.c1")
	byPath := map[string]zkNode{}
	for _, n := range nodes {
		byPath[n.Path] = n
	}
	for _, p := range metadata.PersistentPaths {
		require.Contains(t, byPath, p, "Kafka creates %s at start-up", p)
	}
	require.Equal(t, realClusterID, string(byPath[metadata.ClusterIDPath].Data))
	require.Equal(t, realController, string(byPath[metadata.ControllerPath].Data))
	require.Equal(t, realBroker, string(byPath[metadata.BrokerPath(0)].Data))
	require.Equal(t, realTopic, string(byPath[metadata.TopicPath("my-first-topic")].Data))
	require.Equal(t, realOffsetsConfig, string(byPath[metadata.EntityConfigPath(metadata.ConfigTopics, "__consumer_offsets")].Data))
	require.NotZero(t, byPath[metadata.BrokerPath(0)].EphemeralOwner, "broker registrations are ephemeral")
	require.NotZero(t, byPath[metadata.ControllerPath].EphemeralOwner, "the controller node is ephemeral")
	require.Zero(t, byPath[metadata.TopicPath("my-first-topic")].EphemeralOwner)
	require.Nil(t, byPath[metadata.TopicPartitionsPath("my-first-topic")].Data, "partitions nodes have null data")

	counts := map[string]int{}
	topics := map[string]metadata.TopicAssignment{}
	states := map[string]metadata.PartitionState{}
	var (
		reBroker = regexp.MustCompile(`^/brokers/ids/(\d+)$`)
		reTopic  = regexp.MustCompile(`^/brokers/topics/([^/]+)$`)
		reState  = regexp.MustCompile(`^/brokers/topics/([^/]+)/partitions/(\d+)/state$`)
		reConfig = regexp.MustCompile(`^/config/(topics|brokers|clients|users|ips)/([^/]+)$`)
	)
	for _, n := range nodes {
		var kind string
		var again []byte
		var err error
		switch p := n.Path; {
		case p == metadata.ClusterIDPath:
			kind = "cluster id"
			var id string
			id, err = metadata.UnmarshalClusterID(n.Data)
			again = metadata.MarshalClusterID(id)
		case p == metadata.ControllerPath:
			kind = "controller"
			var c metadata.ControllerInfo
			c, err = metadata.UnmarshalController(n.Data)
			again = metadata.MarshalController(c)
		case p == metadata.ControllerEpochPath:
			kind = "controller epoch"
			var e int32
			e, err = metadata.UnmarshalControllerEpoch(n.Data)
			again = metadata.MarshalControllerEpoch(e)
			require.Equal(t, n.Version, e, "each election increments the epoch and the node's version")
		case reBroker.MatchString(p):
			kind = "broker"
			var b metadata.BrokerRegistration
			b, err = metadata.UnmarshalBrokerRegistration(n.Data)
			again = metadata.MarshalBrokerRegistration(b)
		case reTopic.MatchString(p):
			kind = "topic"
			var a metadata.TopicAssignment
			a, err = metadata.UnmarshalTopicAssignment(n.Data)
			again = metadata.MarshalTopicAssignment(a)
			topics[reTopic.FindStringSubmatch(p)[1]] = a
		case reState.MatchString(p):
			kind = "partition state"
			var s metadata.PartitionState
			s, err = metadata.UnmarshalPartitionState(n.Data)
			again = metadata.MarshalPartitionState(s)
			m := reState.FindStringSubmatch(p)
			states[m[1]+"-"+m[2]] = s
		case reConfig.MatchString(p):
			kind = "entity config"
			var c map[string]string
			c, err = metadata.UnmarshalEntityConfig(n.Data)
			again = metadata.MarshalEntityConfig(c)
		case p == metadata.ProducerIDBlockPath && len(n.Data) > 0:
			kind = "producer id block"
			var b metadata.ProducerIDBlock
			b, err = metadata.UnmarshalProducerIDBlock(n.Data)
			again = metadata.MarshalProducerIDBlock(b)
		default:
			continue
		}
		require.NoError(t, err, "%s %s", kind, n.Path)
		require.JSONEq(t, string(n.Data), string(again), "%s %s re-encoded", kind, n.Path)
		counts[kind]++
	}
	t.Logf("decoded %v", counts)
	require.Equal(t, map[string]int{
		"cluster id": 1, "controller": 1, "controller epoch": 1, "broker": 1,
		"topic": 3, "partition state": 54, "entity config": 3,
	}, counts)

	// Every partition of every topic has a state, led by broker 0.
	total := 0
	for topic, a := range topics {
		for p, replicas := range a.Partitions {
			s, ok := states[topic+"-"+strconv.Itoa(int(p))]
			require.True(t, ok, "%s-%d has no state", topic, p)
			require.Equal(t, []int32{0}, replicas)
			require.Equal(t, int32(0), s.Leader)
			total++
		}
		require.NotEqual(t, [16]byte{}, a.TopicID)
	}
	require.Equal(t, 54, total)

	// Load the persistent tree into an embedded store.
	s := newStore(t)
	for _, n := range nodes {
		if n.Path == "/" || n.EphemeralOwner != 0 {
			continue
		}
		_, err := metadata.CreateAll(ctx, s, n.Path, n.Data, 0)
		if errors.Is(err, metadata.ErrNodeExists) { // created as a parent already
			_, err = s.Set(ctx, n.Path, n.Data, metadata.AnyVersion)
		}
		require.NoError(t, err, n.Path)
	}
	before := countNodes(t, s, "/")
	require.NoError(t, metadata.EnsureKafkaPaths(ctx, s))
	require.Equal(t, before, countNodes(t, s, "/"), "the real tree already has every persistent path")
	cfg, err := metadata.ReadEntityConfig(ctx, s, metadata.ConfigTopics, "__consumer_offsets")
	require.NoError(t, err)
	require.Equal(t, "compact", cfg["cleanup.policy"])
	names, _, err := s.Children(ctx, metadata.BrokerTopicsPath)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"my-first-topic", "my-sec-topic", "__consumer_offsets"}, names)
	id, err := metadata.GetOrCreateClusterID(ctx, s, "unused")
	require.NoError(t, err)
	require.Equal(t, "ZAJx9RX0SFuisj92dpmVfg", id)
	start, end, err := metadata.AllocateProducerIDBlock(ctx, s, 0, metadata.ProducerIDBlockSize)
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 999}, [2]int64{start, end}, "the snapshot's block node is empty")
}

func countNodes(t *testing.T, s metadata.Store, p string) int {
	names, _, err := s.Children(ctx, p)
	require.NoError(t, err)
	n := 1
	for _, name := range names {
		n += countNodes(t, s, metadata.Join(p, name))
	}
	return n
}

func Example() {
	s := embedded.New()
	defer s.Close()
	ctx := context.Background()
	_ = metadata.EnsureKafkaPaths(ctx, s)

	// Register broker 0 and read the registration back.
	reg := metadata.BrokerRegistration{
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}},
		JMXPort:   -1,
		Timestamp: 1638888537455,
	}
	_, _ = s.Create(ctx, metadata.BrokerPath(0), metadata.MarshalBrokerRegistration(reg), metadata.Ephemeral)
	data, st, _ := s.Get(ctx, metadata.BrokerPath(0))
	got, _ := metadata.UnmarshalBrokerRegistration(data)
	fmt.Println(got.Endpoints[0], st.EphemeralOwner == s.SessionID())
	fmt.Println(strings.Contains(string(data), `"version":5`))
	// Output:
	// PLAINTEXT://127.0.0.1:9092 true
	// true
}
