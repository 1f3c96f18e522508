package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBeforeStartUp: before the broker publishes its parts, health says
// why it is not ready (503), partitions are an empty list and /metrics
// still answers (the request metrics and the Go runtime's).
func TestBeforeStartUp(t *testing.T) {
	s := New(Config{BrokerID: 7, Health: func() []string { return []string{"loading logs"} }})
	tests := []struct {
		path     string
		wantCode int
		wantJSON string
	}{
		{"/v1/health", http.StatusServiceUnavailable, `{"ready":false,"reasons":["loading logs"]}`},
		{"/v1/partitions", http.StatusOK, `{"broker_id":7,"partitions":[]}`},
		{"/metrics", http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			require.Equal(t, tt.wantCode, rec.Code)
			body, _ := io.ReadAll(rec.Body)
			if tt.wantJSON != "" {
				require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
				require.JSONEq(t, tt.wantJSON, string(body))
			} else {
				require.Contains(t, string(body), "go_goroutines")
			}
		})
	}
}

// TestRequestDone: a key's first request resolves its children, later
// ones reuse them without allocating; keys out of range are ignored.
func TestRequestDone(t *testing.T) {
	m := New(Config{}).Metrics()
	m.RequestDone(0, testNow())
	m.RequestDone(-1, testNow())
	m.RequestDone(maxAPIKey, testNow())
	allocs := testing.AllocsPerRun(100, func() { m.RequestDone(0, testNow()) })
	require.Zero(t, allocs)
	fams, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == "kafka_network_requestmetrics_requests_total" {
			require.Len(t, f.GetMetric(), 1)
			require.Equal(t, "Produce", f.GetMetric()[0].GetLabel()[0].GetValue())
			require.Equal(t, 102.0, f.GetMetric()[0].GetCounter().GetValue())
		}
	}
}

func testNow() time.Time { return time.Now() }

// BenchmarkRequestDone is the cost the metrics add to every request (the
// network layer's OnComplete): an atomic load, a counter add, a clock
// read and a histogram observation.
func BenchmarkRequestDone(b *testing.B) {
	m := New(Config{}).Metrics()
	received := time.Now()
	m.RequestDone(0, received)
	b.ReportAllocs()
	for b.Loop() {
		m.RequestDone(0, received)
	}
}
