package inspect

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/qk-project/qk/broker/record"
)

// logDump is the state of one .log dump.
type logDump struct {
	d    *Dumper
	f    file
	data []byte

	// lastOffset is the previous record's offset for the non-consecutive
	// report; -1 before the first record, as in Kafka.
	lastOffset int64
	badCRC     int
	line       []byte // reused line buffer
}

// dumpLog prints every batch of a .log (and, deep, every record), then the
// trailer for bytes that do not form a whole batch.
//
// Kafka's reader stops without error at a torn tail (fewer than 17 bytes
// left, or a batch running past the end) and only prints "Found N invalid
// bytes". qk prints the same line and then names the damage as an Error, so
// scripts can tell a torn segment from a healthy one by the exit status.
func (d *Dumper) dumpLog(f file, printStart bool) {
	if printStart && !d.opts.JSON {
		if base, err := f.baseOffset(); err == nil {
			d.printf("Log starting offset: %d\n", base)
		} else {
			d.warn("%v", err)
		}
	}
	data, ok := d.readOrProblem(f, d.opts.MaxBytes)
	if !ok {
		return
	}
	l := &logDump{d: d, f: f, data: data, lastOffset: -1}
	l.run()
}

// dumpKRaftSnapshot dumps a KRaft metadata snapshot
// (<endOffset>-<epoch>.checkpoint), which is log content, as Kafka's tool
// does. Its control records (snapshot header and footer) are printed as
// "controlType: SNAPSHOT_HEADER(3)"; Kafka prints their JSON.
func (d *Dumper) dumpKRaftSnapshot(f file) {
	if !d.opts.JSON {
		stem := strings.TrimSuffix(f.base, ".checkpoint")
		off, epoch, ok := strings.Cut(stem, "-")
		o, err1 := strconv.ParseInt(off, 10, 64)
		e, err2 := strconv.ParseInt(epoch, 10, 32)
		switch {
		case f.base == "bootstrap.checkpoint":
			d.printf("KRaft bootstrap snapshot\n")
		case ok && err1 == nil && err2 == nil && len(off) == 20 && len(epoch) == 10:
			d.printf("Snapshot end offset: %d, epoch: %d\n", o, e)
		default:
			d.warn("%s is not named <20-digit end offset>-<10-digit epoch>.checkpoint", f.name)
		}
	}
	d.dumpLog(f, false)
}

func (l *logDump) run() {
	d, f := l.d, l.f
	it := record.NewIterator(l.data)
	valid := 0
	for it.Next() {
		e := it.Entry()
		pos := int(e.Position)
		if pos != valid || e.Size <= 0 || pos+e.Size > len(l.data) {
			// The iterator's framing and ours disagree: never index out of
			// range on its word.
			d.problem(f, "corrupt batch at position %d of %s: iterator returned an entry at %d of %d bytes", valid, f.name, pos, e.Size)
			return
		}
		raw := l.data[pos : pos+e.Size]
		var ok bool
		switch {
		case e.Magic == record.MagicV2 && e.Batch != nil:
			ok = l.batch(pos, raw)
		case e.Legacy != nil:
			ok = l.legacy(pos, raw, e.Legacy)
		default:
			d.problem(f, "corrupt batch at position %d of %s: unknown magic %d", pos, f.name, e.Magic)
			ok = false
		}
		if !ok {
			l.finishCRC()
			return
		}
		valid += e.Size
	}
	if err := it.Err(); err != nil {
		l.finishCRC()
		d.problem(f, "corrupt batch at position %d of %s: %s", valid, f.name, reason(err))
		return
	}
	if trailing := len(l.data) - valid; trailing > 0 && d.opts.MaxBytes <= 0 {
		if d.opts.JSON {
			var j jsonObj
			j.str("file", f.name)
			j.str("type", "invalidBytes")
			j.int("position", int64(valid))
			j.int("size", int64(trailing))
			l.emit(j.done())
		} else {
			d.printf("Found %d invalid bytes at the end of %s\n", trailing, f.base)
		}
		l.finishCRC()
		d.problem(f, "torn batch at position %d of %s: %s", valid, f.name, tornReason(l.data[valid:]))
		return
	}
	l.finishCRC()
}

// finishCRC turns CRC mismatches into a problem. Kafka prints isvalid:
// false and carries on; so does qk, and it says so once at the end.
func (l *logDump) finishCRC() {
	if l.badCRC == 0 {
		return
	}
	noun := "batch"
	if l.badCRC > 1 {
		noun = "batches"
	}
	l.d.problem(l.f, "%d %s of %s failed the CRC check (isvalid: false)", l.badCRC, noun, l.f.name)
	l.badCRC = 0
}

// tornReason explains why the bytes at the end are not a batch.
func tornReason(tail []byte) string {
	if len(tail) < record.HeaderPrefixSize {
		return fmt.Sprintf("%d bytes remain, fewer than a batch header (%d)", len(tail), record.HeaderPrefixSize)
	}
	size, _, err := record.PeekSize(tail)
	if err != nil {
		return reason(err)
	}
	if size > len(tail) {
		return fmt.Sprintf("batch declares %d bytes, only %d remain", size, len(tail))
	}
	// Exactly a 17-byte batch at the end: Kafka's reader needs one more byte
	// than the header prefix before it looks at a batch at all.
	return fmt.Sprintf("%d bytes remain, too few for Kafka's reader to start a batch", len(tail))
}

// reason is the text of a decoding error without the sentinel's package
// prefix: "record size 0 smaller than minimum record overhead (14)".
func reason(err error) string {
	var ce *record.CorruptError
	if errors.As(err, &ce) && ce.Reason != "" {
		return ce.Reason
	}
	return err.Error()
}

// batch prints one v2 batch and, deep, its records. It reports false when
// the dump of this file must stop.
func (l *logDump) batch(pos int, raw []byte) bool {
	d, f := l.d, l.f
	if len(raw) < record.BatchHeaderSize {
		d.problem(f, "corrupt batch at position %d of %s: batch size %d smaller than the v2 header (%d)", pos, f.name, len(raw), record.BatchHeaderSize)
		return false
	}
	b := record.Batch(raw)
	valid := b.ComputeCRC() == b.CRC()
	if !valid {
		l.badCRC++
	}
	l.printBatch(pos, b, valid)
	if _, err := record.ParseBatch(raw); err != nil {
		d.problem(f, "corrupt batch at position %d of %s: %s", pos, f.name, reason(err))
		return false
	}
	if !d.opts.deep() {
		return true
	}
	var bad error
	err := b.Iterate(func(r *record.Record) error {
		if err := l.record(b, r); err != nil {
			bad = err
			return err
		}
		return nil
	})
	if err != nil {
		if bad == nil {
			bad = err
		}
		d.problem(f, "corrupt batch at position %d of %s: %s", pos, f.name, reason(bad))
		return false
	}
	return true
}

func (l *logDump) printBatch(pos int, b record.Batch, valid bool) {
	if l.d.opts.JSON {
		var j jsonObj
		j.str("file", l.f.name)
		j.str("type", "batch")
		j.int("baseOffset", b.BaseOffset())
		j.int("lastOffset", b.LastOffset())
		j.int("count", int64(b.NumRecords()))
		j.int("baseSequence", int64(b.BaseSequence()))
		j.int("lastSequence", int64(b.LastSequence()))
		j.int("producerId", b.ProducerID())
		j.int("producerEpoch", int64(b.ProducerEpoch()))
		j.int("partitionLeaderEpoch", int64(b.PartitionLeaderEpoch()))
		j.bool("isTransactional", b.IsTransactional())
		j.bool("isControl", b.IsControl())
		if ms, ok := b.DeleteHorizonMs(); ok {
			j.int("deleteHorizonMs", ms)
		} else {
			j.null("deleteHorizonMs")
		}
		j.int("position", int64(pos))
		j.str("timestampType", b.TimestampType().String())
		j.int("maxTimestamp", b.MaxTimestamp())
		j.int("size", int64(len(b)))
		j.int("magic", int64(b.Magic()))
		j.str("compresscodec", b.Codec().String())
		j.uint("crc", uint64(b.CRC()))
		j.bool("isvalid", valid)
		l.emit(j.done())
		return
	}
	ms, hasMs := b.DeleteHorizonMs()
	s := l.line[:0]
	s = append(s, "baseOffset: "...)
	s = strconv.AppendInt(s, b.BaseOffset(), 10)
	s = append(s, " lastOffset: "...)
	s = strconv.AppendInt(s, b.LastOffset(), 10)
	s = append(s, " count: "...)
	s = strconv.AppendInt(s, int64(b.NumRecords()), 10)
	s = append(s, " baseSequence: "...)
	s = strconv.AppendInt(s, int64(b.BaseSequence()), 10)
	s = append(s, " lastSequence: "...)
	s = strconv.AppendInt(s, int64(b.LastSequence()), 10)
	s = append(s, " producerId: "...)
	s = strconv.AppendInt(s, b.ProducerID(), 10)
	s = append(s, " producerEpoch: "...)
	s = strconv.AppendInt(s, int64(b.ProducerEpoch()), 10)
	s = append(s, " partitionLeaderEpoch: "...)
	s = strconv.AppendInt(s, int64(b.PartitionLeaderEpoch()), 10)
	s = append(s, " isTransactional: "...)
	s = strconv.AppendBool(s, b.IsTransactional())
	s = append(s, " isControl: "...)
	s = strconv.AppendBool(s, b.IsControl())
	s = append(s, " deleteHorizonMs: "...)
	s = appendOptionalLong(s, ms, hasMs)
	s = l.appendBatchTail(s, pos, b.TimestampType(), b.MaxTimestamp(), len(b), b.Magic(), b.Codec(), b.CRC(), valid)
	l.line = s
	l.d.out.Write(s)
}

// appendBatchTail is the part of the batch line shared by all magics.
func (l *logDump) appendBatchTail(s []byte, pos int, tt record.TimestampType, maxTs int64, size int, magic int8, codec record.Codec, crc uint32, valid bool) []byte {
	s = append(s, " position: "...)
	s = strconv.AppendInt(s, int64(pos), 10)
	s = append(s, ' ')
	s = append(s, tt.String()...)
	s = append(s, ": "...)
	s = strconv.AppendInt(s, maxTs, 10)
	s = append(s, " size: "...)
	s = strconv.AppendInt(s, int64(size), 10)
	s = append(s, " magic: "...)
	s = strconv.AppendInt(s, int64(magic), 10)
	s = append(s, " compresscodec: "...)
	s = append(s, codec.String()...)
	s = append(s, " crc: "...)
	s = strconv.AppendUint(s, uint64(crc), 10)
	s = append(s, " isvalid: "...)
	s = strconv.AppendBool(s, valid)
	return append(s, '\n')
}

// appendOptionalLong prints like java.util.OptionalLong.toString.
func appendOptionalLong(s []byte, v int64, ok bool) []byte {
	if !ok {
		return append(s, "OptionalLong.empty"...)
	}
	s = append(s, "OptionalLong["...)
	s = strconv.AppendInt(s, v, 10)
	return append(s, ']')
}

// trackOffset feeds the non-consecutive offsets report.
func (l *logDump) trackOffset(off int64) {
	if l.lastOffset != -1 && off != l.lastOffset+1 {
		l.d.nonConsecutive = addPair(l.d.nonConsecutive, l.f.path, l.lastOffset, off)
	}
	l.lastOffset = off
}

// recordLine is what a record line shows, for every magic.
type recordLine struct {
	offset     int64
	tsType     record.TimestampType
	timestamp  int64
	key, value []byte
	// v2 only
	v2         bool
	sequence   int32
	headerKeys []string
	// magic 0/1 only
	legacy      bool
	legacyValid bool
	legacyCRC   uint32
	// control records
	control     bool
	marker      *record.EndTxnMarker // ABORT and COMMIT markers
	controlName string               // ControlRecordType name: COMMIT, LEADER_CHANGE, UNKNOWN…
	controlID   int16
}

// record prints one record of a v2 batch.
func (l *logDump) record(b record.Batch, r *record.Record) error {
	rl := recordLine{
		offset:    r.Offset(b),
		tsType:    b.TimestampType(),
		timestamp: r.Timestamp(b),
		key:       r.Key,
		value:     r.Value,
		v2:        true,
		sequence:  r.Sequence(b),
	}
	rl.headerKeys = make([]string, len(r.Headers))
	for i, h := range r.Headers {
		rl.headerKeys[i] = h.Key
	}
	if b.IsControl() {
		rl.control = true
		if !l.d.opts.SkipRecordMetadata {
			ct, err := record.ParseControlKey(r.Key)
			if err != nil {
				return fmt.Errorf("record at offset %d: invalid control record key: %s", rl.offset, reason(err))
			}
			// Kafka prints the raw type id, also for types it calls UNKNOWN.
			rl.controlName, rl.controlID = ct.String(), int16(be32(r.Key)&0xffff)
			if ct.IsTxnMarker() {
				m, err := record.ParseEndTxnMarker(r.Value)
				if err != nil {
					return fmt.Errorf("record at offset %d: invalid end transaction marker: %s", rl.offset, reason(err))
				}
				rl.marker = &m
			}
		}
	}
	l.trackOffset(rl.offset)
	l.printRecord(&rl)
	return nil
}

// printRecord writes a record line exactly as DumpLogSegments builds it,
// including its quirks: the legacy "crc: N}" stray brace, and, with
// --skip-record-metadata and a null key, a line that starts with " payload:"
// because the "| " prefix is only printed together with the first field.
func (l *logDump) printRecord(rl *recordLine) {
	o := l.d.opts
	if o.JSON {
		l.printRecordJSON(rl)
		return
	}
	s := l.line[:0]
	prefix := "| "
	if !o.SkipRecordMetadata {
		s = append(s, "| offset: "...)
		s = strconv.AppendInt(s, rl.offset, 10)
		s = append(s, ' ')
		s = append(s, rl.tsType.String()...)
		s = append(s, ": "...)
		s = strconv.AppendInt(s, rl.timestamp, 10)
		s = append(s, " keySize: "...)
		s = strconv.AppendInt(s, int64(size(rl.key)), 10)
		s = append(s, " valueSize: "...)
		s = strconv.AppendInt(s, int64(size(rl.value)), 10)
		prefix = " "
		if rl.v2 {
			s = append(s, " sequence: "...)
			s = strconv.AppendInt(s, int64(rl.sequence), 10)
			s = append(s, " headerKeys: ["...)
			s = append(s, strings.Join(rl.headerKeys, ",")...)
			s = append(s, ']')
		}
		if rl.legacy {
			s = append(s, " isValid: "...)
			s = strconv.AppendBool(s, rl.legacyValid)
			s = append(s, " crc: "...)
			s = strconv.AppendUint(s, uint64(rl.legacyCRC), 10)
			s = append(s, '}')
		}
		if rl.control {
			if rl.marker != nil {
				s = append(s, " endTxnMarker: "...)
				s = append(s, rl.controlName...)
				s = append(s, " coordinatorEpoch: "...)
				s = strconv.AppendInt(s, int64(rl.marker.CoordinatorEpoch), 10)
			} else {
				s = append(s, " controlType: "...)
				s = append(s, rl.controlName...)
				s = append(s, '(')
				s = strconv.AppendInt(s, int64(rl.controlID), 10)
				s = append(s, ')')
			}
		}
	}
	if o.printData() && !rl.control {
		key, payload, hasKey, hasPayload := l.parseData(rl)
		if hasKey {
			s = append(s, prefix...)
			s = append(s, "key: "...)
			s = append(s, key...)
		}
		if hasPayload {
			s = append(s, " payload: "...)
			s = append(s, payload...)
		}
	}
	s = append(s, '\n')
	l.line = s
	l.d.out.Write(s)
}

// parseData renders key and payload: Java's StringDecoder (UTF-8 with
// replacement) or, with --offsets-decoder, the __consumer_offsets JSON.
func (l *logDump) parseData(rl *recordLine) (key, payload string, hasKey, hasPayload bool) {
	if l.d.opts.OffsetsDecoder {
		k, v, hasV := formatOffsetsRecord(rl.offset, rl.key, rl.value)
		return k, v, true, hasV
	}
	if rl.key != nil {
		key, hasKey = javaString(rl.key), true
	}
	if rl.value != nil {
		payload, hasPayload = javaString(rl.value), true
	}
	return
}

func (l *logDump) printRecordJSON(rl *recordLine) {
	o := l.d.opts
	var j jsonObj
	j.str("file", l.f.name)
	j.str("type", "record")
	j.int("offset", rl.offset)
	if !o.SkipRecordMetadata {
		j.str("timestampType", rl.tsType.String())
		j.int("timestamp", rl.timestamp)
		j.int("keySize", int64(size(rl.key)))
		j.int("valueSize", int64(size(rl.value)))
		if rl.v2 {
			j.int("sequence", int64(rl.sequence))
			j.strs("headerKeys", rl.headerKeys)
		}
		if rl.legacy {
			j.bool("isValid", rl.legacyValid)
			j.uint("crc", uint64(rl.legacyCRC))
		}
		if rl.control {
			if rl.marker != nil {
				j.str("endTxnMarker", rl.controlName)
				j.int("coordinatorEpoch", int64(rl.marker.CoordinatorEpoch))
			} else {
				j.str("controlType", rl.controlName)
				j.int("controlTypeId", int64(rl.controlID))
			}
		}
	}
	if o.printData() && !rl.control {
		if o.OffsetsDecoder {
			k, v, hasV := formatOffsetsRecord(rl.offset, rl.key, rl.value)
			j.rawOrString("key", k)
			if hasV {
				j.rawOrString("payload", v)
			}
		} else {
			if rl.key != nil {
				j.str("key", javaString(rl.key))
			}
			if rl.value != nil {
				j.str("payload", javaString(rl.value))
			}
		}
	}
	l.emit(j.done())
}

func (l *logDump) emit(b []byte) {
	l.d.out.Write(b)
	l.d.out.WriteByte('\n')
}

func size(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}
