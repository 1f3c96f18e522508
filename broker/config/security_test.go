package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`
	scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required;`
)

// TestListenerSecurityFromFile loads a file with a listener of each
// protocol: prefixed keys win over base keys for their listener only, a
// backslash continues a JAAS value, and the authorizer and quota settings
// land in their fields.
func TestListenerSecurityFromFile(t *testing.T) {
	const path = "testdata/security.properties"
	b := load(t, LoadOptions{ConfigFile: path})
	base := SSL{
		KeystoreType: "JKS", KeystoreLocation: "/etc/qk/broker.jks", KeystorePassword: "store-secret", KeyPassword: "key-secret",
		TruststoreType: "JKS", ClientAuth: "required", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, Protocol: "TLSv1.3",
		CipherSuites: []string{}, EndpointIdentificationAlgorithm: "https", PrincipalMappingRules: "DEFAULT",
	}
	saslSSL := base
	saslSSL.ClientAuth = "none" // SASL_SSL: only a prefixed ssl.client.auth counts
	internal := base
	internal.KeystoreType, internal.KeystoreLocation = "PKCS12", "/etc/qk/internal.p12"
	internal.TruststoreLocation, internal.TruststorePassword = "/etc/qk/truststore.p12", "trust-secret"
	internal.EnabledProtocols = []string{"TLSv1.3"}
	internal.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}
	scram := []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}

	tests := []struct {
		name string
		want ListenerSecurity
	}{
		{"SASL_SSL", ListenerSecurity{Name: "SASL_SSL", SecurityProtocol: "SASL_SSL", SSL: saslSSL,
			SASLEnabledMechanisms:    []string{"SCRAM-SHA-512", "PLAIN"},
			JAAS:                     map[string]string{"PLAIN": plainJAAS, "SCRAM-SHA-512": scramJAAS},
			SASLServerMaxReceiveSize: 524288}},
		{"client", ListenerSecurity{Name: "CLIENT", SecurityProtocol: "SASL_PLAINTEXT", SSL: base,
			SASLEnabledMechanisms:  []string{"PLAIN"},
			JAAS:                   map[string]string{"PLAIN": `org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";`},
			ConnectionsMaxReauthMs: 3600000, SASLServerMaxReceiveSize: 65536}},
		{"INTERNAL", ListenerSecurity{Name: "INTERNAL", SecurityProtocol: "SSL", SSL: internal,
			SASLEnabledMechanisms: scram, JAAS: map[string]string{}, SASLServerMaxReceiveSize: 524288}},
		{"PLAINTEXT", ListenerSecurity{Name: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", SSL: base,
			SASLEnabledMechanisms: scram, JAAS: map[string]string{}, SASLServerMaxReceiveSize: 524288}},
		{"NOPE", ListenerSecurity{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, b.ListenerSecurity(tt.name))
		})
	}

	v, src, ok := b.Value("listener.name.client.connections.max.reauth.ms")
	require.True(t, ok)
	require.Equal(t, "3600000", v)
	require.Equal(t, Source{Kind: SourceFile, Name: path}, src)
	v, _, _ = b.Value("listener.name.internal.ssl.cipher.suites")
	require.Equal(t, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", v, "normalized as a list")

	require.Equal(t, "INTERNAL", b.InterBrokerListenerName)
	require.Equal(t, AclAuthorizer, b.AuthorizerClassName)
	require.Equal(t, []string{"User:admin", "User:CN=broker,O=qk"}, b.SuperUsers)
	require.True(t, b.AllowEveryoneIfNoACLFound)
	require.Equal(t, 5, b.QuotaWindowNum)
	require.Equal(t, 2, b.QuotaWindowSizeSeconds)

	// The result is a copy: changing it does not change the broker's.
	s := b.ListenerSecurity("SASL_SSL")
	s.JAAS["PLAIN"] = "changed"
	s.SASLEnabledMechanisms[0] = "changed"
	require.Equal(t, plainJAAS, b.ListenerSecurity("SASL_SSL").JAAS["PLAIN"])
	require.Equal(t, "SCRAM-SHA-512", b.ListenerSecurity("SASL_SSL").SASLEnabledMechanisms[0])

	// Listener-prefixed settings survive dynamic configs.
	d, err := b.WithDynamic(nil, map[string]string{"message.max.bytes": "3000"})
	require.NoError(t, err)
	require.Equal(t, b.ListenerSecurity("CLIENT"), d.ListenerSecurity("CLIENT"))
}

func TestListenerSecurityYAML(t *testing.T) {
	b := load(t, LoadOptions{ConfigFile: "testdata/security.yaml"})
	s := b.ListenerSecurity("sasl_plaintext")
	require.Equal(t, map[string]string{"PLAIN": `org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="carol-secret";`}, s.JAAS)
	require.Equal(t, int64(60000), s.ConnectionsMaxReauthMs)
	require.Equal(t, []string{"PLAIN"}, s.SASLEnabledMechanisms)
}

func TestSecurityDefaults(t *testing.T) {
	b := load(t, LoadOptions{})
	require.Equal(t, "GSSAPI", b.SASLMechanismInterBrokerProtocol)
	require.Empty(t, b.AuthorizerClassName)
	require.Nil(t, b.SuperUsers)
	require.False(t, b.AllowEveryoneIfNoACLFound)
	require.Equal(t, 11, b.QuotaWindowNum)
	require.Equal(t, 1, b.QuotaWindowSizeSeconds)
	s := b.ListenerSecurity("PLAINTEXT")
	require.Equal(t, "PLAINTEXT", s.SecurityProtocol)
	require.Equal(t, []string{"GSSAPI"}, s.SASLEnabledMechanisms)
	require.Equal(t, int64(0), s.ConnectionsMaxReauthMs)
	require.Equal(t, 524288, s.SASLServerMaxReceiveSize)
	require.Equal(t, "none", s.SSL.ClientAuth)
	require.Equal(t, "JKS", s.SSL.KeystoreType)
}

// TestListenerKeyPrecedence: a prefixed key follows the sources' order
// (file < env < --set) and wins over its base key from any source.
func TestListenerKeyPrecedence(t *testing.T) {
	const file = "testdata/security.properties"
	const key = "listener.name.internal.ssl.keystore.location"
	tests := []struct {
		name string
		opts LoadOptions
		want string
		src  Source
	}{
		{"file", LoadOptions{ConfigFile: file}, "/etc/qk/internal.p12", Source{Kind: SourceFile, Name: file}},
		{"env over file", LoadOptions{ConfigFile: file, Env: []string{"QK_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION=/env"}},
			"/env", Source{Kind: SourceEnv, Name: "QK_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION"}},
		{"set over env", LoadOptions{ConfigFile: file, Env: []string{"QK_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION=/env"},
			Sets: []string{key + "=/set"}}, "/set", Source{Kind: SourceSet}},
		{"set names listeners in any case", LoadOptions{ConfigFile: file, Sets: []string{"listener.name.INTERNAL.ssl.keystore.location=/set"}},
			"/set", Source{Kind: SourceSet}},
		{"later set wins", LoadOptions{ConfigFile: file, Sets: []string{key + "=/a", key + "=/b"}}, "/b", Source{Kind: SourceSet}},
		{"prefixed file over base set", LoadOptions{ConfigFile: file, Sets: []string{"ssl.keystore.location=/base"}},
			"/etc/qk/internal.p12", Source{Kind: SourceFile, Name: file}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := load(t, tt.opts)
			require.Equal(t, tt.want, b.ListenerSecurity("INTERNAL").SSL.KeystoreLocation)
			v, src, ok := b.Value(key)
			require.True(t, ok)
			require.Equal(t, tt.want, v)
			require.Equal(t, tt.src, src)
		})
	}
	// The base key applies where no prefix overrides it.
	b := load(t, LoadOptions{ConfigFile: file, Sets: []string{"ssl.keystore.location=/base"}})
	require.Equal(t, "/base", b.ListenerSecurity("SASL_SSL").SSL.KeystoreLocation)
}

// saslSets is a valid configuration with a SASL_PLAINTEXT listener beside
// the inter-broker PLAINTEXT one.
var saslSets = []string{
	"listeners=PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
	"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
	"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainJAAS,
}

func TestListenerKeysFromSet(t *testing.T) {
	b := load(t, LoadOptions{Sets: append(saslSets,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config="+scramJAAS,
		"listener.name.sasl_plaintext.connections.max.reauth.ms=1000")})
	s := b.ListenerSecurity("SASL_PLAINTEXT")
	require.Equal(t, map[string]string{"PLAIN": plainJAAS, "SCRAM-SHA-256": scramJAAS}, s.JAAS)
	require.Equal(t, []string{"PLAIN", "SCRAM-SHA-256"}, s.SASLEnabledMechanisms)
	require.Equal(t, int64(1000), s.ConnectionsMaxReauthMs)
	require.Equal(t, int64(0), b.ListenerSecurity("PLAINTEXT").ConnectionsMaxReauthMs)
	_, src, _ := b.Value("listener.name.sasl_plaintext.plain.sasl.jaas.config")
	require.Equal(t, Source{Kind: SourceSet}, src)

	// SASL between brokers with a mechanism the listener enables.
	b = load(t, LoadOptions{Sets: []string{"listeners=SASL_PLAINTEXT://:9093", "security.inter.broker.protocol=SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol=scram-sha-256"}})
	require.Equal(t, "SCRAM-SHA-256", b.SASLMechanismInterBrokerProtocol)
	require.Equal(t, "SASL_PLAINTEXT", b.InterBrokerListenerName)

	// Inline PEM key store.
	b = load(t, LoadOptions{Sets: []string{"listeners=PLAINTEXT://:9092,SSL://:9093", "ssl.keystore.type=PEM",
		"ssl.keystore.key=KEY", "ssl.keystore.certificate.chain=CHAIN", "listener.name.ssl.ssl.client.auth=REQUESTED"}})
	require.Equal(t, SSL{KeystoreType: "PEM", KeystoreKey: "KEY", KeystoreCertificateChain: "CHAIN", TruststoreType: "JKS",
		ClientAuth: "requested", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, Protocol: "TLSv1.3", CipherSuites: []string{},
		EndpointIdentificationAlgorithm: "https", PrincipalMappingRules: "DEFAULT"}, b.ListenerSecurity("SSL").SSL)
}

func TestListenerKeysFromEnv(t *testing.T) {
	sets := []string{
		"listeners=PLAINTEXT://:9092,SASL_SSL://:9093,A://:9094,A_PLAIN://:9095",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,A:PLAINTEXT,A_PLAIN:PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-512", "ssl.keystore.location=/ks",
	}
	tests := []struct {
		name  string
		env   string
		key   string // the setting it sets, if any
		warns []string
	}{
		{name: "base key per listener", env: "QK_LISTENER_NAME_SASL_SSL_SSL_KEYSTORE_PASSWORD=pw",
			key: "listener.name.sasl_ssl.ssl.keystore.password"},
		{name: "mechanism with dashes", env: "QK_LISTENER_NAME_SASL_SSL_SCRAM_SHA_512_SASL_JAAS_CONFIG=" + scramJAAS,
			key: "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"},
		{name: "list key", env: "QK_LISTENER_NAME_SASL_SSL_SASL_ENABLED_MECHANISMS=SCRAM-SHA-256",
			key: "listener.name.sasl_ssl.sasl.enabled.mechanisms"},
		{name: "ambiguous", env: "QK_LISTENER_NAME_A_PLAIN_SASL_JAAS_CONFIG=x", warns: []string{
			"config: listener.name.a.plain.sasl.jaas.config or listener.name.a_plain.sasl.jaas.config (from env QK_LISTENER_NAME_A_PLAIN_SASL_JAAS_CONFIG): ambiguous variable, ignored: set the key in the config file or with --set"}},
		{name: "unknown listener", env: "QK_LISTENER_NAME_NOPE_SSL_KEYSTORE_LOCATION=/x", warns: []string{
			"config: listener.name.nope.ssl.keystore.location (from env QK_LISTENER_NAME_NOPE_SSL_KEYSTORE_LOCATION): listener NOPE is not in listeners, ignored"}},
		{name: "not per listener", env: "QK_LISTENER_NAME_A_NUM_IO_THREADS=2", warns: []string{
			"config: listener.name.a.num.io.threads (from env QK_LISTENER_NAME_A_NUM_IO_THREADS): unknown key, ignored: num.io.threads cannot be set per listener; only the ssl.*, sasl.* and connections.max.reauth.ms settings can"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, warns, err := Load(LoadOptions{Sets: sets, Env: []string{tt.env}})
			require.NoError(t, err)
			require.Equal(t, tt.warns, warnStrings(warns))
			if tt.key != "" {
				_, val, _ := strings.Cut(tt.env, "=")
				got, src, ok := b.Value(tt.key)
				require.True(t, ok)
				require.Equal(t, val, got)
				v, _, _ := strings.Cut(tt.env, "=")
				require.Equal(t, Source{Kind: SourceEnv, Name: v}, src)
			}
		})
	}
}

func warnStrings(warns []Warning) []string {
	var out []string
	for _, w := range warns {
		out = append(out, w.String())
	}
	return out
}

// TestListenerKeyWarnings: Kafka ignores a prefixed key of a listener
// that does not exist (nothing reads it), so qk warns; keys qk accepts but
// does not act on are warned about when set.
func TestListenerKeyWarnings(t *testing.T) {
	b, warns, err := Load(LoadOptions{Sets: append(saslSets,
		"listener.name.external.ssl.keystore.location=/x",
		"listener.name.external.plain.sasl.jaas.config="+plainJAAS,
		"listener.name.plaintext.log.retention.ms=5",
		"listener.name.plaintext.bogus=1",
		"sasl.kerberos.service.name=kafka",
		"sasl.jaas.config="+plainJAAS,
		"listener.name.sasl_plaintext.sasl.jaas.config="+plainJAAS,
		"ssl.engine.factory.class=com.example.Factory",
		"client.quota.callback.class=com.example.Quotas",
	)})
	require.NoError(t, err)
	require.Equal(t, []string{
		"config: sasl.kerberos.service.name (from --set): Kerberos setting, ignored: qk does not implement GSSAPI",
		"config: listener.name.external.ssl.keystore.location (from --set): listener EXTERNAL is not in listeners, ignored",
		"config: listener.name.external.plain.sasl.jaas.config (from --set): listener EXTERNAL is not in listeners, ignored",
		"config: listener.name.plaintext.log.retention.ms (from --set): unknown key, ignored: log.retention.ms cannot be set per listener; only the ssl.*, sasl.* and connections.max.reauth.ms settings can",
		"config: listener.name.plaintext.bogus (from --set): unknown key, ignored",
		"config: client.quota.callback.class (from --set): accepted, not used: qk cannot load Java classes; quotas are the default ones, set with kafka-configs.sh --entity-type users/clients",
		"config: listener.name.sasl_plaintext.sasl.jaas.config (from --set): accepted, not used: a broker reads JAAS only as listener.name.<listener>.<mechanism>.sasl.jaas.config",
		"config: sasl.jaas.config (from --set): accepted, not used: a broker reads JAAS only as listener.name.<listener>.<mechanism>.sasl.jaas.config",
		"config: ssl.engine.factory.class (from --set): accepted, not used: qk cannot load Java classes; TLS is Go's crypto/tls configured by the ssl.* settings",
	}, warnStrings(warns))
	_, _, ok := b.Value("listener.name.external.ssl.keystore.location")
	require.False(t, ok, "ignored")
}

// TestPrintHidesSecrets: every password, base or prefixed, and every JAAS
// configuration prints as [hidden]; the secret appears nowhere in Print,
// DescribeConfigs or the warnings.
func TestPrintHidesSecrets(t *testing.T) {
	const secret = "s3cr3t-Zq"
	sets := []string{
		"listeners=PLAINTEXT://:9092,SASL_SSL://:9093",
		"sasl.enabled.mechanisms=PLAIN",
		"ssl.keystore.type=PEM",
		"sasl.jaas.config=x password=\"" + secret + "\";",
		"listener.name.sasl_ssl.plain.sasl.jaas.config=" + `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="` + secret + `";`,
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=" + secret,
		"listener.name.sasl_ssl.sasl.jaas.config=" + secret,
	}
	var passwords []string
	for _, k := range BrokerKeys() {
		if k.Sensitive() && k.Name != "sasl.jaas.config" {
			passwords = append(passwords, k.Name)
			sets = append(sets, k.Name+"="+secret, ListenerKeyName("SASL_SSL", "", k.Name)+"="+secret)
		}
	}
	require.Len(t, passwords, 6, "ssl.keystore.{password,key,certificate.chain}, ssl.key.password, ssl.truststore.{password,certificates}")
	b, warns, err := Load(LoadOptions{Sets: sets})
	require.NoError(t, err)
	require.Equal(t, secret, b.ListenerSecurity("SASL_SSL").SSL.KeystorePassword, "the typed view has the secret")

	var out strings.Builder
	require.NoError(t, b.Print(&out))
	require.NotContains(t, out.String(), secret)
	for _, name := range append(passwords, "sasl.jaas.config") {
		require.Contains(t, out.String(), "\n"+name+"=[hidden] (--set)\n")
		require.Contains(t, out.String(), "\n"+ListenerKeyName("SASL_SSL", "", name)+"=[hidden] (--set)\n")
	}
	require.Contains(t, out.String(), "\nlistener.name.sasl_ssl.plain.sasl.jaas.config=[hidden] (--set)\n")
	require.Contains(t, out.String(), "\nlistener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=[hidden] (--set)\n")
	require.NotContains(t, out.String(), "\nlistener.name.sasl_ssl.sasl.enabled.mechanisms=", "only set prefixed keys print")

	for _, e := range DescribeBroker(b) {
		if e.Value != nil {
			require.NotContains(t, *e.Value, secret, e.Name)
		}
		for _, s := range e.Synonyms {
			if s.Value != nil {
				require.NotContains(t, *s.Value, secret, e.Name)
			}
		}
	}
	require.NotContains(t, strings.Join(warnStrings(warns), "\n"), secret)

	// A password in an error message is hidden too.
	_, _, err = Load(LoadOptions{Sets: []string{"listeners=PLAINTEXT://:9092,SSL://:9093", "ssl.keystore.key=" + secret}})
	require.EqualError(t, err, "config: ssl.keystore.key=[hidden] (from --set): a key without ssl.keystore.certificate.chain; want ssl.keystore.certificate.chain set beside it (or with the same listener prefix)")
}

func TestSecurityErrors(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"GSSAPI default", []string{"listeners=PLAINTEXT://:9092,SASL_PLAINTEXT://:9093"},
			"config: sasl.enabled.mechanisms=GSSAPI (from default): listener SASL_PLAINTEXT (SASL_PLAINTEXT) enables GSSAPI, which qk does not implement; want " + mechanismsWant},
		{"OAUTHBEARER", []string{"listeners=PLAINTEXT://:9092,SASL_PLAINTEXT://:9093", "sasl.enabled.mechanisms=SCRAM-SHA-256,OAUTHBEARER"},
			"config: sasl.enabled.mechanisms=SCRAM-SHA-256,OAUTHBEARER (from --set): listener SASL_PLAINTEXT (SASL_PLAINTEXT) enables OAUTHBEARER, which qk does not implement; want " + mechanismsWant},
		{"prefixed mechanisms", append(saslSets, "listener.name.sasl_plaintext.sasl.enabled.mechanisms=gssapi"),
			"config: listener.name.sasl_plaintext.sasl.enabled.mechanisms=gssapi (from --set): listener SASL_PLAINTEXT (SASL_PLAINTEXT) enables GSSAPI, which qk does not implement; want " + mechanismsWant},
		{"no mechanism", append(saslSets, "listener.name.sasl_plaintext.sasl.enabled.mechanisms="),
			"config: listener.name.sasl_plaintext.sasl.enabled.mechanisms= (from --set): listener SASL_PLAINTEXT (SASL_PLAINTEXT) enables no SASL mechanism; want " + mechanismsWant},
		{"PLAIN without JAAS", saslSets[:2],
			`config: sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256 (from --set): listener SASL_PLAINTEXT enables PLAIN but listener.name.sasl_plaintext.plain.sasl.jaas.config is not set; want listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>="<password>" ...; listing the users PLAIN accepts, or no PLAIN`},
		{"PLAIN with another listener's JAAS", []string{"listeners=PLAINTEXT://:9092,SASL_PLAINTEXT://:9093,SASL_SSL://:9094",
			"sasl.enabled.mechanisms=PLAIN", "ssl.keystore.location=/ks", "listener.name.sasl_ssl.plain.sasl.jaas.config=" + plainJAAS},
			`config: sasl.enabled.mechanisms=PLAIN (from --set): listener SASL_PLAINTEXT enables PLAIN but listener.name.sasl_plaintext.plain.sasl.jaas.config is not set; want listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>="<password>" ...; listing the users PLAIN accepts, or no PLAIN`},
		{"SSL without key store", []string{"listeners=PLAINTEXT://:9092,SSL://:9093"},
			"config: listeners=PLAINTEXT://:9092,SSL://:9093 (from --set): listener SSL uses SSL but has no key store; want ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain (also as listener.name.ssl.ssl.keystore.location)"},
		{"SASL_SSL without key store", []string{"listeners=PLAINTEXT://:9092,SASL_SSL://:9093", "sasl.enabled.mechanisms=SCRAM-SHA-512",
			"listener.name.plaintext.ssl.keystore.location=/elsewhere"},
			"config: listeners=PLAINTEXT://:9092,SASL_SSL://:9093 (from --set): listener SASL_SSL uses SASL_SSL but has no key store; want ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain (also as listener.name.sasl_ssl.ssl.keystore.location)"},
		{"inline key not PEM", []string{"listeners=PLAINTEXT://:9092,SSL://:9093", "listener.name.ssl.ssl.keystore.key=K", "ssl.keystore.certificate.chain=C"},
			"config: ssl.keystore.type=JKS (from default): an inline key in listener.name.ssl.ssl.keystore.key needs the PEM type; want PEM"},
		{"authorizer", []string{"authorizer.class.name=com.example.MyAuthorizer"},
			"config: authorizer.class.name=com.example.MyAuthorizer (from --set): not an authorizer qk implements; want empty (no authorizer), kafka.security.authorizer.AclAuthorizer or kafka.security.auth.SimpleAclAuthorizer: qk implements AclAuthorizer only"},
		{"KRaft authorizer", []string{"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
			"config: authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer (from --set): not an authorizer qk implements; want empty (no authorizer), kafka.security.authorizer.AclAuthorizer or kafka.security.auth.SimpleAclAuthorizer: qk implements AclAuthorizer only"},
		{"inter-broker mechanism", []string{"listeners=SASL_PLAINTEXT://:9093", "security.inter.broker.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms=SCRAM-SHA-256"},
			"config: sasl.mechanism.inter.broker.protocol=GSSAPI (from default): not enabled on the inter-broker listener SASL_PLAINTEXT (sasl.enabled.mechanisms=SCRAM-SHA-256); want one of the inter-broker listener's sasl.enabled.mechanisms"},
		{"inter-broker mechanism, prefixed", []string{"listeners=REPL://:9093", "listener.security.protocol.map=REPL:SASL_PLAINTEXT",
			"inter.broker.listener.name=REPL", "sasl.enabled.mechanisms=SCRAM-SHA-256", "listener.name.repl.sasl.enabled.mechanisms=SCRAM-SHA-512",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256"},
			"config: sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256 (from --set): not enabled on the inter-broker listener REPL (listener.name.repl.sasl.enabled.mechanisms=SCRAM-SHA-512); want one of the inter-broker listener's sasl.enabled.mechanisms"},
		{"prefixed type", []string{"listener.name.plaintext.connections.max.reauth.ms=soon"},
			"config: listener.name.plaintext.connections.max.reauth.ms=soon (from --set): not a long; want an integer"},
		{"client auth", []string{"ssl.client.auth=maybe"},
			"config: ssl.client.auth=maybe (from --set): not allowed; want one of required, requested, none"},
		{"prefixed client auth", []string{"listener.name.plaintext.ssl.client.auth=maybe"},
			"config: listener.name.plaintext.ssl.client.auth=maybe (from --set): not allowed; want one of required, requested, none"},
		{"super users", []string{"super.users=User:admin;bob"},
			`config: super.users=User:admin;bob (from --set): "bob" is not a principal Type:name; want semicolon-separated principals Type:name, e.g. User:admin;User:CN=broker`},
		{"quota window", []string{"quota.window.num=0"},
			"config: quota.window.num=0 (from --set): out of range; want an integer ≥ 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Load(LoadOptions{Sets: tt.set})
			require.EqualError(t, err, tt.want)
			require.True(t, errors.Is(err, ErrInvalidValue), "errors.Is(ErrInvalidValue)")
		})
	}
}

// TestDescribeListenerKeys: DescribeConfigs of a broker lists the
// listener-prefixed settings that are set, read-only, with the base key as
// a synonym (Kafka's brokerConfigSynonyms), sensitive ones without value.
func TestDescribeListenerKeys(t *testing.T) {
	b := load(t, LoadOptions{ConfigFile: "testdata/security.properties"})
	entries := DescribeBroker(b)
	require.Len(t, entries, len(brokerKeys)+len(b.listenerKeys))
	require.True(t, slicesSortedByName(entries))
	str := func(s string) *string { return &s }

	e := entry(t, entries, "listener.name.internal.ssl.keystore.location")
	require.Equal(t, Entry{Name: e.Name, Value: str("/etc/qk/internal.p12"), Source: ConfigSourceStaticBroker, ReadOnly: true,
		Synonyms: []Synonym{
			syn(e.Name, "/etc/qk/internal.p12", ConfigSourceStaticBroker),
			syn("ssl.keystore.location", "/etc/qk/broker.jks", ConfigSourceStaticBroker),
		}, Type: TypeString, Doc: brokerKeys["ssl.keystore.location"].Doc}, e)

	e = entry(t, entries, "listener.name.client.connections.max.reauth.ms")
	require.Equal(t, []Synonym{
		syn(e.Name, "3600000", ConfigSourceStaticBroker),
		syn("connections.max.reauth.ms", "0", ConfigSourceDefault),
	}, e.Synonyms)

	e = entry(t, entries, "listener.name.client.plain.sasl.jaas.config")
	require.Nil(t, e.Value)
	require.True(t, e.Sensitive)
	require.Equal(t, TypePassword, e.Type)
	require.Equal(t, []Synonym{{Name: e.Name, Source: ConfigSourceStaticBroker}}, e.Synonyms, "sasl.jaas.config is null")

	require.ErrorIs(t, ValidateBrokerConfig("listener.name.internal.ssl.keystore.location", "/new", true), ErrReadOnly)
	require.ErrorIs(t, ValidateBrokerConfig("ssl.keystore.location", "/new", true), ErrReadOnly)
}

func slicesSortedByName(es []Entry) bool {
	for i := 1; i < len(es); i++ {
		if es[i-1].Name >= es[i].Name {
			return false
		}
	}
	return true
}

func TestListenerKeyName(t *testing.T) {
	require.Equal(t, "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", ListenerKeyName("SASL_SSL", "SCRAM-SHA-512", "sasl.jaas.config"))
	require.Equal(t, "listener.name.client.ssl.keystore.location", ListenerKeyName("CLIENT", "", "ssl.keystore.location"))
}

// TestPerListenerKeys: the keys Kafka reads per listener are marked, and
// none other.
func TestPerListenerKeys(t *testing.T) {
	for _, k := range BrokerKeys() {
		want := (strings.HasPrefix(k.Name, "ssl.") || strings.HasPrefix(k.Name, "sasl.") || k.Name == "connections.max.reauth.ms") &&
			k.Name != "sasl.mechanism.inter.broker.protocol"
		require.Equal(t, want, k.PerListener, k.Name)
	}
}
