package main

import (
	"context"

	"github.com/qk-project/qk/admin"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newClusterCmd) }

func newClusterCmd() *cobra.Command {
	p := &adminParams{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect the cluster",
	}
	p.addFlags(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Show the cluster id, the controller and the brokers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				ci, err := c.ClusterInfo(ctx)
				if err != nil {
					return nil, err
				}
				return ci, nil
			})
		},
	})
	return cmd
}
