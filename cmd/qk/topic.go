package main

import (
	"context"
	"errors"

	"github.com/qk-project/qk/admin"
	"github.com/spf13/cobra"
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
		ct      admin.CreateTopic
		configs []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME...",
		Short: "Create topics",
		Example: `  qk topic create orders -p 6 -r 3 -c cleanup.policy=compact
  qk topic create orders --dry-run`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
				r, err := c.CreateTopics(ctx, ct, args...)
				return r, err
			})
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&ct.Partitions, "partitions", "p", -1, "number of partitions (-1: the broker's num.partitions)")
	f.Int16VarP(&ct.Replicas, "replicas", "r", -1, "replication factor (-1: the broker's default.replication.factor)")
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
