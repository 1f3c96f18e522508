// Package acl is Kafka's ACL model as its ZooKeeper-mode AclAuthorizer
// has it: resource patterns, entries, the authorization rule, the
// filters of DescribeAcls and DeleteAcls, the validation of
// CreateAcls, and the ZooKeeper nodes and their bytes. It does no I/O
// and takes no locks: the broker's metadata cache holds a Set, built
// with With from what it reads, and the request path calls
// Authorizer.Authorize on it.
//
// ZooKeeper layout (kafka.zk.ZkAclStore), one node per resource
// pattern, its data every entry of the pattern:
//
//	/kafka-acl/<ResourceType>/<name>                     literal patterns
//	/kafka-acl/Cluster/kafka-cluster
//	/kafka-acl-extended/prefixed/<ResourceType>/<name>   prefixed patterns
//	/kafka-acl-changes/acl_changes_<10 digits>           "TOPIC:<name>"
//	/kafka-acl-extended-changes/acl_changes_<10 digits>  {"version":1,"resourceType":"TOPIC","name":"<name>","patternType":"PREFIXED"}
//
// <ResourceType> is Topic, Group, Cluster, TransactionalId,
// DelegationToken or User. A node's data:
//
//	{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
//
// A writer replaces a node with a conditional set on its version
// (creating it when missing, deleting it when its last entry goes),
// then creates a change node; every broker watches the two change
// parents and re-reads the node each new change names. Change nodes
// older than 15 minutes are deleted by whoever reads them.
//
// Invariants: a Set's entries per pattern are sorted and unique; a Set
// is never modified once built.
package acl
