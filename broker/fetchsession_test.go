//go:build linux

package broker_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/qk-project/qk/broker/brokertest"
)

// sessPart is one partition of a session fetch and its fetch offset.
type sessPart struct {
	partition int32
	offset    int64
}

// sessTopic is the topic a session test fetches: by name for v<13, by id
// for v13+.
type sessTopic struct {
	name string
	id   [16]byte
}

// sessReq builds a Fetch request of session sid at epoch, naming parts
// of topic and forgetting forget.
func sessReq(v int16, tp sessTopic, sid, epoch int32, wait int32, parts []sessPart, forget []int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = v
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = wait, 1, 1<<20
	req.SessionID, req.SessionEpoch = sid, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = tp.name, tp.id
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = tp.name, tp.id, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// fetchSess sends a session fetch and returns the response.
func fetchSess(c *rawConn, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	c.t.Helper()
	resp := kmsg.NewPtrFetchResponse()
	c.roundTrip(req, resp)
	return resp
}

// respParts lists the partitions a response answers for topic, in
// response order, failing on any partition of another topic.
func respParts(t *testing.T, v int16, tp sessTopic, resp *kmsg.FetchResponse) []int32 {
	t.Helper()
	var out []int32
	for _, rt := range resp.Topics {
		if v >= 13 {
			require.Equal(t, tp.id, rt.TopicID)
		} else {
			require.Equal(t, tp.name, rt.Topic)
		}
		for _, p := range rt.Partitions {
			out = append(out, p.Partition)
		}
	}
	return out
}

// partOf returns partition p of a response.
func partOf(t *testing.T, resp *kmsg.FetchResponse, p int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == p {
				return rp
			}
		}
	}
	t.Fatalf("partition %d not in response", p)
	return kmsg.FetchResponseTopicPartition{}
}

// produceTo writes one record to topic-partition and waits for the ack.
func produceTo(t *testing.T, cl *kgo.Client, topic string, p int32) {
	t.Helper()
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr())
}

// TestFetchSessionRaw drives one session through Kafka's session rules
// over the raw protocol, for a session keyed by topic name (v12) and by
// topic id (v13, v18).
func TestFetchSessionRaw(t *testing.T) {
	for _, v := range []int16{12, 13, 18} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { testFetchSessionRaw(t, v) })
	}
}

func testFetchSessionRaw(t *testing.T, v int16) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "sess", 3, nil)
	topics, err := adm.ListTopics(testCtx(t))
	require.NoError(t, err)
	tp := sessTopic{name: "sess", id: [16]byte(topics["sess"].ID)}
	cl := newClient(t, []string{b.Addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(3) {
		produceTo(t, cl, "sess", p)
	}
	c := dialRaw(t, b.Addr)

	// A full fetch of epoch 0 creates a session and answers every
	// partition.
	resp := fetchSess(c, sessReq(v, tp, 0, 0, 100, []sessPart{{0, 0}, {1, 0}}, nil))
	require.Equal(t, int16(0), resp.ErrorCode)
	sid := resp.SessionID
	require.NotZero(t, sid, "a full fetch of epoch 0 gets a session")
	require.Equal(t, []int32{0, 1}, respParts(t, v, tp, resp))
	require.NotEmpty(t, partOf(t, resp, 0).RecordBatches)
	require.Equal(t, 1, b.FetchSessionStats().Sessions)
	require.Equal(t, 2, b.FetchSessionStats().Partitions)
	epoch := int32(1)

	// Partition 2 joins the session; the consumed partitions move to
	// offset 1, where there is nothing new: only partition 2 is answered.
	resp = fetchSess(c, sessReq(v, tp, sid, epoch, 100, []sessPart{{0, 1}, {1, 1}, {2, 0}}, nil))
	epoch++
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, sid, resp.SessionID)
	require.Equal(t, []int32{2}, respParts(t, v, tp, resp))
	require.NotEmpty(t, partOf(t, resp, 2).RecordBatches)
	require.Equal(t, int64(1), partOf(t, resp, 2).HighWatermark)
	require.Equal(t, 3, b.FetchSessionStats().Partitions)

	// Nothing new anywhere: an empty request gets an empty answer after
	// its wait.
	resp = fetchSess(c, sessReq(v, tp, sid, epoch, 100, []sessPart{{2, 1}}, nil))
	epoch++
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Empty(t, resp.Topics, "no partition changed")

	// A record in partition 1: the request names no partition, the
	// answer exactly partition 1.
	produceTo(t, cl, "sess", 1)
	resp = fetchSess(c, sessReq(v, tp, sid, epoch, 5000, nil, nil))
	epoch++
	require.Equal(t, []int32{1}, respParts(t, v, tp, resp))
	p1 := partOf(t, resp, 1)
	require.NotEmpty(t, p1.RecordBatches)
	require.Equal(t, int64(2), p1.HighWatermark)

	// A long poll of the session waits on all its partitions, though the
	// request names none: a produce to partition 2 answers it, with
	// exactly partition 2.
	c.writeFrame(c.request(sessReq(v, tp, sid, epoch, 30000, []sessPart{{1, 2}}, nil)))
	epoch++
	waitFor(t, 10*time.Second, "the session fetch to wait in the purgatory", func() bool {
		return b.FetchPurgatory().Delayed() == 1
	})
	start := time.Now()
	produceTo(t, cl, "sess", 2)
	resp = readFetchResponse(t, c, v)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, []int32{2}, respParts(t, v, tp, resp))
	require.Equal(t, int64(2), partOf(t, resp, 2).HighWatermark)

	// Forgetting partition 0 drops it: its new record is not answered.
	resp = fetchSess(c, sessReq(v, tp, sid, epoch, 100, []sessPart{{2, 2}}, []int32{0}))
	epoch++
	require.Empty(t, resp.Topics)
	require.Equal(t, 2, b.FetchSessionStats().Partitions)
	produceTo(t, cl, "sess", 0)
	resp = fetchSess(c, sessReq(v, tp, sid, epoch, 100, nil, nil))
	epoch++
	require.Empty(t, resp.Topics, "a forgotten partition is not read")

	// A partition of an unknown topic is answered with its error on every
	// fetch until forgotten.
	unknown := sessTopic{name: "nope", id: [16]byte{7, 7, 7}}
	want := kerr.UnknownTopicOrPartition.Code
	if v >= 13 {
		want = kerr.UnknownTopicID.Code
	}
	for range 2 {
		resp = fetchSess(c, sessReq(v, unknown, sid, epoch, 100, []sessPart{{0, 0}}, nil))
		epoch++
		require.Equal(t, []int32{0}, respParts(t, v, unknown, resp))
		require.Equal(t, want, partOf(t, resp, 0).ErrorCode)
	}
	resp = fetchSess(c, sessReq(v, unknown, sid, epoch, 100, nil, []int32{0}))
	epoch++
	require.Empty(t, resp.Topics)

	// A wrong epoch is refused and leaves the session as it was.
	resp = fetchSess(c, sessReq(v, tp, sid, epoch+5, 100, nil, nil))
	require.Equal(t, kerr.InvalidFetchSessionEpoch.Code, resp.ErrorCode)
	require.Empty(t, resp.Topics)
	require.Zero(t, resp.SessionID)
	resp = fetchSess(c, sessReq(v, tp, sid, epoch-1, 100, nil, nil))
	require.Equal(t, kerr.InvalidFetchSessionEpoch.Code, resp.ErrorCode, "a replayed epoch")

	// A request disagreeing with the session on topic ids.
	other := int16(12)
	if v < 13 {
		other = 13
	}
	resp = fetchSess(c, sessReq(other, tp, sid, epoch, 100, nil, nil))
	require.Equal(t, kerr.FetchSessionTopicIDError.Code, resp.ErrorCode)

	resp = fetchSess(c, sessReq(v, tp, sid, epoch, 100, []sessPart{{1, 2}}, nil))
	epoch++
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Empty(t, resp.Topics)

	// A session nobody was given.
	resp = fetchSess(c, sessReq(v, tp, sid+1, 1, 100, nil, nil))
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode)
	require.Zero(t, resp.SessionID)

	// Epoch 0 on the session closes it and opens a new one.
	resp = fetchSess(c, sessReq(v, tp, sid, 0, 100, []sessPart{{0, 1}}, nil))
	require.Equal(t, int16(0), resp.ErrorCode)
	sid2 := resp.SessionID
	require.NotZero(t, sid2)
	require.NotEqual(t, sid, sid2)
	require.Equal(t, []int32{0}, respParts(t, v, tp, resp), "a full answer names every partition")
	require.Equal(t, 1, b.FetchSessionStats().Sessions)
	resp = fetchSess(c, sessReq(v, tp, sid, epoch, 100, nil, nil))
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode, "the old session is closed")

	// Epoch -1 closes the session and fetches without one.
	resp = fetchSess(c, sessReq(v, tp, sid2, -1, 100, []sessPart{{0, 0}, {1, 2}}, nil))
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Zero(t, resp.SessionID)
	require.Equal(t, []int32{0, 1}, respParts(t, v, tp, resp))
	require.Equal(t, 0, b.FetchSessionStats().Sessions)
	resp = fetchSess(c, sessReq(v, tp, sid2, 1, 100, nil, nil))
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode)

	// A full fetch of epoch -1 creates nothing.
	resp = fetchSess(c, sessReq(v, tp, 0, -1, 100, []sessPart{{0, 0}}, nil))
	require.Zero(t, resp.SessionID)
	require.Equal(t, 0, b.FetchSessionStats().Sessions)
	st := b.FetchSessionStats()
	require.Equal(t, int64(2), st.Created)
	require.Equal(t, int64(0), st.Evicted)
}

// readFetchResponse reads the next Fetch response of c.
func readFetchResponse(t *testing.T, c *rawConn, v int16) *kmsg.FetchResponse {
	t.Helper()
	body, err := c.readFrame()
	require.NoError(t, err)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	hdr := 4
	if v >= 12 {
		hdr = 5
	}
	require.NoError(t, resp.ReadFrom(body[hdr:]))
	return resp
}

// TestFetchSessionCacheFull: with one slot, a second consumer's full
// fetch gets no session (the first is neither stale nor old enough to
// lose to a bigger one), while a follower's evicts the consumer's.
func TestFetchSessionCacheFull(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithConfig("max.incremental.fetch.session.cache.slots", "1"))
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "full", 2, nil)
	tp := sessTopic{name: "full"}
	c := dialRaw(t, b.Addr)

	resp := fetchSess(c, sessReq(12, tp, 0, 0, 0, []sessPart{{0, 0}}, nil))
	first := resp.SessionID
	require.NotZero(t, first)

	resp = fetchSess(c, sessReq(12, tp, 0, 0, 0, []sessPart{{0, 0}, {1, 0}}, nil))
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Zero(t, resp.SessionID, "cache full: no session")
	require.Equal(t, []int32{0, 1}, respParts(t, 12, tp, resp))
	require.Equal(t, 1, b.FetchSessionStats().Sessions)

	// The first session still works.
	resp = fetchSess(c, sessReq(12, tp, first, 1, 0, nil, nil))
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, first, resp.SessionID)

	// A follower (replica id >= 0) evicts a consumer's session.
	req := sessReq(12, tp, 0, 0, 0, []sessPart{{0, 0}}, nil)
	req.ReplicaID = 1
	resp = fetchSess(c, req)
	require.NotZero(t, resp.SessionID)
	require.NotEqual(t, first, resp.SessionID)
	resp = fetchSess(c, sessReq(12, tp, first, 2, 0, nil, nil))
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode, "evicted")
	st := b.FetchSessionStats()
	require.Equal(t, 1, st.Sessions)
	require.Equal(t, int64(1), st.Evicted)

	// A consumer cannot evict the follower's fresh session.
	resp = fetchSess(c, sessReq(12, tp, 0, 0, 0, []sessPart{{0, 0}, {1, 0}}, nil))
	require.Zero(t, resp.SessionID)
}

// TestFetchSessionEvictionTime: sessions become evictable by time, on
// the broker's clock. A session unused for longer than
// min.incremental.fetch.session.eviction.ms goes to any new one; one
// older than it goes to a new one with more partitions only.
func TestFetchSessionEvictionTime(t *testing.T) {
	var offset atomic.Int64 // added to the wall clock, in ns
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	b := brokertest.StartBroker(t, brokertest.WithClock(clock),
		brokertest.WithConfig("max.incremental.fetch.session.cache.slots", "1"),
		brokertest.WithConfig("min.incremental.fetch.session.eviction.ms", "60000"))
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "evict", 3, nil)
	tp := sessTopic{name: "evict"}
	c := dialRaw(t, b.Addr)
	one, two := []sessPart{{0, 0}}, []sessPart{{0, 0}, {1, 0}}

	a := fetchSess(c, sessReq(12, tp, 0, 0, 0, one, nil)).SessionID
	require.NotZero(t, a)
	// Used 61 s after creation: old, but not stale.
	offset.Add(int64(61 * time.Second))
	require.Equal(t, int16(0), fetchSess(c, sessReq(12, tp, a, 1, 0, nil, nil)).ErrorCode)
	require.Zero(t, fetchSess(c, sessReq(12, tp, 0, 0, 0, one, nil)).SessionID, "same size: no eviction")
	bID := fetchSess(c, sessReq(12, tp, 0, 0, 0, two, nil)).SessionID
	require.NotZero(t, bID, "more partitions evict an old session")
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, fetchSess(c, sessReq(12, tp, a, 2, 0, nil, nil)).ErrorCode)

	// b is young: a smaller session cannot evict it, until b is stale.
	require.Zero(t, fetchSess(c, sessReq(12, tp, 0, 0, 0, one, nil)).SessionID)
	offset.Add(int64(61 * time.Second))
	cID := fetchSess(c, sessReq(12, tp, 0, 0, 0, one, nil)).SessionID
	require.NotZero(t, cID, "a stale session goes to anyone")
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, fetchSess(c, sessReq(12, tp, bID, 1, 0, nil, nil)).ErrorCode)
	require.Equal(t, int64(2), b.FetchSessionStats().Evicted)
}

// TestFetchSessionConsumer: a franz-go consumer (which uses fetch
// sessions) reads 50 partitions while records are produced; every record
// arrives exactly once and in order, and the broker served most fetches
// incrementally from a session, with names (Fetch v12) and topic ids.
func TestFetchSessionConsumer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"latest", nil},
		{"v12", []kgo.Opt{kgo.MaxVersions(kversion.V3_0_0())}},
	} {
		t.Run(tc.name, func(t *testing.T) { testFetchSessionConsumer(t, tc.opts) })
	}
}

func testFetchSessionConsumer(t *testing.T, opts []kgo.Opt) {
	const (
		partitions = 50
		rounds     = 60 // one record per partition per round
		ahead      = 3  // rounds the producer may be ahead of the consumer
	)
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "many", partitions, nil)
	prod := newClient(t, []string{b.Addr}, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	cons := newClient(t, []string{b.Addr}, append([]kgo.Opt{kgo.ConsumeTopics("many"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)

	var consumed atomic.Int64
	ctx := testCtx(t)
	var wg sync.WaitGroup
	var prodErr atomic.Value
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range rounds {
			// Stay at most a few rounds ahead, so the consumer fetches
			// while records arrive.
			for consumed.Load() < int64((r-ahead)*partitions) {
				if ctx.Err() != nil {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Millisecond):
				}
			}
			rs := make([]*kgo.Record, partitions)
			for p := range rs {
				rs[p] = &kgo.Record{Topic: "many", Partition: int32(p), Value: []byte(strconv.Itoa(r))}
			}
			if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				prodErr.Store(err)
				return
			}
		}
	}()

	got := make([][]int, partitions)
	for consumed.Load() < partitions*rounds {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", consumed.Load(), partitions*rounds)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		for _, r := range fs.Records() {
			n, err := strconv.Atoi(string(r.Value))
			require.NoError(t, err)
			got[r.Partition] = append(got[r.Partition], n)
		}
		consumed.Add(int64(len(fs.Records())))
	}
	wg.Wait()
	if err, _ := prodErr.Load().(error); err != nil {
		t.Fatalf("produce: %v", err)
	}
	want := make([]int, rounds)
	for i := range want {
		want[i] = i
	}
	for p := range got {
		require.True(t, slices.Equal(want, got[p]), "partition %d: got %v", p, got[p])
	}
	st := b.FetchSessionStats()
	t.Logf("fetch sessions: %+v", st)
	// One fetch gets at most ahead+1 rounds, so there were at least
	// rounds/(ahead+1) fetches after the first; without sessions, none
	// would be incremental.
	require.GreaterOrEqual(t, st.Incremental, int64(rounds/(ahead+1)-1), "fetches served from a session")
	require.LessOrEqual(t, st.Created, int64(3), "sessions kept, not recreated")
	require.Equal(t, 1, st.Sessions)
	require.Equal(t, partitions, st.Partitions)
}

// TestFetchSessionRoundRobin: partitions that returned records go to the
// end of the session, so when max_bytes runs out the others are read
// first next time; a partition whose high watermark moved is answered
// even when no bytes were left for its records.
func TestFetchSessionRoundRobin(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "rr", 2, nil)
	topics, err := adm.ListTopics(testCtx(t))
	require.NoError(t, err)
	tp := sessTopic{name: "rr", id: [16]byte(topics["rr"].ID)}
	cl := newClient(t, []string{b.Addr}, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for p := range int32(2) {
		for range 3 {
			require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "rr", Partition: p, Value: bytes.Repeat([]byte{'x'}, 500)}).FirstErr())
		}
	}
	seg0, err := os.ReadFile(filepath.Join(b.Dir, "rr-0", "00000000000000000000.log"))
	require.NoError(t, err)
	batch := len(seg0) / 3
	c := dialRaw(t, b.Addr)
	req := func(sid, epoch int32, parts []sessPart) *kmsg.FetchRequest {
		r := sessReq(13, tp, sid, epoch, 100, parts, nil)
		r.MaxBytes = int32(batch + 100) // one batch and a bit
		return r
	}

	// Full: partition 0 takes all the bytes; 1 is answered empty.
	resp := fetchSess(c, req(0, 0, []sessPart{{0, 0}, {1, 0}}))
	sid := resp.SessionID
	require.NotZero(t, sid)
	require.Equal(t, []int32{0, 1}, respParts(t, 13, tp, resp))
	require.NotEmpty(t, partOf(t, resp, 0).RecordBatches)
	require.Empty(t, partOf(t, resp, 1).RecordBatches)

	// Partition 0 is still first in the session and takes the bytes
	// again; 1, unchanged, is left out. 0 moves to the end.
	resp = fetchSess(c, req(sid, 1, []sessPart{{0, 1}}))
	require.Equal(t, []int32{0}, respParts(t, 13, tp, resp))
	require.NotEmpty(t, partOf(t, resp, 0).RecordBatches)

	// Now partition 1 is read first and gets the bytes; 0 has none left
	// and, unchanged, is left out.
	resp = fetchSess(c, req(sid, 2, []sessPart{{0, 2}}))
	require.Equal(t, []int32{1}, respParts(t, 13, tp, resp))
	require.NotEmpty(t, partOf(t, resp, 1).RecordBatches)

	// 0 is first again and takes the bytes (it has two batches to read);
	// 1 gets none, but its high watermark moved, so it is answered, empty.
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "rr", Partition: 0, Value: bytes.Repeat([]byte{'x'}, 500)}).FirstErr())
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "rr", Partition: 1, Value: []byte("more")}).FirstErr())
	resp = fetchSess(c, req(sid, 3, []sessPart{{1, 1}}))
	require.Equal(t, []int32{0, 1}, respParts(t, 13, tp, resp))
	require.NotEmpty(t, partOf(t, resp, 0).RecordBatches)
	p1 := partOf(t, resp, 1)
	require.Empty(t, p1.RecordBatches)
	require.Equal(t, int64(4), p1.HighWatermark)
}
