package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/qk-project/qk/admin"
	"github.com/spf13/cobra"
)

// adminParams are the connection and output flags shared by the admin
// commands (topic, config, cluster), bound once on each group command.
type adminParams struct {
	conn   admin.Options
	format string
}

func (p *adminParams) addFlags(cmd *cobra.Command) {
	p.conn.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&p.format, "format", "text", "output format: text, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(admin.Formats, cobra.ShellCompDirectiveNoFileComp))
}

// run dials the cluster, runs fn with a context bounded by --timeout and
// prints the view it returns, if any.
func (p *adminParams) run(cmd *cobra.Command, fn func(ctx context.Context, c *admin.Client) (admin.View, error)) error {
	switch p.format {
	case "text", "json", "yaml":
	default:
		return fmt.Errorf("--format %q: want text, json or yaml", p.format)
	}
	c, err := p.conn.Dial(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.Context(cmd.Context())
	defer cancel()
	v, err := fn(ctx, c)
	if l, ok := v.(interface{ Len() int }); v != nil && (err == nil || ok && l.Len() > 0) {
		if perr := p.print(cmd.OutOrStdout(), v); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

func (p *adminParams) print(w io.Writer, v admin.View) error { return admin.Print(w, p.format, v) }

// keyValues parses repeated key=value flags.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}

// completeTopics completes topic names from the cluster.
func (p *adminParams) completeTopics(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return p.completeNames(args, toComplete, func(ctx context.Context, c *admin.Client) ([]string, error) {
		l, err := c.ListTopics(ctx, false)
		names := make([]string, len(l))
		for i, t := range l {
			names[i] = t.Name
		}
		return names, err
	})
}

// completeNames completes toComplete from the names list fetches from the
// cluster, leaving out those already in args. It gives up quietly after a
// second, so a shell never hangs on a dead cluster.
func (p *adminParams) completeNames(args []string, toComplete string, list func(context.Context, *admin.Client) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	opts := p.conn
	opts.Timeout = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := opts.Dial(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer c.Close()
	names, err := list(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) && !slices.Contains(args, n) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
