package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/qk-project/qk/broker/vfs"
)

// NoBrokerEpoch is the broker epoch of a clean-shutdown marker that does
// not record one: the empty file of Kafka 3.6 and earlier.
const NoBrokerEpoch int64 = -1

// WriteCleanShutdown atomically writes dir/.kafka_cleanshutdown in the
// Kafka 3.7+ form {"version":0,"brokerEpoch":N}. Its presence at start-up
// tells the broker that every log in dir was flushed and closed, so log
// recovery can be skipped; the epoch lets the controller tell a clean
// restart from a crash.
func WriteCleanShutdown(fsys vfs.FS, dir string, brokerEpoch int64) error {
	b := []byte(`{"version":0,"brokerEpoch":` + strconv.FormatInt(brokerEpoch, 10) + `}`)
	return writeAtomic(fsys, dir, CleanShutdownFile, b)
}

// ReadCleanShutdown reports whether dir/.kafka_cleanshutdown exists and
// the broker epoch it records. An empty file (Kafka 3.6 and earlier) gives
// NoBrokerEpoch. present is true whenever the file exists, even when err
// describes a body that cannot be decoded: the marker still says the
// shutdown was clean, and Kafka too carries on with epoch -1 after a
// warning.
func ReadCleanShutdown(fsys vfs.FS, dir string) (present bool, brokerEpoch int64, err error) {
	path := filepath.Join(dir, CleanShutdownFile)
	b, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, NoBrokerEpoch, nil
	}
	if err != nil {
		return false, NoBrokerEpoch, fmt.Errorf("checkpoint: %w", err)
	}
	epoch, err := DecodeCleanShutdown(b)
	return true, epoch, withPath(err, path)
}

// DecodeCleanShutdown returns the broker epoch in a clean-shutdown
// marker's content, or NoBrokerEpoch for an empty (or all white space)
// file. On error the epoch is NoBrokerEpoch.
func DecodeCleanShutdown(b []byte) (int64, error) {
	const format = "clean-shutdown file"
	if len(bytes.TrimSpace(b)) == 0 {
		return NoBrokerEpoch, nil
	}
	var c struct {
		Version     *int   `json:"version"`
		BrokerEpoch *int64 `json:"brokerEpoch"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return NoBrokerEpoch, &CorruptError{Format: format, Err: ErrMalformed, Detail: err.Error()}
	}
	switch {
	case c.Version == nil:
		return NoBrokerEpoch, &CorruptError{Format: format, Err: ErrMalformed, Detail: "no version field"}
	case *c.Version != 0:
		return NoBrokerEpoch, &CorruptError{Format: format, Err: ErrUnsupportedVersion, Detail: fmt.Sprintf("version %d, want 0", *c.Version)}
	case c.BrokerEpoch == nil:
		return NoBrokerEpoch, &CorruptError{Format: format, Err: ErrMalformed, Detail: "no brokerEpoch field"}
	}
	return *c.BrokerEpoch, nil
}

// RemoveCleanShutdown deletes dir/.kafka_cleanshutdown and syncs dir. The
// broker does this at start-up, once it has read the marker: from then on
// a crash must not look like a clean shutdown, so the removal itself has
// to be durable. A missing file is not an error.
func RemoveCleanShutdown(fsys vfs.FS, dir string) error {
	err := fsys.Remove(filepath.Join(dir, CleanShutdownFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: remove clean-shutdown marker: %w", err)
	}
	return nil
}
