// Package httpapi is the broker's admin HTTP server: Prometheus metrics
// with the names a Kafka operator knows, and JSON status that no Kafka
// API gives (each follower's log end offset as the leader sees it), for
// `qk top`.
//
// Routes:
//
//	GET /metrics         Prometheus text exposition (one registry per broker:
//	                     several brokers share a process in tests and in
//	                     --local-cluster, so the global registry is never used)
//	GET /v1/partitions   every hosted partition, leader or follower:
//	                     {"broker_id":0,"partitions":[{"topic":"t","partition":0,
//	                      "role":"leader","leader_id":0,"leader_epoch":3,
//	                      "replicas":[0,1,2],"isr":[0,1,2],"log_start_offset":0,
//	                      "log_end_offset":1200,"high_watermark":1200,
//	                      "last_stable_offset":1200,"size_bytes":1234567,
//	                      "followers":[{"broker_id":1,"log_end_offset":1200,"lag":0,
//	                        "last_caught_up_ms_ago":12,"in_isr":true}]}]}
//	GET /v1/health       200 {"ready":true,"reasons":[]} or
//	                     503 {"ready":false,"reasons":["loading logs"]}
//
// Cost. The hot paths only add to atomics resolved ahead of time: the
// per-topic byte and message counters live on replica.Partition, and the
// request counter and latency histogram of an API key are looked up in a
// fixed array (resolved on the key's first request). Every gauge
// (partition states, log sizes, purgatory sizes, queue length, idle
// ratio) is computed at scrape time from state the broker keeps anyway.
//
// Start-up. The server binds before the logs are loaded, so /v1/health
// can say "loading logs"; the other routes answer empty data until the
// broker publishes its parts (SetState).
package httpapi
