//go:build integration

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/qk-project/qk/internal/zktest"
)

// pki is a test CA that writes PEM files as Kafka's PEM key stores take
// them: one file with the PKCS#8 key followed by the certificate chain.
type pki struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CAFile is the CA certificate, the trust store.
	CAFile string
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{t: t, dir: dir, key: key, CAFile: filepath.Join(dir, "ca.pem")}
	p.cert, _ = x509.ParseCertificate(der)
	p.write("ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return p
}

func (p *pki) write(name string, b []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// issue makes a certificate for 127.0.0.1 with the given common name and
// returns the paths of its key store (key, then certificate and CA), its
// certificate and its key, as kcat wants them.
func (p *pki) issue(cn string) (keystore, certFile, keyFile string) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"qk"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.cert.Raw})
	return p.write(cn+"-keystore.pem", slicesConcat(keyPEM, certPEM, caPEM)),
		p.write(cn+".crt", certPEM), p.write(cn+".key", keyPEM)
}

func slicesConcat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func (p *pki) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.cert)
	return pool
}

// secureBroker is one broker of TestSecureCluster with its listeners.
type secureBroker struct {
	*broker
	// host:port of the SSL listener (client certificates requested), the
	// MTLS one (an SSL listener that requires them) and SASL_SSL.
	ssl, mtls, saslSSL string
}

// TestSecureCluster: three qk processes on a real ZooKeeper whose
// inter-broker listener is SSL (replication and controller traffic over
// TLS, each broker presenting its certificate, its DN a super user of
// the AclAuthorizer); clients use an SSL listener with
// ssl.client.auth=requested, one that requires certificates, and a
// SASL_SSL listener with SCRAM-SHA-512. ACLs made with qk acl let alice
// (SCRAM) produce but not consume and kcat's certificate consume.
// franz-go and kcat produce and consume over them, with and without a
// client certificate; a wrong certificate, password or mechanism is
// refused; qk's own tools connect with -X settings.
func TestSecureCluster(t *testing.T) {
	kcat := requireKcat(t)
	ca := newPKI(t, "cluster")
	zk := zktest.Start(t)
	var bs []*secureBroker
	for i := range 3 {
		keystore, _, _ := ca.issue("broker" + strconv.Itoa(i))
		b := &secureBroker{}
		b.ssl, b.mtls, b.saslSSL = freeAddr(t), freeAddr(t), freeAddr(t)
		b.broker = startBroker(t, func(bb *broker) {
			bb.addr = freeAddr(t) // fixed before the start: the listeners name it
			withSet(
				"listeners=PLAINTEXT://"+bb.addr+",SSL://"+b.ssl+",MTLS://"+b.mtls+",SASL_SSL://"+b.saslSSL,
				"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
				"listener.name.mtls.ssl.client.auth=required",
				"inter.broker.listener.name=SSL",
				"broker.id="+strconv.Itoa(i),
				"zookeeper.connect="+zk.Addr()+"/secure",
				"zookeeper.session.timeout.ms=6000",
				"offsets.topic.replication.factor=3",
				"min.insync.replicas=2",
				"ssl.keystore.type=PEM",
				"ssl.keystore.location="+keystore,
				"ssl.truststore.type=PEM",
				"ssl.truststore.location="+ca.CAFile,
				"listener.name.ssl.ssl.client.auth=requested",
				"sasl.enabled.mechanisms=SCRAM-SHA-512",
				// ACLs on: the brokers (by their certificates' DNs) and
				// the PLAINTEXT set-up connections are super users.
				"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
				"super.users=User:CN=broker0,O=qk;User:CN=broker1,O=qk;User:CN=broker2,O=qk;User:ANONYMOUS",
			)(bb)
		})
		bs = append(bs, b)
	}
	// The three see each other (over the controller's SSL channel).
	waitUntil(t, 30*time.Second, "three brokers in the metadata", func() bool {
		md, err := bs[2].admin().BrokerMetadata(ctxFor(t, 5*time.Second))
		return err == nil && len(md.Brokers) == 3
	})
	adm := bs[0].admin()
	if _, err := adm.AlterUserSCRAMs(ctxFor(t, 10*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"}}); err != nil {
		t.Fatal(err)
	}
	const topic = "secure"
	for _, name := range []string{topic, "replicated"} {
		if _, err := adm.CreateTopic(ctxFor(t, 10*time.Second), 3, 3, nil, name); err != nil {
			t.Fatal(err)
		}
	}

	// ACLs with qk acl: alice produces (SCRAM), kcat's certificate reads.
	for _, args := range [][]string{
		{"--add", "--allow-principal", "User:alice", "--producer", "--topic", "replicated", "--topic", topic},
		{"--add", "--allow-principal", "User:CN=kcat,O=qk", "--operation", "Read", "--operation", "Describe", "--topic", "replicated"},
		{"--add", "--allow-principal", "User:alice", "--operation", "DescribeConfigs", "--topic", "replicated"},
	} {
		out := runCmd(t, 30*time.Second, nil, qkBin, append([]string{"acl", "-b", bs[0].addr}, args...)...)
		if !strings.Contains(string(out), "Adding ACLs for resource") {
			t.Fatalf("qk acl %v:\n%s", args, out)
		}
	}
	tlsCfg := &tls.Config{RootCAs: ca.pool()}
	scramAlice := kgo.SASL(kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	seeds := func(sasl bool) kgo.Opt {
		var s []string
		for _, b := range bs {
			if sasl {
				s = append(s, b.saslSSL)
			} else {
				s = append(s, b.ssl)
			}
		}
		return kgo.SeedBrokers(s...)
	}
	newCl := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	// franz-go over SASL_SSL, acks=all on RF 3 replicated over SSL.
	prod := newCl(seeds(true), kgo.DialTLSConfig(tlsCfg), scramAlice, kgo.DefaultProduceTopic("replicated"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	const n = 300
	for i := range n {
		if err := prod.ProduceSync(ctxFor(t, 10*time.Second), &kgo.Record{Value: []byte("rec-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d over SASL_SSL: %v", i, err)
		}
	}
	// Every partition's ISR holds all three: followers fetched over SSL.
	waitUntil(t, 30*time.Second, "ISR of three everywhere", func() bool {
		md, err := adm.Metadata(ctxFor(t, 5*time.Second), "replicated")
		if err != nil {
			return false
		}
		for _, p := range md.Topics["replicated"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})

	// alice may not read what she wrote: no READ ACL.
	aliceCons := newCl(seeds(true), kgo.DialTLSConfig(tlsCfg), scramAlice, kgo.ConsumeTopics("replicated"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	denied := false
	pctx, pcancel := context.WithTimeout(context.Background(), 15*time.Second)
	for !denied && pctx.Err() == nil {
		fs := aliceCons.PollFetches(pctx)
		if len(fs.Records()) > 0 {
			t.Fatal("alice read records without a READ ACL")
		}
		fs.EachError(func(_ string, _ int32, err error) { denied = denied || errorsIs(err, kerr.TopicAuthorizationFailed) })
	}
	pcancel()
	if !denied {
		t.Fatal("alice's consumer was not told TOPIC_AUTHORIZATION_FAILED")
	}

	// kcat over SSL without and with a client certificate reads them all:
	// anonymous is a super user here, the certificate's DN has READ.
	_, kcatCert, kcatKey := ca.issue("kcat")
	for _, withCert := range []bool{false, true} {
		args := []string{"-C", "-b", bs[1].ssl, "-t", "replicated", "-o", "beginning", "-e", "-q", "-f", "%s\n",
			"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + ca.CAFile}
		if withCert {
			args = append(args, "-X", "ssl.certificate.location="+kcatCert, "-X", "ssl.key.location="+kcatKey)
		}
		out := runCmd(t, 60*time.Second, nil, kcat, args...)
		if got := strings.Count(string(out), "rec-"); got != n {
			t.Fatalf("kcat over SSL (client certificate %v) read %d of %d records", withCert, got, n)
		}
	}
	// kcat produces over SASL_SSL with SCRAM-SHA-512; franz-go reads over SSL.
	runCmd(t, 60*time.Second, []byte("from-kcat-1\nfrom-kcat-2\n"), kcat, "-P", "-b", bs[2].saslSSL, "-t", topic, "-p", "0",
		"-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-X", "ssl.ca.location="+ca.CAFile)
	cons := newCl(seeds(false), kgo.DialTLSConfig(tlsCfg), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	ctx := ctxFor(t, 30*time.Second)
	for len(got) < 2 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if fmt.Sprint(got) != "[from-kcat-1 from-kcat-2]" {
		t.Fatalf("franz-go over SSL read %q", got)
	}

	// Refusals.
	refused := func(what string, wantErr error, opts ...kgo.Opt) {
		t.Helper()
		cl := newCl(append(opts, kgo.RequestRetries(0))...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err == nil {
			t.Fatalf("%s: served", what)
		}
		if wantErr != nil && !errorsIs(err, wantErr) {
			t.Fatalf("%s: %v, want %v", what, err, wantErr)
		}
	}
	refused("wrong password", kerr.SaslAuthenticationFailed, seeds(true), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(kscram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism()))
	refused("mechanism not enabled", kerr.UnsupportedSaslMechanism, seeds(true), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()))
	other := newPKI(t, "other")
	_, otherCert, otherKey := other.issue("mallory")
	pair, err := tls.LoadX509KeyPair(otherCert, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	// On the listener that requires client certificates: one from another
	// CA (sent even though the broker asks for its own CA's), and none.
	mtls := kgo.SeedBrokers(bs[0].mtls)
	refused("certificate from another CA", nil, mtls, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.pool(),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }}))
	refused("no client certificate where one is required", nil, mtls, kgo.DialTLSConfig(tlsCfg))
	_, goodCert, goodKey := ca.issue("franz")
	goodPair, err := tls.LoadX509KeyPair(goodCert, goodKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t, 10*time.Second),
		newCl(mtls, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{goodPair}}))); err != nil {
		t.Fatalf("a client certificate from the cluster's CA on the MTLS listener: %v", err)
	}
	refused("client that does not trust the brokers", nil, seeds(false), kgo.DialTLSConfig(&tls.Config{RootCAs: other.pool()}))
	kc := exec.Command(kcat, "-L", "-b", bs[0].ssl, "-m", "5", "-X", "security.protocol=ssl", "-X", "ssl.ca.location="+other.CAFile)
	if out, err := kc.CombinedOutput(); err == nil {
		t.Fatalf("kcat trusting another CA listed the cluster:\n%s", out)
	}

	// qk's tools over SASL_SSL with -X.
	out := runCmd(t, 30*time.Second, nil, qkBin, "topic", "describe", "replicated", "-b", bs[0].saslSSL,
		"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=alice",
		"-X", "sasl.password=alice-secret", "-X", "ssl.ca.location="+ca.CAFile)
	if !strings.Contains(string(out), "replicated") || strings.Contains(string(out), "alice-secret") {
		t.Fatalf("qk topic describe over SASL_SSL:\n%s", out)
	}
	// A client quota altered through one broker is enforced by all three
	// within 15 s: ZooKeeper's /config/changes reaches every cache.
	runCmd(t, 30*time.Second, nil, qkBin, "config", "alter", "--entity-type", "clients", "--entity-name", "limited",
		"--add-config", "producer_byte_rate=1024", "-b", bs[0].addr)
	altered := time.Now()
	hook := &throttleHook{by: map[int32]bool{}}
	limited := newCl(seeds(true), kgo.DialTLSConfig(tlsCfg), scramAlice, kgo.ClientID("limited"), kgo.WithHooks(hook),
		kgo.DefaultProduceTopic("replicated"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	value := make([]byte, 4096)
	for i := 0; hook.count() < 3 && time.Since(altered) < 15*time.Second && i < 300; i++ {
		limited.Produce(context.Background(), &kgo.Record{Value: value}, nil)
		time.Sleep(50 * time.Millisecond) // pacing; the hook is what is waited for
	}
	if n := hook.count(); n < 3 {
		t.Fatalf("%d of 3 brokers throttled the limited client within 15 s of the quota change", n)
	}
	t.Logf("every broker throttled the limited client %v after the quota change", time.Since(altered).Round(time.Millisecond))

	for _, b := range bs {
		if strings.Contains(b.log(), "alice-secret") {
			t.Fatalf("a broker logged the password")
		}
	}
}

// throttleHook records which brokers answered with a throttle time.
type throttleHook struct {
	mu sync.Mutex
	by map[int32]bool
}

func (h *throttleHook) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d <= 0 {
		return
	}
	h.mu.Lock()
	h.by[meta.NodeID] = true
	h.mu.Unlock()
}

func (h *throttleHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.by)
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
