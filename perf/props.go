package perf

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/internal/javaprops"
)

// Properties are Kafka client properties by their Java names, as read from
// --producer.config/--consumer.config files and --producer-props.
type Properties map[string]string

// LoadProperties reads a Java .properties file.
func LoadProperties(path string) (Properties, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParseProperties reads the java.util.Properties text format (see
// javaprops.Parse, shared with the broker's config loader); a later
// duplicate key wins.
func ParseProperties(r io.Reader) (Properties, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	props, err := javaprops.Parse(b)
	if err != nil {
		return nil, err
	}
	return javaprops.Map(props), nil
}

// ProducerConfig is the producer side of Kafka's client configuration that
// qk perf produce maps onto kgo. Set takes Kafka's property names; the
// zero value of a field means "franz-go's default".
type ProducerConfig struct {
	Brokers         []string      // bootstrap.servers
	ClientID        string        // client.id
	Acks            string        // acks: all, 1 or 0
	Idempotence     *bool         // enable.idempotence; nil: Kafka's rule (on when acks=all)
	Linger          time.Duration // linger.ms
	BatchMaxBytes   int32         // batch.size -> ProducerBatchMaxBytes
	Compression     string        // compression.type
	MaxInFlight     int           // max.in.flight.requests.per.connection
	BufferedBytes   int           // buffer.memory -> MaxBufferedBytes
	BufferedRecords int           // buffer.records (qk only) -> MaxBufferedRecords
	RequestTimeout  time.Duration // request.timeout.ms -> ProduceRequestTimeout
	Retries         int           // retries -> RecordRetries; -1: unset
	DeliveryTimeout time.Duration // delivery.timeout.ms -> RecordDeliveryTimeout
	TransactionalID string        // transactional.id
}

// NewProducerConfig returns Kafka's producer defaults where they differ
// from franz-go's: acks=all with idempotence, linger.ms=5 (Kafka 4.0;
// 3.x had 0) and max.in.flight.requests.per.connection=5 (franz-go allows
// one produce request in flight per broker without idempotence, which
// would make acks=1 runs wait out every round trip). batch.size keeps
// franz-go's 1000012-byte batches unless it is given: Kafka's 16384 caps
// throughput for no benefit on loopback.
func NewProducerConfig() ProducerConfig {
	return ProducerConfig{Acks: "all", Linger: 5 * time.Millisecond, Compression: "none", Retries: -1, MaxInFlight: 5}
}

// producerProps is the one table of producer properties qk understands.
var producerProps = map[string]func(c *ProducerConfig, v string) error{
	"bootstrap.servers": func(c *ProducerConfig, v string) error { c.Brokers = splitList(v); return nil },
	"client.id":         func(c *ProducerConfig, v string) error { c.ClientID = v; return nil },
	"acks": func(c *ProducerConfig, v string) error {
		a, err := ParseAcks(v)
		c.Acks = a
		return err
	},
	"enable.idempotence": func(c *ProducerConfig, v string) error {
		b, err := strconv.ParseBool(v)
		c.Idempotence = &b
		return err
	},
	"linger.ms":  func(c *ProducerConfig, v string) error { return setMillis(&c.Linger, v, 0) },
	"batch.size": func(c *ProducerConfig, v string) error { return setInt32(&c.BatchMaxBytes, v, 1) },
	"compression.type": func(c *ProducerConfig, v string) error {
		_, err := Codec(v)
		c.Compression = v
		return err
	},
	"max.in.flight.requests.per.connection": func(c *ProducerConfig, v string) error { return setInt(&c.MaxInFlight, v, 1) },
	"buffer.memory":                         func(c *ProducerConfig, v string) error { return setInt(&c.BufferedBytes, v, 1) },
	"buffer.records":                        func(c *ProducerConfig, v string) error { return setInt(&c.BufferedRecords, v, 1) },
	"request.timeout.ms":                    func(c *ProducerConfig, v string) error { return setMillis(&c.RequestTimeout, v, 1) },
	"retries":                               func(c *ProducerConfig, v string) error { return setInt(&c.Retries, v, 0) },
	"delivery.timeout.ms":                   func(c *ProducerConfig, v string) error { return setMillis(&c.DeliveryTimeout, v, 1) },
	"transactional.id":                      func(c *ProducerConfig, v string) error { c.TransactionalID = v; return nil },
	"key.serializer":                        byteArrayOnly("org.apache.kafka.common.serialization.ByteArraySerializer"),
	"value.serializer":                      byteArrayOnly("org.apache.kafka.common.serialization.ByteArraySerializer"),
}

// Set applies one Kafka producer property. An unknown property is an
// error naming it, so a typo never silently runs a different test.
func (c *ProducerConfig) Set(key, value string) error {
	set, ok := producerProps[key]
	if !ok {
		return fmt.Errorf("unknown producer property %q (qk knows %s)", key, strings.Join(sortedKeys(producerProps), ", "))
	}
	if err := set(c, value); err != nil {
		return fmt.Errorf("producer property %s=%s: %w", key, value, err)
	}
	return nil
}

// SetAll applies p in key order, so errors are reported deterministically.
func (c *ProducerConfig) SetAll(p Properties) error {
	for _, k := range sortedKeys(p) {
		if err := c.Set(k, p[k]); err != nil {
			return err
		}
	}
	return nil
}

// Opts turns the configuration into kgo options. Seed brokers are left to
// the caller, who decides between them and the connection flags.
//
// Idempotence follows Kafka 3.x: on by default with acks=all, silently off
// when acks is not all or more than 5 requests may be in flight unless
// enable.idempotence=true was asked for, in which case those are errors.
func (c ProducerConfig) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	idempotent := c.Acks == "all" && c.MaxInFlight <= 5
	if c.Idempotence != nil {
		if *c.Idempotence && c.Acks != "all" {
			return nil, fmt.Errorf("enable.idempotence=true needs acks=all, not acks=%s", c.Acks)
		}
		if *c.Idempotence && c.MaxInFlight > 5 {
			return nil, fmt.Errorf("enable.idempotence=true needs max.in.flight.requests.per.connection <= 5, not %d", c.MaxInFlight)
		}
		idempotent = *c.Idempotence && c.Acks == "all"
	}
	switch c.Acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, fmt.Errorf("acks %q: want all, -1, 1 or 0", c.Acks)
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
		if c.MaxInFlight > 0 {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(c.MaxInFlight))
		}
	}
	if c.TransactionalID != "" && !idempotent {
		return nil, fmt.Errorf("transactional.id needs idempotence (acks=all)")
	}
	opts = append(opts, kgo.ProducerLinger(c.Linger))
	if c.BatchMaxBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(c.BatchMaxBytes))
	}
	codec, err := Codec(c.Compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if c.BufferedBytes > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(c.BufferedBytes))
	}
	if c.BufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(c.BufferedRecords))
	}
	if c.RequestTimeout > 0 {
		opts = append(opts, kgo.ProduceRequestTimeout(c.RequestTimeout))
	}
	if c.Retries >= 0 {
		opts = append(opts, kgo.RecordRetries(c.Retries))
	}
	if c.DeliveryTimeout > 0 {
		opts = append(opts, kgo.RecordDeliveryTimeout(c.DeliveryTimeout))
	}
	return opts, nil
}

// ParseAcks normalises Kafka's acks values: all or -1, 1, 0.
func ParseAcks(s string) (string, error) {
	switch s {
	case "all", "-1":
		return "all", nil
	case "1", "0":
		return s, nil
	}
	return s, fmt.Errorf("acks %q: want all, -1, 1 or 0", s)
}

// Codec maps Kafka's compression.type names to kgo codecs.
func Codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// ConsumerConfig is the consumer side of Kafka's client configuration
// that qk perf consume maps onto kgo (from --consumer.config).
type ConsumerConfig struct {
	Brokers            []string      // bootstrap.servers
	ClientID           string        // client.id
	Group              string        // group.id
	InstanceID         string        // group.instance.id
	FetchMaxBytes      int32         // fetch.max.bytes
	FetchPartitionMax  int32         // max.partition.fetch.bytes
	FetchMinBytes      int32         // fetch.min.bytes
	FetchMaxWait       time.Duration // fetch.max.wait.ms
	OffsetReset        string        // auto.offset.reset: earliest or latest
	AutoCommit         *bool         // enable.auto.commit
	AutoCommitInterval time.Duration // auto.commit.interval.ms
	SessionTimeout     time.Duration // session.timeout.ms
	Heartbeat          time.Duration // heartbeat.interval.ms
	RebalanceTimeout   time.Duration // max.poll.interval.ms
	ReadCommitted      bool          // isolation.level=read_committed
	CheckCRCs          bool          // check.crcs (the Kafka tool sets false)
}

var consumerProps = map[string]func(c *ConsumerConfig, v string) error{
	"bootstrap.servers":         func(c *ConsumerConfig, v string) error { c.Brokers = splitList(v); return nil },
	"client.id":                 func(c *ConsumerConfig, v string) error { c.ClientID = v; return nil },
	"group.id":                  func(c *ConsumerConfig, v string) error { c.Group = v; return nil },
	"group.instance.id":         func(c *ConsumerConfig, v string) error { c.InstanceID = v; return nil },
	"fetch.max.bytes":           func(c *ConsumerConfig, v string) error { return setInt32(&c.FetchMaxBytes, v, 1) },
	"max.partition.fetch.bytes": func(c *ConsumerConfig, v string) error { return setInt32(&c.FetchPartitionMax, v, 1) },
	"fetch.min.bytes":           func(c *ConsumerConfig, v string) error { return setInt32(&c.FetchMinBytes, v, 1) },
	"fetch.max.wait.ms":         func(c *ConsumerConfig, v string) error { return setMillis(&c.FetchMaxWait, v, 10) },
	"auto.offset.reset": func(c *ConsumerConfig, v string) error {
		if v != "earliest" && v != "latest" {
			return fmt.Errorf("want earliest or latest")
		}
		c.OffsetReset = v
		return nil
	},
	"enable.auto.commit": func(c *ConsumerConfig, v string) error {
		b, err := strconv.ParseBool(v)
		c.AutoCommit = &b
		return err
	},
	"auto.commit.interval.ms": func(c *ConsumerConfig, v string) error { return setMillis(&c.AutoCommitInterval, v, 1) },
	"session.timeout.ms":      func(c *ConsumerConfig, v string) error { return setMillis(&c.SessionTimeout, v, 1) },
	"heartbeat.interval.ms":   func(c *ConsumerConfig, v string) error { return setMillis(&c.Heartbeat, v, 1) },
	"max.poll.interval.ms":    func(c *ConsumerConfig, v string) error { return setMillis(&c.RebalanceTimeout, v, 1) },
	"isolation.level": func(c *ConsumerConfig, v string) error {
		if v != "read_committed" && v != "read_uncommitted" {
			return fmt.Errorf("want read_committed or read_uncommitted")
		}
		c.ReadCommitted = v == "read_committed"
		return nil
	},
	"check.crcs": func(c *ConsumerConfig, v string) error {
		b, err := strconv.ParseBool(v)
		c.CheckCRCs = b
		return err
	},
	"key.deserializer":   byteArrayOnlyC("org.apache.kafka.common.serialization.ByteArrayDeserializer"),
	"value.deserializer": byteArrayOnlyC("org.apache.kafka.common.serialization.ByteArrayDeserializer"),
}

// Set applies one Kafka consumer property; unknown ones are errors.
func (c *ConsumerConfig) Set(key, value string) error {
	set, ok := consumerProps[key]
	if !ok {
		return fmt.Errorf("unknown consumer property %q (qk knows %s)", key, strings.Join(sortedKeys(consumerProps), ", "))
	}
	if err := set(c, value); err != nil {
		return fmt.Errorf("consumer property %s=%s: %w", key, value, err)
	}
	return nil
}

// SetAll applies p in key order.
func (c *ConsumerConfig) SetAll(p Properties) error {
	for _, k := range sortedKeys(p) {
		if err := c.Set(k, p[k]); err != nil {
			return err
		}
	}
	return nil
}

// Opts turns the configuration into kgo options, group and topic aside.
func (c ConsumerConfig) Opts() []kgo.Opt {
	var opts []kgo.Opt
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	if c.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(c.InstanceID))
	}
	if c.FetchPartitionMax > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(c.FetchPartitionMax))
	}
	// fetch.max.bytes must hold at least one partition's worth; Kafka's
	// default is 50 MiB, as franz-go's.
	if fmb := max(c.FetchMaxBytes, c.FetchPartitionMax); fmb > 50<<20 || c.FetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(fmb))
	}
	if c.FetchMinBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(c.FetchMinBytes))
	}
	if c.FetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(c.FetchMaxWait))
	}
	if c.AutoCommit != nil && !*c.AutoCommit {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	if c.AutoCommitInterval > 0 {
		opts = append(opts, kgo.AutoCommitInterval(c.AutoCommitInterval))
	}
	if c.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(c.SessionTimeout))
	}
	if c.Heartbeat > 0 {
		opts = append(opts, kgo.HeartbeatInterval(c.Heartbeat))
	}
	if c.RebalanceTimeout > 0 {
		opts = append(opts, kgo.RebalanceTimeout(c.RebalanceTimeout))
	}
	if c.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if !c.CheckCRCs {
		opts = append(opts, kgo.DisableFetchCRCValidation())
	}
	return opts
}

func splitList(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func setInt(dst *int, v string, lowest int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lowest {
		return fmt.Errorf("want an integer >= %d", lowest)
	}
	*dst = n
	return nil
}

func setInt32(dst *int32, v string, lowest int32) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || int32(n) < lowest {
		return fmt.Errorf("want an integer >= %d", lowest)
	}
	*dst = int32(n)
	return nil
}

func setMillis(dst *time.Duration, v string, lowest int64) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lowest {
		return fmt.Errorf("want milliseconds >= %d", lowest)
	}
	*dst = time.Duration(n) * time.Millisecond
	return nil
}

// byteArrayOnly accepts the serializer setting that perf tools always
// use, so config files written for Kafka's tools load unchanged.
func byteArrayOnly(class string) func(*ProducerConfig, string) error {
	return func(_ *ProducerConfig, v string) error { return wantClass(class, v) }
}

func byteArrayOnlyC(class string) func(*ConsumerConfig, string) error {
	return func(_ *ConsumerConfig, v string) error { return wantClass(class, v) }
}

func wantClass(class, v string) error {
	if v != class {
		return fmt.Errorf("qk sends raw bytes: only %s", class)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
