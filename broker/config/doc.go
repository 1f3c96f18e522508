// Package config is the broker's and topics' configuration, keyed by
// Apache Kafka's property names so that a Kafka server.properties, Kafka's
// tools and DescribeConfigs work unchanged against qk.
//
// # Registry
//
// One table per resource (registry.go): broker settings and topic
// configs, each with Kafka's name, type, default, short doc, importance,
// validator and kind. Defaults are Kafka 3.9's (the last Kafka that runs
// on ZooKeeper, which qk speaks); where qk differs, the doc says "qk:":
//
//	broker.id   0                           Kafka -1 (generate one); qk generates for -1 too
//	listeners   PLAINTEXT://127.0.0.1:9092  Kafka PLAINTEXT://:9092
//	log.dirs    ./qk-data                   Kafka unset, log.dir /tmp/kafka-logs
//	segment.bytes, segment.index.bytes minimums follow what broker/log
//	can store (a v2 batch header, four time-index entries)
//
// offsets.topic.replication.factor keeps Kafka's 3; the group coordinator
// clamps it to the live brokers when it creates __consumer_offsets, so a
// single node works. Settings qk adds start with "qk." (qk.http.listener).
// Key.KafkaDefault and Key.KafkaNull record Kafka's default where it
// differs, and WriteMarkdown renders the registry as docs/config.md
// (`make docs`; TestConfigDocStale fails when the page is stale).
//
// A broker setting can be the cluster default of a topic config
// (KindTopicDefault: log.retention.ms for retention.ms, message.max.bytes
// for max.message.bytes); the topic config lists those broker settings as
// Key.Synonyms, and they are the dynamically alterable (cluster-wide)
// broker settings. All other broker settings are read-only: read at
// start-up.
//
// # Sources and precedence
//
// Later wins:
//
//	defaults  <  --config FILE  <  QK_ environment  <  --set key=value
//
// Every value remembers its source, which Print shows and error messages
// name. On a running broker two dynamic layers go on top (Broker.
// WithDynamic): the cluster-wide default, then this broker's own.
//
// The file is Kafka's .properties syntax (java.util.Properties: key=value,
// key: value or key value; # and ! comments; a trailing backslash continues
// a line; \t \n \uXXXX escapes), or YAML for .yaml/.yml, either nested
//
//	log:
//	  retention:
//	    hours: 24
//
// or with flat dotted keys (log.retention.hours: 24), or both. A YAML list
// is a comma-separated list, and a YAML null leaves the setting unset. Keys
// in files match without regard to case (viper lower-cases them; Kafka's
// names are all lower case).
//
// Viper (1.21, the project's standard) reads the file: qk registers a
// .properties codec, which viper does not ship, and uses "::" as viper's
// key delimiter so Kafka's dotted names stay one key each instead of
// becoming nested maps (nested YAML comes out as log::retention::hours and
// is turned back into dots). Viper also layers the four sources. Values are
// then parsed with Kafka's rules (trimmed, decimal, Java int ranges) rather
// than viper's weak typing, which reads "010" as octal.
//
// An environment variable sets a broker setting when its name is QK_ and
// the setting's name upper-cased with '.' as '_': QK_LOG_DIRS is
// log.dirs, QK_NUM_IO_THREADS num.io.threads. Variables are matched
// against the registry's names, not guessed back into dots: no Kafka
// name contains '_', so the mapping is one-to-one (a test keeps it so).
// The client commands' variables (QK_BROKERS, QK_PROFILE: LoadOptions'
// ClientEnv) are skipped without a warning, so one shell can hold both;
// cmd/qk's tests check that no broker setting maps onto one of them.
//
// # Validation
//
// A key that is not in the registry is a Warning, returned for the caller
// to log: files written for another Kafka version carry settings qk does
// not have. An invalid value stops Load with an error that names the key,
// the value, its source and what is allowed:
//
//	config: num.io.threads=abc (from --set): not an int; want an integer ≥ 1
//
// Only effective values are checked, so --set can repair a bad file.
// Cross-setting rules are Kafka's: the resolved retention is -1 or ≥ 1 ms,
// the roll time ≥ 1 ms, every listener maps to a security protocol,
// advertised listeners name listeners, and so on.
//
// A setting qk accepts and does not act on (Key.Unused: JSSE class and
// algorithm names, client.quota.callback.class, the unprefixed
// sasl.jaas.config) is a Warning when a source sets it; the Kerberos
// settings (sasl.kerberos.*) are unknown keys with their own warning.
//
// # Security and listener-prefixed settings
//
// Every listener maps to PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. The
// ssl.*, sasl.* (but sasl.mechanism.inter.broker.protocol) and
// connections.max.reauth.ms settings (Key.PerListener) may be given for
// one listener, as Kafka reads them, and then win for that listener:
//
//	listener.name.<listener name lower-cased>.<key>
//	listener.name.client.ssl.keystore.location=/etc/qk/client.p12
//	listener.name.<listener>.<mechanism lower-cased>.sasl.jaas.config
//	listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=...
//
// A broker reads JAAS only in the second form (Kafka's
// JaasContext.loadServerContext). Prefixed keys come from the file and
// --set (listener and mechanism in any case there) and from the
// environment as QK_LISTENER_NAME_<LISTENER>_<KEY>, the listener name as
// in listeners and the key as in its own variable, '-' in a mechanism as
// '_': QK_LISTENER_NAME_SASL_SSL_SSL_KEYSTORE_PASSWORD,
// QK_LISTENER_NAME_SASL_SSL_SCRAM_SHA_512_SASL_JAAS_CONFIG. Such a
// variable is matched against the listeners; one that fits two settings
// (listeners A and A_PLAIN: QK_LISTENER_NAME_A_PLAIN_SASL_JAAS_CONFIG) is
// ignored with a warning. A prefixed key is validated with its base key's
// type and validator, keeps its source, is printed by Print (secrets as
// [hidden]) and described by DescribeBroker with its base key as synonym,
// and is read-only. A key prefixed with a listener that is not in
// listeners is ignored with a warning, as Kafka ignores it (nothing reads
// it). On a SASL_SSL listener only the prefixed ssl.client.auth counts,
// as in Kafka.
//
// Broker.ListenerSecurity(name) is the resolved view of a listener.
// Load refuses what qk cannot serve (it reads no key files):
//
//	SASL listener  every sasl.enabled.mechanisms in PLAIN, SCRAM-SHA-256,
//	               SCRAM-SHA-512 (Kafka's default GSSAPI is not, so a SASL
//	               listener always sets it); PLAIN needs
//	               listener.name.<l>.plain.sasl.jaas.config
//	SSL listener   ssl.keystore.location, or ssl.keystore.key with
//	               ssl.keystore.certificate.chain and ssl.keystore.type=PEM
//	inter-broker   on a SASL listener, sasl.mechanism.inter.broker.protocol
//	               is one of its enabled mechanisms
//	authorizer     authorizer.class.name empty, AclAuthorizer or
//	               SimpleAclAuthorizer; super.users Type:name;...
//
// # Resolved settings
//
//	LogRetentionMs   log.retention.ms > log.retention.minutes > log.retention.hours
//	LogRollMs        log.roll.ms > log.roll.hours
//	LogRollJitterMs  log.roll.jitter.ms > log.roll.jitter.hours
//	LogFlushIntervalMs  log.flush.interval.ms > log.flush.scheduler.interval.ms
//	LogDirs          log.dirs, or log.dir when only log.dir is set
//
// # Topics and DescribeConfigs
//
// Broker.TopicDefaults gives a topic's configuration without overrides;
// ResolveTopic applies a topic's overrides and ValidateTopicConfig checks
// one for CreateTopics and AlterConfigs. DescribeTopic, DescribeBroker and
// DescribeBrokerDefaults answer DescribeConfigs with Kafka's sources,
// synonyms and types; Type and ConfigSource use the protocol's numbers.
package config
