package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qk-project/qk/admin"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { subcommands = append(subcommands, newTopicCmd) }

func newTopicCmd() *cobra.Command {
	p := &adminParams{}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter and delete topics",
	}
	p.addFlags(cmd)
	cmd.AddCommand(newTopicCreateCmd(p), newTopicListCmd(p), newTopicDescribeCmd(p),
		newTopicDeleteCmd(p), newTopicAlterCmd(p))
	return cmd
}

func newTopicCreateCmd(p *adminParams) *cobra.Command {
	var (
		ct                admin.CreateTopic
		configs           []string
		replicaAssignment string
	)
	cmd := &cobra.Command{
		Use:   "create NAME...",
		Short: "Create topics",
		Long: `Create topics, with a partition count and replication factor (the broker's
defaults when not given) or, as kafka-topics.sh --replica-assignment, the
replicas of each partition: "1:2:3,2:3:1" gives partition 0 the brokers 1, 2
and 3 (1 the preferred leader) and partition 1 the brokers 2, 3 and 1. Every
list has the same length and no broker twice; the assignment sets both the
partition count and the replication factor, so it goes without
--partitions and --replication-factor.`,
		Example: `  qk topic create orders -p 6 -r 3 -c cleanup.policy=compact
  qk topic create orders --replica-assignment 1:2:3,2:3:1,3:1:2
  qk topic create orders --dry-run`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var assignment [][]int32
			if cmd.Flags().Changed("replica-assignment") {
				for _, other := range []string{"partitions", "replication-factor", "replicas"} {
					if cmd.Flags().Changed(other) {
						//lint:ignore ST1005 Kafka's message, verbatim, which scripts match
						return fmt.Errorf(`Option "[replica-assignment]" can't be used with option "[%s]"`, other)
					}
				}
				var err error
				if assignment, err = parseReplicaAssignment(replicaAssignment); err != nil {
					return err
				}
			}
			kv, err := keyValues("config", configs)
			if err != nil {
				return err
			}
			if len(kv) > 0 {
				ct.Configs = make(map[string]*string, len(kv))
				for k, v := range kv {
					ct.Configs[k] = &v
				}
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				if assignment != nil {
					return createAssignedTopics(ctx, c, p.conn.Timeout, ct, assignment, args)
				}
				r, err := c.CreateTopics(ctx, ct, args...)
				return r, err
			})
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&ct.Partitions, "partitions", "p", -1, "number of partitions (-1: the broker's num.partitions)")
	f.Int16VarP(&ct.Replicas, "replicas", "r", -1, "replication factor (-1: the broker's default.replication.factor)")
	f.Int16Var(&ct.Replicas, "replication-factor", -1, "kafka-topics.sh's name for -r")
	f.StringVar(&replicaAssignment, "replica-assignment", "", `the replicas of each partition, "1:2:3,2:3:1" (partition 0 on brokers 1, 2, 3; partition 1 on 2, 3, 1); instead of --partitions and --replication-factor`)
	f.StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable)")
	f.BoolVar(&ct.IfNotExists, "if-not-exists", false, "succeed if the topic already exists")
	f.BoolVar(&ct.DryRun, "dry-run", false, "validate only (CreateTopics validate_only); create nothing")
	return cmd
}

func newTopicListCmd(p *adminParams) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				l, err := c.ListTopics(ctx, internal)
				if err != nil {
					return nil, err
				}
				return l, nil
			})
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics (__consumer_offsets)")
	return cmd
}

func newTopicDescribeCmd(p *adminParams) *cobra.Command {
	var f admin.DescribeFilter
	cmd := &cobra.Command{
		Use:               "describe [NAME...]",
		ValidArgsFunction: p.completeTopics,
		Short:             "Describe topics: configs with their source and partitions with leaders, ISR and offsets",
		Long: `Describe topics: their configs with the source of each value, and per partition
its leader, leader epoch, replicas, ISR, offline replicas and offsets.

The health filters are kafka-topics.sh --describe's. With one or more of
--under-replicated-partitions, --under-min-isr-partitions, --at-min-isr-partitions
and --unavailable-partitions only the partitions matching any of them are shown:
in text one table of partitions with their topic (no topic summary, as Kafka
prints only the partition lines), and nothing when none match; in json and yaml
the topics with only those partitions, leaving out topics with none.
min.insync.replicas is each topic's effective value from DescribeConfigs; live
brokers are those in Metadata.

Without names every topic is described, as kafka-topics.sh --describe
without --topic.`,
		Example: `  qk topic describe orders payments
  qk topic describe --under-replicated-partitions
  qk topic describe --unavailable-partitions --under-min-isr-partitions --exclude-internal
  qk topic describe orders --at-min-isr-partitions --format json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				d, err := c.DescribeTopics(ctx, f, args...)
				if err != nil {
					return nil, err
				}
				if f.Partitions() {
					return admin.PartitionList(d), nil
				}
				return d, nil
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.UnderReplicated, "under-replicated-partitions", false, "only partitions whose ISR is smaller than their replica set")
	fl.BoolVar(&f.UnderMinISR, "under-min-isr-partitions", false, "only partitions without a leader or whose ISR is smaller than min.insync.replicas")
	fl.BoolVar(&f.AtMinISR, "at-min-isr-partitions", false, "only partitions whose ISR size equals min.insync.replicas")
	fl.BoolVar(&f.Unavailable, "unavailable-partitions", false, "only partitions without a leader or whose leader is not a live broker")
	fl.BoolVar(&f.ExcludeInternal, "exclude-internal", false, "leave out internal topics (__consumer_offsets, __transaction_state)")
	return cmd
}

func newTopicDeleteCmd(p *adminParams) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:               "delete NAME...",
		ValidArgsFunction: p.completeTopics,
		Short:             "Delete topics (needs --yes)",
		Args:              cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return errors.New("topic delete removes the topics and their data: pass --yes to confirm")
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				r, err := c.DeleteTopics(ctx, args...)
				return r, err
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the deletion")
	return cmd
}

func newTopicAlterCmd(p *adminParams) *cobra.Command {
	var (
		at  admin.AlterTopic
		set []string
	)
	cmd := &cobra.Command{
		Use: "alter NAME",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return p.completeTopics(cmd, args, s)
		},
		Short:   "Add partitions to a topic and change its configs",
		Example: `  qk topic alter orders --partitions 12 --set retention.ms=86400000 --delete cleanup.policy`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := keyValues("set", set)
			if err != nil {
				return err
			}
			at.Set = kv
			if at.Partitions == 0 && len(at.Set)+len(at.Delete) == 0 {
				return errors.New("nothing to alter: give --partitions, --set or --delete")
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				r, err := c.AlterTopic(ctx, args[0], at)
				return r, err
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&at.Partitions, "partitions", 0, "grow the topic to this many partitions")
	f.StringArrayVar(&set, "set", nil, "set a topic config key=value (repeatable)")
	f.StringArrayVar(&at.Delete, "delete", nil, "remove a topic config override (repeatable)")
	f.BoolVar(&at.DryRun, "dry-run", false, "validate only; change nothing")
	return cmd
}

// parseReplicaAssignment reads kafka-topics.sh's --replica-assignment:
// comma-separated partitions, each a colon-separated broker list, with
// Kafka's messages for a broker listed twice and for lists of different
// lengths.
func parseReplicaAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(s, ",") {
		var brokers []int32
		var dups []string
		for _, b := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--replica-assignment %q: partition %d: %q is not a broker id", s, i, b)
			}
			if slices.Contains(brokers, int32(n)) && !slices.Contains(dups, strconv.Itoa(int(n))) {
				dups = append(dups, strconv.Itoa(int(n)))
			}
			brokers = append(brokers, int32(n))
		}
		if len(dups) > 0 {
			//lint:ignore ST1005 Kafka's message
			return nil, fmt.Errorf("Partition replica lists may not contain duplicate entries: %s", strings.Join(dups, ","))
		}
		if len(out) > 0 && len(brokers) != len(out[0]) {
			ids := make([]string, len(brokers))
			for j, b := range brokers {
				ids[j] = strconv.Itoa(int(b))
			}
			//lint:ignore ST1005 Kafka's message
			return nil, fmt.Errorf("Partition %d has different replication factor: [%s]", i, strings.Join(ids, ", "))
		}
		out = append(out, brokers)
	}
	return out, nil
}

// createAssignedTopics creates topics with an explicit replica assignment
// (CreateTopics with assignments, partition count and replication factor
// -1), reporting as CreateTopics without one does: created, validated
// (--dry-run) or exists (--if-not-exists), and "create topic NAME: CODE:
// message" for the first failure, after the results of the others.
func createAssignedTopics(ctx context.Context, c *admin.Client, timeout time.Duration, ct admin.CreateTopic, assignment [][]int32, topics []string) (admin.TopicResults, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = admin.TimeoutMillis(timeout)
	req.ValidateOnly = ct.DryRun
	for _, name := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for i, replicas := range assignment {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(i), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		for k, v := range ct.Configs {
			rc := kmsg.NewCreateTopicsRequestTopicConfig()
			rc.Name, rc.Value = k, v
			rt.Configs = append(rt.Configs, rc)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, c.Kgo())
	if err != nil {
		return nil, fmt.Errorf("create topics: %w", err)
	}
	answers := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, t := range resp.Topics {
		answers[t.Topic] = t
	}
	status := "created"
	if ct.DryRun {
		status = "validated"
	}
	var out admin.TopicResults
	var first error
	for _, name := range topics {
		t, ok := answers[name]
		var err error
		switch {
		case !ok:
			err = errors.New("no answer")
		case t.ErrorCode == kerr.TopicAlreadyExists.Code && ct.IfNotExists:
			out = append(out, admin.TopicResult{Name: name, Status: "exists"})
			continue
		case t.ErrorCode != 0:
			// As admin's create: CODE: the broker's message, if it says more.
			err = kerr.ErrorForCode(t.ErrorCode)
			msg := strings.TrimPrefix(deref(t.ErrorMessage), err.Error()+": ")
			if ke := kerr.TypedErrorForCode(t.ErrorCode); ke != nil && msg != "" && msg != err.Error() {
				err = fmt.Errorf("%s: %s", ke.Message, msg)
			}
		}
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("create topic %s: %w", name, err))
			continue
		}
		out = append(out, admin.TopicResult{Name: name, Status: status})
	}
	return out, first
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
