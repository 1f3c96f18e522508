//go:build linux

package broker_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker"
	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/config"
)

// TestRestartKeepsEverything: after a clean restart the broker has the
// same cluster id, topics (with their ids), configs, data and idempotent
// producer state.
func TestRestartKeepsEverything(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "keep", 1, map[string]*string{"retention.ms": ptr("123456789")})
	cl := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("keep"))
	for i := range 20 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	c := dialRaw(t, b.Addr)
	pid := initProducerID(t, c)
	first := rawProduce(t, c, "keep", idempotentBatch(t, pid, 0, 2))
	require.Equal(t, int16(0), first.ErrorCode)
	last := rawProduce(t, c, "keep", idempotentBatch(t, pid, 2, 2))
	require.Equal(t, int16(0), last.ErrorCode)
	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	id := topics["keep"].ID
	cluster := b.ClusterID()

	b.Restart()
	require.FileExists(t, filepath.Join(b.Dir, "meta.properties"))
	require.Equal(t, cluster, b.ClusterID())

	adm = newAdmin(t, b.Addr)
	topics, err = adm.ListTopics(ctx)
	require.NoError(t, err)
	require.Equal(t, id, topics["keep"].ID, "topic id kept")
	rc, err := adm.DescribeTopicConfigs(ctx, "keep")
	require.NoError(t, err)
	found := false
	for _, cfg := range rc[0].Configs {
		if cfg.Key == "retention.ms" {
			found = true
			require.Equal(t, "123456789", *cfg.Value)
			require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, cfg.Source)
		}
	}
	require.True(t, found)
	require.Equal(t, int64(123456789), partitionLog(t, b, "keep", 0).Config().RetentionMs, "config applied to the reopened log")

	got := consume(t, []string{b.Addr}, "keep", 24)
	require.Len(t, got, 24)
	for i := range 20 {
		require.Equal(t, []byte{byte(i)}, got[i].Value)
	}

	// The producer's state came back: its last batch is a duplicate, the
	// next sequence is accepted, a gap is refused.
	c = dialRaw(t, b.Addr)
	dup := rawProduce(t, c, "keep", idempotentBatch(t, pid, 2, 2))
	require.Equal(t, int16(0), dup.ErrorCode)
	require.Equal(t, last.BaseOffset, dup.BaseOffset)
	next := rawProduce(t, c, "keep", idempotentBatch(t, pid, 4, 1))
	require.Equal(t, int16(0), next.ErrorCode)
	require.Equal(t, int64(24), next.BaseOffset)
	gap := rawProduce(t, c, "keep", idempotentBatch(t, pid, 9, 1))
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, gap.ErrorCode)

	// New producer ids do not repeat the ones handed out before.
	require.Greater(t, initProducerID(t, c), pid)
}

// TestMetaProperties: the first start writes meta.properties (version 0,
// broker.id, cluster.id); a broker with another id refuses the dir.
func TestMetaProperties(t *testing.T) {
	b := brokertest.StartBroker(t)
	dir, cluster := b.Dir, b.ClusterID()
	b.Stop()
	props, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	require.NoError(t, err)
	require.Contains(t, string(props), "broker.id=0\n")
	require.Contains(t, string(props), "cluster.id="+cluster+"\n")
	require.Contains(t, string(props), "version=0\n")

	cfg, _, err := config.Load(config.LoadOptions{Sets: []string{"broker.id=1", "log.dirs=" + dir, "listeners=PLAINTEXT://127.0.0.1:0", "qk.http.listener=127.0.0.1:0"}})
	require.NoError(t, err)
	_, err = broker.New(cfg)
	require.ErrorIs(t, err, broker.ErrMetaProperties)

	// No ZooKeeper at zookeeper.connect: a clear error within
	// zookeeper.connection.timeout.ms.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nobody := ln.Addr().String()
	ln.Close()
	cfg, _, err = config.Load(config.LoadOptions{Sets: []string{"zookeeper.connect=" + nobody + "/qk",
		"zookeeper.connection.timeout.ms=300", "log.dirs=" + t.TempDir()}})
	require.NoError(t, err)
	_, err = broker.New(cfg)
	require.ErrorContains(t, err, "no ZooKeeper session with "+nobody+" within zookeeper.connection.timeout.ms (300ms)")
}

// TestLogDirLocked: a second broker on a log dir in use is refused, and
// the first keeps working; after the first stops the dir can be used.
func TestLogDirLocked(t *testing.T) {
	b := brokertest.StartBroker(t)
	cfg, _, err := config.Load(config.LoadOptions{Sets: []string{"log.dirs=" + b.Dir, "listeners=PLAINTEXT://127.0.0.1:0", "qk.http.listener=127.0.0.1:0"}})
	require.NoError(t, err)
	_, err = broker.New(cfg)
	require.ErrorIs(t, err, broker.ErrDirLocked)
	require.ErrorContains(t, err, ".lock")
	createTopic(t, newAdmin(t, b.Addr), "still-fine", 1, nil)

	b.Stop()
	s, err := broker.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Close(t.Context()))
}
