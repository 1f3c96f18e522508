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
	{key: 10, min: 0, max: 6, handle: (*Handler).handleFindCoordinator},
	{key: 11, min: 0, max: 9, handle: (*Handler).handleJoinGroup},
	{key: 12, min: 0, max: 4, handle: (*Handler).handleHeartbeat},
	{key: 13, min: 0, max: 5, handle: (*Handler).handleLeaveGroup},
	{key: 14, min: 0, max: 5, handle: (*Handler).handleSyncGroup},
	{key: 15, min: 0, max: 6, handle: (*Handler).handleDescribeGroups},
	{key: 16, min: 0, max: 5, handle: (*Handler).handleListGroups},
	{key: 17, min: 0, max: 1, handle: (*Handler).handleSaslHandshake},
	{key: 18, min: 0, max: 5, handle: (*Handler).handleApiVersions},
	{key: 19, min: 0, max: 7, handle: (*Handler).handleCreateTopics},
	{key: 20, min: 0, max: 6, handle: (*Handler).handleDeleteTopics},
	{key: 21, min: 0, max: 2, handle: (*Handler).handleDeleteRecords},
	{key: 22, min: 0, max: 5, handle: (*Handler).handleInitProducerID},
	{key: 23, min: 0, max: 4, handle: (*Handler).handleOffsetForLeaderEpoch},
	{key: 29, min: 0, max: 3, handle: (*Handler).handleDescribeACLs},
	{key: 30, min: 0, max: 3, handle: (*Handler).handleCreateACLs},
	{key: 31, min: 0, max: 3, handle: (*Handler).handleDeleteACLs},
	{key: 32, min: 0, max: 4, handle: (*Handler).handleDescribeConfigs},
	{key: 33, min: 0, max: 2, handle: (*Handler).handleAlterConfigs},
	{key: 35, min: 0, max: 5, handle: (*Handler).handleDescribeLogDirs},
	{key: 36, min: 0, max: 2, handle: (*Handler).handleSaslAuthenticate},
	{key: 37, min: 0, max: 3, handle: (*Handler).handleCreatePartitions},
	{key: 42, min: 0, max: 3, handle: (*Handler).handleDeleteGroups},
	{key: 43, min: 0, max: 2, handle: (*Handler).handleElectLeaders},
	{key: 44, min: 0, max: 1, handle: (*Handler).handleIncrementalAlterConfigs},
	{key: 45, min: 0, max: 1, handle: (*Handler).handleAlterPartitionReassignments},
	{key: 46, min: 0, max: 0, handle: (*Handler).handleListPartitionReassignments},
	{key: 47, min: 0, max: 0, handle: (*Handler).handleOffsetDelete},
	{key: 48, min: 0, max: 1, handle: (*Handler).handleDescribeClientQuotas},
	{key: 49, min: 0, max: 1, handle: (*Handler).handleAlterClientQuotas},
	{key: 50, min: 0, max: 0, handle: (*Handler).handleDescribeUserScramCredentials},
	{key: 51, min: 0, max: 0, handle: (*Handler).handleAlterUserScramCredentials},
	{key: 56, min: 0, max: 3, handle: (*Handler).handleControl, control: true},
	{key: 60, min: 0, max: 2, handle: (*Handler).handleDescribeCluster},
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
