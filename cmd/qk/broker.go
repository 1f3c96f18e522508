package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/qk-project/qk/admin"
	"github.com/qk-project/qk/broker"
	"github.com/qk-project/qk/broker/config"
)

func init() { subcommands = append(subcommands, newBrokerCmd) }

// shutdownTimeout bounds a clean shutdown: in-flight requests, flush,
// checkpoints. After it, connections are cut; the logs are still closed.
const shutdownTimeout = 30 * time.Second

func newBrokerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a Kafka-compatible broker",
	}
	cmd.AddCommand(newBrokerStartCmd())
	return cmd
}

func newBrokerStartCmd() *cobra.Command {
	var (
		file        string
		sets        []string
		printConfig bool
		logFormat   string
		debugAddr   string
		zookeeper   string
		nodes       int
	)
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start a broker and serve until SIGINT or SIGTERM",
		Long: `Start a broker that Kafka clients (librdkafka/kcat, franz-go, the Java client, ...) use
unchanged. With no flags: broker id 0, listener PLAINTEXT://127.0.0.1:9092, data in
./qk-data, and the embedded metadata store in ./qk-data/__qk_metadata.

Settings use Kafka's property names. Sources, later ones winning: defaults, --config
FILE (Kafka's server.properties syntax, or YAML for .yaml/.yml), QK_ environment
variables (QK_LOG_DIRS for log.dirs; QK_BROKERS and QK_PROFILE belong to the client
commands and are ignored here), then --set key=value. Unknown keys are warned about; an invalid value stops start-up with a message naming the key, the value and
what is allowed.

SIGINT or SIGTERM stops the broker cleanly: it stops accepting connections, answers
the requests in flight, flushes every log, writes the checkpoints and the
clean-shutdown marker, and exits with status 0.

--local-cluster N runs N brokers (ids 0..N-1) in this one process, on one embedded
metadata store in <log.dirs>/__qk_metadata: a real replicated cluster for development,
demos and qk top. Broker i listens on every configured listener port + i (9092, 9093,
9094 for 3), serves its admin HTTP endpoint on the qk.http.listener port + i (empty
stays disabled) and keeps its data in <log.dirs>/broker-i. Every other setting, from
--config, QK_ variables or --set, applies to all brokers; broker.id and zookeeper.connect
cannot be set. SIGINT or SIGTERM stops them one by one with a controlled shutdown, the
controller last; started again on the same log.dirs, the same cluster comes back.`,
		Example: `  # A single broker on 127.0.0.1:9092 with data in ./qk-data
  qk broker start

  # Kafka's own config file, one setting changed
  qk broker start --config server.properties --set log.retention.hours=24

  # Every effective setting and where it came from
  qk broker start --set num.partitions=3 --print-config

  # JSON logs for a log shipper
  qk broker start --log-format json

  # Three replicated brokers in one process: 127.0.0.1:9092-9094, data in ./qk-data/broker-0..2
  qk broker start --local-cluster 3

  # A member of a cluster: brokers with one ZooKeeper and distinct ids
  qk broker start --zookeeper 127.0.0.1:2181/qk --set broker.id=1 --set log.dirs=/var/lib/qk-1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if logFormat != "text" && logFormat != "json" {
				return fmt.Errorf("invalid --log-format %q: want text or json", logFormat)
			}
			if zookeeper != "" {
				// Shorthand for --set zookeeper.connect=..., before the
				// other --set flags so that they can still override it.
				sets = append([]string{"zookeeper.connect=" + zookeeper}, sets...)
			}
			lopts := config.LoadOptions{ConfigFile: file, Env: os.Environ(), ClientEnv: admin.ClientEnv, Sets: sets}
			if cmd.Flags().Changed("local-cluster") {
				if zookeeper != "" {
					return fmt.Errorf("--zookeeper and --local-cluster exclude each other: a local cluster's brokers share the embedded metadata store")
				}
				return startLocalCluster(cmd, lopts, nodes, printConfig, logFormat)
			}
			cfg, warns, err := config.Load(lopts)
			if err != nil {
				return err
			}
			if printConfig {
				for _, w := range warns {
					fmt.Fprintln(cmd.ErrOrStderr(), w.String())
				}
				return cfg.Print(cmd.OutOrStdout())
			}
			lg, err := brokerLogger(cmd, cmd.ErrOrStderr(), logFormat)
			if err != nil {
				return err
			}
			for _, w := range warns {
				lg.Warn("config warning", "key", w.Key, "source", w.Source.String(), "warning", w.Message)
			}
			if debugAddr != "" {
				if err := serveDebug(debugAddr, lg); err != nil {
					return err
				}
			}
			return runBroker(cmd.Context(), cfg, lg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "config", "", "broker config file: Kafka's .properties syntax, or YAML (.yaml, .yml)")
	f.StringArrayVar(&sets, "set", nil, "a setting as key=value (Kafka's name), overriding the file and QK_ variables; repeatable")
	f.StringVar(&zookeeper, "zookeeper", "", "join a cluster coordinated by ZooKeeper: host:port[,host:port...][/chroot] (zookeeper.connect)")
	f.IntVar(&nodes, "local-cluster", 0, "run N brokers (ids 0..N-1) in this process on one embedded metadata store, on ports +0..+N-1, data in <log.dirs>/broker-<id>")
	f.BoolVar(&printConfig, "print-config", false, "print the effective configuration with each value's source, then exit")
	f.StringVar(&logFormat, "log-format", "text", "log line format on stderr: text or json")
	f.StringVar(&debugAddr, "debug-addr", "", "serve Go's net/http/pprof profiles on this loopback address (host:port), for profiling the broker under load")
	_ = f.MarkHidden("debug-addr")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions(
		[]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("config", "properties", "yaml", "yml")
	return cmd
}

// brokerLogger builds the broker's logger from --log-format and the
// root's --log-level.
func brokerLogger(cmd *cobra.Command, w io.Writer, format string) (*slog.Logger, error) {
	level := "info"
	if fl := cmd.Flags().Lookup("log-level"); fl != nil {
		level = fl.Value.String()
	}
	lvl, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if strings.EqualFold(format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// runBroker starts the broker and serves until ctx ends or SIGINT/SIGTERM
// arrives, then shuts it down cleanly. A second signal during shutdown
// kills the process (the default action is restored).
func runBroker(ctx context.Context, cfg *config.Broker, lg *slog.Logger) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := broker.CheckNotLocalCluster(cfg.LogDirs); err != nil {
		return err
	}
	s, err := broker.New(cfg, broker.WithLogger(lg))
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	var failure error
	select {
	case <-sigCtx.Done():
		lg.Info("shutting down", "reason", context.Cause(sigCtx))
	case <-s.Failed():
		// Every log dir is offline (KIP-112): Kafka's broker halts; qk
		// shuts down (its leaderships move at once) and exits non-zero.
		failure = s.Failure()
		lg.Error("shutting down", "reason", failure)
	}
	stop()
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := s.Close(shutCtx); err != nil {
		return errors.Join(failure, fmt.Errorf("broker shutdown: %w", err))
	}
	return failure
}

// startLocalCluster is `qk broker start --local-cluster n`: it loads the
// brokers' configurations, prints them for --print-config (one block per
// broker, headed by a # comment, so each block is a valid properties
// file), or runs the cluster.
func startLocalCluster(cmd *cobra.Command, lopts config.LoadOptions, n int, printConfig bool, logFormat string) error {
	lc, warns, err := config.LoadLocalCluster(lopts, n)
	if err != nil {
		return err
	}
	if printConfig {
		for _, w := range warns {
			fmt.Fprintln(cmd.ErrOrStderr(), w.String())
		}
		out := cmd.OutOrStdout()
		for i, b := range lc.Brokers {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "# broker %d of --local-cluster %d\n", i, n)
			if err := b.Print(out); err != nil {
				return err
			}
		}
		return nil
	}
	lg, err := brokerLogger(cmd, cmd.ErrOrStderr(), logFormat)
	if err != nil {
		return err
	}
	for _, w := range warns {
		lg.Warn("config warning", "key", w.Key, "source", w.Source.String(), "warning", w.Message)
	}
	return runLocalCluster(cmd.Context(), lc, lg)
}

// runLocalCluster starts the local cluster's brokers and serves until ctx
// ends or SIGINT/SIGTERM arrives, then shuts them down cleanly. The
// signals are caught before the brokers start, which takes a few seconds
// for several, so a Ctrl-C during start-up still stops every broker
// cleanly once the last has started.
func runLocalCluster(ctx context.Context, lc *config.LocalCluster, lg *slog.Logger) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := broker.StartLocalCluster(lc, broker.WithLogger(lg))
	if err != nil {
		return err
	}
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addrs()[0].String()
	}
	lg.Info("local cluster started", "cluster_id", c.Servers[0].ClusterID(), "brokers", len(c.Servers),
		"bootstrap", strings.Join(addrs, ","), "metadata_dir", broker.LocalClusterMetadataDir(lc))
	<-sigCtx.Done()
	stop()
	lg.Info("shutting down local cluster", "reason", context.Cause(sigCtx))
	// Each broker gets the single broker's bound: they stop one by one.
	shutCtx, cancel := context.WithTimeout(context.Background(), time.Duration(len(c.Servers))*shutdownTimeout)
	defer cancel()
	if err := c.Close(shutCtx); err != nil {
		return fmt.Errorf("local cluster shutdown: %w", err)
	}
	lg.Info("local cluster stopped")
	return nil
}

// serveDebug serves net/http/pprof on addr so a broker under load can be
// profiled (`go tool pprof http://ADDR/debug/pprof/profile?seconds=10`).
// Only loopback addresses are accepted: profiles expose internals and the
// endpoint has no authentication.
func serveDebug(addr string, lg *slog.Logger) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid --debug-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("invalid --debug-addr %q: want a loopback address such as 127.0.0.1:6060", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	lg.Info("serving pprof", "addr", ln.Addr().String())
	go func() { _ = http.Serve(ln, mux) }()
	return nil
}
