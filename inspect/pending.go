package inspect

func (d *Dumper) dumpProducerSnapshot(f file) {
	d.warn("producer snapshots are not decoded yet: %s", f.name)
}
func (d *Dumper) dumpMetaProperties(f file) { d.warn("meta.properties is not decoded yet: %s", f.name) }
