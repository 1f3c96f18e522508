package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadLocalClusterDefaults(t *testing.T) {
	lc, warns, err := LoadLocalCluster(LoadOptions{}, 3)
	require.NoError(t, err)
	require.Empty(t, warns)
	require.Equal(t, []string{"./qk-data"}, lc.Dirs)
	require.Len(t, lc.Brokers, 3)
	for i, b := range lc.Brokers {
		require.Equal(t, int32(i), b.BrokerID)
		require.Equal(t, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + i, SecurityProtocol: "PLAINTEXT"}}, b.Listeners)
		require.Equal(t, b.Listeners, b.AdvertisedListeners)
		require.Equal(t, []string{filepath.Join("qk-data", "broker-"+string(rune('0'+i)))}, b.LogDirs)
		require.Equal(t, "127.0.0.1:"+[]string{"9644", "9645", "9646"}[i], b.HTTPListener)
		// Kafka's replication defaults, kept.
		require.Equal(t, 1, b.DefaultReplicationFactor)
		require.Equal(t, int16(3), b.OffsetsTopicReplicationFactor)
		_, src, _ := b.Value("listeners")
		require.Equal(t, "--local-cluster", src.String())
	}
}

func TestLoadLocalClusterSettings(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(cfg, []byte("num.partitions=6\n"), 0o644))
	for _, tc := range []struct {
		name string
		n    int
		sets []string
		// want per broker: listeners, advertised listeners, http, log dirs
		listeners, advertised, http, dirs []string
	}{
		{
			name:       "two listeners, two dirs, http disabled",
			n:          2,
			sets:       []string{"listeners=PLAINTEXT://:19092,INTERNAL://127.0.0.1:19192", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT", "inter.broker.listener.name=INTERNAL", "log.dirs=/a,/b", "qk.http.listener="},
			listeners:  []string{"PLAINTEXT://:19092,INTERNAL://127.0.0.1:19192", "PLAINTEXT://:19093,INTERNAL://127.0.0.1:19193"},
			advertised: []string{"PLAINTEXT://:19092,INTERNAL://127.0.0.1:19192", "PLAINTEXT://:19093,INTERNAL://127.0.0.1:19193"},
			http:       []string{"", ""},
			dirs:       []string{"/a/broker-0,/b/broker-0", "/a/broker-1,/b/broker-1"},
		},
		{
			name:       "advertised shifted, port 0 kept",
			n:          3,
			sets:       []string{"listeners=PLAINTEXT://0.0.0.0:0", "advertised.listeners=PLAINTEXT://example.com:30000", "qk.http.listener=[::1]:0", "log.dir=/x"},
			listeners:  []string{"PLAINTEXT://0.0.0.0:0", "PLAINTEXT://0.0.0.0:0", "PLAINTEXT://0.0.0.0:0"},
			advertised: []string{"PLAINTEXT://example.com:30000", "PLAINTEXT://example.com:30001", "PLAINTEXT://example.com:30002"},
			http:       []string{"[::1]:0", "[::1]:0", "[::1]:0"},
			dirs:       []string{"/x/broker-0", "/x/broker-1", "/x/broker-2"},
		},
		{
			name:       "highest ports that fit",
			n:          3,
			sets:       []string{"listeners=PLAINTEXT://127.0.0.1:65533", "qk.http.listener=127.0.0.1:65530"},
			listeners:  []string{"PLAINTEXT://127.0.0.1:65533", "PLAINTEXT://127.0.0.1:65534", "PLAINTEXT://127.0.0.1:65535"},
			advertised: []string{"PLAINTEXT://127.0.0.1:65533", "PLAINTEXT://127.0.0.1:65534", "PLAINTEXT://127.0.0.1:65535"},
			http:       []string{"127.0.0.1:65530", "127.0.0.1:65531", "127.0.0.1:65532"},
			dirs:       []string{"qk-data/broker-0", "qk-data/broker-1", "qk-data/broker-2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc, _, err := LoadLocalCluster(LoadOptions{ConfigFile: cfg, Sets: tc.sets}, tc.n)
			require.NoError(t, err)
			require.Len(t, lc.Brokers, tc.n)
			for i, b := range lc.Brokers {
				var got []string
				for _, l := range b.Listeners {
					got = append(got, l.String())
				}
				require.Equal(t, tc.listeners[i], strings.Join(got, ","), "broker %d listeners", i)
				got = nil
				for _, l := range b.AdvertisedListeners {
					got = append(got, l.String())
				}
				require.Equal(t, tc.advertised[i], strings.Join(got, ","), "broker %d advertised", i)
				require.Equal(t, tc.http[i], b.HTTPListener, "broker %d http", i)
				require.Equal(t, tc.dirs[i], strings.Join(b.LogDirs, ","), "broker %d dirs", i)
				require.Equal(t, 6, b.NumPartitions, "--config applies to every broker")
			}
		})
	}
}

func TestLoadLocalClusterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		opts LoadOptions
		want string
	}{
		{"no brokers", 0, LoadOptions{}, "--local-cluster 0: want 1..16 brokers"},
		{"negative", -1, LoadOptions{}, "--local-cluster -1: want 1..16 brokers"},
		{"too many", 17, LoadOptions{}, "--local-cluster 17: want 1..16 brokers"},
		{"zookeeper", 3, LoadOptions{Sets: []string{"zookeeper.connect=127.0.0.1:2181"}},
			"zookeeper.connect=127.0.0.1:2181 (from --set) asks for ZooKeeper"},
		{"broker.id by --set", 3, LoadOptions{Sets: []string{"broker.id=0"}},
			"numbers its brokers 0..2 itself, but broker.id=0 is set (from --set)"},
		{"broker.id by env", 3, LoadOptions{Env: []string{"QK_BROKER_ID=-1"}},
			"broker.id=-1 is set (from env QK_BROKER_ID)"},
		{"listener overflows", 3, LoadOptions{Sets: []string{"listeners=PLAINTEXT://127.0.0.1:65534"}},
			"listeners port 65534 would run past 65535 (brokers use ports 65534..65536): choose a port at most 65533"},
		{"http overflows", 2, LoadOptions{Sets: []string{"qk.http.listener=127.0.0.1:65535"}},
			"qk.http.listener port 65535 would run past 65535"},
		{"advertised overflows", 2, LoadOptions{Sets: []string{"advertised.listeners=PLAINTEXT://h:65535"}},
			"advertised.listeners port 65535 would run past 65535"},
		{"listener meets http", 3, LoadOptions{Sets: []string{"qk.http.listener=127.0.0.1:9093"}},
			"port 9093 would be both broker 0's qk.http.listener and broker 1's listeners PLAINTEXT: space the ports at least 3 apart"},
		{"bad value still named", 3, LoadOptions{Sets: []string{"num.io.threads=abc"}}, "num.io.threads=abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadLocalCluster(tc.opts, tc.n)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
