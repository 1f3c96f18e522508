package broker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/qk-project/qk/broker/group"
	"github.com/qk-project/qk/broker/httpapi"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/txncoord"
)

// The broker's side of a log directory failure (KIP-112). The log Manager
// takes the directory offline and calls onLogDirFailure; the dir
// watcher's loop then, as Kafka's ReplicaManager.handleLogDirFailure:
//  1. stops serving the directory's partitions: they are offline here and
//     answer KAFKA_STORAGE_ERROR;
//  2. resigns the group and transaction coordinators of the
//     __consumer_offsets and __transaction_state partitions among them;
//  3. tells the controller with a /log_dir_event_notification/
//     log_dir_event_<seq> node, Kafka's JSON; the controller then sends
//     this broker LeaderAndIsr for its partitions, learns from the
//     KAFKA_STORAGE_ERROR answers which replicas are offline and moves
//     their leaderships.
//
// When no directory is left, the broker shuts down (Failed), as Kafka's
// does. A second loop watches how full each directory is: a warning
// before the disk fills (qk.log.dir.usage.warn.percent).

// dirUsageInterval is how often the usage of the log dirs is measured.
const dirUsageInterval = 10 * time.Second

// dirWatcher holds the log dir failures to handle and the usage figures.
type dirWatcher struct {
	s *Server

	mu      sync.Mutex
	queue   []log.LogDirFailure
	usage   map[string]float64 // used percent of each online dir, as last measured
	warned  map[string]bool    // dirs above the usage threshold
	started bool

	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup

	// failed is closed when every log dir is offline; failure says why.
	failed   chan struct{}
	failOnce sync.Once
	failure  error
}

func newDirWatcher(s *Server) *dirWatcher {
	return &dirWatcher{s: s, usage: map[string]float64{}, warned: map[string]bool{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), failed: make(chan struct{})}
}

// onLogDirFailure is the log Manager's OnLogDirFailure: the failure is
// queued for the loop, which starts once the broker is registered (a
// failure during start-up is handled then).
func (w *dirWatcher) onLogDirFailure(f log.LogDirFailure) {
	w.mu.Lock()
	w.queue = append(w.queue, f)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// start runs the loops; the broker is registered and its parts are built.
func (w *dirWatcher) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return
	}
	w.started = true
	w.wg.Go(w.failureLoop)
	w.wg.Go(w.usageLoop)
}

// close stops the loops and waits for them.
func (w *dirWatcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *dirWatcher) failureLoop() {
	for {
		w.mu.Lock()
		queue := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, f := range queue {
			w.handle(f)
		}
		select {
		case <-w.stop:
			return
		case <-w.wake:
		}
	}
}

// handle takes one offline dir's partitions out of service and tells the
// controller, or shuts the broker down when no dir is left.
func (w *dirWatcher) handle(f log.LogDirFailure) {
	s := w.s
	cause := fmt.Errorf("%w: %s: %v", log.ErrLogDirOffline, f.Dir, f.Err)
	s.replicas.OfflineLogDir(f.Partitions, cause)
	for _, tp := range f.Partitions {
		switch {
		case tp.Topic == group.Topic && s.groups != nil:
			s.groups.OnResign(tp.Partition)
		case tp.Topic == txncoord.Topic && s.txn != nil:
			s.txn.OnResign(tp.Partition)
		}
	}
	w.mu.Lock()
	delete(w.usage, f.Dir)
	delete(w.warned, f.Dir)
	w.mu.Unlock()
	if f.AllOffline {
		// Kafka halts here ("Shutdown broker because all log dirs in …
		// have failed"); qk shuts down: a controlled shutdown moves the
		// leaderships at once instead of at the session's expiry.
		s.lg.Error("every log directory is offline: the broker shuts down", "dirs", fmt.Sprint(s.static.LogDirs))
		w.failOnce.Do(func() {
			w.failure = fmt.Errorf("broker: every log directory is offline (last: %s: %w)", f.Dir, f.Err)
			close(w.failed)
		})
		return
	}
	w.notifyController(f.Dir)
}

// notifyController writes the log dir event node, retrying (ZooKeeper may
// be away) until it is written or the broker stops.
func (w *dirWatcher) notifyController(dir string) {
	s := w.s
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		node, err := metadata.CreateLogDirEvent(ctx, s.store, s.static.BrokerID)
		cancel()
		if err == nil {
			s.lg.Info("log dir failure notified to the controller", "dir", dir, "node", node)
			return
		}
		s.lg.Warn("log dir failure notification not written; retrying", "dir", dir, "err", err)
		select {
		case <-w.stop:
			return
		case <-time.After(backoff):
		}
	}
}

// usageLoop measures how full each online log dir is and warns, once per
// crossing, when one passes qk.log.dir.usage.warn.percent.
func (w *dirWatcher) usageLoop() {
	t := time.NewTicker(dirUsageInterval)
	defer t.Stop()
	for {
		w.measureUsage()
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

func (w *dirWatcher) measureUsage() {
	s := w.s
	threshold := float64(s.cfg.Load().LogDirUsageWarnPercent)
	for _, dir := range s.logs.OnlineDirs() {
		used, err := usedPercent(dir)
		if err != nil {
			continue
		}
		w.mu.Lock()
		w.usage[dir] = used
		was := w.warned[dir]
		now := threshold > 0 && used >= threshold
		w.warned[dir] = now
		w.mu.Unlock()
		switch {
		case now && !was:
			s.lg.Warn("log directory is filling up: when it is full it goes offline and its partitions with it",
				"dir", dir, "used_percent", fmt.Sprintf("%.1f", used), "qk.log.dir.usage.warn.percent", threshold)
		case was && !now:
			s.lg.Info("log directory usage back below the warning threshold", "dir", dir,
				"used_percent", fmt.Sprintf("%.1f", used), "qk.log.dir.usage.warn.percent", threshold)
		}
	}
}

// usedPercent is how full dir's file system is, as df computes Use%: used
// blocks over the blocks an unprivileged user can have (used + available).
func usedPercent(dir string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	used := float64(st.Blocks - st.Bfree)
	total := used + float64(st.Bavail)
	if total <= 0 {
		return 0, errors.New("empty file system")
	}
	return 100 * used / total, nil
}

// statuses is every configured log dir with its state, for the metrics.
func (w *dirWatcher) statuses() []httpapi.LogDirStatus {
	dirs := w.s.logs.LogDirs()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]httpapi.LogDirStatus, len(dirs))
	for i, d := range dirs {
		used, known := w.usage[d.Dir]
		out[i] = httpapi.LogDirStatus{Dir: d.Dir, Offline: d.Err != nil, UsedPercent: used, UsageKnown: known && d.Err == nil,
			Warning: w.warned[d.Dir] && d.Err == nil}
	}
	return out
}

// Failed is closed when the broker can serve nothing more because every
// log dir is offline; the process should Close the broker and exit
// non-zero (qk broker start does).
func (s *Server) Failed() <-chan struct{} { return s.dirs.failed }

// Failure is why Failed closed (nil before).
func (s *Server) Failure() error {
	select {
	case <-s.dirs.failed:
		return s.dirs.failure
	default:
		return nil
	}
}

// LogDirError is the error that took a log dir offline, nil while it is
// online or before the logs are open.
func (s *Server) LogDirError(dir string) error {
	if s.logs == nil {
		return nil
	}
	for _, d := range s.logs.LogDirs() {
		if d.Dir == path.Clean(dir) {
			return d.Err
		}
	}
	return nil
}
