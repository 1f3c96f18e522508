package main

import (
	"context"
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
clean-shutdown marker, and exits with status 0.`,
		Example: `  # A single broker on 127.0.0.1:9092 with data in ./qk-data
  qk broker start

  # Kafka's own config file, one setting changed
  qk broker start --config server.properties --set log.retention.hours=24

  # Every effective setting and where it came from
  qk broker start --set num.partitions=3 --print-config

  # JSON logs for a log shipper
  qk broker start --log-format json

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
			cfg, warns, err := config.Load(config.LoadOptions{ConfigFile: file, Env: os.Environ(), ClientEnv: admin.ClientEnv, Sets: sets})
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
	s, err := broker.New(cfg, broker.WithLogger(lg))
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	<-sigCtx.Done()
	stop()
	lg.Info("shutting down", "reason", context.Cause(sigCtx))
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := s.Close(shutCtx); err != nil {
		return fmt.Errorf("broker shutdown: %w", err)
	}
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
