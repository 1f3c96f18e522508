package tlsconfig

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fixtures' passwords, as testdata/gen.sh sets them.
const (
	storePass = "storepass"
	keyPass   = "keypass"
	trustPass = "trustpass"
)

func fixture(name string) string { return filepath.Join("testdata", name) }

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(fixture(name))
	require.NoError(t, err)
	return string(b)
}

// TestKeystoreFixtures reads keystores that OpenSSL and keytool wrote
// and serves a handshake from each.
func TestKeystoreFixtures(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
	}{
		{"PEM", Settings{KeystoreType: "PEM", KeystoreLocation: fixture("server.keystore.pem")}},
		{"PEM encrypted by openssl pkcs8 -v2 aes-256-cbc", Settings{KeystoreType: "pem", KeystoreLocation: fixture("server.keystore.enc.pem"), KeyPassword: keyPass}},
		{"PEM inline", Settings{KeystoreType: "PEM", KeystoreKey: readFixture(t, "server.key.enc.pem"), KeyPassword: keyPass, KeystoreCertificateChain: readFixture(t, "server.crt.pem") + readFixture(t, "ca.pem")}},
		{"PKCS12 by keytool", Settings{KeystoreType: "PKCS12", KeystoreLocation: fixture("server.keystore.p12"), KeystorePassword: storePass}},
		{"JKS by keytool", Settings{KeystoreType: "JKS", KeystoreLocation: fixture("server.keystore.jks"), KeystorePassword: storePass, KeyPassword: keyPass}},
		{"default type is JKS", Settings{KeystoreLocation: fixture("server.keystore.jks"), KeystorePassword: storePass, KeyPassword: keyPass}},
		{"JKS type reads PKCS12", Settings{KeystoreType: "JKS", KeystoreLocation: fixture("server.keystore.p12"), KeystorePassword: storePass}},
		{"PKCS12 type reads JKS", Settings{KeystoreType: "PKCS12", KeystoreLocation: fixture("server.keystore.jks"), KeystorePassword: storePass, KeyPassword: keyPass}},
	}
	client := newClient(t, Settings{TruststoreType: "PEM", TruststoreLocation: fixture("ca.pem"), EndpointIdentificationAlgorithm: "https"}, "localhost")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certs, err := loadKeystore(tt.s, &fileSet{})
			require.NoError(t, err)
			require.Len(t, certs, 1)
			require.Equal(t, "localhost", certs[0].Leaf.Subject.CommonName)
			require.Len(t, certs[0].Certificate, 2, "leaf and CA")
			s, c := handshake(t, newServer(t, tt.s).Config(), client)
			require.NoError(t, s.err)
			require.NoError(t, c.err)
			require.Equal(t, "localhost", c.state.PeerCertificates[0].Subject.CommonName)
		})
	}
}

// TestTruststoreFixtures verifies the fixture server through each kind
// of truststore.
func TestTruststoreFixtures(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
	}{
		{"PEM", Settings{TruststoreType: "PEM", TruststoreLocation: fixture("ca.pem")}},
		{"PEM inline", Settings{TruststoreType: "PEM", TruststoreCertificates: readFixture(t, "ca.pem")}},
		{"PEM inline, type unset", Settings{TruststoreCertificates: readFixture(t, "ca.pem")}},
		{"PKCS12 by keytool", Settings{TruststoreType: "PKCS12", TruststoreLocation: fixture("truststore.p12"), TruststorePassword: trustPass}},
		{"JKS by keytool", Settings{TruststoreType: "JKS", TruststoreLocation: fixture("truststore.jks"), TruststorePassword: trustPass}},
		{"default type is JKS", Settings{TruststoreLocation: fixture("truststore.jks"), TruststorePassword: trustPass}},
	}
	srv := newServer(t, Settings{KeystoreType: "PEM", KeystoreLocation: fixture("server.keystore.pem")})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.EndpointIdentificationAlgorithm = "https"
			_, c := handshake(t, srv.Config(), newClient(t, tt.s, "localhost"))
			require.NoError(t, c.err)
		})
	}
	t.Run("none means system roots", func(t *testing.T) {
		_, c := handshake(t, srv.Config(), newClient(t, Settings{EndpointIdentificationAlgorithm: "https"}, "localhost"))
		require.ErrorContains(t, c.err, "unknown authority")
	})
}

// TestStoreErrors: each refusal names the setting (and file) and never
// the passwords.
func TestStoreErrors(t *testing.T) {
	const wrong = "Wr0ngSecret"
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	legacy := write("legacy.pem", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n")
	mismatch := write("mismatch.pem", readFixture(t, "client.key.pem")+readFixture(t, "server.crt.pem"))
	noChain := write("nochain.pem", readFixture(t, "server.key.pem"))
	garbage := write("garbage.jks", "not a keystore at all")
	tests := []struct {
		name    string
		s       Settings
		client  bool // build a Client rather than a Server
		wantIs  error
		wantHas []string
	}{
		{name: "encrypted PEM, wrong password", s: Settings{KeystoreType: "PEM", KeystoreLocation: fixture("server.keystore.enc.pem"), KeyPassword: wrong},
			wantHas: []string{"ssl.keystore.location", "server.keystore.enc.pem", "wrong ssl.key.password"}},
		{name: "encrypted PEM, no password", s: Settings{KeystoreType: "PEM", KeystoreLocation: fixture("server.keystore.enc.pem")},
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.key.password is not set"}},
		{name: "PEM with a store password", s: Settings{KeystoreType: "PEM", KeystoreLocation: fixture("server.keystore.pem"), KeystorePassword: wrong},
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.keystore.password", "only ssl.key.password"}},
		{name: "PEM file as JKS", s: Settings{KeystoreType: "JKS", KeystoreLocation: fixture("server.keystore.pem"), KeystorePassword: wrong},
			wantIs: ErrInvalidSetting, wantHas: []string{"set ssl.keystore.type=PEM"}},
		{name: "PEM file as default type", s: Settings{TruststoreLocation: fixture("ca.pem")}, client: true,
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.truststore.location", "set ssl.truststore.type=PEM"}},
		{name: "neither JKS nor PKCS12", s: Settings{KeystoreLocation: garbage, KeystorePassword: wrong},
			wantIs: ErrInvalidSetting, wantHas: []string{garbage, "keytool -importkeystore -deststoretype PKCS12"}},
		{name: "PKCS12, wrong password", s: Settings{KeystoreType: "PKCS12", KeystoreLocation: fixture("server.keystore.p12"), KeystorePassword: wrong},
			wantHas: []string{"server.keystore.p12", "wrong password"}},
		{name: "JKS, wrong store password", s: Settings{KeystoreType: "JKS", KeystoreLocation: fixture("server.keystore.jks"), KeystorePassword: wrong, KeyPassword: keyPass},
			wantHas: []string{"server.keystore.jks", "wrong password"}},
		{name: "JKS, wrong key password", s: Settings{KeystoreType: "JKS", KeystoreLocation: fixture("server.keystore.jks"), KeystorePassword: storePass, KeyPassword: wrong},
			wantHas: []string{"server.keystore.jks", "ssl.key.password"}},
		{name: "JKS, no store password", s: Settings{KeystoreType: "JKS", KeystoreLocation: fixture("server.keystore.jks")},
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.keystore.password"}},
		{name: "PKCS12 truststore, wrong password", s: Settings{TruststoreType: "PKCS12", TruststoreLocation: fixture("truststore.p12"), TruststorePassword: wrong}, client: true,
			wantHas: []string{"ssl.truststore.location", "truststore.p12", "wrong password"}},
		{name: "PKCS12 keystore as truststore", s: Settings{TruststoreType: "PKCS12", TruststoreLocation: fixture("server.keystore.p12"), TruststorePassword: storePass}, client: true,
			wantHas: []string{"ssl.truststore.location"}},
		{name: "JKS truststore, no password", s: Settings{TruststoreLocation: fixture("truststore.jks")}, client: true,
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.truststore.password"}},
		{name: "PEM truststore with password", s: Settings{TruststoreType: "PEM", TruststoreLocation: fixture("ca.pem"), TruststorePassword: wrong}, client: true,
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.truststore.password"}},
		{name: "unknown store type", s: Settings{KeystoreType: "JCEKS", KeystoreLocation: fixture("server.keystore.jks")},
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.keystore.type", "JCEKS"}},
		{name: "missing file", s: Settings{KeystoreType: "PEM", KeystoreLocation: filepath.Join(dir, "absent.pem")},
			wantIs: os.ErrNotExist, wantHas: []string{"ssl.keystore.location", "absent.pem"}},
		{name: "inline key and location", s: Settings{KeystoreType: "PEM", KeystoreLocation: fixture("server.keystore.pem"), KeystoreKey: readFixture(t, "server.key.pem"), KeystoreCertificateChain: readFixture(t, "server.crt.pem")},
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.keystore.key"}},
		{name: "inline key without chain", s: Settings{KeystoreType: "PEM", KeystoreKey: readFixture(t, "server.key.pem")},
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.keystore.certificate.chain"}},
		{name: "inline key, JKS type", s: Settings{KeystoreType: "JKS", KeystoreKey: readFixture(t, "server.key.pem"), KeystoreCertificateChain: readFixture(t, "server.crt.pem")},
			wantIs: ErrInvalidSetting, wantHas: []string{"PEM only"}},
		{name: "inline truststore and location", s: Settings{TruststoreType: "PEM", TruststoreLocation: fixture("ca.pem"), TruststoreCertificates: readFixture(t, "ca.pem")}, client: true,
			wantIs: ErrInvalidSetting, wantHas: []string{"ssl.truststore.certificates"}},
		{name: "key matches no certificate", s: Settings{KeystoreType: "PEM", KeystoreLocation: mismatch},
			wantHas: []string{"mismatch.pem", "matches none"}},
		{name: "key without chain", s: Settings{KeystoreType: "PEM", KeystoreLocation: noChain},
			wantHas: []string{"nochain.pem", "no PEM CERTIFICATE"}},
		{name: "legacy encrypted PEM", s: Settings{KeystoreType: "PEM", KeystoreLocation: legacy, KeyPassword: wrong},
			wantHas: []string{"legacy", "openssl pkcs8 -topk8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.client {
				_, err = Client(tt.s, "localhost")
			} else {
				_, err = NewServer(tt.s, nil)
			}
			require.Error(t, err)
			var se *SettingError
			require.ErrorAs(t, err, &se)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
			for _, want := range tt.wantHas {
				require.ErrorContains(t, err, want)
			}
			for _, secret := range []string{wrong, storePass, keyPass, trustPass, "BEGIN"} {
				require.NotContains(t, err.Error(), secret)
			}
		})
	}
}

// TestPEMKeyForms reads the key encodings a PEM keystore may hold, with
// base64 broken as Kafka tolerates in inline values.
func TestPEMKeyForms(t *testing.T) {
	ca := newCA(t, "ca")
	ec := serverCert(t, ca, "localhost")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaCert := issued{cert: signFor(t, ca, &rsaKey.PublicKey), key: nil}
	ecDER, err := x509.MarshalECPrivateKey(ec.key)
	require.NoError(t, err)
	oneLine := func(s string) string {
		// BEGIN line, base64 and END line all on one line, space-separated.
		return strings.Join(strings.Fields(s), " ")
	}
	tests := []struct {
		name          string
		key, chain    string
		password      string
		wantPublicKey any
	}{
		{"PKCS#8", ec.keyPEM(t, ""), ec.certPEM(), "", &ec.key.PublicKey},
		{"PKCS#8 encrypted", ec.keyPEM(t, "s3cret"), ec.certPEM(), "s3cret", &ec.key.PublicKey},
		{"PKCS#8 with an unneeded password", ec.keyPEM(t, ""), ec.certPEM(), "s3cret", &ec.key.PublicKey},
		{"EC PRIVATE KEY", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})), ec.certPEM(), "", &ec.key.PublicKey},
		{"RSA PRIVATE KEY", string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})), rsaCert.certPEM(), "", &rsaKey.PublicKey},
		{"on one line", oneLine(ec.keyPEM(t, "s3cret")), oneLine(ec.certPEM()), "s3cret", &ec.key.PublicKey},
		{"chain before leaf", ec.keyPEM(t, ""), ca.certPEM() + ec.certPEM(), "", &ec.key.PublicKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Settings{KeystoreType: "PEM", KeystoreKey: tt.key, KeystoreCertificateChain: tt.chain, KeyPassword: tt.password}
			certs, err := loadKeystore(s, &fileSet{})
			require.NoError(t, err)
			require.Len(t, certs, 1)
			require.Equal(t, tt.wantPublicKey, certs[0].Leaf.PublicKey)
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		s := Settings{KeystoreType: "PEM", KeystoreKey: ec.keyPEM(t, "s3cret"), KeystoreCertificateChain: ec.certPEM(), KeyPassword: "guess"}
		_, err := loadKeystore(s, &fileSet{})
		require.ErrorContains(t, err, "ssl.keystore.key")
		require.NotContains(t, err.Error(), "guess")
	})
}

// signFor issues a server certificate for pub from ca.
func signFor(t *testing.T, ca issued, pub any) *x509.Certificate {
	t.Helper()
	tmpl := *serverCert(t, ca, "rsa").cert
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca.cert, pub, ca.key)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return c
}
