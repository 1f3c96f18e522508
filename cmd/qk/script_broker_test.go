//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qk-project/qk/admin"
	"github.com/qk-project/qk/broker/brokertest"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kfake"
)

func init() {
	scriptCmds = func(t *testing.T, kfake bool) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
		qkbroker := func(ts *testscript.TestScript, neg bool, args []string) { cmdQKBroker(t, ts, neg, args) }
		if kfake {
			qkbroker = cmdKfake
		}
		return map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"qkbroker":    qkbroker,
			"scrubids":    cmdScrubIDs,
			"waitmembers": cmdWaitMembers,
		}
	}
}

// scriptTB lets brokertest run inside one script: its temp dir is under
// $WORK, its cleanup runs when the script ends and its failures fail the
// script.
type scriptTB struct {
	testing.TB
	ts *testscript.TestScript
	n  int
}

func (s *scriptTB) Helper() {}
func (s *scriptTB) TempDir() string {
	s.n++
	dir := filepath.Join(s.ts.Getenv("WORK"), fmt.Sprintf(".broker%d", s.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.ts.Fatalf("%v", err)
	}
	return dir
}
func (s *scriptTB) Cleanup(f func())                  { s.ts.Defer(f) }
func (s *scriptTB) Fatalf(format string, args ...any) { s.ts.Fatalf(format, args...) }
func (s *scriptTB) Errorf(format string, args ...any) { s.ts.Logf(format, args...) }

// cmdQKBroker starts an in-process broker on a free port for the rest of
// the script and sets $BROKERS and $QK_BROKERS to its address.
//
//	qkbroker [key=value...]
func cmdQKBroker(t *testing.T, ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! qkbroker")
	}
	var opts []brokertest.Option
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("qkbroker %q: want key=value", kv)
		}
		opts = append(opts, brokertest.WithConfig(k, v))
	}
	b := brokertest.StartBroker(&scriptTB{TB: t, ts: ts}, opts...)
	ts.Setenv("BROKERS", b.Addr)
	ts.Setenv("QK_BROKERS", b.Addr)
}

// cmdKfake is qkbroker under TestScriptsKfake: it starts a one-broker
// franz-go kfake cluster on 127.0.0.1 for the rest of the script and sets
// $BROKERS and $QK_BROKERS. num.partitions becomes kfake's default partition
// count; other key=value pairs are passed as broker configs.
func cmdKfake(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! qkbroker")
	}
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	configs := map[string]string{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("qkbroker %q: want key=value", kv)
		}
		if k == "num.partitions" {
			n, err := strconv.Atoi(v)
			ts.Check(err)
			opts = append(opts, kfake.DefaultNumPartitions(n))
		}
		configs[k] = v
	}
	if len(configs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(configs))
	}
	c, err := kfake.NewCluster(opts...)
	ts.Check(err)
	ts.Defer(c.Close)
	addrs := strings.Join(c.ListenAddrs(), ",")
	ts.Setenv("BROKERS", addrs)
	ts.Setenv("QK_BROKERS", addrs)
}

// kafkaID matches a topic or cluster id: 16 bytes in URL-safe base64.
// Not \b: a base64url id may start or end with '-' or '_', which are not
// word characters (kfake hands out such ids).
var kafkaID = regexp.MustCompile(`(^|[^A-Za-z0-9_-])[A-Za-z0-9_-]{22}($|[^A-Za-z0-9_-])`)

// cmdScrubIDs replaces topic and cluster ids in files by <ID>, so golden
// files compare across runs.
//
//	scrubids file...
func cmdScrubIDs(ts *testscript.TestScript, neg bool, args []string) {
	for _, f := range args {
		p := ts.MkAbs(f)
		data, err := os.ReadFile(p)
		ts.Check(err)
		ts.Check(os.WriteFile(p, kafkaID.ReplaceAll(data, []byte("${1}<ID>${2}")), 0o644))
	}
}

// cmdWaitMembers waits up to 20 s until `qk group describe` of group shows
// at least one member, for scripts that start a consumer in the background.
//
//	waitmembers group
func cmdWaitMembers(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitmembers group")
	}
	opts := admin.Options{Brokers: strings.Split(ts.Getenv("BROKERS"), ","), Timeout: 5 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := opts.Dial(context.Background()); err == nil {
			d, err := c.DescribeGroups(context.Background(), args[0])
			c.Close()
			if err == nil && len(d) == 1 && len(d[0].Members) > 0 && d[0].State == "Stable" {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.Fatalf("group %s has no members after 20s", args[0])
}
