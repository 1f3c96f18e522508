package acl

import (
	"fmt"
	"strings"
)

// Authorizer holds the settings of Kafka's AclAuthorizer that are not
// ACLs: super.users and allow.everyone.if.no.acl.found.
type Authorizer struct {
	// SuperUsers are principals ("User:admin") allowed everything.
	SuperUsers map[string]bool
	// AllowEveryoneIfNoACLFound allows any operation on a resource that
	// has no ACL at all (none on its name, on the wildcard or on a
	// matching prefix, whatever their principal).
	AllowEveryoneIfNoACLFound bool
}

// ParseSuperUsers reads super.users: principals separated by ";"
// ("User:admin;User:ops"), each with its type.
func ParseSuperUsers(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for p := range strings.SplitSeq(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return nil, fmt.Errorf("super.users: %q is not principalType:name", p)
		}
		out[p] = true
	}
	return out, nil
}

// Reason says why Authorize decided as it did.
type Reason uint8

const (
	// ReasonSuperUser: allowed, the principal is in super.users.
	ReasonSuperUser Reason = iota + 1
	// ReasonAllowACL: allowed by an ACL, and no ACL denies.
	ReasonAllowACL
	// ReasonNoACLAllowEveryone: allowed, the resource has no ACL and
	// allow.everyone.if.no.acl.found is set.
	ReasonNoACLAllowEveryone
	// ReasonDenyACL: denied by a Deny ACL (which wins over any Allow).
	ReasonDenyACL
	// ReasonNoAllowACL: denied, no ACL allows (the resource may have
	// none at all).
	ReasonNoAllowACL
)

func (r Reason) String() string {
	switch r {
	case ReasonSuperUser:
		return "super user"
	case ReasonAllowACL:
		return "allowed by acl"
	case ReasonNoACLAllowEveryone:
		return "no acl found, allow.everyone.if.no.acl.found"
	case ReasonDenyACL:
		return "denied by acl"
	case ReasonNoAllowACL:
		return "no matching allow acl"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// implied are the operations whose Allow ACLs also allow op
// (AclAuthorizer: Read, Write, Delete and Alter imply Describe;
// AlterConfigs implies DescribeConfigs).
func implied(op Operation) []Operation {
	switch op {
	case Describe:
		return []Operation{Describe, Read, Write, Delete, Alter}
	case DescribeConfigs:
		return []Operation{DescribeConfigs, AlterConfigs}
	}
	return []Operation{op}
}

// Authorize decides whether principal ("User:alice"), connected from
// host (an IP address), may do op on the resource of type t named name,
// as Kafka's AclAuthorizer.authorizeAction: a super user may do
// anything; otherwise the ACLs that apply are those of the literal name,
// of the literal wildcard "*" and of every prefixed pattern that is a
// prefix of name. None at all: allowed only with
// allow.everyone.if.no.acl.found. An entry matches when its principal
// is the principal or User:*, its host the host or *, and its operation
// op or All. A matching Deny wins; else a matching Allow (of op or of an
// operation implying it) allows. s may be nil (no ACLs).
func (a *Authorizer) Authorize(s *Set, principal, host string, op Operation, t ResourceType, name string) (bool, Reason) {
	if a.SuperUsers[principal] {
		return true, ReasonSuperUser
	}
	any, deny, allow := false, false, false
	ops := implied(op)
	s.matching(t, name, func(entries []Entry) bool {
		for _, e := range entries {
			any = true
			if e.Principal != principal && e.Principal != WildcardPrincipal {
				continue
			}
			if e.Host != host && e.Host != WildcardHost {
				continue
			}
			switch e.Permission {
			case Deny:
				if e.Operation == op || e.Operation == All {
					deny = true
					return false
				}
			case Allow:
				if e.Operation == All {
					allow = true
					continue
				}
				for _, o := range ops {
					if e.Operation == o {
						allow = true
					}
				}
			}
		}
		return true
	})
	switch {
	case !any && a.AllowEveryoneIfNoACLFound:
		return true, ReasonNoACLAllowEveryone
	case deny:
		return false, ReasonDenyACL
	case allow:
		return true, ReasonAllowACL
	}
	return false, ReasonNoAllowACL
}
