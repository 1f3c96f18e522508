package log

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/qk-project/qk/broker/vfs"
)

// AbortedTxnSize is the size of one .txnindex entry (Kafka's
// AbortedTxn.TOTAL_SIZE).
const AbortedTxnSize = 34

// abortedTxnVersion is AbortedTxn.CURRENT_VERSION.
const abortedTxnVersion = 0

// AbortedTxn is one entry of a segment's transaction index: a transaction
// of ProducerID that was aborted, its data from FirstOffset, its ABORT
// marker at LastOffset, and the partition's last stable offset as the
// marker was written (Kafka's ProducerStateManager.lastStableOffset: the
// first offset of the oldest transaction of another producer still open,
// or LastOffset+1 when there is none; not bounded by the high watermark).
// A read_committed Fetch answers with the ProducerID and FirstOffset of
// the entries overlapping the data it returns (aborted_transactions).
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// AppendTo appends the entry's 34 bytes: version int16 0, producerId,
// firstOffset, lastOffset, lastStableOffset (int64s), big-endian.
func (a AbortedTxn) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, abortedTxnVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(a.LastStableOffset))
}

// ParseTxnIndex decodes a .txnindex file of the segment at baseOffset with
// the checks Kafka makes (TransactionIndex's iterator and sanityCheck):
// whole entries, version 0, every last offset at or above the base offset;
// and, as its append requires, last offsets strictly increasing. On an
// error it returns the entries before the bad one.
func ParseTxnIndex(path string, raw []byte, baseOffset int64) ([]AbortedTxn, error) {
	out := make([]AbortedTxn, 0, len(raw)/AbortedTxnSize)
	bad := func(pos int, format string, args ...any) error {
		return &CorruptError{Path: path, Offset: int64(pos), Err: ErrCorruptIndex, Reason: fmt.Sprintf(format, args...)}
	}
	for pos := 0; pos < len(raw); pos += AbortedTxnSize {
		if len(raw)-pos < AbortedTxnSize {
			return out, bad(pos, "%d trailing bytes are not a whole %d-byte entry", len(raw)-pos, AbortedTxnSize)
		}
		e := raw[pos : pos+AbortedTxnSize]
		if v := int16(binary.BigEndian.Uint16(e)); v != abortedTxnVersion {
			return out, bad(pos, "aborted transaction version %d, expected %d", v, abortedTxnVersion)
		}
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		}
		if a.LastOffset < baseOffset {
			return out, bad(pos, "last offset %d of aborted transaction is below the segment base %d", a.LastOffset, baseOffset)
		}
		if n := len(out); n > 0 && a.LastOffset <= out[n-1].LastOffset {
			return out, bad(pos, "last offset %d does not follow %d", a.LastOffset, out[n-1].LastOffset)
		}
		out = append(out, a)
	}
	return out, nil
}

// TransactionIndex is a segment's .txnindex (Kafka's TransactionIndex):
// the aborted transactions whose ABORT marker lies in the segment, in
// marker order. Unlike the offset and time indexes it is not
// preallocated, and its file exists only while it has entries: it is
// created by the first entry (Kafka creates it lazily too) and removed
// when truncation or a rebuild leaves it empty, so replicas with the same
// log have the same files.
//
// Every entry is written to the file when it is added (aborts are rare
// next to batches, and the file is then always complete for the dump
// tool); the flush of the segment fsyncs it. The entries are also kept in
// memory, so lookups never read the file. Like the other indexes it holds
// no file descriptor. Mutations run under the Log's write lock, lookups
// under its read lock; flushes claim under the write lock and run under
// flushMu (gen, syncedGen), as indexFile does.
type TransactionIndex struct {
	fsys       vfs.FS
	path       string
	baseOffset int64
	entries    []AbortedTxn
	exists     bool // the file exists (it has entries)

	gen       uint64
	syncedGen uint64
}

func newTransactionIndex(fsys vfs.FS, path string, baseOffset int64) *TransactionIndex {
	return &TransactionIndex{fsys: fsys, path: path, baseOffset: baseOffset}
}

// load reads the file if it exists. A corrupt file keeps the entries
// before the damage and returns a *CorruptError (the caller rebuilds the
// index from the log).
func (t *TransactionIndex) load() error {
	raw, err := vfs.ReadFile(t.fsys, t.path)
	if errors.Is(err, fs.ErrNotExist) {
		t.entries, t.exists = nil, false
		return nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read transaction index %s: %w", t.path, err)
	}
	t.exists = true
	t.entries, err = ParseTxnIndex(t.path, raw, t.baseOffset)
	return err
}

// Path is the file's current name.
func (t *TransactionIndex) Path() string { return t.path }

// Entries returns a copy of the entries.
func (t *TransactionIndex) Entries() []AbortedTxn { return slices.Clone(t.entries) }

// append adds an entry and writes it to the file, creating the file for
// the first one (created is then true: the directory changed). Last
// offsets must increase, as Kafka's append requires.
func (t *TransactionIndex) append(a AbortedTxn) (created bool, err error) {
	if n := len(t.entries); n > 0 && a.LastOffset <= t.entries[n-1].LastOffset {
		return false, fmt.Errorf("append aborted transaction at %d to %s after %d: %w", a.LastOffset, t.path, t.entries[n-1].LastOffset, ErrIndexOffset)
	}
	f, err := t.fsys.OpenFile(t.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("open transaction index %s: %w", t.path, err)
	}
	t.gen++
	created = !t.exists
	t.exists = true
	var buf [AbortedTxnSize]byte
	_, err = f.WriteAt(a.AppendTo(buf[:0]), int64(len(t.entries))*AbortedTxnSize)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return created, fmt.Errorf("write transaction index %s: %w", t.path, err)
	}
	t.entries = append(t.entries, a)
	return created, nil
}

// truncateTo removes the entries whose last offset is ≥ offset (Kafka's
// truncateTo). It reports whether the file was removed.
func (t *TransactionIndex) truncateTo(offset int64) (removed bool, err error) {
	i, _ := slices.BinarySearchFunc(t.entries, offset, func(a AbortedTxn, off int64) int {
		return cmp.Compare(a.LastOffset, off)
	})
	return t.setEntries(t.entries[:i:i])
}

// setEntries makes the index hold exactly want, rewriting the file only
// if that changes it (removing it when want is empty). It reports whether
// the file was created or removed.
func (t *TransactionIndex) setEntries(want []AbortedTxn) (dirChanged bool, err error) {
	if slices.Equal(want, t.entries) && t.exists == (len(want) > 0) {
		return false, nil
	}
	t.gen++
	if len(want) == 0 {
		t.entries = nil
		if err := t.fsys.Remove(t.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("remove transaction index %s: %w", t.path, err)
		}
		dirChanged, t.exists = t.exists, false
		return dirChanged, nil
	}
	// A prefix of the current entries is a truncation of the file.
	keep := 0
	for keep < len(want) && keep < len(t.entries) && want[keep] == t.entries[keep] {
		keep++
	}
	f, err := t.fsys.OpenFile(t.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("open transaction index %s: %w", t.path, err)
	}
	dirChanged, t.exists = !t.exists, true
	buf := make([]byte, 0, (len(want)-keep)*AbortedTxnSize)
	for _, a := range want[keep:] {
		buf = a.AppendTo(buf)
	}
	err = f.Truncate(int64(keep) * AbortedTxnSize)
	if err == nil && len(buf) > 0 {
		_, err = f.WriteAt(buf, int64(keep)*AbortedTxnSize)
	}
	if err == nil {
		err = f.Truncate(int64(len(want)) * AbortedTxnSize)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return dirChanged, fmt.Errorf("write transaction index %s: %w", t.path, err)
	}
	t.entries = slices.Clone(want)
	return dirChanged, nil
}

// collect appends to dst the entries that overlap [fetchOffset,
// upperBoundOffset): last offset ≥ fetchOffset and first offset <
// upperBoundOffset (Kafka's collectAbortedTxns). complete says no later
// segment can hold another: an entry's last stable offset reached the
// upper bound, so every transaction aborted after it began at or above
// the bound.
func (t *TransactionIndex) collect(dst []AbortedTxn, fetchOffset, upperBoundOffset int64) ([]AbortedTxn, bool) {
	for _, a := range t.entries {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBoundOffset {
			dst = append(dst, a)
		}
		if a.LastStableOffset >= upperBoundOffset {
			return dst, true
		}
	}
	return dst, false
}

// txnIndexFlush is a flush's share of a transaction index: the gen its
// fsync covers. Claimed under the log's write lock, run under flushMu.
type txnIndexFlush struct {
	t   *TransactionIndex
	gen uint64
	ok  bool // the file exists and changed since its last fsync
}

func (t *TransactionIndex) claimFlush() txnIndexFlush {
	return txnIndexFlush{t: t, gen: t.gen, ok: t.exists && t.gen > t.syncedGen}
}

// run fsyncs the file (open, fsync, close). A file removed since the
// claim has nothing to sync; the directory sync covers its removal.
func (f txnIndexFlush) run() error {
	if !f.ok {
		return nil
	}
	t := f.t
	file, err := t.fsys.OpenFile(t.path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open transaction index %s: %w", t.path, err)
	}
	err = file.Sync()
	if cerr := file.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync transaction index %s: %w", t.path, err)
	}
	t.syncedGen = max(t.syncedGen, f.gen)
	return nil
}
