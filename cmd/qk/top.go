package main

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/qk-project/qk/admin"
	"github.com/qk-project/qk/tui"
)

func init() { subcommands = append(subcommands, newTopCmd) }

func newTopCmd() *cobra.Command {
	var (
		conn     admin.Options
		interval time.Duration
		reqTime  time.Duration
		once     bool
		format   string
		stuck    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Live view of brokers, partitions (leader, ISR, HW, LSO, per-replica LEO, lag), topics and groups",
		Long: `qk top shows what a cluster is doing right now: brokers up or down, every
partition's leader, replicas, ISR, high watermark, last stable offset and, on
qk brokers, the open transactions (a partition whose oldest one is older than
--txn-stuck-after shows TXN-STUCK), each replica's log end offset and the
followers' lag; topics and consumer groups with their rates and lag. Against a Kafka cluster that is not qk it shows what
the Kafka protocol gives and marks the per-replica LEO unavailable.`,
		Example: `  qk top -b 127.0.0.1:9092
  qk top --interval 5s --profile prod
  qk top --once --format json | jq '.partitions[] | select(.status != "")'
  qk top --once --format json | jq '.partitions[] | select(.open_transactions | length > 0)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			if interval < tui.MinInterval || interval > tui.MaxInterval {
				return fmt.Errorf("--interval %s: want %s to %s", interval, tui.MinInterval, tui.MaxInterval)
			}
			c, err := conn.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			col := tui.NewCollector(c.Kgo(), reqTime, tui.WithTxnStuckAfter(stuck))
			if once {
				s, err := col.Collect(cmd.Context())
				if err != nil {
					return err
				}
				return tui.Print(cmd.OutOrStdout(), format, s)
			}
			m := tui.New(col.Collect, interval, tui.WithBootstrap(strings.Join(conn.Brokers, ",")))
			_, err = tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(cmd.Context()),
				tea.WithInput(cmd.InOrStdin()), tea.WithOutput(cmd.OutOrStdout())).Run()
			return err
		},
	}
	conn.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.DurationVar(&interval, "interval", time.Second, "refresh interval (+ and - change it while running)")
	f.DurationVar(&reqTime, "request-timeout", tui.DefaultRequestTimeout, "timeout of each request of a refresh: a broker that does not answer within it shows as down")
	f.BoolVar(&once, "once", false, "print one snapshot and exit (for scripts)")
	f.StringVar(&format, "format", "text", "output format of --once: text or json")
	f.DurationVar(&stuck, "txn-stuck-after", tui.DefaultTxnStuckAfter, "mark a partition TXN-STUCK when its oldest open transaction is older than this (the cluster's transaction.max.timeout.ms)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
