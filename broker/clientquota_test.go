//go:build linux && integration

package broker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/clientquota"
)

// The client quota tests run one in-process broker. In a cluster each
// broker measures and throttles its own share of a client's traffic
// against the whole quota, as Kafka's do, so these figures are per
// broker.

const clientQuotaRate = 1 << 20 // 1 MiB/s

// clientQuotaBroker starts a broker whose quota rates are measured over
// two samples of one second: the average over a 10-20 s run then stays
// within about a second's worth of the bound. (With Kafka's 11 samples a fresh client may send ten seconds'
// worth at once, and the average is only close over multiples of the
// 11 s span.)
func clientQuotaBroker(t *testing.T) *brokertest.Broker {
	t.Helper()
	if testing.Short() {
		t.Skip("runs for tens of seconds")
	}
	c := brokertest.StartCluster(t, 1, brokertest.WithConfig("quota.window.num", "2"),
		brokertest.WithConfig("quota.window.size.seconds", "1"))
	return c.Brokers[0]
}

// setClientQuota sets key to v on client id clientID and waits for the
// broker to enforce it.
func setClientQuota(t *testing.T, b *brokertest.Broker, clientID, key string, v float64) {
	t.Helper()
	adm := newAdmin(t, b.Addr)
	res, err := adm.AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{{
		Entity: quotaEntity("client-id", clientID), Ops: []kadm.AlterClientQuotaOp{setQuota(key, v)},
	}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	typ, ok := clientquota.TypeOf(key)
	require.True(t, ok)
	waitFor(t, 10*time.Second, "the quota to apply", func() bool {
		m, ok := b.Server.ClientQuotas().Get(typ).Limit("ANONYMOUS", clientID)
		return ok && m.Limit == v
	})
}

// throttleHook counts the throttle times franz-go is told of.
type throttleHook struct {
	n   atomic.Int64
	max atomic.Int64 // ms
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	if ms := d.Milliseconds(); ms > h.max.Load() {
		h.max.Store(ms)
	}
}

// produceFor produces values of size bytes to topic for d and returns
// the bytes acknowledged.
func produceFor(t *testing.T, cl *kgo.Client, topic string, size int, d time.Duration) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), d)
	defer cancel()
	value := make([]byte, size)
	var (
		acked atomic.Int64
		wg    sync.WaitGroup
	)
	for ctx.Err() == nil {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err == nil && ctx.Err() == nil {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	wg.Wait()
	return acked.Load()
}

// TestClientQuotaProduce: a producer held to producer_byte_rate 1 MiB/s
// is told to back off and averages within 10% of the quota over 20 s,
// while a client id without a quota producing at the same time is not
// held back.
func TestClientQuotaProduce(t *testing.T) {
	b := clientQuotaBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "limited", 1, nil)
	createTopic(t, adm, "free", 1, nil)
	setClientQuota(t, b, "limited", clientquota.ProducerByteRate, clientQuotaRate)

	opts := func(id string, h *throttleHook) []kgo.Opt {
		return []kgo.Opt{kgo.ClientID(id), kgo.WithHooks(h), kgo.MaxBufferedRecords(64),
			kgo.ProducerBatchCompression(kgo.NoCompression()), // the quota counts bytes on the wire
			kgo.ProducerBatchMaxBytes(128 << 10), kgo.ProducerLinger(5 * time.Millisecond)}
	}
	var limitedHook, freeHook throttleHook
	limited := newClient(t, []string{b.Addr}, opts("limited", &limitedHook)...)
	free := newClient(t, []string{b.Addr}, opts("free", &freeHook)...)

	const run, freeRun = 20 * time.Second, 5 * time.Second
	var freeBytes int64
	var freeTook time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		freeBytes = produceFor(t, free, "free", 16<<10, freeRun)
		freeTook = time.Since(start)
	}()
	start := time.Now()
	limitedBytes := produceFor(t, limited, "limited", 16<<10, run)
	took := time.Since(start)
	<-done

	rate := float64(limitedBytes) / took.Seconds()
	freeRate := float64(freeBytes) / freeTook.Seconds()
	t.Logf("limited: %.0f B/s (%.3f of the quota) over %v, %d throttles, longest %d ms; free: %.0f B/s over %v, %d throttles",
		rate, rate/clientQuotaRate, took.Round(time.Millisecond), limitedHook.n.Load(), limitedHook.max.Load(),
		freeRate, freeTook.Round(time.Millisecond), freeHook.n.Load())
	require.Positive(t, limitedHook.n.Load(), "the limited producer was never throttled")
	require.InDelta(t, clientQuotaRate, rate, 0.10*clientQuotaRate)
	require.Zero(t, freeHook.n.Load(), "the client id without a quota was throttled")
	require.Greater(t, freeRate, 3.0*clientQuotaRate, "the client id without a quota was held back")
}

// TestClientQuotaFetch: a consumer held to consumer_byte_rate 1 MiB/s
// averages within 15% of it over 10 s, and is told to back off.
//
// A throttled fetch is answered empty and its bytes are not charged
// (Kafka's unrecordQuotaSensor): the consumer waits out a throttle time
// that counted them, so it runs a little under its quota, the more so
// the larger its fetches; and a fetch cut at its limit ends in a partial
// batch that the quota counts and the consumer drops. Small batches and
// 128 KiB fetches keep both a few percent.
func TestClientQuotaFetch(t *testing.T) {
	b := clientQuotaBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "backlog", 1, nil)
	// A backlog the consumer cannot finish: 24 MiB in batches of about
	// 4 KiB, produced unthrottled.
	pr := newClient(t, []string{b.Addr}, kgo.ProducerBatchMaxBytes(4<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1<<10)
	recs := make([]*kgo.Record, 24<<10)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "backlog", Value: value}
	}
	require.NoError(t, pr.ProduceSync(testCtx(t), recs...).FirstErr())
	setClientQuota(t, b, "slow", clientquota.ConsumerByteRate, clientQuotaRate)

	var hook throttleHook
	cl := newClient(t, []string{b.Addr}, kgo.ClientID("slow"), kgo.WithHooks(&hook),
		kgo.ConsumeTopics("backlog"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(128<<10), kgo.FetchMaxPartitionBytes(128<<10))
	const run = 10 * time.Second
	ctx, cancel := context.WithTimeout(testCtx(t), run)
	defer cancel()
	start := time.Now()
	var got int64
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
	}
	took := time.Since(start)
	rate := float64(got) / took.Seconds()
	t.Logf("consumer: %.0f B/s (%.3f of the quota) over %v, %d throttles, longest %d ms",
		rate, rate/clientQuotaRate, took.Round(time.Millisecond), hook.n.Load(), hook.max.Load())
	require.Positive(t, hook.n.Load(), "the consumer was never throttled")
	require.InDelta(t, clientQuotaRate, rate, 0.15*clientQuotaRate)
}

// TestClientQuotaRequestPercentage: a client spamming Metadata requests
// over request_percentage gets throttle_time_ms in their responses.
func TestClientQuotaRequestPercentage(t *testing.T) {
	b := clientQuotaBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "meta", 4, nil)
	setClientQuota(t, b, "spammer", clientquota.RequestPercentage, 0.5)

	var hook throttleHook
	cl := newClient(t, []string{b.Addr}, kgo.ClientID("spammer"), kgo.WithHooks(&hook))
	polite := newClient(t, []string{b.Addr}, kgo.ClientID("polite"))
	ctx := testCtx(t)
	var requests, throttled int
	var maxThrottle int32
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && throttled < 3 {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.ID)))
		require.NoError(t, err)
		requests++
		if resp.ThrottleMillis > 0 {
			throttled++
			maxThrottle = max(maxThrottle, resp.ThrottleMillis)
		}
	}
	t.Logf("%d Metadata requests, %d throttled (longest %d ms), %d throttles seen by franz-go",
		requests, throttled, maxThrottle, hook.n.Load())
	require.Positive(t, throttled, "no Metadata response carried a throttle time")
	require.LessOrEqual(t, maxThrottle, int32(1000), "request quotas throttle for at most one window")
	// Another client id is not held back.
	for range 20 {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, polite.Broker(int(b.ID)))
		require.NoError(t, err)
		require.Zero(t, resp.ThrottleMillis)
	}
}
