package fetcher

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	idA = [16]byte{1}
	idB = [16]byte{2}
)

// sp is a partition of topic a (id idA) or b (idB) at a fetch offset.
func sp(topic string, partition int32, offset int64) sessionPartition {
	id := idA
	if topic == "b" {
		id = idB
	}
	return sessionPartition{TP: TP{Topic: topic, Partition: partition}, partitionData: partitionData{
		TopicID: id, FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20, CurrentLeaderEpoch: 3, LastFetchedEpoch: 3,
	}}
}

func tps(ps []sessionPartition) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Topic+"-"+string(rune('0'+p.Partition)))
	}
	return out
}

// established returns a handler whose session n (at epoch 1) holds parts.
func established(t *testing.T, parts ...sessionPartition) *fetchSessionHandler {
	t.Helper()
	h := newFetchSessionHandler()
	r := h.build(parts)
	require.True(t, r.Full)
	require.True(t, h.handleResponse(&r, 0, 77))
	return h
}

// TestSessionBuild: given the session's partitions and the ones to fetch
// now, what an incremental request names and forgets.
func TestSessionBuild(t *testing.T) {
	base := []sessionPartition{sp("a", 0, 10), sp("a", 1, 20), sp("b", 0, 30)}
	changed := func(p sessionPartition, f func(*partitionData)) sessionPartition { f(&p.partitionData); return p }
	tests := []struct {
		name       string
		next       []sessionPartition
		wantSend   []string
		wantForget []string
	}{
		{"nothing changed", base, []string{}, []string{}},
		{"fetch offset moved", []sessionPartition{sp("a", 0, 10), sp("a", 1, 25), sp("b", 0, 30)}, []string{"a-1"}, []string{}},
		{"log start offset", []sessionPartition{base[0], changed(base[1], func(d *partitionData) { d.LogStartOffset = 5 }), base[2]}, []string{"a-1"}, []string{}},
		{"max bytes", []sessionPartition{changed(base[0], func(d *partitionData) { d.MaxBytes = 1 }), base[1], base[2]}, []string{"a-0"}, []string{}},
		{"leader epoch", []sessionPartition{base[0], base[1], changed(base[2], func(d *partitionData) { d.CurrentLeaderEpoch = 4 })}, []string{"b-0"}, []string{}},
		{"last fetched epoch", []sessionPartition{base[0], changed(base[1], func(d *partitionData) { d.LastFetchedEpoch = 4 }), base[2]}, []string{"a-1"}, []string{}},
		{"partition added", append(append([]sessionPartition{}, base...), sp("b", 1, 0)), []string{"b-1"}, []string{}},
		{"partition removed", []sessionPartition{base[0], base[2]}, []string{}, []string{"a-1"}},
		{"all removed", nil, []string{}, []string{"a-0", "a-1", "b-0"}},
		{"added, removed and changed", []sessionPartition{sp("a", 0, 11), sp("b", 0, 30), sp("b", 2, 0)}, []string{"a-0", "b-2"}, []string{"a-1"}},
		{"topic recreated with a new id", []sessionPartition{base[0], base[1], changed(base[2], func(d *partitionData) { d.TopicID = [16]byte{9} })},
			[]string{"b-0"}, []string{"b-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := established(t, base...)
			r := h.build(tt.next)
			require.False(t, r.Full)
			require.Equal(t, int32(77), r.SessionID)
			require.Equal(t, int32(1), r.SessionEpoch)
			require.Equal(t, tt.wantSend, tps(r.ToSend), "to send")
			require.Equal(t, tt.wantForget, tps(r.ToForget), "to forget")
			// The session now holds exactly next.
			require.Len(t, h.parts, len(tt.next))
			for _, p := range tt.next {
				require.Equal(t, p.partitionData, h.parts[p.TP])
			}
			// And building next again names nothing; the request is
			// still sent (it fetches the session) unless the session
			// is empty.
			require.True(t, h.handleResponse(&r, 0, 77))
			again := h.build(tt.next)
			require.Empty(t, again.ToSend)
			require.Empty(t, again.ToForget)
			require.Equal(t, len(tt.next) == 0, again.Empty())
			require.Equal(t, len(tt.next), again.Partitions)
			require.Equal(t, int32(2), again.SessionEpoch)
		})
	}
}

// TestSessionForgetsOldTopicID: a recreated topic's old id is what the
// forgotten entry carries, since the leader's session knows it by that.
func TestSessionForgetsOldTopicID(t *testing.T) {
	h := established(t, sp("a", 0, 10))
	p := sp("a", 0, 0)
	p.TopicID = [16]byte{9}
	r := h.build([]sessionPartition{p})
	require.Len(t, r.ToForget, 1)
	require.Equal(t, idA, r.ToForget[0].TopicID)
	require.Equal(t, [16]byte{9}, r.ToSend[0].TopicID)
}

// TestSessionLifecycle: the state machine of session ids and epochs
// across answers and errors.
func TestSessionLifecycle(t *testing.T) {
	parts := []sessionPartition{sp("a", 0, 10), sp("a", 1, 20)}
	type answer struct {
		noAnswer  bool
		errorCode int16
		sessionID int32
	}
	tests := []struct {
		name    string
		answers []answer
		// want is, for the request before each answer and one after the
		// last: id, epoch, full.
		want [][3]int64
		ok   []bool
	}{
		{"open and go incremental", []answer{{sessionID: 5}, {sessionID: 5}, {sessionID: 5}},
			[][3]int64{{0, 0, 1}, {5, 1, 0}, {5, 2, 0}, {5, 3, 0}}, []bool{true, true, true}},
		{"no session offered: full every time", []answer{{sessionID: 0}, {sessionID: 0}},
			[][3]int64{{0, 0, 1}, {0, 0, 1}, {0, 0, 1}}, []bool{true, true}},
		{"session not found: start over", []answer{{sessionID: 5}, {errorCode: kerr.FetchSessionIDNotFound.Code}, {sessionID: 6}},
			[][3]int64{{0, 0, 1}, {5, 1, 0}, {0, 0, 1}, {6, 1, 0}}, []bool{true, false, true}},
		{"invalid epoch: close and reopen", []answer{{sessionID: 5}, {errorCode: kerr.InvalidFetchSessionEpoch.Code}, {sessionID: 8}},
			[][3]int64{{0, 0, 1}, {5, 1, 0}, {5, 0, 1}, {8, 1, 0}}, []bool{true, false, true}},
		{"no answer: close and reopen", []answer{{sessionID: 5}, {noAnswer: true}, {sessionID: 9}},
			[][3]int64{{0, 0, 1}, {5, 1, 0}, {5, 0, 1}, {9, 1, 0}}, []bool{true, false, true}},
		{"leader closed the session", []answer{{sessionID: 5}, {sessionID: 0}},
			[][3]int64{{0, 0, 1}, {5, 1, 0}, {0, 0, 1}}, []bool{true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFetchSessionHandler()
			for i, a := range tt.answers {
				r := h.build(parts)
				require.Equal(t, tt.want[i], [3]int64{int64(r.SessionID), int64(r.SessionEpoch), b2i(r.Full)}, "request %d", i)
				if r.Full {
					require.Len(t, r.ToSend, len(parts), "a full fetch names everything")
				}
				if a.noAnswer {
					h.handleError()
					continue
				}
				require.Equal(t, tt.ok[i], h.handleResponse(&r, a.errorCode, a.sessionID), "answer %d", i)
			}
			r := h.build(parts)
			last := tt.want[len(tt.want)-1]
			require.Equal(t, last, [3]int64{int64(r.SessionID), int64(r.SessionEpoch), b2i(r.Full)})
		})
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func TestNextEpochWraps(t *testing.T) {
	require.Equal(t, int32(2), nextEpoch(1))
	require.Equal(t, int32(1), nextEpoch(math.MaxInt32))
}
