// Package perf holds `qk perf produce/consume/end-to-end`: Kafka's perf
// tools on franz-go's kgo with HdrHistogram latencies. It reaches brokers
// only over the wire. (Arrives with the perf issue.)
package perf
