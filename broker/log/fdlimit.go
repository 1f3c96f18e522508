package log

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/qk-project/qk/broker/vfs"
)

// DescriptorReserve is how many descriptors a broker keeps free beyond
// its segments: client and inter-broker connections, the metadata store,
// checkpoint and snapshot files being written, index files opened for a
// write-out. Kafka's documentation sizes a broker's descriptors as
// partitions × segments plus connections, and tells operators to raise
// `ulimit -n` well past that (100,000 is common).
const DescriptorReserve = 1024

// DirUsage is what the log dirs hold, counted before they are loaded.
type DirUsage struct {
	Partitions int
	// Segments is the number of .log files of live partitions: each costs
	// one open descriptor while the broker runs (its indexes keep none).
	Segments int
}

// CountSegments counts the partitions and segments in the log dirs
// without opening any file, so that a broker can compare what loading
// them needs with its descriptor limit before it starts, and say so in
// one line instead of failing thousands of opens. Directories that
// loading skips (*-delete, *-future, *-stray, non-partitions) are not
// counted; a missing log dir counts as empty.
func CountSegments(fsys vfs.FS, dirs []string) (DirUsage, error) {
	var u DirUsage
	for _, dir := range dirs {
		entries, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return u, fmt.Errorf("log dir %s: %w", dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || strings.HasSuffix(name, "-delete") || strings.HasSuffix(name, "-future") || strings.HasSuffix(name, "-stray") {
				continue
			}
			if _, _, ok := ParseTopicPartition(name); !ok {
				continue
			}
			files, err := fsys.ReadDir(dir + "/" + name)
			if err != nil {
				return u, fmt.Errorf("log dir %s: %w", dir, err)
			}
			u.Partitions++
			segs := 0
			for _, f := range files {
				if _, suffix, ok := ParseFileName(f.Name()); ok && suffix == LogSuffix && !f.IsDir() {
					segs++
				}
			}
			// A partition without a segment gets an empty one at load.
			u.Segments += max(segs, 1)
		}
	}
	return u, nil
}

// ErrTooFewDescriptors says the descriptor limit cannot hold the logs.
var ErrTooFewDescriptors = errors.New("log: too few file descriptors")

// CheckDescriptors compares the segments to be loaded (plus
// DescriptorReserve) with limit, the process's RLIMIT_NOFILE, and returns
// an error that names the numbers and what to set when they do not fit.
func CheckDescriptors(u DirUsage, limit uint64) error {
	need := uint64(u.Segments) + DescriptorReserve
	if need <= limit {
		return nil
	}
	return fmt.Errorf("%w: the log dirs hold %d segments in %d partitions, each kept open (one descriptor per segment), plus %d for connections and files: %d, but the open-files limit (RLIMIT_NOFILE) is %d; raise it to at least %d (ulimit -n %d, or LimitNOFILE=%d in the systemd unit)",
		ErrTooFewDescriptors, u.Segments, u.Partitions, DescriptorReserve, need, limit, need, roundLimit(need), roundLimit(need))
}

// roundLimit rounds a descriptor count up to a number an operator would
// write: the next multiple of 10,000 (Kafka deployments use 100,000).
func roundLimit(n uint64) uint64 {
	const step = 10_000
	return (n + step - 1) / step * step
}
