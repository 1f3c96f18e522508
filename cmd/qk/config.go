package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/qk-project/qk/admin"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newConfigCmd) }

func newConfigCmd() *cobra.Command {
	p := &adminParams{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Describe and alter topic and broker configs and client quotas",
	}
	p.addFlags(cmd)
	cmd.AddCommand(newConfigDescribeCmd(p), newConfigAlterCmd(p))
	return cmd
}

// resourceFlags are --topic T | --broker ID | kafka-configs.sh's
// --entity-type users|clients with --entity-name or --entity-default.
type resourceFlags struct {
	topic  string
	broker int32
	entity entityFlags
}

func (r *resourceFlags) add(cmd *cobra.Command, p *adminParams) {
	cmd.Flags().StringVar(&r.topic, "topic", "", "the topic")
	_ = cmd.RegisterFlagCompletionFunc("topic", p.completeTopics)
	cmd.Flags().Int32Var(&r.broker, "broker", -1, "the broker id")
	r.entity.add(cmd)
	cmd.MarkFlagsOneRequired("topic", "broker", "entity-type")
	cmd.MarkFlagsMutuallyExclusive("topic", "broker", "entity-type")
}

func (r *resourceFlags) resource() admin.Resource {
	return admin.Resource{Topic: r.topic, Broker: r.broker}
}

// entityFlags are --entity-type (repeatable) and the --entity-name and
// --entity-default flags, kept in command-line order so that the Nth name
// or default goes with the Nth type, as kafka-configs.sh pairs them.
type entityFlags struct {
	types []string
	names []entityName
}

type entityName struct {
	name string
	def  bool
}

// entityNameValue is the pflag.Value of --entity-name (def false) and
// --entity-default (def true): both append to one list.
type entityNameValue struct {
	f   *entityFlags
	def bool
}

func (v entityNameValue) String() string { return "" }
func (v entityNameValue) Type() string {
	if v.def {
		return "bool"
	}
	return "string"
}

func (v entityNameValue) Set(s string) error {
	if v.def {
		if s != "true" {
			return fmt.Errorf("--entity-default takes no value")
		}
		s = ""
	}
	v.f.names = append(v.f.names, entityName{name: s, def: v.def})
	return nil
}

func (e *entityFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&e.types, "entity-type", nil, "client quota entity type: users or clients (repeat for both)")
	_ = cmd.RegisterFlagCompletionFunc("entity-type", cobra.FixedCompletions([]string{"users", "clients"}, cobra.ShellCompDirectiveNoFileComp))
	f.Var(entityNameValue{f: e}, "entity-name", "the user or client id of the --entity-type in the same position")
	d := f.VarPF(entityNameValue{f: e, def: true}, "entity-default", "", "the default user or client id, for the --entity-type in the same position")
	d.NoOptDefVal = "true"
}

// parts pairs the types with the names; a type without a name is every
// entity of the type.
func (e *entityFlags) parts() ([]admin.QuotaPart, error) {
	if len(e.names) > len(e.types) {
		return nil, errors.New("more entity names specified than entity types")
	}
	var out []admin.QuotaPart
	for i, t := range e.types {
		p := admin.QuotaPart{Type: t, All: true}
		if i < len(e.names) {
			p.All, p.Name, p.Default = false, e.names[i].name, e.names[i].def
			if !p.Default && p.Name == "" {
				return nil, fmt.Errorf("--entity-name for %s: empty name (use --entity-default)", t)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func newConfigDescribeCmd(p *adminParams) *cobra.Command {
	var (
		rf  resourceFlags
		all bool
	)
	cmd := &cobra.Command{
		Use:   "describe --topic T | --broker ID | --entity-type users|clients [--entity-name N | --entity-default]...",
		Short: "Show the configs set on a topic or broker (--all: defaults too), or client quotas",
		Long: `Show the configs set on a topic or broker (--all: defaults too), or, with --entity-type,
client quotas as kafka-configs.sh --describe prints them. --entity-type users and clients
may be given together for a user's client ids; each takes the --entity-name or
--entity-default in the same position, and without one every entity of the type.`,
		Example: `  qk config describe --topic orders
  qk config describe --entity-type users --entity-name alice
  qk config describe --entity-type users --entity-name alice --entity-type clients
  qk config describe --entity-type clients --entity-default`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(rf.entity.types) > 0 {
				parts, err := rf.entity.parts()
				if err != nil {
					return err
				}
				return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
					return c.DescribeQuotas(ctx, parts)
				})
			}
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
		add    string
		delCfg []string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "alter --topic T | --broker ID | --entity-type users|clients (--entity-name N | --entity-default)... --set k=v --delete k",
		Short: "Set and remove configs of a topic or broker (IncrementalAlterConfigs), or client quotas",
		Long: `Set and remove configs of a topic or broker (IncrementalAlterConfigs), or, with
--entity-type, client quotas (AlterClientQuotas): producer_byte_rate, consumer_byte_rate,
request_percentage, controller_mutation_rate. --add-config k1=v1,k2=v2 and
--delete-config k1,k2 are kafka-configs.sh's forms of --set and --delete.`,
		Example: `  qk config alter --topic orders --set retention.ms=3600000 --delete cleanup.policy
  qk config alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  qk config alter --entity-type users --entity-name alice --entity-type clients --entity-name app --delete-config consumer_byte_rate
  qk config alter --entity-type clients --entity-default --add-config request_percentage=50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := keyValues("set", set)
			if err != nil {
				return err
			}
			if add != "" {
				more, err := admin.ParseConfigList(add)
				if err != nil {
					return err
				}
				maps.Copy(kv, more)
			}
			for _, d := range delCfg {
				for k := range strings.SplitSeq(d, ",") {
					if k = strings.TrimSpace(k); k != "" {
						del = append(del, k)
					}
				}
			}
			if len(kv)+len(del) == 0 {
				return errors.New("nothing to alter: give --set, --add-config, --delete or --delete-config")
			}
			if len(rf.entity.types) > 0 {
				parts, err := rf.entity.parts()
				if err != nil {
					return err
				}
				if err := admin.CheckQuotaParts(parts, true); err != nil {
					return err
				}
				return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
					return c.AlterQuotas(ctx, parts, kv, del, dryRun)
				})
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
	cmd.Flags().StringVar(&add, "add-config", "", "configs to set, kafka-configs.sh style: k1=v1,k2=[v2,v3]")
	cmd.Flags().StringArrayVar(&delCfg, "delete-config", nil, "configs to remove, comma-separated (repeatable)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate only; change nothing")
	return cmd
}
