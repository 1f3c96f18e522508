//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// timeoutProxy is a TCP proxy in front of a broker that decodes every
// request frame a client sends (kmsg) and records the timeout_ms of those
// that have one, by API key. The broker advertises the proxy's address, so
// a client's every connection, not only its seed's, goes through it.
type timeoutProxy struct {
	t      *testing.T
	ln     net.Listener
	target chan string // the broker's address, once it is listening

	mu   sync.Mutex
	seen map[int16][]int32 // API key -> timeout_ms of each request
}

func newTimeoutProxy(t *testing.T) *timeoutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &timeoutProxy{t: t, ln: ln, target: make(chan string, 1), seen: map[int16][]int32{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		var addr string
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if addr == "" {
				addr = <-p.target
			}
			wg.Go(func() { p.serve(c, addr) })
		}
	})
	return p
}

func (p *timeoutProxy) addr() string { return p.ln.Addr().String() }

// serve copies one connection both ways; the client's side is copied
// frame by frame so that each request can be decoded.
func (p *timeoutProxy) serve(c net.Conn, addr string) {
	defer c.Close()
	b, err := net.Dial("tcp", addr)
	if err != nil {
		p.t.Errorf("proxy: dial broker: %v", err)
		return
	}
	defer b.Close()
	go func() {
		_, _ = io.Copy(c, b)
		c.Close()
	}()
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		if err := p.record(frame); err != nil {
			p.t.Errorf("proxy: %v", err)
		}
		if _, err := b.Write(append(size[:], frame...)); err != nil {
			return
		}
	}
}

// record decodes a request frame (header, then body) and keeps its
// timeout_ms if the request has the field.
func (p *timeoutProxy) record(frame []byte) error {
	if len(frame) < 10 {
		return errors.New("short request header")
	}
	key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil
	}
	req.SetVersion(version)
	rest := frame[8:] // after key, version and correlation id
	if n := int16(binary.BigEndian.Uint16(rest)); n > 0 {
		rest = rest[2+int(n):] // client id
	} else {
		rest = rest[2:]
	}
	if req.IsFlexible() { // header v2: tagged fields after the client id
		tags, n := binary.Uvarint(rest)
		rest = rest[n:]
		for range tags {
			_, n := binary.Uvarint(rest)
			rest = rest[n:]
			size, n := binary.Uvarint(rest)
			rest = rest[n+int(size):]
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return err
	}
	if tr, ok := req.(kmsg.TimeoutRequest); ok {
		p.mu.Lock()
		p.seen[key] = append(p.seen[key], tr.Timeout())
		p.mu.Unlock()
	}
	return nil
}

// take returns the timeouts recorded since the last take, by API key.
func (p *timeoutProxy) take() map[int16][]int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen
	p.seen = map[int16][]int32{}
	return seen
}

// TestTimeoutIsRequestTimeout: every command's --timeout (qk
// reassign-partitions: --request-timeout) is the timeout_ms of each
// request it sends that has one, not kadm's default 15 s; with no flag it
// is qk's default 10 s.
func TestTimeoutIsRequestTimeout(t *testing.T) {
	proxy := newTimeoutProxy(t)
	b := brokertest.StartBroker(t, brokertest.WithConfig("advertised.listeners", "PLAINTEXT://"+proxy.addr()))
	proxy.target <- b.Addr
	bs := proxy.addr()

	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"tmo","partition":0,"replicas":[0]}]}`), 0o644))
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		keys  []kmsg.Key // the requests with timeout_ms the command sends
		want  int32
	}{
		{"topic create", []string{"topic", "create", "tmo", "-p", "1", "-r", "1", "--timeout", "37s"}, "", []kmsg.Key{kmsg.CreateTopics}, 37000},
		{"topic create default", []string{"topic", "create", "tmo-default", "-p", "1", "-r", "1"}, "", []kmsg.Key{kmsg.CreateTopics}, 10000},
		{"topic create dry-run", []string{"topic", "create", "tmo-dry", "--dry-run", "--timeout", "41s"}, "", []kmsg.Key{kmsg.CreateTopics}, 41000},
		{"topic alter partitions", []string{"topic", "alter", "tmo", "--partitions", "2", "--timeout", "38s"}, "", []kmsg.Key{kmsg.CreatePartitions}, 38000},
		{"leader-election", []string{"leader-election", "--election-type", "preferred", "--all-topic-partitions", "--timeout", "39s"}, "", []kmsg.Key{kmsg.ElectLeaders}, 39000},
		{"reassign execute", []string{"reassign-partitions", "--execute", "--reassignment-json-file", plan, "--request-timeout", "42s"}, "", []kmsg.Key{kmsg.AlterPartitionAssignments}, 42000},
		{"reassign list", []string{"reassign-partitions", "--list", "--request-timeout", "43s"}, "", []kmsg.Key{kmsg.ListPartitionReassignments}, 43000},
		{"produce", []string{"produce", "tmo", "--timeout", "44s"}, "a\nb\n", []kmsg.Key{kmsg.Produce}, 44000},
		{"topic delete", []string{"topic", "delete", "tmo", "tmo-default", "-y", "--timeout", "40s"}, "", []kmsg.Key{kmsg.DeleteTopics}, 40000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy.take()
			args := append(slices.Clone(tc.args), "-b", bs)
			if tc.args[0] == "reassign-partitions" {
				args = append(slices.Clone(tc.args), "--bootstrap-server", bs)
			}
			_, stderr, err := runQKStdin(t, tc.stdin, args...)
			require.NoError(t, err, stderr)
			seen := proxy.take()
			for _, k := range tc.keys {
				got := seen[k.Int16()]
				require.NotEmpty(t, got, "no %s request went through the proxy (saw %v)", kmsg.NameForKey(k.Int16()), seen)
				for _, ms := range got {
					require.Equal(t, tc.want, ms, "%s timeout_ms", kmsg.NameForKey(k.Int16()))
				}
			}
			// No other request with a timeout_ms was sent with another value.
			for k, got := range seen {
				for _, ms := range got {
					require.Equal(t, tc.want, ms, "%s timeout_ms", kmsg.NameForKey(k))
				}
			}
		})
	}
}

// runQKStdin is runQK with stdin.
func runQKStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb strings.Builder
	root := newRootCmd(&out, &errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}
