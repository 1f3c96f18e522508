package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLResource is a resource pattern, printed as Kafka's ResourcePattern.
type ACLResource struct {
	Type    string `json:"resource_type" yaml:"resource_type"` // TOPIC, GROUP, CLUSTER, ...
	Name    string `json:"name" yaml:"name"`
	Pattern string `json:"pattern_type" yaml:"pattern_type"` // LITERAL, PREFIXED
}

func (r ACLResource) String() string {
	return "ResourcePattern(resourceType=" + r.Type + ", name=" + r.Name + ", patternType=" + r.Pattern + ")"
}

// ACLEntry is one access control entry, printed as Kafka's
// AccessControlEntry.
type ACLEntry struct {
	Principal  string `json:"principal" yaml:"principal"`
	Host       string `json:"host" yaml:"host"`
	Operation  string `json:"operation" yaml:"operation"`             // READ, DESCRIBE_CONFIGS, ...
	Permission string `json:"permission_type" yaml:"permission_type"` // ALLOW, DENY
}

func (e ACLEntry) String() string {
	return "(principal=" + e.Principal + ", host=" + e.Host + ", operation=" + e.Operation + ", permissionType=" + e.Permission + ")"
}

// ResourceACLs are one resource pattern's entries.
type ResourceACLs struct {
	Resource ACLResource `json:"resource" yaml:"resource"`
	ACLs     []ACLEntry  `json:"acls" yaml:"acls"`
}

// ACLView is what qk acl prints: for --add the ACLs being added, then
// the current ACLs of the resources (every resource for --list alone).
type ACLView struct {
	Adding  []ResourceACLs `json:"adding,omitempty" yaml:"adding,omitempty"`
	Current []ResourceACLs `json:"current" yaml:"current"`
}

// Len is how many resources are shown.
func (v *ACLView) Len() int {
	if v == nil {
		return 0
	}
	return len(v.Adding) + len(v.Current)
}

// Text writes kafka-acls.sh's lines (see RawText).
func (v *ACLView) Text(w *tabwriter.Writer) { v.RawText(w) }

// RawText writes kafka-acls.sh's lines, byte for byte:
//
//	Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t1, patternType=LITERAL)`:
//	 	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
//
// (AclCommand's println of "...: $Newline ${acls.map("\t" + _).mkString(Newline)} $Newline").
func (v *ACLView) RawText(w io.Writer) {
	for _, r := range v.Adding {
		fmt.Fprintf(w, "Adding ACLs for resource `%s`: \n %s \n\n", r.Resource, tabbed(r.ACLs))
	}
	for _, r := range v.Current {
		fmt.Fprintf(w, "Current ACLs for resource `%s`: \n %s \n\n", r.Resource, tabbed(r.ACLs))
	}
}

func tabbed(acls []ACLEntry) string {
	lines := make([]string, len(acls))
	for i, a := range acls {
		lines[i] = "\t" + a.String()
	}
	return strings.Join(lines, "\n")
}

// ACLOptions are kafka-acls.sh's options.
type ACLOptions struct {
	AllowPrincipals, DenyPrincipals []string
	AllowHosts, DenyHosts           []string
	Operations                      []string // default All
	Topics, Groups                  []string
	TransactionalIDs                []string
	DelegationTokens                []string
	Cluster                         bool
	PatternType                     string // literal (default), prefixed, any, match
	Producer, Consumer, Idempotent  bool
}

// aclRes is a resource (filter) of the options.
type aclRes struct {
	typ     kmsg.ACLResourceType
	name    string
	pattern kmsg.ACLResourcePatternType
}

func (r aclRes) view() ACLResource {
	return ACLResource{Type: r.typ.String(), Name: r.name, Pattern: r.pattern.String()}
}

// validOps is kafka-acls.sh's ResourceTypeToValidOperations.
var validOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kadm.OpRead, kadm.OpWrite, kadm.OpCreate, kadm.OpDescribe, kadm.OpDelete, kadm.OpAlter,
		kadm.OpDescribeConfigs, kadm.OpAlterConfigs, kadm.OpAll},
	kmsg.ACLResourceTypeGroup: {kadm.OpRead, kadm.OpDescribe, kadm.OpDelete, kadm.OpAll},
	kmsg.ACLResourceTypeCluster: {kadm.OpCreate, kadm.OpClusterAction, kadm.OpDescribeConfigs, kadm.OpAlterConfigs,
		kadm.OpIdempotentWrite, kadm.OpAlter, kadm.OpDescribe, kadm.OpAll},
	kmsg.ACLResourceTypeTransactionalId: {kadm.OpDescribe, kadm.OpWrite, kadm.OpAll},
	kmsg.ACLResourceTypeDelegationToken: {kadm.OpDescribe, kadm.OpAll},
}

func (o *ACLOptions) pattern() (kmsg.ACLResourcePatternType, error) {
	if o.PatternType == "" {
		return kmsg.ACLResourcePatternTypeLiteral, nil
	}
	p, err := kmsg.ParseACLResourcePatternType(o.PatternType)
	if err != nil || p == kmsg.ACLResourcePatternTypeUnknown {
		return 0, fmt.Errorf("--resource-pattern-type %q: want literal, prefixed, any or match", o.PatternType)
	}
	return p, nil
}

func (o *ACLOptions) resources(p kmsg.ACLResourcePatternType) []aclRes {
	var out []aclRes
	for _, t := range o.Topics {
		out = append(out, aclRes{kmsg.ACLResourceTypeTopic, strings.TrimSpace(t), p})
	}
	if o.Cluster {
		out = append(out, aclRes{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral}) // always literal, as kafka-acls.sh
	}
	for _, g := range o.Groups {
		out = append(out, aclRes{kmsg.ACLResourceTypeGroup, strings.TrimSpace(g), p})
	}
	for _, x := range o.TransactionalIDs {
		out = append(out, aclRes{kmsg.ACLResourceTypeTransactionalId, strings.TrimSpace(x), p})
	}
	for _, x := range o.DelegationTokens {
		out = append(out, aclRes{kmsg.ACLResourceTypeDelegationToken, strings.TrimSpace(x), p})
	}
	return out
}

// entries is kafka-acls.sh's getAcl: every allowed principal × host ×
// operation, then every denied one; hosts default to * once a principal
// is given.
func (o *ACLOptions) entries(ops []kmsg.ACLOperation) []ACLEntry {
	var out []ACLEntry
	add := func(principals, hosts []string, perm kmsg.ACLPermissionType) {
		if len(hosts) == 0 {
			hosts = []string{"*"}
		}
		for _, p := range principals {
			for _, op := range ops {
				for _, h := range hosts {
					out = append(out, ACLEntry{Principal: strings.TrimSpace(p), Host: strings.TrimSpace(h), Operation: op.String(), Permission: perm.String()})
				}
			}
		}
	}
	add(o.AllowPrincipals, o.AllowHosts, kmsg.ACLPermissionTypeAllow)
	add(o.DenyPrincipals, o.DenyHosts, kmsg.ACLPermissionTypeDeny)
	slices.SortFunc(out, compareACLEntry)
	return slices.Compact(out)
}

func compareACLEntry(a, b ACLEntry) int {
	return cmp.Or(cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// aclsByResource is kafka-acls.sh's getResourceToAcls: the options'
// operations on every resource, or the --producer / --consumer ACLs.
func (o *ACLOptions) aclsByResource(p kmsg.ACLResourcePatternType) ([]aclRes, map[aclRes][]ACLEntry, error) {
	res := o.resources(p)
	out := map[aclRes][]ACLEntry{}
	var order []aclRes
	put := func(r aclRes, e []ACLEntry) {
		if _, ok := out[r]; !ok {
			order = append(order, r)
		}
		out[r] = slices.CompactFunc(slices.SortedFunc(slices.Values(append(out[r], e...)), compareACLEntry), func(a, b ACLEntry) bool { return a == b })
	}
	if !o.Producer && !o.Consumer {
		ops := []kmsg.ACLOperation{kadm.OpAll}
		if len(o.Operations) > 0 {
			ops = nil
			for _, s := range o.Operations {
				op, err := kmsg.ParseACLOperation(strings.TrimSpace(s))
				if err != nil || op == kmsg.ACLOperationUnknown || op == kmsg.ACLOperationAny {
					return nil, nil, fmt.Errorf("--operation %q: not an operation", s)
				}
				ops = append(ops, op)
			}
		}
		for _, r := range res {
			put(r, o.entries(ops))
		}
	}
	if o.Producer {
		for _, r := range res {
			switch r.typ {
			case kmsg.ACLResourceTypeTopic:
				put(r, o.entries([]kmsg.ACLOperation{kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate}))
			case kmsg.ACLResourceTypeTransactionalId:
				put(r, o.entries([]kmsg.ACLOperation{kadm.OpWrite, kadm.OpDescribe}))
			}
		}
		if o.Idempotent {
			put(aclRes{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral}, o.entries([]kmsg.ACLOperation{kadm.OpIdempotentWrite}))
		}
	}
	if o.Consumer {
		for _, r := range res {
			switch r.typ {
			case kmsg.ACLResourceTypeTopic:
				put(r, o.entries([]kmsg.ACLOperation{kadm.OpRead, kadm.OpDescribe}))
			case kmsg.ACLResourceTypeGroup:
				put(r, o.entries([]kmsg.ACLOperation{kadm.OpRead}))
			}
		}
	}
	for r, acls := range out {
		for _, a := range acls {
			op, _ := kmsg.ParseACLOperation(a.Operation)
			if !slices.Contains(validOps[r.typ], op) {
				names := make([]string, len(validOps[r.typ]))
				for i, v := range validOps[r.typ] {
					names[i] = v.String()
				}
				return nil, nil, fmt.Errorf("ResourceType %s only supports operations %s", r.typ, strings.Join(names, ", "))
			}
		}
	}
	return order, out, nil
}

// builder is the kadm builder of one resource and its entries (all
// entries of any principal, host, operation and permission when acls is
// empty).
func builder(r aclRes, acls []ACLEntry) *kadm.ACLBuilder {
	b := kadm.NewACLs().ResourcePatternType(r.pattern)
	switch r.typ {
	case kmsg.ACLResourceTypeTopic:
		b.Topics(r.name)
	case kmsg.ACLResourceTypeGroup:
		b.Groups(r.name)
	case kmsg.ACLResourceTypeCluster:
		b.Clusters()
	case kmsg.ACLResourceTypeTransactionalId:
		b.TransactionalIDs(r.name)
	case kmsg.ACLResourceTypeDelegationToken:
		b.DelegationTokens(r.name)
	case kmsg.ACLResourceTypeAny:
		b.AnyResource()
	}
	if len(acls) == 0 {
		return b.Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny)
	}
	return b
}

// entryBuilders splits entries into builders kadm can express (one
// principal, host, operation and permission each).
func entryBuilders(r aclRes, acls []ACLEntry) []*kadm.ACLBuilder {
	var out []*kadm.ACLBuilder
	for _, a := range acls {
		b := builder(r, acls)
		op, _ := kmsg.ParseACLOperation(a.Operation)
		b.Operations(op)
		if a.Permission == kmsg.ACLPermissionTypeAllow.String() {
			b.Allow(a.Principal).AllowHosts(a.Host)
		} else {
			b.Deny(a.Principal).DenyHosts(a.Host)
		}
		out = append(out, b)
	}
	return out
}

// AddACLs is kafka-acls.sh --add: the ACLs to add, then the current ACLs
// of their resources.
func (c *Client) AddACLs(ctx context.Context, o ACLOptions) (*ACLView, error) {
	p, err := o.pattern()
	if err != nil {
		return nil, err
	}
	if p != kmsg.ACLResourcePatternTypeLiteral && p != kmsg.ACLResourcePatternTypePrefixed {
		return nil, fmt.Errorf("A '--resource-pattern-type' value of '%s' is not valid when adding acls.", strings.ToLower(p.String()))
	}
	order, byRes, err := o.aclsByResource(p)
	if err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, errors.New("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --transactional-id <id> or --delegation-token <token>")
	}
	v := &ACLView{}
	for _, r := range order {
		if len(byRes[r]) == 0 {
			return nil, errors.New("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
		}
		v.Adding = append(v.Adding, ResourceACLs{Resource: r.view(), ACLs: byRes[r]})
		for _, b := range entryBuilders(r, byRes[r]) {
			res, err := c.Client.CreateACLs(ctx, b)
			if err != nil {
				return v, fmt.Errorf("create acls: %w", err)
			}
			for _, cr := range res {
				if cr.Err != nil {
					return v, fmt.Errorf("create acls for %s: %w%s", r.view(), cr.Err, withMessage(cr.ErrMessage))
				}
			}
		}
	}
	cur, err := c.describeACLs(ctx, order)
	v.Current = cur
	return v, err
}

func withMessage(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}

// RemoveFilter is one resource filter of --remove and the ACLs to remove
// from it (all of them when ACLs is empty), for the confirmation.
type RemoveFilter struct {
	Resource ACLResource
	ACLs     []ACLEntry
	res      aclRes
}

// Prompt is kafka-acls.sh's question before removing.
func (f RemoveFilter) Prompt() string {
	if len(f.ACLs) == 0 {
		return fmt.Sprintf("Are you sure you want to delete all ACLs for resource filter `%s`? (y/n)", f.Resource)
	}
	return fmt.Sprintf("Are you sure you want to remove ACLs: \n %s \n from resource filter `%s`? (y/n)", tabbed(f.ACLs), f.Resource)
}

// RemoveFilters are the filters --remove works on.
func (o ACLOptions) RemoveFilters() ([]RemoveFilter, error) {
	p, err := o.pattern()
	if err != nil {
		return nil, err
	}
	order, byRes, err := o.aclsByResource(p)
	if err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, errors.New("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --transactional-id <id> or --delegation-token <token>")
	}
	var out []RemoveFilter
	for _, r := range order {
		acls := byRes[r]
		if len(o.AllowPrincipals) == 0 && len(o.DenyPrincipals) == 0 {
			acls = nil
		}
		out = append(out, RemoveFilter{Resource: r.view(), ACLs: acls, res: r})
	}
	return out, nil
}

// RemoveACLs is kafka-acls.sh --remove of the confirmed filters, then
// the current ACLs of their resources.
func (c *Client) RemoveACLs(ctx context.Context, filters []RemoveFilter) (*ACLView, error) {
	var res []aclRes
	for _, f := range filters {
		res = append(res, f.res)
		bs := []*kadm.ACLBuilder{builder(f.res, nil)}
		if len(f.ACLs) > 0 {
			bs = entryBuilders(f.res, f.ACLs)
		}
		for _, b := range bs {
			dr, err := c.Client.DeleteACLs(ctx, b)
			if err != nil {
				return nil, fmt.Errorf("delete acls: %w", err)
			}
			for _, d := range dr {
				if d.Err != nil {
					return nil, fmt.Errorf("delete acls for %s: %w%s", f.Resource, d.Err, withMessage(d.ErrMessage))
				}
			}
		}
	}
	cur, err := c.describeACLs(ctx, res)
	return &ACLView{Current: cur}, err
}

// ListACLs is kafka-acls.sh --list: the ACLs of the options' resource
// filters, or every ACL.
func (c *Client) ListACLs(ctx context.Context, o ACLOptions) (*ACLView, error) {
	p, err := o.pattern()
	if err != nil {
		return nil, err
	}
	res := o.resources(p)
	if len(res) == 0 {
		res = []aclRes{{typ: kmsg.ACLResourceTypeAny, pattern: kmsg.ACLResourcePatternTypeAny}}
	}
	cur, err := c.describeACLs(ctx, res)
	return &ACLView{Current: cur}, err
}

// describeACLs describes the ACLs of resource filters, grouped by
// resource pattern and sorted.
func (c *Client) describeACLs(ctx context.Context, res []aclRes) ([]ResourceACLs, error) {
	by := map[ACLResource][]ACLEntry{}
	for _, r := range res {
		out, err := c.Client.DescribeACLs(ctx, builder(r, nil))
		if err != nil {
			return nil, fmt.Errorf("describe acls: %w", err)
		}
		for _, d := range out {
			if d.Err != nil {
				return nil, fmt.Errorf("describe acls: %w%s", d.Err, withMessage(d.ErrMessage))
			}
			for _, a := range d.Described {
				k := ACLResource{Type: a.Type.String(), Name: a.Name, Pattern: a.Pattern.String()}
				by[k] = append(by[k], ACLEntry{Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(), Permission: a.Permission.String()})
			}
		}
	}
	var out []ResourceACLs
	for k, acls := range by {
		slices.SortFunc(acls, compareACLEntry)
		out = append(out, ResourceACLs{Resource: k, ACLs: slices.Compact(acls)})
	}
	slices.SortFunc(out, func(a, b ResourceACLs) int {
		return cmp.Or(cmp.Compare(a.Resource.Type, b.Resource.Type), cmp.Compare(a.Resource.Pattern, b.Resource.Pattern),
			cmp.Compare(a.Resource.Name, b.Resource.Name))
	})
	return out, nil
}
