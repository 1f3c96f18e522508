package tlsconfig

import (
	"crypto"
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
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/youmark/pkcs8"
)

// issued is a certificate with its key, and the PEM of both.
type issued struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var serial atomic.Int64

func (i issued) certPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.cert.Raw}))
}

// keyPEM is PKCS#8, encrypted (PBES2, AES-256-CBC) when password is set.
func (i issued) keyPEM(t *testing.T, password string) string {
	t.Helper()
	if password == "" {
		der, err := x509.MarshalPKCS8PrivateKey(i.key)
		require.NoError(t, err)
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	der, err := pkcs8.MarshalPrivateKey(i.key, []byte(password), &pkcs8.Opts{
		Cipher:  pkcs8.AES256CBC,
		KDFOpts: pkcs8.PBKDF2Opts{SaltSize: 16, IterationCount: 1000, HMACHash: crypto.SHA256},
	})
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}))
}

func newCA(t *testing.T, cn string) issued {
	t.Helper()
	return issue(t, issued{}, pkix.Name{CommonName: cn, Organization: []string{"qk"}}, func(c *x509.Certificate) {
		c.IsCA = true
		c.BasicConstraintsValid = true
		c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	})
}

// issue makes a certificate signed by ca (self-signed when ca is zero).
func issue(t *testing.T, ca issued, subject pkix.Name, edit func(*x509.Certificate)) issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if edit != nil {
		edit(tmpl)
	}
	parent, signer := tmpl, key
	if ca.cert != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return issued{cert: cert, key: key}
}

func serverCert(t *testing.T, ca issued, cn string) issued {
	return issue(t, ca, pkix.Name{CommonName: cn, Organization: []string{"qk"}}, func(c *x509.Certificate) {
		c.DNSNames = []string{"localhost"}
		c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
}

func clientCert(t *testing.T, ca issued) issued {
	return issue(t, ca, pkix.Name{CommonName: "client", OrganizationalUnit: []string{"eng"}, Organization: []string{"qk"}, Country: []string{"US"}}, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
}

// writePEMKeystore writes key then chain, as a Kafka PEM keystore file.
func writePEMKeystore(t *testing.T, path string, leaf issued, password string, chain ...issued) {
	t.Helper()
	s := leaf.keyPEM(t, password) + leaf.certPEM()
	for _, c := range chain {
		s += c.certPEM()
	}
	writeFile(t, path, s)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write and rename, as a deployment would, so a handshake never reads
	// a half-written file in the tests that do not want one.
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// pemServer writes a PEM keystore (and a PEM truststore of trust, if
// any) to a temp dir and returns settings naming them.
func pemServer(t *testing.T, leaf issued, trust ...issued) Settings {
	t.Helper()
	dir := t.TempDir()
	s := Settings{KeystoreType: "PEM", KeystoreLocation: filepath.Join(dir, "keystore.pem")}
	writePEMKeystore(t, s.KeystoreLocation, leaf, "")
	if len(trust) > 0 {
		s.TruststoreType, s.TruststoreLocation = "PEM", filepath.Join(dir, "truststore.pem")
		var b strings.Builder
		for _, c := range trust {
			b.WriteString(c.certPEM())
		}
		writeFile(t, s.TruststoreLocation, b.String())
	}
	return s
}

// inlineClient is client settings with inline PEM: the CA as truststore
// and, when cert is set, a client certificate.
func inlineClient(t *testing.T, ca issued, cert *issued) Settings {
	s := Settings{TruststoreType: "PEM", TruststoreCertificates: ca.certPEM(), EndpointIdentificationAlgorithm: "https"}
	if cert != nil {
		s.KeystoreType, s.KeystoreKey, s.KeystoreCertificateChain = "PEM", cert.keyPEM(t, ""), cert.certPEM()
	}
	return s
}

// result is one side of a handshake.
type result struct {
	state tls.ConnectionState
	err   error
}

// handshake runs a full TLS handshake over loopback TCP (net.Pipe has
// no buffer, so a side failing mid-flight deadlocks writing its alert)
// and, for TLS 1.3, one application-data round trip, so that a server
// refusing the client's certificate after the client's Finished is seen
// by both.
func handshake(t *testing.T, server, client *tls.Config) (srv, cli result) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	deadline := time.Now().Add(10 * time.Second)
	done := make(chan result)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		// The raw conns are closed rather than the TLS ones: no
		// close_notify to wait on.
		defer raw.Close()
		raw.SetDeadline(deadline)
		sc := tls.Server(raw, server)
		err = sc.Handshake()
		if err == nil {
			buf := make([]byte, 1)
			if _, err = sc.Read(buf); err == nil {
				_, err = sc.Write(buf)
			}
		}
		done <- result{sc.ConnectionState(), err}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	raw.SetDeadline(deadline)
	cc := tls.Client(raw, client)
	err = cc.Handshake()
	if err == nil {
		if _, err = cc.Write([]byte{1}); err == nil {
			_, err = cc.Read(make([]byte, 1))
		}
	}
	cli = result{cc.ConnectionState(), err}
	raw.Close()
	srv = <-done
	return srv, cli
}

func newServer(t *testing.T, s Settings) *Server {
	t.Helper()
	srv, err := NewServer(s, testLogger(t))
	require.NoError(t, err)
	return srv
}

func newClient(t *testing.T, s Settings, serverName string) *tls.Config {
	t.Helper()
	c, err := Client(s, serverName)
	require.NoError(t, err)
	return c
}
