package checkpoint

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/qk-project/qk/broker/vfs"
)

// ReadPartitionMetadata reads dir/partition.metadata and returns the topic
// ID in it. An empty file (Kafka 2.8 created one before the ID was known)
// gives ErrNoTopicID; a missing file an error matching fs.ErrNotExist.
func ReadPartitionMetadata(fsys vfs.FS, dir string) ([16]byte, error) {
	path := filepath.Join(dir, PartitionMetadataFile)
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return [16]byte{}, fmt.Errorf("checkpoint: %w", err)
	}
	id, err := DecodePartitionMetadata(b)
	if err == ErrNoTopicID {
		return id, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return id, withPath(err, path)
}

// WritePartitionMetadata atomically writes dir/partition.metadata for
// topicID, which must not be all zeros: Kafka reserves the zero UUID to
// mean "no ID" and refuses to read it back.
func WritePartitionMetadata(fsys vfs.FS, dir string, topicID [16]byte) error {
	b, err := EncodePartitionMetadata(topicID)
	if err != nil {
		return err
	}
	return writeAtomic(fsys, dir, PartitionMetadataFile, b)
}

// EncodePartitionMetadata returns the file content for topicID: exactly
// "version: 0\ntopic_id: <id>", with no final newline, as Kafka writes it.
func EncodePartitionMetadata(topicID [16]byte) ([]byte, error) {
	if topicID == ([16]byte{}) {
		return nil, fmt.Errorf("checkpoint: the all-zero topic id cannot be written")
	}
	return []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(topicID[:])), nil
}

// DecodePartitionMetadata parses partition.metadata content. Like Kafka it
// splits each line at ":" followed by white space; it also checks the key
// names, which Kafka does not.
func DecodePartitionMetadata(b []byte) ([16]byte, error) {
	const format = "partition.metadata"
	var id [16]byte
	if len(b) == 0 {
		return id, ErrNoTopicID
	}
	lines := strings.Split(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != 2 {
		return id, malformedLine(format, 0, "want 2 lines, got %d", len(lines))
	}
	version, ok := keyValue(lines[0], "version")
	if !ok {
		return id, malformedLine(format, 1, "want \"version: 0\", got %q", lines[0])
	}
	if v, err := strconv.Atoi(version); err != nil {
		return id, malformedLine(format, 1, "version %q is not an integer", version)
	} else if v != 0 {
		return id, &CorruptError{Format: format, Line: 1, Err: ErrUnsupportedVersion, Detail: fmt.Sprintf("version %d, want 0", v)}
	}
	text, ok := keyValue(lines[1], "topic_id")
	if !ok {
		return id, malformedLine(format, 2, "want \"topic_id: <id>\", got %q", lines[1])
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(text, "="))
	if err != nil || len(raw) != len(id) {
		return id, malformedLine(format, 2, "topic id %q is not 16 bytes of URL-safe base64", text)
	}
	copy(id[:], raw)
	if id == ([16]byte{}) {
		return id, malformedLine(format, 2, "topic id is all zeros")
	}
	return id, nil
}

// keyValue splits "key: value" (":" then at least one white space
// character, Kafka's ":\s+") and checks the key.
func keyValue(line, key string) (string, bool) {
	line = strings.TrimSuffix(line, "\r")
	k, v, ok := strings.Cut(line, ":")
	if !ok || k != key {
		return "", false
	}
	trimmed := strings.TrimLeft(v, " \t\f\v\r")
	if len(trimmed) == len(v) || trimmed == "" {
		return "", false
	}
	return trimmed, true
}
