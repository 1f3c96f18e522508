package api

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/security/acl"
)

// Authorization, as Kafka's KafkaApis does it with AclAuthorizer: each
// API names the operation it needs on each resource it touches, and the
// answer for a resource the principal may not use is that API's
// authorization error (TOPIC_, GROUP_, CLUSTER_, TRANSACTIONAL_ID_
// AUTHORIZATION_FAILED) in the place the response has for it. Without an
// authorizer (authorizer.class.name unset) everything is allowed.
//
// Every denial is logged at Info under component=authorizer, in the
// words of Kafka's kafka.authorizer.logger, so operators' greps work:
// "Principal = User:bob is Denied Operation = Read from host = 10.0.0.1
// on resource = Topic:LITERAL:orders for request = Fetch".

// authorizer returns the authorizer, nil when none is configured.
func (h *Handler) authorizer() *acl.Authorizer { return h.cfg.Authorizer }

// allowed reports whether the request's principal may do op on the
// resource, logging a denial. audit false skips the log line, for
// decisions that only filter what is shown (an all-topics Metadata lists
// what the principal may describe, and Kafka does not log the rest).
func (c *call) allowed(op acl.Operation, t acl.ResourceType, name string, audit bool) bool {
	a := c.h.authorizer()
	if a == nil {
		return true
	}
	principal := c.h.Principal(c.r)
	host := remoteHost(c.r)
	ok, _ := a.Authorize(c.h.cfg.Cache.Snapshot().ACLs(), principal, host, op, t, name)
	if !ok && audit {
		c.h.authLog.Info("Principal = "+principal+" is Denied Operation = "+op.ZKName()+" from host = "+host+
			" on resource = "+t.ZKName()+":LITERAL:"+name+" for request = "+kmsg.NameForKey(c.key),
			"principal", principal, "host", host, "operation", op.ZKName(), "resource_type", t.ZKName(),
			"resource", name, "api", kmsg.NameForKey(c.key), "client_id", clientID(c.r))
	}
	return ok
}

// authorize is allowed with the denial logged.
func (c *call) authorize(op acl.Operation, t acl.ResourceType, name string) bool {
	return c.allowed(op, t, name, true)
}

// authorizeCluster checks op on the cluster resource.
func (c *call) authorizeCluster(op acl.Operation) bool {
	return c.authorize(op, acl.Cluster, acl.ClusterName)
}

// topicAuth decides one operation on each topic of a request once, for
// requests that name a topic per partition; its decisions are nil
// without an authorizer (all allowed).
type topicAuth struct {
	c       *call
	op      acl.Operation
	decided map[string]bool
}

func (c *call) topicAuth(op acl.Operation) *topicAuth {
	ta := &topicAuth{c: c, op: op}
	if c.h.authorizer() != nil {
		ta.decided = map[string]bool{}
	}
	return ta
}

// ok checks (and remembers) the decision for a topic.
func (ta *topicAuth) ok(topic string) bool {
	if ta.decided == nil {
		return true
	}
	v, seen := ta.decided[topic]
	if !seen {
		v = ta.c.authorize(ta.op, acl.Topic, topic)
		ta.decided[topic] = v
	}
	return v
}

// authorizedOperations is the bit field of KIP-430 (Metadata,
// DescribeGroups, DescribeCluster): bit i is set when operation i is
// allowed on the resource. Without an authorizer every operation the
// resource type has is.
func (c *call) authorizedOperations(t acl.ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[t] {
		if c.allowed(op, t, name, false) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// supportedOperations are the operations Kafka lists for each resource
// type in authorized-operations answers (AclEntry.supportedOperations).
var supportedOperations = map[acl.ResourceType][]acl.Operation{
	acl.Topic: {acl.Read, acl.Write, acl.Create, acl.Describe, acl.Delete, acl.Alter,
		acl.DescribeConfigs, acl.AlterConfigs},
	acl.Group: {acl.Read, acl.Describe, acl.Delete},
	acl.Cluster: {acl.Create, acl.ClusterAction, acl.DescribeConfigs, acl.AlterConfigs, acl.IdempotentWrite,
		acl.Alter, acl.Describe},
	acl.TransactionalID: {acl.Describe, acl.Write},
}

// remoteHost is the client's IP address, as ACL hosts name it.
func remoteHost(r *network.Request) string {
	if r.RemoteAddr == nil {
		return ""
	}
	if ta, ok := r.RemoteAddr.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr.String())
	if err != nil {
		return r.RemoteAddr.String()
	}
	return host
}

// mayCreateTopic: CREATE on the cluster or on the topic, what Kafka asks
// of CreateTopics and of Metadata's auto-creation. The cluster check is
// not logged when the topic check allows.
func (c *call) mayCreateTopic(topic string) bool {
	return c.allowed(acl.Create, acl.Cluster, acl.ClusterName, false) || c.authorize(acl.Create, acl.Topic, topic)
}

// mayWriteSomeTopic is Kafka's authorizeByResourceType(WRITE, TOPIC),
// simplified: an allow ACL for WRITE (or ALL) on some topic pattern for
// the principal or User:*, from any host, or a super user. (Kafka also
// weighs denies on the same patterns; an idempotent producer refused
// WRITE on every topic it writes is refused at Produce anyway.)
func (c *call) mayWriteSomeTopic() bool {
	a := c.h.authorizer()
	if a == nil {
		return true
	}
	principal := c.h.Principal(c.r)
	if a.SuperUsers[principal] {
		return true
	}
	host := remoteHost(c.r)
	for _, b := range c.h.cfg.Cache.Snapshot().ACLs().Bindings(acl.Filter{Type: acl.Topic, Pattern: acl.PatternAny,
		Operation: acl.OpAny, Permission: acl.Allow}) {
		e := b.Entry
		if (e.Principal == principal || e.Principal == "User:*") && (e.Host == "*" || e.Host == host) &&
			(e.Operation == acl.Write || e.Operation == acl.All) {
			return true
		}
	}
	return false
}

// configAuthorized is Kafka's check for DescribeConfigs and
// (Incremental)AlterConfigs: op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on
// the topic for topic resources (TOPIC_AUTHORIZATION_FAILED), on the
// cluster for broker and broker-logger ones (CLUSTER_AUTHORIZATION_FAILED).
func (c *call) configAuthorized(op acl.Operation, resourceType int8, name string) error {
	switch resourceType {
	case 2: // TOPIC
		if !c.authorize(op, acl.Topic, name) {
			return kerr.TopicAuthorizationFailed
		}
	default: // BROKER, BROKER_LOGGER; unknown types fail later
		if !c.authorizeCluster(op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

// clusterAuthorized is CLUSTER_AUTHORIZATION_FAILED unless the principal
// may do op on the cluster.
func (c *call) clusterAuthorized(op acl.Operation) error {
	if !c.authorizeCluster(op) {
		return kerr.ClusterAuthorizationFailed
	}
	return nil
}
