package main

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qk-project/qk/admin"
	"github.com/qk-project/qk/perf"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() { subcommands = append(subcommands, newPerfCmd) }

func newPerfCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure a cluster as Kafka's perf tools do: produce, consume, end-to-end",
		Long: `Kafka's performance tools on franz-go, with their flags and their output, so
results compare with kafka-producer-perf-test.sh, kafka-consumer-perf-test.sh
and EndToEndLatency. They work against qk or any Kafka-compatible cluster.
--json prints one JSON object per line instead, for scripts.`,
	}
	cmd.AddCommand(newPerfProduceCmd(), newPerfConsumeCmd(), newPerfEndToEndCmd())
	return cmd
}

// perfConn is a perf command's connection: the admin flags (-b, -X,
// --profile, the request timeout) plus Kafka's --bootstrap-server.
type perfConn struct {
	admin.Options
	bootstrap string
}

// addFlags binds the connection flags; rename maps an admin flag name to
// the name it has on this command (perf consume gives --timeout to
// Kafka's record timeout). The flag objects are shared, so the profile
// logic in admin.Options still sees which were given.
func (c *perfConn) addFlags(cmd *cobra.Command, rename map[string]string) {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	c.AddFlags(fs)
	fs.VisitAll(func(fl *pflag.Flag) {
		if n, ok := rename[fl.Name]; ok {
			fl.Name = n
		}
		cmd.Flags().AddFlag(fl)
	})
	cmd.Flags().StringVar(&c.bootstrap, "bootstrap-server", "", "Kafka's name for -b: seed brokers host:port, comma separated")
}

// completeTopic completes --topic from the cluster; call it after --topic
// is defined.
func (c *perfConn) completeTopic(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("topic", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		p := adminParams{conn: c.Options}
		return p.completeTopics(cmd, nil, toComplete)
	})
}

// resolve returns the connection's kgo options, the seed brokers and the
// client id set by -X or the profile, if any. Seed brokers come from, first
// to last: --bootstrap-server or -b, bootstrap.servers in the Kafka
// properties, $QK_BROKERS, the profile, the default.
func (c *perfConn) resolve(cmd *cobra.Command, propBrokers []string) (opts []kgo.Opt, brokers []string, clientID string, err error) {
	if c.bootstrap != "" && cmd.Flags().Changed("brokers") {
		return nil, nil, "", errors.New("-b and --bootstrap-server are the same setting: give one")
	}
	if opts, err = c.KgoOpts(); err != nil {
		return nil, nil, "", err
	}
	brokers = c.Brokers
	switch {
	case c.bootstrap != "":
		brokers = strings.Split(c.bootstrap, ",")
	case cmd.Flags().Changed("brokers"):
	case len(propBrokers) > 0:
		brokers = propBrokers
	}
	for _, kv := range c.Settings {
		if v, ok := strings.CutPrefix(kv, "client.id="); ok {
			clientID = v
		}
	}
	return opts, brokers, clientID, nil
}

func newPerfProduceCmd() *cobra.Command {
	var (
		conn                                    perfConn
		topic, payloadFile, delimiter, config   string
		numRecords, warmup, txnDurationMs       int64
		recordSize, producers                   int
		throughput                              float64
		props                                   []string
		printMetrics, asJSON                    bool
		txnID, acks, compression, keys, payload string
		linger                                  time.Duration
		batchMax                                int32
		reportMs                                int64
	)
	cmd := &cobra.Command{
		Use:   "produce --topic TOPIC --num-records N --record-size BYTES --throughput N",
		Short: "Produce records at a rate and report throughput and latency (kafka-producer-perf-test)",
		Long: `Produce --num-records records to --topic at --throughput records/s (-1: as fast
as possible) and report as kafka-producer-perf-test.sh does: a line for every
5 s window, then a final line with the latency percentiles. Latency is from the
send to the acknowledgement, for every record (HdrHistogram, microseconds).

Values are --record-size bytes (--payload fixed: one payload of random letters
reused, as Kafka; --payload random: never-repeating random bytes that do not
compress), or lines of --payload-file picked at random. Keys: --keys none (null,
as Kafka), random (8 random bytes) or N (N distinct keys in turn).

Producer settings take Kafka's property names, in --producer.config FILE and
--producer-props k=v ... (a space-separated list, as Kafka's; later wins):
bootstrap.servers, client.id, acks, enable.idempotence, linger.ms, batch.size,
compression.type, max.in.flight.requests.per.connection, buffer.memory,
buffer.records (qk: most records buffered), request.timeout.ms, retries,
delivery.timeout.ms, transactional.id, and the TLS and SASL settings
(security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location,
..., as -X takes them). --acks, --compression, --linger and
--batch-max-bytes, when given, win over the properties. Defaults are Kafka's
client defaults: acks=all with idempotence, linger.ms=5 (Kafka 4.0); batches
are franz-go's (up to 1000012 bytes) unless batch.size or --batch-max-bytes is
given (Kafka's batch.size default, 16384, is much slower).

--producers N runs N clients sharing the count, the rate and the statistics.
--warmup-records W sends W records first that the statistics leave out.
Records that fail are printed (the first 100) and counted; the command then
exits 1 after printing the statistics.`,
		Example: `  qk perf produce --topic perf --num-records 1000000 --record-size 100 --throughput -1
  qk perf produce --topic perf --num-records 100000 --record-size 1024 --throughput 20000 \
      --producer-props acks=1 linger.ms=10 compression.type=lz4
  qk perf produce --topic perf --num-records 500000 --record-size 100 --throughput -1 \
      --producers 4 --payload random --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			// --producer-props k=v k=v: pflag takes the first, the rest
			// arrive as arguments.
			for _, a := range args {
				if !cmd.Flags().Changed("producer-props") || !strings.Contains(a, "=") {
					return fmt.Errorf("unexpected argument %q", a)
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if recordSize > 0 && payloadFile != "" {
				return errors.New("--record-size and --payload-file are mutually exclusive")
			}
			if recordSize <= 0 && payloadFile == "" {
				return errors.New("either --record-size or --payload-file must be given")
			}
			kp := perf.Properties{}
			if config != "" {
				p, err := perf.LoadProperties(config)
				if err != nil {
					return fmt.Errorf("--producer.config: %w", err)
				}
				maps.Copy(kp, p)
			}
			for _, kv := range append(props, args...) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--producer-props %q: want key=value", kv)
				}
				kp[k] = v
			}
			// TLS and SASL properties are the connection's.
			if err := conn.TakeSecurity("producer properties", kp); err != nil {
				return err
			}
			pc := perf.NewProducerConfig()
			if err := pc.SetAll(kp); err != nil {
				return err
			}
			var err error
			if f.Changed("acks") {
				if pc.Acks, err = perf.ParseAcks(acks); err != nil {
					return fmt.Errorf("--acks: %w", err)
				}
			}
			if f.Changed("compression") {
				if _, err := perf.Codec(compression); err != nil {
					return fmt.Errorf("--compression: %w", err)
				}
				pc.Compression = compression
			}
			if f.Changed("linger") {
				pc.Linger = linger
			}
			if f.Changed("batch-max-bytes") {
				pc.BatchMaxBytes = batchMax
			}
			if txnID != "" {
				pc.TransactionalID = txnID
			}
			if f.Changed("transaction-duration-ms") && pc.TransactionalID == "" {
				// Kafka: performance-producer- and a random UUID.
				b := make([]byte, 16)
				_, _ = rand.Read(b)
				pc.TransactionalID = "performance-producer-" + hex.EncodeToString(b)
			}
			if txnDurationMs <= 0 {
				return errors.New("--transaction-duration-ms should be greater than zero")
			}
			base, brokers, xid, err := conn.resolve(cmd, pc.Brokers)
			if err != nil {
				return err
			}
			if pc.ClientID == "" {
				pc.ClientID = cmp.Or(xid, "perf-producer-client")
			}
			info := cmd.OutOrStdout()
			if asJSON {
				info = cmd.ErrOrStderr()
			}
			var payloads [][]byte
			if payloadFile != "" {
				if payloads, err = readPayloads(info, payloadFile, delimiter); err != nil {
					return err
				}
			}
			return perf.Produce(cmd.Context(), perf.ProduceOptions{
				Topic: topic, NumRecords: numRecords, RecordSize: recordSize, Payloads: payloads,
				Throughput: throughput, Producers: producers, Keys: keys, Payload: payload, Warmup: warmup,
				TransactionDuration: time.Duration(txnDurationMs) * time.Millisecond,
				ReportInterval:      time.Duration(reportMs) * time.Millisecond,
				PrintMetrics:        printMetrics, JSON: asJSON,
				Brokers: brokers, Client: base, Producer: pc, PingTimeout: conn.Timeout,
				Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
			})
		},
	}
	conn.addFlags(cmd, nil)
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "produce records to this topic (required)")
	f.Int64Var(&numRecords, "num-records", 0, "number of records to produce (required)")
	f.IntVar(&recordSize, "record-size", 0, "record value size in bytes (or --payload-file)")
	f.StringVar(&payloadFile, "payload-file", "", "file of UTF-8 payloads, one picked at random per record (or --record-size)")
	f.StringVar(&delimiter, "payload-delimiter", `\n`, "separator of the payloads in --payload-file (a literal string)")
	f.Float64Var(&throughput, "throughput", 0, "records/s to hold, approximately; -1: no limit (required)")
	f.StringArrayVar(&props, "producer-props", nil, "producer properties: key=value ... (Kafka's names; win over --producer.config)")
	f.StringVar(&config, "producer.config", "", "producer properties file (Kafka's names)")
	f.BoolVar(&printMetrics, "print-metrics", false, "print client metrics after the final line (not with --json)")
	f.StringVar(&txnID, "transactional-id", "", "produce in transactions with this id (-N appended per producer)")
	f.Int64Var(&txnDurationMs, "transaction-duration-ms", 3000, "with a transactional id, commit after this many milliseconds")
	f.StringVar(&acks, "acks", "all", "required acks: all (-1), 1 or 0; all is Kafka's client default, with idempotence")
	f.StringVar(&compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	f.DurationVar(&linger, "linger", 5*time.Millisecond, "how long a partition's batch waits for more records (Kafka 4.0's linger.ms=5)")
	f.Int32Var(&batchMax, "batch-max-bytes", 0, "largest record batch in bytes, Kafka's batch.size (0: franz-go's 1000012)")
	f.IntVar(&producers, "producers", 1, "parallel producer clients sharing the count, rate and statistics")
	f.StringVar(&keys, "keys", "none", "record keys: none, random (8 random bytes) or N (N distinct keys in turn)")
	f.StringVar(&payload, "payload", "fixed", "values: fixed (one random payload reused, as Kafka) or random (incompressible)")
	f.Int64Var(&warmup, "warmup-records", 0, "send this many records first and leave them out of the statistics")
	f.Int64Var(&reportMs, "reporting-interval", 5000, "milliseconds between progress lines (Kafka: 5000)")
	f.BoolVar(&asJSON, "json", false, "print JSON lines instead of Kafka's text")
	_ = cmd.MarkFlagRequired("topic")
	conn.completeTopic(cmd)
	_ = cmd.MarkFlagRequired("num-records")
	_ = cmd.MarkFlagRequired("throughput")
	_ = cmd.MarkFlagFilename("payload-file")
	_ = cmd.MarkFlagFilename("producer.config", "properties")
	_ = cmd.RegisterFlagCompletionFunc("acks", cobra.FixedCompletions([]string{"all", "1", "0"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("compression", cobra.FixedCompletions([]string{"none", "gzip", "snappy", "lz4", "zstd"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("keys", cobra.FixedCompletions([]string{"none", "random"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("payload", cobra.FixedCompletions([]string{"fixed", "random"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// readPayloads reads --payload-file as Kafka does: split at the
// delimiter (Kafka: a regular expression; here a literal string, `\n`
// meaning a newline), trailing empty payloads dropped, and says so.
func readPayloads(info io.Writer, path, delim string) ([][]byte, error) {
	if delim == `\n` {
		delim = "\n"
	}
	abs, _ := filepath.Abs(path)
	fmt.Fprintf(info, "Reading payloads from: %s\n", abs)
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return nil, fmt.Errorf("--payload-file %s: file does not exist or empty file provided", path)
	}
	parts := strings.Split(string(data), delim)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("--payload-file %s: no payloads", path)
	}
	fmt.Fprintf(info, "Number of messages read: %d\n", len(parts))
	out := make([][]byte, len(parts))
	for i, p := range parts {
		out[i] = []byte(p)
	}
	return out, nil
}

func newPerfConsumeCmd() *cobra.Command {
	var (
		conn                                              perfConn
		topic, group, config, dateFormat                  string
		messages, reportMs, timeoutMs                     int64
		fetchSize                                         int32
		fromLatest, detailed, hideHeader, metrics, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "consume --topic TOPIC --messages N",
		Short: "Consume records as a group member and report throughput (kafka-consumer-perf-test)",
		Long: `Consume --messages records of --topic as a member of --group and print
kafka-consumer-perf-test.sh's CSV: a header (unless --hide-header), then one row
with start and end time, MB and MB/s, messages and messages/s, the time spent in
rebalances, and the fetch time (elapsed less rebalances) with its rates. With
--show-detailed-stats a row is printed per --reporting-interval instead. MB are
key plus value bytes / 1024 / 1024.

--timeout is Kafka's: milliseconds to wait for a record before giving up (a
warning on stderr; the stats are still printed and the exit status is 0, as
Kafka). The connection's request timeout is therefore --request-timeout here.

Consumer settings take Kafka's property names in --consumer.config: bootstrap.servers,
client.id, group.id, group.instance.id, fetch.max.bytes, max.partition.fetch.bytes,
fetch.min.bytes, fetch.max.wait.ms, auto.offset.reset, enable.auto.commit,
auto.commit.interval.ms, session.timeout.ms, heartbeat.interval.ms,
max.poll.interval.ms, isolation.level, check.crcs, and the TLS and SASL
settings as -X takes them. --group, --fetch-size and
--from-latest, when given, win over the file. Offsets are auto-committed, and
committed on exit, as Kafka's consumer does.`,
		Example: `  qk perf consume --topic perf --messages 1000000
  qk perf consume --topic perf --messages 1000000 --show-detailed-stats --reporting-interval 1000
  qk perf consume --topic perf --messages 100000 --group bench --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			var cc perf.ConsumerConfig
			if config != "" {
				p, err := perf.LoadProperties(config)
				if err != nil {
					return fmt.Errorf("--consumer.config: %w", err)
				}
				if err := conn.TakeSecurity("--consumer.config "+config, p); err != nil {
					return err
				}
				if err := cc.SetAll(p); err != nil {
					return err
				}
			}
			if f.Changed("group") || cc.Group == "" {
				cc.Group = cmp.Or(group, perf.NewGroupID())
			}
			if f.Changed("fetch-size") || cc.FetchPartitionMax == 0 {
				if fetchSize <= 0 {
					return errors.New("--fetch-size should be greater than zero")
				}
				cc.FetchPartitionMax = fetchSize
			}
			if fromLatest {
				cc.OffsetReset = "latest"
			}
			if timeoutMs < 0 {
				return errors.New("--timeout should not be negative")
			}
			base, brokers, xid, err := conn.resolve(cmd, cc.Brokers)
			if err != nil {
				return err
			}
			if cc.ClientID == "" {
				cc.ClientID = cmp.Or(xid, "perf-consumer-client")
			}
			return perf.Consume(cmd.Context(), perf.ConsumeOptions{
				Topic: topic, Messages: messages,
				Timeout:        time.Duration(timeoutMs) * time.Millisecond,
				ReportInterval: time.Duration(reportMs) * time.Millisecond,
				Detailed:       detailed, HideHeader: hideHeader, PrintMetrics: metrics, JSON: asJSON,
				DateFormat: dateFormat,
				Brokers:    brokers, Client: base, Consumer: cc, PingTimeout: conn.Timeout,
				Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
			})
		},
	}
	conn.addFlags(cmd, map[string]string{"timeout": "request-timeout"})
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to consume (required)")
	f.Int64Var(&messages, "messages", 0, "number of records to consume (required)")
	f.StringVar(&group, "group", "", "consumer group (default perf-consumer-<random 0-99999>)")
	f.Int32Var(&fetchSize, "fetch-size", 1<<20, "bytes to fetch per partition per request (max.partition.fetch.bytes)")
	f.BoolVar(&fromLatest, "from-latest", false, "where the group has no offsets, start at the end (default: the start)")
	f.BoolVar(&detailed, "show-detailed-stats", false, "print a row per --reporting-interval, not one at the end")
	f.Int64Var(&reportMs, "reporting-interval", 5000, "milliseconds between detailed rows")
	f.Int64Var(&timeoutMs, "timeout", 10000, "milliseconds to wait for a record before giving up")
	f.BoolVar(&hideHeader, "hide-header", false, "do not print the CSV header")
	f.StringVar(&config, "consumer.config", "", "consumer properties file (Kafka's names)")
	f.StringVar(&dateFormat, "date-format", perf.DefaultDateFormat, "format of the time columns (java.text.SimpleDateFormat)")
	f.BoolVar(&metrics, "print-metrics", false, "print client metrics after the stats (not with --json)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of the CSV")
	_ = cmd.MarkFlagRequired("topic")
	conn.completeTopic(cmd)
	_ = cmd.MarkFlagRequired("messages")
	_ = cmd.MarkFlagFilename("consumer.config", "properties")
	return cmd
}

func newPerfEndToEndCmd() *cobra.Command {
	var (
		conn        perfConn
		topic, acks string
		num, size   int
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "end-to-end --topic TOPIC --num-records N",
		Short: "Measure produce-to-consume latency one record at a time (Kafka's EndToEndLatency)",
		Long: `Produce one record at a time, waiting for its acknowledgement (--acks 1 or all),
and read it back with a consumer already positioned at the end of every
partition; the latency is from the send to the receipt. Each record read must
be the one sent. Prints, as Kafka's EndToEndLatency, "N<TAB>latency ms" every
1000 records, then the average and the 50th, 99th and 99.9th percentiles in
whole milliseconds. A missing topic is created with 1 partition, replication
factor 1.`,
		Example: `  qk perf end-to-end --topic latency --num-records 10000 --acks all --record-size 100`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			base, brokers, xid, err := conn.resolve(cmd, nil)
			if err != nil {
				return err
			}
			if xid == "" {
				base = append(base, kgo.ClientID("perf-end-to-end-client"))
			}
			return perf.EndToEnd(cmd.Context(), perf.EndToEndOptions{
				Topic: topic, NumRecords: num, Acks: acks, RecordSize: size, JSON: asJSON,
				Brokers: brokers, Client: base, PingTimeout: conn.Timeout,
				Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
			})
		},
	}
	conn.addFlags(cmd, nil)
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to produce to and consume from (required)")
	f.IntVar(&num, "num-records", 0, "number of records to send, one at a time (required)")
	f.StringVar(&acks, "acks", "all", "required acks: 1 or all")
	f.IntVar(&size, "record-size", 100, "record value size in bytes")
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of Kafka's text")
	_ = cmd.MarkFlagRequired("topic")
	conn.completeTopic(cmd)
	_ = cmd.MarkFlagRequired("num-records")
	_ = cmd.RegisterFlagCompletionFunc("acks", cobra.FixedCompletions([]string{"all", "1"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
