package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…"; when it
// is not, the module version or VCS revision from the build info is used.
var version = ""

func qkVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "devel-" + s.Value[:12]
			}
		}
	}
	return "devel"
}

// newRootCmd builds the whole command tree. Output streams are injected so
// tests run commands in-process and compare what they print.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:   "qk",
		Short: "qk is a Kafka-compatible broker and the operator toolkit around it",
		Long: `qk is one binary: a broker that speaks the Apache Kafka wire protocol and keeps
Kafka's on-disk format, and the tools operators use against qk or any Kafka cluster.`,
		Example: `  # Start a broker on 127.0.0.1:9092 with its data in ./qk-data
  qk broker start

  # Dump a segment written by qk or by Apache Kafka
  qk dump-segment --deep-iteration /var/lib/kafka/orders-0/00000000000000000000.log

  # Check an index against its log
  qk dump-segment --verify-index-only orders-0/00000000000000000000.index

  # Install bash completions for the current shell
  source <(qk completion bash)`,
		Version:       qkVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			lvl, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})))
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("qk version {{.Version}}\n")
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(
		[]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(newCompletionCmd())
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands are registered by each command file's init, so adding a
// command group touches only its own file.
var subcommands []func() *cobra.Command

func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", s)
}
