//go:build linux

package brokertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadYourWrites checks that what a client changes through one broker
// it reads at once through another (issue 19): each check is rounds of
// "change through broker i, read through broker j != i" with requests
// sent to one broker as they are (kgo's Broker.Request: no retry, no
// redirection), as an independent client that does not retry sees the
// cluster. It runs against the in-process cluster and against real
// processes (e2e).
type ReadYourWrites struct {
	t          testing.TB
	cl         *kgo.Client
	ids        []int32
	controller int32
	// Rounds of each check.
	Rounds int
}

// NewReadYourWrites reads the brokers and the controller through cl (a
// client of every broker), which must see at least two brokers.
func NewReadYourWrites(t testing.TB, cl *kgo.Client, rounds int) *ReadYourWrites {
	t.Helper()
	r := &ReadYourWrites{t: t, cl: cl, Rounds: rounds}
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(r.ctx(), cl)
	require.NoError(t, err)
	for _, b := range resp.Brokers {
		r.ids = append(r.ids, b.NodeID)
	}
	slices.Sort(r.ids)
	require.GreaterOrEqual(t, len(r.ids), 2, "brokers")
	require.GreaterOrEqual(t, resp.ControllerID, int32(0), "controller")
	r.controller = resp.ControllerID
	return r
}

func (r *ReadYourWrites) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	r.t.Cleanup(cancel)
	return ctx
}

// ask sends req to broker id alone.
func (r *ReadYourWrites) ask(id int32, req kmsg.Request) kmsg.Response {
	r.t.Helper()
	resp, err := r.cl.Broker(int(id)).Request(r.ctx(), req)
	require.NoError(r.t, err, "broker %d", id)
	return resp
}

// writer is round's writing broker, rotating.
func (r *ReadYourWrites) writer(round int) int32 { return r.ids[round%len(r.ids)] }

// other is a broker other than w, rotating with round.
func (r *ReadYourWrites) other(w int32, round int) int32 {
	i := slices.Index(r.ids, w)
	return r.ids[(i+1+round%(len(r.ids)-1))%len(r.ids)]
}

func (r *ReadYourWrites) metadata(id int32, topic string) kmsg.MetadataResponseTopic {
	r.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := r.ask(id, req).(*kmsg.MetadataResponse)
	require.Len(r.t, resp.Topics, 1)
	return resp.Topics[0]
}

func (r *ReadYourWrites) createTopic(name string, partitions int32) {
	r.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, int16(min(3, len(r.ids)))
	req.Topics = append(req.Topics, rt)
	resp := r.ask(r.controller, req).(*kmsg.CreateTopicsResponse)
	require.NoError(r.t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), "create %s", name)
}

// Topics: CreateTopics, CreatePartitions and DeleteTopics answered by the
// controller (they go to the controller) are at once seen in Metadata
// from another broker.
func (r *ReadYourWrites) Topics() {
	t := r.t
	start := time.Now()
	for round := range r.Rounds {
		name := fmt.Sprintf("ryw-%d", round)
		r.createTopic(name, 1)
		reader := r.other(r.controller, round)
		mt := r.metadata(reader, name)
		require.NoError(t, kerr.ErrorForCode(mt.ErrorCode), "round %d: broker %d after CreateTopics", round, reader)
		require.Len(t, mt.Partitions, 1, "round %d", round)
		require.GreaterOrEqual(t, mt.Partitions[0].Leader, int32(0), "round %d: broker %d shows no leader", round, reader)

		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.TimeoutMillis = 30000
		pt := kmsg.NewCreatePartitionsRequestTopic()
		pt.Topic, pt.Count = name, 2
		cp.Topics = append(cp.Topics, pt)
		presp := r.ask(r.controller, cp).(*kmsg.CreatePartitionsResponse)
		require.NoError(t, kerr.ErrorForCode(presp.Topics[0].ErrorCode), "create partitions %s", name)
		reader = r.other(r.controller, round+1)
		mt = r.metadata(reader, name)
		require.NoError(t, kerr.ErrorForCode(mt.ErrorCode), "round %d", round)
		require.Len(t, mt.Partitions, 2, "round %d: broker %d after CreatePartitions", round, reader)

		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.TimeoutMillis = 30000
		dt.TopicNames = []string{name}
		drt := kmsg.NewDeleteTopicsRequestTopic()
		drt.Topic = kmsg.StringPtr(name)
		dt.Topics = append(dt.Topics, drt)
		dresp := r.ask(r.controller, dt).(*kmsg.DeleteTopicsResponse)
		require.NoError(t, kerr.ErrorForCode(dresp.Topics[0].ErrorCode), "delete %s", name)
		reader = r.other(r.controller, round)
		mt = r.metadata(reader, name)
		require.ErrorIs(t, kerr.ErrorForCode(mt.ErrorCode), kerr.UnknownTopicOrPartition, "round %d: broker %d after DeleteTopics", round, reader)
	}
	t.Logf("%d rounds of create, add partitions, delete in %v", r.Rounds, time.Since(start))
}

// describeConfig is the value broker id gives key of a resource.
func (r *ReadYourWrites) describeConfig(id int32, typ kmsg.ConfigResourceType, name, key string) string {
	r.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, []string{key}
	req.Resources = append(req.Resources, rr)
	resp := r.ask(id, req).(*kmsg.DescribeConfigsResponse)
	require.Len(r.t, resp.Resources, 1)
	require.NoError(r.t, kerr.ErrorForCode(resp.Resources[0].ErrorCode), "describe on broker %d", id)
	for _, c := range resp.Resources[0].Configs {
		if c.Name == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// Configs: a topic's config and the cluster-wide broker default, changed
// with AlterConfigs or IncrementalAlterConfigs through one broker, are at
// once what DescribeConfigs gives on another. (A per-broker config is
// altered and described on that broker only, as in Kafka.)
func (r *ReadYourWrites) Configs() {
	t := r.t
	const topic = "ryw-config"
	r.createTopic(topic, 1)
	// Configs alone are under test: wait for the topic on every broker.
	for _, id := range r.ids {
		deadline := time.Now().Add(30 * time.Second)
		for kerr.ErrorForCode(r.metadata(id, topic).ErrorCode) != nil {
			require.True(t, time.Now().Before(deadline), "topic %s on broker %d", topic, id)
			time.Sleep(10 * time.Millisecond) // polling interval
		}
	}
	for _, res := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		key  string
	}{
		{kmsg.ConfigResourceTypeTopic, topic, "retention.ms"},
		{kmsg.ConfigResourceTypeBroker, "", "log.retention.ms"},
	} {
		for _, incremental := range []bool{false, true} {
			start := time.Now()
			what := fmt.Sprintf("%s %q incremental=%v", res.typ, res.name, incremental)
			for round := range r.Rounds {
				writer := r.writer(round)
				reader := r.other(writer, round/len(r.ids))
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
					code = r.ask(writer, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
				} else {
					req := kmsg.NewPtrAlterConfigsRequest()
					rr := kmsg.NewAlterConfigsRequestResource()
					rr.ResourceType, rr.ResourceName = res.typ, res.name
					c := kmsg.NewAlterConfigsRequestResourceConfig()
					c.Name, c.Value = res.key, kmsg.StringPtr(value)
					rr.Configs = append(rr.Configs, c)
					req.Resources = append(req.Resources, rr)
					code = r.ask(writer, req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
				}
				require.NoError(t, kerr.ErrorForCode(code), "%s round %d: alter on broker %d", what, round, writer)
				require.Equal(t, value, r.describeConfig(reader, res.typ, res.name, res.key),
					"%s round %d: set through broker %d, read through broker %d", what, round, writer, reader)
			}
			t.Logf("%s: %d rounds in %v", what, r.Rounds, time.Since(start))
		}
	}
}

// ACLs: ACLs created or deleted through one broker are at once what
// DescribeAcls gives on another (the cluster must have an authorizer and
// the client be a super user).
func (r *ReadYourWrites) ACLs() {
	t := r.t
	describe := func(id int32, topic string) int {
		t.Helper()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(topic)
		req.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp := r.ask(id, req).(*kmsg.DescribeACLsResponse)
		require.NoError(t, kerr.ErrorForCode(resp.ErrorCode), "describe on broker %d", id)
		n := 0
		for _, res := range resp.Resources {
			n += len(res.ACLs)
		}
		return n
	}
	start := time.Now()
	for round := range r.Rounds {
		topic := fmt.Sprintf("ryw-acl-%d", round)
		writer := r.writer(round)
		reader := r.other(writer, round/len(r.ids))

		ca := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		ca.Creations = append(ca.Creations, c)
		cresp := r.ask(writer, ca).(*kmsg.CreateACLsResponse)
		require.NoError(t, kerr.ErrorForCode(cresp.Results[0].ErrorCode), "round %d: create on broker %d", round, writer)
		require.Equal(t, 1, describe(reader, topic), "round %d: created through broker %d, described through broker %d", round, writer, reader)

		writer = reader
		reader = r.other(writer, round)
		da := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(topic), kmsg.ACLResourcePatternTypeLiteral
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		da.Filters = append(da.Filters, f)
		dresp := r.ask(writer, da).(*kmsg.DeleteACLsResponse)
		require.NoError(t, kerr.ErrorForCode(dresp.Results[0].ErrorCode), "round %d: delete on broker %d", round, writer)
		require.Len(t, dresp.Results[0].MatchingACLs, 1, "round %d", round)
		require.Zero(t, describe(reader, topic), "round %d: deleted through broker %d, described through broker %d", round, writer, reader)
	}
	t.Logf("%d rounds of ACL create and delete in %v", r.Rounds, time.Since(start))
}

// QuotasAndCredentials: a client quota set through one broker, and a
// SCRAM credential set through the controller (where
// AlterUserScramCredentials goes, as in Kafka), are at once described
// by another broker.
func (r *ReadYourWrites) QuotasAndCredentials() {
	t := r.t
	start := time.Now()
	for round := range r.Rounds {
		// A few users, each given a new value: every broker's cache reads
		// every user's config again at each change, so 200 users would
		// make the rounds quadratic.
		user := fmt.Sprintf("ryw-%d", round%5)
		writer := r.writer(round)
		reader := r.other(writer, round/len(r.ids))

		aq := kmsg.NewPtrAlterClientQuotasRequest()
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ent.Type, ent.Name = "user", kmsg.StringPtr(user)
		e.Entity = append(e.Entity, ent)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", float64(1000+round)
		e.Ops = append(e.Ops, op)
		aq.Entries = append(aq.Entries, e)
		aresp := r.ask(writer, aq).(*kmsg.AlterClientQuotasResponse)
		require.NoError(t, kerr.ErrorForCode(aresp.Entries[0].ErrorCode), "round %d: alter quota on broker %d", round, writer)
		dq := kmsg.NewPtrDescribeClientQuotasRequest()
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		comp.EntityType, comp.MatchType, comp.Match = "user", 0, kmsg.StringPtr(user)
		dq.Components, dq.Strict = append(dq.Components, comp), true
		dqresp := r.ask(reader, dq).(*kmsg.DescribeClientQuotasResponse)
		require.NoError(t, kerr.ErrorForCode(dqresp.ErrorCode), "round %d", round)
		require.Len(t, dqresp.Entries, 1, "round %d: quota set through broker %d, described through broker %d", round, writer, reader)
		require.Len(t, dqresp.Entries[0].Values, 1, "round %d", round)
		require.Equal(t, float64(1000+round), dqresp.Entries[0].Values[0].Value, "round %d", round)

		writer = r.controller
		reader = r.other(writer, round)
		as := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = user, 1, int32(4096+round) // SCRAM-SHA-256
		u.Salt, u.SaltedPassword = []byte("salt"), make([]byte, 32)
		as.Upsertions = append(as.Upsertions, u)
		asresp := r.ask(writer, as).(*kmsg.AlterUserSCRAMCredentialsResponse)
		require.NoError(t, kerr.ErrorForCode(asresp.Results[0].ErrorCode), "round %d: alter credential on broker %d", round, writer)
		ds := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		du := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		du.Name = user
		ds.Users = append(ds.Users, du)
		dsresp := r.ask(reader, ds).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		require.NoError(t, kerr.ErrorForCode(dsresp.ErrorCode), "round %d", round)
		require.Len(t, dsresp.Results, 1)
		require.NoError(t, kerr.ErrorForCode(dsresp.Results[0].ErrorCode), "round %d: credential set through broker %d, described through broker %d", round, writer, reader)
		require.Len(t, dsresp.Results[0].CredentialInfos, 1, "round %d", round)
		require.Equal(t, int32(4096+round), dsresp.Results[0].CredentialInfos[0].Iterations,
			"round %d: credential set through broker %d, described through broker %d", round, writer, reader)
	}
	t.Logf("%d rounds of quota and credential in %v", r.Rounds, time.Since(start))
}
