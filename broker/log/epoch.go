package log

import (
	"slices"

	"github.com/qk-project/qk/broker/log/checkpoint"
)

// UndefinedEpoch and UndefinedEpochOffset are what EndOffsetFor answers
// when it knows nothing (Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// EpochEntry is a leader epoch and the first offset written in it.
type EpochEntry = checkpoint.EpochEntry

// LeaderEpochCache maps leader epochs to their start offsets, ascending in
// both. It is Kafka's LeaderEpochFileCache without its own lock: the Log
// guards it. Every change is handed to persist (the Log writes
// leader-epoch-checkpoint atomically).
type LeaderEpochCache struct {
	entries []EpochEntry
	persist func([]EpochEntry) error
}

// NewLeaderEpochCache returns a cache holding entries (which must be
// ascending; out-of-order entries from a damaged file are dropped as assign
// would drop them).
func NewLeaderEpochCache(entries []EpochEntry, persist func([]EpochEntry) error) *LeaderEpochCache {
	c := &LeaderEpochCache{persist: persist}
	for _, e := range entries {
		if e.Epoch >= 0 && e.StartOffset >= 0 {
			c.assignEntry(e)
		}
	}
	return c
}

// Entries returns a copy of the entries.
func (c *LeaderEpochCache) Entries() []EpochEntry { return slices.Clone(c.entries) }

// LatestEpoch returns the newest epoch, or false when the cache is empty.
func (c *LeaderEpochCache) LatestEpoch() (int32, bool) {
	if len(c.entries) == 0 {
		return UndefinedEpoch, false
	}
	return c.entries[len(c.entries)-1].Epoch, true
}

// EarliestEntry returns the oldest entry, or false when the cache is empty.
func (c *LeaderEpochCache) EarliestEntry() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[0], true
}

// needsUpdate is Kafka's isUpdateNeeded: a different epoch than the latest,
// or the latest epoch starting earlier.
func (c *LeaderEpochCache) needsUpdate(e EpochEntry) bool {
	if len(c.entries) == 0 {
		return true
	}
	last := c.entries[len(c.entries)-1]
	return e.Epoch != last.Epoch || e.StartOffset < last.StartOffset
}

// Assign records that epoch started at startOffset. Entries with an epoch
// ≥ epoch or a start offset ≥ startOffset are removed first, so the cache
// stays ascending in both columns. It reports whether the cache changed;
// a change is persisted. Negative epochs or offsets are ignored (batches
// without a leader epoch).
func (c *LeaderEpochCache) Assign(epoch int32, startOffset int64) (bool, error) {
	if epoch < 0 || startOffset < 0 {
		return false, nil
	}
	e := EpochEntry{Epoch: epoch, StartOffset: startOffset}
	if !c.needsUpdate(e) {
		return false, nil
	}
	c.assignEntry(e)
	return true, c.save()
}

func (c *LeaderEpochCache) assignEntry(e EpochEntry) {
	if !c.needsUpdate(e) {
		return
	}
	i := len(c.entries)
	for i > 0 && (c.entries[i-1].Epoch >= e.Epoch || c.entries[i-1].StartOffset >= e.StartOffset) {
		i--
	}
	c.entries = append(c.entries[:i], e)
}

// TruncateFromEnd removes the entries whose start offset is ≥ endOffset
// (the log was truncated to endOffset).
func (c *LeaderEpochCache) TruncateFromEnd(endOffset int64) error {
	if endOffset < 0 || len(c.entries) == 0 || c.entries[len(c.entries)-1].StartOffset < endOffset {
		return nil
	}
	i := len(c.entries)
	for i > 0 && c.entries[i-1].StartOffset >= endOffset {
		i--
	}
	c.entries = c.entries[:i]
	return c.save()
}

// TruncateFromStart drops the entries that start at or below startOffset
// (the new log start offset) except the newest of them, whose start offset
// moves up to startOffset: that epoch still covers the first offsets of the
// log.
func (c *LeaderEpochCache) TruncateFromStart(startOffset int64) error {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 {
		return nil
	}
	kept := c.entries[i-1]
	if i == 1 && kept.StartOffset == startOffset {
		return nil
	}
	kept.StartOffset = startOffset
	c.entries = append([]EpochEntry{kept}, c.entries[i:]...)
	return c.save()
}

// Clear removes every entry.
func (c *LeaderEpochCache) Clear() error {
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = c.entries[:0]
	return c.save()
}

// EndOffsetFor answers OffsetForLeaderEpoch: the epoch the cache knows at
// or below requested and the offset at which that epoch ended (the start of
// the next higher epoch, or logEndOffset when requested is the latest).
// Unknown or higher-than-latest epochs give (UndefinedEpoch,
// UndefinedEpochOffset); an epoch below the first gives (requested, start of
// the first epoch).
func (c *LeaderEpochCache) EndOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested == UndefinedEpoch || len(c.entries) == 0 {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if latest := c.entries[len(c.entries)-1]; latest.Epoch == requested {
		return requested, logEndOffset
	}
	// h: the first entry with an epoch above requested.
	h := 0
	for h < len(c.entries) && c.entries[h].Epoch <= requested {
		h++
	}
	if h == len(c.entries) {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if h == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[h-1].Epoch, c.entries[h].StartOffset
}

// EpochForOffset returns the epoch that covers offset (the last entry
// starting at or below it), or UndefinedEpoch.
func (c *LeaderEpochCache) EpochForOffset(offset int64) int32 {
	epoch := UndefinedEpoch
	for _, e := range c.entries {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

func (c *LeaderEpochCache) save() error {
	if c.persist == nil {
		return nil
	}
	return c.persist(slices.Clone(c.entries))
}
