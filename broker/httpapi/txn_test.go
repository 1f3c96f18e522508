//go:build linux

package httpapi_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// lockedBuffer collects the broker's log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openTxns is /v1/partitions' open_transactions of one partition.
type openTxns []struct {
	ProducerID     int64 `json:"producer_id"`
	FirstOffset    int64 `json:"first_offset"`
	StartTimestamp int64 `json:"start_timestamp"`
	AgeMs          int64 `json:"age_ms"`
}

// TestOpenTransaction: a franz-go transactional producer writes 3
// records after 2 plain ones and leaves its transaction open. The broker's
// clock then jumps an hour ahead (the coordinator's timeout check is
// parked, so nothing aborts it): /v1/partitions shows the last stable
// offset at the transaction's first offset and the transaction with its
// age; /metrics shows the LSO lag, the age, one hanging partition and one
// Ongoing transactional id; the broker logs the hanging transaction at
// WARN. After the commit everything is back to stable.
func TestOpenTransaction(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	var logs lockedBuffer
	b := brokertest.StartBroker(t, brokertest.WithClock(clock), brokertest.WithLogWriter(&logs),
		brokertest.WithConfig("transaction.max.timeout.ms", "4000"),
		brokertest.WithConfig("transaction.abort.timed.out.transaction.cleanup.interval.ms", "3600000"),
		brokertest.WithConfig("transaction.state.log.num.partitions", "1"))
	ctx := testCtx(t)
	const topic = "txn"
	plain, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic))
	require.NoError(t, err)
	defer plain.Close()
	_, err = kadm.NewClient(plain).CreateTopic(ctx, 1, 1, nil, topic)
	require.NoError(t, err)
	for range 2 {
		require.NoError(t, plain.ProduceSync(ctx, &kgo.Record{Value: []byte("plain")}).FirstErr())
	}

	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("obs"),
		kgo.TransactionTimeout(3*time.Second))
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.BeginTransaction())
	before := time.Now().UnixMilli()
	for range 3 {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte("txn")}).FirstErr())
	}

	skew.Store(int64(time.Hour))
	var part struct {
		HW, LSO int64
		Open    openTxns
	}
	waitFor(t, 10*time.Second, "the open transaction in /v1/partitions", func() bool {
		code, body := get(t, b, "/v1/partitions")
		require.Equal(t, 200, code)
		var ps struct {
			Partitions []struct {
				Topic            string   `json:"topic"`
				HighWatermark    int64    `json:"high_watermark"`
				LastStableOffset int64    `json:"last_stable_offset"`
				OpenTransactions openTxns `json:"open_transactions"`
			} `json:"partitions"`
		}
		require.NoError(t, json.Unmarshal(body, &ps), string(body))
		for _, pj := range ps.Partitions {
			if pj.Topic == topic {
				part.HW, part.LSO, part.Open = pj.HighWatermark, pj.LastStableOffset, pj.OpenTransactions
				return part.HW == 5
			}
		}
		return false
	})
	require.Equal(t, int64(2), part.LSO, "the LSO stops at the transaction's first offset")
	require.Len(t, part.Open, 1)
	require.Equal(t, int64(2), part.Open[0].FirstOffset)
	require.GreaterOrEqual(t, part.Open[0].ProducerID, int64(0))
	require.GreaterOrEqual(t, part.Open[0].StartTimestamp, before-1000, "when the broker appended the first batch")
	require.InDelta(t, time.Hour.Milliseconds(), part.Open[0].AgeMs, 60_000)

	fams := scrape(t, b)
	require.Equal(t, 3.0, mustValue(t, fams, "qk_log_last_stable_offset_lag", "topic", topic, "partition", "0"))
	require.Equal(t, 1.0, mustValue(t, fams, "qk_log_open_transactions", "topic", topic, "partition", "0"))
	require.InDelta(t, 3600, mustValue(t, fams, "qk_log_oldest_open_transaction_age_seconds", "topic", topic, "partition", "0"), 60)
	require.Equal(t, 1.0, mustValue(t, fams, "qk_server_replicamanager_hangingtransactionpartitions"))
	require.Equal(t, 1.0, mustValue(t, fams, "qk_transaction_coordinator_transactions", "state", "Ongoing"))
	require.Equal(t, 0.0, mustValue(t, fams, "qk_transaction_coordinator_transactions", "state", "CompleteCommit"))
	require.Equal(t, 1.0, mustValue(t, fams, "qk_transaction_coordinator_partitions"))
	require.Equal(t, 0.0, mustValue(t, fams, "qk_transaction_coordinator_partitions_loading"))
	require.Equal(t, 0.0, mustValue(t, fams, "qk_transaction_coordinator_markers_in_flight"))

	waitFor(t, 10*time.Second, "the hanging transaction's WARN line", func() bool {
		return strings.Contains(logs.String(), "hanging transaction")
	})
	var line string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "hanging transaction") {
			require.Empty(t, line, "logged once")
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "topic=txn", "partition=0", "first_offset=2", "age_ms=", "last_stable_offset=2"} {
		require.Contains(t, line, want)
	}

	skew.Store(0)
	require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
	waitFor(t, 10*time.Second, "the commit completed", func() bool {
		fams := scrape(t, b)
		v, _ := value(fams, "qk_transaction_coordinator_transactions", "state", "CompleteCommit")
		return v == 1
	})
	waitFor(t, 10*time.Second, "the LSO at the HW", func() bool {
		fams := scrape(t, b)
		lag, _ := value(fams, "qk_log_last_stable_offset_lag", "topic", topic, "partition", "0")
		age, _ := value(fams, "qk_log_oldest_open_transaction_age_seconds", "topic", topic, "partition", "0")
		hanging, _ := value(fams, "qk_server_replicamanager_hangingtransactionpartitions")
		return lag == 0 && age == 0 && hanging == 0
	})
	fams = scrape(t, b)
	for _, name := range []string{"qk_log_last_stable_offset_lag", "qk_log_open_transactions", "qk_log_oldest_open_transaction_age_seconds"} {
		_, ok := value(fams, name, "topic", topic, "partition", "0")
		require.False(t, ok, "%s: no series for a partition without transactions in flight", name)
	}
}
