package httpapi

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/replica"
	"github.com/qk-project/qk/broker/txn"
)

// maxAPIKey bounds the API keys with request metrics; Kafka's stay far
// below it. Requests with larger keys are not counted (the broker closes
// their connections anyway).
const maxAPIKey = 128

// latencyBuckets span 0.5 ms to 16 s: a local produce takes well under a
// millisecond, a long-poll fetch waits up to fetch.max.wait.ms (500 ms by
// default) and an acks=all produce up to its timeout.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)

// requestMetrics are one API key's pre-resolved children.
type requestMetrics struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// Metrics is one broker's Prometheus registry and the request metrics
// fed by the network layer.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	coll     *collector
	byKey    [maxAPIKey]atomic.Pointer[requestMetrics]
	mu       sync.Mutex // resolving a key's children
}

func newMetrics(s *Server) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: requestsMetric.Name,
		Help: requestsMetric.Help,
	}, requestsMetric.Labels)
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    latencyMetric.Name,
		Help:    latencyMetric.Help,
		Buckets: latencyBuckets,
	}, latencyMetric.Labels)
	m.coll = &collector{s: s}
	m.reg.MustRegister(m.requests, m.latency, m.coll,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the broker's registry, for tests and for callers adding
// their own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RequestDone counts a completed request and observes its latency: the
// network layer's OnComplete hook, called on every request. After the
// key's first request it is an atomic load, a counter add and a
// histogram observation: no map, no allocation.
func (m *Metrics) RequestDone(key int16, received time.Time) {
	if key < 0 || int(key) >= maxAPIKey {
		return
	}
	rm := m.byKey[key].Load()
	if rm == nil {
		rm = m.resolve(key)
	}
	rm.count.Inc()
	if !received.IsZero() {
		rm.latency.Observe(time.Since(received).Seconds())
	}
}

func (m *Metrics) resolve(key int16) *requestMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rm := m.byKey[key].Load(); rm != nil {
		return rm
	}
	name := kmsg.NameForKey(key)
	if name == "" || name == "Unknown" {
		name = "ApiKey" + strconv.Itoa(int(key))
	}
	rm := &requestMetrics{count: m.requests.WithLabelValues(name), latency: m.latency.WithLabelValues(name)}
	m.byKey[key].Store(rm)
	return rm
}

// Metric is one metric qk registers, as docs/metrics.md lists it.
type Metric struct {
	Name   string
	Type   string // counter, gauge or histogram, as Prometheus' TYPE line
	Help   string
	Labels []string
}

// Metric types, as Prometheus' TYPE line names them.
const (
	typeCounter   = "counter"
	typeGauge     = "gauge"
	typeHistogram = "histogram"
)

var (
	requestsMetric = Metric{Name: "kafka_network_requestmetrics_requests_total", Type: typeCounter,
		Help:   "Requests completed (answered, or completed without an answer such as acks=0 produce), by API.",
		Labels: []string{"request"}}
	latencyMetric = Metric{Name: "kafka_network_requestmetrics_request_latency_seconds", Type: typeHistogram,
		Help:   "Time from reading a request to handing its response to the network layer (Kafka's TotalTimeMs without the send), by API.",
		Labels: []string{"request"}}
)

// collected is the collector's metrics, in declaration order: newDesc
// adds each.
var collected []Metric

// newDesc is prometheus.NewDesc that also records the metric for the
// docs. typ must be what Collect reports it as (TestMetricsDoc checks).
func newDesc(typ, name, help string, labels ...string) *prometheus.Desc {
	collected = append(collected, Metric{Name: name, Type: typ, Help: help, Labels: labels})
	return prometheus.NewDesc(name, help, labels, nil)
}

// Catalog returns every metric qk registers itself, sorted by name; the
// Go runtime's (go_*) and the process's (process_*) collectors come on
// top.
func Catalog() []Metric {
	out := append([]Metric{requestsMetric, latencyMetric}, collected...)
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out
}

var (
	descBytesIn = newDesc(typeCounter, "kafka_server_brokertopicmetrics_bytesin_total",
		"Bytes appended by producers to the topic's partitions led here (replication excluded).", "topic")
	descMessagesIn = newDesc(typeCounter, "kafka_server_brokertopicmetrics_messagesin_total",
		"Records appended by producers to the topic's partitions led here.", "topic")
	descBytesOut = newDesc(typeCounter, "kafka_server_brokertopicmetrics_bytesout_total",
		"Record bytes sent to consumers from the topic's partitions (follower fetches excluded).", "topic")
	descUnderReplicated = newDesc(typeGauge, "kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions led here whose ISR is smaller than their replica set.")
	descUnderMinISR = newDesc(typeGauge, "kafka_server_replicamanager_underminisrpartitioncount",
		"Partitions led here whose ISR is smaller than min.insync.replicas.")
	descAtMinISR = newDesc(typeGauge, "kafka_server_replicamanager_atminisrpartitioncount",
		"Partitions led here whose ISR is exactly min.insync.replicas.")
	descPartitions = newDesc(typeGauge, "kafka_server_replicamanager_partitioncount",
		"Partitions hosted here (leader or follower).")
	descLeaders = newDesc(typeGauge, "kafka_server_replicamanager_leadercount",
		"Partitions led here.")
	descOfflineReplicas = newDesc(typeGauge, "kafka_server_replicamanager_offlinereplicacount",
		"Partitions given to this broker whose log could not be opened.")
	descISRShrinks = newDesc(typeCounter, "kafka_server_replicamanager_isrshrinks_total",
		"ISR shrinks of partitions led here, as accepted by the controller.")
	descISRExpands = newDesc(typeCounter, "kafka_server_replicamanager_isrexpands_total",
		"ISR expansions of partitions led here, as accepted by the controller.")
	descOffline = newDesc(typeGauge, "kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader in this broker's metadata. Kafka reports it on the controller only; qk on every broker.")
	descActiveController = newDesc(typeGauge, "kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller, 0 elsewhere.")
	descLogSize = newDesc(typeGauge, "kafka_log_log_size",
		"Bytes of the partition's log on disk (all segments).", "topic", "partition")
	descPurgatory = newDesc(typeGauge, "kafka_server_delayedoperationpurgatory_purgatorysize",
		"Watcher entries in the purgatory (Kafka's PurgatorySize).", "delayedOperation")
	descDelayed = newDesc(typeGauge, "kafka_server_delayedoperationpurgatory_numdelayedoperations",
		"Operations waiting in the purgatory for their timeout.", "delayedOperation")
	descIdle = newDesc(typeGauge, "kafka_network_socketserver_networkprocessoravgidlepercent",
		"Fraction (0-1) of the time the network processors spent waiting for events since the previous scrape.")
	descQueue = newDesc(typeGauge, "kafka_network_requestchannel_requestqueuesize",
		"Requests read and waiting for a handler.")
	descLSOLag = newDesc(typeGauge, "qk_log_last_stable_offset_lag",
		"High watermark minus last stable offset of the partition (hosted here, leader or follower): records read_committed consumers cannot read yet because a transaction before them is open or its marker not replicated. Like the other qk_log_*transaction* series, present only for partitions with an open transaction or a lag: absent means 0.", "topic", "partition")
	descOldestTxnAge = newDesc(typeGauge, "qk_log_oldest_open_transaction_age_seconds",
		"Age of the partition's oldest open transaction (by first offset), since this replica appended its first batch (or reopened the log, after a restart); 0 or absent when none is open. Past transaction.max.timeout.ms the transaction is hanging and the last stable offset stuck.", "topic", "partition")
	descOpenTxns = newDesc(typeGauge, "qk_log_open_transactions",
		"Open transactions in the partition (hosted here).", "topic", "partition")
	descHanging = newDesc(typeGauge, "qk_server_replicamanager_hangingtransactionpartitions",
		"Partitions led here whose oldest open transaction is older than transaction.max.timeout.ms (each also logged at WARN): the coordinator should have ended it, and read_committed consumers are stuck at its first offset. Anything but 0 needs `qk transactions find-hanging` and `abort`.")
	descTxnStates = newDesc(typeGauge, "qk_transaction_coordinator_transactions",
		"Transactional ids of the __transaction_state partitions coordinated here, by state (Kafka's TransactionState names; partitions still loading not counted).", "state")
	descTxnPartitions = newDesc(typeGauge, "qk_transaction_coordinator_partitions",
		"__transaction_state partitions this broker coordinates (leads).")
	descTxnLoading = newDesc(typeGauge, "qk_transaction_coordinator_partitions_loading",
		"__transaction_state partitions this broker coordinates whose state is still loading (requests for them get COORDINATOR_LOAD_IN_PROGRESS).")
	descMarkersInFlight = newDesc(typeGauge, "qk_transaction_coordinator_markers_in_flight",
		"Transactions whose COMMIT or ABORT markers are queued or being sent to partition leaders (WriteTxnMarkers): a value that stays up means markers that cannot be written.")
	descOfflineDirs = newDesc(typeGauge, "kafka_log_logmanager_offlinelogdirectorycount",
		"Log directories offline after an I/O error in them (KIP-112); they come back at the broker's restart.")
	descDirOffline = newDesc(typeGauge, "kafka_log_logmanager_logdirectoryoffline",
		"1 if the log directory is offline, 0 if it is online (Kafka's LogDirectoryOffline).", "logDirectory")
	descDirUsed = newDesc(typeGauge, "qk_log_dir_used_percent",
		"How full the file system of the online log directory is, in percent as df's Use% (used blocks over used plus available), measured every 10 s.", "dir")
	descDirWarning = newDesc(typeGauge, "qk_log_dir_usage_warning",
		"1 while the online log directory is at or above qk.log.dir.usage.warn.percent (also logged at WARN once per crossing), else 0.", "dir")
	descOverdue = newDesc(typeCounter, "qk_network_requests_overdue_total",
		"Requests found neither answered nor dropped with their connection request.timeout.ms (plus a fetch's max_wait_ms or a produce's timeout_ms) after they were read, each counted once; each is also logged at WARN. Anything but 0 is a broker bug or a broker too overloaded for its clients.")
)

// collector computes the gauges at scrape time from the broker's state.
type collector struct {
	s *Server

	mu       sync.Mutex // the previous idle sample
	lastAt   time.Time
	lastIdle time.Duration
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBytesIn, descMessagesIn, descBytesOut, descUnderReplicated,
		descUnderMinISR, descAtMinISR, descPartitions, descLeaders, descOfflineReplicas, descISRShrinks,
		descISRExpands, descOffline, descActiveController, descLogSize, descPurgatory, descDelayed, descIdle, descQueue, descOverdue,
		descLSOLag, descOldestTxnAge, descOpenTxns, descHanging, descTxnStates, descTxnPartitions, descTxnLoading, descMarkersInFlight,
		descOfflineDirs, descDirOffline, descDirUsed, descDirWarning} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.state.Load()
	if st == nil {
		return // start-up has not built the parts yet
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if r := st.Replicas; r != nil {
		for topic, ts := range r.TopicStats() {
			counter(descBytesIn, ts.BytesIn.Load(), topic)
			counter(descMessagesIn, ts.MessagesIn.Load(), topic)
			counter(descBytesOut, ts.BytesOut.Load(), topic)
		}
		h := r.Health(true)
		gauge(descUnderReplicated, float64(h.UnderReplicated))
		gauge(descUnderMinISR, float64(h.UnderMinISR))
		gauge(descAtMinISR, float64(h.AtMinISR))
		gauge(descPartitions, float64(h.Hosted))
		gauge(descLeaders, float64(h.Leader))
		gauge(descOfflineReplicas, float64(r.OfflineCount()))
		for tp, size := range h.LogSizes {
			gauge(descLogSize, float64(size), tp.Topic, strconv.Itoa(int(tp.Partition)))
		}
		isr := r.ISRChanges()
		counter(descISRShrinks, isr.Shrinks)
		counter(descISRExpands, isr.Expands)
		c.collectTxnStats(r, gauge)
	}
	if tc := st.Txn; tc != nil {
		ts := tc.Stats()
		for _, s := range txn.States {
			gauge(descTxnStates, float64(ts.States[s]), s.String())
		}
		gauge(descTxnPartitions, float64(ts.Partitions))
		gauge(descTxnLoading, float64(ts.Loading))
		gauge(descMarkersInFlight, float64(ts.MarkersInFlight))
	}
	if st.LogDirs != nil {
		offline := 0
		for _, d := range st.LogDirs() {
			off, warn := 0.0, 0.0
			if d.Offline {
				off = 1
				offline++
			}
			gauge(descDirOffline, off, d.Dir)
			if d.UsageKnown {
				gauge(descDirUsed, d.UsedPercent, d.Dir)
				if d.Warning {
					warn = 1
				}
				gauge(descDirWarning, warn, d.Dir)
			}
		}
		gauge(descOfflineDirs, float64(offline))
	}
	if cache := st.Cache; cache != nil {
		offline := 0
		for _, t := range cache.Snapshot().Topics {
			for _, p := range t.Partitions {
				if p.Leader == metadata.NoLeader {
					offline++
				}
			}
		}
		gauge(descOffline, float64(offline))
	}
	if st.Controller != nil {
		active := 0.0
		if st.Controller.IsActive() {
			active = 1
		}
		gauge(descActiveController, active)
	}
	for _, p := range []struct {
		name string
		w    interface {
			Watched() int
			Delayed() int
		}
	}{{"Produce", st.Produces}, {"Fetch", st.Fetches}} {
		if p.w == nil {
			continue
		}
		gauge(descPurgatory, float64(p.w.Watched()), p.name)
		gauge(descDelayed, float64(p.w.Delayed()), p.name)
	}
	if st.Network != nil {
		l := st.Network.Load()
		gauge(descQueue, float64(l.RequestQueueSize))
		gauge(descIdle, c.idleRatio(l))
		counter(descOverdue, l.RequestsOverdue)
	}
}

// collectTxnStats reports the partitions' transaction gauges.
func (c *collector) collectTxnStats(r *replica.Manager, gauge func(*prometheus.Desc, float64, ...string)) {
	nowMs := c.s.cfg.Now().UnixMilli()
	maxMs := int64(c.s.cfg.TransactionMaxTimeoutMs)
	hanging := 0
	for _, ts := range r.TxnStats() {
		lag := max(ts.HighWatermark-ts.LastStableOffset, 0)
		if ts.OpenTransactions == 0 && lag == 0 {
			// Only partitions with transactions in flight have the
			// series: every partition's would triple the scrape.
			continue
		}
		part := strconv.Itoa(int(ts.Partition))
		gauge(descLSOLag, float64(lag), ts.Topic, part)
		gauge(descOpenTxns, float64(ts.OpenTransactions), ts.Topic, part)
		age := int64(0)
		if ts.OpenTransactions > 0 {
			age = max(nowMs-ts.Oldest.StartTimestamp, 0)
		}
		gauge(descOldestTxnAge, float64(age)/1000, ts.Topic, part)
		if ts.IsLeader && ts.OpenTransactions > 0 && maxMs > 0 && age > maxMs {
			hanging++
		}
	}
	gauge(descHanging, float64(hanging))
}

// sample starts the idle measurement (SetState).
func (c *collector) sample(l network.Load) {
	c.mu.Lock()
	c.lastAt, c.lastIdle = time.Now(), l.Idle
	c.mu.Unlock()
}

// idleRatio is the processors' idle fraction since the previous scrape
// (since the broker published its state, at the first). Two scrapers
// (Prometheus and qk top) each see the fraction since the other's scrape:
// a gauge over a shorter interval, still a fraction of the same time.
func (c *collector) idleRatio(l network.Load) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	wall := now.Sub(c.lastAt) * time.Duration(max(l.Processors, 1))
	idle := l.Idle - c.lastIdle
	c.lastAt, c.lastIdle = now, l.Idle
	if wall <= 0 {
		return 1
	}
	return min(max(float64(idle)/float64(wall), 0), 1)
}
