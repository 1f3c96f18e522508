package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/clientquota"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/scram"
)

// Broker is a live (registered) broker.
type Broker struct {
	ID        int32
	Endpoints []metadata.Endpoint
	Rack      string
}

// Endpoint returns the broker's endpoint on the named listener.
func (b Broker) Endpoint(listener string) (metadata.Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return metadata.Endpoint{}, false
}

// PartitionInfo is one partition's assignment and state.
type PartitionInfo struct {
	Partition   int32
	Replicas    []int32
	Leader      int32 // metadata.NoLeader when offline or without state
	LeaderEpoch int32
	ISR         []int32
	// PartitionEpoch is the data version of the state node (Kafka's
	// zkVersion, partition epoch in KIP-380 terms).
	PartitionEpoch int32
	// OfflineReplicas are the replicas whose broker is down or whose log
	// directory failed there (KIP-112).
	OfflineReplicas []int32
}

// Topic is a topic as the store describes it.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions []PartitionInfo // index = partition number
	// Config holds the topic's overrides (/config/topics/<t>); nil while
	// they could not be read.
	Config map[string]string
}

// Snapshot is an immutable view of the cluster metadata. Never modify
// one: it is shared by every reader.
type Snapshot struct {
	ClusterID    string
	ControllerID int32 // -1 when there is none
	Brokers      map[int32]Broker
	Topics       map[string]*Topic
	// BrokerConfigs are dynamic broker configs by entity: a broker id
	// ("0") or metadata.DefaultEntity for the cluster-wide default.
	BrokerConfigs map[string]map[string]string

	// scram holds the users' SCRAM credentials from /config/users/<user>,
	// by user name (desanitized) and mechanism; read with
	// ScramCredential.
	scram map[string]map[scram.Mechanism]scram.Credential
	// acl holds every ACL (/kafka-acl*); read with ACLs.
	acl aclState
	// clientQuotas are the client quota entities (cache_quota.go).
	clientQuotas clientquota.Quotas

	topicIDs        map[[16]byte]string
	configCVersion  int32
	brokerCfgLoaded bool
	// updated: an UpdateMetadata from the controller was applied.
	updated bool
}

func emptySnapshot() *Snapshot {
	return &Snapshot{ControllerID: -1, Brokers: map[int32]Broker{}, Topics: map[string]*Topic{},
		BrokerConfigs: map[string]map[string]string{}, topicIDs: map[[16]byte]string{}, configCVersion: -1,
		acl: aclState{seq: [2]int64{-1, -1}}}
}

// TopicByID returns the topic with the given id.
func (s *Snapshot) TopicByID(id [16]byte) (*Topic, bool) {
	name, ok := s.topicIDs[id]
	if !ok {
		return nil, false
	}
	return s.Topics[name], true
}

// ScramCredential returns the user's stored credential for a mechanism,
// for the SASL/SCRAM authenticator; it follows /config/changes, so an
// AlterUserScramCredentials on any broker shows here within a watch's
// round trip.
func (s *Snapshot) ScramCredential(user string, m scram.Mechanism) (scram.Credential, bool) {
	c, ok := s.scram[user][m]
	return c, ok
}

// ScramUsers returns the users with at least one SCRAM credential, sorted.
func (s *Snapshot) ScramUsers() []string { return slices.Sorted(maps.Keys(s.scram)) }

// BrokerIDs returns the live brokers' ids, ascending.
func (s *Snapshot) BrokerIDs() []int32 { return slices.Sorted(maps.Keys(s.Brokers)) }

// TopicNames returns the topic names, sorted.
func (s *Snapshot) TopicNames() []string { return slices.Sorted(maps.Keys(s.Topics)) }

// Updated reports whether the controller's UpdateMetadata has reached
// this snapshot: before it, a broker just started may lead partitions
// (LeaderAndIsr) while its topics are not known yet.
func (s *Snapshot) Updated() bool { return s.updated }

// CacheConfig wires a Cache.
type CacheConfig struct {
	Store  metadata.Store
	Logger *slog.Logger
	// OnChange is called with the previous and the new snapshot after
	// every change, under the cache's lock, so calls never overlap and
	// come in order. It must not call Sync.
	OnChange func(old, new *Snapshot)
}

// Cache is a broker's view of the cluster metadata (Kafka's
// MetadataCache). Brokers, topics and partition states come from the
// controller's UpdateMetadata requests (ApplyUpdateMetadata), so that one
// partition's change costs every broker one request and no store reads;
// the cluster id and the configs are read from the store, and kept
// current by a watch on /config/changes, as Kafka's brokers do.
type Cache struct {
	store    metadata.Store
	lg       *slog.Logger
	onChange func(old, new *Snapshot)

	mu   sync.Mutex // serialises Sync and OnChange
	snap atomic.Pointer[Snapshot]

	changedMu sync.Mutex
	changed   chan struct{} // closed at each change

	wmu      sync.Mutex
	watching map[watchKey]bool
	// aclReload: the next Sync reads every ACL node again (the session
	// was replaced, change notifications may have been missed).
	aclReload atomic.Bool

	notify chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type watchKey struct {
	path string
	kind metadata.WatchKind
}

// NewCache returns a cache holding an empty snapshot; Start fills it.
func NewCache(cfg CacheConfig) *Cache {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.OnChange == nil {
		cfg.OnChange = func(_, _ *Snapshot) {}
	}
	c := &Cache{
		store:    cfg.Store,
		lg:       cfg.Logger.With("component", "metadata-cache"),
		onChange: cfg.OnChange,
		changed:  make(chan struct{}),
		watching: map[watchKey]bool{},
		notify:   make(chan struct{}, 1),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.snap.Store(emptySnapshot())
	return c
}

// Start reads the metadata and starts following its changes.
func (c *Cache) Start(ctx context.Context) error {
	if err := c.Sync(ctx); err != nil {
		return err
	}
	c.wg.Go(c.loop)
	return nil
}

// Close stops following changes.
func (c *Cache) Close() {
	c.cancel()
	c.wg.Wait()
}

// Snapshot returns the current view.
func (c *Cache) Snapshot() *Snapshot { return c.snap.Load() }

// WaitFor waits until cond holds for the current snapshot or ctx ends.
func (c *Cache) WaitFor(ctx context.Context, cond func(*Snapshot) bool) error {
	for {
		c.changedMu.Lock()
		ch := c.changed
		c.changedMu.Unlock()
		if cond(c.snap.Load()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Cache) poke() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *Cache) loop() {
	backoff := time.Duration(0)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.store.Done():
			c.lg.Warn("metadata session ended; cache no longer follows changes")
			return
		case <-c.notify:
		}
		if err := c.Sync(c.ctx); err != nil {
			if c.ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), 5*time.Second)
			c.lg.Warn("metadata sync failed; retrying", "err", err, "retry_in", backoff)
			t := time.AfterFunc(backoff, c.poke)
			select {
			case <-c.ctx.Done():
				t.Stop()
				return
			case <-c.notify:
				t.Stop()
				c.poke()
			}
			continue
		}
		backoff = 0
	}
}

// ResetWatches forgets the pending watches, after the store's session was
// replaced: those of the old session have ended (or are about to, with
// EventNotWatching), and the next Sync must set them on the new one.
func (c *Cache) ResetWatches() {
	c.wmu.Lock()
	clear(c.watching)
	c.wmu.Unlock()
	c.aclReload.Store(true)
}

// watch registers a one-shot watch unless one is pending; when it fires,
// the cache syncs.
func (c *Cache) watch(path string, kind metadata.WatchKind) error {
	k := watchKey{path, kind}
	c.wmu.Lock()
	if c.watching[k] {
		c.wmu.Unlock()
		return nil
	}
	c.watching[k] = true
	c.wmu.Unlock()
	ch, err := c.store.Watch(c.ctx, path, kind)
	if err != nil {
		c.wmu.Lock()
		delete(c.watching, k)
		c.wmu.Unlock()
		return err
	}
	c.wg.Go(func() {
		ev, ok := <-ch
		c.wmu.Lock()
		delete(c.watching, k)
		c.wmu.Unlock()
		if ok && ev.Type != metadata.EventNotWatching {
			c.poke()
		}
	})
	return nil
}

// Sync re-reads what the cache takes from the store (the cluster id and,
// when /config/changes moved, the configs) and publishes the snapshot.
func (c *Cache) Sync(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.snap.Load()
	s, err := c.read(ctx, old)
	if err != nil {
		return err
	}
	c.publish(old, s)
	return nil
}

// publish stores s and calls OnChange; c.mu is held.
func (c *Cache) publish(old, s *Snapshot) {
	c.snap.Store(s)
	c.onChange(old, s)
	c.changedMu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.changedMu.Unlock()
}

// clone copies the snapshot's maps (not the topics they point to).
func (s *Snapshot) clone() *Snapshot {
	n := *s
	n.Brokers = maps.Clone(s.Brokers)
	n.Topics = maps.Clone(s.Topics)
	n.topicIDs = maps.Clone(s.topicIDs)
	return &n
}

// read builds a snapshot from old with what the store holds: the cluster
// id, and the configs when a change was announced. The watch is
// registered before the nodes are read.
func (c *Cache) read(ctx context.Context, old *Snapshot) (*Snapshot, error) {
	s := old.clone()
	st := c.store
	if data, _, err := st.Get(ctx, metadata.ClusterIDPath); err == nil {
		if s.ClusterID, err = metadata.UnmarshalClusterID(data); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, metadata.ErrNoNode) {
		return nil, err
	}
	if !old.updated {
		// Until the controller's first UpdateMetadata, the controller id
		// from the store.
		s.ControllerID = -1
		if data, _, err := st.Get(ctx, metadata.ControllerPath); err == nil {
			if ci, err := metadata.UnmarshalController(data); err == nil {
				s.ControllerID = ci.BrokerID
			}
		} else if !errors.Is(err, metadata.ErrNoNode) {
			return nil, err
		}
	}

	if err := c.readACLs(ctx, old, s); err != nil {
		return nil, err
	}
	if err := c.watch(metadata.ConfigChangesPath, metadata.WatchChildren); err != nil {
		return nil, err
	}
	_, cstat, err := st.Children(ctx, metadata.ConfigChangesPath)
	if err != nil {
		return nil, err
	}
	s.configCVersion = cstat.CVersion
	if cstat.CVersion == old.configCVersion && old.brokerCfgLoaded {
		// Only the topic configs that could not be read.
		for name, t := range s.Topics {
			if t.Config != nil {
				continue
			}
			cfg, err := metadata.ReadEntityConfig(ctx, st, metadata.ConfigTopics, name)
			if err != nil {
				return nil, err
			}
			cp := *t
			cp.Config = cfg
			s.Topics[name] = &cp
		}
		return s, nil
	}
	for name, t := range s.Topics {
		cfg, err := metadata.ReadEntityConfig(ctx, st, metadata.ConfigTopics, name)
		if err != nil {
			return nil, err
		}
		if !maps.Equal(cfg, t.Config) {
			cp := *t
			cp.Config = cfg
			s.Topics[name] = &cp
		}
	}
	s.BrokerConfigs, s.brokerCfgLoaded = map[string]map[string]string{}, true
	entities, _, err := st.Children(ctx, "/config/"+metadata.ConfigBrokers)
	if err != nil && !errors.Is(err, metadata.ErrNoNode) {
		return nil, err
	}
	for _, e := range entities {
		cfg, err := metadata.ReadEntityConfig(ctx, st, metadata.ConfigBrokers, e)
		if err != nil {
			return nil, err
		}
		s.BrokerConfigs[e] = cfg
	}
	if s.scram, err = c.readScram(ctx); err != nil {
		return nil, err
	}
	if s.clientQuotas, err = c.readClientQuotas(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// readScram reads every user's SCRAM credentials. A user node whose name
// or credential is not in Kafka's format is skipped with a warning: one
// bad node must not keep the cache from following the others.
func (c *Cache) readScram(ctx context.Context) (map[string]map[scram.Mechanism]scram.Credential, error) {
	out := map[string]map[scram.Mechanism]scram.Credential{}
	users, _, err := c.store.Children(ctx, "/config/"+metadata.ConfigUsers)
	if errors.Is(err, metadata.ErrNoNode) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		cfg, err := metadata.ReadEntityConfig(ctx, c.store, metadata.ConfigUsers, u)
		if err != nil {
			return nil, err
		}
		name, err := scram.Desanitize(u)
		if err != nil {
			c.lg.Warn("skipped user config", "user", u, "err", err)
			continue
		}
		for _, m := range scram.Mechanisms {
			v, ok := cfg[m.String()]
			if !ok {
				continue
			}
			cred, err := scram.Parse(v)
			if err != nil {
				c.lg.Warn("skipped scram credential", "user", name, "mechanism", m.String(), "err", err)
				continue
			}
			if out[name] == nil {
				out[name] = map[scram.Mechanism]scram.Credential{}
			}
			out[name][m] = cred
		}
	}
	return out, nil
}

// ApplyUpdateMetadata applies the controller's UpdateMetadata (any
// version): the live brokers and the controller are replaced, the
// partitions it names are set, and those sent with LeaderDuringDelete
// (-2) go with their topic. The configs of topics new to the cache are
// read from the store.
func (c *Cache) ApplyUpdateMetadata(ctx context.Context, req *kmsg.UpdateMetadataRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.snap.Load()
	s := old.clone()
	s.updated = true
	s.ControllerID = req.ControllerID
	s.Brokers = make(map[int32]Broker, len(req.LiveBrokers))
	for _, lb := range req.LiveBrokers {
		b := Broker{ID: lb.ID}
		if lb.Rack != nil {
			b.Rack = *lb.Rack
		}
		if req.Version == 0 {
			b.Endpoints = []metadata.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: lb.Host, Port: lb.Port}}
		}
		for _, e := range lb.Endpoints {
			name := e.ListenerName
			proto := securityProtocolName(e.SecurityProtocol)
			if name == "" {
				name = proto
			}
			b.Endpoints = append(b.Endpoints, metadata.Endpoint{Listener: name, SecurityProtocol: proto, Host: e.Host, Port: e.Port})
		}
		s.Brokers[lb.ID] = b
	}
	type upd struct {
		topic string
		id    [16]byte
		ps    []kmsg.UpdateMetadataRequestTopicPartition
	}
	var ups []upd
	if req.Version >= 5 {
		for _, t := range req.TopicStates {
			ups = append(ups, upd{t.Topic, t.TopicID, t.PartitionStates})
		}
	} else {
		for _, p := range req.PartitionStates {
			if len(ups) == 0 || ups[len(ups)-1].topic != p.Topic {
				ups = append(ups, upd{topic: p.Topic})
			}
			ups[len(ups)-1].ps = append(ups[len(ups)-1].ps, p)
		}
	}
	var errs []error
	for _, u := range ups {
		prev := s.Topics[u.topic]
		deleting := false
		for _, p := range u.ps {
			deleting = deleting || p.Leader == LeaderDuringDelete
		}
		if deleting {
			if prev != nil {
				delete(s.Topics, u.topic)
				delete(s.topicIDs, prev.ID)
			}
			continue
		}
		var t *Topic
		switch {
		case prev != nil && (u.id == ([16]byte{}) || prev.ID == u.id):
			cp := *prev
			cp.Partitions = slices.Clone(prev.Partitions)
			t = &cp
		default:
			// A new topic, or one re-created with a new id.
			if prev != nil {
				delete(s.topicIDs, prev.ID)
			}
			cfg, err := metadata.ReadEntityConfig(ctx, c.store, metadata.ConfigTopics, u.topic)
			if err != nil {
				// Unknown (nil), not empty: readers go to the store, and
				// the next Sync reads it again.
				errs = append(errs, fmt.Errorf("config of topic %s: %w", u.topic, err))
				cfg = nil
				defer c.poke()
			}
			t = &Topic{Name: u.topic, ID: u.id, Config: cfg}
		}
		for _, p := range u.ps {
			// The slice is indexed by partition number: a number no
			// controller gives (negative, or past MaxPartitions) would
			// index out of range or grow it without bound.
			if p.Partition < 0 || p.Partition >= MaxPartitions {
				errs = append(errs, fmt.Errorf("topic %s: partition %d outside 0..%d, ignored", u.topic, p.Partition, MaxPartitions-1))
				continue
			}
			for int32(len(t.Partitions)) <= p.Partition {
				t.Partitions = append(t.Partitions, PartitionInfo{Partition: int32(len(t.Partitions)), Leader: metadata.NoLeader, LeaderEpoch: -1})
			}
			t.Partitions[p.Partition] = PartitionInfo{Partition: p.Partition, Replicas: p.Replicas, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, ISR: p.ISR, PartitionEpoch: p.ZKVersion, OfflineReplicas: p.OfflineReplicas}
		}
		s.Topics[u.topic] = t
		if t.ID != ([16]byte{}) {
			s.topicIDs[t.ID] = u.topic
		}
	}
	c.publish(old, s)
	return errors.Join(errs...)
}

// LeaderDuringDelete is the leader UpdateMetadata gives the partitions of
// a topic being deleted.
const LeaderDuringDelete = -2

func securityProtocolName(id int16) string {
	switch id {
	case 1:
		return "SSL"
	case 2:
		return "SASL_PLAINTEXT"
	case 3:
		return "SASL_SSL"
	}
	return "PLAINTEXT"
}
