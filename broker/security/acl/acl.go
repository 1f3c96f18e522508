package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ResourceType is what an ACL applies to; its values are Kafka's codes
// (kmsg.ACLResourceType).
type ResourceType int8

const (
	ResourceUnknown ResourceType = ResourceType(kmsg.ACLResourceTypeUnknown)
	// ResourceAny matches every type, in a filter only.
	ResourceAny     ResourceType = ResourceType(kmsg.ACLResourceTypeAny)
	Topic           ResourceType = ResourceType(kmsg.ACLResourceTypeTopic)
	Group           ResourceType = ResourceType(kmsg.ACLResourceTypeGroup)
	Cluster         ResourceType = ResourceType(kmsg.ACLResourceTypeCluster)
	TransactionalID ResourceType = ResourceType(kmsg.ACLResourceTypeTransactionalId)
	DelegationToken ResourceType = ResourceType(kmsg.ACLResourceTypeDelegationToken)
	User            ResourceType = ResourceType(kmsg.ACLResourceTypeUser)
)

// ResourceTypes are the concrete types, in Kafka's code order: those an
// ACL can name, each with its node under /kafka-acl.
var ResourceTypes = []ResourceType{Topic, Group, Cluster, TransactionalID, DelegationToken, User}

// ClusterName is the only name of the Cluster resource.
const ClusterName = "kafka-cluster"

// Wildcards: the literal resource name that matches every name, the
// principal that matches every user, the host that matches every host.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// String is Kafka's enum name (ResourcePattern.toString): TOPIC,
// TRANSACTIONAL_ID.
func (t ResourceType) String() string { return kmsg.ACLResourceType(t).String() }

// ZKName is the name in ZooKeeper paths (SecurityUtils.resourceTypeName):
// Topic, TransactionalId.
func (t ResourceType) ZKName() string { return pascal(t.String()) }

// Known tells whether t is a concrete type.
func (t ResourceType) Known() bool { return t >= Topic && t <= User }

// ParseResourceType reads a type as Kafka's SecurityUtils.resourceType
// does: the path name (Topic) or the enum name in any case (TOPIC,
// topic); anything else is ResourceUnknown.
func ParseResourceType(s string) ResourceType {
	for t := ResourceAny; t <= User; t++ {
		if s == t.ZKName() || strings.ToUpper(s) == t.String() {
			return t
		}
	}
	return ResourceUnknown
}

// PatternType says how a resource name matches; its values are Kafka's
// codes (kmsg.ACLResourcePatternType).
type PatternType int8

const (
	PatternUnknown PatternType = PatternType(kmsg.ACLResourcePatternTypeUnknown)
	// PatternAny, in a filter, matches patterns of any type with the
	// filter's name as they are (literal or prefixed "foo").
	PatternAny PatternType = PatternType(kmsg.ACLResourcePatternTypeAny)
	// PatternMatch, in a filter, matches the patterns that would apply
	// to a resource of the filter's name: the literal name, the literal
	// wildcard and every prefix of it.
	PatternMatch PatternType = PatternType(kmsg.ACLResourcePatternTypeMatch)
	Literal      PatternType = PatternType(kmsg.ACLResourcePatternTypeLiteral)
	Prefixed     PatternType = PatternType(kmsg.ACLResourcePatternTypePrefixed)
)

// String is Kafka's enum name: LITERAL, PREFIXED, ANY, MATCH.
func (p PatternType) String() string { return kmsg.ACLResourcePatternType(p).String() }

// Specific tells whether p is a pattern an ACL can have (Literal or
// Prefixed), not a filter's.
func (p PatternType) Specific() bool { return p == Literal || p == Prefixed }

// ParsePatternType reads LITERAL, prefixed and the like in any case.
func ParsePatternType(s string) PatternType {
	for p := PatternAny; p <= Prefixed; p++ {
		if strings.ToUpper(s) == p.String() {
			return p
		}
	}
	return PatternUnknown
}

// Operation is what a principal does to a resource; its values are
// Kafka's codes (kmsg.ACLOperation).
type Operation int8

const (
	OpUnknown Operation = Operation(kmsg.ACLOperationUnknown)
	// OpAny matches every operation, in a filter only.
	OpAny Operation = Operation(kmsg.ACLOperationAny)
	// All, in an ACL, stands for every operation.
	All             Operation = Operation(kmsg.ACLOperationAll)
	Read            Operation = Operation(kmsg.ACLOperationRead)
	Write           Operation = Operation(kmsg.ACLOperationWrite)
	Create          Operation = Operation(kmsg.ACLOperationCreate)
	Delete          Operation = Operation(kmsg.ACLOperationDelete)
	Alter           Operation = Operation(kmsg.ACLOperationAlter)
	Describe        Operation = Operation(kmsg.ACLOperationDescribe)
	ClusterAction   Operation = Operation(kmsg.ACLOperationClusterAction)
	DescribeConfigs Operation = Operation(kmsg.ACLOperationDescribeConfigs)
	AlterConfigs    Operation = Operation(kmsg.ACLOperationAlterConfigs)
	IdempotentWrite Operation = Operation(kmsg.ACLOperationIdempotentWrite)
	CreateTokens    Operation = Operation(kmsg.ACLOperationCreateTokens)
	DescribeTokens  Operation = Operation(kmsg.ACLOperationDescribeTokens)
)

// String is Kafka's enum name: READ, DESCRIBE_CONFIGS.
func (o Operation) String() string { return kmsg.ACLOperation(o).String() }

// ZKName is the name Kafka writes in ACL nodes
// (SecurityUtils.operationName): Read, DescribeConfigs, All.
func (o Operation) ZKName() string { return pascal(o.String()) }

// Known tells whether o is an operation an ACL can have.
func (o Operation) Known() bool { return o >= All && o <= DescribeTokens }

// ParseOperation reads Read, READ, read, DescribeConfigs,
// DESCRIBE_CONFIGS; anything else is OpUnknown.
func ParseOperation(s string) Operation {
	for o := OpAny; o <= DescribeTokens; o++ {
		if s == o.ZKName() || strings.ToUpper(s) == o.String() {
			return o
		}
	}
	return OpUnknown
}

// Permission is an ACL's kind; its values are Kafka's codes
// (kmsg.ACLPermissionType).
type Permission int8

const (
	PermissionUnknown Permission = Permission(kmsg.ACLPermissionTypeUnknown)
	// PermissionAny matches both, in a filter only.
	PermissionAny Permission = Permission(kmsg.ACLPermissionTypeAny)
	Deny          Permission = Permission(kmsg.ACLPermissionTypeDeny)
	Allow         Permission = Permission(kmsg.ACLPermissionTypeAllow)
)

// String is Kafka's enum name: ALLOW, DENY.
func (p Permission) String() string { return kmsg.ACLPermissionType(p).String() }

// ZKName is the name in ACL nodes: Allow, Deny.
func (p Permission) ZKName() string { return pascal(p.String()) }

// Known tells whether p is Allow or Deny.
func (p Permission) Known() bool { return p == Allow || p == Deny }

// ParsePermission reads Allow, ALLOW, allow; anything else is
// PermissionUnknown.
func ParsePermission(s string) Permission {
	for p := PermissionAny; p <= Allow; p++ {
		if s == p.ZKName() || strings.ToUpper(s) == p.String() {
			return p
		}
	}
	return PermissionUnknown
}

// pascal turns an enum name into Kafka's PascalCase (Utils.toPascalCase
// over the underscore-separated words): DESCRIBE_CONFIGS is
// DescribeConfigs.
func pascal(s string) string {
	var b strings.Builder
	for w := range strings.SplitSeq(s, "_") {
		if w == "" {
			continue
		}
		b.WriteString(w[:1])
		b.WriteString(strings.ToLower(w[1:]))
	}
	return b.String()
}

// Entry is one access control entry: a principal ("User:alice",
// "User:*"), a host ("*" or an IP address), an operation and a
// permission (Kafka's AccessControlEntry).
type Entry struct {
	Principal  string
	Host       string
	Operation  Operation
	Permission Permission
}

// String is Kafka's AccessControlEntry.toString:
// (principal=User:alice, host=*, operation=READ, permissionType=ALLOW).
func (e Entry) String() string {
	return "(principal=" + e.Principal + ", host=" + e.Host + ", operation=" + e.Operation.String() +
		", permissionType=" + e.Permission.String() + ")"
}

// Resource is a resource pattern: a type, a name and whether the name is
// literal or a prefix (Kafka's ResourcePattern).
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern PatternType
}

// String is Kafka's ResourcePattern.toString:
// ResourcePattern(resourceType=TOPIC, name=t1, patternType=LITERAL).
func (r Resource) String() string {
	return "ResourcePattern(resourceType=" + r.Type.String() + ", name=" + r.Name + ", patternType=" + r.Pattern.String() + ")"
}

// Binding is an entry on a resource (Kafka's AclBinding).
type Binding struct {
	Resource Resource
	Entry    Entry
}

func (b Binding) String() string { return b.Resource.String() + " " + b.Entry.String() }

// compareEntries orders entries by principal, host, operation and
// permission, for stable output.
func compareEntries(a, b Entry) int {
	if c := strings.Compare(a.Principal, b.Principal); c != 0 {
		return c
	}
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	if a.Operation != b.Operation {
		return int(a.Operation) - int(b.Operation)
	}
	return int(a.Permission) - int(b.Permission)
}

// CompareResources orders resources by type, pattern type and name.
func CompareResources(a, b Resource) int {
	if a.Type != b.Type {
		return int(a.Type) - int(b.Type)
	}
	if a.Pattern != b.Pattern {
		return int(a.Pattern) - int(b.Pattern)
	}
	return strings.Compare(a.Name, b.Name)
}
