package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultBrokers is used when neither -b nor QK_BROKERS is given.
const DefaultBrokers = "127.0.0.1:9092"

// ErrUnreachable is wrapped by Dial when no seed broker answers.
var ErrUnreachable = errors.New("cannot reach cluster")

// Options are the connection settings every admin command takes.
type Options struct {
	Brokers  []string
	Timeout  time.Duration
	Settings []string // -X key=value
	Profile  string   // --profile, else $QK_PROFILE; empty: the config file's current

	// ConfigPath is the config file holding the profiles; AddFlags sets
	// it to ConfigPath().
	ConfigPath string

	fs       *pflag.FlagSet // to tell flags given from defaults
	resolved bool
	extra    []kgo.Opt // set by DialKgo
}

// The client commands' environment variables. qk broker start reads QK_
// variables as broker settings (QK_LOG_DIRS is log.dirs) and is told to
// leave these alone, so one shell can set both.
const (
	EnvBrokers = "QK_BROKERS"
	EnvProfile = "QK_PROFILE"
)

// ClientEnv lists the environment variables the client commands read.
var ClientEnv = []string{EnvBrokers, EnvProfile}

// DefaultTimeout is used when neither --timeout nor a profile sets one.
const DefaultTimeout = 10 * time.Second

// AddFlags binds -b/--brokers, --timeout, -X and --profile to fs. Each
// setting comes from, first to last: its flag, $QK_BROKERS (brokers only),
// the profile (--profile, $QK_PROFILE or the config file's current), the
// default.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.fs = fs
	o.ConfigPath = ConfigPath()
	def := DefaultBrokers
	if env := os.Getenv(EnvBrokers); env != "" {
		def = env
	}
	fs.StringSliceVarP(&o.Brokers, "brokers", "b", strings.Split(def, ","), "seed brokers host:port, comma separated (env QK_BROKERS)")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "timeout of each request to the cluster: the timeout_ms sent in CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords, ElectLeaders and partition reassignment requests, which the broker waits for the change to complete; the client waits a little longer for the answer")
	fs.StringArrayVarP(&o.Settings, "client-set", "X", nil, "client setting key=value: client.id, dial.timeout, retries; TLS and SASL by librdkafka's or Java's names (security.protocol, sasl.mechanism, sasl.username, sasl.password, sasl.jaas.config, ssl.ca.location, ssl.certificate.location, ssl.key.location, ...)")
	fs.StringVar(&o.Profile, "profile", os.Getenv(EnvProfile), "connection profile from $XDG_CONFIG_HOME/qk/qk.yaml (env QK_PROFILE; default: the file's current)")
}

// Resolve applies the profile to the settings not given as flags (or, for
// brokers, $QK_BROKERS). Dial calls it; it is done once.
func (o *Options) Resolve() error {
	if o.resolved {
		return nil
	}
	p, err := LoadProfile(o.ConfigPath, o.Profile)
	if err != nil {
		return err
	}
	o.resolved = true
	if p == nil {
		return nil
	}
	changed := func(name string) bool { return o.fs != nil && o.fs.Changed(name) }
	if len(p.Brokers) > 0 && !changed("brokers") && os.Getenv(EnvBrokers) == "" {
		o.Brokers = p.Brokers
	}
	// Only a default timeout gives way (completion sets its own).
	if p.Timeout > 0 && !changed("timeout") && o.Timeout == DefaultTimeout {
		o.Timeout = p.Timeout
	}
	if len(p.Client) > 0 {
		keys := make([]string, 0, len(p.Client))
		for k := range p.Client {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var set []string
		for _, k := range keys {
			set = append(set, k+"="+p.Client[k])
		}
		// -X comes later, so it wins.
		o.Settings = append(set, o.Settings...)
	}
	return nil
}

// KgoOpts resolves the settings (see Resolve) and returns the kgo options
// they make: seed brokers, client id, dial and request timeouts and the -X
// client settings. Tools that run their own kgo clients (qk perf) start
// from these.
func (o *Options) KgoOpts() ([]kgo.Opt, error) {
	if err := o.Resolve(); err != nil {
		return nil, err
	}
	return o.kgoOpts()
}

// Client is an admin connection to one cluster.
type Client struct {
	*kadm.Client
	kgo     *kgo.Client
	brokers []string
	timeout time.Duration
	// legacyAlter forces the AlterConfigs fallback of AlterConfigs (tests).
	legacyAlter bool
}

func (o *Options) kgoOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ClientID("qk"),
		kgo.DialTimeout(o.Timeout),
		// A request with a timeout_ms field is read until timeout_ms plus
		// this overhead, any other until the overhead alone.
		kgo.RequestTimeoutOverhead(o.Timeout),
		// kgo stops retrying a request 30 s after its first try by
		// default: a CreateTopics that ran 40 s and failed retriably
		// (NOT_CONTROLLER) must still be retried within the wait.
		kgo.RetryTimeout(Wait(o.Timeout)),
	}
	var sec Security
	for _, kv := range o.Settings {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("-X %q: want key=value", redactMalformed(kv))
		}
		if isSec, err := sec.Set(k, v); isSec {
			if err != nil {
				return nil, fmt.Errorf("-X %w", err)
			}
			continue
		}
		switch k {
		case "client.id":
			opts = append(opts, kgo.ClientID(v))
		case "dial.timeout":
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("-X %s: %w", k, err)
			}
			opts = append(opts, kgo.DialTimeout(d))
		case "retries":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("-X %s: %w", k, err)
			}
			opts = append(opts, kgo.RequestRetries(n))
		default:
			return nil, fmt.Errorf("-X %s: unknown client setting (%s)", k, strings.Join(ClientSettings(), ", "))
		}
	}
	secOpts, err := sec.Opts()
	if err != nil {
		return nil, fmt.Errorf("client settings: %w", err)
	}
	opts = append(opts, secOpts...)
	return append(opts, o.extra...), nil
}

// ClientSettings lists the settings -X and profiles take: client.id,
// dial.timeout, retries and the TLS and SASL settings.
func ClientSettings() []string {
	return append([]string{"client.id", "dial.timeout", "retries"}, SecuritySettings()...)
}

// redactMalformed is a -X value without '=' as an error may show it:
// whatever follows a secret setting's name (a mistyped separator, as in
// sasl.password:x) is hidden.
func redactMalformed(kv string) string {
	for _, st := range securitySettings {
		if st.secret && strings.HasPrefix(kv, st.name) && len(kv) > len(st.name) {
			return st.name + Hidden
		}
	}
	return kv
}

// Dial connects to the cluster and checks that a seed broker answers, so
// an unreachable cluster fails here with one line naming the address.
func (o *Options) Dial(ctx context.Context) (*Client, error) {
	if err := o.Resolve(); err != nil {
		return nil, err
	}
	opts, err := o.kgoOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(TimeoutMillis(o.Timeout))
	c := &Client{Client: adm, kgo: cl, brokers: o.Brokers, timeout: o.Timeout}
	pctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", o.Timeout)
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, strings.Join(o.Brokers, ","), err)
	}
	return c, nil
}

// Context bounds one command's requests by Wait(--timeout): long enough
// for the broker's answer to a request that it let run the whole
// timeout_ms (a CreateTopics of 10,000 partitions).
func (c *Client) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, Wait(c.timeout))
}

// TimeoutMillis is timeout as a request's timeout_ms field (kadm's
// SetTimeoutMillis; kadm's own default is 15 s whatever --timeout says).
// It is clamped to 1..MaxInt32 ms: 0 would ask the broker not to wait at
// all, which --timeout never means.
func TimeoutMillis(timeout time.Duration) int32 {
	ms := timeout.Milliseconds()
	switch {
	case ms < 1:
		return 1
	case ms > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(ms)
}

// Wait is how long the client waits for the answer to a request sent
// with timeout_ms = timeout: the timeout plus a margin (a tenth of it, at
// least 2 s) for the broker's REQUEST_TIMED_OUT or late success to arrive,
// so the client never gives up just before the broker answers.
func Wait(timeout time.Duration) time.Duration {
	return timeout + max(2*time.Second, timeout/10)
}

// Close closes the connection.
func (c *Client) Close() { c.kgo.Close() }

// Kgo returns the underlying kgo client (for produce and consume).
func (c *Client) Kgo() *kgo.Client { return c.kgo }

// DialKgo is Dial with extra kgo options (producer and consumer settings);
// the options given here come after -X, so they win.
func (o *Options) DialKgo(ctx context.Context, extra ...kgo.Opt) (*Client, error) {
	x := *o
	x.extra = append(x.extra, extra...)
	return x.Dial(ctx)
}

// TakeSecurity moves the TLS and SASL settings out of props, Kafka client
// properties read from source (--command-config FILE, --producer.config
// FILE), into the settings, ahead of -X so that -X still wins; call it
// before Resolve. Each value is checked here, so an error names source;
// no error quotes a secret.
func (o *Options) TakeSecurity(source string, props map[string]string) error {
	var keys []string
	for k := range props {
		if IsSecuritySetting(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	set := make([]string, 0, len(keys))
	var sec Security
	for _, k := range keys {
		if _, err := sec.Set(k, props[k]); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		set = append(set, k+"="+props[k])
		delete(props, k)
	}
	o.Settings = append(set, o.Settings...)
	return nil
}
