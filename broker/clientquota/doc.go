// Package clientquota is Kafka's client quotas (KIP-13, KIP-55, KIP-124):
// the quota entities stored under /config/users and /config/clients, the
// order in which a (user, client-id) pair is matched against them, and
// the sampled rate and throttle time of ClientQuotaManager and
// ClientRequestQuotaManager. Everything but Manager is pure: values in,
// values out, the time passed as an argument.
//
// # Entities in the store
//
// Kafka's ZooKeeper layout, names sanitized as Kafka's Sanitizer does
// (URL-encoding, '*' as %2A, ' ' as %20):
//
//	/config/users/<user>                        Entity{User: Named(u)}
//	/config/users/<user>/clients/<client-id>    Entity{User: Named(u), Client: Named(c)}
//	/config/users/<user>/clients/<default>      Entity{User: Named(u), Client: Default}
//	/config/users/<default>                     Entity{User: Default}
//	/config/users/<default>/clients/<client-id> Entity{User: Default, Client: Named(c)}
//	/config/users/<default>/clients/<default>   Entity{User: Default, Client: Default}
//	/config/clients/<client-id>                 Entity{Client: Named(c)}
//	/config/clients/<default>                   Entity{Client: Default}
//
// Each node holds {"version":1,"config":{"producer_byte_rate":"1048576",...}}.
// A user node may hold SCRAM-SHA-256 / SCRAM-SHA-512 credentials beside
// its quotas: the same node, other keys, which quota writes keep.
//
// # Resolution
//
// For a (user, client-id) pair and one quota type, the first of these
// that sets the type's key wins (DefaultQuotaCallback.quotaMetricTags):
//
//	1 users/<user>/clients/<client-id>   sensor (user, client-id)
//	2 users/<user>/clients/<default>     sensor (user, client-id)
//	3 users/<user>                       sensor (user, "")
//	4 users/<default>/clients/<client-id> sensor (user, client-id)
//	5 users/<default>/clients/<default>  sensor (user, client-id)
//	6 users/<default>                    sensor (user, "")
//	7 clients/<client-id>                sensor ("", client-id)
//	8 clients/<default>                  sensor ("", client-id)
//
// The sensor key follows the matched level: a quota on a user alone is
// shared by all of that user's clients, a default client quota is kept
// per client id. Kafka's shortcuts for clusters using one level only
// change which sensor an unlimited pair records into, never a limit, and
// are not copied.
//
// # Rate and throttle time
//
// A sensor's Rate sums the values recorded in the live samples of
// quota.window.size.seconds (1 s) each, quota.window.num (11) of them,
// and divides by the time since the oldest began, padded to at least
// num-1 whole windows (Kafka's Rate.windowSize). A value is recorded
// first and the rate checked after; above the bound the throttle time is
// (rate - bound) / bound × windowSize (QuotaUtils.throttleTime), the delay
// that brings the average back to the bound if nothing more is recorded.
// Kafka caps it at one window for request quotas
// (ClientRequestQuotaManager) and not for byte rates; Config.MaxThrottle
// says which. A sensor idle for an hour is dropped
// (InactiveSensorExpirationTimeSeconds).
package clientquota
