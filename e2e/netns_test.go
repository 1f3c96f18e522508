//go:build integration

package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// netLab is a private IPv4 network for real network partitions: a bridge
// in the test's own (root) namespace at 10.213.N.1/24, where the test's
// clients live, and one network namespace per server, each joined to the
// bridge by a veth pair. Every server reaches every other and the test
// through the bridge; cut blackholes an address inside one namespace, so
// the path is gone in that direction only, while the rest of the network
// (the test's clients above all) still works.
//
// N is picked at random among the /24s nobody uses, so that two runs on
// one machine (two engineers' worktrees) do not meet; every name carries
// it. Namespaces, bridge and veths go in t.Cleanup, registered before any
// process is started in them, so they are removed after those processes
// are stopped, also when the test fails.
type netLab struct {
	t      *testing.T
	n      int
	bridge string
	nss    []string
	veths  []string // the root namespace's ends
}

// newNetLab makes the bridge. Namespaces need root (CAP_NET_ADMIN) and
// iproute2; without them the test fails: a test that skips on a clean
// checkout can never fail.
func newNetLab(t *testing.T) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("network partition tests make network namespaces (ip netns add) and need root; running as uid %d", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("network partition tests need iproute2's ip: %v", err)
	}
	used := string(ipCmd(t, "-4", "-o", "addr", "show"))
	l := &netLab{t: t}
	for attempt := 0; ; attempt++ {
		n := 1 + rand.IntN(250)
		bridge := fmt.Sprintf("qkbr%d", n)
		if strings.Contains(used, fmt.Sprintf(" 10.213.%d.", n)) {
			continue
		}
		if out, err := exec.Command("ip", "link", "add", bridge, "type", "bridge").CombinedOutput(); err != nil {
			if attempt < 10 && strings.Contains(string(out), "exists") {
				continue
			}
			t.Fatalf("ip link add %s type bridge (network namespaces need root and CAP_NET_ADMIN): %v: %s", bridge, err, out)
		}
		l.n, l.bridge = n, bridge
		break
	}
	t.Cleanup(l.close)
	ipCmd(t, "addr", "add", l.ip(1)+"/24", "dev", l.bridge)
	ipCmd(t, "link", "set", l.bridge, "up")
	return l
}

// ip is the address 10.213.N.host.
func (l *netLab) ip(host int) string { return fmt.Sprintf("10.213.%d.%d", l.n, host) }

// host makes the namespace of one server, named for it, with the
// address 10.213.N.host on its end of a veth whose other end is on the
// bridge, and loopback up. It returns the namespace and the address.
func (l *netLab) host(name string, host int) (ns, ip string) {
	l.t.Helper()
	ns, ip = fmt.Sprintf("qk%d-%s", l.n, name), l.ip(host)
	veth := fmt.Sprintf("qk%dv%s", l.n, name) // at most 15 bytes: names of up to 6
	ipCmd(l.t, "netns", "add", ns)
	l.nss = append(l.nss, ns)
	ipCmd(l.t, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
	l.veths = append(l.veths, veth)
	ipCmd(l.t, "link", "set", veth, "master", l.bridge, "up")
	ipCmd(l.t, "-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
	ipCmd(l.t, "-n", ns, "link", "set", "eth0", "up")
	ipCmd(l.t, "-n", ns, "link", "set", "lo", "up")
	return ns, ip
}

// cut drops, inside namespace ns, every packet to the address to: its
// processes can neither connect to it nor answer it.
func (l *netLab) cut(ns, to string) {
	l.t.Helper()
	ipCmd(l.t, "-n", ns, "route", "add", "blackhole", to+"/32")
}

// heal undoes cut.
func (l *netLab) heal(ns, to string) {
	l.t.Helper()
	ipCmd(l.t, "-n", ns, "route", "del", "blackhole", to+"/32")
}

// close removes the veth pairs, the namespaces and the bridge. The pairs
// go first, by their root ends: a namespace outlives its name (ip netns
// del) while the kernel still holds sockets of it (those of a killed
// process, retransmitting), and its veths would stay with it. Errors are
// reported, not fatal: every piece is tried.
func (l *netLab) close() {
	for _, v := range l.veths {
		if out, err := exec.Command("ip", "link", "del", v).CombinedOutput(); err != nil {
			l.t.Errorf("ip link del %s: %v: %s", v, err, out)
		}
	}
	for _, ns := range l.nss {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			l.t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	}
	if out, err := exec.Command("ip", "link", "del", l.bridge).CombinedOutput(); err != nil {
		l.t.Errorf("ip link del %s: %v: %s", l.bridge, err, out)
	}
}

// ipCmd runs ip with args, bounded in time, and fails the test on error.
func ipCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	return runCmd(t, 10*time.Second, nil, "ip", args...)
}

// inNetns runs the broker in network namespace ns, listening on addr
// (host:port of that namespace) only, with its admin HTTP server on the
// same host.
func inNetns(ns, addr string) brokerOption {
	return func(b *broker) {
		b.netns, b.addr = ns, addr
		host := addr[:strings.LastIndexByte(addr, ':')]
		b.args = append(b.args, "--set", "qk.http.listener="+host+":9644")
	}
}

// listeners returns the local addresses of the TCP sockets listening in
// the network namespace of process pid (its /proc/<pid>/net/tcp and
// tcp6), as host:port.
func listeners(t *testing.T, pid int) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			t.Fatalf("sockets of pid %d: %v", pid, err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "0A" { // TCP_LISTEN
				continue
			}
			host, port, ok := strings.Cut(fs[1], ":")
			raw, err := hex.DecodeString(host)
			if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
				t.Fatalf("/proc/%d/net/%s: local address %q", pid, f, fs[1])
			}
			// The kernel prints the address as 32-bit words in host
			// (little-endian) order.
			ip := make(net.IP, len(raw))
			for i := 0; i < len(raw); i += 4 {
				binary.BigEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(raw[i:]))
			}
			var pn uint16
			if _, err := fmt.Sscanf(port, "%X", &pn); err != nil {
				t.Fatalf("/proc/%d/net/%s: port %q", pid, f, port)
			}
			out = append(out, net.JoinHostPort(ip.String(), fmt.Sprint(pn)))
		}
	}
	return out
}

// requireListensOnlyOn requires every TCP socket listening in process
// pid's namespace to be bound to ip: a server bound to 0.0.0.0 or to
// loopback would be reachable by a path the lab does not cut.
func requireListensOnlyOn(t *testing.T, what string, pid int, ip string) {
	t.Helper()
	ls := listeners(t, pid)
	if len(ls) == 0 {
		t.Fatalf("%s (pid %d): no listening socket", what, pid)
	}
	for _, l := range ls {
		if h, _, _ := net.SplitHostPort(l); h != ip {
			t.Fatalf("%s (pid %d) listens on %s; want only %s (listening: %v)", what, pid, l, ip, ls)
		}
	}
}
