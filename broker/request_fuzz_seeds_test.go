//go:build linux

package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// contextWithTimeout is not t.Context(): that ends before the cleanups,
// where the targets check the protected topic.
func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// seedRequest is a valid request of key, about fuzzTopic and fuzzGroup,
// with the fields its handler looks at filled in (kmsg leaves the rest
// at their defaults); the caller sets the version.
func seedRequest(e *fuzzEnv, key int16) kmsg.Request {
	topic, group := fuzzTopic, fuzzGroup
	switch key {
	case 0:
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis = -1, 1000
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.TopicID = topic, e.topicID
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = e.batch
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 1:
		r := kmsg.NewPtrFetchRequest()
		r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = -1, 100, 1, 1<<20
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, e.topicID
		for _, part := range []int32{0, 1} {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.FetchOffset, p.PartitionMaxBytes = part, 1, 1<<20
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
		return r
	case 2:
		r := kmsg.NewPtrListOffsetsRequest()
		r.ReplicaID = -1
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic
		for _, ts := range []int64{-2, -1} {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Partition, p.Timestamp = int32(-ts-1), ts
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
		return r
	case 3:
		r := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic, t.TopicID = &topic, e.topicID
		r.Topics = append(r.Topics, t)
		r.AllowAutoTopicCreation = true
		return r
	case 10:
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKey, r.CoordinatorKeys = group, []string{group}
		return r
	case 17:
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = "PLAIN"
		return r
	case 18:
		r := kmsg.NewPtrApiVersionsRequest()
		r.ClientSoftwareName, r.ClientSoftwareVersion = "fuzz", "1.0"
		return r
	case 23:
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.ReplicaID = -1
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.CurrentLeaderEpoch, p.LeaderEpoch = -1, 0
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 36:
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte("\x00user\x00password")
		return r
	case 60:
		r := kmsg.NewPtrDescribeClusterRequest()
		r.IncludeClusterAuthorizedOperations = true
		return r
	case 8:
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation = group, -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.Metadata = 1, 2, &group
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 9:
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = group
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0, 1}
		r.Topics = append(r.Topics, t)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0, 1}
		g.Topics = append(g.Topics, gt)
		r.Groups = append(r.Groups, g)
		return r
	case 11:
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = "fuzz-join", 1000, 1000
		r.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 1, 0, 0, 0, 1, 0, 4, 'f', 'u', 'z', 'z', 0, 0, 0, 0}
		r.Protocols = append(r.Protocols, p)
		return r
	case 12:
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.Generation, r.MemberID = "fuzz-join", 1, "member"
		return r
	case 13:
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = "fuzz-join", "member"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "member"
		r.Members = append(r.Members, m)
		return r
	case 14:
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.Generation, r.MemberID = "fuzz-join", 1, "member"
		r.ProtocolType, r.Protocol = ptrTo("consumer"), ptrTo("range")
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = "member", []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
		r.GroupAssignment = append(r.GroupAssignment, a)
		return r
	case 15:
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{group, "fuzz-join"}
		return r
	case 16:
		r := kmsg.NewPtrListGroupsRequest()
		r.StatesFilter = []string{"Empty", "Stable"}
		return r
	case 42:
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{"fuzz-deleted"}
		return r
	case 47:
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		t := kmsg.NewOffsetDeleteRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetDeleteRequestTopicPartition()
		p.Partition = 1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 19:
		r := kmsg.NewPtrCreateTopicsRequest()
		r.TimeoutMillis = 1000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = "fuzz-created", 2, 1
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = "retention.ms", ptrTo("86400000")
		t.Configs = append(t.Configs, c)
		r.Topics = append(r.Topics, t)
		return r
	case 20:
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.TimeoutMillis = 1000
		r.TopicNames = []string{"fuzz-deleted"}
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = ptrTo("fuzz-deleted")
		r.Topics = append(r.Topics, t)
		return r
	case 21:
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.TimeoutMillis = 1000
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = topic
		p := kmsg.NewDeleteRecordsRequestTopicPartition()
		p.Partition, p.Offset = 1, 1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 22:
		r := kmsg.NewPtrInitProducerIDRequest()
		r.TransactionTimeoutMillis = 60000
		return r
	case 24:
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = fuzzTxnID, 1, 0
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic, t.Partitions = topic, []int32{1}
		r.Topics = append(r.Topics, t)
		return r
	case 25:
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = fuzzTxnID, 1, 0, group
		return r
	case 26:
		r := kmsg.NewPtrEndTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = fuzzTxnID, 1, 0, true
		return r
	case 27:
		r := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 1, 0, true, 0
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = topic, []int32{1}
		m.Topics = append(m.Topics, t)
		r.Markers = append(r.Markers, m)
		return r
	case 28:
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = fuzzTxnID, group, 1, 0, -1
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = 1, 0, -1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 65:
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{fuzzTxnID}
		return r
	case 61:
		r := kmsg.NewPtrDescribeProducersRequest()
		t := kmsg.NewDescribeProducersRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0, 1, 99}
		r.Topics = append(r.Topics, t)
		return r
	case 66:
		r := kmsg.NewPtrListTransactionsRequest()
		r.StateFilters, r.ProducerIDFilters = []string{"Ongoing"}, []int64{1}
		return r
	case 32:
		r := kmsg.NewPtrDescribeConfigsRequest()
		for _, res := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, topic}, {kmsg.ConfigResourceTypeBroker, "0"}} {
			d := kmsg.NewDescribeConfigsRequestResource()
			d.ResourceType, d.ResourceName = res.typ, res.name
			r.Resources = append(r.Resources, d)
		}
		r.IncludeSynonyms, r.IncludeDocumentation = true, true
		return r
	case 33:
		r := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", ptrTo("86400000")
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
		return r
	case 34:
		r := kmsg.NewPtrAlterReplicaLogDirsRequest()
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = "/no/such/dir"
		t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		t.Topic, t.Partitions = "fuzz", []int32{0, 1}
		d.Topics = append(d.Topics, t)
		r.Dirs = append(r.Dirs, d)
		return r
	case 35:
		r := kmsg.NewPtrDescribeLogDirsRequest()
		t := kmsg.NewDescribeLogDirsRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0, 1}
		r.Topics = append(r.Topics, t)
		return r
	case 37:
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.TimeoutMillis = 1000
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = topic, 3
		r.Topics = append(r.Topics, t)
		r.ValidateOnly = true
		return r
	case 43:
		r := kmsg.NewPtrElectLeadersRequest()
		r.TimeoutMillis = 1000
		t := kmsg.NewElectLeadersRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		r.Topics = append(r.Topics, t)
		return r
	case 44:
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, ptrTo("delete")
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
		return r
	case 45:
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.TimeoutMillis = 1000
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic = topic
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition, p.Replicas = 1, []int32{0}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	case 46:
		r := kmsg.NewPtrListPartitionReassignmentsRequest()
		r.TimeoutMillis = 1000
		t := kmsg.NewListPartitionReassignmentsRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0, 1}
		r.Topics = append(r.Topics, t)
		return r
	case 50:
		r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = "fuzz-user"
		r.Users = append(r.Users, u)
		return r
	case 51:
		r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		r.Upsertions = append(r.Upsertions, upsertion("fuzz-user", 1, 4096))
		r.Deletions = append(r.Deletions, deletion("fuzz-gone", 2))
		return r
	case 29:
		r := kmsg.NewPtrDescribeACLsRequest()
		r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return r
	case 30:
		r := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = "User:fuzz", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		r.Creations = append(r.Creations, c)
		return r
	case 31:
		r := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &topic, kmsg.ACLResourcePatternTypeMatch
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		r.Filters = append(r.Filters, f)
		return r
	case 48:
		r := kmsg.NewPtrDescribeClientQuotasRequest()
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType = "user", 1
		r.Components = append(r.Components, c)
		return r
	case 49:
		r := kmsg.NewPtrAlterClientQuotasRequest()
		r.ValidateOnly = true
		e := kmsg.NewAlterClientQuotasRequestEntry()
		en := kmsg.NewAlterClientQuotasRequestEntryEntity()
		en.Type, en.Name = "user", kmsg.StringPtr("fuzz-user")
		e.Entity = append(e.Entity, en)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1048576
		e.Ops = append(e.Ops, op)
		r.Entries = append(r.Entries, e)
		return r
	case 4:
		r := kmsg.NewPtrLeaderAndISRRequest()
		r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = 0, 1, -1
		p := kmsg.NewLeaderAndISRRequestTopicPartition()
		p.Topic, p.Partition, p.Leader, p.LeaderEpoch = topic, 1, 0, 1
		p.ISR, p.Replicas = []int32{0}, []int32{0}
		r.PartitionStates = append(r.PartitionStates, p)
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = topic, e.topicID
		ts.PartitionStates = append(ts.PartitionStates, p)
		r.TopicStates = append(r.TopicStates, ts)
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = 0, "127.0.0.1", 9092
		r.LiveLeaders = append(r.LiveLeaders, l)
		return r
	case 5:
		r := kmsg.NewPtrStopReplicaRequest()
		r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = 0, 1, -1
		t := kmsg.NewStopReplicaRequestTopic()
		t.Topic, t.Partition, t.Partitions = "fuzz-stopped", 0, []int32{0}
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch = 0, 1
		t.PartitionStates = append(t.PartitionStates, ps)
		r.Topics = append(r.Topics, t)
		return r
	case 6:
		r := kmsg.NewPtrUpdateMetadataRequest()
		r.ControllerID, r.ControllerEpoch, r.BrokerEpoch = 0, 1, -1
		p := kmsg.NewUpdateMetadataRequestTopicPartition()
		p.Topic, p.Partition, p.Leader, p.LeaderEpoch = topic, 1, 0, 1
		p.ISR, p.Replicas = []int32{0}, []int32{0}
		r.PartitionStates = append(r.PartitionStates, p)
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = topic, e.topicID
		ts.PartitionStates = append(ts.PartitionStates, p)
		r.TopicStates = append(r.TopicStates, ts)
		b := kmsg.NewUpdateMetadataRequestLiveBroker()
		b.ID, b.Host, b.Port = 0, "127.0.0.1", 9092
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName, ep.SecurityProtocol = "127.0.0.1", 9092, "PLAINTEXT", 0
		b.Endpoints = append(b.Endpoints, ep)
		r.LiveBrokers = append(r.LiveBrokers, b)
		return r
	case 7:
		r := kmsg.NewPtrControlledShutdownRequest()
		r.BrokerID, r.BrokerEpoch = 99, -1
		return r
	case 56:
		r := kmsg.NewPtrAlterPartitionRequest()
		r.BrokerID, r.BrokerEpoch = 99, -1
		t := kmsg.NewAlterPartitionRequestTopic()
		t.Topic, t.TopicID = topic, e.topicID
		p := kmsg.NewAlterPartitionRequestTopicPartition()
		p.Partition, p.LeaderEpoch, p.NewISR = 1, 0, []int32{0}
		ne := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		ne.BrokerID, ne.BrokerEpoch = 0, -1
		p.NewEpochISR = append(p.NewEpochISR, ne)
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	return kmsg.RequestForKey(key)
}

func ptrTo[T any](v T) *T { return &v }

// fuzzTxnID is the transactional id of the transaction APIs' seeds.
const fuzzTxnID = "fuzz-txn"

// TestRequestFuzzTargetsCoverEveryAPI: every row of the dispatch table
// (a controller's ApiVersions lists them all) is fuzzed by exactly one
// target, and each has a seed of its own (not kmsg's empty default).
func TestRequestFuzzTargetsCoverEveryAPI(t *testing.T) {
	var all []int16
	for _, ks := range [][]int16{produceKeys, fetchKeys, metadataKeys, groupKeys, adminKeys, controlKeys, txnKeys} {
		all = append(all, ks...)
	}
	e := &fuzzEnv{}
	var table []int16
	for k := range dispatchTable(t, brokertest.StartBroker(t).Addr) {
		table = append(table, k)
	}
	require.ElementsMatch(t, table, all, "keys of the dispatch table vs the fuzz targets'")
	for _, k := range all {
		empty := kmsg.RequestForKey(k)
		require.NotEqual(t, empty, seedRequest(e, k), "seed of %s is kmsg's default", kmsg.NameForKey(k))
	}
}
