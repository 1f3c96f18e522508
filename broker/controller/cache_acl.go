package controller

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/acl"
)

// aclState is the snapshot's ACL part: the set, and how far the cache
// has read each change-notification parent (acl.ChangesPaths).
type aclState struct {
	set    *acl.Set
	seq    [2]int64 // last change node processed, per parent; -1 none
	loaded bool
}

// ACLNotificationExpiry is how long change nodes live: a broker that
// reads one older than this deletes it (Kafka's
// ZkNodeChangeNotificationListener.changeExpirationMs).
const ACLNotificationExpiry = 15 * time.Minute

// ACLs returns every ACL of the cluster, for the authorizer; never nil
// in effect (a nil *acl.Set is empty). It follows the change
// notifications, so a CreateAcls or DeleteAcls on any broker shows here
// within a watch's round trip, as Kafka's AclAuthorizer cache does.
func (s *Snapshot) ACLs() *acl.Set { return s.acl.set }

// readACLs brings s's ACLs up to date: at the first read (or after the
// store session was replaced) every ACL node; afterwards only the nodes
// named by change notifications newer than the last one read. The
// watches on the two change parents are set before reading.
func (c *Cache) readACLs(ctx context.Context, old, s *Snapshot) error {
	reload := c.aclReload.Load()
	full := !old.acl.loaded || reload
	type change struct {
		seq  int64
		name string
	}
	var pending [2][]change
	for i, p := range acl.ChangesPaths {
		names, err := c.watchChildren(ctx, p)
		if err != nil {
			return err
		}
		last := int64(-1)
		for _, n := range names {
			seq, ok := aclChangeSeq(n)
			if !ok {
				continue
			}
			last = max(last, seq)
			if !full && seq > old.acl.seq[i] {
				pending[i] = append(pending[i], change{seq, n})
			}
		}
		if full || len(pending[i]) > 0 {
			s.acl.seq[i] = last
		}
	}
	if full {
		all, skipped, err := metadata.LoadACLs(ctx, c.store)
		if err != nil {
			return err
		}
		for _, p := range skipped {
			c.lg.Warn("skipped acl node", "path", p)
		}
		s.acl.set, s.acl.loaded = (*acl.Set)(nil).With(all), true
		if reload {
			c.aclReload.CompareAndSwap(true, false)
		}
		return nil
	}
	changes := map[acl.Resource][]acl.Entry{}
	for i, p := range acl.ChangesPaths {
		slices.SortFunc(pending[i], func(a, b change) int { return cmp.Compare(a.seq, b.seq) })
		for _, ch := range pending[i] {
			path := metadata.Join(p, ch.name)
			data, st, err := c.store.Get(ctx, path)
			if errors.Is(err, metadata.ErrNoNode) {
				continue // purged meanwhile
			}
			if err != nil {
				return err
			}
			if time.Since(time.UnixMilli(st.Ctime)) > ACLNotificationExpiry {
				if err := c.store.Delete(ctx, path, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNoNode) {
					c.lg.Warn("could not delete expired acl change notification", "path", path, "err", err)
				}
			}
			r, err := acl.ParseChangeNotification(p, data)
			if err != nil {
				c.lg.Warn("skipped acl change notification", "path", path, "err", err)
				continue
			}
			if _, done := changes[r]; done {
				continue
			}
			entries, _, _, err := metadata.ReadACLs(ctx, c.store, r)
			if errors.Is(err, acl.ErrMalformed) {
				c.lg.Warn("skipped acl node", "path", r.Path(), "err", err)
				continue
			}
			if err != nil {
				return err
			}
			changes[r] = entries
		}
	}
	if len(changes) > 0 {
		s.acl.set = old.acl.set.With(changes)
		c.lg.Info("acls changed", "resources", len(changes), "acls", s.acl.set.Len())
	}
	return nil
}

// watchChildren watches a node's children and lists them; a missing
// node is watched for its creation instead and has no children.
func (c *Cache) watchChildren(ctx context.Context, path string) ([]string, error) {
	for {
		err := c.watch(path, metadata.WatchChildren)
		if errors.Is(err, metadata.ErrNoNode) {
			if err := c.watch(path, metadata.WatchExists); err != nil {
				return nil, err
			}
			_, ok, err := c.store.Exists(ctx, path)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, nil
			}
			continue // created meanwhile
		}
		if err != nil {
			return nil, err
		}
		names, _, err := c.store.Children(ctx, path)
		if errors.Is(err, metadata.ErrNoNode) {
			continue
		}
		return names, err
	}
}

// aclChangeSeq is the sequence number of a change node's name.
func aclChangeSeq(name string) (int64, bool) {
	n, ok := strings.CutPrefix(name, acl.ChangePrefix)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	return seq, err == nil && seq >= 0
}
