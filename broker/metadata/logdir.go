package metadata

import (
	"context"
	"fmt"
)

// LogDirEventPrefix is the name prefix of the sequential nodes under
// LogDirEventNotificationPath: log_dir_event_0000000042 (Kafka's
// LogDirEventNotificationSequenceZNode).
const LogDirEventPrefix = "log_dir_event_"

// LogDirFailure is the only log directory event Kafka defines
// (LogDirEventNotificationHandler.LogDirFailureEvent).
const LogDirFailure = 1

// LogDirEventNotification is the data of a log_dir_event node: a broker
// announcing that one of its log directories failed (KIP-112). It names
// the broker only, not the directory nor the partitions: the controller
// learns which replicas are lost by sending the broker LeaderAndIsr for
// every partition it hosts, which it answers with KAFKA_STORAGE_ERROR
// for each one whose log was on the failed directory.
type LogDirEventNotification struct {
	BrokerID int32
	Event    int // LogDirFailure
}

// MarshalLogDirEventNotification encodes n as Kafka's
// LogDirEventNotificationSequenceZNode.encode: {"version":1,"broker":0,"event":1}.
func MarshalLogDirEventNotification(n LogDirEventNotification) []byte {
	return mustJSON(struct {
		Version  int   `json:"version"`
		BrokerID int32 `json:"broker"`
		Event    int   `json:"event"`
	}{1, n.BrokerID, n.Event})
}

// UnmarshalLogDirEventNotification decodes a log_dir_event node. Kafka's
// controller reads only "broker" (every event is a failure); an event
// other than LogDirFailure is still returned, for the caller to judge.
func UnmarshalLogDirEventNotification(data []byte) (LogDirEventNotification, error) {
	var w struct {
		Version  int    `json:"version"`
		BrokerID *int32 `json:"broker"`
		Event    *int   `json:"event"`
	}
	if err := unmarshal("log dir event notification", data, &w); err != nil {
		return LogDirEventNotification{}, err
	}
	if w.BrokerID == nil || *w.BrokerID < 0 {
		return LogDirEventNotification{}, fmt.Errorf("%w: log dir event notification %s has no broker", ErrMalformed, data)
	}
	n := LogDirEventNotification{BrokerID: *w.BrokerID, Event: LogDirFailure}
	if w.Event != nil {
		n.Event = *w.Event
	}
	return n, nil
}

// CreateLogDirEvent announces that a log directory of broker brokerID
// failed (Kafka's KafkaZkClient.propagateLogDirEvent): a persistent
// sequential node under LogDirEventNotificationPath that the active
// controller, watching its children, reads and deletes. The node is
// persistent so that a controller elected later still sees it. It
// returns the node's path.
func CreateLogDirEvent(ctx context.Context, s Store, brokerID int32) (string, error) {
	return CreateAll(ctx, s, LogDirEventNotificationPath+"/"+LogDirEventPrefix,
		MarshalLogDirEventNotification(LogDirEventNotification{BrokerID: brokerID, Event: LogDirFailure}), Sequential)
}
