package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// secureKfake starts a kfake broker on SASL_SSL (SCRAM-SHA-512 user ops)
// with a certificate for 127.0.0.1 from a fresh CA, and returns its
// address and the CA's PEM file.
func secureKfake(t *testing.T, opts ...kfake.Opt) (addr, caFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "qk-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
	require.NoError(t, err)
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "ops", "ops-secret"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	caFile = writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	return c.ListenAddrs()[0], caFile
}

const jaasOps = `org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="ops-secret";`

// Every client command reaches a SASL_SSL broker with the -X settings
// (librdkafka's names), a --command-config or a perf properties file
// (Java's names).
func TestClientCommandsSASLSSL(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("QK_BROKERS", "")
	t.Setenv("QK_PROFILE", "")
	addr, caFile := secureKfake(t, kfake.SeedTopics(1, "orders"))
	x := []string{"-b", addr, "--timeout", "5s",
		"-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + caFile,
		"-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=ops", "-X", "sasl.password=ops-secret"}
	javaProps := "bootstrap.servers=" + addr + "\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" +
		"sasl.jaas.config=" + jaasOps + "\nssl.truststore.location=" + caFile + "\nssl.truststore.type=PEM\n" +
		"ssl.endpoint.identification.algorithm=https\n"
	props := writeFile(t, "client.properties", javaProps)

	t.Run("topic list", func(t *testing.T) {
		out, _, err := runQK(t, append([]string{"topic", "list"}, x...)...)
		require.NoError(t, err)
		require.Contains(t, out, "orders")
	})
	t.Run("produce and consume", func(t *testing.T) {
		root := newRootCmd(new(strings.Builder), new(strings.Builder))
		root.SetArgs(append([]string{"produce", "orders"}, x...))
		root.SetIn(strings.NewReader("one\ntwo\n"))
		require.NoError(t, root.Execute())
		out, _, err := runQK(t, append([]string{"consume", "orders", "-o", "start", "-n", "2"}, x...)...)
		require.NoError(t, err)
		require.Equal(t, "one\ntwo\n", out)
	})
	t.Run("top", func(t *testing.T) {
		out, _, err := runQK(t, append([]string{"top", "--once", "--format", "json"}, x...)...)
		require.NoError(t, err)
		require.Contains(t, out, `"orders"`)
	})
	t.Run("reassign-partitions --command-config", func(t *testing.T) {
		out, _, err := runQK(t, "reassign-partitions", "--command-config", props, "--list")
		require.NoError(t, err)
		require.Equal(t, "No partition reassignments found.\n", out)
	})
	t.Run("perf produce --producer.config", func(t *testing.T) {
		_, _, err := runQK(t, "perf", "produce", "--topic", "orders", "--num-records", "10", "--record-size", "10",
			"--throughput", "-1", "--producer.config", props, "--timeout", "5s")
		require.NoError(t, err)
	})
	t.Run("perf produce --producer-props", func(t *testing.T) {
		_, _, err := runQK(t, "perf", "produce", "--topic", "orders", "--num-records", "10", "--record-size", "10",
			"--throughput", "-1", "--bootstrap-server", addr, "--timeout", "5s", "--producer-props",
			"security.protocol=sasl_ssl", "ssl.ca.location="+caFile, "sasl.mechanism=SCRAM-SHA-512",
			"sasl.username=ops", "sasl.password=ops-secret")
		require.NoError(t, err)
	})
	t.Run("perf consume --consumer.config", func(t *testing.T) {
		out, _, err := runQK(t, "perf", "consume", "--topic", "orders", "--messages", "10", "--consumer.config", props,
			"--request-timeout", "5s", "--hide-header")
		require.NoError(t, err)
		require.Contains(t, out, ", 10, ")
	})
	t.Run("without the settings", func(t *testing.T) {
		_, _, err := runQK(t, "topic", "list", "-b", addr, "--timeout", "2s")
		require.ErrorContains(t, err, "cannot reach cluster")
	})
}

// Secrets never show in what a command prints, errors included.
func TestClientSecretsNeverPrinted(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("QK_BROKERS", "")
	t.Setenv("QK_PROFILE", "")
	const secret = "Very-S3cret"
	dead := freeAddr(t)
	badJAAS := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" ` + secret + `;`
	wrongModule := `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";`
	javaProps := writeFile(t, "bad.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="+badJAAS+"\n")
	wrongProps := writeFile(t, "wrong.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="+wrongModule+"\n")
	sslProps := writeFile(t, "ssl.properties", "security.protocol=SSL\nssl.keystore.location=/nonexistent/ks.pem\nssl.key.password="+secret+"\n")
	prod := []string{"perf", "produce", "--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1", "-b", dead}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-X jaas", []string{"topic", "list", "-b", dead, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.jaas.config=" + badJAAS}, "sasl.jaas.config: option 2 of the login module is not key=value"},
		{"-X no user", []string{"group", "list", "-b", dead, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=PLAIN", "-X", "sasl.password=" + secret}, "needs sasl.username"},
		{"-X typo", []string{"config", "describe", "--topic", "t", "-b", dead, "-X", "sasl.password:" + secret}, "want key=value"},
		{"command-config", []string{"reassign-partitions", "--command-config", javaProps, "--list", "-b", dead}, "option 2 of the login module"},
		{"command-config module", []string{"reassign-partitions", "--command-config", wrongProps, "--list", "-b", dead}, "takes the login module org.apache.kafka.common.security.scram.ScramLoginModule"},
		{"command-config keystore", []string{"reassign-partitions", "--command-config", sslProps, "--list", "-b", dead}, "ssl.keystore.location: open /nonexistent/ks.pem"},
		{"producer props", append(prod, "--producer-props", "security.protocol=sasl_ssl", "sasl.mechanism=PLAIN", "sasl.jaas.config="+badJAAS), "option 2 of the login module"},
		{"producer props truststore", append(prod, "--producer-props", "security.protocol=ssl", "ssl.truststore.type=JKS", "ssl.truststore.password="+secret), `producer properties: ssl.truststore.type "JKS": qk reads PEM only`},
		{"consumer config", []string{"perf", "consume", "--topic", "t", "--messages", "1", "--consumer.config", javaProps, "-b", dead}, "option 2 of the login module"},
		{"top", []string{"top", "--once", "-b", dead, "-X", "security.protocol=ssl", "-X", "ssl.key.pem=" + secret}, "ssl.key.pem is set but no client certificate"},
		{"user", []string{"user", "describe", "-b", dead, "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=u", "-X", "sasl.password=" + secret}, "security.protocol is not set (plaintext): want sasl_plaintext or sasl_ssl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runQK(t, tc.args...)
			require.ErrorContains(t, err, tc.want)
			for _, s := range []string{out, errOut, err.Error()} {
				require.NotContains(t, s, secret)
			}
		})
	}
}

// applyCommandConfig takes Java's security names into the client settings;
// -X still wins, and a property qk cannot honour is refused.
func TestCommandConfigSecurity(t *testing.T) {
	cmd := newReassignPartitionsCmd()
	require.NoError(t, cmd.ParseFlags([]string{"-X", "sasl.mechanism=SCRAM-SHA-256"}))
	var conn perfConn
	conn.Settings = []string{"sasl.mechanism=SCRAM-SHA-256"}
	props := writeFile(t, "admin.properties", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config="+jaasOps+"\nssl.truststore.location=/ca.pem\n")
	_, err := applyCommandConfig(cmd.Flags(), &conn.Options, props)
	require.NoError(t, err)
	require.Equal(t, []string{"sasl.jaas.config=" + jaasOps, "sasl.mechanism=PLAIN", "security.protocol=SASL_SSL",
		"ssl.truststore.location=/ca.pem", "sasl.mechanism=SCRAM-SHA-256"}, conn.Settings)

	props = writeFile(t, "kerberos.properties", "sasl.kerberos.service.name=kafka\n")
	_, err = applyCommandConfig(cmd.Flags(), &conn.Options, props)
	require.ErrorContains(t, err, `admin client property "sasl.kerberos.service.name" is not supported by qk`)
	require.ErrorContains(t, err, "security.protocol, sasl.mechanism")
}
