package tlsconfig

import (
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersions(t *testing.T) {
	tests := []struct {
		name        string
		enabled     []string
		protocol    string
		lo, hi      uint16
		wantSkipped []string
		wantErr     string
	}{
		{name: "Kafka defaults", lo: tls.VersionTLS12, hi: tls.VersionTLS13},
		{name: "1.3 only", enabled: []string{"TLSv1.3"}, lo: tls.VersionTLS13, hi: tls.VersionTLS13},
		{name: "case and spaces", enabled: []string{" tlsv1.2 "}, protocol: "tls", lo: tls.VersionTLS12, hi: tls.VersionTLS12},
		{name: "ssl.protocol caps", protocol: "TLSv1.2", lo: tls.VersionTLS12, hi: tls.VersionTLS12},
		{name: "Kafka 2.x default list", enabled: []string{"TLSv1.2", "TLSv1.1", "TLSv1"}, lo: tls.VersionTLS12, hi: tls.VersionTLS12, wantSkipped: []string{"TLSv1.1", "TLSv1"}},
		{name: "only disabled ones", enabled: []string{"TLSv1.1", "SSLv3"}, wantErr: "RFC 8996"},
		{name: "unknown name", enabled: []string{"TLSv2"}, wantErr: "ssl.enabled.protocols"},
		{name: "unknown ssl.protocol", protocol: "DTLSv1.2", wantErr: "ssl.protocol"},
		{name: "ssl.protocol excludes all", enabled: []string{"TLSv1.3"}, protocol: "TLSv1.2", wantErr: "leaves none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, skipped, err := versions(tt.enabled, tt.protocol)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrUnsupportedProtocol)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tls.VersionName(tt.lo), tls.VersionName(lo))
			require.Equal(t, tls.VersionName(tt.hi), tls.VersionName(hi))
			require.Equal(t, tt.wantSkipped, skipped)
		})
	}
}

func TestCipherSuites(t *testing.T) {
	tests := []struct {
		name         string
		names        []string
		want         []uint16
		lo, hi       uint16
		wantInsecure []string
		wantErr      error
	}{
		{name: "none: Go's defaults", lo: tls.VersionTLS12, hi: tls.VersionTLS13},
		{name: "IANA names", names: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"},
			want: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}, lo: tls.VersionTLS12, hi: tls.VersionTLS13},
		{name: "no TLS 1.3 suite keeps 1.3 off", names: []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
			want: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}, lo: tls.VersionTLS12, hi: tls.VersionTLS12},
		{name: "only TLS 1.3 suites keep 1.2 off", names: []string{"TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}, lo: tls.VersionTLS13, hi: tls.VersionTLS13},
		{name: "Java SSL_ prefix and signalling value", names: []string{"SSL_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_EMPTY_RENEGOTIATION_INFO_SCSV", "TLS_AES_128_GCM_SHA256"},
			want: []uint16{tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA}, lo: tls.VersionTLS12, hi: tls.VersionTLS13, wantInsecure: []string{"TLS_RSA_WITH_3DES_EDE_CBC_SHA"}},
		{name: "DHE is not in Go", names: []string{"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"}, wantErr: ErrUnknownCipherSuite},
		{name: "unknown name", names: []string{"TLS_NOPE"}, wantErr: ErrUnknownCipherSuite},
		{name: "only signalling", names: []string{"TLS_EMPTY_RENEGOTIATION_INFO_SCSV"}, wantErr: ErrUnknownCipherSuite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, lo, hi, insecure, err := cipherSuites(tt.names, tls.VersionTLS12, tls.VersionTLS13)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorContains(t, err, "ssl.cipher.suites")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, ids)
			require.Equal(t, tls.VersionName(tt.lo), tls.VersionName(lo))
			require.Equal(t, tls.VersionName(tt.hi), tls.VersionName(hi))
			require.Equal(t, tt.wantInsecure, insecure)
		})
	}
	t.Run("TLS 1.3 only suites with 1.2 only protocols", func(t *testing.T) {
		_, err := parseParams(Settings{EnabledProtocols: []string{"TLSv1.2"}, CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}})
		require.ErrorIs(t, err, ErrUnsupportedProtocol)
	})
}
