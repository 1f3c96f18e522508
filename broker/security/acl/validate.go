package acl

import "strings"

// InvalidError is an ACL or filter Kafka would refuse with
// INVALID_REQUEST; Msg is Kafka's message.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return "acl: " + e.Msg }

// Validate checks an ACL to create as a ZooKeeper-mode Kafka broker
// does (KafkaApis.handleCreateAcls, AclAuthorizer.validateAclBinding and
// the checks of AclControlManager.validateNewAcl that the broker makes
// through its parsers): a concrete resource type and pattern type,
// operation and permission; a non-empty name without "/"; the cluster
// named kafka-cluster; a principal of the form type:name.
func Validate(b Binding) error {
	r, e := b.Resource, b.Entry
	switch {
	case !r.Type.Known():
		return &InvalidError{Msg: "Invalid resourceType " + r.Type.String()}
	case !r.Pattern.Specific():
		return &InvalidError{Msg: "Invalid patternType " + r.Pattern.String()}
	case !e.Operation.Known():
		return &InvalidError{Msg: "Invalid operation " + e.Operation.String()}
	case !e.Permission.Known():
		return &InvalidError{Msg: "Invalid permissionType " + e.Permission.String()}
	case r.Type == Cluster && r.Name != ClusterName:
		return &InvalidError{Msg: "The only valid name for the CLUSTER resource is " + ClusterName}
	case r.Name == "":
		return &InvalidError{Msg: "Invalid empty resource name"}
	case strings.Contains(r.Name, "/"):
		return &InvalidError{Msg: "ACL binding contains invalid resource name: " + r.Name}
	case !strings.Contains(e.Principal, ":"):
		return &InvalidError{Msg: "Could not parse principal from `" + e.Principal +
			"` (no colon is present separating the principal type from the principal name)"}
	case e.Host == "":
		return &InvalidError{Msg: "Invalid empty host"}
	}
	return nil
}
