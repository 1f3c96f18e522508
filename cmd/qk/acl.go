package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qk-project/qk/admin"
)

func init() { subcommands = append(subcommands, newACLCmd) }

// newACLCmd is kafka-acls.sh: --add, --remove or --list ACLs through
// CreateAcls, DeleteAcls and DescribeAcls, so it works against Kafka as
// well.
func newACLCmd() *cobra.Command {
	p := &adminParams{}
	var (
		o                admin.ACLOptions
		add, remove, lst bool
		force            bool
	)
	cmd := &cobra.Command{
		Use:   "acl --add|--remove|--list [resource] [principals, hosts, operations]",
		Short: "Add, remove and list ACLs (kafka-acls.sh)",
		Long: `Add, remove and list ACLs with kafka-acls.sh's options and output. A resource is
--topic, --group, --transactional-id, --delegation-token (repeatable) or --cluster, with
--resource-pattern-type literal (default), prefixed, or for --list and --remove also any
or match. --allow-principal / --deny-principal (User:alice, User:*) with --allow-host /
--deny-host (default *) and --operation (repeatable, default All) make the ACLs;
--producer (Write, Describe, Create on topics; Write, Describe on transactional ids;
IdempotentWrite on the cluster with --idempotent) and --consumer (Read, Describe on
topics, Read on groups) are kafka-acls.sh's conveniences. --remove asks for confirmation
on stdin unless --force is given.`,
		Example: `  qk acl --add --allow-principal User:alice --operation Read --topic orders
  qk acl --add --allow-principal User:app --producer --topic orders --idempotent
  qk acl --add --deny-principal User:bob --deny-host 10.0.0.1 --operation Write --topic pay --resource-pattern-type prefixed
  qk acl --list --topic orders --resource-pattern-type match
  qk acl --remove --force --topic orders`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{add, remove, lst} {
				if b {
					n++
				}
			}
			if n != 1 {
				return errors.New("Command must include exactly one action: --list, --add, --remove.")
			}
			if (o.Producer || o.Consumer) && (len(o.Operations) > 0 || len(o.DenyPrincipals) > 0 || len(o.DenyHosts) > 0) {
				return errors.New("--producer and --consumer take no --operation, --deny-principal or --deny-host")
			}
			if o.Producer && len(o.Topics) == 0 && len(o.TransactionalIDs) == 0 {
				return errors.New("With --producer you must specify a --topic")
			}
			if o.Consumer && (len(o.Topics) == 0 || len(o.Groups) == 0 || (!o.Producer && o.Cluster)) {
				return errors.New("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.")
			}
			switch {
			case add:
				return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) { return c.AddACLs(ctx, o) })
			case lst:
				if o.Producer || o.Consumer || len(o.AllowPrincipals)+len(o.DenyPrincipals)+len(o.AllowHosts)+len(o.DenyHosts) > 0 {
					return errors.New("--list takes no --producer, --consumer, principals or hosts")
				}
				return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) { return c.ListACLs(ctx, o) })
			}
			filters, err := o.RemoveFilters()
			if err != nil {
				return err
			}
			if !force {
				in := bufio.NewReader(cmd.InOrStdin())
				var confirmed []admin.RemoveFilter
				for _, f := range filters {
					fmt.Fprintln(cmd.OutOrStdout(), f.Prompt())
					line, _ := in.ReadString('\n')
					if strings.EqualFold(strings.TrimSpace(line), "y") {
						confirmed = append(confirmed, f)
					}
				}
				filters = confirmed
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) { return c.RemoveACLs(ctx, filters) })
		},
	}
	p.addFlags(cmd)
	f := cmd.Flags()
	f.BoolVar(&add, "add", false, "add ACLs")
	f.BoolVar(&remove, "remove", false, "remove ACLs")
	f.BoolVar(&lst, "list", false, "list ACLs (of the given resources, or all)")
	f.StringArrayVar(&o.AllowPrincipals, "allow-principal", nil, "principal (type:name, User:* for all users) to allow (repeatable)")
	f.StringArrayVar(&o.DenyPrincipals, "deny-principal", nil, "principal to deny (repeatable); deny rules take precedence over allow rules")
	f.StringArrayVar(&o.AllowHosts, "allow-host", nil, "host (IP) the allowed principals may come from (default *)")
	f.StringArrayVar(&o.DenyHosts, "deny-host", nil, "host (IP) the denied principals are denied from (default *)")
	f.StringArrayVar(&o.Operations, "operation", nil, "operation to allow or deny (repeatable, default All): Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All")
	f.StringArrayVar(&o.Topics, "topic", nil, "topic (repeatable; * is every topic)")
	f.StringArrayVar(&o.Groups, "group", nil, "consumer group (repeatable; * is every group)")
	f.StringArrayVar(&o.TransactionalIDs, "transactional-id", nil, "transactional id (repeatable)")
	f.StringArrayVar(&o.DelegationTokens, "delegation-token", nil, "delegation token (repeatable)")
	f.BoolVar(&o.Cluster, "cluster", false, "the cluster resource")
	f.StringVar(&o.PatternType, "resource-pattern-type", "literal", "literal, prefixed, or for --list and --remove any or match")
	f.BoolVar(&o.Producer, "producer", false, "ACLs for a producer: Write, Describe, Create on topics")
	f.BoolVar(&o.Consumer, "consumer", false, "ACLs for a consumer: Read, Describe on topics, Read on groups")
	f.BoolVar(&o.Idempotent, "idempotent", false, "with --producer: IdempotentWrite on the cluster")
	f.BoolVar(&force, "force", false, "remove without asking")
	_ = cmd.RegisterFlagCompletionFunc("resource-pattern-type", cobra.FixedCompletions([]string{"literal", "prefixed", "any", "match"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
