//go:build linux

package httpapi_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/vfs"
)

// TestLogDirMetrics: with two log dirs, both online and a usage warning
// threshold of 1% (every real file system is fuller), the usage gauges
// show each dir above it and no offline dir; once an ENOSPC takes the
// second dir offline, Kafka's offline log directory count is 1, its
// LogDirectoryOffline is 1 and it has no usage figure any more.
func TestLogDirMetrics(t *testing.T) {
	fault := vfs.NewFaulty(vfs.OS, nil)
	b := brokertest.StartBroker(t, brokertest.WithLogDirs(2), brokertest.WithLogFS(fault),
		brokertest.WithConfig("qk.log.dir.usage.warn.percent", "1"), brokertest.WithConfig("num.partitions", "2"))
	d0, d1 := b.Dirs[0], b.Dirs[1]
	var fams = scrape(t, b)
	waitFor(t, 10*time.Second, "the usage of both dirs", func() bool {
		fams = scrape(t, b)
		_, ok0 := value(fams, "qk_log_dir_used_percent", "dir", d0)
		_, ok1 := value(fams, "qk_log_dir_used_percent", "dir", d1)
		return ok0 && ok1
	})
	for _, d := range b.Dirs {
		used := mustValue(t, fams, "qk_log_dir_used_percent", "dir", d)
		require.Greater(t, used, 1.0)
		require.LessOrEqual(t, used, 100.0)
		require.Equal(t, 1.0, mustValue(t, fams, "qk_log_dir_usage_warning", "dir", d))
		require.Equal(t, 0.0, mustValue(t, fams, "kafka_log_logmanager_logdirectoryoffline", "logDirectory", d))
	}
	require.Equal(t, 0.0, mustValue(t, fams, "kafka_log_logmanager_offlinelogdirectorycount"))

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("m"), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(2*time.Second))
	require.NoError(t, err)
	defer cl.Close()
	// Two partitions: one in each dir.
	fault.SetInjector(vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && strings.HasPrefix(path, d1+"/") && strings.HasSuffix(path, ".log") {
			return syscall.ENOSPC
		}
		return nil
	}))
	ctx := testCtx(t)
	for p := range int32(2) {
		cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("x")}) // one fails: the dir in d1
	}
	waitFor(t, 10*time.Second, "the offline dir in the metrics", func() bool {
		fams = scrape(t, b)
		v, ok := value(fams, "kafka_log_logmanager_offlinelogdirectorycount")
		return ok && v == 1
	})
	require.Equal(t, 1.0, mustValue(t, fams, "kafka_log_logmanager_logdirectoryoffline", "logDirectory", d1))
	require.Equal(t, 0.0, mustValue(t, fams, "kafka_log_logmanager_logdirectoryoffline", "logDirectory", d0))
	_, ok := value(fams, "qk_log_dir_used_percent", "dir", d1)
	require.False(t, ok, "an offline dir has a usage figure")
}
