package admin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// testPKI is a CA and certificates it signed, as PEM files in a temp dir.
type testPKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
}

func newPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &testPKI{dir: t.TempDir(), ca: ca, caKey: key}
	p.caFile = p.write(t, name+"-ca.pem", pemOf("CERTIFICATE", der))
	return p
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func (p *testPKI) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// issue signs a certificate for the host names or IPs; it returns the
// certificate and key as PEM.
func (p *testPKI) issue(t *testing.T, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pemOf("CERTIFICATE", der), pemOf("PRIVATE KEY", kder)
}

func (p *testPKI) serverTLS(t *testing.T, hosts ...string) *tls.Config {
	t.Helper()
	c, k := p.issue(t, hosts...)
	cert, err := tls.X509KeyPair(c, k)
	require.NoError(t, err)
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// startKfake starts a one-broker fake cluster with the options.
func startKfake(t *testing.T, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// dialWith connects to addr with the -X settings.
func dialWith(t *testing.T, addr string, settings ...string) error {
	t.Helper()
	o := Options{Brokers: []string{addr}, Timeout: 3 * time.Second, Settings: settings, resolved: true}
	c, err := o.Dial(context.Background())
	if err == nil {
		c.Close()
	}
	return err
}

func TestSecurityTLS(t *testing.T) {
	pki, other := newPKI(t, "qk-test"), newPKI(t, "other")
	good := startKfake(t, kfake.TLS(pki.serverTLS(t, "127.0.0.1", "localhost")))
	wrongName := startKfake(t, kfake.TLS(pki.serverTLS(t, "broker.example")))
	for _, tc := range []struct {
		name     string
		addr     string
		settings []string
		want     string // error text; empty: connects
	}{
		{"librdkafka ca", good, []string{"security.protocol=SSL", "ssl.ca.location=" + pki.caFile}, ""},
		{"java truststore", good, []string{"security.protocol=ssl", "ssl.truststore.location=" + pki.caFile, "ssl.truststore.type=PEM"}, ""},
		{"ca directory", good, []string{"security.protocol=ssl", "ssl.ca.location=" + pki.dir}, ""},
		{"wrong ca", good, []string{"security.protocol=ssl", "ssl.ca.location=" + other.caFile}, "certificate signed by unknown authority"},
		{"system roots", good, []string{"security.protocol=ssl"}, "certificate signed by unknown authority"},
		{"wrong ca, no check", good, []string{"security.protocol=ssl", "ssl.ca.location=" + other.caFile, "enable.ssl.certificate.verification=false"}, ""},
		{"wrong host", wrongName, []string{"security.protocol=ssl", "ssl.ca.location=" + pki.caFile}, "x509: cannot validate certificate for 127.0.0.1"},
		{"wrong host, librdkafka none", wrongName, []string{"security.protocol=ssl", "ssl.ca.location=" + pki.caFile, "ssl.endpoint.identification.algorithm=none"}, ""},
		{"wrong host, java empty", wrongName, []string{"security.protocol=ssl", "ssl.ca.location=" + pki.caFile, "ssl.endpoint.identification.algorithm="}, ""},
		{"wrong host and ca, name check off", wrongName, []string{"security.protocol=ssl", "ssl.ca.location=" + other.caFile, "ssl.endpoint.identification.algorithm=none"}, "certificate signed by unknown authority"},
		{"plaintext to a tls broker", good, nil, "cannot reach cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dialWith(t, tc.addr, tc.settings...)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestSecurityClientCertificate(t *testing.T) {
	pki := newPKI(t, "qk-test")
	srv := pki.serverTLS(t, "127.0.0.1")
	srv.ClientAuth = tls.RequireAndVerifyClientCert
	srv.ClientCAs = x509.NewCertPool()
	srv.ClientCAs.AddCert(pki.ca)
	addr := startKfake(t, kfake.TLS(srv))
	c, k := pki.issue(t, "client")
	certFile, keyFile := pki.write(t, "client.pem", c), pki.write(t, "client.key", k)
	keystore := pki.write(t, "keystore.pem", append(append([]byte{}, k...), c...))
	base := []string{"security.protocol=ssl", "ssl.ca.location=" + pki.caFile}

	require.NoError(t, dialWith(t, addr, append(base, "ssl.certificate.location="+certFile, "ssl.key.location="+keyFile)...))
	require.NoError(t, dialWith(t, addr, append(base, "ssl.keystore.location="+keystore, "ssl.keystore.type=PEM")...))
	require.NoError(t, dialWith(t, addr, append(base, "ssl.keystore.certificate.chain="+string(c), "ssl.keystore.key="+string(k))...))
	require.Error(t, dialWith(t, addr, base...), "the broker wants a client certificate")

	_, otherKey := pki.issue(t, "other")
	err := dialWith(t, addr, append(base, "ssl.certificate.location="+certFile, "ssl.key.pem="+string(otherKey))...)
	require.ErrorContains(t, err, "private key does not match public key")
	require.NotContains(t, err.Error(), string(otherKey))
}

func TestSecuritySASL(t *testing.T) {
	pki := newPKI(t, "qk-test")
	plainAddr := startKfake(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "alice", "alice-secret"))
	scramAddr := startKfake(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "bob", "bob-secret"))
	sslAddr := startKfake(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "carol", "carol-secret"),
		kfake.TLS(pki.serverTLS(t, "127.0.0.1")))
	for _, tc := range []struct {
		name     string
		addr     string
		settings []string
		want     string
	}{
		{"plain librdkafka", plainAddr, []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN", "sasl.username=alice", "sasl.password=alice-secret"}, ""},
		{"plain java", plainAddr, []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN",
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`}, ""},
		{"plain wrong password", plainAddr, []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", "sasl.username=alice", "sasl.password=nope"}, "cannot reach cluster"}, // kfake hangs up
		{"scram-sha-512 java", scramAddr, []string{"security.protocol=sasl_plaintext", "sasl.mechanism=scram-sha-512",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-secret";`}, ""},
		{"scram wrong mechanism", scramAddr, []string{"security.protocol=sasl_plaintext", "sasl.mechanism=SCRAM-SHA-256", "sasl.username=bob", "sasl.password=bob-secret"}, "cannot reach cluster"},
		{"scram-sha-256 over tls", sslAddr, []string{"security.protocol=sasl_ssl", "ssl.ca.location=" + pki.caFile, "sasl.mechanism=SCRAM-SHA-256", "sasl.username=carol", "sasl.password=carol-secret"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dialWith(t, tc.addr, tc.settings...)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The mechanism each setting builds, by its Name(), without a broker.
func TestSecurityMechanismName(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]string
		want     string
	}{
		{map[string]string{"sasl.mechanism": "plain", "sasl.username": "u", "sasl.password": "p"}, "PLAIN"},
		{map[string]string{"sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "u", "sasl.password": "p"}, "SCRAM-SHA-256"},
		{map[string]string{"sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`}, "SCRAM-SHA-512"},
	} {
		var s Security
		_, err := s.Set("security.protocol", "sasl_plaintext")
		require.NoError(t, err)
		for k, v := range tc.settings {
			ok, err := s.Set(k, v)
			require.True(t, ok, k)
			require.NoError(t, err)
		}
		m, err := s.mechanism()
		require.NoError(t, err)
		require.Equal(t, tc.want, m.Name())
	}
}

const secret = "s3cr3t-Pa55"

// Every error about the settings names the key and what is wrong, and
// never shows a secret.
func TestSecuritySettingErrors(t *testing.T) {
	dir := t.TempDir()
	encKey := filepath.Join(dir, "enc.key")
	require.NoError(t, os.WriteFile(encKey, pemOf("ENCRYPTED PRIVATE KEY", []byte("x")), 0o600))
	cert := filepath.Join(dir, "c.pem")
	pki := newPKI(t, "x")
	c, _ := pki.issue(t, "c")
	require.NoError(t, os.WriteFile(cert, c, 0o600))
	notPEM := filepath.Join(dir, "store.jks")
	require.NoError(t, os.WriteFile(notPEM, []byte{0xfe, 0xed, 0xfe, 0xed}, 0o600))
	jaas := func(s string) string { return "sasl.jaas.config=" + s }
	for _, tc := range []struct {
		name     string
		settings []string
		want     string
	}{
		{"bad protocol", []string{"security.protocol=tls"}, `security.protocol "tls": want plaintext, ssl, sasl_plaintext or sasl_ssl`},
		{"bad mechanism", []string{"sasl.mechanism=GSSAPI"}, `sasl.mechanism "GSSAPI": want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{"no mechanism", []string{"security.protocol=sasl_ssl"}, "security.protocol=sasl_ssl needs sasl.mechanism"},
		{"no username", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", "sasl.password=" + secret}, "sasl.mechanism=PLAIN needs sasl.username"},
		{"no password", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", "sasl.username=u"}, "sasl.mechanism=PLAIN needs sasl.password"},
		{"sasl without protocol", []string{"sasl.mechanism=PLAIN", "sasl.username=u", "sasl.password=" + secret}, "sasl.mechanism is set but security.protocol is not set (plaintext): want sasl_plaintext or sasl_ssl"},
		{"ssl without protocol", []string{"ssl.truststore.location=/x"}, "ssl.truststore.location is set but security.protocol is not set (plaintext): want ssl or sasl_ssl"},
		{"both logins", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", "sasl.username=u", jaas(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";`)}, "sasl.jaas.config and sasl.username/sasl.password are both set"},
		{"jaas no semicolon", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", jaas(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `"`)}, "missing the ';'"},
		{"jaas no flag", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", jaas(`org.apache.kafka.common.security.plain.PlainLoginModule password="` + secret + `";`)}, "control flag"},
		{"jaas bare option", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", jaas(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" ` + secret + `;`)}, "option 2 of the login module is not key=value"},
		{"jaas open quote", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", jaas(`org.apache.kafka.common.security.plain.PlainLoginModule required password="` + secret + `;`)}, "unterminated"},
		{"jaas wrong module", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=SCRAM-SHA-256", jaas(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";`)}, "takes the login module org.apache.kafka.common.security.scram.ScramLoginModule"},
		{"jaas no password", []string{"security.protocol=sasl_plaintext", "sasl.mechanism=PLAIN", jaas(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" passwd="` + secret + `";`)}, `no password="..." option`},
		{"malformed -X", []string{"sasl.password:" + secret}, "want key=value"},
		{"jks truststore", []string{"security.protocol=ssl", "ssl.truststore.type=JKS"}, `ssl.truststore.type "JKS": qk reads PEM only`},
		{"not pem", []string{"security.protocol=ssl", "ssl.truststore.location=" + notPEM}, "no PEM certificates"},
		{"missing ca file", []string{"security.protocol=ssl", "ssl.ca.location=/nonexistent/ca.pem"}, "ssl.ca.location: stat /nonexistent/ca.pem"},
		{"truststore password", []string{"security.protocol=ssl", "ssl.truststore.password=" + secret}, "ssl.truststore.password: a PEM truststore has no password"},
		{"keystore password", []string{"security.protocol=ssl", "ssl.keystore.password=" + secret}, "ssl.keystore.password: a PEM keystore has no password"},
		{"key without cert", []string{"security.protocol=ssl", "ssl.key.pem=" + secret}, "ssl.key.pem is set but no client certificate"},
		{"bad inline key", []string{"security.protocol=ssl", "ssl.certificate.location=" + cert, "ssl.key.pem=" + secret}, "ssl.key.pem: no PEM private key"},
		{"encrypted key", []string{"security.protocol=ssl", "ssl.certificate.location=" + cert, "ssl.key.location=" + encKey, "ssl.key.password=" + secret}, "encrypted private keys are not supported yet"},
		{"encrypted key, no password", []string{"security.protocol=ssl", "ssl.certificate.location=" + cert, "ssl.key.location=" + encKey}, "set ssl.key.password"},
		{"bad verification", []string{"enable.ssl.certificate.verification=maybe"}, `enable.ssl.certificate.verification "maybe": want true or false`},
		{"bad identification", []string{"ssl.endpoint.identification.algorithm=http"}, `ssl.endpoint.identification.algorithm "http"`},
		{"unknown lists security keys", []string{"ssl.cafile=x"}, "unknown client setting (client.id, dial.timeout, retries, security.protocol, sasl.mechanism,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Brokers: []string{"127.0.0.1:1"}, Timeout: time.Second, Settings: tc.settings, resolved: true}
			_, err := o.kgoOpts()
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), secret)
		})
	}
}

func TestRedact(t *testing.T) {
	require.Equal(t, Hidden, Redact("sasl.password", secret))
	require.Equal(t, Hidden, Redact("sasl.jaas.config", secret))
	require.Equal(t, Hidden, Redact("ssl.key.password", secret))
	require.Equal(t, Hidden, Redact("ssl.keystore.key", secret))
	require.Equal(t, "u", Redact("sasl.username", "u"))
	require.Equal(t, "x", Redact("client.id", "x"))
}

func TestProfileSecurity(t *testing.T) {
	pki := newPKI(t, "qk-test")
	addr := startKfake(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "ops", "ops-secret"),
		kfake.TLS(pki.serverTLS(t, "127.0.0.1")))
	setup(t, `current: prod
profiles:
  prod:
    brokers: [`+addr+`]
    client:
      security.protocol: SASL_SSL
      sasl.mechanism: SCRAM-SHA-512
      sasl.jaas.config: org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="wrong";
      ssl.ca.location: `+pki.caFile+`
`)
	// -X wins over the profile.
	o, err := resolved(t, "--timeout", "3s", "-X", `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="ops-secret";`)
	require.NoError(t, err)
	c, err := o.Dial(context.Background())
	require.NoError(t, err)
	c.Close()

	o, err = resolved(t, "--timeout", "3s")
	require.NoError(t, err)
	_, err = o.Dial(context.Background())
	require.ErrorContains(t, err, "cannot reach cluster")
	require.NotContains(t, err.Error(), "wrong")
}

func TestProfileSecretNeverQuoted(t *testing.T) {
	for name, value := range map[string]string{
		"list": "[" + secret + "]",
		"map":  "{" + secret + ": x}",
	} {
		t.Run(name, func(t *testing.T) {
			setup(t, "current: a\nprofiles:\n  a:\n    client:\n      sasl.password: "+value+"\n")
			_, err := resolved(t)
			require.ErrorContains(t, err, "profile a: client sasl.password: want a string")
			require.NotContains(t, err.Error(), secret)
		})
	}
}
