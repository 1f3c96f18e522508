package api

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is one row of the table: the versions qk serves and the function
// that serves them.
type api struct {
	key    int16
	min    int16
	max    int16
	handle func(h *Handler, c *call)
	// control: an inter-broker request from the controller, served on
	// the inter-broker listener only and not advertised in ApiVersions.
	control bool
	// waits: the handler may wait on the metadata store, the controller
	// or other brokers (a topic's creation reaching every broker, an
	// election, a store round trip while ZooKeeper is away), for up to
	// the request's timeout. It runs on a goroutine of its own, so that
	// it holds none of the num.io.threads handler goroutines: a few such
	// waits must not stall every other client of the broker (issue 19).
	// Kafka gets the same with its topic purgatory.
	waits bool
}

// apis is the one table that drives both dispatch (Handle) and the
// ApiVersions answer. A version outside [min, max] is refused: by
// ApiVersions with UNSUPPORTED_VERSION, by every other API with a closed
// connection, as Kafka does. Each max is the newest version the handler
// implements correctly, at most what kmsg knows; the version notes are at
// the top of each API's file.
var apis = []api{
	{key: 0, min: 3, max: 13, handle: (*Handler).handleProduce},
	{key: 1, min: 4, max: 18, handle: (*Handler).handleFetch},
	{key: 2, min: 0, max: 11, handle: (*Handler).handleListOffsets},
	{key: 3, min: 0, max: 13, handle: (*Handler).handleMetadata},
	{key: 4, min: 0, max: 7, handle: (*Handler).handleControl, control: true},
	{key: 5, min: 0, max: 4, handle: (*Handler).handleControl, control: true},
	{key: 6, min: 0, max: 8, handle: (*Handler).handleControl, control: true},
	{key: 7, min: 1, max: 3, handle: (*Handler).handleControl, control: true},
	{key: 8, min: 0, max: 10, handle: (*Handler).handleOffsetCommit},
	{key: 9, min: 0, max: 10, handle: (*Handler).handleOffsetFetch},
	{key: 10, min: 0, max: 6, handle: (*Handler).handleFindCoordinator, waits: true},
	{key: 11, min: 0, max: 9, handle: (*Handler).handleJoinGroup},
	{key: 12, min: 0, max: 4, handle: (*Handler).handleHeartbeat},
	{key: 13, min: 0, max: 5, handle: (*Handler).handleLeaveGroup},
	{key: 14, min: 0, max: 5, handle: (*Handler).handleSyncGroup},
	{key: 15, min: 0, max: 6, handle: (*Handler).handleDescribeGroups},
	{key: 16, min: 0, max: 5, handle: (*Handler).handleListGroups},
	{key: 17, min: 0, max: 1, handle: (*Handler).handleSaslHandshake},
	{key: 18, min: 0, max: 5, handle: (*Handler).handleApiVersions},
	{key: 19, min: 0, max: 7, handle: (*Handler).handleCreateTopics, waits: true},
	{key: 20, min: 0, max: 6, handle: (*Handler).handleDeleteTopics, waits: true},
	{key: 21, min: 0, max: 2, handle: (*Handler).handleDeleteRecords, waits: true},
	{key: 22, min: 0, max: 5, handle: (*Handler).handleInitProducerID, waits: true},
	{key: 23, min: 0, max: 4, handle: (*Handler).handleOffsetForLeaderEpoch},
	{key: 24, min: 0, max: 4, handle: (*Handler).handleAddPartitionsToTxn, waits: true},
	{key: 25, min: 0, max: 3, handle: (*Handler).handleAddOffsetsToTxn, waits: true},
	{key: 26, min: 0, max: 4, handle: (*Handler).handleEndTxn, waits: true},
	{key: 27, min: 0, max: 1, handle: (*Handler).handleWriteTxnMarkers, waits: true},
	{key: 28, min: 0, max: 4, handle: (*Handler).handleTxnOffsetCommit, waits: true},
	{key: 29, min: 0, max: 3, handle: (*Handler).handleDescribeACLs, waits: true},
	{key: 30, min: 0, max: 3, handle: (*Handler).handleCreateACLs, waits: true},
	{key: 31, min: 0, max: 3, handle: (*Handler).handleDeleteACLs, waits: true},
	{key: 32, min: 0, max: 4, handle: (*Handler).handleDescribeConfigs, waits: true},
	{key: 33, min: 0, max: 2, handle: (*Handler).handleAlterConfigs, waits: true},
	{key: 34, min: 0, max: 2, handle: (*Handler).handleAlterReplicaLogDirs},
	{key: 35, min: 0, max: 5, handle: (*Handler).handleDescribeLogDirs},
	{key: 36, min: 0, max: 2, handle: (*Handler).handleSaslAuthenticate},
	{key: 37, min: 0, max: 3, handle: (*Handler).handleCreatePartitions, waits: true},
	{key: 42, min: 0, max: 3, handle: (*Handler).handleDeleteGroups},
	{key: 43, min: 0, max: 2, handle: (*Handler).handleElectLeaders, waits: true},
	{key: 44, min: 0, max: 1, handle: (*Handler).handleIncrementalAlterConfigs, waits: true},
	{key: 45, min: 0, max: 1, handle: (*Handler).handleAlterPartitionReassignments, waits: true},
	{key: 46, min: 0, max: 0, handle: (*Handler).handleListPartitionReassignments, waits: true},
	{key: 47, min: 0, max: 0, handle: (*Handler).handleOffsetDelete},
	{key: 48, min: 0, max: 1, handle: (*Handler).handleDescribeClientQuotas, waits: true},
	{key: 49, min: 0, max: 1, handle: (*Handler).handleAlterClientQuotas, waits: true},
	{key: 50, min: 0, max: 0, handle: (*Handler).handleDescribeUserScramCredentials, waits: true},
	{key: 51, min: 0, max: 0, handle: (*Handler).handleAlterUserScramCredentials, waits: true},
	{key: 56, min: 0, max: 3, handle: (*Handler).handleControl, control: true},
	{key: 60, min: 0, max: 2, handle: (*Handler).handleDescribeCluster},
	{key: 61, min: 0, max: 0, handle: (*Handler).handleDescribeProducers},
	{key: 65, min: 0, max: 0, handle: (*Handler).handleDescribeTransactions},
	{key: 66, min: 0, max: 2, handle: (*Handler).handleListTransactions},
}

// byKey indexes apis by key, and versionKeys is the ApiVersions key
// list in table order; both are built once from apis (in init, since
// the ApiVersions handler in the table reads them).
var (
	byKey       map[int16]*api
	versionKeys []kmsg.ApiVersionsResponseApiKey
	// controlKeys adds the inter-broker APIs, for the controller's
	// connections.
	controlKeys []kmsg.ApiVersionsResponseApiKey
)

func init() {
	byKey = make(map[int16]*api, len(apis))
	for i := range apis {
		a := &apis[i]
		if _, dup := byKey[a.key]; dup {
			panic("api: key registered twice")
		}
		r := kmsg.RequestForKey(a.key)
		if r == nil || a.max > r.MaxVersion() || a.min > a.max {
			panic("api: table row outside what kmsg knows")
		}
		byKey[a.key] = a
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		controlKeys = append(controlKeys, k)
		if !a.control {
			versionKeys = append(versionKeys, k)
		}
	}
}

// apiVersionKeys is the ApiVersions key list.
func apiVersionKeys() []kmsg.ApiVersionsResponseApiKey { return versionKeys }
