package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/qk-project/qk/admin"
)

func init() { subcommands = append(subcommands, newTransactionsCmd) }

// txnParams are the connection and output flags of `qk transactions`:
// kafka-transactions.sh's --bootstrap-server and --command-config, qk's
// -b, -X, --profile and --timeout, and --format.
type txnParams struct {
	conn          perfConn
	commandConfig string
	format        string
}

func (p *txnParams) addFlags(cmd *cobra.Command) {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	p.conn.AddFlags(fs)
	pf := cmd.PersistentFlags()
	pf.AddFlagSet(fs)
	pf.StringVar(&p.conn.bootstrap, "bootstrap-server", "", "Kafka's name for -b: seed brokers host:port, comma separated")
	pf.StringVar(&p.commandConfig, "command-config", "", "property file containing configs to be passed to admin client")
	pf.StringVar(&p.format, "format", "text", "output format: text (kafka-transactions.sh's tables), json or yaml")
	_ = cmd.MarkPersistentFlagFilename("command-config", "properties", "conf", "config")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(admin.Formats, cobra.ShellCompDirectiveNoFileComp))
}

// run dials the cluster, runs fn bounded by --timeout and prints the view
// it returns, if any.
func (p *txnParams) run(cmd *cobra.Command, fn func(ctx context.Context, c *admin.Client) (admin.View, error)) error {
	switch p.format {
	case "text", "json", "yaml":
	default:
		return fmt.Errorf("--format %q: want text, json or yaml", p.format)
	}
	var propBrokers []string
	if p.commandConfig != "" {
		var err error
		if propBrokers, err = applyCommandConfig(cmd.Flags(), &p.conn.Options, p.commandConfig); err != nil {
			return err
		}
	}
	c, err := p.conn.dial(cmd, propBrokers)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.Context(cmd.Context())
	defer cancel()
	v, err := fn(ctx, c)
	if err != nil {
		return err
	}
	if v != nil {
		return admin.Print(cmd.OutOrStdout(), p.format, v)
	}
	return nil
}

func (p *txnParams) completeTopic(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("topic", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ap := adminParams{conn: p.conn.Options}
		return ap.completeTopics(cmd, nil, toComplete)
	})
}

// newTransactionsCmd is kafka-transactions.sh: its subcommands, flags and
// tables, against qk or any Kafka.
func newTransactionsCmd() *cobra.Command {
	p := &txnParams{}
	cmd := &cobra.Command{
		Use:   "transactions",
		Short: "List, describe and abort transactions, and find hanging ones (kafka-transactions)",
		Long: `Analyze the transactional state of producers in the cluster, and detect and recover
from hanging transactions, as kafka-transactions.sh does: the same subcommands, flags and
output tables, for qk or any Kafka.

A hanging transaction is one open on a partition that its coordinator does not know about
(so no marker will ever end it): it holds the partition's last stable offset back and
read_committed consumers stop there. find-hanging finds them; abort ends one with an
ABORT marker written to the partition's leader (WriteTxnMarkers, which needs
CLUSTER_ACTION).`,
		Example: `  qk transactions --bootstrap-server 127.0.0.1:9092 list
  qk transactions describe --transactional-id orders-tx
  qk transactions describe-producers --topic orders --partition 0
  qk transactions find-hanging --broker-id 1
  qk transactions abort --topic orders --partition 0 --start-offset 1200`,
	}
	p.addFlags(cmd)
	cmd.AddCommand(newTxnListCmd(p), newTxnDescribeCmd(p), newTxnDescribeProducersCmd(p), newTxnAbortCmd(p), newTxnFindHangingCmd(p))
	return cmd
}

func newTxnListCmd(p *txnParams) *cobra.Command {
	var o admin.ListTransactionsOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List transactions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				return c.ListTransactions(ctx, o)
			})
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.DurationMs, "duration-filter", -1, "Duration (in millis) to filter by: if < 0, all transactions will be returned; otherwise, only transactions running longer than this duration will be returned")
	f.StringSliceVar(&o.States, "state-filter", nil, "only transactions in these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead, PrepareEpochFence); qk's addition")
	f.Int64SliceVar(&o.ProducerIDs, "producer-id-filter", nil, "only transactions of these producer ids; qk's addition")
	_ = cmd.RegisterFlagCompletionFunc("state-filter", cobra.FixedCompletions([]string{"Empty", "Ongoing", "PrepareCommit",
		"PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newTxnDescribeCmd(p *txnParams) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "describe --transactional-id ID",
		Short: "Describe the state of an active transactional-id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				return c.DescribeTransaction(ctx, id, time.Now())
			})
		},
	}
	cmd.Flags().StringVar(&id, "transactional-id", "", "transactional id")
	_ = cmd.MarkFlagRequired("transactional-id")
	return cmd
}

// partitionFlags are --topic and --partition, both required.
func partitionFlags(p *txnParams, cmd *cobra.Command, tp *admin.TopicPartition) {
	cmd.Flags().StringVar(&tp.Topic, "topic", "", "topic name")
	cmd.Flags().Int32Var(&tp.Partition, "partition", 0, "partition number")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("partition")
	p.completeTopic(cmd)
}

func newTxnDescribeProducersCmd(p *txnParams) *cobra.Command {
	var (
		tp       admin.TopicPartition
		brokerID int32
	)
	cmd := &cobra.Command{
		Use:   "describe-producers --topic TOPIC --partition N",
		Short: "Describe the states of active producers for a topic partition",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("broker-id") {
				brokerID = -1
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				return c.DescribePartitionProducers(ctx, tp, brokerID)
			})
		},
	}
	partitionFlags(p, cmd, &tp)
	cmd.Flags().Int32Var(&brokerID, "broker-id", -1, "optional broker id to describe the producer state on a specific replica")
	return cmd
}

func newTxnAbortCmd(p *txnParams) *cobra.Command {
	var (
		tp               admin.TopicPartition
		startOffset      int64
		producerID       int64
		producerEpoch    int16
		coordinatorEpoch int32
	)
	cmd := &cobra.Command{
		Use:   "abort --topic TOPIC --partition N (--start-offset O | --producer-id P --producer-epoch E --coordinator-epoch C)",
		Short: "Abort a hanging transaction (requires administrative privileges)",
		Long: `Abort a hanging transaction (requires administrative privileges): an ABORT marker for its
producer is written to the partition's leader.

Brokers on versions 3.0 and above: only the start offset of the transaction to be aborted
is required (--start-offset); the producer is found with DescribeProducers.
Brokers on versions older than 3.0: give all of --producer-id, --producer-epoch and
--coordinator-epoch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if !f.Changed("start-offset") && !f.Changed("producer-id") {
				return errors.New("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
			}
			var spec *admin.AbortSpec
			if !f.Changed("start-offset") {
				if !f.Changed("producer-epoch") {
					return errors.New("Missing required argument --producer-epoch")
				}
				if !f.Changed("coordinator-epoch") {
					return errors.New("Missing required argument --coordinator-epoch")
				}
				// A producer whose transaction hung before its first marker
				// shows coordinator epoch -1; 0 is at most any leader epoch.
				spec = &admin.AbortSpec{TopicPartition: tp, ProducerID: producerID, ProducerEpoch: producerEpoch,
					CoordinatorEpoch: max(coordinatorEpoch, 0)}
			}
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				if spec == nil {
					s, err := c.AbortSpecAt(ctx, tp, startOffset)
					if err != nil {
						return nil, err
					}
					spec = &s
				}
				return nil, c.AbortTransaction(ctx, *spec)
			})
		},
	}
	partitionFlags(p, cmd, &tp)
	f := cmd.Flags()
	f.Int64Var(&startOffset, "start-offset", 0, "start offset of the transaction to abort")
	f.Int64Var(&producerID, "producer-id", 0, "producer id")
	f.Int16Var(&producerEpoch, "producer-epoch", 0, "producer epoch")
	f.Int32Var(&coordinatorEpoch, "coordinator-epoch", 0, "coordinator epoch")
	return cmd
}

func newTxnFindHangingCmd(p *txnParams) *cobra.Command {
	var (
		o          admin.FindHangingOptions
		maxTimeout int
	)
	cmd := &cobra.Command{
		Use:   "find-hanging (--broker-id B | --topic TOPIC [--partition N])",
		Short: "Find hanging transactions",
		Long: `Find hanging transactions: open transactions (DescribeProducers), older than
--max-transaction-timeout, that their coordinator does not know as ongoing on that partition
(ListTransactions by producer id, then DescribeTransactions). Each one holds its partition's
last stable offset back until it is aborted with 'qk transactions abort'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if !f.Changed("broker-id") {
				o.BrokerID = -1
			}
			if !f.Changed("partition") {
				o.Partition = -1
			}
			o.MaxTransactionAge = time.Duration(maxTimeout) * time.Minute
			return p.run(cmd, func(ctx context.Context, c *admin.Client) (admin.View, error) {
				o.Now = time.Now()
				return c.FindHangingTransactions(ctx, o)
			})
		},
	}
	f := cmd.Flags()
	f.Int32Var(&o.BrokerID, "broker-id", -1, "broker id to search for hanging transactions")
	f.IntVar(&maxTimeout, "max-transaction-timeout", 15, "maximum transaction timeout in minutes to limit the scope of the search (15 minutes by default)")
	f.StringVar(&o.Topic, "topic", "", "topic name to limit search to (required if --partition is specified)")
	f.Int32Var(&o.Partition, "partition", -1, "partition number")
	p.completeTopic(cmd)
	return cmd
}
