package controller

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Kafka's own example (AdminRackAwareTest.testGetRackAlternatedBrokerList).
func TestRackAlternated(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	require.Equal(t, []int32{0, 3, 1, 5, 4, 2}, rackAlternated(racks, []int32{0, 1, 2, 3, 4, 5}))
	require.Equal(t, []int32{0, 1}, rackAlternated(map[int32]string{0: "a", 1: "a"}, []int32{1, 0}))
}

// Replicas cover as many racks as they can, every broker leads and holds
// its share, whatever the random start and shift.
func TestAssignReplicasRackAware(t *testing.T) {
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
				a := AssignReplicasRackAware(tc.racks, brokers, 0, tc.n, tc.rf, start, shift)
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

func TestAssignChoosesRackAwareness(t *testing.T) {
	a, err := assign([]int32{0, 1, 2, 3}, map[int32]string{0: "x", 1: "x", 2: "y", 3: "y"}, 0, 8, 1)
	require.NoError(t, err)
	perRack := map[int32]int{}
	for p := range int32(8) {
		perRack[a[p][0]/2]++
	}
	require.Equal(t, map[int32]int{0: 4, 1: 4}, perRack, "leaders alternate racks")
	_, err = assign([]int32{0, 1}, map[int32]string{0: "x"}, 0, 2, 1)
	require.ErrorIs(t, err, ErrInvalidReplicaAssignment)
	require.ErrorContains(t, err, "not all brokers have rack information")
	a, err = assign([]int32{0, 1}, map[int32]string{}, 3, 2, 1)
	require.NoError(t, err)
	require.Len(t, a, 2)
	require.Contains(t, a, int32(3))
}
