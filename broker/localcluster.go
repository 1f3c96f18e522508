//go:build linux

package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/metadata/embedded"
	"github.com/qk-project/qk/broker/vfs"
)

// ErrLocalClusterDir means a directory holds the data of the other mode:
// a local cluster's parent dir used as a single broker's log dir, or the
// reverse. Either way one would misread the other's files (broker-0 looks
// like partition 0 of a topic "broker"; a single node's partitions would
// sit beside the cluster's brokers) and share its metadata store.
var ErrLocalClusterDir = errors.New("broker: directory belongs to the other broker mode")

// LocalCluster is the brokers of `qk broker start --local-cluster N`: N
// brokers in one process, each with its own listeners and log dirs, all
// on one durable embedded metadata store, as brokertest.StartCluster runs
// them on an in-memory one. Replication, the controller and controlled
// shutdown are those of a real cluster; only the process is shared.
type LocalCluster struct {
	// Servers are the running brokers, broker i at index i.
	Servers []*Server

	store *embedded.Store
	locks []*os.File // the .lock of every configured (parent) log dir
}

// LocalClusterMetadataDir is where a local cluster keeps its metadata
// store: <log.dirs[0]>/__qk_metadata, the path a single-node broker uses,
// so an operator finds it in the same place.
func LocalClusterMetadataDir(lc *config.LocalCluster) string {
	return filepath.Join(lc.Dirs[0], MetadataDir)
}

// StartLocalCluster locks the configured log dirs, opens the metadata
// store in the first and starts the brokers one after the other, each
// Start returning once that broker is ready, so broker 0 (on a fresh or
// restarted cluster alike) is the first controller. If a broker fails to
// start, the ones already running are shut down cleanly and the error
// names the broker. opts apply to every broker; WithMetadataStore is
// set here.
func StartLocalCluster(lc *config.LocalCluster, opts ...Option) (_ *LocalCluster, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.lg == nil {
		o.lg = slog.New(slog.DiscardHandler)
	}
	if len(lc.Dirs) == 0 || len(lc.Brokers) == 0 {
		return nil, errors.New("broker: local cluster without log dirs or brokers")
	}
	for _, d := range lc.Dirs {
		if err := vfs.MkdirAllSync(vfs.OS, d, 0o755); err != nil {
			return nil, fmt.Errorf("broker: log dir %s: %w", d, err)
		}
	}
	// The parent dirs are locked as a single broker locks its log dirs:
	// a second local cluster, or a single-node broker, on the same dirs
	// would open the same metadata store.
	locks, err := lockDirs(lc.Dirs)
	if err != nil {
		return nil, err
	}
	c := &LocalCluster{locks: locks}
	defer func() {
		if err != nil { // c, not the nil returned, holds what to undo
			_ = c.Close(context.Background())
		}
	}()
	for _, d := range lc.Dirs {
		mp := filepath.Join(d, checkpoint.MetaPropertiesFile)
		if _, err := os.Stat(mp); err == nil {
			return nil, fmt.Errorf("%w: %s is a single-node broker's log dir (it has %s); give --local-cluster another log.dirs",
				ErrLocalClusterDir, d, checkpoint.MetaPropertiesFile)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("broker: %w", err)
		}
	}
	dir := LocalClusterMetadataDir(lc)
	c.store, err = embedded.Open(vfs.OS, dir, embedded.WithLogger(o.lg))
	if err != nil {
		return nil, fmt.Errorf("broker: open metadata store %s: %w", dir, err)
	}
	for i, cfg := range lc.Brokers {
		sess, err := c.store.NewSession()
		if err != nil {
			return nil, fmt.Errorf("broker: metadata session for broker %d: %w", i, err)
		}
		s, err := New(cfg, append(slices.Clone(opts), WithMetadataStore(sess))...)
		if err != nil {
			sess.Close()
			return nil, fmt.Errorf("broker %d of the local cluster: %w", i, err)
		}
		if err := s.Start(); err != nil {
			// Start shut it down already.
			return nil, fmt.Errorf("broker %d of the local cluster: %w", i, err)
		}
		c.Servers = append(c.Servers, s)
	}
	return c, nil
}

// Close shuts the brokers down cleanly one after the other, each with a
// controlled shutdown while the others still run, so that its leaderships
// move to brokers that stay up; the controller goes last, so the
// controller role does not move at every step and the others' controlled
// shutdowns are answered by a controller that is not itself leaving.
// The last broker skips its controlled shutdown: with no broker left to
// take its leaderships it would only retry controlled.shutdown.max.retries
// times, controlled.shutdown.retry.backoff.ms apart (15 s by default),
// then stop anyway. Then the metadata store is closed (written to a snapshot) and the dirs
// unlocked. ctx bounds the whole shutdown; past it, each broker cuts its
// connections but still closes its logs cleanly.
func (c *LocalCluster) Close(ctx context.Context) error {
	var errs []error
	order := c.shutdownOrder()
	for i, s := range order {
		if i == len(order)-1 && len(order) > 1 {
			s.lastOfLocalCluster.Store(true)
		}
		if err := s.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", s.Config().BrokerID, err))
		}
	}
	c.Servers = nil
	if c.store != nil {
		if err := c.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("broker: close metadata store: %w", err))
		}
		c.store = nil
	}
	unlockDirs(c.locks)
	c.locks = nil
	return errors.Join(errs...)
}

// shutdownOrder is the servers by id with the controller, as the first
// broker's metadata names it, moved to the end.
func (c *LocalCluster) shutdownOrder() []*Server {
	order := slices.Clone(c.Servers)
	if len(order) == 0 || order[0].Cache() == nil {
		return order
	}
	ctrl := order[0].Cache().Snapshot().ControllerID
	i := slices.IndexFunc(order, func(s *Server) bool { return s.Config().BrokerID == ctrl })
	if i >= 0 {
		s := order[i]
		order = append(slices.Delete(order, i, i+1), s)
	}
	return order
}

// CheckNotLocalCluster refuses to run a single broker on log dirs that
// hold a local cluster (a <dir>/broker-0/meta.properties): the broker
// would open the cluster's metadata store and take broker-0 for a
// partition directory.
func CheckNotLocalCluster(logDirs []string) error {
	for _, d := range logDirs {
		mp := filepath.Join(d, config.BrokerDir(0), checkpoint.MetaPropertiesFile)
		if _, err := os.Stat(mp); err == nil {
			return fmt.Errorf("%w: %s holds a local cluster (%s): start it with --local-cluster N, or give the single broker another log.dirs",
				ErrLocalClusterDir, d, mp)
		}
	}
	return nil
}
