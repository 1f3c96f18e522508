//go:build linux

package brokertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qk-project/qk/broker"
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/metadata/embedded"
	"github.com/qk-project/qk/broker/vfs"
)

// Option configures StartBroker and StartCluster.
type Option func(*options)

type options struct {
	sets  []string
	level slog.Level
	clock func() time.Time
	logTo io.Writer
	// superUserSet: WithConfig set super.users, which WithAuthorizer
	// then leaves alone.
	superUserSet bool
	logDirs      int
	logFS        vfs.FS
}

// WithLogDirs gives each broker n log dirs (log.dirs), Broker.Dirs; the
// first is Broker.Dir.
func WithLogDirs(n int) Option { return func(o *options) { o.logDirs = n } }

// WithLogFS makes the brokers' partition logs use fsys (broker.WithLogFS),
// a vfs.Faulty that injects I/O errors.
func WithLogFS(fsys vfs.FS) Option { return func(o *options) { o.logFS = fsys } }

// WithConfig sets a broker setting (Kafka's name), as --set does.
func WithConfig(key, value string) Option {
	return func(o *options) {
		o.sets = append(o.sets, key+"="+value)
		if key == "super.users" {
			o.superUserSet = true
		}
	}
}

// WithLogLevel sets the level of the brokers' log lines in the test
// output (default Warn, so failures show trouble without noise).
func WithLogLevel(l slog.Level) Option { return func(o *options) { o.level = l } }

// WithLogWriter sends the brokers' log lines (at the WithLogLevel level)
// to w instead of the test output, for a test that asserts on them (a
// fuzz target looking for "handler panicked", whose output would
// otherwise be every rejected input's Warn line).
func WithLogWriter(w io.Writer) Option { return func(o *options) { o.logTo = w } }

// WithClock sets the brokers' wall clock (broker.WithClock): the logs',
// the API handlers' and the group coordinator's, so a test can move time
// forward past a retention without waiting. It must be safe for
// concurrent use.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithAuthorizer turns the brokers' ACLs on with
// authorizer.class.name=kafka.security.authorizer.AclAuthorizer, and,
// unless WithConfig sets super.users, makes User:ANONYMOUS (every
// PLAINTEXT client, the tests' set-up connections) a super user.
func WithAuthorizer() Option {
	return func(o *options) {
		o.sets = append(o.sets, "authorizer.class.name=kafka.security.authorizer.AclAuthorizer")
		if !o.superUserSet {
			o.sets = append(o.sets, "super.users=User:ANONYMOUS")
		}
	}
}

// Broker is one running in-process broker.
type Broker struct {
	*broker.Server
	ID   int32    // its broker.id once started: a generated one for broker.id=-1
	Dir  string   // its (first) log dir
	Dirs []string // all its log dirs (WithLogDirs), Dir first
	Addr string   // host:port of its PLAINTEXT listener

	t     testing.TB
	opts  options
	store *embedded.Store // shared cluster store, or nil
}

// Cluster is several brokers sharing one metadata store.
type Cluster struct {
	Brokers []*Broker
	Store   *embedded.Store
}

// Addrs are the brokers' addresses, for kgo.SeedBrokers.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Brokers))
	for i, b := range c.Brokers {
		out[i] = b.Addr
	}
	return out
}

// StartBroker starts broker 0 with the embedded metadata store in its
// data dir and returns it running.
func StartBroker(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	o := options{level: slog.LevelWarn}
	for _, opt := range opts {
		opt(&o)
	}
	b := &Broker{ID: 0, Dir: t.TempDir(), t: t, opts: o}
	b.makeDirs()
	b.start(0)
	t.Cleanup(b.Stop)
	return b
}

// StartCluster starts n brokers (ids 0..n-1, or generated ones with
// WithConfig("broker.id", "-1")) one after the other, sharing one
// in-memory metadata store.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	o := options{level: slog.LevelWarn}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Cluster{Store: embedded.New()}
	t.Cleanup(func() { c.Store.Close() })
	for i := range n {
		b := &Broker{ID: int32(i), Dir: t.TempDir(), t: t, opts: o, store: c.Store}
		b.makeDirs()
		b.start(0)
		t.Cleanup(b.Stop)
		c.Brokers = append(c.Brokers, b)
	}
	// Every broker knows every other before the test starts: a request
	// served by a broker whose metadata still lacks the last to start
	// would see a smaller cluster (an offsets topic capped at two
	// replicas, say).
	deadline := time.Now().Add(30 * time.Second)
	for _, b := range c.Brokers {
		for len(b.Cache().Snapshot().Brokers) < n {
			if time.Now().After(deadline) {
				t.Fatalf("brokertest: broker %d sees %d of %d brokers after 30s", b.ID, len(b.Cache().Snapshot().Brokers), n)
			}
			time.Sleep(5 * time.Millisecond) // polling interval
		}
	}
	return c
}

// makeDirs sets Dirs: Dir, and with WithLogDirs(n) n-1 more temporary
// dirs beside it (not inside: a fault injected by path prefix then hits
// one dir only).
func (b *Broker) makeDirs() {
	b.Dirs = []string{b.Dir}
	for i := 1; i < b.opts.logDirs; i++ {
		b.Dirs = append(b.Dirs, b.t.TempDir())
	}
}

// Config returns the configuration a broker starts with.
func (b *Broker) config(port int) *config.Broker {
	b.t.Helper()
	sets := append([]string{
		"broker.id=" + strconv.Itoa(int(b.ID)),
		"listeners=PLAINTEXT://127.0.0.1:" + strconv.Itoa(port),
		"log.dirs=" + strings.Join(b.Dirs, ","),
		"num.network.threads=2",
		"num.io.threads=4",
		// Many brokers share the machine (several per test, tests in
		// parallel packages): an ephemeral admin HTTP port each
		// (Server.HTTPAddr), never the default 9644.
		"qk.http.listener=127.0.0.1:0",
		// The last broker of a cluster to stop cannot hand its
		// leaderships to anyone; with Kafka's 5 s backoff its retries
		// took 15 s of the 30 s Stop allows, and a slow machine ran out.
		"controlled.shutdown.retry.backoff.ms=200",
	}, b.opts.sets...)
	cfg, _, err := config.Load(config.LoadOptions{Sets: sets})
	if err != nil {
		b.t.Fatalf("brokertest: config: %v", err)
	}
	return cfg
}

func (b *Broker) start(port int) {
	b.t.Helper()
	out := b.t.Output()
	if b.opts.logTo != nil {
		out = b.opts.logTo
	}
	lg := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: b.opts.level})).
		With("test_broker", b.ID)
	opts := []broker.Option{broker.WithLogger(lg)}
	if b.opts.clock != nil {
		opts = append(opts, broker.WithClock(b.opts.clock))
	}
	if b.opts.logFS != nil {
		opts = append(opts, broker.WithLogFS(b.opts.logFS))
	}
	if b.store != nil {
		sess, err := b.store.NewSession()
		if err != nil {
			b.t.Fatalf("brokertest: metadata session: %v", err)
		}
		opts = append(opts, broker.WithMetadataStore(sess))
	}
	s, err := broker.New(b.config(port), opts...)
	if err != nil {
		b.t.Fatalf("brokertest: new broker %d: %v", b.ID, err)
	}
	b.ID = s.Config().BrokerID
	if err := s.Start(); err != nil {
		b.t.Fatalf("brokertest: start broker %d: %v", b.ID, err)
	}
	b.Server = s
	b.Addr = s.Addrs()[0].String()
}

// Stop shuts the broker down cleanly (flush, checkpoints, clean-shutdown
// marker). Stopping a stopped broker does nothing.
func (b *Broker) Stop() {
	if b.Server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Server.Close(ctx); err != nil {
		b.t.Errorf("brokertest: stop broker %d: %v", b.ID, err)
	}
	b.Server = nil
}

// Restart stops the broker and starts it again on the same data dir and,
// if it is free, the same port (so clients reconnect to the same
// address).
func (b *Broker) Restart() {
	b.t.Helper()
	_, portText, err := net.SplitHostPort(b.Addr)
	if err != nil {
		b.t.Fatalf("brokertest: %v", err)
	}
	port, _ := strconv.Atoi(portText)
	b.Stop()
	b.start(port)
}

// String names the broker in test messages.
func (b *Broker) String() string { return fmt.Sprintf("broker %d at %s", b.ID, b.Addr) }
