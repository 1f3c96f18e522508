package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/qk-project/qk/broker/controller/statemachine"
	"github.com/qk-project/qk/broker/metadata"
)

// Log directory failures (KIP-112), as Kafka's ZooKeeper-mode controller
// handles them:
//
//  1. A broker whose log directory fails writes a sequential node under
//     /log_dir_event_notification (metadata.CreateLogDirEvent) naming
//     itself, not the directory.
//  2. The controller, watching that node's children, reads and deletes
//     each notification and sends the broker LeaderAndIsr for every
//     partition it hosts, with their current leader and ISR
//     (onBrokerLogDirFailure: the replicas go OnlineReplica again).
//  3. The broker answers KAFKA_STORAGE_ERROR for each partition whose log
//     was on a failed directory. Any LeaderAndIsr answer does: a broker
//     started with a directory offline, a new partition placed on one.
//     The controller records the replicas (cc.offlineDirs) and takes them
//     offline (onReplicasBecomeOffline): partitions they led get a leader
//     from the rest of the ISR, the replicas leave their ISRs, and every
//     broker's metadata lists them as OfflineReplicas.
//
// From then on every election and ISR check (cc.onlineReplicas) passes
// them over and they are told no roles, until the broker's registration
// goes or changes: a Kafka broker's directories come back only with a
// restart. A later notification of the broker sends them LeaderAndIsr
// again, as Kafka's does; one answered without error is back (qk's
// broker may open a log it could not before). A controller that takes
// over does not know them, and learns them again from the answers to the
// LeaderAndIsr it sends every broker at failover.

// watchLogDirEvents watches the notifications' parent, created first if
// missing: brokers create it at start-up (metadata.EnsureKafkaPaths), but
// a store set up by other tools may lack it, and a watch on children
// needs the node.
func (c *Controller) watchLogDirEvents(ctx context.Context) error {
	if err := metadata.EnsurePath(ctx, c.store, metadata.LogDirEventNotificationPath); err != nil {
		return err
	}
	return c.watch(metadata.LogDirEventNotificationPath, metadata.WatchChildren, c.processLogDirEventNotification)
}

// processLogDirEventNotification is Kafka's LogDirEventNotification
// event: every pending notification is read, its broker's partitions are
// sent LeaderAndIsr, and the notifications are deleted (also those that
// cannot be read, so that one bad node does not come back forever).
func (c *Controller) processLogDirEventNotification() {
	ctx, cancel := c.opCtx()
	defer cancel()
	if err := c.watchLogDirEvents(ctx); err != nil {
		c.retryLater("watch log dir events", err, c.processLogDirEventNotification)
		return
	}
	children, _, err := c.store.Children(ctx, metadata.LogDirEventNotificationPath)
	if err != nil {
		c.retryLater("list log dir events", err, c.processLogDirEventNotification)
		return
	}
	slices.Sort(children)
	var brokers []int32
	var processed []string
	for _, child := range children {
		if !strings.HasPrefix(child, metadata.LogDirEventPrefix) {
			continue
		}
		path := metadata.LogDirEventNotificationPath + "/" + child
		data, _, err := c.store.Get(ctx, path)
		if errors.Is(err, metadata.ErrNoNode) {
			continue
		}
		if err != nil {
			c.retryLater("read log dir event", err, c.processLogDirEventNotification)
			return
		}
		processed = append(processed, path)
		n, err := metadata.UnmarshalLogDirEventNotification(data)
		if err != nil {
			c.lg.Warn("unreadable log dir event notification; deleted", "path", path, "err", err)
			continue
		}
		if n.Event != metadata.LogDirFailure {
			c.lg.Warn("unknown log dir event; deleted", "path", path, "event", n.Event, "broker_id", n.BrokerID)
			continue
		}
		if !slices.Contains(brokers, n.BrokerID) {
			brokers = append(brokers, n.BrokerID)
		}
	}
	b := newBatch()
	c.onBrokerLogDirFailure(b, brokers)
	c.send(b)
	for _, path := range processed {
		// Fenced as Kafka's deleteLogDirEventNotifications: a deposed
		// controller leaves them to the new one.
		if _, err := c.multi(ctx, metadata.DeleteOp(path, metadata.AnyVersion)); err != nil && !errors.Is(err, metadata.ErrNoNode) {
			c.lg.Warn("cannot delete log dir event notification", "path", path, "err", err)
			if errors.Is(err, ErrFenced) {
				return
			}
		}
	}
}

// onBrokerLogDirFailure sends the brokers LeaderAndIsr for every partition
// they host (Kafka's onBrokerLogDirFailure: their replicas go
// OnlineReplica, which tells each its role): the answers say which are on
// a failed directory. Replicas already known offline are sent their
// state too, as Kafka's are, but stay OfflineReplica unless the answer
// says they are served again. Brokers that are not live (or are shutting
// down) are skipped, and so are the replicas of topics being deleted.
func (c *Controller) onBrokerLogDirFailure(b *requestBatch, brokers []int32) {
	cc := c.cc
	for _, id := range brokers {
		if !cc.isOnline(id) {
			c.lg.Info("log dir failure of a broker that is not live; ignored", "broker_id", id)
			continue
		}
		n := 0
		for _, tp := range cc.partitionsOn(id) {
			switch {
			case cc.toDelete[tp.Topic]:
				continue
			case cc.offlineDirs.Contains(id, tp):
				if _, ok := cc.states[tp]; ok {
					b.addLeaderAndIsr([]int32{id}, tp, false) // a probe: onLogDirAnswers
				}
			default:
				c.replicaOnline(b, statemachine.PartitionReplica{TopicPartition: tp, Replica: id})
			}
			n++
		}
		c.lg.Warn("handling log directory failure: asking the broker for its partitions", "broker_id", id, "partitions", n)
	}
}

// onLogDirAnswers applies broker id's LeaderAndIsr answers to its offline
// replicas (Kafka's handleLeaderAndIsrResponse): those answered
// KAFKA_STORAGE_ERROR for the first time go offline
// (onReplicasBecomeOffline); known ones answered without error (a
// probe's) are back: online again, and elected where they are the ISR
// left. An answer from an earlier registration of the broker is dropped:
// its offline replicas went with it.
func (c *Controller) onLogDirAnswers(id int32, brokerEpoch int64, failedRefs, servedRefs []partitionRef) {
	cc := c.cc
	if lb, ok := cc.live[id]; !ok || lb.epoch != brokerEpoch {
		return
	}
	byID := map[[16]byte]string{}
	for name, t := range cc.topics {
		byID[t.id] = name
	}
	resolve := func(refs []partitionRef) []TP {
		var out []TP
		for _, r := range refs {
			tp := TP{Topic: r.topic, Partition: r.partition}
			if r.topicID != ([16]byte{}) {
				tp.Topic = byID[r.topicID]
			}
			if slices.Contains(cc.replicas(tp), id) {
				out = append(out, tp)
			}
		}
		return out
	}
	offline, back := cc.offlineDirs.Update(id, resolve(failedRefs), resolve(servedRefs))
	if len(offline) == 0 && len(back) == 0 {
		return
	}
	ctx, cancel := c.opCtx()
	defer cancel()
	b := newBatch()
	if len(back) > 0 {
		c.lg.Info("replicas on a failed log directory are served again", "broker_id", id, "count", len(back),
			"partitions", fmt.Sprint(back))
		for _, tp := range back {
			pr := statemachine.PartitionReplica{TopicPartition: tp, Replica: id}
			if cc.sm.Replica(pr) == statemachine.OfflineReplica {
				c.setReplica(pr, statemachine.OnlineReplica)
			}
			b.addUpdateMetadata(cc.liveIDs(), tp)
		}
	}
	if len(offline) > 0 {
		c.lg.Warn("replicas on a failed log directory marked offline", "broker_id", id, "count", len(offline),
			"partitions", fmt.Sprint(offline))
		prs := make([]statemachine.PartitionReplica, 0, len(offline))
		for _, tp := range offline {
			prs = append(prs, statemachine.PartitionReplica{TopicPartition: tp, Replica: id})
		}
		c.onReplicasBecomeOffline(ctx, b, prs)
	} else {
		c.triggerOnlinePartitionStateChange(ctx, b)
	}
	c.send(b)
}

// onReplicasBecomeOffline is Kafka's: the partitions the replicas led go
// OfflinePartition and are elected from the replicas still online (none
// left: leader -1, as RemoveReplicaFromIsr leaves it); the replicas go
// OfflineReplica (out of their ISRs, the other replicas told); every
// broker gets the partitions' metadata, which lists the replicas as
// OfflineReplicas, also where no leader or ISR changed. Replicas of
// topics being deleted are left to the deletion (their StopReplica
// answers decide).
func (c *Controller) onReplicasBecomeOffline(ctx context.Context, b *requestBatch, prs []statemachine.PartitionReplica) {
	cc := c.cc
	var offline []statemachine.PartitionReplica
	for _, pr := range prs {
		tp := pr.TopicPartition
		if cc.toDelete[tp.Topic] {
			continue
		}
		offline = append(offline, pr)
		if s, ok := cc.states[tp]; ok && s.Leader == pr.Replica && cc.sm.Partition(tp) != statemachine.NewPartition {
			c.setPartition(tp, statemachine.OfflinePartition)
		}
	}
	c.triggerOnlinePartitionStateChange(ctx, b)
	c.replicasOffline(ctx, b, offline)
	for _, pr := range offline {
		b.addUpdateMetadata(cc.liveIDs(), pr.TopicPartition)
	}
}
