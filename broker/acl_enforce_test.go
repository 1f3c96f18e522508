//go:build linux && integration

package broker_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/qk-project/qk/broker/brokertest"
)

const aclJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`user_alice="alice-secret" user_bob="bob-secret";`

// TestACLMatrix: with AclAuthorizer on, every API a client uses is
// checked with Kafka's operation for it. alice holds the ACLs each needs,
// bob none: each call succeeds for alice and gets Kafka's authorization
// error for bob, bob's consumer sees no records and his Metadata no
// topics, and each refusal leaves an audit line.
func TestACLMatrix(t *testing.T) {
	logs := &syncBuffer{}
	b := brokertest.StartBroker(t, brokertest.WithAuthorizer(),
		brokertest.WithConfig("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		brokertest.WithConfig("sasl.enabled.mechanisms", "PLAIN"),
		brokertest.WithConfig("listener.name.sasl_plaintext.plain.sasl.jaas.config", aclJAAS),
		brokertest.WithLogWriter(logs), brokertest.WithLogLevel(slog.LevelInfo))
	saslAddr := b.Addrs()[1].String()
	admin := newAdmin(t, b.Addr) // User:ANONYMOUS, a super user here
	createTopic(t, admin, "orders", 1, nil)
	createTopic(t, admin, "secret", 1, nil)
	grant := func(acls *kadm.ACLBuilder) {
		t.Helper()
		res, err := admin.CreateACLs(testCtx(t), acls)
		require.NoError(t, err)
		require.NoError(t, firstCreateErr(res))
	}
	grant(kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead,
		kadm.OpDescribeConfigs, kadm.OpAlterConfigs))
	grant(kadm.NewACLs().Groups("alice-group").Allow("User:alice").Operations(kadm.OpRead))
	grant(kadm.NewACLs().Topics("alice-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").
		Operations(kadm.OpCreate, kadm.OpDelete))
	grant(kadm.NewACLs().TransactionalIDs("alice-txn").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpDescribe))
	// Every broker caches the ACLs; wait until this one has the last.
	waitFor(t, 10*time.Second, "the ACLs in the cache", func() bool { return b.Cache().Snapshot().ACLs().Len() == 9 })

	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, []string{saslAddr}, append([]kgo.Opt{kgo.SASL(kplain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())}, opts...)...)
	}
	alice, bob := as("alice"), as("bob", kgo.RequestRetries(0))
	aliceAdm, bobAdm := kadm.NewClient(alice), kadm.NewClient(bob)
	ctx := testCtx(t)
	// bob's requests go straight to the broker: routed by kgo, most would
	// stop at the Metadata or FindCoordinator that bob is refused first.
	bobReq := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := bob.Broker(0).Request(ctx, req)
		require.NoError(t, err)
		return resp
	}
	md, err := admin.Metadata(ctx, "orders")
	require.NoError(t, err)
	ordersID := md.Topics["orders"].ID

	t.Run("produce", func(t *testing.T) {
		p := as("alice", kgo.DefaultProduceTopic("orders"))
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte("by alice")}).FirstErr())
		bp := as("bob", kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0), kgo.RequestRetries(0))
		require.ErrorIs(t, bp.ProduceSync(ctx, &kgo.Record{Value: []byte("by bob")}).FirstErr(), kerr.TopicAuthorizationFailed)
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", TopicID: ordersID,
			Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}}}}
		resp := bobReq(req).(*kmsg.ProduceResponse)
		require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[0].Partitions[0].ErrorCode)
	})
	t.Run("fetch", func(t *testing.T) {
		recs := consume(t, []string{saslAddr}, "orders", 1, kgo.SASL(kplain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		require.Equal(t, "by alice", string(recs[0].Value))
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes, req.ReplicaID = 100, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "orders", ordersID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := bobReq(req).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		require.Equal(t, kerr.TopicAuthorizationFailed.Code, p.ErrorCode)
		require.Empty(t, p.RecordBatches, "no records for bob")
	})
	t.Run("group join and commit", func(t *testing.T) {
		c := as("alice", kgo.ConsumerGroup("alice-group"), kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		fs := c.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		require.NotEmpty(t, fs.Records())
		require.NoError(t, c.CommitRecords(ctx, fs.Records()...))
		offs, err := aliceAdm.FetchOffsets(ctx, "alice-group")
		require.NoError(t, err)
		o, _ := offs.Lookup("orders", 0)
		require.Equal(t, int64(1), o.At)

		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "alice-group", "consumer", 10000, 10000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
		_, err = join.RequestWith(ctx, bob)
		require.ErrorIs(t, err, kerr.GroupAuthorizationFailed, "refused at FindCoordinator")
		jr := bobReq(join).(*kmsg.JoinGroupResponse)
		require.Equal(t, kerr.GroupAuthorizationFailed.Code, jr.ErrorCode)
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.Generation = "alice-group", -1
		commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}}}
		cr := bobReq(commit).(*kmsg.OffsetCommitResponse)
		require.Equal(t, kerr.GroupAuthorizationFailed.Code, cr.Topics[0].Partitions[0].ErrorCode)
		_, err = bobAdm.FetchOffsets(ctx, "alice-group")
		require.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
	})
	t.Run("list offsets", func(t *testing.T) {
		ends, err := aliceAdm.ListEndOffsets(ctx, "orders")
		require.NoError(t, err)
		o, _ := ends.Lookup("orders", 0)
		require.NoError(t, o.Err)
		require.Equal(t, int64(1), o.Offset)
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
		resp := bobReq(req).(*kmsg.ListOffsetsResponse)
		require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[0].Partitions[0].ErrorCode)
	})
	t.Run("metadata", func(t *testing.T) {
		md, err = aliceAdm.Metadata(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"orders"}, md.Topics.Names(), "alice sees what she may describe")
		md, err = bobAdm.Metadata(ctx)
		require.NoError(t, err)
		require.Empty(t, md.Topics.Names(), "bob sees no topics")
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
		resp := bobReq(req).(*kmsg.MetadataResponse)
		require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.Topics[0].ErrorCode)
		require.Empty(t, resp.Topics[0].Partitions)
	})
	t.Run("create and delete topics", func(t *testing.T) {
		r, err := aliceAdm.CreateTopic(ctx, 1, 1, nil, "alice-new")
		require.NoError(t, err)
		require.NoError(t, r.Err)
		r, err = bobAdm.CreateTopic(ctx, 1, 1, nil, "bob-new")
		require.ErrorIs(t, errors.Join(err, r.Err), kerr.TopicAuthorizationFailed)
		r, err = aliceAdm.CreateTopic(ctx, 1, 1, nil, "not-alices")
		require.ErrorIs(t, errors.Join(err, r.Err), kerr.TopicAuthorizationFailed, "CREATE only on her prefix")
		d, err := bobAdm.DeleteTopics(ctx, "alice-new")
		require.ErrorIs(t, errors.Join(err, d["alice-new"].Err), kerr.TopicAuthorizationFailed)
		d, err = aliceAdm.DeleteTopics(ctx, "alice-new")
		require.NoError(t, err)
		require.NoError(t, d["alice-new"].Err)
	})
	t.Run("describe and alter configs", func(t *testing.T) {
		rc, err := aliceAdm.DescribeTopicConfigs(ctx, "orders")
		require.NoError(t, err)
		require.NoError(t, rc[0].Err)
		rc, err = bobAdm.DescribeTopicConfigs(ctx, "orders")
		if err == nil {
			err = rc[0].Err
		}
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		_, err = bobAdm.DescribeBrokerConfigs(ctx, 0)
		require.ErrorIs(t, err, kerr.ClusterAuthorizationFailed)
		set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}
		ar, err := aliceAdm.AlterTopicConfigs(ctx, set, "orders")
		require.NoError(t, err)
		require.NoError(t, ar[0].Err)
		ar, err = bobAdm.AlterTopicConfigs(ctx, set, "orders")
		if err == nil {
			err = ar[0].Err
		}
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	})
	t.Run("acls and cluster", func(t *testing.T) {
		res, err := bobAdm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:bob").Operations(kadm.OpRead))
		require.NoError(t, err)
		require.ErrorIs(t, firstCreateErr(res), kerr.ClusterAuthorizationFailed, "bob cannot grant himself")
		describe := kmsg.NewPtrDescribeACLsRequest()
		describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		dr := bobReq(describe).(*kmsg.DescribeACLsResponse)
		require.Equal(t, kerr.ClusterAuthorizationFailed.Code, dr.ErrorCode)
		require.Empty(t, dr.Resources)
		idem := as("bob", kgo.DefaultProduceTopic("orders"), kgo.RequestRetries(0))
		ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err = idem.ProduceSync(ctx2, &kgo.Record{Value: []byte("x")}).FirstErr()
		require.Error(t, err, "an idempotent producer needs IDEMPOTENT_WRITE or WRITE on a topic")
	})

	// The audit log: one line per refusal, in Kafka's words.
	for _, want := range []string{
		"Principal = User:bob is Denied Operation = Write from host = 127.0.0.1 on resource = Topic:LITERAL:orders for request = Produce",
		"Principal = User:bob is Denied Operation = Read from host = 127.0.0.1 on resource = Topic:LITERAL:orders for request = Fetch",
		"Principal = User:bob is Denied Operation = Read from host = 127.0.0.1 on resource = Group:LITERAL:alice-group for request = JoinGroup",
		"Principal = User:bob is Denied Operation = Describe from host = 127.0.0.1 on resource = Group:LITERAL:alice-group for request = FindCoordinator",
		"Principal = User:bob is Denied Operation = Describe from host = 127.0.0.1 on resource = Topic:LITERAL:orders for request = Metadata",
		"Principal = User:bob is Denied Operation = Alter from host = 127.0.0.1 on resource = Cluster:LITERAL:kafka-cluster for request = CreateACLs",
	} {
		require.NotEmpty(t, logs.lines(want), "audit line %q", want)
	}
	require.Empty(t, logs.lines("Principal = User:alice is Denied", "resource = Topic:LITERAL:orders"), "alice was never refused on orders")
	// Last: it writes to orders, whose offsets the subtests above count.
	t.Run("transactions", func(t *testing.T) {
		p := as("alice", kgo.TransactionalID("alice-txn"), kgo.DefaultProduceTopic("orders"))
		require.NoError(t, p.BeginTransaction())
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")}).FirstErr())
		require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
		d, err := aliceAdm.DescribeTransactions(ctx, "alice-txn")
		require.NoError(t, err)
		require.NoError(t, d["alice-txn"].Err)

		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("alice-txn"), 60000
		require.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, bobReq(init).(*kmsg.InitProducerIDResponse).ErrorCode)
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.Commit = "alice-txn", true
		require.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, bobReq(end).(*kmsg.EndTxnResponse).ErrorCode)
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.Version, add.TransactionalID = 3, "alice-txn"
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
		if ar := bobReq(add).(*kmsg.AddPartitionsToTxnResponse); ar.Version >= 4 {
			// kgo sent the broker-to-broker version: CLUSTER_ACTION first.
			require.Equal(t, kerr.ClusterAuthorizationFailed.Code, ar.ErrorCode)
		} else {
			require.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, ar.Topics[0].Partitions[0].ErrorCode)
		}
		desc := kmsg.NewPtrDescribeTransactionsRequest()
		desc.TransactionalIDs = []string{"alice-txn"}
		require.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, bobReq(desc).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode)
		list := kmsg.NewPtrListTransactionsRequest()
		require.Empty(t, bobReq(list).(*kmsg.ListTransactionsResponse).TransactionStates, "bob lists no id he may not describe")
		wm := kmsg.NewPtrWriteTxnMarkersRequest()
		wm.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Committed: false,
			Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "orders", Partitions: []int32{0}}}}}
		require.Equal(t, kerr.ClusterAuthorizationFailed.Code, bobReq(wm).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode)
	})
}
