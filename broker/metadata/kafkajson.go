package metadata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Codecs for the JSON Kafka keeps in ZooKeeper (ZkData.scala). Unmarshal
// functions read every version Kafka has written and ignore fields they do
// not know; Marshal functions write the current version with the fields in
// the order a real Kafka 3.0 wrote them (Jackson hash order, so maps may
// still differ: compare semantics, not bytes).

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener         string // listener name, upper case: PLAINTEXT, CLIENT, ...
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	Host             string // "" binds all interfaces
	Port             int32
}

// String is Kafka's connection string: PLAINTEXT://host:9092, with IPv6
// hosts in brackets.
func (e Endpoint) String() string {
	return e.Listener + "://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// ParseEndpoint parses a connection string. protocols maps listener names
// to security protocols (listener_security_protocol_map); without it the
// listener name is the protocol, as before Kafka 0.10.2.
func ParseEndpoint(s string, protocols map[string]string) (Endpoint, error) {
	name, hostPort, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return Endpoint{}, fmt.Errorf("%w: endpoint %q is not LISTENER://host:port", ErrMalformed, s)
	}
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w: endpoint %q: %v", ErrMalformed, s, err)
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w: endpoint %q: bad port", ErrMalformed, s)
	}
	e := Endpoint{Listener: strings.ToUpper(name), Host: host, Port: int32(port)}
	e.SecurityProtocol = e.Listener
	if protocols != nil {
		p, ok := protocols[e.Listener]
		if !ok {
			return Endpoint{}, fmt.Errorf("%w: endpoint %q: listener %s not in listener_security_protocol_map", ErrMalformed, s, e.Listener)
		}
		e.SecurityProtocol = p
	}
	return e, nil
}

// FeatureRange is the range of versions a broker supports for one feature
// (KIP-584).
type FeatureRange struct {
	MinVersion int16 `json:"min_version"`
	MaxVersion int16 `json:"max_version"`
}

// BrokerRegistration is the data of /brokers/ids/<id>.
type BrokerRegistration struct {
	// Version is the JSON schema: 5 (Kafka 2.7+, with features), 4
	// (0.10.0+, with listener_security_protocol_map), 2 or 3 (endpoints
	// only) or 1 (host and port only). MarshalBrokerRegistration writes 5
	// when it is 0.
	Version   int
	Endpoints []Endpoint
	JMXPort   int32                   // -1 without JMX
	Timestamp int64                   // registration time, ms since the epoch
	Rack      string                  // "" without broker.rack
	Features  map[string]FeatureRange // supported features (version 5)
	// HTTPEndpoint is qk's extra top-level field qk_http_endpoint: the
	// URL of the broker's admin HTTP server ("http://127.0.0.1:9644"),
	// "" when it has none. Kafka's parsers ignore unknown fields, and a
	// registration without it (Kafka's own) decodes with "".
	HTTPEndpoint string
}

// brokerJSON is the wire form; fields in Kafka 3.0's order.
type brokerJSON struct {
	Features                    *map[string]FeatureRange `json:"features,omitempty"`
	ListenerSecurityProtocolMap *map[string]string       `json:"listener_security_protocol_map,omitempty"`
	Endpoints                   *[]string                `json:"endpoints,omitempty"`
	JMXPort                     *int32                   `json:"jmx_port,omitempty"`
	Port                        *int32                   `json:"port,omitempty"`
	Host                        *string                  `json:"host"`
	Version                     *int                     `json:"version,omitempty"`
	Timestamp                   flexInt64                `json:"timestamp"`
	Rack                        *string                  `json:"rack,omitempty"`
	HTTPEndpoint                string                   `json:"qk_http_endpoint,omitempty"`
}

// MarshalBrokerRegistration encodes b. Like Kafka, the top-level host and
// port are those of the first PLAINTEXT endpoint (null and -1 without
// one), for clients that predate endpoints.
func MarshalBrokerRegistration(b BrokerRegistration) []byte {
	version := b.Version
	if version == 0 {
		version = 5
	}
	port := int32(-1)
	var host *string
	for _, e := range b.Endpoints {
		if e.SecurityProtocol == "PLAINTEXT" {
			h := e.Host
			host, port = &h, e.Port
			break
		}
	}
	w := brokerJSON{JMXPort: &b.JMXPort, Port: &port, Host: host, Version: &version, Timestamp: flexInt64(b.Timestamp),
		HTTPEndpoint: b.HTTPEndpoint}
	endpoints := make([]string, len(b.Endpoints))
	for i, e := range b.Endpoints {
		endpoints[i] = e.String()
	}
	if version >= 2 {
		w.Endpoints = &endpoints
	}
	if version >= 3 && b.Rack != "" {
		w.Rack = &b.Rack
	}
	if version >= 4 {
		m := make(map[string]string, len(b.Endpoints))
		for _, e := range b.Endpoints {
			m[e.Listener] = e.SecurityProtocol
		}
		w.ListenerSecurityProtocolMap = &m
	}
	if version >= 5 {
		f := b.Features
		if f == nil {
			f = map[string]FeatureRange{}
		}
		w.Features = &f
	}
	return mustJSON(w)
}

// UnmarshalBrokerRegistration decodes the data of /brokers/ids/<id>, any
// version from 1 on.
func UnmarshalBrokerRegistration(data []byte) (BrokerRegistration, error) {
	var w brokerJSON
	if err := unmarshal("broker registration", data, &w); err != nil {
		return BrokerRegistration{}, err
	}
	bad := func(format string, args ...any) (BrokerRegistration, error) {
		return BrokerRegistration{}, fmt.Errorf("%w: broker registration: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	if w.Version == nil || *w.Version < 1 {
		return bad("missing or unsupported version")
	}
	b := BrokerRegistration{Version: *w.Version, JMXPort: -1, Timestamp: int64(w.Timestamp), HTTPEndpoint: w.HTTPEndpoint}
	if w.JMXPort != nil {
		b.JMXPort = *w.JMXPort
	}
	if w.Rack != nil {
		b.Rack = *w.Rack
	}
	if w.Features != nil {
		b.Features = *w.Features
	}
	if b.Version == 1 || w.Endpoints == nil {
		if b.Version > 1 {
			return bad("version %d without endpoints", b.Version)
		}
		if w.Host == nil || w.Port == nil {
			return bad("version 1 without host and port")
		}
		b.Endpoints = []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: *w.Host, Port: *w.Port}}
		return b, nil
	}
	var protocols map[string]string
	if w.ListenerSecurityProtocolMap != nil {
		protocols = make(map[string]string, len(*w.ListenerSecurityProtocolMap))
		for k, v := range *w.ListenerSecurityProtocolMap {
			protocols[strings.ToUpper(k)] = v
		}
	}
	for _, s := range *w.Endpoints {
		e, err := ParseEndpoint(s, protocols)
		if err != nil {
			return BrokerRegistration{}, err
		}
		b.Endpoints = append(b.Endpoints, e)
	}
	return b, nil
}

// TopicAssignment is the data of /brokers/topics/<topic>: the replicas of
// each partition, and those being added or removed by a reassignment.
type TopicAssignment struct {
	TopicID          [16]byte // all zero for topics created before Kafka 2.8
	Partitions       map[int32][]int32
	AddingReplicas   map[int32][]int32
	RemovingReplicas map[int32][]int32
}

type topicJSON struct {
	Partitions       map[int32][]int32 `json:"partitions"`
	TopicID          string            `json:"topic_id,omitempty"`
	AddingReplicas   map[int32][]int32 `json:"adding_replicas"`
	RemovingReplicas map[int32][]int32 `json:"removing_replicas"`
	Version          int               `json:"version"`
}

// MarshalTopicAssignment encodes version 3 (Kafka 2.8+). As Kafka, it
// lists adding and removing replicas only for partitions that have some,
// and writes topic_id only when the id is set.
func MarshalTopicAssignment(a TopicAssignment) []byte {
	w := topicJSON{
		Partitions:       replicaMap(a.Partitions, true),
		AddingReplicas:   replicaMap(a.AddingReplicas, false),
		RemovingReplicas: replicaMap(a.RemovingReplicas, false),
		Version:          3,
	}
	if a.TopicID != ([16]byte{}) {
		w.TopicID = FormatUUID(a.TopicID)
	}
	return mustJSON(w)
}

// replicaMap returns m with no nil lists (they would be null), and
// without empty lists unless keepEmpty.
func replicaMap(m map[int32][]int32, keepEmpty bool) map[int32][]int32 {
	out := make(map[int32][]int32, len(m))
	for p, r := range m {
		switch {
		case len(r) > 0:
			out[p] = r
		case keepEmpty:
			out[p] = []int32{}
		}
	}
	return out
}

// UnmarshalTopicAssignment decodes versions 1 (partitions only), 2
// (adding/removing replicas) and 3 (topic_id).
func UnmarshalTopicAssignment(data []byte) (TopicAssignment, error) {
	var w topicJSON
	if err := unmarshal("topic assignment", data, &w); err != nil {
		return TopicAssignment{}, err
	}
	a := TopicAssignment{
		Partitions:       nonNil(w.Partitions),
		AddingReplicas:   nonNil(w.AddingReplicas),
		RemovingReplicas: nonNil(w.RemovingReplicas),
	}
	if w.TopicID != "" {
		id, err := ParseUUID(w.TopicID)
		if err != nil {
			return TopicAssignment{}, fmt.Errorf("topic assignment: %w", err)
		}
		a.TopicID = id
	}
	return a, nil
}

func nonNil(m map[int32][]int32) map[int32][]int32 {
	if m == nil {
		return map[int32][]int32{}
	}
	return m
}

// NoLeader is the leader of a partition without one.
const NoLeader int32 = -1

// PartitionState is the data of .../partitions/<p>/state: leader and ISR
// as last written by the controller of ControllerEpoch. The node's data
// version (Stat.Version) is the partition epoch, Kafka's zkVersion.
type PartitionState struct {
	Leader          int32 // NoLeader when offline
	LeaderEpoch     int32
	ISR             []int32
	ControllerEpoch int32
	// LeaderRecoveryState is 1 (RECOVERING) after an unclean election until
	// the new leader has recovered, else 0 (RECOVERED, not written).
	LeaderRecoveryState int8
}

type partitionStateJSON struct {
	ControllerEpoch     *int32  `json:"controller_epoch"`
	Leader              *int32  `json:"leader"`
	Version             int     `json:"version"`
	LeaderEpoch         *int32  `json:"leader_epoch"`
	ISR                 []int32 `json:"isr"`
	LeaderRecoveryState int8    `json:"leader_recovery_state,omitempty"`
}

// MarshalPartitionState encodes version 1.
func MarshalPartitionState(s PartitionState) []byte {
	isr := s.ISR
	if isr == nil {
		isr = []int32{}
	}
	return mustJSON(partitionStateJSON{
		ControllerEpoch: &s.ControllerEpoch, Leader: &s.Leader, Version: 1,
		LeaderEpoch: &s.LeaderEpoch, ISR: isr, LeaderRecoveryState: s.LeaderRecoveryState,
	})
}

// UnmarshalPartitionState decodes a partition state; leader, leader_epoch,
// isr and controller_epoch are required, as in Kafka.
func UnmarshalPartitionState(data []byte) (PartitionState, error) {
	var w partitionStateJSON
	if err := unmarshal("partition state", data, &w); err != nil {
		return PartitionState{}, err
	}
	if w.Leader == nil || w.LeaderEpoch == nil || w.ControllerEpoch == nil || w.ISR == nil {
		return PartitionState{}, fmt.Errorf("%w: partition state %s: leader, leader_epoch, isr and controller_epoch are required", ErrMalformed, data)
	}
	return PartitionState{
		Leader: *w.Leader, LeaderEpoch: *w.LeaderEpoch, ISR: w.ISR,
		ControllerEpoch: *w.ControllerEpoch, LeaderRecoveryState: w.LeaderRecoveryState,
	}, nil
}

// MarshalEntityConfig encodes /config/<type>/<entity>:
// {"version":1,"config":{...}}, every value a string.
func MarshalEntityConfig(config map[string]string) []byte {
	if config == nil {
		config = map[string]string{}
	}
	return mustJSON(struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}{1, config})
}

// UnmarshalEntityConfig decodes an entity config. A value that is not a
// JSON string (Kafka never writes one) is kept as its JSON text, a null
// one is dropped, and a missing config is empty. So is a node without
// data: the parent /config/users/<user> that creating
// /config/users/<user>/clients/<client-id> made, as Kafka's
// createRecursive makes it.
func UnmarshalEntityConfig(data []byte) (map[string]string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]string{}, nil
	}
	var w struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := unmarshal("entity config", data, &w); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(w.Config))
	for k, raw := range w.Config {
		var s string
		switch {
		case bytes.Equal(raw, []byte("null")):
		case json.Unmarshal(raw, &s) == nil:
			out[k] = s
		default:
			out[k] = string(raw)
		}
	}
	return out, nil
}

// MarshalConfigChange encodes a config change notification (version 2):
// entityPath is "<type>/<entity>", e.g. "topics/orders", "brokers/1",
// "brokers/<default>" or "users/alice/clients/c1".
func MarshalConfigChange(entityPath string) []byte {
	return mustJSON(struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
	}{2, entityPath})
}

// UnmarshalConfigChange returns the entity path of a config change
// notification, from version 2 or version 1 ({"version":1,
// "entity_type":"topics","entity_name":"orders"}).
func UnmarshalConfigChange(data []byte) (string, error) {
	var w struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
		EntityType string `json:"entity_type"`
		EntityName string `json:"entity_name"`
	}
	if err := unmarshal("config change", data, &w); err != nil {
		return "", err
	}
	switch {
	case w.Version == 1 && w.EntityType != "" && w.EntityName != "":
		return w.EntityType + "/" + w.EntityName, nil
	case w.Version >= 2 && w.EntityPath != "":
		return w.EntityPath, nil
	}
	return "", fmt.Errorf("%w: config change %s", ErrMalformed, data)
}

// ControllerInfo is the data of the ephemeral /controller node.
type ControllerInfo struct {
	// Version is 1, or 2 (Kafka 3.4+) with KRaftControllerEpoch. Marshal
	// writes 1 when it is 0.
	Version              int
	BrokerID             int32
	Timestamp            int64 // election time, ms since the epoch
	KRaftControllerEpoch int32 // version 2 only: -1 for a ZooKeeper controller
}

type controllerJSON struct {
	Version              int       `json:"version"`
	BrokerID             *int32    `json:"brokerid"`
	Timestamp            flexInt64 `json:"timestamp"`
	KRaftControllerEpoch *int32    `json:"kraftControllerEpoch,omitempty"`
}

// MarshalController encodes c.
func MarshalController(c ControllerInfo) []byte {
	w := controllerJSON{Version: c.Version, BrokerID: &c.BrokerID, Timestamp: flexInt64(c.Timestamp)}
	if w.Version == 0 {
		w.Version = 1
	}
	if w.Version >= 2 {
		w.KRaftControllerEpoch = &c.KRaftControllerEpoch
	}
	return mustJSON(w)
}

// UnmarshalController decodes /controller; brokerid is required.
func UnmarshalController(data []byte) (ControllerInfo, error) {
	var w controllerJSON
	if err := unmarshal("controller", data, &w); err != nil {
		return ControllerInfo{}, err
	}
	if w.BrokerID == nil {
		return ControllerInfo{}, fmt.Errorf("%w: controller %s: no brokerid", ErrMalformed, data)
	}
	c := ControllerInfo{Version: w.Version, BrokerID: *w.BrokerID, Timestamp: int64(w.Timestamp), KRaftControllerEpoch: -1}
	if w.KRaftControllerEpoch != nil {
		c.KRaftControllerEpoch = *w.KRaftControllerEpoch
	}
	return c, nil
}

// MarshalControllerEpoch encodes /controller_epoch: the epoch as decimal
// text, not JSON.
func MarshalControllerEpoch(epoch int32) []byte { return strconv.AppendInt(nil, int64(epoch), 10) }

// UnmarshalControllerEpoch decodes /controller_epoch.
func UnmarshalControllerEpoch(data []byte) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: controller epoch %q", ErrMalformed, data)
	}
	return int32(n), nil
}

// MarshalClusterID encodes /cluster/id: {"version":"1","id":"..."}, with
// the version as a string, as Kafka writes it.
func MarshalClusterID(id string) []byte {
	return mustJSON(struct {
		Version string `json:"version"`
		ID      string `json:"id"`
	}{"1", id})
}

// UnmarshalClusterID returns the id in /cluster/id.
func UnmarshalClusterID(data []byte) (string, error) {
	var w struct {
		ID string `json:"id"`
	}
	if err := unmarshal("cluster id", data, &w); err != nil {
		return "", err
	}
	if w.ID == "" {
		return "", fmt.Errorf("%w: cluster id %s: no id", ErrMalformed, data)
	}
	return w.ID, nil
}

// ProducerIDBlock is the data of /latest_producer_id_block: the last block
// of producer ids handed to a broker, Start to End inclusive.
type ProducerIDBlock struct {
	BrokerID int32
	Start    int64
	End      int64
}

type producerIDBlockJSON struct {
	Version    int        `json:"version"`
	Broker     int32      `json:"broker"`
	BlockStart *flexInt64 `json:"block_start"`
	BlockEnd   *flexInt64 `json:"block_end"`
}

// MarshalProducerIDBlock encodes version 1, with the bounds as strings.
func MarshalProducerIDBlock(b ProducerIDBlock) []byte {
	start, end := flexInt64(b.Start), flexInt64(b.End)
	return mustJSON(producerIDBlockJSON{Version: 1, Broker: b.BrokerID, BlockStart: &start, BlockEnd: &end})
}

// UnmarshalProducerIDBlock decodes /latest_producer_id_block.
func UnmarshalProducerIDBlock(data []byte) (ProducerIDBlock, error) {
	var w producerIDBlockJSON
	if err := unmarshal("producer id block", data, &w); err != nil {
		return ProducerIDBlock{}, err
	}
	if w.BlockStart == nil || w.BlockEnd == nil || *w.BlockEnd < *w.BlockStart {
		return ProducerIDBlock{}, fmt.Errorf("%w: producer id block %s", ErrMalformed, data)
	}
	return ProducerIDBlock{BrokerID: w.Broker, Start: int64(*w.BlockStart), End: int64(*w.BlockEnd)}, nil
}

// flexInt64 is written as a JSON string holding a decimal integer, as
// Kafka writes timestamps and producer-id bounds, and read from such a
// string or from a plain number. null and "" read as 0.
type flexInt64 int64

func (v flexInt64) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, strconv.FormatInt(int64(v), 10)), nil
}

func (v *flexInt64) UnmarshalJSON(b []byte) error {
	text := string(b)
	if text == "null" {
		*v = 0
		return nil
	}
	if strings.HasPrefix(text, `"`) {
		s, err := strconv.Unquote(text)
		if err != nil {
			return err
		}
		if s == "" {
			*v = 0
			return nil
		}
		text = s
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an integer", b)
	}
	*v = flexInt64(n)
	return nil
}

func unmarshal(what string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s %q: %v", ErrMalformed, what, data, err)
	}
	return nil
}

// mustJSON marshals values that cannot fail to marshal (no channels, no
// functions, no cycles), without HTML escaping: "brokers/<default>" stays
// as Kafka writes it.
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("metadata: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// PartitionReassignment is one entry of /admin/reassign_partitions, the
// node through which Kafka's tools before 2.4 (and scripts that write
// ZooKeeper) ask the controller for a reassignment.
type PartitionReassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

type reassignJSON struct {
	Version    int                     `json:"version"`
	Partitions []PartitionReassignment `json:"partitions"`
}

// MarshalReassignment encodes /admin/reassign_partitions (version 1).
func MarshalReassignment(ps []PartitionReassignment) []byte {
	if ps == nil {
		ps = []PartitionReassignment{}
	}
	return mustJSON(reassignJSON{Version: 1, Partitions: ps})
}

// UnmarshalReassignment decodes /admin/reassign_partitions; fields other
// tools add (log_dirs) are ignored.
func UnmarshalReassignment(data []byte) ([]PartitionReassignment, error) {
	var w reassignJSON
	if err := unmarshal("partition reassignment", data, &w); err != nil {
		return nil, err
	}
	if w.Version != 1 {
		return nil, fmt.Errorf("%w: partition reassignment version %d, want 1", ErrMalformed, w.Version)
	}
	return w.Partitions, nil
}
