package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() { subcommands = append(subcommands, newProduceCmd, newConsumeCmd) }

// jsonRecord is one line of `qk consume --format json` and of
// `qk produce --format json`: one JSON object per line. Key, value and
// header values are strings (UTF-8); a null or absent key is a record
// without a key. partition -1 or absent lets the partitioner choose;
// timestamp is milliseconds since the epoch (0 or absent: now); offset is
// printed by consume and ignored by produce.
type jsonRecord struct {
	Topic     string       `json:"topic,omitempty"`
	Partition *int32       `json:"partition,omitempty"`
	Offset    *int64       `json:"offset,omitempty"`
	Timestamp int64        `json:"timestamp,omitempty"`
	Key       *string      `json:"key"`
	Value     string       `json:"value"`
	Headers   []jsonHeader `json:"headers,omitempty"`
}

type jsonHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func toJSONRecord(r *kgo.Record) jsonRecord {
	j := jsonRecord{Topic: r.Topic, Partition: &r.Partition, Offset: &r.Offset, Timestamp: r.Timestamp.UnixMilli(), Value: string(r.Value)}
	if r.Key != nil {
		k := string(r.Key)
		j.Key = &k
	}
	for _, h := range r.Headers {
		j.Headers = append(j.Headers, jsonHeader{Key: h.Key, Value: string(h.Value)})
	}
	return j
}

// recordPartitioner keeps a partition set on the record (>= 0) and hashes
// the key otherwise, as Kafka's default partitioner does.
type recordPartitioner struct{ def kgo.Partitioner }

func (p recordPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	return recordTopicPartitioner{p.def.ForTopic(t)}
}

type recordTopicPartitioner struct{ def kgo.TopicPartitioner }

func (p recordTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.def.RequiresConsistency(r)
}

func (p recordTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	return p.def.Partition(r, n)
}

func newProduceCmd() *cobra.Command {
	var (
		p           adminParams
		format      string
		keySep      string
		layout      string
		acks        string
		compression string
		partition   int32
	)
	cmd := &cobra.Command{
		Use:               "produce [TOPIC]",
		Short:             "Produce records read from stdin, one per line",
		ValidArgsFunction: p.completeTopics,
		Long: `Produce records read from stdin, one per line.

With --format text (the default) each line is a record value; with -k SEP
the line is split at the first SEP into key and value.

With --format json each line is one JSON object, exactly what
'qk consume --format json' prints:

  {"topic":"t","partition":0,"offset":3,"timestamp":1700000000000,
   "key":"k","value":"v","headers":[{"key":"h","value":"x"}]}

key, value and header values are strings; a null or absent key means no key;
partition -1 or absent lets the partitioner choose (key hash), and -p
overrides it; timestamp is milliseconds since the epoch (absent: now);
offset is ignored. TOPIC, when given, names the topic of every record, as
kcat's -t does: a record's "topic" field is then ignored, so a consumed
topic can be copied into another. Without TOPIC each record goes to the
topic its "topic" field names (with -f: its %t), and a record without one
is an error. A record's partition must exist in the topic it goes to: to
copy into a topic with fewer partitions, pass -p.

With -f LAYOUT each record is read with franz-go's record reader
(kgo.RecordReader), kcat-like: %t topic, %k key, %v value, %p partition,
%d timestamp (milliseconds, or %d{go#RFC3339#}), %H number of headers and
%h{...} each header's %k and %v; \n, \t and \\ are escapes. A record without
%p goes to -p (or the key hash), without %d gets the current time.`,
		Example: `  printf 'a\nb\n' | qk produce orders
  printf 'k1:v1\n' | qk produce orders -k : --acks all --compression zstd
  qk consume orders -o start -e --format json | qk produce orders-copy --format json
  qk consume orders returns -o start -e --format json | qk produce --format json
  printf 'k1 1 h=x v1\n' | qk produce orders -f '%k %H %h{%k=%v }%v\n'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var topic string
			if len(args) == 1 {
				topic = args[0]
				if topic == "" {
					return errors.New("TOPIC is empty")
				}
			} else if format != "json" && !cmd.Flags().Changed("layout") {
				return errors.New("TOPIC is required, except with --format json or a -f layout with %t, where each record names its topic")
			}
			if err := p.conn.Resolve(); err != nil {
				return err
			}
			opts := []kgo.Opt{
				kgo.RecordPartitioner(recordPartitioner{kgo.StickyKeyPartitioner(nil)}),
				// As kafka-console-producer.sh and kcat do: a missing
				// topic is created when the broker's
				// auto.create.topics.enable allows it.
				kgo.AllowAutoTopicCreation(),
				kgo.ProduceRequestTimeout(p.conn.Timeout),
				// No RecordDeliveryTimeout: kgo measures it from the
				// record's timestamp, so a --format json record with an
				// old one would fail at once. A topic that is still
				// missing fails after kgo's UnknownTopicRetries (4
				// metadata refreshes, about a second).
			}
			if topic != "" {
				opts = append(opts, kgo.DefaultProduceTopic(topic))
			}
			switch acks {
			case "all", "-1":
				opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
			case "1", "leader":
				opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
			case "0", "none":
				opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
			default:
				return fmt.Errorf("--acks %q: want all, 1 or 0", acks)
			}
			var codec kgo.CompressionCodec
			switch compression {
			case "none":
				codec = kgo.NoCompression()
			case "gzip":
				codec = kgo.GzipCompression()
			case "snappy":
				codec = kgo.SnappyCompression()
			case "lz4":
				codec = kgo.Lz4Compression()
			case "zstd":
				codec = kgo.ZstdCompression()
			default:
				return fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", compression)
			}
			opts = append(opts, kgo.ProducerBatchCompression(codec))
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			var rr *kgo.RecordReader
			if cmd.Flags().Changed("layout") {
				if err := layoutConflict(cmd, format); err != nil {
					return err
				}
				if keySep != "" {
					return errors.New("-f and -k are mutually exclusive: use %k in the layout")
				}
				var err error
				if rr, err = kgo.NewRecordReader(cmd.InOrStdin(), layout); err != nil {
					return fmt.Errorf("-f %q: %w", layout, err)
				}
			}
			c, err := p.conn.DialKgo(cmd.Context(), opts...)
			if err != nil {
				return err
			}
			defer c.Close()
			if rr != nil {
				return produceLayout(cmd.Context(), c.Kgo(), rr, topic, partition)
			}
			return produce(cmd.Context(), c.Kgo(), cmd.InOrStdin(), topic, format, keySep, partition)
		},
	}
	p.conn.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.Lookup("timeout").Usage = "timeout of each request to the cluster (also the Produce requests' timeout_ms)"
	f.StringVar(&format, "format", "text", "input format: text (one value per line) or json (one record object per line)")
	f.StringVarP(&keySep, "key-separator", "k", "", "text format: split each line at the first SEP into key and value")
	f.StringVarP(&layout, "layout", "f", "", "read records with this franz-go record reader layout, e.g. '%k %v\\n' (not with --format json)")
	f.StringVar(&acks, "acks", "all", "required acks: all, 1 or 0")
	f.StringVar(&compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	f.Int32VarP(&partition, "partition", "p", -1, "produce to this partition (-1: by key hash)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("acks", cobra.FixedCompletions([]string{"all", "1", "0"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("compression", cobra.FixedCompletions([]string{"none", "gzip", "snappy", "lz4", "zstd"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// layoutConflict rejects -f together with --format json.
func layoutConflict(cmd *cobra.Command, format string) error {
	if format == "json" {
		return errors.New("-f and --format json are mutually exclusive")
	}
	return nil
}

// produceLayout produces the records that rr reads until EOF. A non-empty
// topic is every record's topic, whatever the layout's %t read; an empty
// one leaves it to %t. partition ≥ 0 (-p) likewise overrides %p.
func produceLayout(ctx context.Context, cl *kgo.Client, rr *kgo.RecordReader, topic string, partition int32) error {
	var firstErr error
	done := func(r *kgo.Record, err error) {
		if err != nil && firstErr == nil {
			firstErr = produceError(r.Topic, err)
		}
	}
	for n := 1; ; n++ {
		r := &kgo.Record{Partition: -1}
		err := rr.ReadRecordInto(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = routeRecord(r, topic, partition)
		}
		if err != nil {
			return stopOnBadInput(ctx, cl, firstErr, fmt.Errorf("stdin record %d: %w", n, err))
		}
		cl.Produce(ctx, r, done)
	}
	if err := cl.Flush(ctx); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// missingTopicError is a produce to a topic that does not exist and that
// the broker did not create although asked to (Metadata
// allow_auto_topic_creation): its auto.create.topics.enable is false, or
// the topic was refused. Err is the client's error
// (UNKNOWN_TOPIC_OR_PARTITION).
type missingTopicError struct {
	Topic string
	Err   error
}

func (e *missingTopicError) Error() string {
	return fmt.Sprintf("topic %q does not exist and the broker did not create it (auto.create.topics.enable=false?); create it with: qk topic create %s", e.Topic, e.Topic)
}

func (e *missingTopicError) Unwrap() error { return e.Err }

// produceError is the error of a record that could not be produced to
// topic: a missing topic says how to create it.
func produceError(topic string, err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return &missingTopicError{Topic: topic, Err: err}
	}
	return fmt.Errorf("produce to %s: %w", topic, err)
}

// stopOnBadInput ends a produce at a record it cannot read or route: the
// records queued before it are flushed, and the first produce error, if
// any, is reported before the input's.
func stopOnBadInput(ctx context.Context, cl *kgo.Client, firstErr, inputErr error) error {
	if err := cl.Flush(ctx); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return firstErr
	}
	return inputErr
}

// routeRecord settles the topic and partition of a record read with its
// own (JSON fields or a layout's %t and %p): the TOPIC argument and -p win
// over what the record says, so `qk consume a --format json | qk produce b
// --format json` copies a into b. Without TOPIC the record must name one.
func routeRecord(r *kgo.Record, topic string, partition int32) error {
	if topic != "" {
		r.Topic = topic
	}
	if r.Topic == "" {
		return errors.New(`record names no topic: give TOPIC, or a "topic" field (-f: %t)`)
	}
	if partition >= 0 || r.Partition < 0 {
		r.Partition = partition
	}
	return nil
}

// produce produces the records of in, one per line, in format (text or
// json). topic is the TOPIC argument ("" only for json: each record's own).
func produce(ctx context.Context, cl *kgo.Client, in io.Reader, topic, format, keySep string, partition int32) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var (
		firstErr error
		line     int
	)
	done := func(r *kgo.Record, err error) {
		if err != nil && firstErr == nil {
			firstErr = produceError(r.Topic, err)
		}
	}
	for sc.Scan() {
		line++
		r := &kgo.Record{Topic: topic, Partition: partition}
		var err error
		switch format {
		case "json":
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var j jsonRecord
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&j); err != nil {
				return fmt.Errorf("stdin line %d: %w", line, err)
			}
			r.Topic, r.Partition = j.Topic, -1
			if j.Partition != nil {
				r.Partition = *j.Partition
			}
			if j.Key != nil {
				r.Key = []byte(*j.Key)
			}
			r.Value = []byte(j.Value)
			if j.Timestamp != 0 {
				r.Timestamp = time.UnixMilli(j.Timestamp)
			}
			for _, h := range j.Headers {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
			}
			err = routeRecord(r, topic, partition)
		default:
			text := sc.Text()
			if keySep != "" {
				k, v, ok := strings.Cut(text, keySep)
				if !ok {
					return fmt.Errorf("stdin line %d: no key separator %q", line, keySep)
				}
				r.Key, text = []byte(k), v
			}
			r.Value = []byte(text)
		}
		if err != nil {
			return stopOnBadInput(ctx, cl, firstErr, fmt.Errorf("stdin line %d: %w", line, err))
		}
		cl.Produce(ctx, r, done)
	}
	if err := cl.Flush(ctx); err != nil && firstErr == nil {
		firstErr = err
	}
	if err := sc.Err(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("read stdin: %w", err)
	}
	return firstErr
}

// startOffset is a parsed -o.
type startOffset struct {
	kind string // start, end, at, fromEnd, time
	n    int64
}

func parseOffset(s string) (startOffset, error) {
	switch {
	case s == "start" || s == "beginning" || s == "earliest":
		return startOffset{kind: "start"}, nil
	case s == "end" || s == "latest":
		return startOffset{kind: "end"}, nil
	case strings.HasPrefix(s, "@"):
		ms, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil {
			t, terr := time.Parse(time.RFC3339, s[1:])
			if terr != nil {
				return startOffset{}, fmt.Errorf("-o %q: want @milliseconds or @RFC3339 time", s)
			}
			ms = t.UnixMilli()
		}
		return startOffset{kind: "time", n: ms}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return startOffset{}, fmt.Errorf("-o %q: want start, end, N, -N or @timestamp", s)
	}
	if n < 0 {
		return startOffset{kind: "fromEnd", n: -n}, nil
	}
	return startOffset{kind: "at", n: n}, nil
}

func newConsumeCmd() *cobra.Command {
	var (
		p      adminParams
		format string
		layout string
		offset string
		count  int
		exit   bool
		group  string
		iso    string
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC...",
		Short: "Consume records and print them, one per line",
		Long: `Consume records and print them, one per line: the value with --format text,
a JSON object with --format json that 'qk produce --format json' reads back.

-o is where to start in each partition: start, end, an offset N, -N (N records
before the end) or @timestamp (milliseconds or RFC 3339). With -g the group's
committed offsets win, -o applies where the group has none, and what was
printed is committed on exit.

With -f LAYOUT each record is printed with franz-go's record formatter
(kgo.RecordFormatter), kcat-like: %t topic, %p partition, %o offset, %k key,
%v value, %d timestamp (milliseconds, %d{go#RFC3339#} or %d{strftime[%F]}),
%H number of headers, %h{%k=%v } each header; \n, \t and \\ are escapes.
Nothing is added: end the layout with \n for one record per line.`,
		ValidArgsFunction: p.completeTopics,
		Example: `  qk consume orders -o start -e
  qk consume orders -o -10 -n 10 --format json
  qk consume orders payments -g audit -e
  qk consume orders -o start -e -f '%p/%o %k=%v %h{%k:%v }\n'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			so, err := parseOffset(offset)
			if err != nil {
				return err
			}
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			var isolation kgo.IsolationLevel
			switch iso {
			case "read_uncommitted":
				isolation = kgo.ReadUncommitted()
			case "read_committed":
				isolation = kgo.ReadCommitted()
			default:
				return fmt.Errorf("--isolation-level %q: want read_committed or read_uncommitted", iso)
			}
			var rf *kgo.RecordFormatter
			if cmd.Flags().Changed("layout") {
				if err := layoutConflict(cmd, format); err != nil {
					return err
				}
				if rf, err = kgo.NewRecordFormatter(layout); err != nil {
					return fmt.Errorf("-f %q: %w", layout, err)
				}
			}
			ac, err := p.conn.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer ac.Close()
			ctx, cancel := ac.Context(cmd.Context())
			starts, ends, err := consumeRange(ctx, ac.Client, args, so, group, iso == "read_committed")
			cancel()
			if err != nil {
				return err
			}
			// Control records (transaction markers) are kept, not printed:
			// they move the position, so -e ends after a final marker.
			opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond), kgo.FetchIsolationLevel(isolation), kgo.KeepControlRecords()}
			if group != "" {
				opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(args...), kgo.DisableAutoCommit())
				// Where the group has no commit, consumeRange resolved -o.
				opts = append(opts, kgo.ConsumeResetOffset(resetOffset(so)))
			} else {
				m := map[string]map[int32]kgo.Offset{}
				for t, ps := range starts {
					m[t] = map[int32]kgo.Offset{}
					for p, o := range ps {
						m[t][p] = kgo.NewOffset().At(o)
					}
				}
				opts = append(opts, kgo.ConsumePartitions(m))
			}
			c, err := p.conn.DialKgo(cmd.Context(), opts...)
			if err != nil {
				return err
			}
			defer c.Close()
			return consume(cmd.Context(), c.Kgo(), cmd.OutOrStdout(), format, rf, count, exit, starts, ends, group != "")
		},
	}
	p.conn.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&format, "format", "text", "output format: text (values) or json (one record object per line)")
	f.StringVarP(&layout, "layout", "f", "", "print records with this franz-go record formatter layout, e.g. '%k %v\\n' (not with --format json)")
	f.StringVarP(&offset, "offset", "o", "end", "start at: start, end, N, -N or @timestamp")
	f.IntVarP(&count, "count", "n", 0, "exit after this many records (0: no limit)")
	f.BoolVarP(&exit, "exit", "e", false, "exit at the end of every partition")
	f.StringVarP(&group, "group", "g", "", "consume as this consumer group and commit what was printed")
	f.StringVar(&iso, "isolation-level", "read_uncommitted", "read_committed: only committed transactional records, up to the last stable offset (-e ends there); read_uncommitted: all records, up to the high watermark")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("isolation-level", cobra.FixedCompletions([]string{"read_committed", "read_uncommitted"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func resetOffset(so startOffset) kgo.Offset {
	switch so.kind {
	case "start":
		return kgo.NewOffset().AtStart()
	case "at":
		return kgo.NewOffset().At(so.n)
	case "fromEnd":
		return kgo.NewOffset().AtEnd().Relative(-so.n)
	case "time":
		return kgo.NewOffset().AfterMilli(so.n)
	}
	return kgo.NewOffset().AtEnd()
}

// consumeRange resolves where each partition starts and where it ends
// now (for -e).
// With readCommitted the end is each partition's last stable offset.
func consumeRange(ctx context.Context, c *kadm.Client, topics []string, so startOffset, group string, readCommitted bool) (starts, ends map[string]map[int32]int64, err error) {
	lso, err := c.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets: %w", err)
	}
	list := c.ListEndOffsets
	if readCommitted {
		list = c.ListCommittedOffsets
	}
	leo, err := list(ctx, topics...)
	if err == nil {
		err = leo.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	if so.kind == "time" {
		if byTime, err = c.ListOffsetsAfterMilli(ctx, so.n, topics...); err != nil {
			return nil, nil, fmt.Errorf("list offsets: %w", err)
		}
	}
	var committed kadm.OffsetResponses
	if group != "" {
		// A group that has never committed has no offsets: Kafka answers
		// with an empty list, some Kafka-compatible brokers (kfake) with
		// GROUP_ID_NOT_FOUND; both mean "start from -o".
		if committed, err = c.FetchOffsets(ctx, group); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return nil, nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
		}
	}
	starts, ends = map[string]map[int32]int64{}, map[string]map[int32]int64{}
	lso.Each(func(o kadm.ListedOffset) {
		start, end := o.Offset, leo[o.Topic][o.Partition].Offset
		at := start
		switch so.kind {
		case "end":
			at = end
		case "at":
			at = so.n
		case "fromEnd":
			at = end - so.n
		case "time":
			at = byTime[o.Topic][o.Partition].Offset
			if at < 0 {
				at = end
			}
		}
		at = max(start, min(at, end))
		if cm, ok := committed.Lookup(o.Topic, o.Partition); ok && cm.Err == nil && cm.At >= 0 {
			at = cm.At
		}
		if starts[o.Topic] == nil {
			starts[o.Topic], ends[o.Topic] = map[int32]int64{}, map[int32]int64{}
		}
		starts[o.Topic][o.Partition], ends[o.Topic][o.Partition] = at, end
	})
	return starts, ends, nil
}

func consume(ctx context.Context, cl *kgo.Client, w io.Writer, format string, rf *kgo.RecordFormatter, count int, exit bool, pos, ends map[string]map[int32]int64, commit bool) error {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	enc := json.NewEncoder(bw)
	var buf []byte
	last := map[string]map[int32]*kgo.Record{}
	printed := 0
	atEnd := func() bool {
		for t, ps := range ends {
			for p, e := range ps {
				if pos[t][p] < e {
					return false
				}
			}
		}
		return true
	}
	var err error
	for {
		if count > 0 && printed >= count || exit && atEnd() {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(t string, p int32, e error) {
			if err == nil && !errors.Is(e, context.Canceled) {
				err = fmt.Errorf("consume %s/%d: %w", t, p, e)
			}
		})
		if err != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			if count > 0 && printed >= count {
				return
			}
			if pos[r.Topic] != nil {
				pos[r.Topic][r.Partition] = r.Offset + 1
			}
			if r.Attrs.IsControl() {
				return
			}
			if last[r.Topic] == nil {
				last[r.Topic] = map[int32]*kgo.Record{}
			}
			last[r.Topic][r.Partition] = r
			printed++
			switch {
			case rf != nil:
				buf = rf.AppendRecord(buf[:0], r)
				bw.Write(buf)
			case format == "json":
				_ = enc.Encode(toJSONRecord(r))
			default:
				bw.Write(r.Value)
				bw.WriteByte('\n')
			}
		})
		bw.Flush()
	}
	if commit {
		var rs []*kgo.Record
		for _, ps := range last {
			for _, r := range ps {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if cerr := cl.CommitRecords(cctx, rs...); cerr != nil && err == nil {
				err = fmt.Errorf("commit offsets: %w", cerr)
			}
		}
	}
	return err
}
