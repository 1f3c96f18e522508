package tlsconfig

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClientAuth runs ssl.client.auth none, requested and required
// against clients with no certificate, one from the truststore's CA, and
// one from another CA.
func TestClientAuth(t *testing.T) {
	ca, other := newCA(t, "ca"), newCA(t, "other ca")
	srvCert := serverCert(t, ca, "localhost")
	good, stranger := clientCert(t, ca), clientCert(t, other)
	const dn = "CN=client,OU=eng,O=qk,C=US"
	tests := []struct {
		auth          string
		cert          *issued
		force         bool // send cert even if the server's CA list excludes it
		wantErr       bool
		wantPrincipal string
	}{
		{auth: "none", wantPrincipal: Anonymous},
		{auth: "none", cert: &good, wantPrincipal: Anonymous}, // never asked for
		{auth: "", cert: &stranger, wantPrincipal: Anonymous},
		{auth: "requested", wantPrincipal: Anonymous},
		{auth: "requested", cert: &good, wantPrincipal: dn},
		// crypto/tls clients, as Java's, send no certificate whose
		// issuer is not among the CAs the server names.
		{auth: "REQUESTED", cert: &stranger, wantPrincipal: Anonymous},
		{auth: "requested", cert: &stranger, force: true, wantErr: true},
		{auth: "required", wantErr: true},
		{auth: "required", cert: &good, wantPrincipal: dn},
		{auth: "required", cert: &stranger, wantErr: true},
		{auth: "required", cert: &stranger, force: true, wantErr: true},
	}
	for _, tt := range tests {
		name := tt.auth + "/no cert"
		switch tt.cert {
		case &good:
			name = tt.auth + "/trusted cert"
		case &stranger:
			name = tt.auth + "/other CA's cert"
		}
		if tt.force {
			name += " sent anyway"
		}
		t.Run(name, func(t *testing.T) {
			ss := pemServer(t, srvCert, ca)
			ss.ClientAuth = tt.auth
			srv := newServer(t, ss)
			client := newClient(t, inlineClient(t, ca, tt.cert), "localhost")
			if tt.force {
				cert := client.Certificates[0]
				client.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
			}
			s, c := handshake(t, srv.Config(), client)
			if tt.wantErr {
				require.Error(t, s.err)
				require.Error(t, c.err)
				return
			}
			require.NoError(t, s.err)
			require.NoError(t, c.err)
			got, err := srv.Principal(s.state)
			require.NoError(t, err)
			require.Equal(t, tt.wantPrincipal, got)
		})
	}
	t.Run("bad value", func(t *testing.T) {
		ss := pemServer(t, srvCert)
		ss.ClientAuth = "want"
		_, err := NewServer(ss, nil)
		require.ErrorIs(t, err, ErrInvalidSetting)
		require.ErrorContains(t, err, "ssl.client.auth")
	})
}

// TestEndpointIdentification: "https" checks the host name; "" skips the
// name but still verifies the chain.
func TestEndpointIdentification(t *testing.T) {
	ca, other := newCA(t, "ca"), newCA(t, "other ca")
	tests := []struct {
		name       string
		alg        string
		serverName string
		trust      issued
		wantErr    string
	}{
		{name: "https/right name", alg: "https", serverName: "localhost", trust: ca},
		{name: "https/IP SAN", alg: "HTTPS", serverName: "127.0.0.1", trust: ca},
		{name: "https/wrong name", alg: "https", serverName: "broker-7.example", trust: ca, wantErr: "broker-7.example"},
		{name: "https/wrong CA", alg: "https", serverName: "localhost", trust: other, wantErr: "unknown authority"},
		{name: "off/wrong name", alg: "", serverName: "broker-7.example", trust: ca},
		{name: "off/no name", alg: "", serverName: "", trust: ca},
		{name: "off/wrong CA", alg: "", serverName: "broker-7.example", trust: other, wantErr: "unknown authority"},
	}
	srv := newServer(t, pemServer(t, serverCert(t, ca, "localhost")))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := inlineClient(t, tt.trust, nil)
			cs.EndpointIdentificationAlgorithm = tt.alg
			_, c := handshake(t, srv.Config(), newClient(t, cs, tt.serverName))
			if tt.wantErr != "" {
				require.ErrorContains(t, c.err, tt.wantErr)
				return
			}
			require.NoError(t, c.err)
		})
	}
	t.Run("unknown algorithm", func(t *testing.T) {
		cs := inlineClient(t, ca, nil)
		cs.EndpointIdentificationAlgorithm = "ldaps"
		_, err := Client(cs, "localhost")
		require.ErrorIs(t, err, ErrInvalidSetting)
		require.ErrorContains(t, err, "ssl.endpoint.identification.algorithm")
	})
}

// TestProtocolHandshake negotiates across ssl.enabled.protocols and
// ssl.protocol on both sides.
func TestProtocolHandshake(t *testing.T) {
	ca := newCA(t, "ca")
	srvCert := serverCert(t, ca, "localhost")
	tests := []struct {
		name           string
		server, client []string
		clientProtocol string
		wantVersion    uint16
		wantErr        bool
	}{
		{name: "defaults", wantVersion: tls.VersionTLS13},
		{name: "server 1.2 only", server: []string{"TLSv1.2"}, wantVersion: tls.VersionTLS12},
		{name: "client ssl.protocol TLSv1.2", clientProtocol: "TLSv1.2", wantVersion: tls.VersionTLS12},
		{name: "old names skipped", server: []string{"TLSv1.2", "TLSv1.1", "TLSv1"}, wantVersion: tls.VersionTLS12},
		{name: "1.2 against 1.3", server: []string{"TLSv1.2"}, client: []string{"TLSv1.3"}, wantErr: true},
		{name: "1.3 against ssl.protocol TLSv1.2", server: []string{"TLSv1.3"}, clientProtocol: "TLSv1.2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := pemServer(t, srvCert)
			ss.EnabledProtocols = tt.server
			cs := inlineClient(t, ca, nil)
			cs.EnabledProtocols, cs.Protocol = tt.client, tt.clientProtocol
			s, c := handshake(t, newServer(t, ss).Config(), newClient(t, cs, "localhost"))
			if tt.wantErr {
				require.Error(t, c.err)
				require.Error(t, s.err)
				return
			}
			require.NoError(t, c.err)
			require.NoError(t, s.err)
			require.Equal(t, tls.VersionName(tt.wantVersion), tls.VersionName(c.state.Version))
		})
	}
}

// TestCipherSuiteHandshake restricts ssl.cipher.suites: a shared suite
// is the one negotiated, disjoint lists fail.
func TestCipherSuiteHandshake(t *testing.T) {
	ca := newCA(t, "ca")
	srvCert := serverCert(t, ca, "localhost")
	const (
		aes128 = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
		aes256 = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
		chacha = "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
	)
	tests := []struct {
		name           string
		server, client []string
		want           uint16 // 0: fails
		wantVersion    uint16
	}{
		{name: "shared suite", server: []string{aes256, chacha}, client: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", aes256}, want: tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, wantVersion: tls.VersionTLS12},
		{name: "disjoint", server: []string{aes128}, client: []string{aes256}},
		{name: "TLS 1.3 names keep 1.3", server: []string{aes128, "TLS_AES_256_GCM_SHA384"}, want: tls.TLS_AES_128_GCM_SHA256, wantVersion: tls.VersionTLS13},
		{name: "only TLS 1.3 names", server: []string{"TLS_AES_128_GCM_SHA256"}, client: []string{aes128}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := pemServer(t, srvCert)
			ss.CipherSuites = tt.server
			cs := inlineClient(t, ca, nil)
			cs.CipherSuites = tt.client
			s, c := handshake(t, newServer(t, ss).Config(), newClient(t, cs, "localhost"))
			if tt.want == 0 {
				require.Error(t, c.err)
				require.Error(t, s.err)
				return
			}
			require.NoError(t, c.err)
			require.NoError(t, s.err)
			require.Equal(t, tls.CipherSuiteName(tt.want), tls.CipherSuiteName(c.state.CipherSuite))
			require.Equal(t, tls.VersionName(tt.wantVersion), tls.VersionName(c.state.Version))
		})
	}
}

// countingHandler counts Warn records, to check a broken reload warns
// once per change.
type countingHandler struct {
	slog.Handler
	mu    sync.Mutex
	warns int
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.mu.Lock()
		h.warns++
		h.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &wrapped{h.Handler.WithAttrs(as), h}
}

type wrapped struct {
	slog.Handler
	c *countingHandler
}

func (w *wrapped) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		w.c.mu.Lock()
		w.c.warns++
		w.c.mu.Unlock()
	}
	return w.Handler.Handle(ctx, r)
}

func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.warns
}

// presented is the serial of the certificate the server shows a client.
func presented(t *testing.T, srv *Server, client *tls.Config) string {
	t.Helper()
	_, c := handshake(t, srv.Config(), client)
	require.NoError(t, c.err)
	return c.state.PeerCertificates[0].SerialNumber.String()
}

// TestReload rewrites the keystore: the next handshake after a check
// presents the new certificate, a broken rewrite keeps the old one and
// warns once, and the check runs at most once per interval.
func TestReload(t *testing.T) {
	ca := newCA(t, "ca")
	first, second, third := serverCert(t, ca, "localhost"), serverCert(t, ca, "localhost"), serverCert(t, ca, "localhost")
	ss := pemServer(t, first)
	h := &countingHandler{Handler: slog.NewTextHandler(t.Output(), nil)}
	srv, err := NewServer(ss, slog.New(h))
	require.NoError(t, err)
	client := newClient(t, inlineClient(t, ca, nil), "localhost")
	serial := func(c issued) string { return c.cert.SerialNumber.String() }

	require.Equal(t, serial(first), presented(t, srv, client))

	// Within the interval a handshake does not look at the files.
	srv.interval = time.Hour
	writePEMKeystore(t, ss.KeystoreLocation, second, "")
	require.Equal(t, serial(first), presented(t, srv, client))

	// Past it, the handshake itself notices.
	srv.interval = 0
	require.Equal(t, serial(second), presented(t, srv, client))

	// A broken rewrite keeps the old certificate and warns once,
	// however many handshakes and Reloads see it.
	writeFile(t, ss.KeystoreLocation, "-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n")
	for range 3 {
		require.Equal(t, serial(second), presented(t, srv, client))
	}
	require.ErrorContains(t, srv.Reload(), "ssl.keystore.location")
	require.Equal(t, 1, h.count())

	// A second, different breakage warns again: a key without its chain.
	writeFile(t, ss.KeystoreLocation, third.keyPEM(t, ""))
	require.Error(t, srv.Reload())
	require.Equal(t, 2, h.count())

	// Fixed: Reload picks it up at once.
	srv.interval = time.Hour
	writePEMKeystore(t, ss.KeystoreLocation, third, "")
	require.NoError(t, srv.Reload())
	require.Equal(t, serial(third), presented(t, srv, client))

	// The same content under a new mtime rebuilds nothing.
	require.NoError(t, os.Chtimes(ss.KeystoreLocation, time.Now().Add(time.Minute), time.Now().Add(time.Minute)))
	before := srv.current.Load()
	require.NoError(t, srv.Reload())
	require.Same(t, before, srv.current.Load())
	require.Equal(t, 2, h.count())
}

// TestReloadTruststore: a server requiring client certificates starts
// trusting a new CA once its truststore file says so.
func TestReloadTruststore(t *testing.T) {
	ca, next := newCA(t, "ca"), newCA(t, "next ca")
	ss := pemServer(t, serverCert(t, ca, "localhost"), ca)
	ss.ClientAuth = "required"
	srv := newServer(t, ss)
	srv.interval = 0
	cert := clientCert(t, next)
	client := newClient(t, inlineClient(t, ca, &cert), "localhost")

	s, _ := handshake(t, srv.Config(), client)
	require.Error(t, s.err)

	writeFile(t, ss.TruststoreLocation, ca.certPEM()+next.certPEM())
	s, c := handshake(t, srv.Config(), client)
	require.NoError(t, s.err)
	require.NoError(t, c.err)

	// A deleted truststore keeps the last one.
	require.NoError(t, os.Remove(ss.TruststoreLocation))
	s, _ = handshake(t, srv.Config(), client)
	require.NoError(t, s.err)
	require.ErrorContains(t, srv.Reload(), filepath.Base(ss.TruststoreLocation))
}

// TestServerNeedsKeystore: a listener without a keystore is refused at
// construction, naming the settings.
func TestServerNeedsKeystore(t *testing.T) {
	_, err := NewServer(Settings{}, nil)
	require.ErrorIs(t, err, ErrInvalidSetting)
	require.ErrorContains(t, err, "ssl.keystore.location")
}

// TestReloadConcurrent: handshakes racing rewrites of the keystore each
// see one whole certificate (run with -race).
func TestReloadConcurrent(t *testing.T) {
	ca := newCA(t, "ca")
	a, b := serverCert(t, ca, "localhost"), serverCert(t, ca, "localhost")
	ss := pemServer(t, a)
	srv := newServer(t, ss)
	srv.interval = 0
	client := newClient(t, inlineClient(t, ca, nil), "localhost")
	want := map[string]bool{a.cert.SerialNumber.String(): true, b.cert.SerialNumber.String(): true}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 4 {
		wg.Go(func() {
			for range 8 {
				_, c := handshake(t, srv.Config(), client)
				if c.err != nil {
					errs <- c.err
					return
				}
				if got := c.state.PeerCertificates[0].SerialNumber.String(); !want[got] {
					errs <- fmt.Errorf("presented serial %s", got)
					return
				}
			}
		})
	}
	for i := range 16 {
		writePEMKeystore(t, ss.KeystoreLocation, []issued{a, b}[i%2], "")
		require.NoError(t, srv.Reload())
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestReloadRacyMtime: an in-place rewrite of the same size that keeps
// the mtime (a coarse file system clock) is still seen, because the file
// changed too soon before it was read for its stat to be trusted.
func TestReloadRacyMtime(t *testing.T) {
	ca := newCA(t, "ca")
	first, second := serverCert(t, ca, "localhost"), serverCert(t, ca, "localhost")
	a, b := first.keyPEM(t, "")+first.certPEM(), second.keyPEM(t, "")+second.certPEM()
	for len(a) < len(b) {
		a += "\n"
	}
	for len(b) < len(a) {
		b += "\n"
	}
	dir := t.TempDir()
	ss := Settings{KeystoreType: "PEM", KeystoreLocation: filepath.Join(dir, "keystore.pem")}
	require.NoError(t, os.WriteFile(ss.KeystoreLocation, []byte(a), 0o600))
	srv := newServer(t, ss)
	srv.interval = 0
	client := newClient(t, inlineClient(t, ca, nil), "localhost")
	require.Equal(t, first.cert.SerialNumber.String(), presented(t, srv, client))

	before, err := os.Stat(ss.KeystoreLocation)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(ss.KeystoreLocation, []byte(b), 0o600))
	require.NoError(t, os.Chtimes(ss.KeystoreLocation, before.ModTime(), before.ModTime()))
	after, err := os.Stat(ss.KeystoreLocation)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after))
	require.Equal(t, before.Size(), after.Size())
	require.Equal(t, before.ModTime(), after.ModTime())

	require.Equal(t, second.cert.SerialNumber.String(), presented(t, srv, client))
}
