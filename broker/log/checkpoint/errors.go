package checkpoint

import (
	"errors"
	"strconv"
	"strings"
)

// Reasons a file is rejected. Every decoding error is a *CorruptError that
// unwraps to one of these, so callers can tell a file from a future Kafka
// (ErrUnsupportedVersion) from a damaged one.
var (
	ErrUnsupportedVersion = errors.New("checkpoint: unsupported version")
	ErrCountMismatch      = errors.New("checkpoint: entry count mismatch")
	ErrMalformed          = errors.New("checkpoint: malformed")
	ErrChecksum           = errors.New("checkpoint: checksum mismatch")
	ErrTruncated          = errors.New("checkpoint: truncated")
)

// ErrNoTopicID reports a partition.metadata file that is empty. Kafka 2.8
// created the file before it knew the topic ID and filled it in later, so
// an empty file means "no topic ID yet", not damage.
var ErrNoTopicID = errors.New("checkpoint: partition.metadata holds no topic id")

// CorruptError describes a file that exists but cannot be decoded.
type CorruptError struct {
	Path   string // file path; empty when bytes were decoded directly
	Format string // what was being decoded, e.g. "offset checkpoint"
	Line   int    // 1-based line of a text format; 0 when not applicable
	Err    error  // the reason: ErrUnsupportedVersion, ErrMalformed, ...
	Detail string // what exactly is wrong
}

// Error reads like "checkpoint: /logs/recovery-point-offset-checkpoint:4:
// malformed: partition "x" is not an int32".
func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("checkpoint: ")
	if e.Path != "" {
		b.WriteString(e.Path)
	} else {
		b.WriteString(e.Format)
	}
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "checkpoint: "))
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func (e *CorruptError) Unwrap() error { return e.Err }

// withPath names the file in a decoding error.
func withPath(err error, path string) error {
	var ce *CorruptError
	if errors.As(err, &ce) {
		ce.Path = path
	}
	return err
}
