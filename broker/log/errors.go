package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Sentinel errors. Callers match them with errors.Is; broker/api maps them
// to Kafka error codes.
var (
	// ErrOffsetOutOfRange is OFFSET_OUT_OF_RANGE: a read or truncation below
	// the log start offset or beyond the log end offset.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrClosed is returned by every operation on a closed Log or Manager.
	ErrClosed = errors.New("log: closed")
	// ErrFailed is KAFKA_STORAGE_ERROR: an earlier write or fsync of the
	// log failed, so its files are in an unknown state. The log refuses
	// writes and flushes until the broker restarts and recovers it.
	ErrFailed = errors.New("log: failed after an I/O error")
	// ErrLogDirOffline is KAFKA_STORAGE_ERROR too: the partition's log
	// directory went offline after an I/O error in one of its logs or
	// files (Kafka's LogDirFailureChannel, KIP-112), or a log that may be
	// in an offline directory was asked for. It comes back at restart.
	ErrLogDirOffline = errors.New("log: log directory offline")
	// ErrTruncated is returned to an AppendAsync caller whose batch a
	// truncation removed before it was flushed (the replica became a
	// follower): NOT_LEADER_OR_FOLLOWER, so the producer retries.
	ErrTruncated = errors.New("log: truncated before the batch was flushed")
	// ErrBatchTooLarge is MESSAGE_TOO_LARGE: the batch exceeds
	// max.message.bytes.
	ErrBatchTooLarge = errors.New("log: record batch larger than max.message.bytes")
	// ErrInvalidBatch wraps a record-level validation failure of an appended
	// batch (the record package's sentinel stays reachable with errors.Is:
	// record.ErrBadCRC is CORRUPT_MESSAGE, the others INVALID_RECORD).
	ErrInvalidBatch = errors.New("log: invalid record batch")
	// ErrIndexFull means an index has no free slot: the segment must roll.
	ErrIndexFull = errors.New("log: index full")
	// ErrIndexOffset means an index append did not increase the offset.
	ErrIndexOffset = errors.New("log: index offset not increasing")
	// ErrOffsetOverflow means an offset cannot be stored relative to its
	// segment's base offset (the difference must fit an int32).
	ErrOffsetOverflow = errors.New("log: offset overflows segment base offset")
	// ErrCorruptIndex means an index file failed its sanity check.
	ErrCorruptIndex = errors.New("log: corrupt index")
	// ErrCorruptLog means a .log file holds an invalid batch where a valid
	// one was required.
	ErrCorruptLog = errors.New("log: corrupt log segment")
	// ErrAboveHighWatermark means DeleteRecordsBefore was asked to move the
	// log start offset past the high watermark.
	ErrAboveHighWatermark = errors.New("log: offset above high watermark")
	// ErrUnknownLog means the Manager hosts no log of that partition.
	ErrUnknownLog = errors.New("log: unknown partition log")
	// ErrBadConfig means a Config value is outside its legal range.
	ErrBadConfig = errors.New("log: invalid config")
	// ErrBadDirName means a partition directory is not named <topic>-<partition>.
	ErrBadDirName = errors.New("log: not a partition directory name")
	// ErrSegmentExists means a roll would create a segment that already exists.
	ErrSegmentExists = errors.New("log: segment already exists")

	// ErrOutOfOrderSequence is OUT_OF_ORDER_SEQUENCE_NUMBER: an idempotent
	// batch whose first sequence does not follow the producer's last one
	// (a gap, a retry older than the five batches remembered, or a new
	// epoch not starting at sequence 0). Nothing was appended.
	ErrOutOfOrderSequence = errors.New("log: out of order sequence number")
	// ErrInvalidProducerEpoch is INVALID_PRODUCER_EPOCH (PRODUCER_FENCED
	// before Kafka 2.7): the batch carries an epoch older than the
	// producer's current one, so a newer instance of that producer exists.
	ErrInvalidProducerEpoch = errors.New("log: invalid producer epoch")
	// ErrDuplicateSequence marks a retry of one of the producer's last
	// five batches. Append does not return it: it answers the retry with
	// the original offsets and AppendInfo.Duplicate set. It is exported so
	// that broker/api can map it (DUPLICATE_SEQUENCE_NUMBER) should it
	// ever escape.
	ErrDuplicateSequence = errors.New("log: duplicate sequence number")
	// ErrUnknownProducerID is UNKNOWN_PRODUCER_ID. Append does not return
	// it: since Kafka 2.5 (KIP-360) a batch of a producer the partition has
	// no state for is accepted at any sequence (its state may have expired
	// or its data been deleted by retention). It is kept for broker/api's
	// error map.
	ErrUnknownProducerID = errors.New("log: unknown producer id")
	// ErrTransactionCoordinatorFenced is TRANSACTION_COORDINATOR_FENCED: a
	// transaction marker carries a coordinator epoch older than the one of
	// the producer's last marker in this partition (a zombie coordinator).
	// Nothing was appended.
	ErrTransactionCoordinatorFenced = errors.New("log: transaction coordinator fenced")
	// ErrInvalidTxnState is INVALID_TXN_STATE: a producer with an open
	// transaction in this partition sent a non-transactional batch.
	// Nothing was appended.
	ErrInvalidTxnState = errors.New("log: invalid transaction state")
)

// CorruptError reports where a file is damaged. Offset is the byte position
// in the file named by Path. Err is ErrCorruptIndex or ErrCorruptLog; Cause,
// when set, is the lower-level error (a *record.CorruptError wrapping
// record.ErrBadCRC, ...). errors.Is matches both.
type CorruptError struct {
	Path   string
	Offset int64
	Reason string
	Err    error
	Cause  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: %s at byte %d: %s", e.Err, e.Path, e.Offset, e.Reason)
}

// Unwrap returns Err and, when present, Cause.
func (e *CorruptError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// isIOError reports whether err came from the file system (a failed
// open, write, fsync, rename...), as opposed to one of this package's
// logical errors. Such an error takes the log's directory offline, as an
// IOException does in Kafka.
func isIOError(err error) bool {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	var sysErr *os.SyscallError
	var errno syscall.Errno
	return errors.As(err, &pathErr) || errors.As(err, &linkErr) || errors.As(err, &sysErr) ||
		errors.As(err, &errno) || errors.Is(err, io.ErrShortWrite)
}

// isDeviceError reports whether err is an errno that says the device or
// file system cannot be written (a failed disk, a full one, a read-only
// remount), rather than a problem with one path (a file where a directory
// should be, a permission). A log that cannot be created for such a reason
// takes its whole directory offline; one that cannot for a reason of its
// own path is offline alone.
func isDeviceError(err error) bool {
	for _, e := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EROFS, syscall.EDQUOT, syscall.ENXIO, syscall.ENODEV} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
