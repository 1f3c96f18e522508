package assign

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Kafka's own example (AdminRackAwareTest.testGetRackAlternatedBrokerList).
func TestRackAlternated(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	require.Equal(t, []int32{0, 3, 1, 5, 4, 2}, RackAlternated(racks, []int32{0, 1, 2, 3, 4, 5}))
	require.Equal(t, []int32{0, 1}, RackAlternated(map[int32]string{0: "a", 1: "a"}, []int32{1, 0}))
}

// Replicas cover as many racks as they can, every broker leads and holds
// its share, whatever the random start and shift.
func TestRackAware(t *testing.T) {
	for _, tc := range []struct {
		racks map[int32]string
		n, rf int
	}{
		{map[int32]string{0: "a", 1: "b", 2: "c"}, 6, 3},
		{map[int32]string{0: "a", 1: "a", 2: "b", 3: "b"}, 8, 2},
		{map[int32]string{0: "r1", 1: "r2", 2: "r2", 3: "r3", 4: "r3", 5: "r1"}, 12, 3},
		{map[int32]string{0: "a", 1: "a", 2: "a", 3: "b"}, 8, 2},
		{map[int32]string{0: "a", 1: "b"}, 5, 1},
	} {
		brokers := make([]int32, 0, len(tc.racks))
		for b := range tc.racks {
			brokers = append(brokers, b)
		}
		slices.Sort(brokers)
		racks := distinct(tc.racks, brokers)
		for start := range len(brokers) {
			for shift := range len(brokers) {
				a := RackAware(tc.racks, brokers, 0, tc.n, tc.rf, start, shift)
				require.Len(t, a, tc.n)
				lead, hold := map[int32]int{}, map[int32]int{}
				for p := range int32(tc.n) {
					r := a[p]
					require.Len(t, r, tc.rf)
					seenB, seenR := map[int32]bool{}, map[string]bool{}
					for _, b := range r {
						require.False(t, seenB[b], "broker twice in %v", r)
						seenB[b] = true
						seenR[tc.racks[b]] = true
						hold[b]++
					}
					require.Len(t, seenR, min(tc.rf, len(racks)), "partition %d %v spans the racks it can", p, r)
					lead[r[0]]++
				}
				for _, b := range brokers {
					require.InDelta(t, float64(tc.n)/float64(len(brokers)), lead[b], 1, "leaders %v", lead)
				}
				if len(racks) == len(brokers) || tc.rf == 1 {
					for _, b := range brokers {
						require.InDelta(t, float64(tc.n*tc.rf)/float64(len(brokers)), hold[b], 1, "replicas %v", hold)
					}
				}
			}
		}
	}
}

// Every broker leads its share and no partition holds a broker twice,
// whatever the start index and shift, with partitions numbered from 2 as
// when partitions are added.
func TestRackUnaware(t *testing.T) {
	for _, tc := range []struct {
		brokers []int32
		n, rf   int
	}{
		{[]int32{0}, 5, 1},
		{[]int32{0, 1, 2}, 9, 1},
		{[]int32{0, 1, 2}, 7, 3},
		{[]int32{3, 5, 9, 11}, 12, 2},
	} {
		for start := range len(tc.brokers) {
			for shift := range len(tc.brokers) {
				a := RackUnaware(tc.brokers, 2, tc.n, tc.rf, start, shift)
				require.Len(t, a, tc.n)
				lead := map[int32]int{}
				for p := int32(2); p < int32(2+tc.n); p++ {
					r := a[p]
					require.Len(t, r, tc.rf)
					seen := map[int32]bool{}
					for _, b := range r {
						require.Contains(t, tc.brokers, b)
						require.False(t, seen[b], "replica twice in %v", r)
						seen[b] = true
					}
					lead[r[0]]++
				}
				for _, b := range tc.brokers {
					require.InDelta(t, tc.n/len(tc.brokers), lead[b], 1, "leaders spread evenly: %v", lead)
				}
			}
		}
	}
	require.Empty(t, RackUnaware([]int32{0}, 0, 3, 2, 0, 0), "more replicas than brokers")
}

// Kafka's known answer (AdminZkClientTest.testReplicaAssignment): five
// brokers, ten partitions, three replicas, fixed start index 0.
func TestRackUnawareKafka(t *testing.T) {
	want := map[int32][]int32{
		0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1},
		5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2},
	}
	require.Equal(t, want, RackUnaware([]int32{0, 1, 2, 3, 4}, 0, 10, 3, 0, 0))
}
