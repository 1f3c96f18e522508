package tlsconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// Settings are Kafka's ssl.* settings for one listener or client, already
// resolved from config: the zero value of a field means the setting is
// unset, except EndpointIdentificationAlgorithm, whose empty value is
// Kafka's explicit "don't verify the host name" (its default is "https").
type Settings struct {
	KeystoreType, KeystoreLocation, KeystorePassword, KeyPassword string
	// KeystoreKey and KeystoreCertificateChain are inline PEM
	// (ssl.keystore.key, ssl.keystore.certificate.chain).
	KeystoreKey, KeystoreCertificateChain string

	TruststoreType, TruststoreLocation, TruststorePassword string
	// TruststoreCertificates is inline PEM (ssl.truststore.certificates).
	TruststoreCertificates string

	// ClientAuth is ssl.client.auth: "none" (default), "requested" or
	// "required".
	ClientAuth string
	// EnabledProtocols is ssl.enabled.protocols, e.g. TLSv1.2, TLSv1.3;
	// empty means Kafka's default, TLSv1.2,TLSv1.3.
	EnabledProtocols []string
	// Protocol is ssl.protocol (TLSv1.3, TLSv1.2 or TLS); empty means
	// Kafka's default, TLSv1.3.
	Protocol string
	// CipherSuites is ssl.cipher.suites in Java/IANA names; empty means
	// Go's defaults.
	CipherSuites []string
	// EndpointIdentificationAlgorithm is
	// ssl.endpoint.identification.algorithm: "https" verifies the server's
	// host name, "" verifies only its chain. Clients only.
	EndpointIdentificationAlgorithm string
	// PrincipalMappingRules is ssl.principal.mapping.rules; empty means
	// "DEFAULT".
	PrincipalMappingRules string
}

// The settings' Kafka names, for errors.
const (
	settingKeystoreType        = "ssl.keystore.type"
	settingKeystoreLocation    = "ssl.keystore.location"
	settingKeystorePassword    = "ssl.keystore.password"
	settingKeyPassword         = "ssl.key.password"
	settingKeystoreKey         = "ssl.keystore.key"
	settingKeystoreChain       = "ssl.keystore.certificate.chain"
	settingTruststoreType      = "ssl.truststore.type"
	settingTruststoreLocation  = "ssl.truststore.location"
	settingTruststorePassword  = "ssl.truststore.password"
	settingTruststoreCerts     = "ssl.truststore.certificates"
	settingClientAuth          = "ssl.client.auth"
	settingEnabledProtocols    = "ssl.enabled.protocols"
	settingProtocol            = "ssl.protocol"
	settingCipherSuites        = "ssl.cipher.suites"
	settingEndpointIdentAlg    = "ssl.endpoint.identification.algorithm"
	settingPrincipalMapping    = "ssl.principal.mapping.rules"
	defaultPrincipalMapping    = "DEFAULT"
	endpointIdentificationHTTP = "https"
)

var (
	// ErrUnsupportedProtocol is a protocol name in ssl.enabled.protocols or
	// ssl.protocol that Go cannot speak, or a combination that leaves no
	// protocol enabled.
	ErrUnsupportedProtocol = errors.New("tlsconfig: unsupported TLS protocol")
	// ErrUnknownCipherSuite is a name in ssl.cipher.suites that Go's
	// crypto/tls does not implement (DHE suites, for one) or that no one
	// defines.
	ErrUnknownCipherSuite = errors.New("tlsconfig: unknown cipher suite")
	// ErrInvalidSetting is a setting value outside what Kafka accepts, or
	// settings that Kafka refuses together.
	ErrInvalidSetting = errors.New("tlsconfig: invalid setting")
)

// SettingError is a failure tied to one setting and, where there is one,
// the file it names. Its text never includes passwords or key material.
type SettingError struct {
	Setting string // Kafka's name, e.g. ssl.keystore.location
	File    string // the file read, or "" for inline values
	Err     error
}

func (e *SettingError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("tlsconfig: %s %s: %v", e.Setting, e.File, e.Err)
	}
	return fmt.Sprintf("tlsconfig: %s: %v", e.Setting, e.Err)
}

func (e *SettingError) Unwrap() error { return e.Err }

func settingErr(setting, file string, format string, args ...any) error {
	return &SettingError{Setting: setting, File: file, Err: fmt.Errorf(format, args...)}
}

// clientAuth maps ssl.client.auth, compared without case as Kafka's
// SslClientAuth.forConfig does.
func clientAuth(v string) (tls.ClientAuthType, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, &SettingError{Setting: settingClientAuth, Err: fmt.Errorf("%w: %q is not none, requested or required", ErrInvalidSetting, v)}
}

// disabledProtocols are the names the JDK knows but disables by default
// (jdk.tls.disabledAlgorithms), so Kafka skips them without a word.
var disabledProtocols = map[string]bool{"tlsv1": true, "tlsv1.1": true, "sslv3": true, "sslv2hello": true}

var protocolVersions = map[string]uint16{"tlsv1.2": tls.VersionTLS12, "tlsv1.3": tls.VersionTLS13}

// versions maps ssl.enabled.protocols and ssl.protocol to the range Go
// enables, and returns the enabled names it skipped as disabled.
func versions(enabled []string, protocol string) (lo, hi uint16, skipped []string, err error) {
	if len(enabled) == 0 {
		enabled = []string{"TLSv1.2", "TLSv1.3"}
	}
	for _, name := range enabled {
		n := strings.ToLower(strings.TrimSpace(name))
		if disabledProtocols[n] {
			skipped = append(skipped, name)
			continue
		}
		v, ok := protocolVersions[n]
		if !ok {
			return 0, 0, nil, &SettingError{Setting: settingEnabledProtocols, Err: fmt.Errorf("%w: %q (want TLSv1.2 or TLSv1.3)", ErrUnsupportedProtocol, name)}
		}
		if lo == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if lo == 0 {
		return 0, 0, nil, &SettingError{Setting: settingEnabledProtocols, Err: fmt.Errorf("%w: %s enables only protocols disabled since RFC 8996 (TLSv1, TLSv1.1, SSLv3); enable TLSv1.2 or TLSv1.3", ErrUnsupportedProtocol, strings.Join(enabled, ","))}
	}
	var ceiling uint16
	switch strings.ToLower(strings.TrimSpace(protocol)) {
	case "", "tls", "ssl", "tlsv1.3":
		ceiling = tls.VersionTLS13
	case "tlsv1.2":
		ceiling = tls.VersionTLS12
	case "tlsv1.1", "tlsv1", "sslv3":
		ceiling = tls.VersionTLS11
	default:
		return 0, 0, nil, &SettingError{Setting: settingProtocol, Err: fmt.Errorf("%w: %q (want TLSv1.3, TLSv1.2 or TLS)", ErrUnsupportedProtocol, protocol)}
	}
	hi = min(hi, ceiling)
	if lo > hi {
		return 0, 0, nil, &SettingError{Setting: settingProtocol, Err: fmt.Errorf("%w: ssl.protocol %s leaves none of ssl.enabled.protocols %s", ErrUnsupportedProtocol, protocol, strings.Join(enabled, ","))}
	}
	return lo, hi, skipped, nil
}

// signallingSuites are names Java lists among cipher suites that select
// no cipher; Go sends what they signal on its own.
var signallingSuites = map[string]bool{"TLS_EMPTY_RENEGOTIATION_INFO_SCSV": true, "TLS_FALLBACK_SCSV": true}

// cipherSuites maps ssl.cipher.suites to Go's IDs for TLS 1.2 and below,
// narrowing [lo, hi] as the JDK would (see the package doc), and returns
// the names of insecure suites it enabled so the caller can warn.
func cipherSuites(names []string, lo, hi uint16) (ids []uint16, newLo, newHi uint16, insecure []string, err error) {
	if len(names) == 0 {
		return nil, lo, hi, nil, nil
	}
	known := map[string]*tls.CipherSuite{}
	bad := map[string]bool{}
	for _, cs := range tls.CipherSuites() {
		known[cs.Name] = cs
	}
	for _, cs := range tls.InsecureCipherSuites() {
		known[cs.Name] = cs
		bad[cs.Name] = true
	}
	var has13 bool
	for _, name := range names {
		n := strings.ToUpper(strings.TrimSpace(name))
		if rest, ok := strings.CutPrefix(n, "SSL_"); ok {
			n = "TLS_" + rest
		}
		if signallingSuites[n] {
			continue
		}
		cs, ok := known[n]
		if !ok {
			return nil, 0, 0, nil, &SettingError{Setting: settingCipherSuites, Err: fmt.Errorf("%w: %q is not implemented by Go's crypto/tls", ErrUnknownCipherSuite, name)}
		}
		if supports(cs, tls.VersionTLS13) {
			has13 = true
			continue
		}
		if !supports(cs, tls.VersionTLS12) {
			// A suite only for TLS 1.0/1.1, which are never enabled.
			continue
		}
		ids = append(ids, cs.ID)
		if bad[n] {
			insecure = append(insecure, n)
		}
	}
	switch {
	case len(ids) == 0 && !has13:
		return nil, 0, 0, nil, &SettingError{Setting: settingCipherSuites, Err: fmt.Errorf("%w: %s names no suite usable with TLS 1.2 or 1.3", ErrUnknownCipherSuite, strings.Join(names, ","))}
	case len(ids) == 0:
		lo = max(lo, tls.VersionTLS13)
	case !has13:
		hi = min(hi, tls.VersionTLS12)
	}
	if lo > hi {
		return nil, 0, 0, nil, &SettingError{Setting: settingCipherSuites, Err: fmt.Errorf("%w: the suites %s fit none of the enabled protocols", ErrUnsupportedProtocol, strings.Join(names, ","))}
	}
	return ids, lo, hi, insecure, nil
}

func supports(cs *tls.CipherSuite, v uint16) bool {
	for _, sv := range cs.SupportedVersions {
		if sv == v {
			return true
		}
	}
	return false
}

// params are the parts of a tls.Config that do not come from files.
type params struct {
	minVersion, maxVersion uint16
	cipherSuites           []uint16
	skippedProtocols       []string
	insecureSuites         []string
}

func parseParams(s Settings) (params, error) {
	lo, hi, skipped, err := versions(s.EnabledProtocols, s.Protocol)
	if err != nil {
		return params{}, err
	}
	ids, lo, hi, insecure, err := cipherSuites(s.CipherSuites, lo, hi)
	if err != nil {
		return params{}, err
	}
	return params{minVersion: lo, maxVersion: hi, cipherSuites: ids, skippedProtocols: skipped, insecureSuites: insecure}, nil
}
