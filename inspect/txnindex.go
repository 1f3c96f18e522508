package inspect

import (
	"encoding/binary"
)

// abortedTxnSize is the size of one .txnindex entry (AbortedTxn): version
// int16, producerId int64, firstOffset int64, lastOffset int64,
// lastStableOffset int64.
const abortedTxnSize = 34

// dumpTxnIndex prints a transaction index, one line per aborted
// transaction, as Kafka's tool does. The file is never preallocated, so a
// length that is not a multiple of 34 is damage (Kafka: "Unexpected end of
// transaction index"), and so is an entry version above 0.
func (d *Dumper) dumpTxnIndex(f file) {
	data, ok := d.readOrProblem(f, 0)
	if !ok {
		return
	}
	for pos := 0; pos+abortedTxnSize <= len(data); pos += abortedTxnSize {
		e := data[pos:]
		version := int16(binary.BigEndian.Uint16(e))
		pid := int64(binary.BigEndian.Uint64(e[2:]))
		first := int64(binary.BigEndian.Uint64(e[10:]))
		last := int64(binary.BigEndian.Uint64(e[18:]))
		lso := int64(binary.BigEndian.Uint64(e[26:]))
		if version > 0 {
			d.problem(f, "corrupt transaction index %s: entry at position %d has version %d, only 0 is defined", f.name, pos, version)
			return
		}
		if d.opts.JSON {
			var j jsonObj
			j.str("file", f.name)
			j.str("type", "abortedTxn")
			j.int("version", int64(version))
			j.int("producerId", pid)
			j.int("firstOffset", first)
			j.int("lastOffset", last)
			j.int("lastStableOffset", lso)
			d.out.Write(append(j.done(), '\n'))
			continue
		}
		d.printf("version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n", version, pid, first, last, lso)
	}
	if rest := len(data) % abortedTxnSize; rest != 0 {
		d.problem(f, "corrupt transaction index %s: %d trailing bytes at position %d, entries are %d bytes", f.name, rest, len(data)-rest, abortedTxnSize)
	}
}
