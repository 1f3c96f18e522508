package httpapi

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/network"
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
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests completed (answered, or completed without an answer such as acks=0 produce), by API.",
	}, []string{"request"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_network_requestmetrics_request_latency_seconds",
		Help:    "Time from reading a request to handing its response to the network layer (Kafka's TotalTimeMs without the send), by API.",
		Buckets: latencyBuckets,
	}, []string{"request"})
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

var (
	descBytesIn = prometheus.NewDesc("kafka_server_brokertopicmetrics_bytesin_total",
		"Bytes appended by producers to the topic's partitions led here (replication excluded).", []string{"topic"}, nil)
	descMessagesIn = prometheus.NewDesc("kafka_server_brokertopicmetrics_messagesin_total",
		"Records appended by producers to the topic's partitions led here.", []string{"topic"}, nil)
	descBytesOut = prometheus.NewDesc("kafka_server_brokertopicmetrics_bytesout_total",
		"Record bytes sent to consumers from the topic's partitions (follower fetches excluded).", []string{"topic"}, nil)
	descUnderReplicated = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions led here whose ISR is smaller than their replica set.", nil, nil)
	descUnderMinISR = prometheus.NewDesc("kafka_server_replicamanager_underminisrpartitioncount",
		"Partitions led here whose ISR is smaller than min.insync.replicas.", nil, nil)
	descAtMinISR = prometheus.NewDesc("kafka_server_replicamanager_atminisrpartitioncount",
		"Partitions led here whose ISR is exactly min.insync.replicas.", nil, nil)
	descPartitions = prometheus.NewDesc("kafka_server_replicamanager_partitioncount",
		"Partitions hosted here (leader or follower).", nil, nil)
	descLeaders = prometheus.NewDesc("kafka_server_replicamanager_leadercount",
		"Partitions led here.", nil, nil)
	descOfflineReplicas = prometheus.NewDesc("kafka_server_replicamanager_offlinereplicacount",
		"Partitions given to this broker whose log could not be opened.", nil, nil)
	descISRShrinks = prometheus.NewDesc("kafka_server_replicamanager_isrshrinks_total",
		"ISR shrinks of partitions led here, as accepted by the controller.", nil, nil)
	descISRExpands = prometheus.NewDesc("kafka_server_replicamanager_isrexpands_total",
		"ISR expansions of partitions led here, as accepted by the controller.", nil, nil)
	descOffline = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader in this broker's metadata. Kafka reports it on the controller only; qk on every broker.", nil, nil)
	descActiveController = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller, 0 elsewhere.", nil, nil)
	descLogSize = prometheus.NewDesc("kafka_log_log_size",
		"Bytes of the partition's log on disk (all segments).", []string{"topic", "partition"}, nil)
	descPurgatory = prometheus.NewDesc("kafka_server_delayedoperationpurgatory_purgatorysize",
		"Watcher entries in the purgatory (Kafka's PurgatorySize).", []string{"delayedOperation"}, nil)
	descDelayed = prometheus.NewDesc("kafka_server_delayedoperationpurgatory_numdelayedoperations",
		"Operations waiting in the purgatory for their timeout.", []string{"delayedOperation"}, nil)
	descIdle = prometheus.NewDesc("kafka_network_socketserver_networkprocessoravgidlepercent",
		"Fraction (0-1) of the time the network processors spent waiting for events since the previous scrape.", nil, nil)
	descQueue = prometheus.NewDesc("kafka_network_requestchannel_requestqueuesize",
		"Requests read and waiting for a handler.", nil, nil)
	descOverdue = prometheus.NewDesc("qk_network_requests_overdue_total",
		"Requests found neither answered nor dropped with their connection request.timeout.ms (plus a fetch's max_wait_ms or a produce's timeout_ms) after they were read, each counted once; each is also logged at WARN. Anything but 0 is a broker bug or a broker too overloaded for its clients.", nil, nil)
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
		descISRExpands, descOffline, descActiveController, descLogSize, descPurgatory, descDelayed, descIdle, descQueue, descOverdue} {
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
