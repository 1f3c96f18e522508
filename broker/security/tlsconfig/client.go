package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// Client builds a client configuration: the keystore, if any, is the
// client certificate; the truststore, or the system roots without one,
// verifies the server. With EndpointIdentificationAlgorithm "https"
// serverName must match the server's certificate (tls.Dial fills an empty
// one from the address); with "" only the chain is verified, and
// serverName is sent for SNI alone.
func Client(s Settings, serverName string) (*tls.Config, error) {
	p, err := parseParams(s)
	if err != nil {
		return nil, err
	}
	fs := &fileSet{}
	certs, err := loadKeystore(s, fs)
	if err != nil {
		return nil, err
	}
	pool, err := loadTruststore(s, fs)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		Certificates: certs,
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   p.minVersion,
		MaxVersion:   p.maxVersion,
		CipherSuites: p.cipherSuites,
	}
	switch strings.ToLower(strings.TrimSpace(s.EndpointIdentificationAlgorithm)) {
	case endpointIdentificationHTTP:
	case "":
		// Skip only the host name: crypto/tls's own verification is off,
		// so VerifyConnection (run on every handshake, resumed ones
		// included) verifies the chain as it would have.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, pool)
		}
	default:
		return nil, &SettingError{Setting: settingEndpointIdentAlg, Err: fmt.Errorf("%w: %q is not https or empty", ErrInvalidSetting, s.EndpointIdentificationAlgorithm)}
	}
	return cfg, nil
}

// ErrNoServerCertificate is a server that sent no certificate.
var ErrNoServerCertificate = errors.New("tlsconfig: server sent no certificate")

func verifyChain(peer []*x509.Certificate, roots *x509.CertPool) error {
	if len(peer) == 0 {
		return ErrNoServerCertificate
	}
	opts := x509.VerifyOptions{
		Roots:         roots, // nil: the system roots
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, c := range peer[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := peer[0].Verify(opts); err != nil {
		return fmt.Errorf("tlsconfig: verify server certificate: %w", err)
	}
	return nil
}
