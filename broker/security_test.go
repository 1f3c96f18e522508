//go:build linux

package broker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/qk-project/qk/broker/brokertest"
)

// lines returns the lines containing every one of subs.
func (s *syncBuffer) lines(subs ...string) []string {
	var out []string
	for line := range strings.Lines(s.String()) {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(line, sub)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// startSASLBroker starts a broker with a PLAINTEXT listener (for set-up)
// and a SASL_PLAINTEXT one with PLAIN and both SCRAMs, and returns it
// with the SASL listener's address. bob has SCRAM credentials.
func startSASLBroker(t *testing.T, logs *syncBuffer, opts ...brokertest.Option) (*brokertest.Broker, string) {
	t.Helper()
	b := brokertest.StartBroker(t, append([]brokertest.Option{
		brokertest.WithConfig("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		brokertest.WithConfig("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
		brokertest.WithConfig("listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS),
		brokertest.WithLogWriter(logs),
	}, opts...)...)
	adm := newAdmin(t, b.Addr)
	_, err := adm.AlterUserSCRAMs(testCtx(t), nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"},
	})
	require.NoError(t, err)
	return b, b.Addrs()[1].String()
}

// TestSASL: clients authenticate on a SASL_PLAINTEXT listener with PLAIN
// (users from the JAAS line) and SCRAM-SHA-256/512 (credentials in
// /config/users), produce and consume; wrong credentials and an unknown
// mechanism are refused with Kafka's errors, and the broker's log names
// the user and the address of each refusal.
func TestSASL(t *testing.T) {
	logs := &syncBuffer{}
	b, saslAddr := startSASLBroker(t, logs)
	createTopic(t, newAdmin(t, b.Addr), "secured", 1, nil)

	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{"PLAIN", kplain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"SCRAM-SHA-256", kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()},
		{"SCRAM-SHA-512", kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t, []string{saslAddr}, kgo.SASL(tc.mech), kgo.DefaultProduceTopic("secured"))
			require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte(tc.name)}).FirstErr())
		})
	}
	recs := consume(t, []string{saslAddr}, "secured", 3, kgo.SASL(kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()))
	require.Equal(t, "PLAIN", string(recs[0].Value))

	for _, tc := range []struct {
		name, user string
		mech       sasl.Mechanism
	}{
		{"PLAIN wrong password", "alice", kplain.Auth{User: "alice", Pass: "wrong-pw"}.AsMechanism()},
		{"PLAIN unknown user", "mallory", kplain.Auth{User: "mallory", Pass: "x"}.AsMechanism()},
		{"SCRAM wrong password", "bob", kscram.Auth{User: "bob", Pass: "wrong-pw"}.AsSha512Mechanism()},
		{"SCRAM for a PLAIN-only user", "alice", kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t, []string{saslAddr}, kgo.SASL(tc.mech), kgo.RequestRetries(0))
			ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
			defer cancel()
			_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
			require.NotContains(t, err.Error(), "wrong-pw")
			waitFor(t, 5*time.Second, "the refusal logged", func() bool {
				return len(logs.lines("authentication failed", "user="+tc.user, "remote=127.0.0.1:")) > 0
			})
		})
	}
	require.NotContains(t, logs.String(), "wrong-pw", "no password in the log")
	require.NotContains(t, logs.String(), "alice-secret")

	// A mechanism the listener does not enable.
	raw := dialRaw(t, saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	raw.roundTrip(hs, hsr)
	require.Equal(t, kerr.UnsupportedSaslMechanism.Code, hsr.ErrorCode)
	require.Equal(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, hsr.SupportedMechanisms)
	require.True(t, raw.closed())
}

// TestSASLBeforeAuthentication: before authenticating, a SASL listener
// answers ApiVersions and the handshake only; any other request, or a
// frame over sasl.server.max.receive.size, closes the connection, and
// a PLAINTEXT listener answers SaslHandshake with ILLEGAL_SASL_STATE.
func TestSASLBeforeAuthentication(t *testing.T) {
	logs := &syncBuffer{}
	b, saslAddr := startSASLBroker(t, logs, brokertest.WithConfig("sasl.server.max.receive.size", "4096"))

	raw := dialRaw(t, saslAddr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	avr := kmsg.NewPtrApiVersionsResponse()
	raw.roundTrip(av, avr)
	require.Equal(t, int16(0), avr.ErrorCode)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	raw.writeFrame(raw.request(md))
	require.True(t, raw.closed(), "Metadata before authentication")
	require.NotEmpty(t, logs.lines("request before SASL authentication", "api=Metadata"))

	raw = dialRaw(t, saslAddr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 1
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	raw.writeFrame(raw.request(auth))
	require.True(t, raw.closed(), "SaslAuthenticate before SaslHandshake")

	raw = dialRaw(t, saslAddr)
	raw.writeFrame(make([]byte, 5000))
	require.True(t, raw.closed(), "a frame over sasl.server.max.receive.size")

	plainConn := dialRaw(t, b.Addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	plainConn.roundTrip(hs, hsr)
	require.Equal(t, kerr.IllegalSaslState.Code, hsr.ErrorCode)
}

// TestSASLHandshakeV0: Kafka 0.10's framing, SaslHandshake v0 then bare
// tokens, for PLAIN and SCRAM; after it the connection serves requests.
func TestSASLHandshakeV0(t *testing.T) {
	_, saslAddr := startSASLBroker(t, &syncBuffer{})
	for _, m := range []sasl.Mechanism{
		kplain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(),
	} {
		raw := dialRaw(t, saslAddr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 0, m.Name()
		hsr := kmsg.NewPtrSASLHandshakeResponse()
		raw.roundTrip(hs, hsr)
		require.Equal(t, int16(0), hsr.ErrorCode)
		session, msg, err := m.Authenticate(context.Background(), saslAddr)
		require.NoError(t, err)
		for done := false; !done; {
			raw.writeFrame(msg)
			resp, err := raw.readFrame()
			require.NoError(t, err, m.Name())
			done, msg, err = session.Challenge(resp)
			require.NoError(t, err)
		}
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		mdr := kmsg.NewPtrMetadataResponse()
		raw.roundTrip(md, mdr)
		require.Len(t, mdr.Brokers, 1, m.Name())
	}
	// A wrong password in v0 framing: the connection closes, no answer.
	raw := dialRaw(t, saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	raw.roundTrip(hs, kmsg.NewPtrSASLHandshakeResponse())
	raw.writeFrame([]byte("\x00alice\x00nope"))
	require.True(t, raw.closed())
}

// TestSASLReauthentication: with connections.max.reauth.ms, SaslAuthenticate
// gives the session's lifetime; a connection that does not
// re-authenticate is closed at its first request after it, and franz-go,
// which re-authenticates, keeps producing across several lifetimes.
func TestSASLReauthentication(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	logs := &syncBuffer{}
	b, saslAddr := startSASLBroker(t, logs, brokertest.WithConfig("listener.name.sasl_plaintext.connections.max.reauth.ms", "1500"),
		brokertest.WithLogLevel(slog.LevelInfo))
	createTopic(t, newAdmin(t, b.Addr), "reauth", 1, nil)

	raw := dialRaw(t, saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	raw.roundTrip(hs, kmsg.NewPtrSASLHandshakeResponse())
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	authr := kmsg.NewPtrSASLAuthenticateResponse()
	raw.roundTrip(auth, authr)
	require.Equal(t, int16(0), authr.ErrorCode)
	require.Equal(t, lifetime.Milliseconds(), authr.SessionLifetimeMillis)
	authenticatedAt := time.Now()

	cl := newClient(t, []string{saslAddr}, kgo.SASL(kplain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.DefaultProduceTopic("reauth"))
	deadline := time.Now().Add(3 * lifetime)
	n := 0
	for time.Now().Before(deadline) {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte{byte(n)}}).FirstErr())
		n++
		time.Sleep(50 * time.Millisecond) // pacing, not synchronisation
	}
	require.Greater(t, n, 10)

	require.Greater(t, time.Since(authenticatedAt), lifetime)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	raw.writeFrame(raw.request(md))
	require.True(t, raw.closed(), "a request after the session's lifetime")
	require.NotEmpty(t, logs.lines("SASL session expired", "principal=User:alice"))
}

// testCA makes a CA and leaf certificates for 127.0.0.1, as PEM.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "qk test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// issue returns a leaf's certificate and PKCS#8 key, PEM.
func (ca *testCA) issue(t *testing.T, subject pkix.Name) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}))
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// TestSSLClientCertificates: an SSL listener with ssl.client.auth=requested
// serves clients with and without a certificate, refuses one from another
// CA, and a SASL_SSL listener authenticates SCRAM over TLS.
func TestSSLListeners(t *testing.T) {
	ca := newTestCA(t)
	cert, key := ca.issue(t, pkix.Name{CommonName: "broker"})
	b := brokertest.StartBroker(t,
		brokertest.WithConfig("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
		brokertest.WithConfig("ssl.keystore.type", "PEM"),
		brokertest.WithConfig("ssl.keystore.key", key),
		brokertest.WithConfig("ssl.keystore.certificate.chain", cert),
		brokertest.WithConfig("ssl.truststore.type", "PEM"),
		brokertest.WithConfig("ssl.truststore.certificates", ca.pem),
		brokertest.WithConfig("listener.name.ssl.ssl.client.auth", "requested"),
		brokertest.WithConfig("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
	)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "tls", 1, nil)
	_, err := adm.AlterUserSCRAMs(testCtx(t), nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}})
	require.NoError(t, err)
	sslAddr, saslSSLAddr := b.Addrs()[1].String(), b.Addrs()[2].String()

	clientCert, clientKey := ca.issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}})
	pair, err := tls.X509KeyPair([]byte(clientCert), []byte(clientKey))
	require.NoError(t, err)
	other := newTestCA(t)
	otherCert, otherKey := other.issue(t, pkix.Name{CommonName: "mallory"})
	otherPair, err := tls.X509KeyPair([]byte(otherCert), []byte(otherKey))
	require.NoError(t, err)

	dialer := func(c *tls.Config) kgo.Opt {
		return kgo.DialTLSConfig(c)
	}
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"no client certificate", &tls.Config{RootCAs: ca.pool()}},
		{"client certificate", &tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{pair}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t, []string{sslAddr}, dialer(tc.cfg), kgo.DefaultProduceTopic("tls"))
			require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte(tc.name)}).FirstErr())
		})
	}
	refused := func(cfg *tls.Config, addr string, opts ...kgo.Opt) {
		t.Helper()
		cl := newClient(t, []string{addr}, append(opts, dialer(cfg), kgo.RequestRetries(0))...)
		ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		require.Error(t, err)
	}
	refused(&tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{otherPair}}, sslAddr)
	refused(&tls.Config{RootCAs: other.pool()}, sslAddr) // does not trust the broker

	scram := kgo.SASL(kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())
	cl := newClient(t, []string{saslSSLAddr}, dialer(&tls.Config{RootCAs: ca.pool()}), scram, kgo.DefaultProduceTopic("tls"))
	require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("sasl_ssl")}).FirstErr())
	refused(&tls.Config{RootCAs: ca.pool()}, saslSSLAddr, kgo.SASL(kscram.Auth{User: "bob", Pass: "nope"}.AsSha512Mechanism()))

	recs := consume(t, []string{sslAddr}, "tls", 3, dialer(&tls.Config{RootCAs: ca.pool()}))
	require.Equal(t, []string{"no client certificate", "client certificate", "sasl_ssl"},
		[]string{string(recs[0].Value), string(recs[1].Value), string(recs[2].Value)})
}

// TestSASLInterBroker: three brokers whose inter-broker listener is
// SASL_PLAINTEXT with PLAIN, and the AclAuthorizer on with the brokers'
// user as the super user: the controller's requests, AlterPartition and
// the followers' fetches all authenticate, so an RF 3 topic has its ISR
// of three and acks=all writes are acknowledged.
func TestSASLInterBroker(t *testing.T) {
	c := brokertest.StartCluster(t, 3,
		brokertest.WithConfig("listeners", "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0"),
		brokertest.WithConfig("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT"),
		brokertest.WithConfig("inter.broker.listener.name", "INTERNAL"),
		brokertest.WithConfig("sasl.enabled.mechanisms", "PLAIN"),
		brokertest.WithConfig("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		brokertest.WithConfig("listener.name.internal.plain.sasl.jaas.config", plainJAAS),
		brokertest.WithAuthorizer(),
		brokertest.WithConfig("super.users", "User:admin;User:ANONYMOUS"),
		brokertest.WithConfig("min.insync.replicas", "2"),
		// The test's end stops the brokers one by one; the last cannot
		// hand its leaderships to anyone.
		brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	adm := newAdmin(t, c.Addrs()...)
	resp, err := adm.CreateTopic(testCtx(t), 3, 3, nil, "internal-sasl")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	cl := newClient(t, c.Addrs(), kgo.DefaultProduceTopic("internal-sasl"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range 30 {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	waitFor(t, 20*time.Second, "ISR of three on every partition", func() bool {
		md, err := adm.Metadata(testCtx(t), "internal-sasl")
		if err != nil {
			return false
		}
		for _, p := range md.Topics["internal-sasl"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	require.Len(t, consume(t, c.Addrs(), "internal-sasl", 30), 30)
}

// TestSSLKeystoreReload: the broker re-reads its key store when the file
// changes, without a restart: a connection made after the file is
// rewritten with a new certificate is served with it, one made before
// keeps working, and a broken rewrite leaves the last good certificate in
// use.
func TestSSLKeystoreReload(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	keystore := filepath.Join(dir, "broker.pem")
	write := func(cn string) {
		t.Helper()
		cert, key := ca.issue(t, pkix.Name{CommonName: cn})
		// Written aside and renamed in, as an operator's tooling would.
		require.NoError(t, os.WriteFile(keystore+".tmp", []byte(key+cert), 0o600))
		require.NoError(t, os.Rename(keystore+".tmp", keystore))
	}
	write("first")
	b := brokertest.StartBroker(t,
		brokertest.WithConfig("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"),
		brokertest.WithConfig("ssl.keystore.type", "PEM"),
		brokertest.WithConfig("ssl.keystore.location", keystore))
	sslAddr := b.Addrs()[1].String()
	served := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", sslAddr, &tls.Config{RootCAs: ca.pool()})
		require.NoError(t, err)
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	require.Equal(t, "first", served())
	before := newClient(t, []string{sslAddr}, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.pool()}))
	require.NoError(t, before.Ping(testCtx(t)))

	write("second")
	waitFor(t, 10*time.Second, "the new certificate served", func() bool { return served() == "second" })
	require.NoError(t, before.Ping(testCtx(t)), "a connection made before the reload goes on")

	require.NoError(t, os.WriteFile(keystore, []byte("not a key store"), 0o600))
	for range 3 { // past the once-a-second check, the last good one stays
		require.Equal(t, "second", served())
		time.Sleep(600 * time.Millisecond) // lets the reload check run; not synchronisation
	}
}
