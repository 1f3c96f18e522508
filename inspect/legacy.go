package inspect

import (
	"strconv"

	"github.com/qk-project/qk/broker/record"
)

// legacy prints one magic 0/1 message ("batch" in Kafka's reader: either a
// plain message or a compressed wrapper) and, deep, the messages in it.
func (l *logDump) legacy(pos int, raw []byte, mp *record.LegacyMessage) bool {
	d, f := l.d, l.f
	m := *mp
	valid := m.IsValid()
	if !valid {
		l.badCRC++
	}
	tt, maxTs := legacyTimestampType(&m), m.Timestamp
	if m.Magic == record.MagicV0 {
		maxTs = -1 // RecordBatch.NO_TIMESTAMP
	}
	if d.opts.JSON {
		var j jsonObj
		j.str("file", f.name)
		j.str("type", "batch")
		j.int("offset", m.Offset)
		j.int("position", int64(pos))
		j.str("timestampType", tt.String())
		j.int("maxTimestamp", maxTs)
		j.int("size", int64(len(raw)))
		j.int("magic", int64(m.Magic))
		j.str("compresscodec", m.Codec().String())
		j.uint("crc", uint64(m.CRC))
		j.bool("isvalid", valid)
		l.emit(j.done())
	} else {
		s := append(l.line[:0], "offset: "...)
		s = strconv.AppendInt(s, m.Offset, 10)
		s = l.appendBatchTail(s, pos, tt, maxTs, len(raw), m.Magic, m.Codec(), m.CRC, valid)
		l.line = s
		d.out.Write(s)
	}
	if !d.opts.deep() {
		return true
	}
	msgs, err := m.Inner() // an uncompressed message is its own only inner one
	if err != nil {
		d.problem(f, "corrupt message at position %d of %s: %s", pos, f.name, reason(err))
		return false
	}
	for i := range msgs {
		in := &msgs[i]
		ts := in.Timestamp
		switch {
		case in.Magic == record.MagicV0:
			ts = -1
		case m.Magic == record.MagicV1 && tt == record.LogAppendTime:
			// The wrapper's append time overrides every inner timestamp.
			ts = m.Timestamp
		}
		rl := recordLine{
			offset:      in.Offset,
			tsType:      tt,
			timestamp:   ts,
			key:         in.Key,
			value:       in.Value,
			legacy:      true,
			legacyValid: in.IsValid(),
			legacyCRC:   in.CRC,
		}
		l.trackOffset(rl.offset)
		l.printRecord(&rl)
	}
	return true
}

// legacyTimestampType is the message's type as Kafka names it: magic 0 has
// none at all.
func legacyTimestampType(m *record.LegacyMessage) record.TimestampType {
	if m.Magic == record.MagicV0 {
		return record.NoTimestampType
	}
	return m.TimestampType()
}
