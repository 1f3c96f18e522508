package replica

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/record"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for l := range strings.Lines(s.b.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func txnBatch(t *testing.T, pid int64, seq int32, ts int64) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, seq, true
	b := record.NewBuilder(opts)
	b.Append(ts, nil, []byte("v"), nil)
	out, err := b.Build()
	require.NoError(t, err)
	return out
}

// TestHangingTransactionWarnsOnce: two transactions open in a partition
// led here, started 30 s apart by the log's clock (the batches carry old
// event times, which play no part), are each logged once at WARN when
// older than transaction.max.timeout.ms; a follower logs none.
func TestHangingTransactionWarnsOnce(t *testing.T) {
	const start = int64(1_700_000_000_000)
	var nowMs atomic.Int64 // the logs' clock
	nowMs.Store(start)
	logs, err := log.OpenManager(log.ManagerConfig{LogDirs: []string{t.TempDir()},
		Clock: func() time.Time { return time.UnixMilli(nowMs.Load()) }})
	require.NoError(t, err)
	t.Cleanup(func() { logs.Close() })
	var buf syncBuffer
	m := New(Config{BrokerID: 1, Logs: logs, TransactionMaxTimeoutMs: 60_000,
		Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	t.Cleanup(m.Close)
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{leaderState(t, "t", 0, 0)}))
	p, err := m.Partition("t", 0)
	require.NoError(t, err)

	_, err = p.AppendAsLeader(batch(t, 2), 0) // 0-1
	require.NoError(t, err)
	_, err = p.AppendAsLeader(txnBatch(t, 42, 0, 5), 0) // 2: opens 42's transaction
	require.NoError(t, err)
	_, err = p.AppendAsLeader(txnBatch(t, 42, 1, 5), 0) // 3: same transaction
	require.NoError(t, err)
	nowMs.Store(start + 30_000)
	_, err = p.AppendAsLeader(txnBatch(t, 43, 0, 5), 0) // 4: opens 43's
	require.NoError(t, err)

	st := p.Status()
	require.Equal(t, int64(2), st.LastStableOffset)
	require.Equal(t, int64(5), st.HighWatermark)
	require.Equal(t, []log.TxnStart{{ProducerID: 42, FirstOffset: 2, StartTimestamp: start},
		{ProducerID: 43, FirstOffset: 4, StartTimestamp: start + 30_000}}, st.OpenTransactions)

	warned := map[hangingKey]bool{}
	require.Zero(t, m.checkHangingTransactions(start+60_000, warned), "not older than the max timeout yet")
	require.Equal(t, 1, m.checkHangingTransactions(start+60_001, warned))
	require.Zero(t, m.checkHangingTransactions(start+80_000, warned), "logged once")
	require.Equal(t, 1, m.checkHangingTransactions(start+90_001, warned), "43's is hanging now")

	var hanging []map[string]any
	for _, l := range buf.lines() {
		if strings.HasPrefix(l["msg"].(string), "hanging transaction") {
			hanging = append(hanging, l)
		}
	}
	require.Len(t, hanging, 2)
	require.Equal(t, "WARN", hanging[0]["level"])
	require.Equal(t, "t", hanging[0]["topic"])
	require.EqualValues(t, 0, hanging[0]["partition"])
	require.EqualValues(t, 42, hanging[0]["producer_id"])
	require.EqualValues(t, 2, hanging[0]["first_offset"])
	require.EqualValues(t, 60_001, hanging[0]["age_ms"])
	require.EqualValues(t, 2, hanging[0]["last_stable_offset"])
	require.EqualValues(t, 43, hanging[1]["producer_id"])

	ts := m.TxnStats()
	require.Len(t, ts, 1)
	require.Equal(t, TxnStats{Topic: "t", Partition: 0, IsLeader: true, HighWatermark: 5, LastStableOffset: 2,
		OpenTransactions: 2, Oldest: log.TxnStart{ProducerID: 42, FirstOffset: 2, StartTimestamp: start}}, ts[0])

	// A follower does not warn; a transaction no longer reported is
	// forgotten, so a later one at the same offset would warn again.
	f := leaderState(t, "t", 0, 1)
	f.Leader = 2
	f.Replicas, f.ISR = []int32{1, 2}, []int32{1, 2}
	require.Empty(t, m.ApplyLeaderAndISR([]PartitionState{f}))
	require.Zero(t, m.checkHangingTransactions(start+200_000, warned))
	require.Empty(t, warned)
}
