//go:build linux

package broker_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// TestOfflinePartition: a partition whose log cannot be created (here a
// file stands where its directory must go) is not taken for served. The
// CreateTopics that made it fails with KAFKA_STORAGE_ERROR and the cause;
// Metadata lists the broker among its offline replicas with
// KAFKA_STORAGE_ERROR; Produce to it gets KAFKA_STORAGE_ERROR; the other
// partitions of the topic work. Once the obstacle is gone, a restart
// hosts it (as a Kafka broker brings a failed log dir back).
func TestOfflinePartition(t *testing.T) {
	b := brokertest.StartBroker(t)
	require.NoError(t, os.WriteFile(filepath.Join(b.Dir, "blocked-1"), []byte("not a directory"), 0o644))
	c := dialRaw(t, b.Addr)

	resp := rawCreateTopics(t, c, false, topicReq("blocked", 3, 1, nil))
	require.Equal(t, kerr.KafkaStorageError.Code, resp[0].ErrorCode, "CreateTopics of a partition that cannot be hosted")
	require.NotNil(t, resp[0].ErrorMessage)
	require.Contains(t, *resp[0].ErrorMessage, "topic blocked was created, but 1 of its 3 partitions are offline on broker 0")
	require.Contains(t, *resp[0].ErrorMessage, "blocked-1")

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12 // offline replicas from v5
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("blocked")
	md.Topics = append(md.Topics, mt)
	mresp := kmsg.NewPtrMetadataResponse()
	c.roundTrip(md, mresp)
	require.Len(t, mresp.Topics, 1)
	parts := mresp.Topics[0].Partitions
	require.Len(t, parts, 3)
	for _, p := range parts {
		if p.Partition == 1 {
			require.Equal(t, kerr.KafkaStorageError.Code, p.ErrorCode)
			require.Equal(t, []int32{0}, p.OfflineReplicas)
		} else {
			require.Zero(t, p.ErrorCode, "partition %d", p.Partition)
			require.Empty(t, p.OfflineReplicas)
		}
	}

	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("blocked"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(2*time.Second))
	err := cl.ProduceSync(testCtx(t), &kgo.Record{Partition: 1, Value: []byte("x")}).FirstErr()
	require.ErrorIs(t, err, kerr.KafkaStorageError)
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Partition: 0, Value: []byte("y")}).FirstErr())

	// The obstacle removed, a restart hosts it: the controller gives the
	// restarted broker its partitions again.
	require.NoError(t, os.Remove(filepath.Join(b.Dir, "blocked-1")))
	b.Restart()
	waitFor(t, 10*time.Second, "partition 1 hosted", func() bool {
		_, err := b.Server.Replicas().Partition("blocked", 1)
		return err == nil
	})
	cl2 := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("blocked"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, cl2.ProduceSync(testCtx(t), &kgo.Record{Partition: 1, Value: []byte("z")}).FirstErr())
}
