package acl

// Filter selects ACLs, for DescribeAcls and DeleteAcls (Kafka's
// AclBindingFilter): ResourceAny, a nil Name, a nil Principal, a nil
// Host, OpAny and PermissionAny match everything; Pattern PatternAny
// matches both pattern types with the name as written, PatternMatch the
// patterns that apply to a resource of that name.
type Filter struct {
	Type       ResourceType
	Name       *string
	Pattern    PatternType
	Principal  *string
	Host       *string
	Operation  Operation
	Permission Permission
}

// MatchesResource is Kafka's ResourcePatternFilter.matches.
func (f Filter) MatchesResource(r Resource) bool {
	if f.Type != ResourceAny && f.Type != r.Type {
		return false
	}
	if f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != r.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	name := *f.Name
	if f.Pattern == PatternAny || f.Pattern == r.Pattern {
		return name == r.Name
	}
	switch r.Pattern { // PatternMatch
	case Literal:
		return name == r.Name || r.Name == WildcardResource
	case Prefixed:
		return hasPrefix(name, r.Name)
	}
	return false
}

// MatchesEntry is Kafka's AccessControlEntryFilter.matches: exact
// principal and host (no wildcard expansion), operation and permission.
func (f Filter) MatchesEntry(e Entry) bool {
	if f.Principal != nil && *f.Principal != e.Principal {
		return false
	}
	if f.Host != nil && *f.Host != e.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != e.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == e.Permission
}

// Matches tells whether f selects the binding.
func (f Filter) Matches(b Binding) bool {
	return f.MatchesResource(b.Resource) && f.MatchesEntry(b.Entry)
}

// Validate rejects a filter with an unknown element, as Kafka's
// DescribeAclsRequest and DeleteAclsRequest do.
func (f Filter) Validate() error {
	switch {
	case f.Type != ResourceAny && !f.Type.Known():
		return &InvalidError{Msg: "Filter contains an unknown resource type"}
	case f.Pattern != PatternAny && f.Pattern != PatternMatch && !f.Pattern.Specific():
		return &InvalidError{Msg: "Filter contains an unknown pattern type"}
	case f.Operation != OpAny && !f.Operation.Known():
		return &InvalidError{Msg: "Filter contains an unknown operation"}
	case f.Permission != PermissionAny && !f.Permission.Known():
		return &InvalidError{Msg: "Filter contains an unknown permission type"}
	}
	return nil
}

// Resources are the resource patterns f names exactly (Kafka's
// filterToResources for a filter that matches at most one name): with a
// concrete type and a name, the pattern itself, or both patterns for
// PatternAny. The ACLs of these may exist in the store before a cache
// shows them.
func (f Filter) Resources() []Resource {
	if !f.Type.Known() || f.Name == nil {
		return nil
	}
	switch f.Pattern {
	case Literal, Prefixed:
		return []Resource{{Type: f.Type, Name: *f.Name, Pattern: f.Pattern}}
	case PatternAny:
		return []Resource{{Type: f.Type, Name: *f.Name, Pattern: Literal}, {Type: f.Type, Name: *f.Name, Pattern: Prefixed}}
	}
	return nil
}
