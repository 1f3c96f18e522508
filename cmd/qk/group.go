package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qk-project/qk/admin"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newGroupCmd) }

func newGroupCmd() *cobra.Command {
	p := &adminParams{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, reset the offsets of and delete consumer groups",
	}
	p.addFlags(cmd)
	cmd.AddCommand(newGroupListCmd(p), newGroupDescribeCmd(p), newGroupResetOffsetsCmd(p), newGroupDeleteCmd(p))
	return cmd
}

// completeGroups completes group names from the cluster.
func (p *adminParams) completeGroups(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return p.completeNames(args, toComplete, func(ctx context.Context, c *admin.Client) ([]string, error) {
		l, err := c.ListGroups(ctx)
		names := make([]string, len(l))
		for i, g := range l {
			names[i] = g.Name
		}
		return names, err
	})
}

func newGroupListCmd(p *adminParams) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer groups",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				l, err := c.ListGroups(ctx, states...)
				if err != nil {
					return nil, err
				}
				return l, nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only groups in these states (Empty, Stable, PreparingRebalance, CompletingRebalance, Dead)")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(
		[]string{"Empty", "Stable", "PreparingRebalance", "CompletingRebalance", "Dead"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newGroupDescribeCmd(p *adminParams) *cobra.Command {
	return &cobra.Command{
		Use:               "describe GROUP...",
		ValidArgsFunction: p.completeGroups,
		Short:             "Describe groups: state, protocol, members and per-partition committed offset, log end offset and lag",
		Args:              cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				d, err := c.DescribeGroups(ctx, args...)
				return d, err
			})
		},
	}
}

func newGroupDeleteCmd(p *adminParams) *cobra.Command {
	return &cobra.Command{
		Use:               "delete GROUP...",
		ValidArgsFunction: p.completeGroups,
		Short:             "Delete groups and their committed offsets (the groups must have no members)",
		Args:              cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				r, err := c.DeleteGroups(ctx, args...)
				return r, err
			})
		},
	}
}

func newGroupResetOffsetsCmd(p *adminParams) *cobra.Command {
	var (
		topics   []string
		earliest bool
		latest   bool
		toOffset int64
		datetime string
		shiftBy  int64
		execute  bool
	)
	cmd := &cobra.Command{
		Use: "reset-offsets GROUP",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return p.completeGroups(cmd, args, s)
		},
		Short: "Plan, and with --execute commit, new offsets for a group (which must have no members)",
		Example: `  qk group reset-offsets billing --topic orders --to-earliest
  qk group reset-offsets billing --topic orders:0,1 --shift-by -100 --execute
  qk group reset-offsets billing --topic orders --to-datetime 2024-05-01T00:00:00Z --execute`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var to admin.ResetTo
			n := 0
			f := cmd.Flags()
			if earliest {
				to.Earliest, n = true, n+1
			}
			if latest {
				to.Latest, n = true, n+1
			}
			if f.Changed("to-offset") {
				to.Offset, n = &toOffset, n+1
			}
			if f.Changed("to-datetime") {
				t, err := time.Parse(time.RFC3339, datetime)
				if err != nil {
					if t, err = time.Parse("2006-01-02T15:04:05", datetime); err != nil {
						return fmt.Errorf("--to-datetime %q: want ISO 8601, e.g. 2024-05-01T00:00:00Z", datetime)
					}
				}
				to.Datetime, n = &t, n+1
			}
			if f.Changed("shift-by") {
				to.ShiftBy, n = &shiftBy, n+1
			}
			if n != 1 {
				return errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
			}
			if len(topics) == 0 {
				return errors.New("give --topic TOPIC[:p,p] (repeatable)")
			}
			tps := map[string][]int32{}
			for _, s := range topics {
				t, ps, err := admin.ParseTopicPartitions(s)
				if err != nil {
					return err
				}
				if ps == nil {
					tps[t] = nil
				} else if old, ok := tps[t]; !ok || old != nil {
					tps[t] = append(old, ps...)
				}
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				plan, err := c.ResetOffsets(ctx, args[0], tps, to, execute)
				if err != nil {
					return nil, err
				}
				return plan, nil
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&topics, "topic", nil, "topic to reset, TOPIC or TOPIC:p,p (repeatable)")
	f.BoolVar(&earliest, "to-earliest", false, "reset to the log start offset")
	f.BoolVar(&latest, "to-latest", false, "reset to the log end offset")
	f.Int64Var(&toOffset, "to-offset", 0, "reset to this offset (clamped to the log)")
	f.StringVar(&datetime, "to-datetime", "", "reset to the first offset at or after this ISO 8601 time")
	f.Int64Var(&shiftBy, "shift-by", 0, "move the committed offsets by N (negative: back)")
	f.BoolVar(&execute, "execute", false, "commit the plan (default: show it and change nothing)")
	_ = cmd.RegisterFlagCompletionFunc("topic", p.completeTopics)
	return cmd
}
