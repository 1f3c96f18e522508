package perf

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics counts what the clients did, through kgo hooks, for
// --print-metrics. One value is shared by all clients of a run.
type metrics struct {
	batches, batchRecords, batchBytes, batchUncompressed, batchMax atomic.Int64
	requests, produceRequests, fetchRequests, requestErrors        atomic.Int64
	bytesOut, bytesIn                                              atomic.Int64
	fetchBatches, fetchRecords, fetchBytes                         atomic.Int64
	recordsSent, recordErrors                                      atomic.Int64
}

var (
	_ kgo.HookProduceBatchWritten = (*metrics)(nil)
	_ kgo.HookBrokerWrite         = (*metrics)(nil)
	_ kgo.HookBrokerRead          = (*metrics)(nil)
	_ kgo.HookFetchBatchRead      = (*metrics)(nil)
)

func (m *metrics) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, b kgo.ProduceBatchMetrics) {
	m.batches.Add(1)
	m.batchRecords.Add(int64(b.NumRecords))
	m.batchBytes.Add(int64(b.CompressedBytes))
	m.batchUncompressed.Add(int64(b.UncompressedBytes))
	for {
		old := m.batchMax.Load()
		if int64(b.CompressedBytes) <= old || m.batchMax.CompareAndSwap(old, int64(b.CompressedBytes)) {
			break
		}
	}
}

func (m *metrics) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	m.requests.Add(1)
	m.bytesOut.Add(int64(n))
	switch key {
	case kmsg.Produce.Int16():
		m.produceRequests.Add(1)
	case kmsg.Fetch.Int16():
		m.fetchRequests.Add(1)
	}
	if err != nil {
		m.requestErrors.Add(1)
	}
}

func (m *metrics) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, err error) {
	m.bytesIn.Add(int64(n))
	if err != nil {
		m.requestErrors.Add(1)
	}
}

func (m *metrics) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, b kgo.FetchBatchMetrics) {
	m.fetchBatches.Add(1)
	m.fetchRecords.Add(int64(b.NumRecords))
	m.fetchBytes.Add(int64(b.CompressedBytes))
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

type metric struct {
	name  string
	value float64
}

// producer lists the producer metrics under Kafka's names where Kafka has
// the same measure (producer-metrics group); the others are qk's.
func (m *metrics) producer() []metric {
	return []metric{
		{"producer-metrics:batch-size-avg", ratio(m.batchBytes.Load(), m.batches.Load())},
		{"producer-metrics:batch-size-max", float64(m.batchMax.Load())},
		{"producer-metrics:batch-total", float64(m.batches.Load())},
		{"producer-metrics:compression-rate-avg", ratio(m.batchBytes.Load(), m.batchUncompressed.Load())},
		{"producer-metrics:incoming-byte-total", float64(m.bytesIn.Load())},
		{"producer-metrics:outgoing-byte-total", float64(m.bytesOut.Load())},
		{"producer-metrics:produce-request-total", float64(m.produceRequests.Load())},
		{"producer-metrics:record-error-total", float64(m.recordErrors.Load())},
		{"producer-metrics:record-send-total", float64(m.recordsSent.Load())},
		{"producer-metrics:records-per-batch-avg", ratio(m.batchRecords.Load(), m.batches.Load())},
		{"producer-metrics:records-per-request-avg", ratio(m.batchRecords.Load(), m.produceRequests.Load())},
		{"producer-metrics:request-error-total", float64(m.requestErrors.Load())},
		{"producer-metrics:request-total", float64(m.requests.Load())},
	}
}

// consumer lists the consumer metrics, named after Kafka's
// consumer-fetch-manager-metrics and consumer-metrics groups.
func (m *metrics) consumer() []metric {
	return []metric{
		{"consumer-fetch-manager-metrics:bytes-consumed-total", float64(m.fetchBytes.Load())},
		{"consumer-fetch-manager-metrics:fetch-size-avg", ratio(m.fetchBytes.Load(), m.fetchRequests.Load())},
		{"consumer-fetch-manager-metrics:fetch-total", float64(m.fetchRequests.Load())},
		{"consumer-fetch-manager-metrics:records-consumed-total", float64(m.fetchRecords.Load())},
		{"consumer-fetch-manager-metrics:records-per-batch-avg", ratio(m.fetchRecords.Load(), m.fetchBatches.Load())},
		{"consumer-fetch-manager-metrics:records-per-request-avg", ratio(m.fetchRecords.Load(), m.fetchRequests.Load())},
		{"consumer-metrics:incoming-byte-total", float64(m.bytesIn.Load())},
		{"consumer-metrics:outgoing-byte-total", float64(m.bytesOut.Load())},
		{"consumer-metrics:request-error-total", float64(m.requestErrors.Load())},
		{"consumer-metrics:request-total", float64(m.requests.Load())},
	}
}

// printMetrics prints like Kafka's ToolsUtils.printMetrics: a blank line,
// a "Metric Name   Value" header, then "group:name:{tags} : value" per
// metric in name order, names padded to the longest, values as %.3f (Kafka
// metric values are doubles).
func printMetrics(w io.Writer, ms []metric, clientID string) {
	tag := ":{client-id=" + clientID + "}"
	width := 0
	for _, m := range ms {
		width = max(width, len(m.name)+len(tag))
	}
	fmt.Fprintf(w, "\n%-*s   %s\n", width, "Metric Name", "Value")
	for _, m := range ms {
		fmt.Fprintf(w, "%-*s : %.3f\n", width, m.name+tag, m.value)
	}
}
