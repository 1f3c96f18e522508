package log

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/vfs"
)

// TopicPartition names a partition.
type TopicPartition = checkpoint.TopicPartition

// ErrLogDirs means the Manager was given no usable log directory.
var ErrLogDirs = errors.New("log: no log directories")

// ErrBadTopic means a topic name cannot name a partition directory.
var ErrBadTopic = errors.New("log: invalid topic name")

// ManagerConfig wires a Manager. Intervals are in milliseconds with
// Kafka's broker property names; 0 takes Kafka's default, a negative value
// (or math.MaxInt64) disables the loop.
type ManagerConfig struct {
	LogDirs []string
	FS      vfs.FS       // nil: vfs.OS
	Logger  *slog.Logger // nil: discard
	Clock   func() time.Time

	// DefaultConfig is the topic config of every log unless TopicConfig
	// returns an override for its topic.
	DefaultConfig Config
	TopicConfig   func(topic string) (Config, bool)

	NumRecoveryThreadsPerDataDir int // num.recovery.threads.per.data.dir (1)

	RetentionCheckIntervalMs        int64 // log.retention.check.interval.ms (300000)
	FlushSchedulerIntervalMs        int64 // log.flush.scheduler.interval.ms (MaxInt64: off)
	FlushOffsetCheckpointIntervalMs int64 // log.flush.offset.checkpoint.interval.ms (60000)
	FlushStartOffsetCheckpointMs    int64 // log.flush.start.offset.checkpoint.interval.ms (60000)
	HighWatermarkCheckpointMs       int64 // replica.high.watermark.checkpoint.interval.ms (5000)

	// BrokerEpoch is written into the clean-shutdown marker (nil: none);
	// it is asked at shutdown, since a broker registers after its logs
	// are loaded.
	BrokerEpoch func() int64

	// Log cleaner (cleanermanager.go). CleanerEnable is
	// log.cleaner.enable; false (the zero value) runs no background
	// cleaner, but CleanNow still works.
	CleanerEnable           bool
	CleanerBackoffMs        int64 // log.cleaner.backoff.ms (15000)
	CleanerDedupeBufferSize int64 // log.cleaner.dedupe.buffer.size (134217728), for the one cleaner thread

	// OnLogDirFailure is called, from the failure loop and without locks
	// held, after a log directory went offline (logdir.go).
	OnLogDirFailure func(LogDirFailure)
}

// interval turns a millisecond setting into a loop period; 0 means off.
func interval(v, def int64) time.Duration {
	if v == 0 {
		v = def
	}
	if v <= 0 || v > int64(math.MaxInt64/time.Millisecond) {
		return 0
	}
	return time.Duration(v) * time.Millisecond
}

// Manager owns every partition log of the broker's log directories: it
// opens them at start-up (recovering after an unclean shutdown), creates
// and deletes them, runs retention, scheduled flushes and checkpoints in
// the background, and shuts everything down cleanly.
type Manager struct {
	cfg  ManagerConfig
	fsys vfs.FS
	lg   *slog.Logger
	now  func() time.Time

	mu     sync.RWMutex
	logs   map[TopicPartition]*Log
	dirOf  map[TopicPartition]string // the log dir holding each partition
	perDir map[string]int            // partitions per log dir (dirOf counted)
	// offline are the log dirs taken offline by an I/O error, with it.
	offline map[string]error
	// futures are the future logs of replicas moving between log dirs
	// (future.go), not in logs.
	futures map[TopicPartition]futureLog
	// preferred are the log dirs AlterReplicaLogDirs asked for replicas
	// not created yet: GetOrCreateLog creates them there.
	preferred map[TopicPartition]string
	// creating are the logs CreateLog is opening outside mu; a second
	// CreateLog of the same partition waits for the channel to close.
	creating map[TopicPartition]chan struct{}
	// creations counts CreateLog calls opening a log; Close waits for
	// them, so none writes to a log dir after its clean-shutdown marker.
	creations sync.WaitGroup
	closed    bool

	// lastWritten remembers each checkpoint file's last content so that
	// unchanged checkpoints are not rewritten.
	ckMu        sync.Mutex
	lastWritten map[string]map[TopicPartition]int64

	// The failure channel (logdir.go): failing holds every dir ever
	// reported, with its first error; failQueue those the failure loop
	// has yet to take offline. failMu is a leaf lock.
	failMu    sync.Mutex
	failing   map[string]error
	failQueue []string
	failWake  chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup
	// deleting counts DeleteLog's background removals; Close waits for
	// them (they finish at once when stop closes).
	deleting sync.WaitGroup
}

// OpenManager opens every partition directory <topic>-<partition> of every
// log dir, NumRecoveryThreadsPerDataDir at a time per dir, using the
// recovery-point, log-start-offset and replication-offset checkpoints and
// the clean-shutdown marker (removed once the dir is loaded), then starts
// the background loops. Directories named *-delete (a deletion cut short)
// are removed; *-future, *-stray and anything that is not a partition
// directory are left alone.
func OpenManager(cfg ManagerConfig) (*Manager, error) {
	if len(cfg.LogDirs) == 0 {
		return nil, ErrLogDirs
	}
	m := &Manager{
		cfg:         cfg,
		fsys:        cfg.FS,
		lg:          cfg.Logger,
		now:         cfg.Clock,
		logs:        map[TopicPartition]*Log{},
		dirOf:       map[TopicPartition]string{},
		perDir:      map[string]int{},
		offline:     map[string]error{},
		futures:     map[TopicPartition]futureLog{},
		preferred:   map[TopicPartition]string{},
		failing:     map[string]error{},
		failWake:    make(chan struct{}, 1),
		creating:    map[TopicPartition]chan struct{}{},
		lastWritten: map[string]map[TopicPartition]int64{},
		stop:        make(chan struct{}),
	}
	if m.fsys == nil {
		m.fsys = vfs.OS
	}
	if m.lg == nil {
		m.lg = slog.New(slog.DiscardHandler)
	}
	m.lg = m.lg.With("component", "log-manager")
	if m.now == nil {
		m.now = time.Now
	}
	if m.cfg.NumRecoveryThreadsPerDataDir <= 0 {
		m.cfg.NumRecoveryThreadsPerDataDir = 1
	}
	if m.cfg.DefaultConfig == (Config{}) {
		m.cfg.DefaultConfig = DefaultConfig()
	}
	if err := m.cfg.DefaultConfig.Validate(); err != nil {
		return nil, err
	}
	for i, d := range m.cfg.LogDirs {
		m.cfg.LogDirs[i] = filepath.Clean(d)
	}

	errs := make([]error, len(m.cfg.LogDirs))
	var wg sync.WaitGroup
	for i, dir := range m.cfg.LogDirs {
		wg.Go(func() { errs[i] = m.loadDir(dir) })
	}
	wg.Wait()
	// A dir that failed with an I/O error goes offline and the others
	// serve (KIP-112), unless none is left.
	var fatal []error
	for i, err := range errs {
		if err != nil {
			if err := m.loadFailed(m.cfg.LogDirs[i], err); err != nil {
				fatal = append(fatal, err)
			}
		}
	}
	if len(fatal) == 0 && len(m.offline) == len(m.cfg.LogDirs) {
		fatal = append(fatal, errAllOffline(errs))
	}
	if err := errors.Join(fatal...); err != nil {
		for _, l := range m.logs {
			l.closeWithoutFlush()
		}
		for _, f := range m.futures {
			f.log.closeWithoutFlush()
		}
		return nil, err
	}
	for tp, f := range m.futures {
		if d, ok := m.dirOf[tp]; !ok || d == f.dir {
			m.lg.Warn("future log without a log to move: removing it", "topic", tp.Topic, "partition", tp.Partition, "dir", f.dir)
			delete(m.futures, tp)
			m.removeFuture(tp, f)
		}
	}
	m.wg.Go(m.failureLoop)
	m.startLoops()
	m.startCleaner()
	return m, nil
}

// loadDir opens the partitions of one log dir.
func (m *Manager) loadDir(dir string) error {
	start := m.now()
	if err := vfs.MkdirAllSync(m.fsys, dir, 0o755); err != nil {
		return fmt.Errorf("log dir %s: %w", dir, err)
	}
	clean, _, err := checkpoint.ReadCleanShutdown(m.fsys, dir)
	if err != nil {
		m.lg.Warn("clean-shutdown marker unreadable", "dir", dir, "err", err)
	}
	rps := m.readCheckpoint(dir, checkpoint.RecoveryPointFile)
	lsos := m.readCheckpoint(dir, checkpoint.LogStartOffsetFile)
	hws := m.readCheckpoint(dir, checkpoint.ReplicationOffsetFile)
	dirty := m.readCheckpoint(dir, checkpoint.CleanerOffsetFile)

	entries, err := m.fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("log dir %s: %w", dir, err)
	}
	var names []string
	var futures []futureName
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, "-delete"):
			m.lg.Info("removing partition directory left by an interrupted deletion", "dir", name)
			if err := m.fsys.RemoveAll(dir + "/" + name); err != nil {
				return fmt.Errorf("log dir %s: remove %s: %w", dir, name, err)
			}
			continue
		case strings.HasSuffix(name, futureDirSuffix):
			if tp, ok := parseFutureDirName(name); ok {
				futures = append(futures, futureName{tp, name})
			}
			continue
		case strings.HasSuffix(name, "-stray"):
			continue
		}
		if _, _, ok := ParseTopicPartition(name); ok {
			names = append(names, name)
		}
	}
	m.lg.Info("loading logs", "dir", dir, "partitions", len(names), "clean_shutdown", clean)

	jobs := make(chan string)
	errs := make([]error, 0)
	var errMu sync.Mutex
	var wg sync.WaitGroup
	recovered := 0
	for range min(m.cfg.NumRecoveryThreadsPerDataDir, max(len(names), 1)) {
		wg.Go(func() {
			for name := range jobs {
				topic, partition, _ := ParseTopicPartition(name)
				tp := TopicPartition{Topic: topic, Partition: partition}
				l, err := Open(dir+"/"+name, m.ConfigFor(topic),
					WithFS(m.fsys), WithLogger(m.lg), WithClock(m.now),
					WithCleanShutdown(clean), WithRecoveryPoint(rps[tp]),
					WithLogStartOffset(lsos[tp]), WithHighWatermark(hws[tp]), cleanerCheckpoint(dirty, tp),
					m.reporter(dir))
				errMu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					if l.RecoveryStats().RecoveredSegments > 0 {
						recovered++
					}
					m.mu.Lock()
					if other, dup := m.dirOf[tp]; dup {
						errs = append(errs, fmt.Errorf("partition %s is in log dirs %s and %s", tp, other, dir))
						l.closeWithoutFlush()
					} else {
						m.put(tp, l, dir)
					}
					m.mu.Unlock()
				}
				errMu.Unlock()
			}
		})
	}
	for _, n := range names {
		jobs <- n
	}
	close(jobs)
	wg.Wait()
	// Future logs: a move between log dirs the last process did not
	// finish. Loaded, so that it resumes (OpenManager drops those whose
	// partition has no current log).
	for _, f := range futures {
		l, err := Open(dir+"/"+f.name, m.ConfigFor(f.tp.Topic), WithFS(m.fsys), WithLogger(m.lg), WithClock(m.now),
			WithCleanShutdown(clean), m.reporter(dir))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.mu.Lock()
		if other, dup := m.futures[f.tp]; dup {
			m.mu.Unlock()
			errs = append(errs, fmt.Errorf("partition %s has future logs in %s and %s", f.tp, other.dir, dir))
			l.closeWithoutFlush()
			continue
		}
		m.futures[f.tp] = futureLog{log: l, dir: dir}
		m.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("log dir %s: %w", dir, err)
	}
	if clean {
		if err := checkpoint.RemoveCleanShutdown(m.fsys, dir); err != nil {
			return fmt.Errorf("log dir %s: %w", dir, err)
		}
	}
	m.lg.Info("loaded logs", "dir", dir, "partitions", len(names), "recovered", recovered,
		"took", m.now().Sub(start).String())
	return nil
}

// readCheckpoint reads an offset checkpoint of dir; a missing or damaged
// file gives no entries (a damaged one is logged: everything is recovered).
func (m *Manager) readCheckpoint(dir, name string) map[TopicPartition]int64 {
	got, err := checkpoint.ReadOffsets(m.fsys, dir+"/"+name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			m.lg.Warn("checkpoint unreadable, ignoring it", "dir", dir, "file", name, "err", err)
		}
		return map[TopicPartition]int64{}
	}
	return got
}

// ConfigFor returns the config a log of topic gets.
func (m *Manager) ConfigFor(topic string) Config {
	if m.cfg.TopicConfig != nil {
		if c, ok := m.cfg.TopicConfig(topic); ok {
			return c
		}
	}
	return m.cfg.DefaultConfig
}

// GetLog returns the log of a partition hosted here.
func (m *Manager) GetLog(topic string, partition int32) (*Log, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	l, ok := m.logs[TopicPartition{Topic: topic, Partition: partition}]
	return l, ok
}

// Logs returns every log, in topic-partition order.
func (m *Manager) Logs() []*Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tps := slices.SortedFunc(maps.Keys(m.logs), compareTP)
	out := make([]*Log, len(tps))
	for i, tp := range tps {
		out[i] = m.logs[tp]
	}
	return out
}

// validTopic applies Kafka's topic name rule: 1..249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func validTopic(t string) bool {
	if t == "" || len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// put adds a log under m.mu.
func (m *Manager) put(tp TopicPartition, l *Log, dir string) {
	m.logs[tp], m.dirOf[tp] = l, dir
	m.perDir[dir]++
}

// CreateLog returns the partition's log, creating it (with cfg) in the
// online log dir that holds the fewest partitions if it does not exist
// yet: GetOrCreateLog of a new partition.
func (m *Manager) CreateLog(topic string, partition int32, cfg Config) (*Log, error) {
	return m.GetOrCreateLog(topic, partition, cfg, true)
}

// GetOrCreateLog returns the partition's log, creating it if it does not
// exist yet. isNew is LeaderAndIsr's flag: the controller says the replica
// is new. A replica that is not new and has no log here while a log dir is
// offline may well have its log in that dir, so it is not created afresh
// elsewhere (that would serve it empty): ErrLogDirOffline, as Kafka's
// getOrCreateLog refuses it. The log is opened without m.mu held, so
// several partitions are created at once (their fsyncs overlap) and
// readers of the partition map do not wait for a creation; a second call
// for a partition being created waits for the first.
func (m *Manager) GetOrCreateLog(topic string, partition int32, cfg Config, isNew bool) (*Log, error) {
	if !validTopic(topic) || partition < 0 {
		return nil, fmt.Errorf("create log %s-%d: %w", topic, partition, ErrBadTopic)
	}
	tp := TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if l, ok := m.logs[tp]; ok {
			m.mu.Unlock()
			return l, nil
		}
		wait, busy := m.creating[tp]
		if !busy {
			break
		}
		m.mu.Unlock()
		<-wait
		m.mu.Lock()
	}
	if len(m.offline) > 0 && !isNew {
		offline := slices.Sorted(maps.Keys(m.offline))
		m.mu.Unlock()
		return nil, fmt.Errorf("create log %s: %w: it may be in %s", tp, ErrLogDirOffline, strings.Join(offline, ","))
	}
	dir, ok := m.pickDir()
	if d, pref := m.preferred[tp]; pref {
		if _, off := m.offline[d]; !off {
			dir = d
		}
	}
	if !ok {
		m.mu.Unlock()
		return nil, fmt.Errorf("create log %s: %w: every log dir is offline", tp, ErrLogDirOffline)
	}
	done := make(chan struct{})
	m.creating[tp] = done
	m.perDir[dir]++ // reserved, so concurrent creations spread over the dirs
	m.creations.Add(1)
	defer m.creations.Done()
	m.mu.Unlock()

	l, err := Open(dir+"/"+tp.String(), cfg, WithFS(m.fsys), WithLogger(m.lg), WithClock(m.now), WithCleanShutdown(true),
		m.reporter(dir))
	if err != nil && isDeviceError(err) {
		// The disk refused it (not a problem of this one path, such as a
		// file in the way): the dir goes offline, as in Kafka.
		m.reportFailure(dir, err)
	}

	m.mu.Lock()
	delete(m.creating, tp)
	close(done)
	m.perDir[dir]--
	closed := m.closed
	_, dirOffline := m.offline[dir]
	existing := m.logs[tp] // put back by a DeleteLog whose rename failed
	if err == nil && !closed && existing == nil && !dirOffline {
		m.put(tp, l, dir)
		delete(m.preferred, tp)
	}
	m.mu.Unlock()
	switch {
	case err != nil:
		return nil, fmt.Errorf("create log %s: %w", tp, err)
	case dirOffline:
		l.closeWithoutFlush()
		return nil, fmt.Errorf("create log %s: %w: %s", tp, ErrLogDirOffline, dir)
	case closed:
		l.closeWithoutFlush()
		return nil, ErrClosed
	case existing != nil:
		l.closeWithoutFlush()
		return existing, nil
	}
	m.lg.Info("created log", "topic", topic, "partition", partition, "dir", dir)
	return l, nil
}

// DeleteLog removes a partition's log. Its directory is renamed
// <topic>-<partition>.<uuid>-delete at once (so the name is free for a new
// partition and a crash cannot leave a half-deleted partition that looks
// live; OpenManager removes such directories) and the log refuses writes
// from then on. Its files stay open for file.delete.delay.ms, so that file
// regions already handed to readers (fetch responses still being sent
// with sendfile) remain valid, as Kafka delays segment deletion; then a
// background goroutine closes and removes them. Close waits for it.
func (m *Manager) DeleteLog(topic string, partition int32) error {
	m.AbortFutureLog(topic, partition)
	tp := TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	l, ok := m.logs[tp]
	dir := m.dirOf[tp]
	if ok {
		m.perDir[dir]--
	}
	delete(m.logs, tp)
	delete(m.dirOf, tp)
	closing := m.closed
	if ok && !closing {
		m.deleting.Add(1)
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	// Nothing may be written to the old path after the rename (a
	// partition created there again would load it).
	snaps := l.stop()
	doomed := dir + "/" + deleteDirName(tp)
	if err := m.fsys.Rename(l.Dir(), doomed); err != nil {
		if !closing {
			m.deleting.Done()
		}
		// The partition is still there: keep serving it (unless it was
		// created again meanwhile, which cannot have opened this dir).
		m.mu.Lock()
		_, again := m.logs[tp]
		if _, creating := m.creating[tp]; creating {
			again = true // a new log is being opened at this path: it wins
		}
		if !again && !m.closed {
			l.resume(snaps)
			m.put(tp, l, dir)
			l = nil
		}
		m.mu.Unlock()
		if l != nil {
			l.closeWithoutFlush()
		}
		return fmt.Errorf("delete log %s: %w", tp, err)
	}
	if err := m.fsys.SyncDir(dir); err != nil {
		m.lg.Warn("delete log: directory sync failed", "topic", topic, "partition", partition, "err", err)
	}
	if closing {
		return m.removeDoomed(l, doomed, dir)
	}
	m.removeLater(l, doomed, dir)
	return nil
}

// removeDoomed closes l, whose directory was renamed doomed (in the log
// dir dir), and removes it.
func (m *Manager) removeDoomed(l *Log, doomed, dir string) error {
	l.closeWithoutFlush()
	if err := m.fsys.RemoveAll(doomed); err != nil {
		return fmt.Errorf("delete log %s-%d: %w", l.Topic(), l.Partition(), err)
	}
	m.lg.Info("deleted log", "topic", l.Topic(), "partition", l.Partition())
	return m.fsys.SyncDir(dir)
}

// removeLater is removeDoomed after l's file.delete.delay.ms (at once when
// the Manager closes meanwhile), on a goroutine Close waits for: the
// caller counted it in m.deleting. Files already handed to readers stay
// valid until then.
func (m *Manager) removeLater(l *Log, doomed, dir string) {
	delay := time.Duration(max(l.Config().FileDeleteDelayMs, 0)) * time.Millisecond
	go func() {
		defer m.deleting.Done()
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-m.stop:
			t.Stop()
		}
		if err := m.removeDoomed(l, doomed, dir); err != nil {
			m.lg.Warn("delete log failed; the directory is removed at the next start", "topic", l.Topic(),
				"partition", l.Partition(), "err", err)
		}
	}()
}

// deleteDirName is the name a deleted partition's directory is renamed to,
// <topic>-<partition>.<uuid, 32 hex>-delete, with the topic cut so that
// the name fits 255 bytes, as Kafka's UnifiedLog.logDeleteDirName does.
func deleteDirName(tp TopicPartition) string {
	var id [16]byte
	rand.Read(id[:])
	suffix := fmt.Sprintf("-%d.%s-delete", tp.Partition, hex.EncodeToString(id[:]))
	return tp.Topic[:min(len(tp.Topic), 255-len(suffix))] + suffix
}

// startLoops starts the background loops whose interval is enabled.
func (m *Manager) startLoops() {
	loop := func(name string, every time.Duration, fn func()) {
		if every <= 0 {
			return
		}
		m.lg.Debug("starting background loop", "loop", name, "every", every.String())
		m.wg.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-m.stop:
					return
				case <-t.C:
					fn()
				}
			}
		})
	}
	loop("retention", interval(m.cfg.RetentionCheckIntervalMs, 300_000), m.RunRetention)
	loop("flush", interval(m.cfg.FlushSchedulerIntervalMs, math.MaxInt64), m.runScheduledFlush)
	loop("recovery-point checkpoint", interval(m.cfg.FlushOffsetCheckpointIntervalMs, 60_000), func() {
		m.logErr("recovery-point checkpoint", m.CheckpointRecoveryPoints())
	})
	loop("log-start-offset checkpoint", interval(m.cfg.FlushStartOffsetCheckpointMs, 60_000), func() {
		m.logErr("log-start-offset checkpoint", m.CheckpointLogStartOffsets())
	})
	loop("high-watermark checkpoint", interval(m.cfg.HighWatermarkCheckpointMs, 5_000), func() {
		m.logErr("high-watermark checkpoint", m.CheckpointHighWatermarks())
	})
}

func (m *Manager) logErr(what string, err error) {
	if err != nil {
		m.lg.Warn(what+" failed", "err", err)
	}
}

// RunRetention runs DeleteOldSegments on every log (the retention loop)
// and removes producers idle for producer.id.expiration.ms (Kafka runs that
// on its own timer; one pass over each log's producers every retention
// check is as cheap and soon enough for a 24-hour expiry).
func (m *Manager) RunRetention() {
	for _, l := range m.Logs() {
		n, err := l.DeleteOldSegments()
		if err != nil && !errors.Is(err, ErrClosed) {
			m.lg.Warn("retention failed", "topic", l.Topic(), "partition", l.Partition(), "err", err)
		}
		if n > 0 {
			m.lg.Debug("retention deleted segments", "topic", l.Topic(), "partition", l.Partition(), "count", n)
		}
		l.RemoveExpiredProducers()
	}
}

func (m *Manager) runScheduledFlush() {
	for _, l := range m.Logs() {
		if err := l.FlushIfDue(); err != nil && !errors.Is(err, ErrClosed) {
			m.lg.Warn("scheduled flush failed", "topic", l.Topic(), "partition", l.Partition(), "err", err)
		}
	}
}

// byDir groups a per-log value by log dir.
func (m *Manager) byDir(value func(l *Log) (int64, bool)) map[string]map[TopicPartition]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := map[string]map[TopicPartition]int64{}
	for _, d := range m.cfg.LogDirs {
		if _, off := m.offline[d]; !off {
			out[d] = map[TopicPartition]int64{}
		}
	}
	for tp, l := range m.logs {
		if v, ok := value(l); ok {
			out[m.dirOf[tp]][tp] = v
		}
	}
	return out
}

func (m *Manager) writeCheckpoints(name string, perDir map[string]map[TopicPartition]int64) error {
	m.ckMu.Lock()
	defer m.ckMu.Unlock()
	var errs []error
	for dir, entries := range perDir {
		key := dir + "/" + name
		if last, ok := m.lastWritten[key]; ok && maps.Equal(last, entries) {
			continue
		}
		if err := checkpoint.WriteOffsets(m.fsys, dir, name, entries); err != nil {
			err = fmt.Errorf("write %s: %w", key, err)
			if isIOError(err) {
				m.reportFailure(dir, err) // Kafka: the checkpoint's dir goes offline
			}
			errs = append(errs, err)
			continue
		}
		m.lastWritten[key] = entries
	}
	return errors.Join(errs...)
}

// CheckpointRecoveryPoints writes recovery-point-offset-checkpoint in
// every log dir, then lets each log delete the producer snapshots that a
// recovery from the checkpointed point no longer needs.
func (m *Manager) CheckpointRecoveryPoints() error {
	rps := map[*Log]int64{}
	err := m.writeCheckpoints(checkpoint.RecoveryPointFile, m.byDir(func(l *Log) (int64, bool) {
		rp := l.RecoveryPoint()
		rps[l] = rp
		return rp, true
	}))
	if err != nil {
		return err
	}
	for l, rp := range rps {
		l.deleteSnapshotsBeforeRecoveryPoint(rp)
	}
	return nil
}

// CheckpointLogStartOffsets writes log-start-offset-checkpoint in every
// log dir, with only the partitions whose log start offset is above their
// first segment's base offset (as Kafka does).
func (m *Manager) CheckpointLogStartOffsets() error {
	return m.writeCheckpoints(checkpoint.LogStartOffsetFile, m.byDir(func(l *Log) (int64, bool) {
		lso := l.LogStartOffset()
		return lso, lso > l.FirstSegmentBaseOffset()
	}))
}

// CheckpointHighWatermarks writes replication-offset-checkpoint in every
// log dir.
func (m *Manager) CheckpointHighWatermarks() error {
	return m.writeCheckpoints(checkpoint.ReplicationOffsetFile, m.byDir(func(l *Log) (int64, bool) {
		return l.HighWatermark(), true
	}))
}

// Close stops the background loops, then flushes and closes every log,
// writes the recovery-point, log-start-offset and high-watermark
// checkpoints and finally the clean-shutdown marker of each log dir whose
// logs all closed cleanly.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	close(m.stop)
	m.wg.Wait()
	m.deleting.Wait()
	m.creations.Wait()

	m.mu.Lock()
	futures := m.futures
	m.futures = map[TopicPartition]futureLog{}
	m.mu.Unlock()
	for tp, f := range futures {
		// A move not finished: its future log resumes at the next start.
		if err := f.log.Close(); err != nil {
			m.lg.Warn("future log not closed cleanly", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
	}
	logs := m.Logs()
	failedDirs := map[string]bool{}
	var errs []error
	var errMu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(m.cfg.NumRecoveryThreadsPerDataDir*len(m.cfg.LogDirs), 1))
	for _, l := range logs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := l.Close(); err != nil {
				// A failed log (ErrFailed) or a failed final flush: the
				// dir gets no clean-shutdown marker, so the next start
				// recovers its logs.
				m.lg.Error("log not closed cleanly, its log dir will be recovered at the next start",
					"topic", l.Topic(), "partition", l.Partition(), "err", err)
				errMu.Lock()
				errs = append(errs, err)
				failedDirs[filepath.Dir(l.Dir())] = true
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, fn := range []func() error{m.CheckpointRecoveryPoints, m.CheckpointLogStartOffsets, m.CheckpointHighWatermarks} {
		if err := fn(); err != nil {
			errs = append(errs, err)
			for _, d := range m.cfg.LogDirs {
				failedDirs[d] = true
			}
		}
	}
	for _, d := range m.OfflineDirs() {
		failedDirs[d] = true
	}
	m.failMu.Lock()
	for d := range m.failing { // reported, perhaps not handled before stop
		failedDirs[d] = true
	}
	m.failMu.Unlock()
	for _, d := range m.cfg.LogDirs {
		if failedDirs[d] {
			m.lg.Warn("not writing clean-shutdown marker", "dir", d)
			continue
		}
		if err := checkpoint.WriteCleanShutdown(m.fsys, d, m.brokerEpoch()); err != nil {
			errs = append(errs, err)
		}
	}
	m.lg.Info("log manager closed", "partitions", len(logs))
	return errors.Join(errs...)
}

func (m *Manager) brokerEpoch() int64 {
	if m.cfg.BrokerEpoch == nil {
		return checkpoint.NoBrokerEpoch
	}
	return m.cfg.BrokerEpoch()
}

// futureName is a future log's directory found at load.
type futureName struct {
	tp   TopicPartition
	name string
}
