//go:build linux

package broker_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/qk-project/qk/broker"
	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/vfs"
)

// TestGeneratedBrokerIDs: brokers with broker.id=-1 on one metadata store
// get 1001 and 1002 from /brokers/seqid (Kafka's reserved.broker.max.id
// + the node's version), register, serve and are described under those
// ids; a restart keeps the id from meta.properties without generating
// another, and a dynamic config change does not lose it.
func TestGeneratedBrokerIDs(t *testing.T) {
	c := brokertest.StartCluster(t, 2, brokertest.WithConfig("broker.id", "-1"))
	for i, want := range []int32{1001, 1002} {
		b := c.Brokers[i]
		require.Equal(t, want, b.ID)
		require.Equal(t, want, b.Config().BrokerID)
		props, err := os.ReadFile(filepath.Join(b.Dir, "meta.properties"))
		require.NoError(t, err)
		require.Contains(t, string(props), "broker.id="+strconv.Itoa(int(want))+"\n")
		_, _, err = c.Store.Get(testCtx(t), metadata.BrokerPath(want))
		require.NoError(t, err, "registered as %d", want)
	}
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "every broker to see both", func() bool {
			return len(b.Cache().Snapshot().Brokers) == 2
		})
	}
	adm := newAdmin(t, c.Addrs()...)
	meta, err := adm.BrokerMetadata(testCtx(t))
	require.NoError(t, err)
	require.ElementsMatch(t, []int32{1001, 1002}, meta.Brokers.NodeIDs())
	rc, err := adm.DescribeBrokerConfigs(testCtx(t), 1002)
	require.NoError(t, err)
	require.NoError(t, rc[0].Err)

	first := c.Brokers[0]
	first.Restart()
	require.Equal(t, int32(1001), first.ID)
	_, seq, err := c.Store.Get(testCtx(t), metadata.BrokerSeqIDPath)
	require.NoError(t, err)
	require.Equal(t, int32(2), seq.Version, "a restart generates no id")

	// onMetadataChange rebuilds the config from the static settings, where
	// broker.id is still -1.
	_, err = newAdmin(t, first.Addr).AlterBrokerConfigs(testCtx(t), []kadm.AlterConfig{{Name: "log.retention.ms", Value: ptr("7200000")}})
	require.NoError(t, err)
	waitFor(t, 10*time.Second, "the cluster default to apply", func() bool {
		return first.Config().LogRetentionMs == 7200000
	})
	require.Equal(t, int32(1001), first.Config().BrokerID)
}

// TestBrokerIDFromMetaProperties: broker.id=-1 on dirs that already have
// one takes it, logging where it came from; a fresh broker logs the id it
// generated.
func TestBrokerIDFromMetaProperties(t *testing.T) {
	dir := t.TempDir()
	var logs syncBuffer
	s := newBroker(t, &logs, "broker.id=-1", "log.dirs="+dir)
	require.Equal(t, int32(1001), s.Config().BrokerID)
	require.NoError(t, s.Close(t.Context()))
	require.Contains(t, logs.String(), `level=INFO msg="generated broker.id" broker_id=1001`)

	logs.Reset()
	s = newBroker(t, &logs, "broker.id=-1", "log.dirs="+dir)
	require.Equal(t, int32(1001), s.Config().BrokerID)
	require.NoError(t, s.Close(t.Context()))
	require.Contains(t, logs.String(), `level=INFO msg="broker.id from meta.properties" broker_id=1001`)
	require.NotContains(t, logs.String(), "generated")

	// A configured id is stored as is and kept by a later -1.
	dir = t.TempDir()
	s = newBroker(t, nil, "broker.id=7", "log.dirs="+dir)
	require.NoError(t, s.Close(t.Context()))
	s = newBroker(t, nil, "broker.id=-1", "log.dirs="+dir)
	require.Equal(t, int32(7), s.Config().BrokerID)
	require.NoError(t, s.Close(t.Context()))
}

// TestBrokerIDMismatch: Kafka's InconsistentBrokerIdException (a
// configured id that is not the stored one) and
// InconsistentBrokerMetadataException (log dirs of different brokers).
func TestBrokerIDMismatch(t *testing.T) {
	dir := t.TempDir()
	s := newBroker(t, nil, "broker.id=-1", "log.dirs="+dir)
	require.NoError(t, s.Close(t.Context()))
	cfg := loadConfig(t, "broker.id=5", "log.dirs="+dir)
	_, err := broker.New(cfg)
	require.ErrorIs(t, err, broker.ErrMetaProperties)
	require.ErrorContains(t, err, "configured broker.id 5 doesn't match stored broker.id 1001 in meta.properties of "+dir+" (InconsistentBrokerIdException)")

	a, b := t.TempDir(), t.TempDir()
	require.NoError(t, checkpoint.WriteMetaProperties(vfs.OS, a, checkpoint.MetaProperties{Version: checkpoint.MetaVersionZK, BrokerID: 1}))
	require.NoError(t, checkpoint.WriteMetaProperties(vfs.OS, b, checkpoint.MetaProperties{Version: checkpoint.MetaVersionZK, BrokerID: 2}))
	for _, id := range []string{"-1", "1"} {
		_, err = broker.New(loadConfig(t, "broker.id="+id, "log.dirs="+a+","+b))
		require.ErrorIs(t, err, broker.ErrMetaProperties)
		require.ErrorContains(t, err, "broker.id differs across log.dirs: "+a+" has 1, "+b+" has 2 (InconsistentBrokerMetadataException)")
	}
}

// TestBrokerIDGenerationDisabled: broker.id=-1 without generation is
// refused at load; with an explicit id the broker starts and generates
// nothing.
func TestBrokerIDGenerationDisabled(t *testing.T) {
	dir := t.TempDir()
	_, _, err := config.Load(config.LoadOptions{Sets: []string{"broker.id=-1", "broker.id.generation.enable=false", "log.dirs=" + dir}})
	require.EqualError(t, err, "config: broker.id=-1 (from --set): -1 asks for a generated id, but broker.id.generation.enable=false; want an integer ≥ 0, or broker.id.generation.enable=true")

	s := newBroker(t, nil, "broker.id=5000", "broker.id.generation.enable=false", "log.dirs="+dir)
	require.Equal(t, int32(5000), s.Config().BrokerID)
	require.NoError(t, s.Close(t.Context()))
	mp, err := checkpoint.ReadMetaProperties(vfs.OS, dir)
	require.NoError(t, err)
	require.Equal(t, int32(5000), mp.BrokerID)
}

// TestBrokerIDReservedMax: generated ids start above
// reserved.broker.max.id.
func TestBrokerIDReservedMax(t *testing.T) {
	s := newBroker(t, nil, "broker.id=-1", "reserved.broker.max.id=0", "log.dirs="+t.TempDir())
	require.Equal(t, int32(1), s.Config().BrokerID)
	require.NoError(t, s.Close(t.Context()))
}

func loadConfig(t *testing.T, sets ...string) *config.Broker {
	t.Helper()
	cfg, _, err := config.Load(config.LoadOptions{Sets: append([]string{"listeners=PLAINTEXT://127.0.0.1:0", "qk.http.listener=127.0.0.1:0"}, sets...)})
	require.NoError(t, err)
	return cfg
}

// newBroker runs New (identity settled, nothing listening) with logs at
// Info into w, or the test output when w is nil.
func newBroker(t *testing.T, w *syncBuffer, sets ...string) *broker.Server {
	t.Helper()
	out := t.Output()
	if w != nil {
		out = w
	}
	lg := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := broker.New(loadConfig(t, sets...), broker.WithLogger(lg))
	require.NoError(t, err)
	return s
}

// syncBuffer is a bytes.Buffer safe for concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
