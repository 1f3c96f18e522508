//lint:file-ignore ST1005 the error texts are Kafka's messages, verbatim, which scripts match

package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func init() { subcommands = append(subcommands, newLogDirsCmd) }

// newLogDirsCmd is kafka-log-dirs.sh --describe: Kafka's flags, its two
// lines and its JSON, so that the scripts that read the JSON work.
func newLogDirsCmd() *cobra.Command {
	var (
		conn                 kafkaToolConn
		describe             bool
		brokerList, topicStr string
	)
	cmd := &cobra.Command{
		Use:   "log-dirs --bootstrap-server HOST:PORT --describe [--broker-list 1,2] [--topic-list a,b]",
		Short: "Describe the log directories of brokers: sizes and lag of each partition (kafka-log-dirs)",
		Long: `Describe the log directories of the brokers, as kafka-log-dirs.sh --describe does:
the same flags, the same two lines, then one line of JSON:

  {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,
   "partitions":[{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}

size is the partition's bytes on disk, offsetLag how far the replica is behind
the high watermark (or, for a future replica being moved between log dirs,
behind the current one). A log dir that failed shows the Java exception class
of its error (org.apache.kafka.common.errors.KafkaStorageException for
KAFKA_STORAGE_ERROR) and no partitions.

--broker-list queries only those brokers (all by default; one that is not in
the cluster is an error); --topic-list shows only those topics' partitions.
The cluster is --bootstrap-server (or qk's -b, $QK_BROKERS or --profile);
--command-config reads Kafka admin client properties (see reassign-partitions).`,
		Example: `  qk log-dirs --bootstrap-server 127.0.0.1:9092 --describe
  qk log-dirs --bootstrap-server 127.0.0.1:9092 --describe --broker-list 1,2 --topic-list orders`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !describe {
				return errors.New(`Missing required argument "[describe]"`)
			}
			brokers, err := parseBrokerList(brokerList)
			if err != nil {
				return err
			}
			topics := splitNonEmpty(topicStr)
			c, err := conn.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := c.Context(cmd.Context())
			defer cancel()
			live, err := c.ListBrokers(ctx)
			if err != nil {
				return fmt.Errorf("list brokers: %w", err)
			}
			cluster := live.NodeIDs()
			slices.Sort(cluster)
			query := cluster
			if len(brokers) > 0 {
				var missing []int32
				for _, b := range brokers {
					if !slices.Contains(cluster, b) {
						missing = append(missing, b)
					}
				}
				if len(missing) > 0 {
					return fmt.Errorf("ERROR: The given brokers do not exist from --broker-list: %s. Current existent brokers: %s", joinIDs(missing), joinIDs(cluster))
				}
				query = brokers
			}
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, "Querying brokers for log directories information")
			out := logDirsJSON{Version: 1, Brokers: []logDirsBroker{}}
			for _, b := range query {
				dirs, err := c.DescribeBrokerLogDirs(ctx, b, nil)
				if err != nil {
					return fmt.Errorf("describe log dirs of broker %d: %w", b, err)
				}
				out.Brokers = append(out.Brokers, logDirsOf(b, dirs, topics))
			}
			fmt.Fprintf(w, "Received log directory information from brokers %s\n", joinIDs(query))
			// One line, without Go's escaping of <, > and & (Jackson
			// writes them as they are).
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			return enc.Encode(out)
		},
	}
	conn.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&describe, "describe", false, "Describe the specified log directories on the specified brokers.")
	f.StringVar(&brokerList, "broker-list", "", `The list of brokers to be queried in the form "0,1,2". All brokers in the cluster will be queried if no broker list is specified`)
	f.StringVar(&topicStr, "topic-list", "", `The list of topics to be queried in the form "topic1,topic2,topic3". All topics will be queried if no topic list is specified`)
	return cmd
}

// logDirsJSON is kafka-log-dirs.sh's JSON, its fields in the order Kafka's
// documentation shows them.
type logDirsJSON struct {
	Version int             `json:"version"`
	Brokers []logDirsBroker `json:"brokers"`
}

type logDirsBroker struct {
	Broker  int32        `json:"broker"`
	LogDirs []logDirJSON `json:"logDirs"`
}

type logDirJSON struct {
	LogDir     string             `json:"logDir"`
	Error      *string            `json:"error"`
	Partitions []logDirsPartition `json:"partitions"`
}

type logDirsPartition struct {
	Partition string `json:"partition"` // topic-partition, as Java's TopicPartition.toString
	Size      int64  `json:"size"`
	OffsetLag int64  `json:"offsetLag"`
	IsFuture  bool   `json:"isFuture"`
}

// logDirsOf is one broker's dirs, sorted by path, each with its partitions
// (of topics, if any are named) sorted by topic and partition. Kafka prints
// hash-map order; sorting gives the same content in an order a diff can
// compare.
func logDirsOf(broker int32, dirs kadm.DescribedLogDirs, topics []string) logDirsBroker {
	out := logDirsBroker{Broker: broker, LogDirs: []logDirJSON{}}
	for _, d := range dirs.Sorted() {
		ld := logDirJSON{LogDir: d.Dir, Partitions: []logDirsPartition{}}
		if d.Err != nil {
			s := d.Err.Error()
			var ke *kerr.Error
			if errors.As(d.Err, &ke) {
				s = javaExceptionName(ke)
			}
			ld.Error = &s
		}
		var ps []kadm.DescribedLogDirPartition
		for t, parts := range d.Topics {
			if len(topics) > 0 && !slices.Contains(topics, t) {
				continue
			}
			for _, p := range parts {
				ps = append(ps, p)
			}
		}
		slices.SortFunc(ps, func(a, b kadm.DescribedLogDirPartition) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(btoi(a.IsFuture), btoi(b.IsFuture)))
		})
		for _, p := range ps {
			ld.Partitions = append(ld.Partitions, logDirsPartition{
				Partition: fmt.Sprintf("%s-%d", p.Topic, p.Partition),
				Size:      p.Size,
				OffsetLag: p.OffsetLag,
				IsFuture:  p.IsFuture,
			})
		}
		out.LogDirs = append(out.LogDirs, ld)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// splitNonEmpty splits a comma list, dropping empty items, as Kafka's tools
// read --topic-list and --broker-list.
func splitNonEmpty(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// parseBrokerList reads "1,2,3" into sorted, distinct broker ids.
func parseBrokerList(s string) ([]int32, error) {
	var ids []int32
	for _, x := range splitNonEmpty(s) {
		n, err := strconv.ParseInt(x, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--broker-list %q: %q is not a broker id", s, x)
		}
		if !slices.Contains(ids, int32(n)) {
			ids = append(ids, int32(n))
		}
	}
	slices.Sort(ids)
	return ids, nil
}
