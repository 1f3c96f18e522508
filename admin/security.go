package admin

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/qk-project/qk/broker/security/plain"
)

// Hidden is what a secret setting's value shows as wherever settings are
// printed.
const Hidden = "[hidden]"

// The JAAS login modules of Kafka's PLAIN and SCRAM clients.
const (
	LoginModulePlain = plain.LoginModulePlain
	LoginModuleScram = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// securitySetting is one TLS or SASL client setting: its name (librdkafka's
// or the Java client's), the slot it fills (two names for one thing share
// a slot, and the later given wins) and whether its value is a secret.
type securitySetting struct {
	name, slot string
	secret     bool
	doc        string
}

// securitySettings is the one table of the TLS and SASL settings -X,
// profiles and Kafka properties files take.
var securitySettings = []securitySetting{
	{name: "security.protocol", doc: "plaintext, ssl, sasl_plaintext or sasl_ssl"},
	{name: "sasl.mechanism", doc: "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
	{name: "sasl.mechanisms", slot: "sasl.mechanism", doc: "librdkafka's name of sasl.mechanism"},
	{name: "sasl.username", doc: "SASL user (librdkafka)"},
	{name: "sasl.password", secret: true, doc: "SASL password (librdkafka)"},
	{name: "sasl.jaas.config", secret: true, doc: `Java's login: <PlainLoginModule|ScramLoginModule> required username="u" password="p";`},
	{name: "ssl.ca.location", doc: "PEM file (or directory of them) of the CAs to trust; default the system's"},
	{name: "ssl.ca.pem", doc: "PEM text of the CAs to trust"},
	{name: "ssl.truststore.location", slot: "ssl.ca.location", doc: "Java's name of ssl.ca.location (PEM)"},
	{name: "ssl.truststore.certificates", slot: "ssl.ca.pem", doc: "Java's name of ssl.ca.pem"},
	{name: "ssl.truststore.type", doc: "PEM (JKS and PKCS12 are not supported yet)"},
	{name: "ssl.truststore.password", secret: true, doc: "not used with PEM truststores"},
	{name: "ssl.certificate.location", doc: "PEM file of the client certificate (chain)"},
	{name: "ssl.certificate.pem", doc: "PEM text of the client certificate (chain)"},
	{name: "ssl.keystore.certificate.chain", slot: "ssl.certificate.pem", doc: "Java's name of ssl.certificate.pem"},
	{name: "ssl.key.location", doc: "PEM file of the client certificate's private key"},
	{name: "ssl.key.pem", secret: true, doc: "PEM text of the client certificate's private key"},
	{name: "ssl.keystore.key", slot: "ssl.key.pem", secret: true, doc: "Java's name of ssl.key.pem"},
	{name: "ssl.keystore.location", doc: "PEM file holding the client's private key and certificate chain (Java)"},
	{name: "ssl.keystore.type", doc: "PEM (JKS and PKCS12 are not supported yet)"},
	{name: "ssl.keystore.password", secret: true, doc: "not used with PEM keystores (the key's is ssl.key.password)"},
	{name: "ssl.key.password", secret: true, doc: "password of an encrypted private key"},
	{name: "enable.ssl.certificate.verification", doc: "true (default) or false: check the brokers' certificates"},
	{name: "ssl.endpoint.identification.algorithm", doc: `https (default): check the broker's host name; none or "": do not`},
}

func lookupSecurity(key string) (securitySetting, bool) {
	i := slices.IndexFunc(securitySettings, func(s securitySetting) bool { return s.name == key })
	if i < 0 {
		return securitySetting{}, false
	}
	s := securitySettings[i]
	if s.slot == "" {
		s.slot = s.name
	}
	return s, true
}

// IsSecuritySetting tells the TLS and SASL settings from the others.
func IsSecuritySetting(key string) bool {
	_, ok := lookupSecurity(key)
	return ok
}

// IsSecret tells whether key's value is a secret: it never appears in
// output, logs or errors.
func IsSecret(key string) bool {
	s, ok := lookupSecurity(key)
	return ok && s.secret
}

// Redact returns value, or Hidden when key is a secret setting.
func Redact(key, value string) string {
	if IsSecret(key) {
		return Hidden
	}
	return value
}

// SecuritySettings lists the names of the TLS and SASL settings.
func SecuritySettings() []string {
	out := make([]string, len(securitySettings))
	for i, s := range securitySettings {
		out[i] = s.name
	}
	return out
}

// Security is the TLS and SASL part of the client settings. Set takes them
// one at a time, by librdkafka's or the Java client's names; Opts turns
// them into kgo options. The zero value is plaintext.
type Security struct {
	v    map[string]string // slot -> value
	from map[string]string // slot -> the name it was given as
}

// Set applies one setting. It reports false for a key that is not a
// security setting. Errors name the key and never quote a secret.
func (s *Security) Set(key, value string) (bool, error) {
	st, ok := lookupSecurity(key)
	if !ok {
		return false, nil
	}
	if err := checkSecurity(st, value); err != nil {
		return true, err
	}
	if s.v == nil {
		s.v, s.from = map[string]string{}, map[string]string{}
	}
	s.v[st.slot], s.from[st.slot] = value, key
	return true, nil
}

// checkSecurity validates what can be checked of one value on its own.
func checkSecurity(st securitySetting, v string) error {
	bad := func(want string) error {
		if st.secret {
			return fmt.Errorf("%s: want %s", st.name, want)
		}
		return fmt.Errorf("%s %q: want %s", st.name, v, want)
	}
	switch st.slot {
	case "security.protocol":
		if _, ok := parseProtocol(v); !ok {
			return bad("plaintext, ssl, sasl_plaintext or sasl_ssl")
		}
	case "sasl.mechanism":
		if _, err := saslMechanism(st.name, v); err != nil {
			return err
		}
	case "enable.ssl.certificate.verification":
		if _, err := strconv.ParseBool(v); err != nil {
			return bad("true or false")
		}
	case "ssl.endpoint.identification.algorithm":
		if _, ok := parseIdentification(v); !ok {
			return bad(`https, or none or "" to skip the host name check`)
		}
	case "ssl.truststore.type", "ssl.keystore.type":
		if !strings.EqualFold(v, "PEM") {
			return fmt.Errorf("%s %q: qk reads PEM only for now (convert a JKS or PKCS12 store with keytool -exportcert -rfc or openssl pkcs12 -nodes)", st.name, v)
		}
	}
	return nil
}

type protocol struct{ tls, sasl bool }

func parseProtocol(v string) (protocol, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "plaintext":
		return protocol{}, true
	case "ssl":
		return protocol{tls: true}, true
	case "sasl_plaintext":
		return protocol{sasl: true}, true
	case "sasl_ssl":
		return protocol{tls: true, sasl: true}, true
	}
	return protocol{}, false
}

// parseIdentification reports whether the host name is checked: https
// (both clients' default), none (librdkafka) or empty (Java) to skip it.
func parseIdentification(v string) (check, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "https":
		return true, true
	case "", "none":
		return false, true
	}
	return false, false
}

// saslMechanism normalises a mechanism name; GSSAPI and OAUTHBEARER are
// Kafka's too but not qk's.
func saslMechanism(key, v string) (string, error) {
	m := strings.ToUpper(strings.TrimSpace(v))
	switch m {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		return m, nil
	}
	return "", fmt.Errorf("%s %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", key, v)
}

// get returns a slot's value and whether it was given.
func (s *Security) get(slot string) (string, bool) {
	v, ok := s.v[slot]
	return v, ok
}

// name is the name a slot was given as, for errors.
func (s *Security) name(slot string) string {
	if n, ok := s.from[slot]; ok {
		return n
	}
	return slot
}

// Opts returns the kgo options of the settings: kgo.DialTLSConfig for ssl
// and sasl_ssl, kgo.SASL for sasl_plaintext and sasl_ssl. Settings that
// the protocol would leave unused are errors, so a command never runs
// with less security than was asked for.
func (s *Security) Opts() ([]kgo.Opt, error) {
	var p protocol
	if v, ok := s.get("security.protocol"); ok {
		p, _ = parseProtocol(v)
	}
	var opts []kgo.Opt
	if p.sasl {
		m, err := s.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	} else if slot := s.firstGiven("sasl."); slot != "" {
		return nil, fmt.Errorf("%s is set but security.protocol is %s: want sasl_plaintext or sasl_ssl", s.name(slot), s.protocolName())
	}
	if p.tls {
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	} else if slot := s.firstGiven("ssl.", "enable.ssl."); slot != "" && slot != "ssl.endpoint.identification.algorithm" {
		// The host name check alone is harmless: Java configs often
		// carry it for every protocol.
		return nil, fmt.Errorf("%s is set but security.protocol is %s: want ssl or sasl_ssl", s.name(slot), s.protocolName())
	}
	return opts, nil
}

func (s *Security) protocolName() string {
	if v, ok := s.get("security.protocol"); ok {
		return strings.ToLower(v)
	}
	return "not set (plaintext)"
}

// firstGiven is the first slot of the table, in its order, that is set
// and starts with one of the prefixes.
func (s *Security) firstGiven(prefixes ...string) string {
	for _, st := range securitySettings {
		slot := cmp.Or(st.slot, st.name)
		if _, ok := s.v[slot]; !ok {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(slot, p) {
				return slot
			}
		}
	}
	return ""
}

// mechanism builds franz-go's SASL mechanism from sasl.mechanism and
// either sasl.username/sasl.password or sasl.jaas.config.
func (s *Security) mechanism() (sasl.Mechanism, error) {
	mv, ok := s.get("sasl.mechanism")
	if !ok {
		return nil, fmt.Errorf("security.protocol=%s needs sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", strings.ToLower(s.v["security.protocol"]))
	}
	mech, err := saslMechanism(s.name("sasl.mechanism"), mv)
	if err != nil {
		return nil, err
	}
	user, hasUser := s.get("sasl.username")
	pass, hasPass := s.get("sasl.password")
	if jaas, ok := s.get("sasl.jaas.config"); ok {
		if hasUser || hasPass {
			return nil, errors.New("sasl.jaas.config and sasl.username/sasl.password are both set: give one")
		}
		if user, pass, err = parseJAASLogin(jaas, mech); err != nil {
			return nil, err
		}
	} else {
		switch {
		case !hasUser || user == "":
			return nil, fmt.Errorf("sasl.mechanism=%s needs sasl.username (or sasl.jaas.config)", mech)
		case !hasPass || pass == "":
			return nil, fmt.Errorf("sasl.mechanism=%s needs sasl.password (or sasl.jaas.config)", mech)
		}
	}
	switch mech {
	case "PLAIN":
		return kplain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return kscram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	default: // SCRAM-SHA-512
		return kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
}

// parseJAASLogin takes the user name and password out of a client's
// sasl.jaas.config, whose login module must be mech's. The value is
// secret: errors never quote it.
func parseJAASLogin(s, mech string) (user, pass string, err error) {
	j, err := plain.ParseJAAS(s)
	if err != nil {
		// plain's errors say what is wrong without quoting the value.
		return "", "", err
	}
	want := LoginModuleScram
	if mech == "PLAIN" {
		want = LoginModulePlain
	}
	if j.Module != want {
		return "", "", fmt.Errorf("sasl.jaas.config: sasl.mechanism=%s takes the login module %s", mech, want)
	}
	user, pass = j.Options["username"], j.Options["password"]
	switch {
	case user == "":
		return "", "", errors.New(`sasl.jaas.config: no username="..." option`)
	case pass == "":
		return "", "", errors.New(`sasl.jaas.config: no password="..." option`)
	}
	return user, pass, nil
}

// tlsConfig builds the client's TLS configuration: the CAs to trust (the
// system's by default), the client certificate if any, and how much of
// the broker's certificate to check.
func (s *Security) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	roots, err := s.roots()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = roots
	cert, err := s.certificate()
	if err != nil {
		return nil, err
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	verify := true
	if v, ok := s.get("enable.ssl.certificate.verification"); ok {
		verify, _ = strconv.ParseBool(v)
	}
	hostCheck := true
	if v, ok := s.get("ssl.endpoint.identification.algorithm"); ok {
		hostCheck, _ = parseIdentification(v)
	}
	switch {
	case !verify:
		cfg.InsecureSkipVerify = true
	case !hostCheck:
		// Check the chain, not the name: crypto/tls does both or
		// neither, so take over the check.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// roots is the pool of CAs to trust; nil means the system's.
func (s *Security) roots() (*x509.CertPool, error) {
	if v, ok := s.get("ssl.truststore.password"); ok && v != "" {
		return nil, errors.New("ssl.truststore.password: a PEM truststore has no password (Java refuses it too)")
	}
	var pemText []byte
	name := ""
	if v, ok := s.get("ssl.ca.pem"); ok {
		pemText, name = []byte(v), s.name("ssl.ca.pem")
	}
	if path, ok := s.get("ssl.ca.location"); ok && path != "probe" {
		if pemText != nil {
			return nil, fmt.Errorf("%s and %s are both set: give one", s.name("ssl.ca.location"), name)
		}
		name = s.name("ssl.ca.location") + " " + path
		b, err := readPEMs(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name("ssl.ca.location"), err)
		}
		pemText = b
	}
	if pemText == nil {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemText) {
		return nil, fmt.Errorf("%s: no PEM certificates (qk reads PEM only for now; convert a JKS or PKCS12 truststore with keytool -exportcert -rfc or openssl pkcs12 -nokeys)", name)
	}
	return pool, nil
}

// readPEMs reads a PEM file, or every file of a directory.
func readPEMs(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return os.ReadFile(path)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var all []byte
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(path, e.Name()))
		if err != nil {
			return nil, err
		}
		all = append(append(all, b...), '\n')
	}
	return all, nil
}

// certificate is the client certificate: librdkafka's
// ssl.certificate.location and ssl.key.location (or their .pem texts), or
// Java's PEM ssl.keystore.location holding both; nil if none is given.
func (s *Security) certificate() (*tls.Certificate, error) {
	if v, ok := s.get("ssl.keystore.password"); ok && v != "" {
		return nil, errors.New("ssl.keystore.password: a PEM keystore has no password; an encrypted key's is ssl.key.password (Java refuses it too)")
	}
	var certPEM, keyPEM []byte
	var certName, keyName string
	load := func(pemSlot, fileSlot string) ([]byte, string, error) {
		pv, hasPEM := s.get(pemSlot)
		path, hasFile := s.get(fileSlot)
		switch {
		case hasPEM && hasFile:
			return nil, "", fmt.Errorf("%s and %s are both set: give one", s.name(pemSlot), s.name(fileSlot))
		case hasPEM:
			return []byte(pv), s.name(pemSlot), nil
		case hasFile:
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", s.name(fileSlot), err)
			}
			return b, s.name(fileSlot) + " " + path, nil
		}
		return nil, "", nil
	}
	var err error
	if certPEM, certName, err = load("ssl.certificate.pem", "ssl.certificate.location"); err != nil {
		return nil, err
	}
	if keyPEM, keyName, err = load("ssl.key.pem", "ssl.key.location"); err != nil {
		return nil, err
	}
	if path, ok := s.get("ssl.keystore.location"); ok {
		if certPEM != nil || keyPEM != nil {
			return nil, errors.New("ssl.keystore.location holds the key and the certificate: give it or the separate certificate and key settings, not both")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		certPEM, keyPEM = b, b
		certName, keyName = "ssl.keystore.location "+path, "ssl.keystore.location "+path
	}
	switch {
	case certPEM == nil && keyPEM == nil:
		return nil, nil
	case certPEM == nil:
		return nil, fmt.Errorf("%s is set but no client certificate: set ssl.certificate.location", strings.Fields(keyName)[0])
	case keyPEM == nil:
		return nil, fmt.Errorf("%s is set but no private key: set ssl.key.location", strings.Fields(certName)[0])
	}
	keyDER, err := privateKeyDER(keyPEM, keyName, s.v["ssl.key.password"])
	if err != nil {
		return nil, err
	}
	var chain []byte
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			chain = append(chain, pem.EncodeToMemory(b)...)
		}
	}
	if chain == nil {
		return nil, fmt.Errorf("%s: no PEM certificate", certName)
	}
	cert, err := tls.X509KeyPair(chain, pem.EncodeToMemory(keyDER))
	if err != nil {
		// crypto/tls says what is wrong (e.g. the key does not
		// match) and quotes neither.
		return nil, fmt.Errorf("client certificate (%s, %s): %w", certName, keyName, err)
	}
	return &cert, nil
}

// privateKeyDER finds the private key block of a PEM text. Its errors
// name the source, never the text (which may be a secret setting).
func privateKeyDER(text []byte, name, password string) (*pem.Block, error) {
	for rest := text; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, fmt.Errorf("%s: no PEM private key", name)
		}
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] == "4,ENCRYPTED":
			if password == "" {
				return nil, fmt.Errorf("%s: the private key is encrypted: set ssl.key.password", name)
			}
			return nil, fmt.Errorf("%s: encrypted private keys are not supported yet: decrypt it first (openssl pkey -in KEY -out PLAIN_KEY)", name)
		case b.Type == "PRIVATE KEY" || strings.HasSuffix(b.Type, " PRIVATE KEY"):
			return b, nil
		}
	}
}
