//go:build linux

package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockFile is the name of the file every log dir is locked through, as
// Kafka's LogManager locks its dirs: a second broker process on the same
// dir would append to the same segments.
const LockFile = ".lock"

// ErrDirLocked means another process holds a log dir's lock.
var ErrDirLocked = errors.New("broker: log dir is locked by another process")

// lockDirs takes an exclusive, non-blocking flock on <dir>/.lock of every
// dir. The locks last as long as the returned files stay open (and end
// with the process however it dies).
func lockDirs(dirs []string) ([]*os.File, error) {
	var held []*os.File
	for _, d := range dirs {
		path := filepath.Join(d, LockFile)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			unlockDirs(held)
			return nil, fmt.Errorf("broker: lock %s: %w", path, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			unlockDirs(held)
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: %s (is another qk broker running on it?)", ErrDirLocked, path)
			}
			return nil, fmt.Errorf("broker: lock %s: %w", path, err)
		}
		held = append(held, f)
	}
	return held, nil
}

func unlockDirs(files []*os.File) {
	for _, f := range files {
		f.Close() // closing the descriptor releases the flock
	}
}
