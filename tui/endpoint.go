package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The broker's admin HTTP endpoint, as broker/httpapi serves it (the
// contract is in the TUI issue). qk top reads only two documents: the
// partitions the broker hosts, with the LEO every replica has, and the
// Prometheus counters for the rates.

// endpointPartitions is GET /v1/partitions.
type endpointPartitions struct {
	BrokerID   int32               `json:"broker_id"`
	Partitions []endpointPartition `json:"partitions"`
}

type endpointPartition struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	Role             string `json:"role"`
	LeaderID         int32  `json:"leader_id"`
	LeaderEpoch      int32  `json:"leader_epoch"`
	LogStartOffset   int64  `json:"log_start_offset"`
	LogEndOffset     int64  `json:"log_end_offset"`
	HighWatermark    int64  `json:"high_watermark"`
	LastStableOffset int64  `json:"last_stable_offset"`
	SizeBytes        int64  `json:"size_bytes"`
	// OpenTransactions is absent (nil) from qk brokers older than it.
	OpenTransactions []endpointOpenTxn  `json:"open_transactions"`
	Followers        []endpointFollower `json:"followers"`
}

type endpointOpenTxn struct {
	ProducerID     int64 `json:"producer_id"`
	FirstOffset    int64 `json:"first_offset"`
	StartTimestamp int64 `json:"start_timestamp"`
	AgeMs          int64 `json:"age_ms"`
}

type endpointFollower struct {
	BrokerID          int32 `json:"broker_id"`
	LogEndOffset      int64 `json:"log_end_offset"`
	Lag               int64 `json:"lag"`
	LastCaughtUpMsAgo int64 `json:"last_caught_up_ms_ago"`
	InISR             bool  `json:"in_isr"`
}

// maxEndpointBody bounds what one response may hold (a 10k-partition
// broker's /v1/partitions is a few MB), so a wrong endpoint cannot make
// qk top read without end.
const maxEndpointBody = 64 << 20

func getEndpoint(ctx context.Context, hc *http.Client, base, path string) (io.ReadCloser, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, maxEndpointBody), resp.Body}, nil
}

func fetchPartitions(ctx context.Context, hc *http.Client, base string) (*endpointPartitions, error) {
	body, err := getEndpoint(ctx, hc, base, "/v1/partitions")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var out endpointPartitions
	if err := json.NewDecoder(body).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET /v1/partitions: %w", err)
	}
	return &out, nil
}

// The counters qk top turns into rates, by their Kafka-style names.
const (
	metricBytesIn    = "kafka_server_brokertopicmetrics_bytesin_total"
	metricBytesOut   = "kafka_server_brokertopicmetrics_bytesout_total"
	metricMessagesIn = "kafka_server_brokertopicmetrics_messagesin_total"
)

// counters are one broker's topic counters: name -> topic -> value; the
// topic "" is a series without a topic label (the all-topics total Kafka
// also exports).
type counters map[string]map[string]float64

func fetchMetrics(ctx context.Context, hc *http.Client, base string) (counters, error) {
	body, err := getEndpoint(ctx, hc, base, "/metrics")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return parseCounters(body)
}

// parseCounters reads the three topic counters out of Prometheus text
// exposition. It is a line scanner, not a full parser: the format's
// sample lines are `name{label="v",...} value [timestamp]`, and qk top
// needs only these names and the topic label, so it skips everything
// else without building the rest (a broker with 10k partitions exports
// tens of thousands of series, and this runs every second).
func parseCounters(r io.Reader) (counters, error) {
	out := counters{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "kafka_server_brokertopicmetrics_") {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if name != metricBytesIn && name != metricBytesOut && name != metricMessagesIn {
			continue
		}
		topic := ""
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			topic = labelValue(rest[1:end], "topic")
			rest = rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		m := out[name]
		if m == nil {
			m = map[string]float64{}
			out[name] = m
		}
		m[topic] += v
	}
	return out, sc.Err()
}

// labelValue finds key="value" in a label list; topic names hold no
// quotes or backslashes, so no unescaping is needed.
func labelValue(labels, key string) string {
	for len(labels) > 0 {
		eq := strings.IndexByte(labels, '=')
		if eq < 0 || eq+1 >= len(labels) || labels[eq+1] != '"' {
			return ""
		}
		k := strings.TrimSpace(labels[:eq])
		rest := labels[eq+2:]
		q := strings.IndexByte(rest, '"')
		if q < 0 {
			return ""
		}
		if k == key {
			return rest[:q]
		}
		labels = strings.TrimPrefix(strings.TrimSpace(rest[q+1:]), ",")
	}
	return ""
}

// total is a counter's all-topics value: the unlabelled series when the
// broker exports one, else the sum over topics.
func (c counters) total(name string) (float64, bool) {
	m, ok := c[name]
	if !ok {
		return 0, false
	}
	if v, ok := m[""]; ok {
		return v, true
	}
	var sum float64
	for _, v := range m {
		sum += v
	}
	return sum, true
}
