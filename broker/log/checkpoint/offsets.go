package checkpoint

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/qk-project/qk/broker/vfs"
)

// Names of the files in a log directory (one of log.dirs) and in a
// partition directory, as Kafka spells them.
const (
	RecoveryPointFile     = "recovery-point-offset-checkpoint" // log dir: offsets below which every partition is flushed
	ReplicationOffsetFile = "replication-offset-checkpoint"    // log dir: high watermarks
	LogStartOffsetFile    = "log-start-offset-checkpoint"      // log dir: log start offsets above the first segment's base
	CleanerOffsetFile     = "cleaner-offset-checkpoint"        // log dir: first dirty offset of compacted partitions
	LeaderEpochFile       = "leader-epoch-checkpoint"          // partition dir
	PartitionMetadataFile = "partition.metadata"               // partition dir
	MetaPropertiesFile    = "meta.properties"                  // log dir
	CleanShutdownFile     = ".kafka_cleanshutdown"             // log dir
)

// textVersion is the only version of Kafka's text checkpoint format.
const textVersion = 0

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// ReadOffsets reads an offset checkpoint file: one of RecoveryPointFile,
// ReplicationOffsetFile, LogStartOffsetFile or CleanerOffsetFile. A 0-byte
// file holds no entries (Kafka creates the file empty before its first
// write), and so does a file with a count of 0.
//
// A missing file is an error that matches fs.ErrNotExist. It is not folded
// into "no entries" because callers mean different things by it: a missing
// recovery-point file says every log must be recovered from its start,
// while a missing cleaner file just says nothing was compacted yet.
func ReadOffsets(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	m, err := DecodeOffsets(b)
	return m, withPath(err, path)
}

// WriteOffsets replaces dir/name with the entries of m, atomically, sorted
// by topic and partition so that equal maps give equal files. Kafka writes
// hash-map order; readers do not care.
func WriteOffsets(fsys vfs.FS, dir, name string, m map[TopicPartition]int64) error {
	b, err := EncodeOffsets(m)
	if err != nil {
		return err
	}
	return writeAtomic(fsys, dir, name, b)
}

// EncodeOffsets returns the file content for m. It fails if a topic name
// is empty or contains white space, which the format cannot carry.
func EncodeOffsets(m map[TopicPartition]int64) ([]byte, error) {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		if tp.Topic == "" || strings.IndexFunc(tp.Topic, unicode.IsSpace) >= 0 {
			return nil, fmt.Errorf("checkpoint: topic %q cannot be written to an offset checkpoint", tp.Topic)
		}
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	b := appendTextHeader(nil, len(m))
	for _, tp := range tps {
		b = append(b, tp.Topic...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(tp.Partition), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, m[tp], 10)
		b = append(b, '\n')
	}
	return b, nil
}

// DecodeOffsets parses offset checkpoint content. Duplicate partitions are
// rejected: Kafka never writes them, and keeping either value would hide
// the damage.
func DecodeOffsets(b []byte) (map[TopicPartition]int64, error) {
	const format = "offset checkpoint"
	m := map[TopicPartition]int64{}
	err := decodeText(b, format, 3, "topic partition offset", func(line int, f []string) error {
		p, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil {
			return malformedLine(format, line, "partition %q is not an int32", f[1])
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return malformedLine(format, line, "offset %q is not an int64", f[2])
		}
		tp := TopicPartition{Topic: f[0], Partition: int32(p)}
		if _, dup := m[tp]; dup {
			return malformedLine(format, line, "duplicate entry for %v", tp)
		}
		m[tp] = off
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func malformedLine(format string, line int, detail string, args ...any) error {
	return &CorruptError{Format: format, Line: line, Err: ErrMalformed, Detail: fmt.Sprintf(detail, args...)}
}

func appendTextHeader(b []byte, n int) []byte {
	b = strconv.AppendInt(b, textVersion, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\n')
}

// decodeText parses Kafka's text checkpoint layout: a version line, a
// count line, then entry lines of nfields white-space separated fields,
// each handed to entry with its 1-based line number. As Kafka's reader
// does, it treats 0 bytes as no entries, accepts a missing final newline,
// reads every line before comparing the count, and rejects blank lines.
// "\r\n" endings are accepted.
func decodeText(b []byte, format string, nfields int, layout string, entry func(line int, f []string) error) error {
	if len(b) == 0 {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	version, err := strconv.Atoi(lines[0])
	if err != nil {
		return malformedLine(format, 1, "version %q is not an integer", lines[0])
	}
	if version != textVersion {
		return &CorruptError{Format: format, Line: 1, Err: ErrUnsupportedVersion, Detail: fmt.Sprintf("version %d, want %d", version, textVersion)}
	}
	if len(lines) < 2 {
		return malformedLine(format, 2, "missing entry count")
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count < 0 {
		return malformedLine(format, 2, "entry count %q is not a non-negative integer", lines[1])
	}
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != nfields {
			return malformedLine(format, i+3, "want %d fields (%s), got %q", nfields, layout, l)
		}
		if err := entry(i+3, f); err != nil {
			return err
		}
	}
	if got := len(lines) - 2; got != count {
		return &CorruptError{Format: format, Line: 2, Err: ErrCountMismatch, Detail: fmt.Sprintf("header says %d entries, file has %d", count, got)}
	}
	return nil
}

// writeAtomic writes b to dir/name with vfs.WriteFileAtomic, so that a
// crash leaves the old file or the new one.
func writeAtomic(fsys vfs.FS, dir, name string, b []byte) error {
	if err := vfs.WriteFileAtomic(fsys, dir, name, b); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}
