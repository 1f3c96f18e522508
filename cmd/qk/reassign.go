//lint:file-ignore ST1005 the error texts are Kafka's messages, verbatim, which scripts match

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/qk-project/qk/admin"
	"github.com/qk-project/qk/internal/javaprops"
)

func init() { subcommands = append(subcommands, newReassignPartitionsCmd) }

// reassignIntN draws --generate's start index and replica shift, as
// Kafka draws them at random; tests fix it.
var reassignIntN = rand.IntN

// reassignActions are Kafka's actions, in its order (for its message).
var reassignActions = []string{"generate", "execute", "verify", "cancel", "list"}

// reassignArgs are, per action, the options Kafka requires and those it
// permits besides (validateAndParseArgs); any other is refused with its
// message. The connection flags (--bootstrap-server, -b, --profile, -X,
// --request-timeout, --command-config) go with every action.
var reassignArgs = map[string]struct{ required, permitted []string }{
	"verify":   {[]string{"reassignment-json-file"}, []string{"preserve-throttles"}},
	"generate": {[]string{"topics-to-move-json-file", "broker-list"}, []string{"disable-rack-aware"}},
	"execute":  {[]string{"reassignment-json-file"}, []string{"additional", "throttle", "replica-alter-log-dirs-throttle", "timeout"}},
	"cancel":   {[]string{"reassignment-json-file"}, []string{"preserve-throttles", "timeout"}},
	"list":     {},
}

// newReassignPartitionsCmd is kafka-reassign-partitions.sh: the same
// flags, lines and JSON files, so that an operator's scripts work.
func newReassignPartitionsCmd() *cobra.Command {
	var (
		conn                                perfConn
		actions                             = map[string]*bool{}
		reassignFile, topicsFile, brokerStr string
		commandConfig                       string
		disableRack, additional, preserve   bool
		throttle, logDirThrottle, timeoutMs int64
	)
	cmd := &cobra.Command{
		Use:   "reassign-partitions --bootstrap-server HOST:PORT (--generate | --execute | --verify | --cancel | --list) [flags]",
		Short: "Move partition replicas between brokers (kafka-reassign-partitions)",
		Long: `Move partition replicas between brokers and log dirs, as kafka-reassign-partitions.sh
does, with its flags, its output lines and its JSON files. Exactly one action:

  --generate  propose moving the partitions of the topics in --topics-to-move-json-file
              ({"version":1,"topics":[{"topic":"foo"}]}) to the brokers of --broker-list
              "0,1,2", with Kafka's replica assignment (rack-aware unless
              --disable-rack-aware). It prints the current assignment (keep it for
              rollback) and the proposal; it changes nothing. As in Kafka, each topic's
              start broker is drawn at random, so two runs may propose differently.
  --execute   start the reassignment of --reassignment-json-file:
              {"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],
              "log_dirs":["any","any"]}]} (log_dirs is optional: "any" or an absolute
              path on the broker). It first prints the current assignment to save for
              rollback. --throttle BYTES/S limits the replication of the moving
              partitions (leader.replication.throttled.rate and
              follower.replication.throttled.rate on the brokers involved,
              leader/follower.replication.throttled.replicas on the topics);
              --replica-alter-log-dirs-throttle limits moves between log dirs. Run
              --verify until it reports completion: that removes the throttles.
              --additional starts it while others run, or changes the throttle of a
              running one when the same file is resubmitted.
  --verify    report each partition of the file as completed, still in progress, or
              not as asked; when no reassignment runs anywhere in the cluster, clear
              every reassignment throttle (unless --preserve-throttles).
  --cancel    cancel the file's reassignments still in progress (the replicas go
              back), and clear the throttles unless --preserve-throttles.
  --list      list every reassignment in progress.

The cluster is --bootstrap-server (or qk's -b, $QK_BROKERS or --profile);
--command-config reads Kafka admin client properties (bootstrap.servers,
client.id, request.timeout.ms, default.api.timeout.ms, and TLS and SASL:
security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location,
ssl.keystore.location, ssl.key.password, ...). --timeout is Kafka's: the ms to wait
for log dir moves to begin; qk's request timeout is --request-timeout here.`,
		Example: `  # Propose moving two topics to brokers 3, 4 and 5
  echo '{"version":1,"topics":[{"topic":"orders"},{"topic":"payments"}]}' > move.json
  qk reassign-partitions --bootstrap-server 127.0.0.1:9092 --generate \
      --topics-to-move-json-file move.json --broker-list 3,4,5

  # Start it, throttled to 50 MB/s, then check until it is done (which clears the throttle)
  qk reassign-partitions --bootstrap-server 127.0.0.1:9092 --execute \
      --reassignment-json-file plan.json --throttle 50000000
  qk reassign-partitions --bootstrap-server 127.0.0.1:9092 --verify --reassignment-json-file plan.json

  # What is moving now; give up on a reassignment
  qk reassign-partitions --bootstrap-server 127.0.0.1:9092 --list
  qk reassign-partitions --bootstrap-server 127.0.0.1:9092 --cancel --reassignment-json-file plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			action, err := reassignAction(cmd.Flags(), actions)
			if err != nil {
				return err
			}
			var propBrokers []string
			if commandConfig != "" {
				if propBrokers, err = applyCommandConfig(cmd.Flags(), &conn.Options, commandConfig); err != nil {
					return err
				}
			}
			readFile := func(flag, path string) ([]byte, error) {
				b, err := os.ReadFile(path)
				if err != nil {
					return nil, fmt.Errorf("--%s: %w", flag, err)
				}
				return b, nil
			}
			var data []byte
			switch action {
			case "generate":
				data, err = readFile("topics-to-move-json-file", topicsFile)
			case "execute", "verify", "cancel":
				data, err = readFile("reassignment-json-file", reassignFile)
			}
			if err != nil {
				return err
			}
			moveTimeout := time.Duration(timeoutMs) * time.Millisecond
			c, err := conn.dial(cmd, propBrokers)
			if err != nil {
				return err
			}
			defer c.Close()
			// Each action is bounded by the wait for the request timeout
			// (--request-timeout, sent as the requests' timeout_ms); execute
			// and cancel may also wait --timeout for log dir moves to begin.
			ctx, cancel := context.WithTimeout(cmd.Context(), admin.Wait(conn.Timeout)+moveTimeout)
			defer cancel()
			w := cmd.OutOrStdout()
			switch action {
			case "generate":
				_, err = c.GenerateReassignment(ctx, w, data, brokerStr, !disableRack, reassignIntN)
			case "execute":
				err = c.ExecuteReassignment(ctx, w, data, admin.ExecuteOptions{
					Additional: additional, Throttle: throttle, LogDirThrottle: logDirThrottle, Timeout: moveTimeout,
				})
			case "verify":
				_, err = c.VerifyReassignment(ctx, w, data, preserve)
			case "cancel":
				err = c.CancelReassignment(ctx, w, data, preserve, moveTimeout)
			case "list":
				_, err = c.ListReassignments(ctx, w)
			}
			return err
		},
	}
	conn.addFlags(cmd, map[string]string{"timeout": "request-timeout"})
	f := cmd.Flags()
	for _, a := range reassignActions {
		actions[a] = new(bool)
	}
	f.BoolVar(actions["verify"], "verify", false, "Verify if the reassignment completed as specified by the --reassignment-json-file option. If there is a throttle engaged for the replicas specified, and the rebalance has completed, the throttle will be removed")
	f.BoolVar(actions["generate"], "generate", false, "Generate a candidate partition reassignment configuration. Note that this only generates a candidate assignment, it does not execute it.")
	f.BoolVar(actions["execute"], "execute", false, "Kick off the reassignment as specified by the --reassignment-json-file option.")
	f.BoolVar(actions["cancel"], "cancel", false, "Cancel an active reassignment.")
	f.BoolVar(actions["list"], "list", false, "List all active partition reassignments.")
	f.StringVar(&commandConfig, "command-config", "", "Property file containing configs to be passed to Admin Client.")
	f.StringVar(&reassignFile, "reassignment-json-file", "", `The JSON file with the partition reassignment configuration: {"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]} (log_dirs is optional; "any" or an absolute log dir path on the broker)`)
	f.StringVar(&topicsFile, "topics-to-move-json-file", "", `Generate a reassignment configuration to move the partitions of the specified topics to the list of brokers specified by the --broker-list option: {"version":1,"topics":[{"topic":"foo"},{"topic":"foo1"}]}`)
	f.StringVar(&brokerStr, "broker-list", "", `The list of brokers to which the partitions need to be reassigned in the form "0,1,2". This is required if --topics-to-move-json-file is used to generate reassignment configuration`)
	f.BoolVar(&disableRack, "disable-rack-aware", false, "Disable rack aware replica assignment")
	f.Int64Var(&throttle, "throttle", -1, "The movement of partitions between brokers will be throttled to this value (bytes/sec). This option can be included with --execute when a reassignment is started, and it can be altered by resubmitting the current reassignment along with the --additional flag. The throttle rate should be at least 1 KB/s.")
	f.Int64Var(&logDirThrottle, "replica-alter-log-dirs-throttle", -1, "The movement of replicas between log directories on the same broker will be throttled to this value (bytes/sec). This option can be included with --execute when a reassignment is started, and it can be altered by resubmitting the current reassignment along with the --additional flag. The throttle rate should be at least 1 KB/s.")
	f.Int64Var(&timeoutMs, "timeout", 10000, "The maximum time in ms to wait for log directory replica assignment to begin.")
	f.BoolVar(&additional, "additional", false, "Execute this reassignment in addition to any other ongoing ones. This option can also be used to change the throttle of an ongoing reassignment.")
	f.BoolVar(&preserve, "preserve-throttles", false, "Do not modify broker or topic throttles.")

	_ = cmd.MarkFlagFilename("reassignment-json-file", "json")
	_ = cmd.MarkFlagFilename("topics-to-move-json-file", "json")
	_ = cmd.MarkFlagFilename("command-config", "properties", "conf", "config")
	_ = cmd.RegisterFlagCompletionFunc("broker-list", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		p := adminParams{conn: conn.Options}
		return p.completeNames(nil, toComplete, func(ctx context.Context, c *admin.Client) ([]string, error) {
			ids, err := c.ListBrokers(ctx)
			if err != nil {
				return nil, err
			}
			all := ids.NodeIDs()
			slices.Sort(all)
			// The whole list first (the usual answer), then each id.
			out := []string{joinIDs(all)}
			for _, id := range all {
				out = append(out, strconv.Itoa(int(id)))
			}
			return out, nil
		})
	})
	return cmd
}

// reassignAction is the one action given, with Kafka's messages for none
// or several, for a missing required option and for an option that does
// not go with the action.
func reassignAction(f *pflag.FlagSet, actions map[string]*bool) (string, error) {
	var given []string
	for _, a := range reassignActions {
		if *actions[a] {
			given = append(given, a)
		}
	}
	if len(given) != 1 {
		names := make([]string, len(reassignActions))
		for i, a := range reassignActions {
			names[i] = "--" + a
		}
		return "", fmt.Errorf("Command must include exactly one action: %s", strings.Join(names, ", "))
	}
	action := given[0]
	args := reassignArgs[action]
	for _, r := range args.required {
		if !f.Changed(r) {
			return "", fmt.Errorf("Missing required argument \"[%s]\"", r)
		}
	}
	for _, a := range reassignArgs {
		for _, n := range slices.Concat(a.required, a.permitted) {
			if !slices.Contains(args.required, n) && !slices.Contains(args.permitted, n) && f.Changed(n) {
				return "", fmt.Errorf("Option \"[%s]\" can't be used with action \"[%s]\"", n, action)
			}
		}
	}
	return action, nil
}

// applyCommandConfig reads Kafka admin client properties into o and
// returns bootstrap.servers, if set. Flags given win. The TLS and SASL
// properties (security.protocol, sasl.jaas.config, ssl.truststore.location,
// ...) go to the client settings; properties qk's client cannot honour
// are refused rather than ignored, so a command never runs with less than
// was asked.
func applyCommandConfig(f *pflag.FlagSet, o *admin.Options, path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	props, err := javaprops.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	m := javaprops.Map(props)
	if err := o.TakeSecurity("--command-config "+path, m); err != nil {
		return nil, err
	}
	var brokers []string
	for k, v := range m {
		switch k {
		case "bootstrap.servers":
			brokers = strings.Split(v, ",")
		case "client.id":
			o.Settings = append([]string{"client.id=" + v}, o.Settings...)
		case "request.timeout.ms", "default.api.timeout.ms":
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("--command-config %s: %s: %w", path, k, err)
			}
			if !f.Changed("request-timeout") {
				o.Timeout = time.Duration(ms) * time.Millisecond
			}
		default:
			return nil, fmt.Errorf("--command-config %s: admin client property %q is not supported by qk (bootstrap.servers, client.id, request.timeout.ms, default.api.timeout.ms, %s)", path, k, strings.Join(admin.SecuritySettings(), ", "))
		}
	}
	return brokers, nil
}

// dial connects with the seed brokers resolve picks (--bootstrap-server,
// -b, the properties, $QK_BROKERS, the profile).
func (c *perfConn) dial(cmd *cobra.Command, propBrokers []string) (*admin.Client, error) {
	_, brokers, _, err := c.resolve(cmd, propBrokers)
	if err != nil {
		return nil, err
	}
	o := c.Options
	o.Brokers = brokers
	return o.Dial(cmd.Context())
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}
