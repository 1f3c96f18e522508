package inspect

import (
	"fmt"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
)

// dumpTimeIndex prints a time index (.timeindex) and runs Kafka's three
// checks on every entry: the entry's offset must be the last offset of a
// batch (else "indexed offsets are not found"), that batch's largest record
// timestamp must equal the entry's timestamp ("timestamp mismatch"), and
// timestamps must increase ("out of order"). Indexes written by Kafka
// before 3.8 on the leader's uncompressed path hold record-level offsets
// and so trip the first check while healthy; the checks are reports, not
// failures.
func (d *Dumper) dumpTimeIndex(f file) {
	data, ok := d.readOrProblem(f, 0)
	if !ok {
		return
	}
	base, err := f.baseOffset()
	if err != nil {
		d.problem(f, "%v", err)
		return
	}
	if d.opts.IndexSanityCheck {
		d.timeIndexSanity(f, data, base)
		return
	}
	seg := d.openSegmentLog(f)
	// The offset index only speeds up the search for the entry's batch;
	// without it the search starts at position 0 and finds the same batch.
	var offsets []log.OffsetPosition
	if b, err := d.readFile(f.sibling(".index"), 0); err == nil {
		offsets = log.DecodeOffsetIndex(b, base)
	}
	verifying := seg.err == nil
	prevTs := int64(-1)
	for _, e := range log.DecodeTimeIndex(data, base) {
		if verifying {
			if err := d.checkTimeEntry(f, seg.data, offsets, e, prevTs); err != nil {
				d.problem(f, "cannot verify %s entry timestamp: %d offset: %d against %s: %v; later entries were not verified",
					f.name, e.Timestamp, e.Offset, seg.path, err)
				verifying = false
			}
		}
		if !d.opts.VerifyIndexOnly {
			if d.opts.JSON {
				var j jsonObj
				j.str("file", f.name)
				j.str("type", "timeIndexEntry")
				j.int("timestamp", e.Timestamp)
				j.int("offset", e.Offset)
				d.out.Write(append(j.done(), '\n'))
			} else {
				d.printf("timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
			}
		}
		prevTs = e.Timestamp
	}
	d.indexPartial(f, len(data), len(data)%log.TimeIndexEntrySize, log.TimeIndexEntrySize)
	if seg.err != nil {
		d.missingLog(f, seg)
	}
}

// checkTimeEntry runs the three time-index checks for one entry.
func (d *Dumper) checkTimeEntry(f file, data []byte, offsets []log.OffsetPosition, e log.TimestampOffset, prevTs int64) error {
	pos := lookupPosition(offsets, e.Offset)
	if pos < 0 || pos > len(data) {
		return fmt.Errorf("offset index position %d is outside the log (size %d)", pos, len(data))
	}
	it := record.NewIterator(data[pos:])
	for it.Next() {
		ent := it.Entry()
		last, ok := entryLastOffset(data[pos:], ent)
		if !ok {
			return fmt.Errorf("bad batch at position %d", pos+int(ent.Position))
		}
		if last < e.Offset {
			continue
		}
		if last != e.Offset {
			d.timeNotFound = addPair(d.timeNotFound, f.path, e.Offset, last)
			return nil
		}
		raw, _ := entryBytes(data[pos:], ent)
		maxTs, err := maxRecordTimestamp(ent.Magic, raw)
		if err != nil {
			return fmt.Errorf("batch at position %d: %s", pos+int(ent.Position), reason(err))
		}
		if maxTs != e.Timestamp {
			d.timeMismatches = addPair(d.timeMismatches, f.path, e.Timestamp, maxTs)
		}
		if prevTs >= e.Timestamp {
			d.timeOutOfOrder = addPair(d.timeOutOfOrder, f.path, e.Timestamp, prevTs)
		}
		return nil
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("batch at position %d: %s", len(data)-it.Remaining(), reason(err))
	}
	d.timeNotFound = addPair(d.timeNotFound, f.path, e.Offset, -1)
	return nil
}

// lookupPosition is OffsetIndex.lookup: the position of the largest entry
// whose offset is at most target, or 0 when there is none.
func lookupPosition(entries []log.OffsetPosition, target int64) int {
	lo, hi := 0, len(entries) // first entry with offset > target
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if entries[m].Offset <= target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	return int(entries[lo-1].Position)
}

// maxRecordTimestamp is the largest record timestamp of a batch, found as
// Kafka's tool finds it: by iterating (and so decompressing) the records.
// An empty batch gives -1 (NO_TIMESTAMP).
func maxRecordTimestamp(magic int8, raw []byte) (int64, error) {
	maxTs := int64(-1)
	if magic >= record.MagicV2 {
		b, err := record.ParseBatch(raw)
		if err != nil {
			return 0, err
		}
		err = b.Iterate(func(r *record.Record) error {
			maxTs = max(maxTs, r.Timestamp(b))
			return nil
		})
		return maxTs, err
	}
	m, err := record.ParseLegacy(raw)
	if err != nil {
		return 0, err
	}
	if m.Magic == record.MagicV0 {
		return -1, nil
	}
	if m.Codec() == record.CodecNone || m.TimestampType() == record.LogAppendTime {
		return m.Timestamp, nil
	}
	inner, err := m.Inner()
	if err != nil {
		return 0, err
	}
	for _, in := range inner {
		maxTs = max(maxTs, in.Timestamp)
	}
	return maxTs, nil
}

// timeIndexSanity is TimeIndex.sanityCheck.
func (d *Dumper) timeIndexSanity(f file, data []byte, base int64) {
	const es = log.TimeIndexEntrySize
	if n := len(data) / es; n > 0 {
		first := int64(be64(data))
		lastEntry := data[(n-1)*es:]
		lastTs, lastOff := int64(be64(lastEntry)), base+int64(int32(be32(lastEntry[8:])))
		if lastTs < first {
			d.problem(f, "Corrupt time index found, time index file (%s) has non-zero size but the last timestamp is %d which is less than the first timestamp %d", f.path, lastTs, first)
			return
		}
		if lastOff < base {
			d.problem(f, "Corrupt time index found, time index file (%s) has non-zero size but the last offset is %d which is less than the first offset %d", f.path, lastOff, base)
			return
		}
	}
	if len(data)%es != 0 {
		d.problem(f, "Time index file %s is corrupt, found %d bytes which is neither positive nor a multiple of %d", f.path, len(data), es)
		return
	}
	d.sanityPassed(f)
}
