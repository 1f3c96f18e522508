package api

import (
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/qk-project/qk/broker/security/acl"
)

// DescribeLogDirs: v0-5
//
// Behavior:
// * Every log dir of the broker with the hosted partitions in it (all, or
//   those asked for): size in bytes, offset lag 0 for the current replica
//   (as Kafka's, the high watermark minus the log end offset, never
//   below 0)
// * Future replicas (a move between log dirs, AlterReplicaLogDirs) in
//   their destination dir: is_future, offset lag = the current replica's
//   log end offset minus the future one's
// * An offline log dir (KIP-112): KAFKA_STORAGE_ERROR, no partitions, no
//   bytes, as Kafka answers it
// * v4: total and usable bytes of the dir's file system (statfs)
// * v5: cordoned (KIP-1066): never, qk does not cordon log dirs
//
// Version notes:
// * v1: no change; v2: flexible; v3: top-level error code; v4: bytes;
//   v5: is_cordoned

func (h *Handler) handleDescribeLogDirs(c *call) {
	req := c.req.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	// DESCRIBE on the cluster; refused: the error (v3+), no directories.
	if !c.authorizeCluster(acl.Describe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		c.respond(resp)
		return
	}
	want := func(topic string, partition int32) bool {
		if req.Topics == nil {
			return true
		}
		for _, t := range req.Topics {
			if t.Topic == topic && slices.Contains(t.Partitions, partition) {
				return true
			}
		}
		return false
	}
	parts := h.cfg.Replicas.Partitions()
	var futures []futureReplica
	for _, dir := range h.cfg.LogDirs {
		d := kmsg.NewDescribeLogDirsResponseDir()
		d.Dir = dir
		if h.cfg.LogDirError != nil && h.cfg.LogDirError(dir) != nil {
			d.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, d)
			continue
		}
		if c.version >= 4 {
			var st unix.Statfs_t
			if err := unix.Statfs(dir, &st); err == nil {
				d.TotalBytes = int64(st.Blocks) * st.Bsize
				d.UsableBytes = int64(st.Bavail) * st.Bsize
			}
		}
		byTopic := map[string]int{}
		for _, p := range parts {
			if filepath.Dir(p.Log().Dir()) != filepath.Clean(dir) || !want(p.Topic(), p.Index()) {
				continue
			}
			i, ok := byTopic[p.Topic()]
			if !ok {
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = p.Topic()
				d.Topics = append(d.Topics, t)
				i = len(d.Topics) - 1
				byTopic[p.Topic()] = i
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p.Index()
			dp.Size = p.Log().Size()
			dp.OffsetLag = max(p.HighWatermark()-p.Log().LogEndOffset(), 0)
			d.Topics[i].Partitions = append(d.Topics[i].Partitions, dp)
			if h.cfg.FutureLog == nil {
				continue
			}
			if fl, fdir, ok := h.cfg.FutureLog(p.Topic(), p.Index()); ok {
				futures = append(futures, futureReplica{dir: fdir, topic: p.Topic(), partition: p.Index(),
					size: fl.Size(), lag: max(p.Log().LogEndOffset()-fl.LogEndOffset(), 0)})
			}
		}
		resp.Dirs = append(resp.Dirs, d)
	}
	for _, f := range futures {
		for i := range resp.Dirs {
			d := &resp.Dirs[i]
			if filepath.Clean(d.Dir) != f.dir || d.ErrorCode != 0 {
				continue
			}
			ti := slices.IndexFunc(d.Topics, func(t kmsg.DescribeLogDirsResponseDirTopic) bool { return t.Topic == f.topic })
			if ti < 0 {
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = f.topic
				d.Topics = append(d.Topics, t)
				ti = len(d.Topics) - 1
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size, dp.OffsetLag, dp.IsFuture = f.partition, f.size, f.lag, true
			d.Topics[ti].Partitions = append(d.Topics[ti].Partitions, dp)
		}
	}
	c.respond(resp)
}

// futureReplica is a future replica DescribeLogDirs lists.
type futureReplica struct {
	dir, topic string
	partition  int32
	size, lag  int64
}
