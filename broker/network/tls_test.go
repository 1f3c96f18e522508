//go:build linux

package network

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, made for one test.
type testPKI struct {
	pool   *x509.CertPool
	server tls.Certificate
	client tls.Certificate
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "qk test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"qk"}},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testPKI{pool: pool, server: leaf(2, "broker", x509.ExtKeyUsageServerAuth),
		client: leaf(3, "alice", x509.ExtKeyUsageClientAuth)}
}

func (p *testPKI) serverConfig(auth tls.ClientAuthType) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.server}, ClientCAs: p.pool, ClientAuth: auth}
}

func dialTLS(t *testing.T, addr string, cfg *tls.Config) *client {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &client{t: t, Conn: c, r: bufio.NewReaderSize(c, 64<<10)}
}

func startTLSServer(t *testing.T, cfg Config, tcfg *tls.Config, h Handler) *testServer {
	t.Helper()
	cfg.Listeners = []Listener{{Name: "SSL", Host: "127.0.0.1", TLS: tcfg}}
	return startServer(t, cfg, h)
}

// TestTLSRoundTrip: requests over TLS arrive as over plaintext, pipelined
// responses come back in order, and the handler sees the verified client
// certificate.
func TestTLSRoundTrip(t *testing.T) {
	pki := newTestPKI(t)
	peers := make(chan string, 16)
	s := startTLSServer(t, Config{}, pki.serverConfig(tls.VerifyClientCertIfGiven), HandlerFunc(func(r *Request) {
		require.NotNil(t, r.TLS)
		cn := ""
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		peers <- cn
		echo(r)
	}))
	anon := dialTLS(t, s.addr, &tls.Config{RootCAs: pki.pool})
	anon.roundTrip(1, []byte("hello"))
	require.Equal(t, "", <-peers)

	c := dialTLS(t, s.addr, &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}})
	var frames [][]byte
	var all []byte
	for i := range 8 {
		f := frame(0, 9, int32(i), ptr("tls"), bytes.Repeat([]byte{byte(i)}, 100_000))
		frames = append(frames, f)
		all = append(all, f...)
	}
	c.send(all)
	for i := range frames {
		require.Equal(t, frames[i][4:], c.readResponse())
		require.Equal(t, "alice", <-peers)
	}
}

// TestTLSSendfile: a file region of a response reaches a TLS client intact
// (the processor sends it into the relay's socket pair).
func TestTLSSendfile(t *testing.T) {
	pki := newTestPKI(t)
	const size = 4 << 20
	path := t.TempDir() + "/segment.log"
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(mrand.Uint32())
	}
	require.NoError(t, writeFile(path, content))
	f := openFile(t, path)
	s := startTLSServer(t, Config{}, pki.serverConfig(tls.NoClientCert), HandlerFunc(func(r *Request) {
		hdr := binary.BigEndian.AppendUint32(nil, uint32(r.CorrelationID))
		r.Respond(&Response{Parts: []Part{{Bytes: hdr}, {Region: FileRegion{File: f, Offset: 11, Length: size - 11}}}})
	}))
	c := dialTLS(t, s.addr, &tls.Config{RootCAs: pki.pool})
	c.send(frame(1, 11, 42, nil, nil))
	got := c.readResponse()
	require.Equal(t, uint32(42), binary.BigEndian.Uint32(got))
	require.True(t, bytes.Equal(content[11:], got[4:]), "bytes differ from the file's")
}

// TestTLSHandshakeFailures: a plaintext client, a client that does not
// trust the broker, a client without the required certificate and one
// that never finishes the handshake are each closed with a line that says
// why; their connection counts are released, and a good client works.
func TestTLSHandshakeFailures(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t)
	s := startTLSServer(t, Config{MaxConnectionsPerIP: 1, TLSHandshakeTimeout: 300 * time.Millisecond},
		pki.serverConfig(tls.RequireAndVerifyClientCert), echo)

	// With a limit of one connection per IP, each attempt waits for the
	// broker to have logged (and so released) the one before.
	failures := 0
	released := func() {
		t.Helper()
		failures++
		waitFor(t, 10*time.Second, func() bool { return len(s.logs.lines("TLS handshake failed")) >= failures },
			"handshake failure %d logged", failures)
	}
	plain := dial(t, s.addr)
	plain.send(frame(18, 3, 1, ptr("plain"), nil))
	plain.expectClosed()
	released()

	_, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: other.pool})
	require.Error(t, err, "the broker's certificate is not from the client's CA")
	released()

	noCert, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: pki.pool})
	if err == nil { // TLS 1.3: the server's refusal comes with the first read
		noCert.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = noCert.Read(make([]byte, 1))
		noCert.Close()
	}
	require.Error(t, err, "a client certificate is required")
	released()

	wrongCert, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{other.client}})
	if err == nil {
		wrongCert.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = wrongCert.Read(make([]byte, 1))
		wrongCert.Close()
	}
	require.Error(t, err, "the client certificate is from another CA")
	released()

	silent := dial(t, s.addr) // connects, never says hello
	silent.expectClosed()
	waitFor(t, 10*time.Second, func() bool {
		return len(s.logs.lines("TLS handshake failed", "handshake timeout")) == 1
	}, "the timeout logged")
	require.NotEmpty(t, s.logs.lines("TLS handshake failed", "remote=127.0.0.1"))

	// Every failure gave its per-IP slot back: with a limit of one, this
	// connection is accepted.
	var good *client
	waitFor(t, 10*time.Second, func() bool {
		c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}})
		if err != nil {
			return false
		}
		good = &client{t: t, Conn: c, r: bufio.NewReader(c)}
		t.Cleanup(func() { c.Close() })
		return true
	}, "a good client")
	good.roundTrip(7, []byte("ok"))
	require.Equal(t, 1, s.openConns())
}

// TestTLSClientCloses: a client that goes away is closed on the broker's
// side too, and a server shutdown with TLS clients connected leaves no
// relay goroutines behind (startServer checks for leaks).
func TestTLSClientCloses(t *testing.T) {
	pki := newTestPKI(t)
	s := startTLSServer(t, Config{}, pki.serverConfig(tls.NoClientCert), echo)
	c := dialTLS(t, s.addr, &tls.Config{RootCAs: pki.pool})
	c.roundTrip(1, nil)
	require.Equal(t, 1, s.openConns())
	c.Close()
	waitFor(t, 10*time.Second, func() bool { return s.openConns() == 0 }, "the connection closed")
	for range 3 {
		dialTLS(t, s.addr, &tls.Config{RootCAs: pki.pool}).roundTrip(2, nil)
	}
}

// TestCloseAfterResponse: the response is written, then the connection
// closes; a request pipelined behind it is dropped.
func TestCloseAfterResponse(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "plaintext", true: "tls"}[useTLS], func(t *testing.T) {
			pki := newTestPKI(t)
			h := HandlerFunc(func(r *Request) {
				if r.CorrelationID == 1 {
					r.CloseAfterResponse()
				}
				echo(r)
			})
			var s *testServer
			var c *client
			if useTLS {
				s = startTLSServer(t, Config{}, pki.serverConfig(tls.NoClientCert), h)
				c = dialTLS(t, s.addr, &tls.Config{RootCAs: pki.pool})
			} else {
				s = startServer(t, Config{}, h)
				c = dial(t, s.addr)
			}
			f := frame(36, 2, 1, ptr("x"), []byte("failed"))
			c.send(append(f, frame(18, 3, 2, ptr("x"), nil)...))
			require.Equal(t, f[4:], c.readResponse())
			c.expectClosed()
		})
	}
}

// TestRawFrames: after a response that switches to raw frames, frames are
// handed over whole with RawFrameApiKey (SaslHandshake v0's bare tokens,
// which may be shorter than a request header) until switched back.
func TestRawFrames(t *testing.T) {
	got := make(chan *Request, 8)
	s := startServer(t, Config{}, HandlerFunc(func(r *Request) {
		switch {
		case r.ApiKey == 17:
			r.SetRawFrames(true)
		case r.ApiKey == RawFrameApiKey && string(r.Frame) == "last":
			r.SetRawFrames(false)
		}
		got <- &Request{ApiKey: r.ApiKey, HeaderSize: r.HeaderSize, Frame: bytes.Clone(r.Frame)}
		echo(r)
	}))
	c := dial(t, s.addr)
	hs := frame(17, 0, 1, ptr("old"), []byte("PLAIN"))
	c.send(hs)
	require.Equal(t, hs[4:], c.readResponse())
	<-got
	for _, tok := range []string{"\x00u\x00p", "last"} {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
		c.send(append(b, tok...))
		require.Equal(t, tok, string(c.readResponse()))
		r := <-got
		require.Equal(t, RawFrameApiKey, r.ApiKey)
		require.Equal(t, 0, r.HeaderSize)
		require.Equal(t, tok, string(r.Frame))
	}
	c.roundTrip(3, []byte("framed again"))
	require.Equal(t, int16(18), (<-got).ApiKey)
}

// TestMaxRequestSizeBeforeAuth: a new connection may send frames up to the
// listener's pre-authentication limit only; a larger one closes it with a
// line naming the setting, and once the handler lifts the limit large
// frames pass.
func TestMaxRequestSizeBeforeAuth(t *testing.T) {
	s := startServer(t, Config{Listeners: []Listener{{Name: "SASL_PLAINTEXT", Host: "127.0.0.1", MaxRequestSizeBeforeAuth: 1024}}},
		HandlerFunc(func(r *Request) {
			if r.ApiKey == 36 {
				r.SetMaxRequestSize(0)
			}
			echo(r)
		}))
	big := frame(0, 9, 2, ptr("x"), make([]byte, 4096))

	c := dial(t, s.addr)
	c.roundTrip(1, make([]byte, 900))
	c.send(big)
	c.expectClosed()
	require.Len(t, s.logs.lines("sasl.server.max.receive.size", "size=4107", "limit=1024"), 1)

	c = dial(t, s.addr)
	auth := frame(36, 2, 1, ptr("x"), []byte("token"))
	c.send(auth)
	require.Equal(t, auth[4:], c.readResponse())
	c.send(big)
	require.Equal(t, big[4:], c.readResponse())
}

// TestThrottle: a response with a throttle mutes its connection: the next
// request, sent at once, is read only when the throttle time is over,
// while another connection is served meanwhile.
func TestThrottle(t *testing.T) {
	const d = 300 * time.Millisecond
	s := startServer(t, Config{}, HandlerFunc(func(r *Request) {
		if r.CorrelationID == 1 {
			r.SetThrottle(d)
		}
		echo(r)
	}))
	c := dial(t, s.addr)
	other := dial(t, s.addr)
	start := time.Now()
	c.roundTrip(1, nil)
	c.send(frame(18, 3, 2, ptr("rt"), nil))
	other.roundTrip(3, nil)
	require.Less(t, time.Since(start), d, "another connection is not held")
	c.readResponse()
	require.GreaterOrEqual(t, time.Since(start), d, "the next request waited for the throttle")
}
