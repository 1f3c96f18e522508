package checkpoint

import (
	"fmt"
	"strconv"

	"github.com/qk-project/qk/broker/vfs"
)

// EpochEntry is one leader-epoch checkpoint line: the first offset written
// in a leader epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// ReadLeaderEpochs reads a partition's leader-epoch-checkpoint, in file
// order (ascending, as Kafka writes it). The codec checks syntax only:
// ordering and the other rules of the epoch cache belong to the cache. A
// missing file is an error matching fs.ErrNotExist; a 0-byte file holds
// no entries.
func ReadLeaderEpochs(fsys vfs.FS, path string) ([]EpochEntry, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	entries, err := DecodeLeaderEpochs(b)
	return entries, withPath(err, path)
}

// WriteLeaderEpochs atomically replaces dir/leader-epoch-checkpoint with
// entries, in the order given.
func WriteLeaderEpochs(fsys vfs.FS, dir string, entries []EpochEntry) error {
	return writeAtomic(fsys, dir, LeaderEpochFile, EncodeLeaderEpochs(entries))
}

// EncodeLeaderEpochs returns the file content for entries.
func EncodeLeaderEpochs(entries []EpochEntry) []byte {
	b := appendTextHeader(nil, len(entries))
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.StartOffset, 10)
		b = append(b, '\n')
	}
	return b
}

// DecodeLeaderEpochs parses leader-epoch checkpoint content.
func DecodeLeaderEpochs(b []byte) ([]EpochEntry, error) {
	const format = "leader-epoch checkpoint"
	var entries []EpochEntry
	err := decodeText(b, format, 2, "epoch startOffset", func(line int, f []string) error {
		epoch, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil {
			return malformedLine(format, line, "epoch %q is not an int32", f[0])
		}
		off, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return malformedLine(format, line, "start offset %q is not an int64", f[1])
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: off})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []EpochEntry{}
	}
	return entries, nil
}
