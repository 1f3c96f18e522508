// Package api serves the Kafka protocol: Handler implements
// network.Handler, decodes each request with franz-go's kmsg, runs the
// API's handler and encodes the response.
//
// # Layout
//
// One file per API key, named NN_name.go as franz-go's kfake does, each
// opening with a comment on the versions served and Kafka behaviour kept
// or left out. handlers.go holds the one table of {key, min version, max
// version, handler}: it drives dispatch and the ApiVersions answer, so
// what qk advertises is exactly what it serves. errors.go is the one map
// from internal errors (sentinels of log, record, replica, controller,
// config, metadata) to Kafka error codes.
//
// # Frames
//
// The network layer hands over the frame after the size prefix:
//
//	request:  api_key i16 | api_version i16 | correlation_id i32 |
//	          client_id nullable-string | [tagged fields: header v2,
//	          flexible versions] | body
//	response: correlation_id i32 | [tagged fields: header v1, flexible
//	          versions, except ApiVersions which always uses header v0] |
//	          body
//
// An unknown key, a version outside the table (ApiVersions excepted: it
// answers v0 with UNSUPPORTED_VERSION and the key list) or a body that
// does not decode closes the connection with a Warn line; other
// connections are untouched.
//
// # The Fetch response
//
// Fetch is the one response framed by hand (fetchframe.go): the fixed
// fields are encoded into a buffer, and each partition's records are a
// file region of its segment, so the network layer sends them with
// sendfile(2) straight from the page cache. The layout is byte for byte
// kmsg's (a test compares them for every version):
//
//	throttle_ms i32 | error_code i16 | session_id i32 | [topics]
//	topic:     name string (v<13) or topic_id uuid (v13+) | [partitions]
//	partition: partition i32 | error_code i16 | high_watermark i64 |
//	           last_stable_offset i64 | log_start_offset i64 |
//	           aborted_txns nullable-array | preferred_read_replica i32 |
//	           records_len (i32, or uvarint len+1 when flexible)
//	           ── records: a file region, sent with sendfile ──
//	           [tagged fields: current_leader]
//	[tagged fields: node_endpoints]
//
// # Lifetimes
//
// Produce and Fetch are decoded with UnsafeReadFrom: their strings alias
// the request frame, which the network layer keeps until the response is
// written. Handlers clone what they keep longer (a topic name given to the
// controller). All other requests are copied out of the frame.
//
// # Delayed fetches
//
// A fetch that has less than min_bytes is a purgatory.Operation watched
// under its partitions' keys in the fetch purgatory: no goroutine waits
// for it. When a high watermark moves, the replica manager calls
// HighWatermarkAdvanced, which re-reads the fetches watching that
// partition and answers those that now have enough; the operation's timer
// answers the others at max_wait with what there is. Shutting the
// purgatory down answers every waiting fetch at once.
//
// # Requests that wait
//
// A handler runs on one of the num.io.threads handler goroutines, which
// every client of the broker shares. Requests that may wait (the admin
// APIs marked waits in handlers.go: topic creation and deletion waiting
// for every broker's metadata, elections, store round trips that hang
// while ZooKeeper is away; Metadata and Produce when they auto-create a
// topic) run on a goroutine of their own instead (call.detach), as
// Kafka parks them in its topic purgatory: a few of them waiting must not
// leave other clients' fetches and heartbeats queued behind them. That
// was the cause of a consumer's Close waiting minutes for its last Fetch
// on a busy cluster (issue 19; e2e TestAdminWaitsDoNotStallClients).
// Such a request's response still leaves in its connection's order; the
// connection's next request is handled meanwhile.
//
// # Fetch sessions
//
// fetchsession.go keeps Kafka's fetch sessions (KIP-227): a cache of
// sessions by id, each an ordered set of partitions with the fetcher's
// last parameters and what the session's last answer said. A request
// becomes a fetchContext (sessionless, full, incremental or a session
// error) before it is read; the context's partitions (for an incremental
// fetch, all of the session's) are what the fetch reads and waits on,
// and finishFetchResponse, just before framing, creates the session of a
// full fetch or cuts an incremental answer down to the partitions with
// news. Invariants: a session's epoch is the one its next request must
// carry; a cached partition's high watermark is -1 until an answer
// carried it and after an error; session ids are unique positive int32s.
package api
