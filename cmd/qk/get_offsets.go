//lint:file-ignore ST1005 the error texts are Kafka's messages, verbatim, which scripts match

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/admin"
)

func init() { subcommands = append(subcommands, newGetOffsetsCmd) }

// newGetOffsetsCmd is kafka-get-offsets.sh (Kafka's GetOffsetShell): the
// offsets of partitions at a time, one "topic:partition:offset" line each.
func newGetOffsetsCmd() *cobra.Command {
	var (
		conn                       kafkaToolConn
		topic, partitions, timeStr string
		topicPartitions            string
		excludeInternal            bool
	)
	cmd := &cobra.Command{
		Use:   "get-offsets --bootstrap-server HOST:PORT [--topic REGEX] [--partitions 0,1] [--time -1|-2|-3|MS]",
		Short: "Print the offsets of partitions at a time: latest, earliest, max-timestamp or a timestamp (kafka-get-offsets)",
		Long: `Print each partition's offset at --time, as kafka-get-offsets.sh does, one line
per partition, topic:partition:offset, sorted by topic and then partition:

  orders:0:42

--time is -1 or latest (the high watermark, the default), -2 or earliest (the
log start offset), -3 or max-timestamp (the offset of the record with the
largest timestamp), -4 or earliest-local, -5 or latest-tiered, or a timestamp
in ms: the first offset whose record's timestamp is at or after it. A
partition with no such offset is left out, as Kafka leaves it out.

--topic is a regular expression that must match a whole topic name (a comma
stands for |, as in Kafka's); without it every topic is queried.
--partitions limits the partitions by id. --topic-partitions takes Kafka's
pattern list instead (topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3; a range's
upper bound is exclusive). --exclude-internal-topics leaves out
__consumer_offsets and __transaction_state.

A partition whose offset cannot be read is reported on stderr ("Skip getting
offsets for topic-partition ...") and the others are still printed; qk then
exits 1. The cluster is --bootstrap-server (or qk's -b, $QK_BROKERS or
--profile); --command-config reads Kafka admin client properties (see
reassign-partitions).`,
		Example: `  qk get-offsets --bootstrap-server 127.0.0.1:9092 --topic orders
  qk get-offsets --bootstrap-server 127.0.0.1:9092 --topic 'orders|payments' --partitions 0,1 --time earliest
  qk get-offsets --bootstrap-server 127.0.0.1:9092 --topic-partitions 'orders:0-3' --time 1700000000000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if f.Changed("topic-partitions") && (f.Changed("topic") || f.Changed("partitions")) {
				return errors.New("--topic-partitions cannot be used with --topic or --partitions")
			}
			ts, err := parseOffsetTime(timeStr)
			if err != nil {
				return err
			}
			var filter topicPartitionFilter
			if f.Changed("topic-partitions") {
				filter, err = parseTopicPartitions(topicPartitions)
			} else {
				filter, err = topicAndPartitionsFilter(topic, f.Changed("topic"), partitions)
			}
			if err != nil {
				return err
			}
			c, err := conn.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := c.Context(cmd.Context())
			defer cancel()
			return getOffsets(ctx, cmd, c, filter, ts, excludeInternal)
		},
	}
	conn.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "The topic to get the offsets for. It also accepts a regular expression. If not present, all authorized topics are queried. Cannot be used if --topic-partitions is present.")
	f.StringVar(&partitions, "partitions", "", "Comma separated list of partition ids to get the offsets for. If not present, all partitions of the authorized topics are queried. Cannot be used if --topic-partitions is present.")
	f.StringVar(&topicPartitions, "topic-partitions", "", "Comma separated list of topic-partition patterns to get the offsets for: topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3. The topic is a regular expression (empty: any topic); the partition is a number, a range NUMBER-NUMBER (upper exclusive), NUMBER- or -NUMBER, or absent for all.")
	f.StringVar(&timeStr, "time", "latest", "timestamp of the offsets before that: <timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or earliest-local / -5 or latest-tiered")
	f.BoolVar(&excludeInternal, "exclude-internal-topics", false, "By default, internal topics are included. If specified, internal topics are excluded.")
	conn.completeTopic(cmd)
	_ = cmd.RegisterFlagCompletionFunc("time", cobra.FixedCompletions(
		[]string{"latest", "earliest", "max-timestamp", "earliest-local", "latest-tiered"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// offsetTimes are --time's names and the ListOffsets timestamps they stand
// for.
var offsetTimes = map[string]int64{
	"latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5,
}

// parseOffsetTime reads --time as Kafka's GetOffsetShell does: a name, or a
// number (the special values, or a timestamp in ms).
func parseOffsetTime(s string) (int64, error) {
	if ts, ok := offsetTimes[s]; ok {
		return ts, nil
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ts < -5 {
		return 0, fmt.Errorf("Malformed time argument %s. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp", s)
	}
	return ts, nil
}

// topicPartitionFilter picks partitions: topics by a whole-name regular
// expression and partitions by id, any of its rules (Kafka's
// CompositeTopicPartitionFilter).
type topicPartitionFilter []topicPartitionRule

type topicPartitionRule struct {
	topic *regexp.Regexp
	// partition allows a partition id.
	partition func(int32) bool
}

func (f topicPartitionFilter) topicAllowed(t string) bool {
	return slices.ContainsFunc(f, func(r topicPartitionRule) bool { return r.topic.MatchString(t) })
}

func (f topicPartitionFilter) allowed(t string, p int32) bool {
	return slices.ContainsFunc(f, func(r topicPartitionRule) bool { return r.topic.MatchString(t) && r.partition(p) })
}

// includeList compiles a topic pattern as Kafka's TopicFilter.IncludeList
// does: commas mean |, spaces and surrounding quotes are dropped, and the
// expression must match the whole name.
func includeList(flag, pattern string) (*regexp.Regexp, error) {
	p := strings.ReplaceAll(strings.TrimSpace(pattern), ",", "|")
	p = strings.ReplaceAll(p, " ", "")
	p = strings.TrimRight(strings.TrimLeft(p, `"'`), `"'`)
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, pattern, err)
	}
	return re, nil
}

func topicAndPartitionsFilter(topic string, given bool, partitions string) (topicPartitionFilter, error) {
	if !given {
		topic = ".*"
	}
	re, err := includeList("--topic", topic)
	if err != nil {
		return nil, err
	}
	var ids []int32
	if partitions != "" {
		for _, s := range strings.Split(partitions, ",") {
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--partitions expects a comma separated list of numeric partition ids, but received: %s", partitions)
			}
			ids = append(ids, int32(n))
		}
	}
	return topicPartitionFilter{{re, func(p int32) bool { return len(ids) == 0 || slices.Contains(ids, p) }}}, nil
}

// topicPartitionPattern is Kafka's TOPIC_PARTITION_PATTERN for one rule of
// --topic-partitions: a topic regex, then optionally :N, :N-M, :N- or :-M.
var topicPartitionPattern = regexp.MustCompile(`^([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?$`)

func parseTopicPartitions(s string) (topicPartitionFilter, error) {
	var f topicPartitionFilter
	for _, spec := range strings.Split(s, ",") {
		m := topicPartitionPattern.FindStringSubmatch(spec)
		if m == nil {
			return nil, fmt.Errorf("Invalid rule specification: %s", spec)
		}
		topic := cmp.Or(m[1], ".*")
		re, err := includeList("--topic-partitions", topic)
		if err != nil {
			return nil, err
		}
		num := func(s string, def int64) (int64, error) {
			if s == "" {
				return def, nil
			}
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return 0, fmt.Errorf("Invalid rule specification: %s", spec)
			}
			return n, nil
		}
		rule := topicPartitionRule{topic: re}
		if m[2] != "" {
			n, err := num(m[2], 0)
			if err != nil {
				return nil, err
			}
			rule.partition = func(p int32) bool { return int64(p) == n }
		} else {
			lo, err := num(m[3], 0)
			if err != nil {
				return nil, err
			}
			hi, err := num(m[4], 1<<31-1)
			if err != nil {
				return nil, err
			}
			rule.partition = func(p int32) bool { return int64(p) >= lo && int64(p) < hi }
		}
		f = append(f, rule)
	}
	return f, nil
}

// getOffsets lists the topics the filter allows, asks their leaders for the
// offsets at ts with one ListOffsets per leader (read_uncommitted, as
// Kafka's admin client asks) and prints them sorted by topic and partition.
func getOffsets(ctx context.Context, cmd *cobra.Command, c *admin.Client, filter topicPartitionFilter, ts int64, excludeInternal bool) error {
	list := c.Client.ListTopicsWithInternal
	if excludeInternal {
		list = c.Client.ListTopics
	}
	topics, err := list(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	type tp struct {
		topic     string
		partition int32
	}
	var want []tp
	for name, td := range topics {
		if td.Err != nil || !filter.topicAllowed(name) {
			continue
		}
		for p := range td.Partitions {
			if filter.allowed(name, p) {
				want = append(want, tp{name, p})
			}
		}
	}
	if len(want) == 0 {
		return errors.New("Could not match any topic-partitions with the specified filters")
	}
	slices.SortFunc(want, func(a, b tp) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})

	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, w := range want {
		i, ok := byTopic[w.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[w.topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = w.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = w.partition
		rp.Timestamp = ts
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	got := map[tp]int64{}
	failed := map[tp]error{}
	for _, shard := range c.Kgo().RequestSharded(ctx, req) {
		if shard.Err != nil {
			// The whole shard failed: each of its partitions is skipped.
			if sreq, ok := shard.Req.(*kmsg.ListOffsetsRequest); ok {
				for _, t := range sreq.Topics {
					for _, p := range t.Partitions {
						failed[tp{t.Topic, p.Partition}] = shard.Err
					}
				}
			}
			continue
		}
		resp := shard.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					failed[tp{t.Topic, p.Partition}] = err
					continue
				}
				got[tp{t.Topic, p.Partition}] = p.Offset
			}
		}
	}
	w, ew := cmd.OutOrStdout(), cmd.ErrOrStderr()
	skipped := 0
	for _, k := range want {
		if err, ok := failed[k]; ok {
			skipped++
			fmt.Fprintf(ew, "Skip getting offsets for topic-partition %s-%d due to error: %s\n", k.topic, k.partition, javaExceptionText(err))
			continue
		}
		off, ok := got[k]
		if !ok || off == -1 { // -1: no offset at that time (UNKNOWN_OFFSET)
			continue
		}
		fmt.Fprintf(w, "%s:%d:%d\n", k.topic, k.partition, off)
	}
	if skipped > 0 {
		return fmt.Errorf("get offsets: %d of %d partitions skipped", skipped, len(want))
	}
	return nil
}
