// Package assign is Kafka's replica assignment (AdminUtils.
// assignReplicasToBrokers) as pure functions, shared by the controller,
// which places new topics and partitions, and by the client tools, which
// propose reassignments (qk reassign-partitions --generate). It lives here,
// not in broker/controller, so that admin can use it without importing
// broker internals.
//
// Kafka draws the start index and the replica shift at random; here the
// caller passes them, so that tests can fix them and callers draw them
// (rand.IntN(len(brokers)) each, as Kafka does).
package assign

import "slices"

// RackUnaware spreads n partitions, numbered from first, of rf replicas
// each over brokers as Kafka's assignReplicasToBrokersRackUnaware does:
// partition p's leader is brokers[(p+start) % len], and each further
// replica is shifted from it by an amount that starts at shift and grows
// by one every len(brokers) partitions (counted by partition id, as Kafka
// does, so added partitions continue the pattern). It returns an empty map
// when there are fewer brokers than rf.
func RackUnaware(brokers []int32, first int32, n, rf, start, shift int) map[int32][]int32 {
	out := make(map[int32][]int32, n)
	nb := len(brokers)
	if nb == 0 || rf > nb {
		return out
	}
	p := max(first, 0)
	for range n {
		if p > 0 && int(p)%nb == 0 {
			shift++
		}
		firstIdx := (int(p) + start) % nb
		replicas := []int32{brokers[firstIdx]}
		for j := range rf - 1 {
			replicas = append(replicas, brokers[replicaIndex(firstIdx, shift, j, nb)])
		}
		out[p] = replicas
		p++
	}
	return out
}

// RackAware is Kafka's assignReplicasToBrokersRackAware: the brokers are
// ordered alternating racks (RackAlternated), the leaders of successive
// partitions go round that order from start, and each further replica goes
// to the next broker, after a shift that changes every len(brokers)
// partitions, whose rack holds no replica of the partition yet (unless
// every rack does) and which holds none itself (unless every broker does).
// So replicas spread over racks first, then over brokers, and leaders over
// both. It returns an empty map when there are fewer brokers than rf.
func RackAware(racks map[int32]string, brokers []int32, first int32, n, rf, start, shift int) map[int32][]int32 {
	out := make(map[int32][]int32, n)
	arranged := RackAlternated(racks, brokers)
	nb := len(arranged)
	if nb == 0 || rf > nb {
		return out
	}
	numRacks := len(distinct(racks, brokers))
	p := max(first, 0)
	for range n {
		if p > 0 && int(p)%nb == 0 {
			shift++
		}
		firstIdx := (int(p) + start) % nb
		leader := arranged[firstIdx]
		replicas := []int32{leader}
		rackSeen := map[string]bool{racks[leader]: true}
		brokerSeen := map[int32]bool{leader: true}
		k := 0
		for range rf - 1 {
			for {
				b := arranged[replicaIndex(firstIdx, shift*numRacks, k, nb)]
				k++
				rack := racks[b]
				if (!rackSeen[rack] || len(rackSeen) == numRacks) && (!brokerSeen[b] || len(brokerSeen) == nb) {
					replicas = append(replicas, b)
					rackSeen[rack], brokerSeen[b] = true, true
					break
				}
			}
		}
		out[p] = replicas
		p++
	}
	return out
}

// replicaIndex is Kafka's: the k-th candidate after firstIdx for a shift.
func replicaIndex(firstIdx, shift, k, nb int) int {
	if nb == 1 {
		return firstIdx
	}
	s := 1 + (shift+k)%(nb-1)
	return (firstIdx + s) % nb
}

// RackAlternated orders brokers one rack after the other: the racks
// sorted, each rack's brokers sorted, taking the next broker of each rack
// in turn (Kafka's getRackAlternatedBrokerList): racks a: 0 1 2, b: 3 4,
// c: 5 give 0 3 5 1 4 2.
func RackAlternated(racks map[int32]string, brokers []int32) []int32 {
	byRack := map[string][]int32{}
	for _, b := range brokers {
		byRack[racks[b]] = append(byRack[racks[b]], b)
	}
	names := distinct(racks, brokers)
	for _, r := range names {
		slices.Sort(byRack[r])
	}
	var out []int32
	for i := 0; len(out) < len(brokers); i++ {
		r := names[i%len(names)]
		if len(byRack[r]) > 0 {
			out = append(out, byRack[r][0])
			byRack[r] = byRack[r][1:]
		}
	}
	return out
}

func distinct(racks map[int32]string, brokers []int32) []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range brokers {
		if r := racks[b]; !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
