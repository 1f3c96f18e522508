package api

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNextEpoch(t *testing.T) {
	for _, tc := range []struct{ in, want int32 }{
		{0, 1}, {1, 2}, {41, 42}, {math.MaxInt32, 1}, {-1, -1}, {math.MinInt32, -1},
	} {
		require.Equal(t, tc.want, nextEpoch(tc.in), "nextEpoch(%d)", tc.in)
	}
}

// TestFetchSessionCacheEviction: Kafka's rules for a new session in a
// full cache (FetchSessionCache.tryEvict), one slot, eviction after a
// minute. The cached session is created at 0 and used last at used.
func TestFetchSessionCacheEviction(t *testing.T) {
	const min = time.Minute
	for _, tc := range []struct {
		name string
		// the cached session
		privileged bool
		size       int
		used       time.Duration // its last use (a touch), after creation
		// the new one, at used+1s
		newPrivileged bool
		newSize       int
		evicts        bool
	}{
		{name: "consumer by consumer, young", size: 1, newSize: 10},
		{name: "consumer by follower, young", size: 10, newPrivileged: true, newSize: 1, evicts: true},
		{name: "follower by follower, young", privileged: true, size: 1, newPrivileged: true, newSize: 10},
		{name: "follower by consumer, old", privileged: true, size: 1, used: 2 * min, newSize: 10},
		{name: "follower by bigger follower, old", privileged: true, size: 1, used: 2 * min, newPrivileged: true, newSize: 2, evicts: true},
		{name: "consumer by bigger consumer, old", size: 1, used: 2 * min, newSize: 2, evicts: true},
		{name: "consumer by same size consumer, old", size: 2, used: 2 * min, newSize: 2},
		{name: "consumer by smaller consumer, old", size: 2, used: 2 * min, newSize: 1},
		{name: "consumer by follower, old", size: 10, used: 2 * min, newPrivileged: true, newSize: 1, evicts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFetchSessionCache(1, min)
			t0 := time.Unix(1000, 0)
			id := c.maybeCreate(t0, tc.privileged, false, tc.size, func(s *fetchSession) {
				for p := range tc.size {
					s.add(&fetchPart{topic: "t", partition: int32(p)})
				}
			})
			require.NotZero(t, id)
			s := c.sessions[id]
			c.mu.Lock()
			c.touch(s, t0.Add(tc.used))
			c.mu.Unlock()

			got := c.maybeCreate(t0.Add(tc.used+time.Second), tc.newPrivileged, false, tc.newSize, func(s *fetchSession) {})
			require.Equal(t, tc.evicts, got != 0, "new session created")
			_, kept := c.sessions[id]
			require.Equal(t, !tc.evicts, kept, "old session kept")
			st := c.Stats()
			require.Equal(t, 1, st.Sessions)
			if tc.evicts {
				require.Equal(t, int64(1), st.Evicted)
				require.Equal(t, 0, st.Partitions, "the new session was filled with none")
			} else {
				require.Equal(t, tc.size, st.Partitions)
			}

			// Unused for longer than the eviction time, any session goes.
			last := t0.Add(tc.used)
			if got != 0 {
				last = t0.Add(tc.used + time.Second)
			}
			require.NotZero(t, c.maybeCreate(last.Add(min+time.Second), false, false, 0, func(*fetchSession) {}), "stale session evicted")
		})
	}
}

// TestFetchSessionOrder: partitions that returned records move to the end
// of the session; forgetting unlinks; adding twice keeps one entry.
func TestFetchSessionOrder(t *testing.T) {
	s := &fetchSession{parts: map[sessionKey]*cachedPartition{}}
	for p := range int32(4) {
		s.add(&fetchPart{topic: "t", partition: p, fetchOffset: 1})
	}
	_, added := s.add(&fetchPart{topic: "t", partition: 2, fetchOffset: 9})
	require.False(t, added)
	order := func() []int32 {
		var out []int32
		for p := s.head; p != nil; p = p.next {
			out = append(out, p.key.partition)
		}
		var back []int32
		for p := s.tail; p != nil; p = p.prev {
			back = append([]int32{p.key.partition}, back...)
		}
		require.Equal(t, out, back, "links agree both ways")
		return out
	}
	require.Equal(t, []int32{0, 1, 2, 3}, order())
	require.Equal(t, int64(9), s.parts[sessionKey{topic: "t", partition: 2}].fetchOffset)
	p1 := s.parts[sessionKey{topic: "t", partition: 1}]
	s.unlink(p1)
	s.pushBack(p1)
	require.Equal(t, []int32{0, 2, 3, 1}, order())
	s.unlink(s.head)
	s.unlink(s.tail)
	require.Equal(t, []int32{2, 3}, order())
}
