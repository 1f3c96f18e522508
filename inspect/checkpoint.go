package inspect

import (
	"cmp"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/qk-project/qk/broker/log/checkpoint"
)

// Kafka's dump tool ignores the log-directory files; qk dumps them because
// "what recovery point did the broker checkpoint?" is a common question
// when a dump of a segment is needed at all. The line formats are qk's
// own, in the "name: value" style of the other dumps (see doc.go).
var offsetCheckpointNames = map[string]bool{
	checkpoint.RecoveryPointFile:     true,
	checkpoint.ReplicationOffsetFile: true,
	checkpoint.LogStartOffsetFile:    true,
	checkpoint.CleanerOffsetFile:     true,
}

const (
	leaderEpochCheckpointName = checkpoint.LeaderEpochFile
	partitionMetadataName     = checkpoint.PartitionMetadataFile
	metaPropertiesName        = checkpoint.MetaPropertiesFile
)

// checkpointProblem reports a checkpoint that cannot be read.
func (d *Dumper) checkpointProblem(f file, err error) {
	if isNotExist(err) {
		d.problem(f, "%s: no such file", f.path)
		return
	}
	d.problem(f, "corrupt %s: %s", f.name, checkpointReason(err))
}

// checkpointReason is a checkpoint decoding error without the package
// prefix and the path, which the problem line already names:
// "line 4: malformed: partition "x" is not an int32".
func checkpointReason(err error) string {
	var ce *checkpoint.CorruptError
	if !errors.As(err, &ce) || ce.Err == nil {
		return err.Error()
	}
	s := strings.TrimPrefix(ce.Err.Error(), "checkpoint: ")
	if ce.Detail != "" {
		s += ": " + ce.Detail
	}
	if ce.Line > 0 {
		s = "line " + strconv.Itoa(ce.Line) + ": " + s
	}
	return s
}

// dumpOffsetCheckpoint prints one "topic: T partition: P offset: O" line
// per entry, sorted by topic and partition: Kafka writes the entries in
// hash-map order, so file order carries no meaning, and sorting makes two
// brokers' files comparable with diff.
func (d *Dumper) dumpOffsetCheckpoint(f file) {
	m, err := checkpoint.ReadOffsets(d.fsys, f.path)
	if err != nil {
		d.checkpointProblem(f, err)
		return
	}
	if len(m) == 0 {
		d.indexEmpty(f)
		return
	}
	tps := make([]checkpoint.TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b checkpoint.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, tp := range tps {
		if d.opts.JSON {
			var j jsonObj
			j.str("file", f.name)
			j.str("type", "checkpointEntry")
			j.str("topic", tp.Topic)
			j.int("partition", int64(tp.Partition))
			j.int("offset", m[tp])
			d.out.Write(append(j.done(), '\n'))
			continue
		}
		d.printf("topic: %s partition: %d offset: %d\n", tp.Topic, tp.Partition, m[tp])
	}
}

// dumpLeaderEpochCheckpoint prints "epoch: E startOffset: S" per entry, in
// file order (ascending epochs).
func (d *Dumper) dumpLeaderEpochCheckpoint(f file) {
	entries, err := checkpoint.ReadLeaderEpochs(d.fsys, f.path)
	if err != nil {
		d.checkpointProblem(f, err)
		return
	}
	if len(entries) == 0 {
		d.indexEmpty(f)
		return
	}
	for _, e := range entries {
		if d.opts.JSON {
			var j jsonObj
			j.str("file", f.name)
			j.str("type", "leaderEpochEntry")
			j.int("epoch", int64(e.Epoch))
			j.int("startOffset", e.StartOffset)
			d.out.Write(append(j.done(), '\n'))
			continue
		}
		d.printf("epoch: %d startOffset: %d\n", e.Epoch, e.StartOffset)
	}
}

// dumpPartitionMetadata prints "topicId: <id>" in Kafka's URL-safe base64
// form. An empty file (Kafka 2.8 created it before it knew the ID) is
// "is empty.", not damage.
func (d *Dumper) dumpPartitionMetadata(f file) {
	id, err := checkpoint.ReadPartitionMetadata(d.fsys, f.dir)
	if errors.Is(err, checkpoint.ErrNoTopicID) {
		d.indexEmpty(f)
		return
	}
	if err != nil {
		d.checkpointProblem(f, err)
		return
	}
	s := base64.RawURLEncoding.EncodeToString(id[:])
	if d.opts.JSON {
		var j jsonObj
		j.str("file", f.name)
		j.str("type", "partitionMetadata")
		j.str("topicId", s)
		d.out.Write(append(j.done(), '\n'))
		return
	}
	d.printf("topicId: %s\n", s)
}

// dumpMetaProperties prints the log directory's identity with Kafka's
// property names: "version: 0 broker.id: 1 cluster.id: …" (ZooKeeper
// mode) or "version: 1 node.id: 1 cluster.id: … directory.id: …" (KRaft).
func (d *Dumper) dumpMetaProperties(f file) {
	mp, err := checkpoint.ReadMetaProperties(d.fsys, f.dir)
	if err != nil {
		d.checkpointProblem(f, err)
		return
	}
	idKey, idJSON := "broker.id", "brokerId"
	if mp.Version == checkpoint.MetaVersionKRaft {
		idKey, idJSON = "node.id", "nodeId"
	}
	if d.opts.JSON {
		var j jsonObj
		j.str("file", f.name)
		j.str("type", "metaProperties")
		j.int("version", int64(mp.Version))
		j.int(idJSON, int64(mp.BrokerID))
		if mp.ClusterID != "" {
			j.str("clusterId", mp.ClusterID)
		}
		if mp.DirectoryID != "" {
			j.str("directoryId", mp.DirectoryID)
		}
		d.out.Write(append(j.done(), '\n'))
		return
	}
	d.printf("version: %d %s: %d", mp.Version, idKey, mp.BrokerID)
	if mp.ClusterID != "" {
		d.printf(" cluster.id: %s", mp.ClusterID)
	}
	if mp.DirectoryID != "" {
		d.printf(" directory.id: %s", mp.DirectoryID)
	}
	d.printf("\n")
}

// dumpCleanShutdown prints the broker epoch a .kafka_cleanshutdown marker
// records: -1 for the empty file Kafka 3.6 and earlier write.
func (d *Dumper) dumpCleanShutdown(f file) {
	_, epoch, err := checkpoint.ReadCleanShutdown(d.fsys, f.dir)
	if err != nil {
		d.checkpointProblem(f, err)
		return
	}
	if d.opts.JSON {
		var j jsonObj
		j.str("file", f.name)
		j.str("type", "cleanShutdown")
		j.int("brokerEpoch", epoch)
		d.out.Write(append(j.done(), '\n'))
		return
	}
	d.printf("brokerEpoch: %d\n", epoch)
}
