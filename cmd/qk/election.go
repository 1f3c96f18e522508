package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/qk-project/qk/admin"
)

func init() { subcommands = append(subcommands, newLeaderElectionCmd) }

// newLeaderElectionCmd is kafka-leader-election.sh: --election-type,
// --topic/--partition, --all-topic-partitions or --path-to-json-file.
func newLeaderElectionCmd() *cobra.Command {
	p := &adminParams{}
	var (
		typ       string
		topic     string
		partition int32
		all       bool
		jsonFile  string
	)
	cmd := &cobra.Command{
		Use:   "leader-election",
		Short: "Elect partition leaders: the preferred replica, or any live replica (unclean)",
		Long: `Elect partition leaders, as kafka-leader-election.sh: --election-type preferred moves
leadership to each partition's preferred replica (its first) when it is live and in sync;
unclean elects any live replica for a partition without a leader, which may lose
acknowledged records. Name the partitions with --topic and --partition, a JSON file in
Kafka's shape ({"partitions":[{"topic":"t","partition":0}]}) with --path-to-json-file,
or every partition with --all-topic-partitions.`,
		Example: `  qk leader-election --election-type preferred --all-topic-partitions
  qk leader-election --election-type unclean --topic orders --partition 3
  qk leader-election --election-type preferred --path-to-json-file partitions.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var unclean bool
			switch typ {
			case "preferred", "PREFERRED":
			case "unclean", "UNCLEAN":
				unclean = true
			default:
				return fmt.Errorf("--election-type %q: want preferred or unclean", typ)
			}
			set, err := electionSet(cmd, topic, partition, all, jsonFile)
			if err != nil {
				return err
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				return c.ElectLeaders(ctx, unclean, set)
			})
		},
	}
	p.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&typ, "election-type", "", "preferred or unclean (required)")
	f.StringVar(&topic, "topic", "", "the topic of the partition to elect (with --partition)")
	f.Int32Var(&partition, "partition", -1, "the partition to elect (with --topic)")
	f.BoolVar(&all, "all-topic-partitions", false, "elect every partition")
	f.StringVar(&jsonFile, "path-to-json-file", "", `a JSON file of partitions: {"partitions":[{"topic":"t","partition":0}]}`)
	_ = cmd.MarkFlagRequired("election-type")
	return cmd
}

// electionSet is the partitions named by the flags (nil: all), exactly
// one way, as Kafka's command requires.
func electionSet(cmd *cobra.Command, topic string, partition int32, all bool, jsonFile string) (kadm.TopicsSet, error) {
	ways := 0
	for _, set := range []bool{topic != "" || cmd.Flags().Changed("partition"), all, jsonFile != ""} {
		if set {
			ways++
		}
	}
	if ways != 1 {
		return nil, errors.New("name the partitions one way: --topic and --partition, --all-topic-partitions, or --path-to-json-file")
	}
	switch {
	case all:
		return nil, nil
	case jsonFile != "":
		data, err := os.ReadFile(jsonFile)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Partitions []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", jsonFile, err)
		}
		if len(doc.Partitions) == 0 {
			return nil, fmt.Errorf("%s: no partitions", jsonFile)
		}
		set := kadm.TopicsSet{}
		for _, p := range doc.Partitions {
			set.Add(p.Topic, p.Partition)
		}
		return set, nil
	}
	if topic == "" || partition < 0 {
		return nil, errors.New("--topic and --partition go together")
	}
	set := kadm.TopicsSet{}
	set.Add(topic, partition)
	return set, nil
}
