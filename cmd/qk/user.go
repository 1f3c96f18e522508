package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qk-project/qk/admin"
)

func init() { subcommands = append(subcommands, newUserCmd) }

// newUserCmd is kafka-configs.sh --entity-type users for SCRAM
// credentials: describe and alter through DescribeUserScramCredentials
// and AlterUserScramCredentials, so it works against Kafka as well.
func newUserCmd() *cobra.Command {
	p := &adminParams{}
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Describe and alter users' SCRAM credentials (kafka-configs.sh --entity-type users)",
	}
	p.addFlags(cmd)
	cmd.AddCommand(newUserDescribeCmd(p), newUserAlterCmd(p))
	return cmd
}

func newUserDescribeCmd(p *adminParams) *cobra.Command {
	var users []string
	cmd := &cobra.Command{
		Use:   "describe [--entity-name USER]...",
		Short: "Show users' SCRAM mechanisms and iterations (every user without --entity-name)",
		Long: `Show users' SCRAM credentials as kafka-configs.sh --describe --entity-type users prints
them: the mechanisms and iteration counts, never a secret. A named user without credentials
gets an error line, and the command then exits non-zero.`,
		Example: `  qk user describe
  qk user describe --entity-name alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				return c.DescribeUserScrams(ctx, users...)
			})
		},
	}
	cmd.Flags().StringArrayVar(&users, "entity-name", nil, "a user to describe (repeatable)")
	return cmd
}

func newUserAlterCmd(p *adminParams) *cobra.Command {
	var (
		user string
		add  string
		del  []string
	)
	cmd := &cobra.Command{
		Use:   "alter --entity-name USER [--add-config 'MECHANISM=[iterations=N,password=P]'] [--delete-config MECHANISM]",
		Short: "Add, replace or delete a user's SCRAM credentials",
		Long: `Add, replace or delete a user's SCRAM credentials, as kafka-configs.sh --alter --entity-type
users: --add-config takes comma-separated SCRAM-SHA-256=[iterations=N,password=P] and
SCRAM-SHA-512=[...] entries (iterations 4096 unless given, between 4096 and 16384); the
password is salted here and only the salt and salted password are sent (KIP-554).
--delete-config takes mechanism names. The request goes to the controller.`,
		Example: `  qk user alter --entity-name alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
  qk user alter --entity-name alice --add-config 'SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=a]'
  qk user alter --entity-name alice --delete-config SCRAM-SHA-256`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			upserts, err := admin.ParseScramConfigs(add)
			if err != nil {
				return err
			}
			var deletes []string
			for _, d := range del {
				for m := range strings.SplitSeq(d, ",") {
					if m = strings.TrimSpace(m); m != "" {
						deletes = append(deletes, m)
					}
				}
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				return c.AlterUserScrams(ctx, user, upserts, deletes)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&user, "entity-name", "", "the user (required)")
	f.StringVar(&add, "add-config", "", "SCRAM credentials to add or replace: MECHANISM=[iterations=N,password=P],...")
	f.StringArrayVar(&del, "delete-config", nil, "SCRAM mechanisms to delete (comma-separated or repeated)")
	_ = cmd.MarkFlagRequired("entity-name")
	_ = cmd.RegisterFlagCompletionFunc("delete-config", cobra.FixedCompletions([]string{"SCRAM-SHA-256", "SCRAM-SHA-512"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
