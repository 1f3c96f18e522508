//lint:file-ignore ST1005 the error texts are Kafka's messages, verbatim, which scripts match

package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { subcommands = append(subcommands, newDeleteRecordsCmd) }

// newDeleteRecordsCmd is kafka-delete-records.sh: Kafka's offset JSON file
// and its lines. Unlike Kafka's tool, which exits 0 whatever the brokers
// answered, qk exits 1 after the lines when a partition failed, so a script
// sees the failure.
func newDeleteRecordsCmd() *cobra.Command {
	var (
		conn     kafkaToolConn
		jsonFile string
	)
	cmd := &cobra.Command{
		Use:   "delete-records --bootstrap-server HOST:PORT --offset-json-file FILE",
		Short: "Delete the records of partitions below an offset (kafka-delete-records)",
		Long: `Delete the records of the given partitions below the given offsets, as
kafka-delete-records.sh does: each partition's log start offset (its low
watermark) moves up to the offset, and what lies below can no longer be read.
The file is Kafka's:

  {"partitions":[{"topic":"orders","partition":0,"offset":3}],"version":1}

An offset of -1 deletes up to the high watermark, that is everything. Each
partition is reported with its new low watermark, or its error as the Java
client names it:

  partition: orders-0	low_watermark: 3
  partition: orders-9	error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: ...

The exit status is 1 when any partition failed. The cluster is
--bootstrap-server (or qk's -b, $QK_BROKERS or --profile); --command-config
reads Kafka admin client properties (see reassign-partitions).`,
		Example: `  echo '{"partitions":[{"topic":"orders","partition":0,"offset":-1}],"version":1}' > del.json
  qk delete-records --bootstrap-server 127.0.0.1:9092 --offset-json-file del.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if jsonFile == "" {
				return errors.New(`Missing required argument "[offset-json-file]"`)
			}
			data, err := os.ReadFile(jsonFile)
			if err != nil {
				return fmt.Errorf("--offset-json-file: %w", err)
			}
			offsets, err := parseDeleteRecordsJSON(data)
			if err != nil {
				return fmt.Errorf("--offset-json-file %s: %w", jsonFile, err)
			}
			c, err := conn.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := c.Context(cmd.Context())
			defer cancel()
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, "Executing records delete operation")
			var req kadm.Offsets
			for _, o := range offsets {
				req.AddOffset(o.Topic, o.Partition, o.Offset, -1)
			}
			resp, reqErr := c.DeleteRecords(ctx, req)
			fmt.Fprintln(w, "Records delete operation completed:")
			failed := 0
			for _, o := range offsets {
				r, err := resp.On(o.Topic, o.Partition, nil)
				if err == nil {
					err = r.Err
				} else if reqErr != nil {
					// No answer for this partition: the request failed for
					// it as a whole (its leader unreachable, the topic
					// unknown to the client's metadata).
					err = shardErrFor(reqErr, o.Topic, o.Partition)
				}
				if err != nil {
					failed++
					fmt.Fprintf(w, "partition: %s-%d\terror: %s\n", o.Topic, o.Partition, javaExceptionText(err))
					continue
				}
				fmt.Fprintf(w, "partition: %s-%d\tlow_watermark: %d\n", o.Topic, o.Partition, r.LowWatermark)
			}
			if failed > 0 {
				return fmt.Errorf("delete records: %d of %d partitions failed", failed, len(offsets))
			}
			return nil
		},
	}
	conn.addFlags(cmd)
	cmd.Flags().StringVar(&jsonFile, "offset-json-file", "", `REQUIRED: The JSON file with offset per partition. The format to use is: {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version":1}`)
	_ = cmd.MarkFlagFilename("offset-json-file", "json")
	return cmd
}

// deleteRecordsOffset is one entry of the offset JSON file.
type deleteRecordsOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// parseDeleteRecordsJSON reads kafka-delete-records.sh's file with Kafka's
// checks and messages: version 1 (the default when absent), a partitions
// list, each entry with topic, partition and offset, no partition twice.
// The entries come back sorted by topic and partition.
func parseDeleteRecordsJSON(data []byte) ([]deleteRecordsOffset, error) {
	var doc struct {
		Version    *int               `json:"version"`
		Partitions *[]json.RawMessage `json:"partitions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("The input string is not a valid JSON: %w", err)
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, fmt.Errorf("Not supported version field value %d", *doc.Version)
	}
	if doc.Partitions == nil {
		return nil, errors.New("Missing partitions field")
	}
	var out []deleteRecordsOffset
	seen := map[string]int{}
	for i, raw := range *doc.Partitions {
		var e struct {
			Topic     *string `json:"topic"`
			Partition *int32  `json:"partition"`
			Offset    *int64  `json:"offset"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("partitions[%d]: %w", i, err)
		}
		for name, missing := range map[string]bool{"topic": e.Topic == nil, "partition": e.Partition == nil, "offset": e.Offset == nil} {
			if missing {
				return nil, fmt.Errorf("partitions[%d]: No such field exists: `%s`", i, name)
			}
		}
		tp := fmt.Sprintf("%s-%d", *e.Topic, *e.Partition)
		seen[tp]++
		if seen[tp] == 1 {
			out = append(out, deleteRecordsOffset{*e.Topic, *e.Partition, *e.Offset})
		}
	}
	var dups []string
	for tp, n := range seen {
		if n > 1 {
			dups = append(dups, tp)
		}
	}
	if len(dups) > 0 {
		slices.Sort(dups)
		return nil, fmt.Errorf("Offset json file contains duplicate topic partitions: %s", strings.Join(dups, ","))
	}
	slices.SortFunc(out, func(a, b deleteRecordsOffset) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// shardErrFor is the error of the failed request shard that held topic's
// partition, or err itself when no shard names it. kgo fails the
// partitions of a topic its metadata does not know (with
// UNKNOWN_TOPIC_OR_PARTITION) before sending anything.
func shardErrFor(err error, topic string, partition int32) error {
	var se *kadm.ShardErrors
	if errors.As(err, &se) {
		for _, e := range se.Errs {
			req, ok := e.Req.(*kmsg.DeleteRecordsRequest)
			if !ok || e.Err == nil {
				continue
			}
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					if t.Topic == topic && p.Partition == partition {
						return e.Err
					}
				}
			}
		}
	}
	return err
}
