package controller

import (
	"fmt"
	"math/rand/v2"

	assignpkg "github.com/qk-project/qk/internal/assign"
)

// assign spreads n new partitions, numbered from first, over the live
// brokers as Kafka's AdminUtils.assignReplicasToBrokers does: rack-aware
// when every broker has a broker.rack, rack-unaware when none has, and
// refused when only some have (Kafka's "Not all brokers have rack
// information for replica rack aware assignment"). The algorithms are in
// internal/assign, shared with qk reassign-partitions --generate; the
// random start index and shift are drawn here, as Kafka draws them.
func assign(live []int32, racks map[int32]string, first int32, n, rf int) (map[int32][]int32, error) {
	if len(live) == 0 {
		return map[int32][]int32{}, nil // rand.IntN(0) panics; the caller reports too few brokers
	}
	withRack := 0
	for _, b := range live {
		if racks[b] != "" {
			withRack++
		}
	}
	switch withRack {
	case 0:
		return assignpkg.RackUnaware(live, first, n, rf, rand.IntN(len(live)), rand.IntN(len(live))), nil
	case len(live):
		return assignpkg.RackAware(racks, live, first, n, rf, rand.IntN(len(live)), rand.IntN(len(live))), nil
	}
	return nil, fmt.Errorf("%w: not all brokers have rack information for replica rack aware assignment", ErrInvalidReplicaAssignment)
}
