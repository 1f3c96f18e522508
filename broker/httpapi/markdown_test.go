//go:build linux

package httpapi_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/httpapi"
)

// metricsDoc is the committed page, from the package directory.
const metricsDoc = "../../docs/metrics.md"

// TestMetricsDoc: docs/metrics.md is what WriteMetricsMarkdown writes, and
// it lists every metric a running broker serves (but the Go runtime's and
// the process's) with the type the broker reports, and nothing it does not
// serve.
func TestMetricsDoc(t *testing.T) {
	var gen bytes.Buffer
	require.NoError(t, httpapi.WriteMetricsMarkdown(&gen))
	committed, err := os.ReadFile(metricsDoc)
	require.NoError(t, err)
	if !bytes.Equal(committed, gen.Bytes()) {
		t.Fatalf("docs/metrics.md is out of date; run make docs")
	}
	doc := string(committed)

	// A broker that has produced and fetched, and has a transaction open,
	// so the per-topic, per-request and per-partition metrics have samples.
	b := brokertest.StartBroker(t)
	const topic = "docs"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr())
	fetches := cl.PollFetches(testCtx(t))
	require.NoError(t, fetches.Err())
	require.Equal(t, 1, fetches.NumRecords())
	// A transaction left open, for the series of partitions with
	// transactions in flight.
	tx, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("docs"))
	require.NoError(t, err)
	defer tx.Close()
	require.NoError(t, tx.BeginTransaction())
	require.NoError(t, tx.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("open")}).FirstErr())

	catalog := map[string]httpapi.Metric{}
	for _, m := range httpapi.Catalog() {
		catalog[m.Name] = m
	}
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; {
		fams = scrape(t, b)
		var missing []string
		for name := range catalog {
			if fams[name] == nil {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in httpapi.Catalog and docs/metrics.md, not served: %v", missing)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	for name, f := range fams {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		m, ok := catalog[name]
		require.True(t, ok, "%s is served and not in httpapi.Catalog (declare it with newDesc)", name)
		require.Equal(t, m.Type, strings.ToLower(f.GetType().String()), name)
		require.Equal(t, m.Help, f.GetHelp(), name)
		require.Contains(t, doc, "| `"+name+"` | "+m.Type+" |", "docs/metrics.md lacks %s", name)
	}
}
