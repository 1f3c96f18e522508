package fetcher

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/replica/quota"
)

// fakeLeader is a Sender whose every Fetch the test reads and answers.
type fakeLeader struct {
	reqs    chan *kmsg.FetchRequest
	answers chan fakeAnswer
}

type fakeAnswer struct {
	resp *kmsg.FetchResponse
	err  error
}

func newFakeLeader() *fakeLeader {
	return &fakeLeader{reqs: make(chan *kmsg.FetchRequest), answers: make(chan fakeAnswer)}
}

func (l *fakeLeader) AddBroker(int32, string) {}
func (l *fakeLeader) Close()                  {}

func (l *fakeLeader) Request(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	select {
	case l.reqs <- req.(*kmsg.FetchRequest):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-l.answers:
		if a.err != nil {
			return nil, a.err
		}
		return a.resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// next is the fetcher's next request.
func (l *fakeLeader) next(t *testing.T) *kmsg.FetchRequest {
	t.Helper()
	select {
	case r := <-l.reqs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no fetch request")
		return nil
	}
}

func (l *fakeLeader) answer(resp *kmsg.FetchResponse, err error) { l.answers <- fakeAnswer{resp, err} }

// fakeFollower pretends every fetched byte is one record.
type fakeFollower struct {
	mu        sync.Mutex
	leo       int64
	throttled bool
}

func (f *fakeFollower) FetchState() (int64, int32, int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leo, -1, 5
}

func (f *fakeFollower) AppendFetched(batches []byte, _, _ int64, _ int32) error {
	f.mu.Lock()
	f.leo += int64(len(batches))
	f.mu.Unlock()
	return nil
}

func (f *fakeFollower) Truncate(int64, int32) error                { return nil }
func (f *fakeFollower) TruncateFullyAndStartAt(int64, int32) error { return nil }
func (f *fakeFollower) EndOffsetForEpoch(e int32) (int32, int64)   { return e, f.leo }
func (f *fakeFollower) HighWatermark() int64                       { return 0 }

func (f *fakeFollower) FollowerThrottled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.throttled
}

var topicID = [16]byte{7}

func named(r *kmsg.FetchRequest) []int32 {
	out := []int32{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.Partition)
		}
	}
	slices.Sort(out)
	return out
}

func forgotten(t *testing.T, r *kmsg.FetchRequest) []int32 {
	out := []int32{}
	for _, ft := range r.ForgottenTopics {
		require.Equal(t, topicID, ft.TopicID)
		require.Equal(t, "t", ft.Topic)
		out = append(out, ft.Partitions...)
	}
	slices.Sort(out)
	return out
}

// response answers for session id, with records (n bytes) and a high
// watermark per partition.
func response(id int32, parts map[int32][2]int64) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 18
	resp.SessionID = id
	if len(parts) > 0 {
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID = "t", topicID
		for _, p := range slices.Sorted(maps.Keys(parts)) {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p
			rp.RecordBatches = make([]byte, parts[p][0])
			rp.HighWatermark = parts[p][1]
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func sessionErr(code int16) *kmsg.FetchResponse {
	resp := response(0, nil)
	resp.ErrorCode = code
	return resp
}

// TestFetcherSession drives one fetcher against a scripted leader: the
// session opens with a full fetch, partitions added later join the next
// incremental one, a partition whose offset moved is named alone,
// FETCH_SESSION_ID_NOT_FOUND and a lost answer bring a full fetch, a
// removed partition is forgotten, and a throttled partition behind the
// leader is left out (forgotten) while the follower quota is exceeded.
func TestFetcherSession(t *testing.T) {
	leader := newFakeLeader()
	q := quota.New(quota.Unlimited, 2, time.Second)
	lg := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := New(Config{BrokerID: 1, NewSender: func() Sender { return leader }, Backoff: 10 * time.Millisecond, Quota: q, Logger: lg})
	t.Cleanup(m.Close)
	fs := []*fakeFollower{{}, {}, {}}
	for i, f := range fs {
		m.Add(Leader{ID: 0, Addr: "leader:9092"}, TP{Topic: "t", Partition: int32(i)}, topicID, f)
	}

	// The first fetch is full (with whichever partitions were added by
	// then); the rest join the session in the next, incremental, one.
	r := leader.next(t)
	require.Equal(t, [2]int32{0, 0}, [2]int32{r.SessionID, r.SessionEpoch})
	first := named(r)
	require.NotEmpty(t, first)
	leader.answer(response(9, nil), nil)
	r = leader.next(t)
	require.Equal(t, [2]int32{9, 1}, [2]int32{r.SessionID, r.SessionEpoch})
	require.Equal(t, []int32{0, 1, 2}, append(first, named(r)...), "added partitions join the session")
	require.Empty(t, forgotten(t, r))

	// Records for partition 1: only it is named next, at its new offset.
	leader.answer(response(9, map[int32][2]int64{1: {3, 3}}), nil)
	r = leader.next(t)
	require.Equal(t, int32(2), r.SessionEpoch)
	require.Equal(t, []int32{1}, named(r))
	require.Equal(t, int64(3), r.Topics[0].Partitions[0].FetchOffset)
	leader.answer(response(9, nil), nil) // nothing new
	r = leader.next(t)
	require.Equal(t, int32(3), r.SessionEpoch)
	require.Empty(t, named(r), "nothing changed: the fetch names nothing")

	// The leader lost the session: a full fetch, at once.
	leader.answer(sessionErr(kerr.FetchSessionIDNotFound.Code), nil)
	r = leader.next(t)
	require.Equal(t, [2]int32{0, 0}, [2]int32{r.SessionID, r.SessionEpoch})
	require.Equal(t, []int32{0, 1, 2}, named(r))

	// Partition 2 goes (LeaderAndIsr moved it) while that fetch is out:
	// forgotten in the next.
	m.Remove(TP{Topic: "t", Partition: 2})
	leader.answer(response(11, nil), nil)
	r = leader.next(t)
	require.Equal(t, [2]int32{11, 1}, [2]int32{r.SessionID, r.SessionEpoch})
	require.Empty(t, named(r))
	require.Equal(t, []int32{2}, forgotten(t, r))

	// An invalid epoch: close and reopen the session with a full fetch.
	leader.answer(sessionErr(kerr.InvalidFetchSessionEpoch.Code), nil)
	r = leader.next(t)
	require.Equal(t, [2]int32{11, 0}, [2]int32{r.SessionID, r.SessionEpoch})
	require.Equal(t, []int32{0, 1}, named(r))

	// No answer: the partitions back off, then a full fetch closes and
	// reopens the session.
	leader.answer(nil, errors.New("connection reset"))
	r = leader.next(t)
	require.Equal(t, [2]int32{11, 0}, [2]int32{r.SessionID, r.SessionEpoch})
	require.Equal(t, []int32{0, 1}, named(r))

	// Partition 0 is throttled and 5 behind the leader: with the quota
	// exceeded it is left out (forgotten); partition 1 is not throttled.
	fs[0].mu.Lock()
	fs[0].throttled = true
	fs[0].mu.Unlock()
	q.SetBound(0)
	q.Record(time.Now(), 1)
	leader.answer(response(12, map[int32][2]int64{0: {0, 5}, 1: {0, 3}}), nil)
	r = leader.next(t)
	require.Equal(t, [2]int32{12, 1}, [2]int32{r.SessionID, r.SessionEpoch})
	require.Empty(t, named(r))
	require.Equal(t, []int32{0}, forgotten(t, r))
	require.Positive(t, m.Stats().ThrottledPartitions)

	// Unthrottled again: it comes back, and what it fetches is charged.
	q.SetBound(quota.Unlimited)
	leader.answer(response(12, nil), nil)
	r = leader.next(t)
	require.Equal(t, []int32{0}, named(r))
	leader.answer(response(12, map[int32][2]int64{0: {5, 5}}), nil)
	r = leader.next(t)
	require.Equal(t, []int32{0}, named(r))
	require.Equal(t, int64(5), r.Topics[0].Partitions[0].FetchOffset)
	require.Equal(t, int64(5), m.Stats().ThrottledBytes)

	st := m.Stats()
	require.Equal(t, int64(4), st.FullFetches)
	require.Equal(t, int64(2), st.SessionErrors)
	require.Equal(t, int64(2), st.ForgottenPartitions)
}

// TestFetcherLeaderNotReady: a leader that refuses a partition as not
// (yet) leading it, as one does that has not applied the controller's
// LeaderAndIsr the follower already has, is asked again after a short
// wait that doubles with each refusal, not after replica.fetch.backoff.ms
// (here a minute, so that a full backoff fails the test); a storage error
// still waits the full backoff.
func TestFetcherLeaderNotReady(t *testing.T) {
	leader := newFakeLeader()
	lg := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := New(Config{BrokerID: 1, NewSender: func() Sender { return leader }, Backoff: time.Minute, Logger: lg})
	t.Cleanup(m.Close)
	m.Add(Leader{ID: 0, Addr: "leader:9092"}, TP{Topic: "t", Partition: 0}, topicID, &fakeFollower{})
	refuse := func(code int16) *kmsg.FetchResponse {
		resp := response(5, map[int32][2]int64{0: {0, 0}})
		resp.Topics[0].Partitions[0].ErrorCode = code
		return resp
	}
	r := leader.next(t)
	require.Equal(t, []int32{0}, named(r))
	var waits []time.Duration
	for _, code := range []int16{kerr.UnknownTopicOrPartition.Code, kerr.UnknownLeaderEpoch.Code, kerr.NotLeaderForPartition.Code} {
		start := time.Now()
		leader.answer(refuse(code), nil)
		for {
			// A request without the partition (it waits) may come first.
			r = leader.next(t)
			if slices.Contains(named(r), 0) {
				break
			}
			leader.answer(response(5, nil), nil)
		}
		waits = append(waits, time.Since(start))
	}
	for i, w := range waits {
		require.Less(t, w, 2*time.Second, "refusal %d: asked again after %v", i, w)
		require.GreaterOrEqual(t, w, firstLeaderWait<<i, "refusal %d: the wait doubles", i)
	}
	// Served: the next refusal starts over at the first wait.
	leader.answer(response(5, map[int32][2]int64{0: {1, 1}}), nil)
	leader.next(t)
	start := time.Now()
	leader.answer(refuse(kerr.UnknownLeaderEpoch.Code), nil)
	for {
		r = leader.next(t)
		if slices.Contains(named(r), 0) {
			break
		}
		leader.answer(response(5, nil), nil)
	}
	require.Less(t, time.Since(start), 4*firstLeaderWait, "the waits start over after a served fetch")
}
