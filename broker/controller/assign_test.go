package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
)

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
