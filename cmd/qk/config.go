package main

import (
	"context"
	"errors"

	"github.com/qk-project/qk/admin"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newConfigCmd) }

func newConfigCmd() *cobra.Command {
	p := &adminParams{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Describe and alter topic and broker configs",
	}
	p.addFlags(cmd)
	cmd.AddCommand(newConfigDescribeCmd(p), newConfigAlterCmd(p))
	return cmd
}

// resourceFlags are --topic T | --broker ID.
type resourceFlags struct {
	topic  string
	broker int32
}

func (r *resourceFlags) add(cmd *cobra.Command, p *adminParams) {
	cmd.Flags().StringVar(&r.topic, "topic", "", "the topic")
	_ = cmd.RegisterFlagCompletionFunc("topic", p.completeTopics)
	cmd.Flags().Int32Var(&r.broker, "broker", -1, "the broker id")
	cmd.MarkFlagsOneRequired("topic", "broker")
	cmd.MarkFlagsMutuallyExclusive("topic", "broker")
}

func (r *resourceFlags) resource() admin.Resource {
	return admin.Resource{Topic: r.topic, Broker: r.broker}
}

func newConfigDescribeCmd(p *adminParams) *cobra.Command {
	var (
		rf  resourceFlags
		all bool
	)
	cmd := &cobra.Command{
		Use:   "describe --topic T | --broker ID",
		Short: "Show the configs set on a topic or broker (--all: defaults too)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				l, err := c.DescribeConfigs(ctx, rf.resource(), all)
				if err != nil {
					return nil, err
				}
				return l, nil
			})
		},
	}
	rf.add(cmd, p)
	cmd.Flags().BoolVar(&all, "all", false, "include defaults and static settings")
	return cmd
}

func newConfigAlterCmd(p *adminParams) *cobra.Command {
	var (
		rf     resourceFlags
		set    []string
		del    []string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:     "alter --topic T | --broker ID --set k=v --delete k",
		Short:   "Set and remove configs of a topic or broker (IncrementalAlterConfigs)",
		Example: `  qk config alter --topic orders --set retention.ms=3600000 --delete cleanup.policy`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := keyValues("set", set)
			if err != nil {
				return err
			}
			if len(kv)+len(del) == 0 {
				return errors.New("nothing to alter: give --set or --delete")
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				r, err := c.AlterConfigs(ctx, rf.resource(), kv, del, dryRun)
				if err != nil {
					return nil, err
				}
				return r, nil
			})
		},
	}
	rf.add(cmd, p)
	cmd.Flags().StringArrayVar(&set, "set", nil, "set a config key=value (repeatable)")
	cmd.Flags().StringArrayVar(&del, "delete", nil, "remove a config override (repeatable)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate only; change nothing")
	return cmd
}
