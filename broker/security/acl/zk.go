package acl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kafka's ZooKeeper paths for ACLs (kafka.zk.ZkAclStore,
// ZkAclChangeStore).
const (
	// LiteralPath holds the literal patterns: /kafka-acl/Topic/orders.
	LiteralPath = "/kafka-acl"
	// ExtendedPath holds the other patterns, under the pattern type's
	// lower-case name: /kafka-acl-extended/prefixed/Topic/ord.
	ExtendedPath = "/kafka-acl-extended"
	// LiteralChangesPath gets a sequential node for each change of a
	// literal pattern, its data "TOPIC:orders".
	LiteralChangesPath = "/kafka-acl-changes"
	// ExtendedChangesPath gets a sequential node for each change of a
	// prefixed pattern, its data an ExtendedAclChangeEvent in JSON.
	ExtendedChangesPath = "/kafka-acl-extended-changes"
	// ChangePrefix is the name prefix of the change nodes:
	// acl_changes_0000000007.
	ChangePrefix = "acl_changes_"
)

// ChangesPaths are the two change-notification parents.
var ChangesPaths = []string{LiteralChangesPath, ExtendedChangesPath}

// StorePath is the root of a pattern type's ACL nodes: /kafka-acl,
// /kafka-acl-extended/prefixed.
func StorePath(p PatternType) string {
	if p == Literal {
		return LiteralPath
	}
	return ExtendedPath + "/" + strings.ToLower(p.String())
}

// TypePath is the parent of one pattern type's and resource type's
// nodes: /kafka-acl/Topic, /kafka-acl-extended/prefixed/Group.
func TypePath(p PatternType, t ResourceType) string { return StorePath(p) + "/" + t.ZKName() }

// Path is the node of a resource pattern's ACLs (ResourceZNode.path):
// /kafka-acl/Topic/orders, /kafka-acl-extended/prefixed/Topic/ord,
// /kafka-acl/Cluster/kafka-cluster.
func (r Resource) Path() string { return TypePath(r.Pattern, r.Type) + "/" + r.Name }

// Paths are the nodes Kafka's authorizer creates at start
// (KafkaZkClient.createAclPaths): each store's root and one child per
// resource type, and the two change parents.
func Paths() []string {
	var out []string
	for _, p := range []PatternType{Literal, Prefixed} {
		out = append(out, StorePath(p))
		for _, t := range ResourceTypes {
			out = append(out, TypePath(p, t))
		}
	}
	return append(out, ChangesPaths...)
}

// ErrMalformed is wrapped by the decoders when data is not what Kafka
// writes.
var ErrMalformed = errors.New("acl: malformed ACL node data")

// aclJSON is one entry of a resource node, in the order Kafka writes
// the fields (AclEntry.toMap).
type aclJSON struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type nodeJSON struct {
	Version int       `json:"version"`
	ACLs    []aclJSON `json:"acls"`
}

// MarshalEntries encodes a resource node as Kafka's AclAuthorizer does
// (ResourceZNode.encode), entries in the order given:
//
//	{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
func MarshalEntries(entries []Entry) []byte {
	n := nodeJSON{Version: 1, ACLs: make([]aclJSON, len(entries))}
	for i, e := range entries {
		n.ACLs[i] = aclJSON{Principal: e.Principal, PermissionType: e.Permission.ZKName(), Operation: e.Operation.ZKName(), Host: e.Host}
	}
	return marshal(n)
}

// UnmarshalEntries decodes a resource node (AclEntry.fromBytes): empty
// data is no entries; the version must be 1; names are read in any of
// Kafka's spellings (Read, READ). The entries come sorted, without
// duplicates.
func UnmarshalEntries(data []byte) ([]Entry, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var n struct {
		Version *int      `json:"version"`
		ACLs    []aclJSON `json:"acls"`
	}
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if n.Version == nil || *n.Version != 1 {
		return nil, fmt.Errorf("%w: version is not 1", ErrMalformed)
	}
	out := make([]Entry, 0, len(n.ACLs))
	for _, a := range n.ACLs {
		e := Entry{Principal: a.Principal, Host: a.Host, Operation: ParseOperation(a.Operation), Permission: ParsePermission(a.PermissionType)}
		if !e.Operation.Known() || !e.Permission.Known() || !strings.Contains(e.Principal, ":") {
			return nil, fmt.Errorf("%w: entry %+v", ErrMalformed, a)
		}
		out = append(out, e)
	}
	return normalize(out), nil
}

// normalize sorts entries and drops duplicates (Kafka keeps a set).
func normalize(entries []Entry) []Entry {
	slices.SortFunc(entries, compareEntries)
	return slices.Compact(entries)
}

// changeJSON is Kafka's ExtendedAclChangeEvent, fields in its order.
type changeJSON struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

// ChangeNotification is the sequential node announcing a change of r's
// ACLs, as Kafka's createAclChangeNotification writes it: the path to
// create (with Sequential) and its data. A literal pattern goes to
// /kafka-acl-changes as "TOPIC:orders" (resource type enum name, colon,
// name); any other to /kafka-acl-extended-changes as
// {"version":1,"resourceType":"TOPIC","name":"ord","patternType":"PREFIXED"}.
func ChangeNotification(r Resource) (path string, data []byte) {
	if r.Pattern == Literal {
		return LiteralChangesPath + "/" + ChangePrefix, []byte(r.Type.String() + ":" + r.Name)
	}
	return ExtendedChangesPath + "/" + ChangePrefix,
		marshal(changeJSON{Version: 1, ResourceType: r.Type.String(), Name: r.Name, PatternType: r.Pattern.String()})
}

// ParseChangeNotification decodes the data of a change node under
// changesPath (LiteralChangesPath or ExtendedChangesPath), as Kafka's
// ZkAclChangeStore.decode: the resource type in any of Kafka's
// spellings.
func ParseChangeNotification(changesPath string, data []byte) (Resource, error) {
	switch changesPath {
	case LiteralChangesPath:
		t, name, ok := strings.Cut(string(data), ":")
		r := Resource{Type: ParseResourceType(t), Name: name, Pattern: Literal}
		if !ok || !r.Type.Known() {
			return Resource{}, fmt.Errorf("%w: change %q: want ResourceType:ResourceName", ErrMalformed, data)
		}
		return r, nil
	case ExtendedChangesPath:
		var c changeJSON
		if err := json.Unmarshal(data, &c); err != nil {
			return Resource{}, fmt.Errorf("%w: change %q: %v", ErrMalformed, data, err)
		}
		r := Resource{Type: ParseResourceType(c.ResourceType), Name: c.Name, Pattern: ParsePatternType(c.PatternType)}
		if c.Version > 1 || !r.Type.Known() || !r.Pattern.Specific() {
			return Resource{}, fmt.Errorf("%w: change %q", ErrMalformed, data)
		}
		return r, nil
	}
	return Resource{}, fmt.Errorf("acl: %s is not an ACL change path", changesPath)
}

// marshal encodes v as Jackson does for Kafka: compact, and without
// Go's escaping of <, > and &.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("acl: encode: " + err.Error()) // only strings and ints
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
