//go:build linux

package broker

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/vfs"
)

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard limit, as Kafka's
// documentation tells operators to do with `ulimit -n` (Go does this too
// at start-up, since 1.19; doing it here keeps it true for a broker
// embedded in a process that lowered it), and returns the limit in force.
func raiseNoFile() (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("broker: getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	return lim.Cur, nil
}

// noFileLimit is the soft RLIMIT_NOFILE in force.
func noFileLimit() (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// openDescriptors counts the process's open descriptors.
func openDescriptors() (int, error) {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	return len(names) - 1, nil // less the one reading the directory
}

// canHost says whether n more partitions (one segment, so one descriptor
// each) fit under the descriptor limit with log.DescriptorReserve to
// spare. It is asked before a topic or partitions are created, so that a
// request that would exhaust the descriptors is refused with the numbers
// and what to set, instead of leaving partitions in the metadata whose
// logs fail to open.
func (s *Server) canHost(n int) error {
	limit, err := noFileLimit() // raised to the hard limit at start-up

	if err != nil {
		return nil // cannot tell: let the creation try
	}
	open, err := openDescriptors()
	if err != nil {
		return nil
	}
	need := uint64(open) + uint64(n) + log.DescriptorReserve
	if need <= limit {
		return nil
	}
	return fmt.Errorf("%w: %d new partitions need one open file each; %d are open and %d are kept for connections and files, which makes %d, but the open-files limit (RLIMIT_NOFILE) is %d: raise it (ulimit -n, LimitNOFILE= in the systemd unit) and restart the broker, or create fewer partitions",
		log.ErrTooFewDescriptors, n, open, log.DescriptorReserve, need, limit)
}

// checkDescriptors compares what loading the log dirs needs with the
// descriptor limit, before anything is opened.
func (s *Server) checkDescriptors() error {
	limit, err := raiseNoFile()
	if err != nil {
		return err
	}
	u, err := log.CountSegments(vfs.OS, s.static.LogDirs)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if err := log.CheckDescriptors(u, limit); err != nil {
		return fmt.Errorf("broker: cannot load the logs: %w", err)
	}
	s.lg.Info("descriptor limit", "limit", limit, "partitions", u.Partitions, "segments", u.Segments)
	return nil
}
