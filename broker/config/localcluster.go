package config

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// localClusterFlag is the source Print shows for the settings
// LoadLocalCluster derives per broker.
const localClusterFlag = "--local-cluster"

// MaxLocalClusterBrokers bounds --local-cluster. Every broker of a local
// cluster runs in one process with its own network and I/O threads,
// fetchers and page-cache working set; past a handful that is a load test
// of one machine rather than a development cluster, and a typo such as
// 300 for 3 would otherwise bind hundreds of ports.
const MaxLocalClusterBrokers = 16

// LocalCluster is the configuration of `qk broker start --local-cluster N`:
// N brokers in one process on one embedded metadata store.
type LocalCluster struct {
	// Dirs are the configured log.dirs. Broker i keeps its logs in
	// <dir>/broker-<i> of each; the shared metadata store lives in the
	// first (the broker package names the directory), where a single-node
	// broker keeps its own.
	Dirs []string
	// Brokers are the brokers' configurations, broker i at index i.
	Brokers []*Broker
}

// BrokerDir is broker id's directory inside each of a local cluster's
// log.dirs.
func BrokerDir(id int) string { return "broker-" + strconv.Itoa(id) }

// LoadLocalCluster loads opts as Load does, then derives n brokers from
// the result: broker i gets broker.id i, every listener port (and, when it
// is set, every advertised.listeners port and the qk.http.listener port)
// plus i, and log.dirs <dir>/broker-<i> for each configured dir. Port 0
// stays 0 (the system picks one per broker) and an empty qk.http.listener
// stays empty. Everything else, replication factors included, is the
// same for all brokers, with Kafka's defaults.
//
// It refuses what a local cluster cannot honour, naming the setting and
// its source: n outside 1..MaxLocalClusterBrokers, zookeeper.connect (the
// brokers share the embedded store), broker.id set by any source (the
// brokers are numbered 0..n-1), a port that would pass 65535, and two
// brokers' ports that would collide.
func LoadLocalCluster(opts LoadOptions, n int) (*LocalCluster, []Warning, error) {
	if n < 1 || n > MaxLocalClusterBrokers {
		return nil, nil, fmt.Errorf("config: --local-cluster %d: want 1..%d brokers", n, MaxLocalClusterBrokers)
	}
	base, warns, err := Load(opts)
	if err != nil {
		return nil, warns, err
	}
	derived, err := localClusterSettings(base, n)
	if err != nil {
		return nil, warns, err
	}
	lc := &LocalCluster{Dirs: base.LogDirs}
	for i := range n {
		o := opts
		o.derived = derived[i]
		b, _, err := Load(o)
		if err != nil {
			return nil, warns, fmt.Errorf("config: --local-cluster broker %d: %w", i, err)
		}
		lc.Brokers = append(lc.Brokers, b)
	}
	return lc, warns, nil
}

// localClusterSettings checks base for a local cluster of n brokers and
// returns each broker's derived settings as key=value.
func localClusterSettings(base *Broker, n int) ([][]string, error) {
	if v, src, ok := base.Value("zookeeper.connect"); ok && v != "" {
		return nil, fmt.Errorf("config: --local-cluster runs its brokers on the embedded metadata store, but zookeeper.connect=%s (from %s) asks for ZooKeeper: use one or the other", v, src)
	}
	if v, src, _ := base.Value("broker.id"); src.Kind != SourceDefault {
		return nil, fmt.Errorf("config: --local-cluster numbers its brokers 0..%d itself, but broker.id=%s is set (from %s): remove it", n-1, v, src)
	}
	// A port in use by one broker must not be another's: with listeners
	// 9092 and qk.http.listener 9093, broker 1 would listen where broker 0
	// serves HTTP.
	type use struct {
		broker int
		what   string
	}
	taken := map[int]use{}
	claim := func(broker int, what string, port int) error {
		if port == 0 {
			return nil
		}
		// Within one broker the listeners were checked by Load (an IPv4
		// and an IPv6 listener may share a port).
		if u, dup := taken[port]; dup && u.broker != broker {
			return fmt.Errorf("config: --local-cluster %d: port %d would be both broker %d's %s and broker %d's %s: space the ports at least %d apart",
				n, port, u.broker, u.what, broker, what, n)
		}
		taken[port] = use{broker, what}
		return nil
	}
	shift := func(key string, ls []Listener, i int) (string, error) {
		items := make([]string, len(ls))
		for j, l := range ls {
			p, err := shiftPort(key, l.Port, i, n)
			if err != nil {
				return "", err
			}
			if err := claim(i, key+" "+l.Name, p); err != nil {
				return "", err
			}
			l.Port = p
			items[j] = l.String()
		}
		return strings.Join(items, ","), nil
	}
	_, _, advertised := base.Value("advertised.listeners")
	var httpHost string
	httpPort := -1 // qk.http.listener empty: disabled on every broker
	if base.HTTPListener != "" {
		h, p, err := splitHostPort(base.HTTPListener)
		if err != nil {
			return nil, fmt.Errorf("config: qk.http.listener=%s: %w", base.HTTPListener, err)
		}
		httpHost, httpPort = h, p
	}
	out := make([][]string, n)
	for i := range n {
		dirs := make([]string, len(base.LogDirs))
		for j, d := range base.LogDirs {
			dirs[j] = filepath.Join(d, BrokerDir(i))
		}
		ls, err := shift("listeners", base.Listeners, i)
		if err != nil {
			return nil, err
		}
		s := []string{
			"broker.id=" + strconv.Itoa(i),
			"listeners=" + ls,
			"log.dirs=" + strings.Join(dirs, ","),
		}
		if advertised {
			// Advertised ports belong to the other brokers' listeners
			// (a NAT in front of them, say), so they are not claimed.
			items := make([]string, len(base.AdvertisedListeners))
			for j, l := range base.AdvertisedListeners {
				p, err := shiftPort("advertised.listeners", l.Port, i, n)
				if err != nil {
					return nil, err
				}
				l.Port = p
				items[j] = l.String()
			}
			s = append(s, "advertised.listeners="+strings.Join(items, ","))
		}
		if httpPort >= 0 {
			p, err := shiftPort("qk.http.listener", httpPort, i, n)
			if err != nil {
				return nil, err
			}
			if err := claim(i, "qk.http.listener", p); err != nil {
				return nil, err
			}
			s = append(s, "qk.http.listener="+net.JoinHostPort(httpHost, strconv.Itoa(p)))
		}
		out[i] = s
	}
	return out, nil
}

// shiftPort is broker i's port for a configured port: port+i, or 0 for 0.
func shiftPort(key string, port, i, n int) (int, error) {
	if port == 0 {
		return 0, nil
	}
	if port+n-1 > math.MaxUint16 {
		return 0, fmt.Errorf("config: --local-cluster %d: %s port %d would run past 65535 (brokers use ports %d..%d): choose a port at most %d",
			n, key, port, port, port+n-1, math.MaxUint16-n+1)
	}
	return port + i, nil
}
