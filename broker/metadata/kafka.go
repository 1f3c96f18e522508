package metadata

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kafka's ZooKeeper paths (kafka.zk.ZkData, Kafka 2.x/3.x). A chroot from
// zookeeper.connect is the store's business, not these paths'.
const (
	ClusterIDPath                = "/cluster/id"
	ControllerPath               = "/controller"       // ephemeral
	ControllerEpochPath          = "/controller_epoch" // plain-text integer
	BrokerIDsPath                = "/brokers/ids"      // children ephemeral
	BrokerTopicsPath             = "/brokers/topics"
	BrokerSeqIDPath              = "/brokers/seqid" // its version numbers generated broker ids
	ConfigChangesPath            = "/config/changes"
	DeleteTopicsPath             = "/admin/delete_topics"
	ReassignPartitionsPath       = "/admin/reassign_partitions"
	PreferredReplicaElectionPath = "/admin/preferred_replica_election"
	IsrChangeNotificationPath    = "/isr_change_notification"
	LogDirEventNotificationPath  = "/log_dir_event_notification"
	ProducerIDBlockPath          = "/latest_producer_id_block"
	ConsumersPath                = "/consumers"
	FeaturePath                  = "/feature"

	// ConfigChangePrefix is the name prefix of the sequential nodes under
	// ConfigChangesPath: config_change_0000000042.
	ConfigChangePrefix = "config_change_"
)

// Config entity types: the second component of /config/<type>/<entity>.
const (
	ConfigTopics  = "topics"
	ConfigClients = "clients"
	ConfigUsers   = "users"
	ConfigBrokers = "brokers"
	ConfigIPs     = "ips"

	// DefaultEntity names the cluster-wide default of a config type:
	// /config/brokers/<default>.
	DefaultEntity = "<default>"
)

// PersistentPaths are the nodes a Kafka broker creates at start-up
// (ZkData.PersistentZkPaths), in Kafka's order.
var PersistentPaths = []string{
	ConsumersPath,
	BrokerIDsPath,
	BrokerTopicsPath,
	ConfigChangesPath,
	DeleteTopicsPath,
	BrokerSeqIDPath,
	IsrChangeNotificationPath,
	ProducerIDBlockPath,
	LogDirEventNotificationPath,
	"/config/" + ConfigTopics,
	"/config/" + ConfigClients,
	"/config/" + ConfigUsers,
	"/config/" + ConfigBrokers,
	"/config/" + ConfigIPs,
}

// EnsureKafkaPaths creates PersistentPaths (and their parents) where they
// are missing, as a Kafka broker does when it starts.
func EnsureKafkaPaths(ctx context.Context, s Store) error {
	for _, p := range PersistentPaths {
		if err := EnsurePath(ctx, s, p); err != nil {
			return err
		}
	}
	return nil
}

// BrokerPath is /brokers/ids/<id>, the broker's ephemeral registration.
// Its Czxid is the broker epoch.
func BrokerPath(id int32) string { return BrokerIDsPath + "/" + strconv.Itoa(int(id)) }

// TopicPath is /brokers/topics/<topic>, the topic's replica assignment.
func TopicPath(topic string) string { return BrokerTopicsPath + "/" + topic }

// TopicPartitionsPath is /brokers/topics/<topic>/partitions (no data).
func TopicPartitionsPath(topic string) string { return TopicPath(topic) + "/partitions" }

// PartitionPath is /brokers/topics/<topic>/partitions/<partition> (no data).
func PartitionPath(topic string, partition int32) string {
	return TopicPartitionsPath(topic) + "/" + strconv.Itoa(int(partition))
}

// PartitionStatePath is /brokers/topics/<topic>/partitions/<partition>/state,
// the leader and ISR. Its data version is the partition epoch.
func PartitionStatePath(topic string, partition int32) string {
	return PartitionPath(topic, partition) + "/state"
}

// EntityConfigPath is /config/<entityType>/<entity>, e.g.
// /config/topics/orders or /config/brokers/<default>. Kafka sanitises user
// and client names (URL-encoding); topic names and broker ids need none.
func EntityConfigPath(entityType, entity string) string {
	return "/config/" + entityType + "/" + entity
}

// DeleteTopicPath is /admin/delete_topics/<topic>: its presence asks the
// controller to delete the topic.
func DeleteTopicPath(topic string) string { return DeleteTopicsPath + "/" + topic }

// ErrMalformed is wrapped by the Unmarshal functions when a node's data is
// not what Kafka writes there.
var ErrMalformed = errors.New("metadata: malformed znode data")

// ErrProducerIDsExhausted means no producer-id block is left below
// math.MaxInt64.
var ErrProducerIDsExhausted = errors.New("metadata: producer ids exhausted")

// ProducerIDBlockSize is Kafka's producer-id block size
// (ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// AllocateProducerIDBlock reserves the next size producer ids for
// brokerID and returns the first and last (inclusive), as Kafka's
// ZkProducerIdManager does: read /latest_producer_id_block, write the
// block that follows with a compare-and-set on the node's version, and
// retry when another broker won the race. The first block starts at 0.
func AllocateProducerIDBlock(ctx context.Context, s Store, brokerID int32, size int64) (start, end int64, err error) {
	if size <= 0 {
		return 0, 0, fmt.Errorf("metadata: producer id block size %d", size)
	}
	for {
		data, st, err := s.Get(ctx, ProducerIDBlockPath)
		if errors.Is(err, ErrNoNode) {
			if err := EnsurePath(ctx, s, ProducerIDBlockPath); err != nil {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		start = 0
		if len(data) > 0 {
			prev, err := UnmarshalProducerIDBlock(data)
			if err != nil {
				return 0, 0, err
			}
			if prev.End > math.MaxInt64-size {
				return 0, 0, fmt.Errorf("%w: last block ends at %d", ErrProducerIDsExhausted, prev.End)
			}
			start = prev.End + 1
		}
		block := ProducerIDBlock{BrokerID: brokerID, Start: start, End: start + size - 1}
		_, err = s.Set(ctx, ProducerIDBlockPath, MarshalProducerIDBlock(block), st.Version)
		if errors.Is(err, ErrBadVersion) {
			continue // another broker took the block: read the new one
		}
		if err != nil {
			return 0, 0, err
		}
		return block.Start, block.End, nil
	}
}

// NextBrokerID generates a broker id as Kafka does for
// broker.id.generation.enable: bump the data version of /brokers/seqid and
// add reservedMax (reserved.broker.max.id, 1000 by default), so the first
// generated id is 1001. The Set is unconditional (AnyVersion), so
// concurrent brokers each get their own version, hence their own id.
func NextBrokerID(ctx context.Context, s Store, reservedMax int32) (int32, error) {
	for {
		st, err := s.Set(ctx, BrokerSeqIDPath, nil, AnyVersion)
		if errors.Is(err, ErrNoNode) {
			if err := EnsurePath(ctx, s, BrokerSeqIDPath); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		id := int64(st.Version) + int64(reservedMax)
		if id > math.MaxInt32 {
			return 0, fmt.Errorf("metadata: generated broker id %d (version %d of %s + %d) is not an int32", id, st.Version, BrokerSeqIDPath, reservedMax)
		}
		return int32(id), nil
	}
}

// GetOrCreateClusterID returns the id in /cluster/id, first writing
// newID there if the node is missing (Kafka's getOrGenerateClusterId). If
// another broker creates it first, its id wins.
func GetOrCreateClusterID(ctx context.Context, s Store, newID string) (string, error) {
	for {
		data, _, err := s.Get(ctx, ClusterIDPath)
		if err == nil {
			return UnmarshalClusterID(data)
		}
		if !errors.Is(err, ErrNoNode) {
			return "", err
		}
		_, err = CreateAll(ctx, s, ClusterIDPath, MarshalClusterID(newID), 0)
		if err == nil {
			return newID, nil
		}
		if !errors.Is(err, ErrNodeExists) {
			return "", err
		}
	}
}

// ReadEntityConfig returns the config of /config/<entityType>/<entity>,
// empty if the node does not exist (as Kafka's fetchEntityConfig).
func ReadEntityConfig(ctx context.Context, s Store, entityType, entity string) (map[string]string, error) {
	data, _, err := s.Get(ctx, EntityConfigPath(entityType, entity))
	if errors.Is(err, ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return UnmarshalEntityConfig(data)
}

// WriteEntityConfig replaces the config of an entity and then announces
// the change with a sequential /config/changes/config_change_ node, as
// Kafka's AdminZkClient.changeEntityConfig does; brokers watch
// /config/changes and reload the entity. It returns the notification's
// path.
func WriteEntityConfig(ctx context.Context, s Store, entityType, entity string, config map[string]string) (string, error) {
	path := EntityConfigPath(entityType, entity)
	data := MarshalEntityConfig(config)
	_, err := s.Set(ctx, path, data, AnyVersion)
	if errors.Is(err, ErrNoNode) {
		_, err = CreateAll(ctx, s, path, data, 0)
		if errors.Is(err, ErrNodeExists) { // created meanwhile
			_, err = s.Set(ctx, path, data, AnyVersion)
		}
	}
	if err != nil {
		return "", err
	}
	return CreateAll(ctx, s, ConfigChangesPath+"/"+ConfigChangePrefix,
		MarshalConfigChange(entityType+"/"+entity), Sequential)
}

// UpdateEntityConfig changes the config of an entity with update and
// announces the change as WriteEntityConfig does, but only writes over
// the version it read (retrying on a concurrent change), so keys that
// update leaves alone survive another writer: a user's quotas and its
// SCRAM credentials share /config/users/<user>. An update error is
// returned as is and nothing is written.
func UpdateEntityConfig(ctx context.Context, s Store, entityType, entity string, update func(map[string]string) error) (string, error) {
	path := EntityConfigPath(entityType, entity)
	for {
		data, st, err := s.Get(ctx, path)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNoNode) {
			return "", err
		}
		cfg, err := UnmarshalEntityConfig(data)
		if err != nil {
			return "", err
		}
		if err := update(cfg); err != nil {
			return "", err
		}
		out := MarshalEntityConfig(cfg)
		if exists {
			_, err = s.Set(ctx, path, out, st.Version)
		} else {
			_, err = CreateAll(ctx, s, path, out, 0)
		}
		if errors.Is(err, ErrBadVersion) || errors.Is(err, ErrNodeExists) || errors.Is(err, ErrNoNode) {
			continue // changed meanwhile: read it again
		}
		if err != nil {
			return "", err
		}
		return CreateAll(ctx, s, ConfigChangesPath+"/"+ConfigChangePrefix,
			MarshalConfigChange(entityType+"/"+entity), Sequential)
	}
}

// NewUUID returns a random Kafka Uuid (topic ids, cluster ids) following
// Uuid.randomUuid: never the all-zero id, never the metadata topic's id
// (1), and never one whose text starts with '-' (it would read as a
// command-line flag).
func NewUUID() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		// Version 4, IETF variant, as java.util.UUID.randomUUID.
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id == ([16]byte{}) || id == ([16]byte{15: 1}) || strings.HasPrefix(FormatUUID(id), "-") {
			continue
		}
		return id
	}
}

// FormatUUID returns Kafka's text form of a Uuid: URL-safe base64 without
// padding, 22 characters.
func FormatUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseUUID parses FormatUUID's text (padding is tolerated).
func ParseUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%w: uuid %q is not 16 bytes of URL-safe base64", ErrMalformed, s)
	}
	copy(id[:], b)
	return id, nil
}
