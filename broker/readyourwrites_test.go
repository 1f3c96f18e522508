//go:build linux

package broker_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// rywRounds is how many write-then-read rounds each kind of change gets
// (the in-process cluster does all of them in a few seconds).
func rywRounds() int { return 200 }

// rywCluster is a 3-broker cluster and a client that asks one broker a
// request as it is, without retries or redirection (kgo's Broker.Request
// sends to that broker only): what an independent client that changes
// something through one broker and reads it through another sees.
type rywCluster struct {
	c  *brokertest.Cluster
	cl *kgo.Client
}

func startRYW(t *testing.T, opts ...brokertest.Option) *rywCluster {
	c := brokertest.StartCluster(t, 3, opts...)
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "every broker to see all three", func() bool {
			return len(b.Cache().Snapshot().Brokers) == 3
		})
	}
	r := &rywCluster{c: c, cl: newClient(t, c.Addrs())}
	// Load the client's broker list, so Broker(id) can dial each.
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), r.cl)
	require.NoError(t, err)
	return r
}

func (r *rywCluster) controller(t *testing.T) int32 {
	var id int32 = -1
	waitFor(t, 10*time.Second, "a controller", func() bool {
		id = r.c.Brokers[0].Cache().Snapshot().ControllerID
		return id >= 0
	})
	return id
}

// ask sends req to broker id alone.
func (r *rywCluster) ask(t *testing.T, id int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := r.cl.Broker(int(id)).Request(testCtx(t), req)
	require.NoError(t, err, "broker %d", id)
	return resp
}

// other is round r's reader: a broker other than the writer w.
func other(w int32, round int) int32 { return (w + 1 + int32(round%2)) % 3 }

func (r *rywCluster) metadata(t *testing.T, id int32, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := r.ask(t, id, req).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 1)
	return resp.Topics[0]
}

// TestReadYourWritesTopics: CreateTopics, CreatePartitions and
// DeleteTopics answered by the controller are at once seen in Metadata
// from every other broker.
func TestReadYourWritesTopics(t *testing.T) {
	r := startRYW(t)
	ctrl := r.controller(t)
	start := time.Now()
	for round := range rywRounds() {
		name := fmt.Sprintf("ryw-%d", round)
		reader := other(ctrl, round)

		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.TimeoutMillis = 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 3
		ct.Topics = append(ct.Topics, rt)
		cresp := r.ask(t, ctrl, ct).(*kmsg.CreateTopicsResponse)
		require.NoError(t, kerr.ErrorForCode(cresp.Topics[0].ErrorCode), "create %s", name)
		mt := r.metadata(t, reader, name)
		require.NoError(t, kerr.ErrorForCode(mt.ErrorCode), "round %d: broker %d after CreateTopics", round, reader)
		require.Len(t, mt.Partitions, 1, "round %d", round)
		require.GreaterOrEqual(t, mt.Partitions[0].Leader, int32(0), "round %d: broker %d shows no leader", round, reader)

		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.TimeoutMillis = 30000
		pt := kmsg.NewCreatePartitionsRequestTopic()
		pt.Topic, pt.Count = name, 2
		cp.Topics = append(cp.Topics, pt)
		presp := r.ask(t, ctrl, cp).(*kmsg.CreatePartitionsResponse)
		require.NoError(t, kerr.ErrorForCode(presp.Topics[0].ErrorCode), "create partitions %s", name)
		reader = other(ctrl, round+1)
		mt = r.metadata(t, reader, name)
		require.NoError(t, kerr.ErrorForCode(mt.ErrorCode), "round %d", round)
		require.Len(t, mt.Partitions, 2, "round %d: broker %d after CreatePartitions", round, reader)

		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.TimeoutMillis = 30000
		dt.TopicNames = []string{name}
		drt := kmsg.NewDeleteTopicsRequestTopic()
		drt.Topic = kmsg.StringPtr(name)
		dt.Topics = append(dt.Topics, drt)
		dresp := r.ask(t, ctrl, dt).(*kmsg.DeleteTopicsResponse)
		require.NoError(t, kerr.ErrorForCode(dresp.Topics[0].ErrorCode), "delete %s", name)
		reader = other(ctrl, round)
		mt = r.metadata(t, reader, name)
		require.ErrorIs(t, kerr.ErrorForCode(mt.ErrorCode), kerr.UnknownTopicOrPartition, "round %d: broker %d after DeleteTopics", round, reader)
	}
	t.Logf("%d rounds of create, add partitions, delete in %v", rywRounds(), time.Since(start))
}

// describeConfig is the value broker id gives key of a resource.
func (r *rywCluster) describeConfig(t *testing.T, id int32, typ kmsg.ConfigResourceType, name, key string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, []string{key}
	req.Resources = append(req.Resources, rr)
	resp := r.ask(t, id, req).(*kmsg.DescribeConfigsResponse)
	require.Len(t, resp.Resources, 1)
	require.NoError(t, kerr.ErrorForCode(resp.Resources[0].ErrorCode), "describe on broker %d", id)
	for _, c := range resp.Resources[0].Configs {
		if c.Name == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// TestReadYourWritesConfigs: a topic's config and the cluster-wide broker
// default, changed with AlterConfigs or IncrementalAlterConfigs through
// one broker, are at once what DescribeConfigs gives on another.
func TestReadYourWritesConfigs(t *testing.T) {
	r := startRYW(t)
	ctrl := r.controller(t)
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "ryw-config", 1, 3
	ct.Topics = append(ct.Topics, rt)
	cresp := r.ask(t, ctrl, ct).(*kmsg.CreateTopicsResponse)
	require.NoError(t, kerr.ErrorForCode(cresp.Topics[0].ErrorCode))
	// Configs alone are under test here: the topic is on every broker.
	for _, b := range r.c.Brokers {
		waitFor(t, 10*time.Second, "the topic on every broker", func() bool {
			_, ok := b.Cache().Snapshot().Topics["ryw-config"]
			return ok
		})
	}

	for _, res := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		key  string
	}{
		{kmsg.ConfigResourceTypeTopic, "ryw-config", "retention.ms"},
		{kmsg.ConfigResourceTypeBroker, "", "log.retention.ms"},
	} {
		for _, incremental := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-%q-incremental=%v", res.typ, res.name, incremental), func(t *testing.T) {
				start := time.Now()
				for round := range rywRounds() {
					writer := int32(round % 3)
					reader := other(writer, round/3)
					value := strconv.Itoa(3600000 + round)
					var code int16
					if incremental {
						req := kmsg.NewPtrIncrementalAlterConfigsRequest()
						rr := kmsg.NewIncrementalAlterConfigsRequestResource()
						rr.ResourceType, rr.ResourceName = res.typ, res.name
						c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
						c.Name, c.Value, c.Op = res.key, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
						rr.Configs = append(rr.Configs, c)
						req.Resources = append(req.Resources, rr)
						code = r.ask(t, writer, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
					} else {
						req := kmsg.NewPtrAlterConfigsRequest()
						rr := kmsg.NewAlterConfigsRequestResource()
						rr.ResourceType, rr.ResourceName = res.typ, res.name
						c := kmsg.NewAlterConfigsRequestResourceConfig()
						c.Name, c.Value = res.key, kmsg.StringPtr(value)
						rr.Configs = append(rr.Configs, c)
						req.Resources = append(req.Resources, rr)
						code = r.ask(t, writer, req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
					}
					require.NoError(t, kerr.ErrorForCode(code), "round %d: alter on broker %d", round, writer)
					require.Equal(t, value, r.describeConfig(t, reader, res.typ, res.name, res.key),
						"round %d: set through broker %d, read through broker %d", round, writer, reader)
				}
				t.Logf("%d rounds in %v", rywRounds(), time.Since(start))
			})
		}
	}
}

// TestReadYourWritesACLs: ACLs created or deleted through one broker are
// at once what DescribeAcls gives on another.
func TestReadYourWritesACLs(t *testing.T) {
	r := startRYW(t, brokertest.WithAuthorizer())
	describe := func(id int32, topic string) int {
		t.Helper()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(topic)
		req.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp := r.ask(t, id, req).(*kmsg.DescribeACLsResponse)
		require.NoError(t, kerr.ErrorForCode(resp.ErrorCode), "describe on broker %d", id)
		n := 0
		for _, res := range resp.Resources {
			n += len(res.ACLs)
		}
		return n
	}
	start := time.Now()
	for round := range rywRounds() {
		topic := fmt.Sprintf("ryw-acl-%d", round)
		writer := int32(round % 3)
		reader := other(writer, round/3)

		ca := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		ca.Creations = append(ca.Creations, c)
		cresp := r.ask(t, writer, ca).(*kmsg.CreateACLsResponse)
		require.NoError(t, kerr.ErrorForCode(cresp.Results[0].ErrorCode), "round %d: create on broker %d", round, writer)
		require.Equal(t, 1, describe(reader, topic), "round %d: created through broker %d, described through broker %d", round, writer, reader)

		writer = reader
		reader = other(writer, round)
		da := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(topic), kmsg.ACLResourcePatternTypeLiteral
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		da.Filters = append(da.Filters, f)
		dresp := r.ask(t, writer, da).(*kmsg.DeleteACLsResponse)
		require.NoError(t, kerr.ErrorForCode(dresp.Results[0].ErrorCode), "round %d: delete on broker %d", round, writer)
		require.Len(t, dresp.Results[0].MatchingACLs, 1, "round %d", round)
		require.Zero(t, describe(reader, topic), "round %d: deleted through broker %d, described through broker %d", round, writer, reader)
	}
	t.Logf("%d rounds of create and delete in %v", rywRounds(), time.Since(start))
}

// TestReadYourWritesQuotasAndCredentials: a client quota and a SCRAM
// credential set through one broker are at once described by another.
func TestReadYourWritesQuotasAndCredentials(t *testing.T) {
	r := startRYW(t)
	ctrl := r.controller(t)
	start := time.Now()
	for round := range rywRounds() {
		user := fmt.Sprintf("ryw-%d", round)
		writer := int32(round % 3)
		reader := other(writer, round/3)

		aq := kmsg.NewPtrAlterClientQuotasRequest()
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ent.Type, ent.Name = "user", kmsg.StringPtr(user)
		e.Entity = append(e.Entity, ent)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", float64(1000+round)
		e.Ops = append(e.Ops, op)
		aq.Entries = append(aq.Entries, e)
		aresp := r.ask(t, writer, aq).(*kmsg.AlterClientQuotasResponse)
		require.NoError(t, kerr.ErrorForCode(aresp.Entries[0].ErrorCode), "round %d: alter quota on broker %d", round, writer)
		dq := kmsg.NewPtrDescribeClientQuotasRequest()
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		comp.EntityType, comp.MatchType, comp.Match = "user", 0, kmsg.StringPtr(user)
		dq.Components, dq.Strict = append(dq.Components, comp), true
		dqresp := r.ask(t, reader, dq).(*kmsg.DescribeClientQuotasResponse)
		require.NoError(t, kerr.ErrorForCode(dqresp.ErrorCode), "round %d", round)
		require.Len(t, dqresp.Entries, 1, "round %d: quota set through broker %d, described through broker %d", round, writer, reader)
		require.Len(t, dqresp.Entries[0].Values, 1, "round %d", round)
		require.Equal(t, float64(1000+round), dqresp.Entries[0].Values[0].Value, "round %d", round)

		// AlterUserScramCredentials goes to the controller (as Kafka's).
		writer = ctrl
		reader = other(writer, round)
		as := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		as.Upsertions = append(as.Upsertions, upsertion(user, 1, 4096))
		asresp := r.ask(t, writer, as).(*kmsg.AlterUserSCRAMCredentialsResponse)
		require.NoError(t, kerr.ErrorForCode(asresp.Results[0].ErrorCode), "round %d: alter credential on broker %d", round, writer)
		ds := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		du := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		du.Name = user
		ds.Users = append(ds.Users, du)
		dsresp := r.ask(t, reader, ds).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		require.NoError(t, kerr.ErrorForCode(dsresp.ErrorCode), "round %d", round)
		require.Len(t, dsresp.Results, 1)
		require.NoError(t, kerr.ErrorForCode(dsresp.Results[0].ErrorCode), "round %d: credential set through broker %d, described through broker %d", round, writer, reader)
		require.Len(t, dsresp.Results[0].CredentialInfos, 1, "round %d", round)
	}
	t.Logf("%d rounds of quota and credential in %v", rywRounds(), time.Since(start))
}
