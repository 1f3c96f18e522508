package config

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func load(t *testing.T, opts LoadOptions) *Broker {
	t.Helper()
	b, warns, err := Load(opts)
	require.NoError(t, err)
	require.Empty(t, warns)
	return b
}

func TestLoadDefaults(t *testing.T) {
	b := load(t, LoadOptions{})
	require.Equal(t, int32(0), b.BrokerID)
	require.Equal(t, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}, b.Listeners)
	require.Equal(t, b.Listeners, b.AdvertisedListeners)
	require.Equal(t, "PLAINTEXT", b.InterBrokerListenerName)
	require.Equal(t, []string{"./qk-data"}, b.LogDirs)
	// Kafka's defaults, as the issue lists them.
	require.Equal(t, 1073741824, b.LogSegmentBytes)
	require.Equal(t, int64(168*3600*1000), b.LogRetentionMs)
	require.Equal(t, int64(168*3600*1000), b.LogRollMs)
	require.Equal(t, int64(300000), b.LogRetentionCheckIntervalMs)
	require.Equal(t, 3, b.NumNetworkThreads)
	require.Equal(t, 8, b.NumIOThreads)
	require.Equal(t, 500, b.QueuedMaxRequests)
	require.Equal(t, 104857600, b.SocketRequestMaxBytes)
	require.Equal(t, 102400, b.SocketSendBufferBytes)
	require.Equal(t, 102400, b.SocketReceiveBufferBytes)
	require.Equal(t, int64(600000), b.ConnectionsMaxIdleMs)
	require.Equal(t, 1048588, b.MessageMaxBytes)
	require.Equal(t, 1, b.NumPartitions)
	require.Equal(t, 1, b.DefaultReplicationFactor)
	require.True(t, b.AutoCreateTopicsEnable)
	require.True(t, b.DeleteTopicEnable)
	require.Equal(t, 4096, b.LogIndexIntervalBytes)
	require.Equal(t, 10485760, b.LogIndexSizeMaxBytes)
	require.Equal(t, 1, b.MinInsyncReplicas)
	require.Equal(t, "producer", b.CompressionType)
	require.Equal(t, int64(30000), b.ReplicaLagTimeMaxMs)
	require.Equal(t, 50, b.OffsetsTopicNumPartitions)
	require.Equal(t, int16(3), b.OffsetsTopicReplicationFactor)
	require.Equal(t, 3000, b.GroupInitialRebalanceDelayMs)
	require.Equal(t, int64(math.MaxInt64), b.LogFlushIntervalMessages)
	require.Equal(t, int64(math.MaxInt64), b.LogFlushIntervalMs)
	require.Equal(t, 60000, b.LogFlushOffsetCheckpointIntervalMs)
	require.Equal(t, 18000, b.ZookeeperSessionTimeoutMs)
	require.Equal(t, 18000, b.ZookeeperConnectionTimeoutMs)
	require.Empty(t, b.ZookeeperConnect)
	require.Equal(t, math.MaxFloat64, b.LogCleanerIOMaxBytesPerSecond)
	require.Equal(t, "127.0.0.1:9644", b.HTTPListener)
	require.Equal(t, []string{"delete"}, b.LogCleanupPolicy)
}

// TestLoadKafkaServerProperties loads a file shaped like the one Kafka
// ships: every key is known, every value lands, nothing warns.
func TestLoadKafkaServerProperties(t *testing.T) {
	const path = "testdata/server.properties"
	b := load(t, LoadOptions{ConfigFile: path})
	require.Equal(t, []string{"/tmp/kafka-logs"}, b.LogDirs)
	require.Equal(t, int16(1), b.OffsetsTopicReplicationFactor)
	require.Equal(t, int16(1), b.TransactionStateLogReplicationFactor)
	require.Equal(t, 1, b.TransactionStateLogMinISR)
	require.Equal(t, 0, b.GroupInitialRebalanceDelayMs)
	require.Equal(t, "localhost:2181", b.ZookeeperConnect)
	require.Equal(t, []string{"localhost:2181"}, b.ZookeeperServers)
	require.Equal(t, 18000, b.ZookeeperConnectionTimeoutMs)
	require.Equal(t, int64(168*3600*1000), b.LogRetentionMs)

	v, src, ok := b.Value("log.retention.hours")
	require.True(t, ok)
	require.Equal(t, "168", v)
	require.Equal(t, Source{Kind: SourceFile, Name: path}, src)
	_, src, _ = b.Value("log.roll.hours")
	require.Equal(t, Source{Kind: SourceDefault}, src)
}

func TestLoadPropertiesSyntax(t *testing.T) {
	const path = "testdata/syntax.properties"
	b, warns, err := Load(LoadOptions{ConfigFile: path})
	require.NoError(t, err)
	fsrc := Source{Kind: SourceFile, Name: path}
	require.Equal(t, []Warning{
		{Key: "node.id", Source: fsrc, Message: "KRaft setting, ignored: qk uses ZooKeeper or its embedded metadata store"},
		{Key: "retention.ms", Source: fsrc, Message: "unknown key, ignored: retention.ms is a topic config; its broker default is log.retention.ms"},
	}, warns)

	require.Equal(t, 16, b.NumIOThreads)
	require.Equal(t, 5, b.NumNetworkThreads)
	require.Equal(t, 700, b.QueuedMaxRequests)
	require.Equal(t, -1, b.SocketSendBufferBytes)
	require.Equal(t, []Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Name: "INTERNAL", Host: "127.0.0.1", Port: 9093, SecurityProtocol: "PLAINTEXT"},
	}, b.Listeners)
	require.Equal(t, "région-1", b.BrokerRack)
	require.Equal(t, 4, b.NumPartitions, "later duplicate wins; a comment never continues")
	require.Equal(t, []string{"zk1:2181", "zk2:2181"}, b.ZookeeperServers)
	require.Equal(t, "/qk", b.ZookeeperChroot)
	require.Equal(t, []string{"compact", "delete"}, b.LogCleanupPolicy)
	require.Equal(t, []string{"/data/one", "/data/two"}, b.LogDirs)
	require.Equal(t, int64(3600000), b.LogRetentionMs, "ms wins over hours")
	require.Equal(t, int32(5), b.BrokerID)
}

func TestLoadCRLF(t *testing.T) {
	b := load(t, LoadOptions{ConfigFile: "testdata/crlf.properties"})
	require.Equal(t, 2, b.NumIOThreads)
	require.Equal(t, 4, b.NumNetworkThreads)
	require.Equal(t, 9, b.QueuedMaxRequests)
}

func TestLoadYAML(t *testing.T) {
	const path = "testdata/nested.yaml"
	b := load(t, LoadOptions{ConfigFile: path})
	require.Equal(t, int32(7), b.BrokerID)
	require.Equal(t, 19092, b.Listeners[0].Port)
	require.Equal(t, b.Listeners, b.AdvertisedListeners, "a YAML null leaves the setting unset")
	require.Equal(t, []string{"/data/1", "/data/2"}, b.LogDirs)
	require.Equal(t, int64(24*3600*1000), b.LogRetentionMs)
	require.Equal(t, 0.25, b.LogCleanerMinCleanableRatio)
	require.Equal(t, 12, b.NumIOThreads)
	require.False(t, b.AutoCreateTopicsEnable)
	require.Equal(t, "zstd", b.CompressionType)
	require.Equal(t, int64(math.MaxInt64), b.LogFlushIntervalMessages)
	_, src, _ := b.Value("log.dirs")
	require.Equal(t, Source{Kind: SourceFile, Name: path}, src)
	v, _, _ := b.Value("log.dirs")
	require.Equal(t, "/data/1,/data/2", v)
}

func TestLoadJSON(t *testing.T) {
	b := load(t, LoadOptions{ConfigFile: "testdata/flat.json"})
	require.Equal(t, 3, b.NumIOThreads)
	require.Equal(t, int64(1000000), b.LogRetentionMs)
	require.Equal(t, []string{"/j1", "/j2"}, b.LogDirs)
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{"missing", "testdata/nope.properties", "config: read testdata/nope.properties: open testdata/nope.properties: no such file or directory"},
		{"bad escape", "testdata/bad.properties", `config: read testdata/bad.properties: line 1: malformed \uxxxx escape "\\u00zz"`},
		{"nested and dotted", "testdata/dup.yaml", "config: read testdata/dup.yaml: log.dirs is given twice (nested and dotted)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Load(LoadOptions{ConfigFile: tt.path})
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestFileFormat(t *testing.T) {
	for path, want := range map[string]string{
		"server.properties": "properties", "a.props": "properties", "broker.conf": "properties",
		"noext": "properties", "a.yaml": "yaml", "A.YML": "yaml", "a.json": "json", "a.toml": "toml",
	} {
		require.Equal(t, want, fileFormat(path), path)
	}
}

func TestEnvMapping(t *testing.T) {
	tests := []struct {
		name  string
		env   []string
		key   string
		want  string
		warns []Warning
	}{
		{name: "log.dirs", env: []string{"QK_LOG_DIRS=/e1,/e2"}, key: "log.dirs", want: "/e1,/e2"},
		{name: "num.io.threads", env: []string{"QK_NUM_IO_THREADS=4"}, key: "num.io.threads", want: "4"},
		{name: "retention ms", env: []string{"QK_LOG_RETENTION_MS=5"}, key: "log.retention.ms", want: "5"},
		{name: "qk extension", env: []string{"QK_QK_HTTP_LISTENER=127.0.0.1:0"}, key: "qk.http.listener", want: "127.0.0.1:0"},
		{name: "value with =", env: []string{"QK_BROKER_RACK=a=b"}, key: "broker.rack", want: "a=b"},
		{name: "other variables ignored", env: []string{"PATH=/bin", "KAFKA_NUM_IO_THREADS=2", "QK_=1", "qk_num_io_threads=2"}, key: "num.io.threads", want: "8"},
		{name: "last wins", env: []string{"QK_NUM_IO_THREADS=4", "QK_NUM_IO_THREADS=5"}, key: "num.io.threads", want: "5"},
		{name: "unknown", env: []string{"QK_LOG_FORMAT=json"}, key: "num.io.threads", want: "8",
			warns: []Warning{{Key: "log.format", Source: Source{Kind: SourceEnv, Name: "QK_LOG_FORMAT"}, Message: "unknown key, ignored"}}},
		{name: "lower case suffix is not a name", env: []string{"QK_num_io_threads=3"}, key: "num.io.threads", want: "8",
			warns: []Warning{{Key: "num.io.threads", Source: Source{Kind: SourceEnv, Name: "QK_num_io_threads"}, Message: "unknown key, ignored"}}},
		// The client commands' variables, set in the same shell, are not
		// broker settings: no warning, no effect.
		{name: "client variables", env: []string{"QK_BROKERS=127.0.0.1:9092", "QK_PROFILE=prod", "QK_NUM_IO_THREADS=6"}, key: "num.io.threads", want: "6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, warns, err := Load(LoadOptions{Env: tt.env, ClientEnv: []string{"QK_BROKERS", "QK_PROFILE"}})
			require.NoError(t, err)
			require.Equal(t, tt.warns, warns)
			got, _, _ := b.Value(tt.key)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.properties")
	require.NoError(t, os.WriteFile(file, []byte("num.io.threads=2\n"), 0o644))
	env := []string{"QK_NUM_IO_THREADS=3"}
	sets := []string{"num.io.threads=4", "num.io.threads=5"}
	tests := []struct {
		name string
		opts LoadOptions
		want int
		src  Source
	}{
		{"default", LoadOptions{}, 8, Source{Kind: SourceDefault}},
		{"file over default", LoadOptions{ConfigFile: file}, 2, Source{Kind: SourceFile, Name: file}},
		{"env over file", LoadOptions{ConfigFile: file, Env: env}, 3, Source{Kind: SourceEnv, Name: "QK_NUM_IO_THREADS"}},
		{"set over env", LoadOptions{ConfigFile: file, Env: env, Sets: sets[:1]}, 4, Source{Kind: SourceSet}},
		{"later set wins", LoadOptions{ConfigFile: file, Env: env, Sets: sets}, 5, Source{Kind: SourceSet}},
		{"set over default", LoadOptions{Sets: sets[:1]}, 4, Source{Kind: SourceSet}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := load(t, tt.opts)
			require.Equal(t, tt.want, b.NumIOThreads)
			_, src, _ := b.Value("num.io.threads")
			require.Equal(t, tt.src, src)
		})
	}
}

// TestSetRepairsFile: only effective values are checked, so --set can
// override a bad value in a file.
func TestSetRepairsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.properties")
	require.NoError(t, os.WriteFile(file, []byte("num.io.threads=lots\n"), 0o644))
	_, _, err := Load(LoadOptions{ConfigFile: file})
	require.EqualError(t, err, "config: num.io.threads=lots (from file "+file+"): not an int; want an integer ≥ 1")
	b := load(t, LoadOptions{ConfigFile: file, Sets: []string{"num.io.threads=2"}})
	require.Equal(t, 2, b.NumIOThreads)
}

func TestUnknownKeyWarnings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.properties")
	require.NoError(t, os.WriteFile(file, []byte("bogus.key=1\nprocess.roles=broker\nsegment.bytes=1\nnum.io.threads=3\n"), 0o644))
	b, warns, err := Load(LoadOptions{ConfigFile: file, Env: []string{"QK_ALSO_BOGUS=1"}, Sets: []string{"set.bogus=2"}})
	require.NoError(t, err)
	require.Equal(t, 3, b.NumIOThreads)
	var got []string
	for _, w := range warns {
		got = append(got, w.String())
	}
	require.Equal(t, []string{
		"config: bogus.key (from file " + file + "): unknown key, ignored",
		"config: process.roles (from file " + file + "): KRaft setting, ignored: qk uses ZooKeeper or its embedded metadata store",
		"config: segment.bytes (from file " + file + "): unknown key, ignored: segment.bytes is a topic config; its broker default is log.segment.bytes",
		"config: also.bogus (from env QK_ALSO_BOGUS): unknown key, ignored",
		"config: set.bogus (from --set): unknown key, ignored",
	}, got)
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		set  []string
		want string
	}{
		// Types.
		{[]string{"num.io.threads=abc"}, "config: num.io.threads=abc (from --set): not an int; want an integer ≥ 1"},
		{[]string{"num.io.threads=0"}, "config: num.io.threads=0 (from --set): out of range; want an integer ≥ 1"},
		{[]string{"num.io.threads=3000000000"}, "config: num.io.threads=3000000000 (from --set): out of range for an int; want an integer ≥ 1"},
		{[]string{"num.io.threads=0x10"}, "config: num.io.threads=0x10 (from --set): not an int; want an integer ≥ 1"},
		{[]string{"socket.send.buffer.bytes=1.5"}, "config: socket.send.buffer.bytes=1.5 (from --set): not an int; want an integer in [-2147483648, 2147483647]"},
		{[]string{"connections.max.idle.ms=soon"}, "config: connections.max.idle.ms=soon (from --set): not a long; want an integer"},
		{[]string{"offsets.topic.replication.factor=40000"}, "config: offsets.topic.replication.factor=40000 (from --set): out of range for a short; want an integer ≥ 1"},
		{[]string{"auto.create.topics.enable=yes"}, "config: auto.create.topics.enable=yes (from --set): not a boolean; want true or false"},
		{[]string{"log.cleaner.min.cleanable.ratio=1.5"}, "config: log.cleaner.min.cleanable.ratio=1.5 (from --set): out of range; want a number in [0, 1]"},
		{[]string{"log.cleaner.min.cleanable.ratio=NaN"}, "config: log.cleaner.min.cleanable.ratio=NaN (from --set): not a double; want a number in [0, 1]"},
		{[]string{"broker.id=-2"}, "config: broker.id=-2 (from --set): out of range; want an integer ≥ -1"},
		{[]string{"reserved.broker.max.id=-1"}, "config: reserved.broker.max.id=-1 (from --set): out of range; want an integer ≥ 0"},
		{[]string{"broker.id.generation.enable=no"}, "config: broker.id.generation.enable=no (from --set): not a boolean; want true or false"},
		{[]string{"log.segment.bytes=60"}, "config: log.segment.bytes=60 (from --set): out of range; want an integer ≥ 61"},
		// One-of and list-of.
		{[]string{"compression.type=brotli"}, "config: compression.type=brotli (from --set): not allowed; want one of uncompressed, zstd, lz4, snappy, gzip, producer"},
		{[]string{"compression.type=GZIP"}, "config: compression.type=GZIP (from --set): not allowed; want one of uncompressed, zstd, lz4, snappy, gzip, producer"},
		{[]string{"log.message.timestamp.type=createtime"}, "config: log.message.timestamp.type=createtime (from --set): not allowed; want one of CreateTime, LogAppendTime"},
		{[]string{"log.cleanup.policy=delete,archive"}, `config: log.cleanup.policy=delete,archive (from --set): "archive" not allowed; want a comma-separated list of compact, delete`},
		{[]string{"security.inter.broker.protocol=TLS"}, "config: security.inter.broker.protocol=TLS (from --set): not allowed; want one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		// Listeners.
		{[]string{"listeners=PLAINTEXT//h:1"}, `config: listeners=PLAINTEXT//h:1 (from --set): "PLAINTEXT//h:1" is not NAME://host:port; want ` + listenerWant},
		{[]string{"listeners=PLAINTEXT://h:70000"}, `config: listeners=PLAINTEXT://h:70000 (from --set): listener "PLAINTEXT://h:70000": port 70000 out of range; want ` + listenerWant},
		{[]string{"listeners=PLAINTEXT://h"}, `config: listeners=PLAINTEXT://h (from --set): listener "PLAINTEXT://h": "h" has no :port; want ` + listenerWant},
		{[]string{"listeners=PLAINTEXT://h:x"}, `config: listeners=PLAINTEXT://h:x (from --set): listener "PLAINTEXT://h:x": port "x" is not a number; want ` + listenerWant},
		{[]string{"listeners=PLAINTEXT://[::1:9092"}, `config: listeners=PLAINTEXT://[::1:9092 (from --set): listener "PLAINTEXT://[::1:9092": "[::1:9092" has an unclosed [; want ` + listenerWant},
		{[]string{"listeners=PLAINTEXT://a:1,plaintext://b:2"}, `config: listeners=PLAINTEXT://a:1,plaintext://b:2 (from --set): listener name PLAINTEXT used twice; want ` + listenerWant},
		{[]string{"listeners=A://a:1,B://b:1"}, `config: listeners=A://a:1,B://b:1 (from --set): listeners A and B share port 1; want ` + listenerWant},
		{[]string{"listeners="}, `config: listeners= (from --set): no listener; want ` + listenerWant},
		{[]string{"listeners=CLIENT://:9093"}, "config: listeners=CLIENT://:9093 (from --set): no security protocol for listener CLIENT; want a listener name mapped by listener.security.protocol.map, or PLAINTEXT"},
		{[]string{"advertised.listeners=PLAINTEXT://0.0.0.0:9092"}, "config: advertised.listeners=PLAINTEXT://0.0.0.0:9092 (from --set): cannot advertise the meta-address 0.0.0.0; want " + listenerWant + ", not 0.0.0.0 or ::"},
		{[]string{"advertised.listeners=OTHER://h:1"}, "config: advertised.listeners=OTHER://h:1 (from --set): listener OTHER is not in listeners; want names that listeners also uses"},
		{[]string{"listener.security.protocol.map=PLAINTEXT:FOO"}, `config: listener.security.protocol.map=PLAINTEXT:FOO (from --set): "PLAINTEXT:FOO": unknown security protocol FOO; want a comma-separated list of NAME:PROTOCOL with PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{[]string{"inter.broker.listener.name=FOO"}, "config: inter.broker.listener.name=FOO (from --set): no advertised listener named FOO; want the name of a listener in advertised.listeners (or listeners)"},
		{[]string{"inter.broker.listener.name=PLAINTEXT", "security.inter.broker.protocol=PLAINTEXT"}, "config: inter.broker.listener.name=PLAINTEXT (from --set): set together with security.inter.broker.protocol; want only one of the two"},
		{[]string{"listeners=INTERNAL://:1", "listener.security.protocol.map=INTERNAL:PLAINTEXT"}, "config: security.inter.broker.protocol=PLAINTEXT (from default): no advertised listener named PLAINTEXT; want the name of a listener in advertised.listeners (or listeners)"},
		// Lists and addresses.
		{[]string{"log.dirs="}, "config: log.dirs= (from --set): empty; want a non-empty comma-separated list without empty or duplicate items"},
		{[]string{"log.dirs=/a,,/b"}, "config: log.dirs=/a,,/b (from --set): empty item; want a non-empty comma-separated list without empty or duplicate items"},
		{[]string{"log.dirs=/a, /a"}, `config: log.dirs=/a, /a (from --set): "/a" listed twice; want a non-empty comma-separated list without empty or duplicate items`},
		{[]string{"zookeeper.connect=a:xyz"}, `config: zookeeper.connect=a:xyz (from --set): port "xyz" is not a number; want host:port[,host:port...][/chroot], e.g. 127.0.0.1:2181/qk`},
		{[]string{"zookeeper.connect=a:2181,,b"}, "config: zookeeper.connect=a:2181,,b (from --set): empty server; want host:port[,host:port...][/chroot], e.g. 127.0.0.1:2181/qk"},
		{[]string{"zookeeper.connect=a:2181/qk/"}, `config: zookeeper.connect=a:2181/qk/ (from --set): chroot "/qk/" has an empty path element; want host:port[,host:port...][/chroot], e.g. 127.0.0.1:2181/qk`},
		{[]string{"zookeeper.connect=:2181"}, `config: zookeeper.connect=:2181 (from --set): server ":2181" needs a host and a port 1..65535; want host:port[,host:port...][/chroot], e.g. 127.0.0.1:2181/qk`},
		{[]string{"qk.http.listener=nohost"}, `config: qk.http.listener=nohost (from --set): "nohost" has no :port; want host:port with port 0..65535, or empty to disable`},
		// Resolved and cross-setting rules.
		{[]string{"log.retention.ms=0"}, "config: log.retention.ms=0 (from --set): retention of 0 ms; want -1 (no limit) or a positive retention"},
		{[]string{"log.retention.minutes=0"}, "config: log.retention.minutes=0 (from --set): retention of 0 ms; want -1 (no limit) or a positive retention"},
		{[]string{"log.retention.hours=0"}, "config: log.retention.hours=0 (from --set): retention of 0 ms; want -1 (no limit) or a positive retention"},
		{[]string{"log.roll.ms=0"}, "config: log.roll.ms=0 (from --set): out of range; want an integer ≥ 1"},
		{[]string{"log.roll.jitter.ms=-5"}, "config: log.roll.jitter.ms=-5 (from --set): out of range; want an integer ≥ 0"},
		{[]string{"replica.fetch.wait.max.ms=40000"}, "config: replica.fetch.wait.max.ms=40000 (from --set): above replica.socket.timeout.ms=30000; want at most replica.socket.timeout.ms, so follower fetches do not time out"},
		{[]string{"replica.fetch.wait.max.ms=20000", "replica.lag.time.max.ms=10000"}, "config: replica.fetch.wait.max.ms=20000 (from --set): above replica.lag.time.max.ms=10000; want at most replica.lag.time.max.ms, so idle partitions do not shrink the ISR"},
		{[]string{"broker.id=1001"}, "config: broker.id=1001 (from --set): above reserved.broker.max.id=1000; want -1 (generate one) or at most reserved.broker.max.id, so it cannot clash with a generated id"},
		{[]string{"broker.id=10", "reserved.broker.max.id=9"}, "config: broker.id=10 (from --set): above reserved.broker.max.id=9; want -1 (generate one) or at most reserved.broker.max.id, so it cannot clash with a generated id"},
		{[]string{"broker.id=-1", "broker.id.generation.enable=false"}, "config: broker.id=-1 (from --set): -1 asks for a generated id, but broker.id.generation.enable=false; want an integer ≥ 0, or broker.id.generation.enable=true"},
		{[]string{"log.cleaner.dedupe.buffer.size=1048576"}, "config: log.cleaner.dedupe.buffer.size=1048576 (from --set): at most 1 MiB for each of log.cleaner.threads=1; want more than 1 MiB per cleaner thread"},
		{[]string{"max.connections.per.ip=0"}, "config: max.connections.per.ip=0 (from --set): 0 with max.connections.per.ip.overrides empty; want a positive limit, or overrides naming the hosts allowed"},
		{[]string{"max.connections.per.ip.overrides=h1:5,h2"}, `config: max.connections.per.ip.overrides=h1:5,h2 (from --set): malformed key-value pair "h2"; want comma-separated host:count pairs with count ≥ 0, or empty`},
		{[]string{"max.connections.per.ip.overrides=h1:-1"}, `config: max.connections.per.ip.overrides=h1:-1 (from --set): host h1: count "-1" is not an integer ≥ 0; want comma-separated host:count pairs with count ≥ 0, or empty`},
		{[]string{"max.connections.per.ip.overrides=:3"}, `config: max.connections.per.ip.overrides=:3 (from --set): malformed key-value pair ":3": no host; want comma-separated host:count pairs with count ≥ 0, or empty`},
		// --set syntax.
		{[]string{"novalue"}, `config: --set "novalue": want key=value`},
		{[]string{"=1"}, `config: --set "=1": want key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.set[0], func(t *testing.T) {
			_, _, err := Load(LoadOptions{Sets: tt.set})
			require.EqualError(t, err, tt.want)
			if len(tt.set[0]) > 0 && tt.set[0][0] != '=' && tt.set[0] != "novalue" {
				require.True(t, errors.Is(err, ErrInvalidValue), "errors.Is(ErrInvalidValue)")
			}
		})
	}
}

// TestBrokerIDRange: Kafka's KafkaConfig rule. With generation on (the
// default) broker.id is -1 (generate one) or 0..reserved.broker.max.id;
// with it off, any id ≥ 0, even above reserved.broker.max.id. The refused
// values are in TestValidationErrors.
func TestBrokerIDRange(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want int32
	}{
		{"qk default", nil, 0},
		{"generate", []string{"broker.id=-1"}, -1},
		{"reserved max", []string{"broker.id=1000"}, 1000},
		{"lowered max", []string{"broker.id=5", "reserved.broker.max.id=5"}, 5},
		{"max 0", []string{"reserved.broker.max.id=0"}, 0},
		{"no generation, any id", []string{"broker.id=5000", "broker.id.generation.enable=false"}, 5000},
		{"no generation, 0", []string{"broker.id.generation.enable=false"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := load(t, LoadOptions{Sets: tt.sets})
			require.Equal(t, tt.want, b.BrokerID)
		})
	}
	b := load(t, LoadOptions{})
	require.True(t, b.BrokerIDGenerationEnable)
	require.Equal(t, int32(1000), b.ReservedBrokerMaxID)
}

// TestWithBrokerID: the settled id replaces -1 in the typed field, stays
// through dynamic configs, and broker.id is still described as configured.
func TestWithBrokerID(t *testing.T) {
	b := load(t, LoadOptions{Sets: []string{"broker.id=-1"}})
	got := b.WithBrokerID(1001)
	require.Equal(t, int32(1001), got.BrokerID)
	require.Equal(t, int32(-1), b.BrokerID, "b is not changed")
	dyn, err := got.WithDynamic(map[string]string{"log.retention.ms": "1000"}, nil)
	require.NoError(t, err)
	require.Equal(t, int32(1001), dyn.BrokerID)
	require.Equal(t, int64(1000), dyn.LogRetentionMs)
	v, src, _ := dyn.Value("broker.id")
	require.Equal(t, "-1", v)
	require.Equal(t, SourceSet, src.Kind)
}

func TestValidationErrorNamesSource(t *testing.T) {
	_, _, err := Load(LoadOptions{Env: []string{"QK_NUM_IO_THREADS=x"}})
	require.EqualError(t, err, "config: num.io.threads=x (from env QK_NUM_IO_THREADS): not an int; want an integer ≥ 1")
	_, _, err = Load(LoadOptions{ConfigFile: "testdata/nested.yaml", Sets: []string{"log.retention.ms=0"}})
	require.EqualError(t, err, "config: log.retention.ms=0 (from --set): retention of 0 ms; want -1 (no limit) or a positive retention")
}

func TestValuesAreNormalized(t *testing.T) {
	b := load(t, LoadOptions{Sets: []string{
		"num.io.threads= 016 ", "auto.create.topics.enable=TRUE", "log.dirs= /a , /b ",
		"log.cleaner.min.cleanable.ratio=.5e0", "listeners=plaintext://[::1]:9092",
	}})
	for name, want := range map[string]string{
		"num.io.threads": "16", "auto.create.topics.enable": "true", "log.dirs": "/a,/b",
		"log.cleaner.min.cleanable.ratio": "0.5", "listeners": "plaintext://[::1]:9092",
	} {
		got, _, _ := b.Value(name)
		require.Equal(t, want, got, name)
	}
	require.Equal(t, 16, b.NumIOThreads)
	require.Equal(t, []Listener{{Name: "PLAINTEXT", Host: "::1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}, b.Listeners)
	require.Equal(t, "[::1]:9092", b.Listeners[0].Addr())
	require.Equal(t, "PLAINTEXT://[::1]:9092", b.Listeners[0].String())
}

func TestListeners(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want []Listener
		adv  []Listener
	}{
		{"all interfaces", []string{"listeners=PLAINTEXT://:9092"},
			[]Listener{{"PLAINTEXT", "", 9092, "PLAINTEXT"}}, nil},
		{"port 0", []string{"listeners=PLAINTEXT://127.0.0.1:0"},
			[]Listener{{"PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT"}}, nil},
		{"same port v4 and v6", []string{"listeners=PLAINTEXT://127.0.0.1:9092,OTHER://[::1]:9092", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"},
			[]Listener{{"PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"}, {"OTHER", "::1", 9092, "PLAINTEXT"}}, nil},
		{"advertised", []string{"listeners=PLAINTEXT://0.0.0.0:9092", "advertised.listeners=PLAINTEXT://kafka.example:19092"},
			[]Listener{{"PLAINTEXT", "0.0.0.0", 9092, "PLAINTEXT"}}, []Listener{{"PLAINTEXT", "kafka.example", 19092, "PLAINTEXT"}}},
		{"custom names", []string{"listeners=CLIENT://:9092,REPL://:9093", "listener.security.protocol.map=CLIENT:PLAINTEXT,REPL:PLAINTEXT", "inter.broker.listener.name=repl"},
			[]Listener{{"CLIENT", "", 9092, "PLAINTEXT"}, {"REPL", "", 9093, "PLAINTEXT"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := load(t, LoadOptions{Sets: tt.sets})
			require.Equal(t, tt.want, b.Listeners)
			if tt.adv == nil {
				tt.adv = tt.want
			}
			require.Equal(t, tt.adv, b.AdvertisedListeners)
		})
	}
	b := load(t, LoadOptions{Sets: tests[4].sets})
	require.Equal(t, "REPL", b.InterBrokerListenerName)
}

func TestResolution(t *testing.T) {
	const h = 3600 * 1000
	tests := []struct {
		name string
		sets []string
		get  func(*Broker) any
		want any
	}{
		{"retention default", nil, retention, int64(168 * h)},
		{"retention hours", []string{"log.retention.hours=1"}, retention, int64(h)},
		{"retention minutes over hours", []string{"log.retention.minutes=5", "log.retention.hours=1"}, retention, int64(300000)},
		{"retention ms over minutes", []string{"log.retention.ms=1000", "log.retention.minutes=5"}, retention, int64(1000)},
		{"retention ms over bad hours", []string{"log.retention.ms=1000", "log.retention.hours=0"}, retention, int64(1000)},
		{"retention unlimited", []string{"log.retention.ms=-1"}, retention, int64(-1)},
		{"retention negative is unlimited", []string{"log.retention.ms=-5"}, retention, int64(-1)},
		{"retention negative hours", []string{"log.retention.hours=-1"}, retention, int64(-1)},
		{"roll default", nil, roll, int64(168 * h)},
		{"roll hours", []string{"log.roll.hours=1"}, roll, int64(h)},
		{"roll ms over hours", []string{"log.roll.ms=5", "log.roll.hours=1"}, roll, int64(5)},
		{"jitter default", nil, jitter, int64(0)},
		{"jitter hours", []string{"log.roll.jitter.hours=2"}, jitter, int64(2 * h)},
		{"jitter ms over hours", []string{"log.roll.jitter.ms=3", "log.roll.jitter.hours=2"}, jitter, int64(3)},
		{"flush default", nil, flush, int64(math.MaxInt64)},
		{"flush from scheduler", []string{"log.flush.scheduler.interval.ms=1000"}, flush, int64(1000)},
		{"flush interval", []string{"log.flush.interval.ms=10", "log.flush.scheduler.interval.ms=1000"}, flush, int64(10)},
		{"zk connection timeout default", nil, zkConn, 18000},
		{"zk connection timeout from session", []string{"zookeeper.session.timeout.ms=5000"}, zkConn, 5000},
		{"zk connection timeout", []string{"zookeeper.connection.timeout.ms=100"}, zkConn, 100},
		{"log dirs default", nil, dirs, []string{"./qk-data"}},
		{"log dir alone", []string{"log.dir=/x"}, dirs, []string{"/x"}},
		{"log dirs over log dir", []string{"log.dir=/x", "log.dirs=/y"}, dirs, []string{"/y"}},
		{"log dirs set to its default still wins", []string{"log.dir=/x", "log.dirs=./qk-data"}, dirs, []string{"./qk-data"}},
		{"log dirs list", []string{"log.dirs=/a,/b"}, dirs, []string{"/a", "/b"}},
		{"zk chroot", []string{"zookeeper.connect=a,b:2182/x/y"}, func(b *Broker) any { return []any{b.ZookeeperServers, b.ZookeeperChroot} },
			[]any{[]string{"a:2181", "b:2182"}, "/x/y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.get(load(t, LoadOptions{Sets: tt.sets})))
		})
	}
}

func retention(b *Broker) any { return b.LogRetentionMs }
func roll(b *Broker) any      { return b.LogRollMs }
func jitter(b *Broker) any    { return b.LogRollJitterMs }
func flush(b *Broker) any     { return b.LogFlushIntervalMs }
func zkConn(b *Broker) any    { return b.ZookeeperConnectionTimeoutMs }
func dirs(b *Broker) any      { return b.LogDirs }

// TestPerIPOverrides: max.connections.per.ip.overrides parses as Kafka's
// Csv.parseCsvMap (last colon, trimmed, so IPv6 addresses work), and
// max.connections.per.ip=0 is allowed with overrides.
func TestPerIPOverrides(t *testing.T) {
	b := load(t, LoadOptions{Sets: []string{"max.connections.per.ip=0",
		"max.connections.per.ip.overrides= 127.0.0.1:2 , ::1:3,broker-a:0"}})
	require.Equal(t, map[string]int{"127.0.0.1": 2, "::1": 3, "broker-a": 0}, b.MaxConnectionsPerIPOverrides)
	require.Equal(t, 0, b.MaxConnectionsPerIP)
	d := load(t, LoadOptions{})
	require.Empty(t, d.MaxConnectionsPerIPOverrides)
	require.Equal(t, int64(-1), d.QueuedMaxRequestBytes)
	require.Equal(t, int64(60000), d.SocketRequestReadTimeoutMs)
	require.Equal(t, math.MaxInt32, d.MaxConnectionCreationRate)
}
