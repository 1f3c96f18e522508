// Package perf holds `qk perf produce`, `qk perf consume` and `qk perf
// end-to-end`: Apache Kafka's kafka-producer-perf-test,
// kafka-consumer-perf-test and EndToEndLatency tools on franz-go's kgo,
// printing what Kafka's tools print so scripts and habits carry over. It
// reaches brokers only over the wire, so it measures qk or any other
// Kafka-compatible cluster.
//
// # Producer
//
// Produce runs Producers kgo clients; they take record numbers from one
// shared counter, so the total is exact, and wait for their number's turn
// on one Throttler (an absolute schedule, start + n/rate). Each record's
// latency is from the Produce call to its acknowledgement, recorded in
// microseconds in an HdrHistogram (3 significant digits) for every record;
// Kafka keeps a sample of at most 500,000 whole-millisecond latencies.
//
//	producer 0 ─┐  next.Add(1) ─► Throttler.Wait(n) ─► kgo Produce ─┐
//	producer 1 ─┤                                                   │ ack
//	   ...      ┘                                                   ▼
//	                       produceStats (mutex): total + window tallies
//	                       window ≥ interval → progress line
//	                       all flushed       → final line
//
// Kafka's producer properties (--producer-props, --producer.config) map
// onto kgo options through one table, ProducerConfig.Set; unknown keys are
// errors. Defaults are Kafka's client defaults where they shape the
// result (acks=all with idempotence, linger.ms=5), franz-go's otherwise
// (1 MB batches rather than batch.size=16384).
//
// # Output formats
//
// Text lines are Kafka's printf formats, checked against Kafka's sources:
//
//	ProducerPerformance (3.x), every 5 s and at the end:
//	  %d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.
//	  %d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency,
//	      %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.        (one line; 4.0: %.1f records/sec)
//	ConsumerPerformance:
//	  start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
//	      rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec  (one line)
//	  %s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f
//	EndToEndLatency:
//	  %d\t<Double.toString>   every 1000 records
//	  Avg latency: %.4f ms
//	  Percentiles: 50th = %d, 99th = %d, 99.9th = %d
//
// MB is bytes/1024/1024. --json replaces them with one JSON object per
// line (ProduceReport, ConsumeReport, EndToEndReport), whose field names
// are a contract with the bench tooling.
//
// # Invariants
//
//   - Stats count only acknowledged, non-warmup records; a failed record is
//     counted as an error, printed (the first 100), and makes the run fail
//     after the stats were printed.
//   - The throttler never sleeps less than 2 ms and never drifts: the rate
//     over a run is the requested one whenever the client could go faster.
package perf
