//lint:file-ignore ST1005 the error texts are Kafka's messages, verbatim, which scripts match

package admin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Replication throttles of a reassignment, as Kafka's tool sets them. The
// rates are dynamic broker configs on every broker that sends or receives
// a moving partition; which replicas they apply to are topic configs,
// "partition:broker" lists: on the leader side the replicas the partition
// has now (the sources a new replica copies from), on the follower side
// the replicas being added (the destinations).
const (
	LeaderThrottledRate       = "leader.replication.throttled.rate"
	FollowerThrottledRate     = "follower.replication.throttled.rate"
	AlterLogDirsThrottledRate = "replica.alter.log.dirs.io.max.bytes.per.second"
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// brokerThrottles and topicThrottles are what verify and cancel clear.
var (
	brokerThrottles = []string{LeaderThrottledRate, FollowerThrottledRate, AlterLogDirsThrottledRate}
	topicThrottles  = []string{LeaderThrottledReplicas, FollowerThrottledReplicas}
)

// partitionMove is one partition's move: the brokers holding it before
// and the brokers it is copied to.
type partitionMove struct {
	sources, destinations map[int32]bool
}

// moveMap is the moves by topic and partition.
type moveMap map[string]map[int32]partitionMove

// proposedMoves is Kafka's calculateProposedMoveMap: the moves already in
// progress (so that resubmitting with --additional keeps their throttles)
// and those proposed. A proposed partition already moving keeps the
// sources of that move, since its current replicas then include the ones
// being added; any other takes its current replicas as sources. A
// partition's destinations are the proposed replicas that are not sources.
func proposedMoves(ongoing map[TopicPartition]OngoingReassignment, proposed, current map[TopicPartition][]int32) (moveMap, error) {
	m := moveMap{}
	add := func(tp TopicPartition, mv partitionMove) {
		if m[tp.Topic] == nil {
			m[tp.Topic] = map[int32]partitionMove{}
		}
		m[tp.Topic][tp.Partition] = mv
	}
	for tp, r := range ongoing {
		mv := partitionMove{sources: set(r.Replicas), destinations: set(r.Adding)}
		for _, b := range r.Adding {
			delete(mv.sources, b)
		}
		add(tp, mv)
	}
	for _, tp := range slices.SortedFunc(maps.Keys(proposed), compareTP) {
		var sources map[int32]bool
		if mv, ok := m[tp.Topic][tp.Partition]; ok {
			sources = maps.Clone(mv.sources)
		} else if cur, ok := current[tp]; ok {
			sources = set(cur)
		} else {
			return nil, fmt.Errorf("Trying to reassign a topic partition %s with 0 replicas", tp)
		}
		dest := set(proposed[tp])
		for b := range sources {
			delete(dest, b)
		}
		add(tp, partitionMove{sources: sources, destinations: dest})
	}
	return m, nil
}

// leaderThrottles is Kafka's calculateLeaderThrottles: for each topic,
// "partition:source" for every source, sorted as strings (Kafka keeps
// them in a TreeSet of strings, so "10:1" sorts before "2:0").
func (m moveMap) leaderThrottles() map[string]string {
	out := map[string]string{}
	for topic, parts := range m {
		var c []string
		for p, mv := range parts {
			for b := range mv.sources {
				c = append(c, fmt.Sprintf("%d:%d", p, b))
			}
		}
		slices.Sort(c)
		out[topic] = strings.Join(c, ",")
	}
	return out
}

// followerThrottles is Kafka's calculateFollowerThrottles: for each
// topic, "partition:destination" for every destination that is not also a
// source. A topic whose moves add no replica gets "", as in Kafka.
func (m moveMap) followerThrottles() map[string]string {
	out := map[string]string{}
	for topic, parts := range m {
		var c []string
		for p, mv := range parts {
			for b := range mv.destinations {
				if !mv.sources[b] {
					c = append(c, fmt.Sprintf("%d:%d", p, b))
				}
			}
		}
		slices.Sort(c)
		out[topic] = strings.Join(c, ",")
	}
	return out
}

// reassigningBrokers is every source and destination, sorted: the
// brokers whose rates are throttled.
func (m moveMap) reassigningBrokers() []int32 {
	all := map[int32]bool{}
	for _, parts := range m {
		for _, mv := range parts {
			maps.Copy(all, mv.sources)
			maps.Copy(all, mv.destinations)
		}
	}
	return slices.Sorted(maps.Keys(all))
}

func set(bs []int32) map[int32]bool {
	out := make(map[int32]bool, len(bs))
	for _, b := range bs {
		out[b] = true
	}
	return out
}
