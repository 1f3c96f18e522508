package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qk-project/qk/broker/metadata"
)

// Broker is a live (registered) broker.
type Broker struct {
	ID        int32
	Endpoints []metadata.Endpoint
	Rack      string
	// Epoch is the zxid that created the registration (Kafka's broker
	// epoch).
	Epoch int64
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
}

// Topic is a topic as the store describes it.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions []PartitionInfo // index = partition number
	// Config holds the topic's overrides (/config/topics/<t>).
	Config map[string]string

	mzxid int64 // of the topic node, to skip re-reading unchanged topics
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

	topicIDs        map[[16]byte]string
	configCVersion  int32
	brokerCfgLoaded bool
}

func emptySnapshot() *Snapshot {
	return &Snapshot{ControllerID: -1, Brokers: map[int32]Broker{}, Topics: map[string]*Topic{},
		BrokerConfigs: map[string]map[string]string{}, topicIDs: map[[16]byte]string{}, configCVersion: -1}
}

// TopicByID returns the topic with the given id.
func (s *Snapshot) TopicByID(id [16]byte) (*Topic, bool) {
	name, ok := s.topicIDs[id]
	if !ok {
		return nil, false
	}
	return s.Topics[name], true
}

// BrokerIDs returns the live brokers' ids, ascending.
func (s *Snapshot) BrokerIDs() []int32 { return slices.Sorted(maps.Keys(s.Brokers)) }

// TopicNames returns the topic names, sorted.
func (s *Snapshot) TopicNames() []string { return slices.Sorted(maps.Keys(s.Topics)) }

// CacheConfig wires a Cache.
type CacheConfig struct {
	Store  metadata.Store
	Logger *slog.Logger
	// OnChange is called with the previous and the new snapshot after
	// every change, under the cache's lock, so calls never overlap and
	// come in order. It must not call Sync.
	OnChange func(old, new *Snapshot)
}

// Cache is a broker's view of the cluster metadata, kept current by
// watches on the store.
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

// Sync re-reads the store now and, if anything changed, publishes the
// new snapshot and calls OnChange.
func (c *Cache) Sync(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.snap.Load()
	s, err := c.read(ctx, old)
	if err != nil {
		return err
	}
	c.snap.Store(s)
	c.onChange(old, s)
	c.changedMu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.changedMu.Unlock()
	return nil
}

// read builds a snapshot, reusing old's topics whose node did not change.
// Watches are registered before the nodes are read.
func (c *Cache) read(ctx context.Context, old *Snapshot) (*Snapshot, error) {
	s := emptySnapshot()
	st := c.store

	if data, _, err := st.Get(ctx, metadata.ClusterIDPath); err == nil {
		if s.ClusterID, err = metadata.UnmarshalClusterID(data); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, metadata.ErrNoNode) {
		return nil, err
	}

	if err := c.watch(metadata.ControllerPath, metadata.WatchExists); err != nil {
		return nil, err
	}
	if data, _, err := st.Get(ctx, metadata.ControllerPath); err == nil {
		ci, err := metadata.UnmarshalController(data)
		if err != nil {
			return nil, err
		}
		s.ControllerID = ci.BrokerID
	} else if !errors.Is(err, metadata.ErrNoNode) {
		return nil, err
	}

	if err := c.watch(metadata.BrokerIDsPath, metadata.WatchChildren); err != nil {
		return nil, err
	}
	ids, _, err := st.Children(ctx, metadata.BrokerIDsPath)
	if err != nil {
		return nil, err
	}
	for _, idText := range ids {
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil {
			continue
		}
		data, stat, err := st.Get(ctx, metadata.BrokerIDsPath+"/"+idText)
		if errors.Is(err, metadata.ErrNoNode) {
			continue // gone since listed
		}
		if err != nil {
			return nil, err
		}
		reg, err := metadata.UnmarshalBrokerRegistration(data)
		if err != nil {
			c.lg.Warn("ignoring unreadable broker registration", "broker_id", id, "err", err)
			continue
		}
		s.Brokers[int32(id)] = Broker{ID: int32(id), Endpoints: reg.Endpoints, Rack: reg.Rack, Epoch: stat.Czxid}
	}

	// Config changes: re-read every config when a notification was added.
	if err := c.watch(metadata.ConfigChangesPath, metadata.WatchChildren); err != nil {
		return nil, err
	}
	_, cstat, err := st.Children(ctx, metadata.ConfigChangesPath)
	if err != nil {
		return nil, err
	}
	s.configCVersion = cstat.CVersion
	configsChanged := cstat.CVersion != old.configCVersion

	if err := c.watch(metadata.BrokerTopicsPath, metadata.WatchChildren); err != nil {
		return nil, err
	}
	names, _, err := st.Children(ctx, metadata.BrokerTopicsPath)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		t, err := c.readTopic(ctx, name, old.Topics[name], configsChanged)
		if errors.Is(err, metadata.ErrNoNode) {
			continue // deleted since listed
		}
		if err != nil {
			return nil, fmt.Errorf("read topic %s: %w", name, err)
		}
		s.Topics[name] = t
		if t.ID != ([16]byte{}) {
			s.topicIDs[t.ID] = name
		}
	}

	s.BrokerConfigs, s.brokerCfgLoaded = old.BrokerConfigs, true
	if configsChanged || !old.brokerCfgLoaded {
		s.BrokerConfigs = map[string]map[string]string{}
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
	}
	return s, nil
}

// readTopic reads a topic's assignment and, unless the node is unchanged
// since prev, its partition states; configs are re-read when asked.
func (c *Cache) readTopic(ctx context.Context, name string, prev *Topic, readConfig bool) (*Topic, error) {
	st := c.store
	path := metadata.TopicPath(name)
	if err := c.watch(path, metadata.WatchData); err != nil {
		return nil, err
	}
	data, stat, err := st.Get(ctx, path)
	if err != nil {
		return nil, err
	}
	var t *Topic
	if prev != nil && prev.mzxid == stat.Mzxid && prev.Name == name {
		cp := *prev
		t = &cp
	} else {
		a, err := metadata.UnmarshalTopicAssignment(data)
		if err != nil {
			return nil, err
		}
		t = &Topic{Name: name, ID: a.TopicID, mzxid: stat.Mzxid}
		n := int32(len(a.Partitions))
		t.Partitions = make([]PartitionInfo, 0, n)
		for p := range n {
			replicas, ok := a.Partitions[p]
			if !ok {
				return nil, fmt.Errorf("%w: topic %s has %d partitions but no partition %d", metadata.ErrMalformed, name, n, p)
			}
			pi := PartitionInfo{Partition: p, Replicas: replicas, Leader: metadata.NoLeader, LeaderEpoch: -1}
			sdata, sstat, err := st.Get(ctx, metadata.PartitionStatePath(name, p))
			switch {
			case err == nil:
				ps, err := metadata.UnmarshalPartitionState(sdata)
				if err != nil {
					return nil, err
				}
				pi.Leader, pi.LeaderEpoch, pi.ISR, pi.PartitionEpoch = ps.Leader, ps.LeaderEpoch, ps.ISR, sstat.Version
			case errors.Is(err, metadata.ErrNoNode):
				// No state yet: offline until the controller writes one.
			default:
				return nil, err
			}
			t.Partitions = append(t.Partitions, pi)
		}
		readConfig = true
	}
	if readConfig || prev == nil {
		cfg, err := metadata.ReadEntityConfig(ctx, st, metadata.ConfigTopics, name)
		if err != nil {
			return nil, err
		}
		t.Config = cfg
	}
	return t, nil
}
