package inspect

import (
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
)

// segmentLog is the .log behind an index, read lazily and at most once.
type segmentLog struct {
	path string
	data []byte
	err  error
}

func (d *Dumper) openSegmentLog(f file) *segmentLog {
	s := &segmentLog{path: f.sibling(".log")}
	s.data, s.err = d.readFile(s.path, 0)
	return s
}

// missingLog reports that index entries could not be checked. Kafka's tool
// dies with FileNotFoundException before printing anything; qk prints what
// the index holds and then says why it was not verified.
func (d *Dumper) missingLog(f file, s *segmentLog) {
	if isNotExist(s.err) {
		d.problem(f, "cannot verify %s: log segment %s not found", f.name, s.path)
		return
	}
	d.problem(f, "cannot verify %s: read %s: %v", f.name, s.path, s.err)
}

// dumpIndex prints an offset index (.index) and checks each entry against
// the log: the first batch at the entry's position must end at the entry's
// offset. Leader-built indexes always match; follower-built ones
// legitimately do not (an entry covers a whole fetched chunk), so mismatches
// are reported, not failed.
func (d *Dumper) dumpIndex(f file) {
	data, ok := d.readOrProblem(f, 0)
	if !ok {
		return
	}
	base, err := f.baseOffset()
	if err != nil {
		d.problem(f, "%v", err)
		return
	}
	n := len(data) / log.OffsetIndexEntrySize
	partial := len(data) % log.OffsetIndexEntrySize

	var seg *segmentLog
	if !d.opts.IndexSanityCheck {
		seg = d.openSegmentLog(f)
	}
	if n == 0 {
		d.indexEmpty(f)
		d.indexPartial(f, len(data), partial, log.OffsetIndexEntrySize)
		if seg != nil && seg.err != nil {
			d.missingLog(f, seg)
		}
		return
	}
	if d.opts.IndexSanityCheck {
		d.offsetIndexSanity(f, data, base)
		return
	}
	verifying := seg.err == nil
	maxMsg := d.opts.maxMessageSize()
	for _, e := range log.DecodeOffsetIndex(data, base) {
		// The all-zero first slot of a preallocated index over a still
		// empty active segment points at nothing and claims nothing; Kafka's
		// tool dies on it (NoSuchElementException), qk prints it as Kafka
		// would have and checks nothing.
		zeroSlot := e.Offset == base && e.Position == 0 && len(seg.data) == 0
		if verifying && !zeroSlot {
			last, ok := firstBatchLastOffset(seg.data, int(e.Position), maxMsg)
			if !ok {
				d.problem(f, "index entry offset: %d position: %d of %s points at no whole batch within %d bytes of %s (size %d); later entries were not verified",
					e.Offset, e.Position, f.name, maxMsg, seg.path, len(seg.data))
				verifying = false
			} else if last != e.Offset {
				d.indexMismatches = addPair(d.indexMismatches, f.path, e.Offset, last)
			}
		}
		if d.opts.VerifyIndexOnly {
			continue
		}
		if d.opts.JSON {
			var j jsonObj
			j.str("file", f.name)
			j.str("type", "offsetIndexEntry")
			j.int("offset", e.Offset)
			j.int("position", int64(e.Position))
			d.out.Write(append(j.done(), '\n'))
		} else {
			d.printf("offset: %d position: %d\n", e.Offset, e.Position)
		}
	}
	d.indexPartial(f, len(data), partial, log.OffsetIndexEntrySize)
	if seg.err != nil {
		d.missingLog(f, seg)
	}
}

func (d *Dumper) indexEmpty(f file) {
	if d.opts.JSON {
		var j jsonObj
		j.str("file", f.name)
		j.str("type", "empty")
		d.out.Write(append(j.done(), '\n'))
		return
	}
	d.printf("%s is empty.\n", f.name)
}

// indexPartial reports bytes after the last whole entry. Kafka ignores them
// when dumping (it counts length/entrySize entries) but its sanity check,
// run when a broker opens the index, rejects the file.
func (d *Dumper) indexPartial(f file, length, partial, entrySize int) {
	if partial == 0 {
		return
	}
	d.problem(f, "corrupt index %s: found %d bytes which is not a multiple of %d (%d trailing bytes at position %d)",
		f.name, length, entrySize, partial, length-partial)
}

// offsetIndexSanity is OffsetIndex.sanityCheck: the length is a multiple of
// 8 and the last entry (every whole entry counts, zero tail included) is not
// below the base offset.
func (d *Dumper) offsetIndexSanity(f file, data []byte, base int64) {
	n := len(data) / log.OffsetIndexEntrySize
	last := base + int64(int32(be32(data[(n-1)*log.OffsetIndexEntrySize:])))
	switch {
	case last < base:
		d.problem(f, "Corrupt index found, index file (%s) has non-zero size but the last offset is %d which is less than the base offset %d", f.path, last, base)
	case len(data)%log.OffsetIndexEntrySize != 0:
		d.problem(f, "Index file %s is corrupt, found %d bytes which is neither positive nor a multiple of %d", f.path, len(data), log.OffsetIndexEntrySize)
	default:
		d.sanityPassed(f)
	}
}

func (d *Dumper) sanityPassed(f file) {
	if d.opts.JSON {
		var j jsonObj
		j.str("file", f.name)
		j.str("type", "sanityCheck")
		j.bool("passed", true)
		d.out.Write(append(j.done(), '\n'))
		return
	}
	d.printf("%s passed sanity check.\n", f.name)
}

// firstBatchLastOffset reads the first batch at pos, looking at no more than
// maxSize bytes, as Kafka's fileRecords.slice(pos, maxSize) does, and
// returns its last offset.
func firstBatchLastOffset(data []byte, pos, maxSize int) (int64, bool) {
	if pos < 0 || pos > len(data) {
		return 0, false
	}
	end := len(data)
	if maxSize < end-pos {
		end = pos + maxSize
	}
	it := record.NewIterator(data[pos:end])
	if !it.Next() {
		return 0, false
	}
	e := it.Entry()
	return entryLastOffset(data[pos:end], e)
}

// entryLastOffset is Kafka's batch.lastOffset: baseOffset+lastOffsetDelta
// for v2, the message's own offset for magic 0/1.
func entryLastOffset(data []byte, e record.Entry) (int64, bool) {
	raw, ok := entryBytes(data, e)
	if !ok {
		return 0, false
	}
	if e.Magic >= record.MagicV2 {
		if len(raw) < record.BatchHeaderSize {
			return 0, false
		}
		return record.Batch(raw).LastOffset(), true
	}
	return int64(be64(raw)), true
}

// entryBytes bounds-checks an iterator entry against the buffer.
func entryBytes(data []byte, e record.Entry) ([]byte, bool) {
	pos := int(e.Position)
	if pos < 0 || e.Size < record.LogOverhead || pos+e.Size > len(data) || pos+e.Size < pos {
		return nil, false
	}
	return data[pos : pos+e.Size], true
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func be64(b []byte) uint64 { return uint64(be32(b))<<32 | uint64(be32(b[4:])) }
