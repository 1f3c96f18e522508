package inspect

import (
	"strconv"

	"github.com/qk-project/qk/broker/log/checkpoint"
)

// dumpProducerSnapshot prints a producer-state snapshot (<offset>.snapshot)
// one line per producer, as Kafka 3.x's tool does:
//
//	producerId: 4001 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1670068129797 firstSequence: 9 lastSequence: 11 lastOffset: 11 offsetDelta: 2 timestamp: 1670068129797
//
// The part from firstSequence on is the producer's last batch, which Kafka
// keeps only when lastOffset >= 0; without it the line ends in a space after
// lastTimestamp, as Kafka's does. Kafka prints a corrupt snapshot's error
// and exits 0; qk fails, since a damaged snapshot makes the broker rebuild
// producer state from the log.
func (d *Dumper) dumpProducerSnapshot(f file) {
	data, ok := d.readOrProblem(f, 0)
	if !ok {
		return
	}
	entries, err := checkpoint.DecodeProducerSnapshot(data)
	if err != nil {
		d.problem(f, "corrupt producer snapshot %s: %s", f.name, checkpointReason(err))
		return
	}
	var s []byte
	for _, e := range entries {
		hasBatch := e.LastOffset >= 0
		if d.opts.JSON {
			var j jsonObj
			j.str("file", f.name)
			j.str("type", "producerSnapshotEntry")
			j.int("producerId", e.ProducerID)
			j.int("producerEpoch", int64(e.ProducerEpoch))
			j.int("coordinatorEpoch", int64(e.CoordinatorEpoch))
			if e.CurrentTxnFirstOffset >= 0 {
				j.int("currentTxnFirstOffset", e.CurrentTxnFirstOffset)
			} else {
				j.null("currentTxnFirstOffset")
			}
			j.int("lastTimestamp", e.Timestamp)
			if hasBatch {
				j.int("firstSequence", int64(e.FirstSequence()))
				j.int("lastSequence", int64(e.LastSequence))
				j.int("lastOffset", e.LastOffset)
				j.int("offsetDelta", int64(e.OffsetDelta))
				j.int("timestamp", e.Timestamp)
			}
			d.out.Write(append(j.done(), '\n'))
			continue
		}
		s = append(s[:0], "producerId: "...)
		s = strconv.AppendInt(s, e.ProducerID, 10)
		s = append(s, " producerEpoch: "...)
		s = strconv.AppendInt(s, int64(e.ProducerEpoch), 10)
		s = append(s, " coordinatorEpoch: "...)
		s = strconv.AppendInt(s, int64(e.CoordinatorEpoch), 10)
		s = append(s, " currentTxnFirstOffset: "...)
		s = appendOptionalLong(s, e.CurrentTxnFirstOffset, e.CurrentTxnFirstOffset >= 0)
		s = append(s, " lastTimestamp: "...)
		s = strconv.AppendInt(s, e.Timestamp, 10)
		s = append(s, ' ')
		if hasBatch {
			s = append(s, "firstSequence: "...)
			s = strconv.AppendInt(s, int64(e.FirstSequence()), 10)
			s = append(s, " lastSequence: "...)
			s = strconv.AppendInt(s, int64(e.LastSequence), 10)
			s = append(s, " lastOffset: "...)
			s = strconv.AppendInt(s, e.LastOffset, 10)
			s = append(s, " offsetDelta: "...)
			s = strconv.AppendInt(s, int64(e.OffsetDelta), 10)
			s = append(s, " timestamp: "...)
			s = strconv.AppendInt(s, e.Timestamp, 10)
		}
		s = append(s, '\n')
		d.out.Write(s)
	}
}
