package acl

import (
	"maps"
	"slices"
	"strings"
)

// Set is every ACL of the cluster, indexed for Authorize: by resource
// type, then literal name (a map) or prefixed name (a map, with the
// distinct prefix lengths, so matching a name costs one lookup per
// length). A Set is immutable: With returns a changed copy sharing the
// untouched parts. The zero value and nil are empty sets.
type Set struct {
	types [User + 1]*typeIndex
	n     int
}

type typeIndex struct {
	literal    map[string][]Entry
	prefixed   map[string][]Entry
	prefixLens []int // ascending
}

func (ti *typeIndex) clone() *typeIndex {
	if ti == nil {
		return &typeIndex{literal: map[string][]Entry{}, prefixed: map[string][]Entry{}}
	}
	return &typeIndex{literal: maps.Clone(ti.literal), prefixed: maps.Clone(ti.prefixed), prefixLens: ti.prefixLens}
}

func (s *Set) index(t ResourceType) *typeIndex {
	if s == nil || t < 0 || int(t) >= len(s.types) {
		return nil
	}
	return s.types[t]
}

// Len is the number of ACLs (entries over all resources).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Entries returns a resource pattern's ACLs, sorted; the slice is
// shared, never modify it.
func (s *Set) Entries(r Resource) []Entry {
	ti := s.index(r.Type)
	if ti == nil {
		return nil
	}
	switch r.Pattern {
	case Literal:
		return ti.literal[r.Name]
	case Prefixed:
		return ti.prefixed[r.Name]
	}
	return nil
}

// With returns the set with the ACLs of each resource in changes
// replaced by the given entries (none removes the resource). Entries
// with a type or pattern an ACL cannot have are ignored.
func (s *Set) With(changes map[Resource][]Entry) *Set {
	n := &Set{}
	if s != nil {
		*n = *s
	}
	cloned := [User + 1]bool{}
	for r, entries := range changes {
		if !r.Type.Known() || !r.Pattern.Specific() {
			continue
		}
		if !cloned[r.Type] {
			n.types[r.Type] = n.types[r.Type].clone()
			cloned[r.Type] = true
		}
		ti := n.types[r.Type]
		m := ti.literal
		if r.Pattern == Prefixed {
			m = ti.prefixed
		}
		n.n -= len(m[r.Name])
		if len(entries) == 0 {
			delete(m, r.Name)
			continue
		}
		e := normalize(slices.Clone(entries))
		m[r.Name] = e
		n.n += len(e)
	}
	for t, ok := range cloned {
		if !ok {
			continue
		}
		ti := n.types[t]
		var lens []int
		for name := range ti.prefixed {
			lens = append(lens, len(name))
		}
		slices.Sort(lens)
		ti.prefixLens = slices.Compact(lens)
		if len(ti.literal) == 0 && len(ti.prefixed) == 0 {
			n.types[t] = nil
		}
	}
	return n
}

// Resources returns the resource patterns with ACLs, sorted by type,
// pattern type and name.
func (s *Set) Resources() []Resource {
	var out []Resource
	for _, t := range ResourceTypes {
		ti := s.index(t)
		if ti == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(ti.literal)) {
			out = append(out, Resource{Type: t, Name: name, Pattern: Literal})
		}
		for _, name := range slices.Sorted(maps.Keys(ti.prefixed)) {
			out = append(out, Resource{Type: t, Name: name, Pattern: Prefixed})
		}
	}
	return out
}

// Bindings returns the ACLs f matches, sorted by resource then entry
// (Kafka's Authorizer.acls).
func (s *Set) Bindings(f Filter) []Binding {
	var out []Binding
	for _, r := range s.Resources() {
		if !f.MatchesResource(r) {
			continue
		}
		for _, e := range s.Entries(r) {
			if f.MatchesEntry(e) {
				out = append(out, Binding{Resource: r, Entry: e})
			}
		}
	}
	return out
}

// matching calls fn with the ACLs that apply to a resource of type t
// named name (AclAuthorizer.matchingAcls): those of the literal name,
// of the literal wildcard "*", and of every prefixed pattern that is a
// prefix of name. fn returning false stops.
func (s *Set) matching(t ResourceType, name string, fn func([]Entry) bool) {
	ti := s.index(t)
	if ti == nil {
		return
	}
	if e, ok := ti.literal[name]; ok && !fn(e) {
		return
	}
	if name != WildcardResource {
		if e, ok := ti.literal[WildcardResource]; ok && !fn(e) {
			return
		}
	}
	for _, l := range ti.prefixLens {
		if l > len(name) {
			return
		}
		if e, ok := ti.prefixed[name[:l]]; ok && !fn(e) {
			return
		}
	}
}

// hasPrefix is strings.HasPrefix, named for the matching rules.
func hasPrefix(name, prefix string) bool { return strings.HasPrefix(name, prefix) }
