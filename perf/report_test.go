package perf

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProduceLines pins the text of Kafka's ProducerPerformance lines and
// the JSON objects for known latencies.
func TestProduceLines(t *testing.T) {
	var out bytes.Buffer
	s := newProduceStats(ProduceOptions{Stdout: &out}, &metrics{})
	tl := newTally(time.Time{})
	for _, us := range []int64{1500, 2500, 10_250, 800} {
		tl.add(us, 1<<18) // 4 x 256 KiB = 1 MiB
	}
	s.print("progress", &tl, 2*time.Second)
	s.print("final", &tl, 2*time.Second)
	require.Equal(t,
		"4 records sent, 2.0 records/sec (0.50 MB/sec), 3.8 ms avg latency, 10.3 ms max latency.\n"+
			"4 records sent, 2.000000 records/sec (0.50 MB/sec), 3.76 ms avg latency, 10.25 ms max latency, 2 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th.\n",
		out.String())

	out.Reset()
	s.o.JSON = true
	s.print("final", &tl, 2*time.Second)
	var r ProduceReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Equal(t, ProduceReport{Type: "final", Records: 4, Bytes: 1 << 20, ElapsedS: 2, RecordsPerSec: 2, MiBPerSec: 0.5,
		LatencyMs: LatencyMs{Avg: 3.763, Max: 10.25, P50: 2.501, P95: 10.25, P99: 10.25, P999: 10.25}}, r)
	require.Contains(t, out.String(), `"latency_ms":{"avg":3.763,"max":10.25,"p50":2.501,"p95":10.25,"p99":10.25,"p999":10.25}`)
}

// TestConsumeRow pins ConsumerPerformance's row arithmetic and format.
func TestConsumeRow(t *testing.T) {
	r := consumeRow("final", 5_000_000, 50_000, 3133, 3110)
	require.Equal(t, "4.7684, 1.5220, 50000, 15959.1446, 3110, 23, 207.3205, 2173913.0435", r.csv())
	// No fetch time: Java prints Infinity; JSON gets 0.
	r = consumeRow("final", 100, 1, 5, 5)
	require.Equal(t, "0.0001, 0.0191, 1, 200.0000, 5, 0, Infinity, Infinity", r.csv())
	require.Zero(t, r.finite().FetchMiBPerSec)
}
