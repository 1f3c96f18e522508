package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	// Name is the listener name, upper-cased as Kafka normalizes it
	// (PLAINTEXT, or a custom name mapped by listener.security.protocol.map).
	Name string
	// Host is empty to bind every interface (Kafka: "the default
	// interface"); IPv6 addresses are given without brackets.
	Host string
	// Port 0 lets the system choose, which tests use.
	Port int
	// SecurityProtocol is the protocol the name maps to: PLAINTEXT, SSL,
	// SASL_PLAINTEXT or SASL_SSL. Broker.ListenerSecurity has the
	// listener's TLS and SASL settings.
	SecurityProtocol string
}

// Addr is host:port for net.Listen and net.Dial.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// String is the listener as written in listeners: NAME://host:port.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// parseListeners parses NAME://host:port items. Names and host:port pairs
// must be unique, as in Kafka, except that the same port may be used once
// by an IPv4 and once by an IPv6 address.
func parseListeners(items []string) ([]Listener, error) {
	out := make([]Listener, 0, len(items))
	names := map[string]bool{}
	for _, it := range items {
		name, hp, ok := strings.Cut(it, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME://host:port", it)
		}
		host, port, err := splitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %v", it, err)
		}
		name = strings.ToUpper(name)
		if names[name] {
			return nil, fmt.Errorf("listener name %s used twice", name)
		}
		names[name] = true
		l := Listener{Name: name, Host: host, Port: port}
		for _, o := range out {
			if o.Port == l.Port && l.Port != 0 && !differentFamilies(o.Host, l.Host) {
				return nil, fmt.Errorf("listeners %s and %s share port %d", o.Name, l.Name, l.Port)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// differentFamilies reports whether one host is an IPv4 and the other an
// IPv6 literal, the one case where Kafka allows two listeners on a port.
func differentFamilies(a, b string) bool {
	pa, errA := netip.ParseAddr(a)
	pb, errB := netip.ParseAddr(b)
	return errA == nil && errB == nil && pa.Is4() != pb.Is4()
}

// parseProtocolMap parses listener.security.protocol.map.
func parseProtocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, it := range strings.Split(s, ",") {
		name, proto, ok := strings.Cut(strings.TrimSpace(it), ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", it)
		}
		if securityProtocols.Validate(proto) != nil {
			return nil, fmt.Errorf("%q: unknown security protocol %s", it, proto)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener name %s mapped twice", name)
		}
		m[name] = proto
	}
	return m, nil
}

// ParseZookeeperConnect splits zookeeper.connect into its servers and the
// optional chroot path: "a:2181,b:2181/qk" gives ["a:2181" "b:2181"] and
// "/qk". A server without a port gets ZooKeeper's 2181.
func ParseZookeeperConnect(s string) (servers []string, chroot string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", errors.New("empty")
	}
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		} else if strings.HasSuffix(chroot, "/") || strings.Contains(chroot, "//") {
			return nil, "", fmt.Errorf("chroot %q has an empty path element", chroot)
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, "", errors.New("empty server")
		}
		if !strings.Contains(h, ":") || (strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")) {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "2181")
		}
		host, port, err := splitHostPort(h)
		if err != nil {
			return nil, "", err
		}
		if host == "" || port == 0 {
			return nil, "", fmt.Errorf("server %q needs a host and a port 1..65535", h)
		}
		servers = append(servers, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	return servers, chroot, nil
}
