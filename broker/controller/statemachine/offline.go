package statemachine

import (
	"maps"
	"slices"
)

// OfflineDirs are the replicas each broker has reported on a failed log
// directory (KIP-112; Kafka's ControllerContext.replicasOnOfflineDirs):
// broker -> partitions. A broker does not say which directory failed, only,
// in its LeaderAndIsr answers, which partitions it cannot serve
// (KAFKA_STORAGE_ERROR). A replica in the set is offline although its
// broker is live: it can neither lead nor be in an ISR. A directory comes
// back only when its broker restarts, so a broker's set lasts until its
// registration goes or changes (Forget). The zero value is not usable:
// make one with make(OfflineDirs).
type OfflineDirs map[int32]map[TopicPartition]bool

// Contains reports whether broker's replica of tp is on an offline
// directory.
func (o OfflineDirs) Contains(broker int32, tp TopicPartition) bool { return o[broker][tp] }

// Update applies one LeaderAndIsr answer of broker (Kafka's
// handleLeaderAndIsrResponse: the set becomes previous - served +
// failed): failed are the partitions answered KAFKA_STORAGE_ERROR,
// served those answered without error. It returns the replicas newly
// offline and those back, each sorted: only newly offline replicas go
// through onReplicasBecomeOffline, so a broker answering the same error
// again changes nothing; a replica back is one whose broker serves its
// log again (a Kafka broker does not before a restart; qk's may, once
// it opens the log on a later LeaderAndIsr).
func (o OfflineDirs) Update(broker int32, failed, served []TopicPartition) (offline, back []TopicPartition) {
	for _, tp := range served {
		if o[broker][tp] && !slices.Contains(failed, tp) {
			delete(o[broker], tp)
			back = append(back, tp)
		}
	}
	for _, tp := range failed {
		if o[broker][tp] {
			continue
		}
		if o[broker] == nil {
			o[broker] = map[TopicPartition]bool{}
		}
		o[broker][tp] = true
		offline = append(offline, tp)
	}
	if len(o[broker]) == 0 {
		delete(o, broker)
	}
	slices.SortFunc(offline, Compare)
	slices.SortFunc(back, Compare)
	return offline, back
}

// Forget drops broker's set: it died or registered again (a restart,
// after which its directories are whatever it found at start-up).
func (o OfflineDirs) Forget(broker int32) { delete(o, broker) }

// ForgetTopic drops topic's partitions from every broker's set once the
// topic is deleted: a topic created again under the name gets new logs,
// which may be on a healthy directory.
func (o OfflineDirs) ForgetTopic(topic string) {
	for id, tps := range o {
		maps.DeleteFunc(tps, func(tp TopicPartition, _ bool) bool { return tp.Topic == topic })
		if len(tps) == 0 {
			delete(o, id)
		}
	}
}

// ReplicaOnline is Kafka's ControllerContext.isReplicaOnline for one
// partition: the Live that the elections and ISR rules take, from
// broker, whether a broker is up (live, or live and not shutting down),
// and the offline directories. A replica is online when its broker is
// and its log is not on an offline directory. Every choice of a leader or
// of an ISR member for tp goes through it, so that a replica on a failed
// directory is never elected nor let back into the ISR.
func ReplicaOnline(broker Live, offline OfflineDirs, tp TopicPartition) Live {
	return func(r int32) bool { return broker(r) && !offline.Contains(r, tp) }
}
