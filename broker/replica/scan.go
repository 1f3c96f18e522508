package replica

import (
	"fmt"
	"slices"

	"github.com/qk-project/qk/broker/record"
)

// ScanLog calls fn for every batch of the partition's log from offset
// from to the log end, in order, reading about a megabyte at a time: how
// the group and transaction coordinators load their state when they gain
// leadership of an internal partition. A batch may start below from (the
// one holding it): fn skips what it does not want. fn must not keep the
// batch after it returns; its error ends the scan.
func (p *Partition) ScanLog(from int64, fn func(b record.Batch) error) error {
	l := p.Log()
	offset := max(from, l.LogStartOffset())
	var buf []byte
	for offset < l.LogEndOffset() {
		info, err := l.Read(offset, 1<<20, -1)
		if err != nil {
			return err
		}
		if info.Region.Length == 0 {
			return nil
		}
		buf = slices.Grow(buf[:0], int(info.Region.Length))[:info.Region.Length]
		if _, err := info.Region.File.ReadAt(buf, info.Region.Position); err != nil {
			return fmt.Errorf("read %s-%d at %d: %w", p.topic, p.index, offset, err)
		}
		it := record.NewIterator(buf)
		next := offset
		for it.Next() {
			e := it.Entry()
			if e.Batch == nil {
				continue
			}
			next = e.Batch.NextOffset()
			if err := fn(e.Batch); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		if next <= offset {
			return nil
		}
		offset = next
	}
	return nil
}
