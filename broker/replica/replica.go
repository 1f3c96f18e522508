package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/replica/fetcher"
	"github.com/qk-project/qk/broker/replica/quota"
	"github.com/qk-project/qk/broker/vfs"
)

// Sentinel errors; broker/api maps them to Kafka codes.
var (
	// ErrUnknownTopicOrPartition: the partition is not hosted here.
	ErrUnknownTopicOrPartition = errors.New("replica: unknown topic or partition")
	// ErrNotLeaderOrFollower: the partition is hosted here, but not as
	// the leader the request needs.
	ErrNotLeaderOrFollower = errors.New("replica: not leader or follower")
	// ErrNotEnoughReplicas: acks=-1 and the ISR is smaller than
	// min.insync.replicas.
	ErrNotEnoughReplicas = errors.New("replica: not enough in-sync replicas")
	// ErrNotEnoughReplicasAfterAppend: acks=-1, the batch was appended,
	// and the ISR shrank below min.insync.replicas before it committed.
	ErrNotEnoughReplicasAfterAppend = errors.New("replica: not enough in-sync replicas after the append")
	// ErrInconsistentTopicID: the partition directory belongs to another
	// topic id.
	ErrInconsistentTopicID = errors.New("replica: inconsistent topic id")
	// ErrFencedLeaderEpoch: the request's leader epoch is older than the
	// partition's.
	ErrFencedLeaderEpoch = errors.New("replica: fenced leader epoch")
	// ErrUnknownLeaderEpoch: the request's leader epoch is newer than the
	// partition's.
	ErrUnknownLeaderEpoch = errors.New("replica: unknown leader epoch")
	// ErrStaleEpoch: a LeaderAndISR state older than what is applied.
	ErrStaleEpoch = errors.New("replica: stale leader epoch")
	// ErrOffline: the metadata gives this broker the partition, but its
	// log could not be opened or created (KAFKA_STORAGE_ERROR, as for a
	// partition on a failed log dir in Kafka).
	ErrOffline = errors.New("replica: partition offline")
)

// LogEpochAheadError refuses a leadership whose leader epoch the log
// already holds or has passed; it is ErrFencedLeaderEpoch.
type LogEpochAheadError struct {
	Requested, Latest int32
}

func (e *LogEpochAheadError) Error() string {
	return fmt.Sprintf("%v: leader epoch %d is not above the log's latest epoch %d", ErrFencedLeaderEpoch, e.Requested, e.Latest)
}

func (e *LogEpochAheadError) Is(target error) bool { return target == ErrFencedLeaderEpoch }

// createLogWorkers bounds the logs ApplyLeaderAndISR creates at once.
// Creating a log is mostly waiting for fsyncs (the new directory, its
// partition.metadata); concurrent fsyncs share the file system's journal
// commits, so a topic of thousands of partitions is created several times
// faster than one log after the other.
const createLogWorkers = 16

// PartitionState is the controller's decision for one partition, as in
// Kafka's LeaderAndIsr request.
type PartitionState struct {
	Topic       string
	TopicID     [16]byte
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	Replicas    []int32
	// Config is the topic's effective configuration.
	Config config.Topic
	// LeaderAddr is the leader's host:port on the inter-broker listener
	// (LeaderAndIsr's live leaders), where a follower fetches from.
	LeaderAddr string
	// PartitionEpoch is the state node's version (LeaderAndIsr's
	// zkVersion).
	PartitionEpoch int32
	// IsNew is LeaderAndIsr's is_new: the controller made this replica
	// just now, so its log may be created in any online log dir. A
	// replica that is not new has no log here only if it is in an
	// offline dir (or was lost): it is not created afresh then.
	IsNew bool
}

// Config wires a Manager.
type Config struct {
	BrokerID int32
	Logs     *log.Manager
	FS       vfs.FS       // of the log dirs; nil: vfs.OS
	Logger   *slog.Logger // nil: discard
	// ProducerIDExpirationMs is producer.id.expiration.ms (0: Kafka's
	// default), a broker setting every log gets.
	ProducerIDExpirationMs int64
	// OnHighWatermark is called, without locks held, after a partition's
	// high watermark advanced (delayed fetches wait on it).
	OnHighWatermark func(topic string, partition int32)
	// Clock is the wall clock of the followers' fetch times (nil:
	// time.Now).
	Clock func() time.Time
	// Fetchers copies the leaders' records to the partitions this broker
	// follows (nil: following fetches nothing).
	Fetchers *fetcher.Manager
	// AlterISR asks the controller for an ISR change of a partition this
	// broker leads, and calls done with its answer (nil: the ISR never
	// changes here).
	AlterISR func(u ISRUpdate, done func(ISRUpdateResult))
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms (0: 30000).
	ReplicaLagTimeMaxMs int64
	// TransactionMaxTimeoutMs is transaction.max.timeout.ms: a
	// transaction open longer than this in a partition led here is
	// logged at WARN as hanging (hanging.go). 0: not checked.
	TransactionMaxTimeoutMs int64
	// AlterLogDirsQuota throttles the copy of replicas moving between log
	// dirs (replica.alter.log.dirs.io.max.bytes.per.second; nil: none).
	AlterLogDirsQuota *quota.Quota
}

// Manager is the set of partitions this broker hosts.
type Manager struct {
	cfg Config
	lg  *slog.Logger

	mu         sync.RWMutex
	partitions map[log.TopicPartition]*Partition
	// offline are the partitions whose log could not be opened or
	// created, and why; hasOffline says whether there are any, so that
	// Metadata for 10,000 partitions looks nothing up in the common case.
	offline    map[log.TopicPartition]error
	hasOffline atomic.Bool
	// topicStats are the traffic counters of the topics hosted here,
	// shared by their partitions.
	topicStats map[string]*TopicStats
	// isrShrinks and isrExpands count ISR changes the controller accepted.
	isrShrinks, isrExpands atomic.Uint64
	// movers are the partitions whose replica is moving to another log
	// dir (movedir.go), under mu.
	movers map[log.TopicPartition]bool

	stop     chan struct{} // closed by Close: ends the ISR checks
	stopOnce sync.Once
	loops    sync.WaitGroup
}

// New returns an empty Manager.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FS == nil {
		cfg.FS = vfs.OS
	}
	if cfg.OnHighWatermark == nil {
		cfg.OnHighWatermark = func(string, int32) {}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.ReplicaLagTimeMaxMs <= 0 {
		cfg.ReplicaLagTimeMaxMs = 30000
	}
	m := &Manager{
		cfg:        cfg,
		lg:         cfg.Logger.With("component", "replica"),
		partitions: map[log.TopicPartition]*Partition{},
		offline:    map[log.TopicPartition]error{},
		topicStats: map[string]*TopicStats{},
		movers:     map[log.TopicPartition]bool{},
		stop:       make(chan struct{}),
	}
	if cfg.AlterISR != nil {
		m.loops.Go(m.isrLoop)
	}
	if cfg.TransactionMaxTimeoutMs > 0 {
		m.loops.Go(m.hangingTxnLoop)
	}
	return m
}

// Close stops the ISR and hanging-transaction checks.
func (m *Manager) Close() {
	m.stopOnce.Do(func() { close(m.stop) })
	m.loops.Wait()
}

func (m *Manager) now() time.Time { return m.cfg.Clock() }

// BrokerID is the id of this broker.
func (m *Manager) BrokerID() int32 { return m.cfg.BrokerID }

// Partition returns a hosted partition, ErrOffline (wrapped with the
// cause) for one whose log could not be opened, or
// ErrUnknownTopicOrPartition.
func (m *Manager) Partition(topic string, partition int32) (*Partition, error) {
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	m.mu.RLock()
	p, ok := m.partitions[tp]
	cause := m.offline[tp]
	m.mu.RUnlock()
	if !ok {
		if cause != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrOffline, tp, cause)
		}
		return nil, ErrUnknownTopicOrPartition
	}
	return p, nil
}

// Offline reports whether the partition is given to this broker but its
// log could not be opened or created.
func (m *Manager) Offline(topic string, partition int32) bool {
	if !m.hasOffline.Load() {
		return false
	}
	m.mu.RLock()
	_, off := m.offline[log.TopicPartition{Topic: topic, Partition: partition}]
	m.mu.RUnlock()
	return off
}

// OfflineCount is the number of offline partitions.
func (m *Manager) OfflineCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.offline)
}

// Partitions returns every hosted partition, by topic then partition.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	ps := slices.Collect(maps.Values(m.partitions))
	m.mu.RUnlock()
	slices.SortFunc(ps, func(a, b *Partition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.index - b.index)
	})
	return ps
}

// ApplyLeaderAndISR applies the controller's states for partitions whose
// replicas include this broker: it opens (creating if needed) their logs,
// checks their topic ids and makes this broker leader where the state
// says so. Following another leader is not implemented yet: such a
// partition's log is opened but serves no requests. The returned map
// holds the partitions that failed and why; a partition whose log could
// not be opened or created is offline (ErrOffline) until a later call
// opens it. Calls are serialised by the caller (the metadata cache's
// change hook), as Kafka's LeaderAndIsr requests are.
func (m *Manager) ApplyLeaderAndISR(states []PartitionState) map[log.TopicPartition]error {
	errs := map[log.TopicPartition]error{}
	// The logs of new partitions first, several at once, without m.mu:
	// readers of other partitions go on meanwhile.
	m.mu.RLock()
	var create []int
	for i, st := range states {
		if _, ok := m.partitions[log.TopicPartition{Topic: st.Topic, Partition: st.Partition}]; !ok {
			create = append(create, i)
		}
	}
	m.mu.RUnlock()
	logs := make([]*log.Log, len(states))
	failed := make([]error, len(states))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(createLogWorkers, len(create)) {
		wg.Go(func() {
			for i := range jobs {
				st := states[i]
				l, err := m.cfg.Logs.GetOrCreateLog(st.Topic, st.Partition, m.LogConfig(st.Config), st.IsNew)
				if err == nil {
					err = m.checkTopicID(l, st.TopicID)
				}
				logs[i], failed[i] = l, err
			}
		})
	}
	for _, i := range create {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	for i, st := range states {
		tp := log.TopicPartition{Topic: st.Topic, Partition: st.Partition}
		err := failed[i]
		var created *Partition
		m.mu.Lock()
		p, ok := m.partitions[tp]
		if !ok && err == nil {
			p = &Partition{m: m, topic: st.Topic, index: st.Partition, leaderEpoch: -1, leader: -1,
				stats: m.topicStatsLocked(st.Topic)}
			p.log.Store(logs[i])
			p.stats.partitions++
			m.partitions[tp] = p
			created = p
		}
		if err != nil && !errors.Is(err, ErrInconsistentTopicID) {
			m.offline[tp] = err
		} else {
			delete(m.offline, tp)
		}
		m.hasOffline.Store(len(m.offline) > 0)
		m.mu.Unlock()
		if created != nil {
			m.resumeMove(created) // a move between log dirs left by the last process
		}
		if err == nil {
			err = p.makeLeaderOrFollower(st)
		}
		if err == nil && m.cfg.Fetchers != nil {
			ftp := fetcher.TP{Topic: st.Topic, Partition: st.Partition}
			switch {
			case st.Leader == m.cfg.BrokerID || st.Leader < 0 || st.LeaderAddr == "":
				m.cfg.Fetchers.Remove(ftp)
			default:
				m.cfg.Fetchers.Add(fetcher.Leader{ID: st.Leader, Addr: st.LeaderAddr}, ftp, st.TopicID, p)
			}
		}
		if err != nil {
			m.lg.Debug("cannot apply partition state", "topic", st.Topic, "partition", st.Partition,
				"leader_epoch", st.LeaderEpoch, "err", err)
			errs[tp] = err
		}
	}
	return errs
}

// checkTopicID compares the partition.metadata of l with id, writing it
// when it is missing.
func (m *Manager) checkTopicID(l *log.Log, id [16]byte) error {
	if id == ([16]byte{}) {
		return nil
	}
	got, err := checkpoint.ReadPartitionMetadata(m.cfg.FS, l.Dir())
	switch {
	case err == nil && got != id:
		return fmt.Errorf("%w: %s holds topic id %x, the controller's is %x", ErrInconsistentTopicID, l.Dir(), got, id)
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, checkpoint.ErrNoTopicID):
		return l.WritePartitionMetadata(id)
	}
	return err
}

// SetTopicConfig applies a topic's changed configuration to its hosted
// partitions (log settings take effect at once).
func (m *Manager) SetTopicConfig(topic string, cfg config.Topic) error {
	var errs []error
	for _, p := range m.Partitions() {
		if p.topic != topic {
			continue
		}
		p.mu.Lock()
		p.setConfigLocked(cfg)
		p.mu.Unlock()
		if err := p.Log().SetConfig(m.LogConfig(cfg)); err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", topic, p.index, err))
		}
	}
	return errors.Join(errs...)
}

// StopReplica stops hosting a partition; with deleteLog its directory is
// renamed aside and removed (topic deletion), otherwise the log stays on
// disk and is only forgotten until the next ApplyLeaderAndISR.
func (m *Manager) StopReplica(topic string, partition int32, deleteLog bool) error {
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	if m.cfg.Fetchers != nil {
		m.cfg.Fetchers.Remove(fetcher.TP{Topic: topic, Partition: partition})
	}
	m.mu.Lock()
	p, ok := m.partitions[tp]
	if ok {
		if p.stats.partitions--; p.stats.partitions == 0 {
			delete(m.topicStats, topic)
		}
	}
	delete(m.partitions, tp)
	delete(m.offline, tp)
	m.hasOffline.Store(len(m.offline) > 0)
	m.mu.Unlock()
	if ok {
		// No longer led here: the fetches and acks=-1 produces waiting on
		// the partition are answered now (NOT_LEADER_OR_FOLLOWER, or the
		// fetch's other partitions), not at their timeouts, as Kafka's
		// stopReplicas completes them (completeDelayedFetchOrProduceRequests).
		p.mu.Lock()
		p.leader = -1
		p.mu.Unlock()
		m.cfg.OnHighWatermark(topic, partition)
	}
	if !ok && !deleteLog {
		return nil
	}
	m.lg.Info("stopped replica", "topic", topic, "partition", partition, "delete", deleteLog)
	if deleteLog {
		return m.cfg.Logs.DeleteLog(topic, partition)
	}
	return nil
}

// OfflineLogDir stops serving the partitions whose logs were in a log dir
// that went offline (the log Manager has closed them): each is offline,
// ErrOffline with cause, its fetcher removed and its waiting requests
// answered, until a restart or a LeaderAndIsr that places it anew.
func (m *Manager) OfflineLogDir(tps []log.TopicPartition, cause error) {
	var stopped []*Partition
	m.mu.Lock()
	for _, tp := range tps {
		if p, ok := m.partitions[tp]; ok {
			if p.stats.partitions--; p.stats.partitions == 0 {
				delete(m.topicStats, tp.Topic)
			}
			delete(m.partitions, tp)
			stopped = append(stopped, p)
		}
		m.offline[tp] = cause
	}
	m.hasOffline.Store(len(m.offline) > 0)
	m.mu.Unlock()
	for _, p := range stopped {
		if m.cfg.Fetchers != nil {
			m.cfg.Fetchers.Remove(fetcher.TP{Topic: p.topic, Partition: p.index})
		}
		p.mu.Lock()
		p.leader = -1
		p.mu.Unlock()
		if m.cfg.OnHighWatermark != nil {
			m.cfg.OnHighWatermark(p.topic, p.index)
		}
	}
	m.lg.Warn("partitions offline: their log dir went offline", "partitions", len(tps), "err", cause)
}

// LogConfig turns a topic's configuration into its log's settings.
func (m *Manager) LogConfig(t config.Topic) log.Config {
	c := LogConfig(t)
	if m.cfg.ProducerIDExpirationMs > 0 {
		c.ProducerIDExpirationMs = m.cfg.ProducerIDExpirationMs
	}
	return c
}

// LogConfig turns a topic's configuration into its log's settings, with
// Kafka's default producer.id.expiration.ms.
func LogConfig(t config.Topic) log.Config {
	c := log.DefaultConfig()
	c.SegmentBytes = int64(t.SegmentBytes)
	c.SegmentMs = t.SegmentMs
	c.SegmentJitterMs = t.SegmentJitterMs
	c.IndexIntervalBytes = int64(t.IndexIntervalBytes)
	c.MaxIndexSize = int64(t.SegmentIndexBytes)
	c.RetentionMs = t.RetentionMs
	c.RetentionBytes = t.RetentionBytes
	c.FlushMessages = t.FlushMessages
	c.FlushMs = t.FlushMs
	c.FileDeleteDelayMs = t.FileDeleteDelayMs
	c.MaxMessageBytes = int64(t.MaxMessageBytes)
	c.DeleteRetentionMs = t.DeleteRetentionMs
	c.MinCleanableDirtyRatio = t.MinCleanableDirtyRatio
	c.MinCompactionLagMs = t.MinCompactionLagMs
	if t.MaxCompactionLagMs > 0 { // a zero Topic keeps Kafka's default
		c.MaxCompactionLagMs = t.MaxCompactionLagMs
	}
	c.MessageTimestampType = record.CreateTime
	if t.MessageTimestampType == "LogAppendTime" {
		c.MessageTimestampType = record.LogAppendTime
	}
	// An empty cleanup.policy (no deletion, no compaction) has no log
	// setting yet; it is served as delete.
	if p := t.CleanupPolicy.String(); p != "" {
		c.CleanupPolicy = p
	}
	return c
}
