package metadata

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/qk-project/qk/broker/security/acl"
)

// EnsureACLPaths creates the ACL nodes Kafka's authorizer creates when
// it starts (KafkaZkClient.createAclPaths): /kafka-acl and
// /kafka-acl-extended/prefixed with a child per resource type, and the
// two change-notification parents.
func EnsureACLPaths(ctx context.Context, s Store) error {
	for _, p := range acl.Paths() {
		if err := EnsurePath(ctx, s, p); err != nil {
			return err
		}
	}
	return nil
}

// ReadACLs returns a resource pattern's entries and its node's version;
// exists is false (and the entries empty) when there is no node.
func ReadACLs(ctx context.Context, s Store, r acl.Resource) (entries []acl.Entry, version int32, exists bool, err error) {
	data, st, err := s.Get(ctx, r.Path())
	if errors.Is(err, ErrNoNode) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	entries, err = acl.UnmarshalEntries(data)
	if err != nil {
		return nil, 0, false, fmt.Errorf("%s: %w", r.Path(), err)
	}
	return entries, st.Version, true, nil
}

// ErrACLUpdateConflict: the ACLs of a resource kept changing under
// UpdateACLs for all its retries.
var ErrACLUpdateConflict = errors.New("metadata: acl node kept changing")

// aclUpdateRetries is Kafka's AclAuthorizer.maxUpdateRetries.
const aclUpdateRetries = 10

// UpdateACLs replaces a resource pattern's entries with change(current),
// as Kafka's AclAuthorizer.updateResourceAcls: read the node, write it
// back with a conditional set on the version read (create it if
// missing, delete it when no entry is left), and on a conflict read
// again and retry, after 100-150 ms, up to 10 times. When the entries
// changed it then creates the change notification every broker watches.
// It returns the entries before and after.
func UpdateACLs(ctx context.Context, s Store, r acl.Resource, change func([]acl.Entry) []acl.Entry) (before, after []acl.Entry, err error) {
	for try := 0; ; try++ {
		if try > aclUpdateRetries {
			return nil, nil, fmt.Errorf("%w: %s after %d tries", ErrACLUpdateConflict, r.Path(), try)
		}
		if try > 0 {
			t := time.NewTimer(100*time.Millisecond + rand.N(50*time.Millisecond))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, nil, ctx.Err()
			case <-t.C:
			}
		}
		cur, version, exists, err := ReadACLs(ctx, s, r)
		if err != nil {
			return nil, nil, err
		}
		next, err := acl.UnmarshalEntries(acl.MarshalEntries(change(slices.Clone(cur)))) // sorted, unique
		if err != nil {
			return nil, nil, err
		}
		if slices.Equal(cur, next) {
			return cur, next, nil
		}
		switch {
		case len(next) == 0:
			err = s.Delete(ctx, r.Path(), version)
			if errors.Is(err, ErrNoNode) {
				continue
			}
		case !exists:
			_, err = CreateAll(ctx, s, r.Path(), acl.MarshalEntries(next), 0)
			if errors.Is(err, ErrNodeExists) {
				continue
			}
		default:
			_, err = s.Set(ctx, r.Path(), acl.MarshalEntries(next), version)
		}
		if errors.Is(err, ErrBadVersion) || errors.Is(err, ErrNotEmpty) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		path, data := acl.ChangeNotification(r)
		if _, err := CreateAll(ctx, s, path, data, Sequential); err != nil {
			return nil, nil, fmt.Errorf("acl change notification: %w", err)
		}
		return cur, next, nil
	}
}

// LoadACLs reads every resource pattern's entries (Kafka's
// AclAuthorizer.loadAllAcls). A resource-type node of a type qk does
// not know is skipped, as Kafka does, and reported in skipped; so is a
// node whose data does not decode.
func LoadACLs(ctx context.Context, s Store) (all map[acl.Resource][]acl.Entry, skipped []string, err error) {
	all = map[acl.Resource][]acl.Entry{}
	for _, p := range []acl.PatternType{acl.Literal, acl.Prefixed} {
		root := acl.StorePath(p)
		types, _, err := s.Children(ctx, root)
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		slices.Sort(types)
		for _, tn := range types {
			t := acl.ParseResourceType(tn)
			if !t.Known() {
				skipped = append(skipped, Join(root, tn))
				continue
			}
			names, _, err := s.Children(ctx, Join(root, tn))
			if errors.Is(err, ErrNoNode) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			for _, name := range names {
				r := acl.Resource{Type: t, Name: name, Pattern: p}
				entries, _, _, err := ReadACLs(ctx, s, r)
				if errors.Is(err, acl.ErrMalformed) {
					skipped = append(skipped, r.Path())
					continue
				}
				if err != nil {
					return nil, nil, err
				}
				if len(entries) > 0 {
					all[r] = entries
				}
			}
		}
	}
	return all, skipped, nil
}
