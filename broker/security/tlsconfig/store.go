package tlsconfig

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// fileStamp is what a reload check compares: the file's identity, size
// and modification time first, as they cost a stat, then the content's
// hash.
type fileStamp struct {
	path   string
	info   os.FileInfo
	readAt time.Time // when info was taken
	sum    [sha256.Size]byte
}

// racyWindow is how long after a file's mtime a stat is not trusted to
// show a later change: file systems stamp mtimes from a coarse clock (a
// jiffy, or seconds), so a rewrite soon after the read can keep size and
// mtime. Until the file has been quiet that long, checks hash it (as git
// treats "racily clean" entries).
const racyWindow = 2 * time.Second

// racy says whether st's stat may hide a change.
func (st fileStamp) racy() bool { return st.readAt.Sub(st.info.ModTime()) < racyWindow }

// fileSet records the files one build read, so a later check knows what
// to stat and what content the configuration came from.
type fileSet struct{ stamps []fileStamp }

func (fs *fileSet) read(setting, path string) ([]byte, error) {
	now := time.Now()
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &SettingError{Setting: setting, File: path, Err: bare(err)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &SettingError{Setting: setting, File: path, Err: bare(err)}
	}
	fs.stamps = append(fs.stamps, fileStamp{path: path, info: fi, readAt: now, sum: sha256.Sum256(b)})
	return b, nil
}

// bare drops the *fs.PathError around err: SettingError names the file.
func bare(err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

const (
	typePEM    = "PEM"
	typePKCS12 = "PKCS12"
	typeJKS    = "JKS"
)

// storeType normalises ssl.*store.type; empty is Kafka's default, JKS.
func storeType(setting, v string) (string, error) {
	switch t := strings.ToUpper(strings.TrimSpace(v)); t {
	case "":
		return typeJKS, nil
	case typePEM, typePKCS12, typeJKS:
		return t, nil
	}
	return "", &SettingError{Setting: setting, Err: fmt.Errorf("%w: %q is not PEM, PKCS12 or JKS", ErrInvalidSetting, v)}
}

// jksMagic opens every JKS file (and 0xCECECECE JCEKS, which the library
// does not read).
var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// sniff says which format a binary store file is in, as the JVM's
// keystore.type.compat does: JKS by its magic, PKCS12 by the DER
// SEQUENCE it opens with, PEM by its armour.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, jksMagic):
		return typeJKS
	case bytes.Contains(b[:min(len(b), 1024)], []byte("-----BEGIN ")):
		return typePEM
	case len(b) > 0 && b[0] == 0x30:
		return typePKCS12
	}
	return ""
}

// loadKeystore reads the keystore into one or more certificates (several
// when a JKS file holds several key entries). It returns nil, nil when no
// keystore is configured.
func loadKeystore(s Settings, fs *fileSet) ([]tls.Certificate, error) {
	typ, err := storeType(settingKeystoreType, s.KeystoreType)
	if err != nil {
		return nil, err
	}
	if s.KeystoreKey != "" || s.KeystoreCertificateChain != "" {
		if s.KeystoreType != "" && typ != typePEM {
			return nil, &SettingError{Setting: settingKeystoreKey, Err: fmt.Errorf("%w: inline keys are PEM only, but ssl.keystore.type is %s", ErrInvalidSetting, typ)}
		}
		switch {
		case s.KeystoreLocation != "":
			return nil, &SettingError{Setting: settingKeystoreKey, Err: fmt.Errorf("%w: both ssl.keystore.location and ssl.keystore.key are set", ErrInvalidSetting)}
		case s.KeystoreKey == "":
			return nil, &SettingError{Setting: settingKeystoreKey, Err: fmt.Errorf("%w: ssl.keystore.certificate.chain is set without ssl.keystore.key", ErrInvalidSetting)}
		case s.KeystoreCertificateChain == "":
			return nil, &SettingError{Setting: settingKeystoreChain, Err: fmt.Errorf("%w: ssl.keystore.key is set without ssl.keystore.certificate.chain", ErrInvalidSetting)}
		case s.KeystorePassword != "":
			return nil, &SettingError{Setting: settingKeystorePassword, Err: fmt.Errorf("%w: PEM keystores take only ssl.key.password", ErrInvalidSetting)}
		}
		cert, err := pemKeyPair([]byte(s.KeystoreKey), []byte(s.KeystoreCertificateChain), s.KeyPassword)
		if err != nil {
			return nil, &SettingError{Setting: settingKeystoreKey, Err: err}
		}
		return []tls.Certificate{cert}, nil
	}
	if s.KeystoreLocation == "" {
		return nil, nil
	}
	path := s.KeystoreLocation
	b, err := fs.read(settingKeystoreLocation, path)
	if err != nil {
		return nil, err
	}
	if typ == typePEM {
		if s.KeystorePassword != "" {
			return nil, &SettingError{Setting: settingKeystorePassword, File: path, Err: fmt.Errorf("%w: PEM keystores take only ssl.key.password", ErrInvalidSetting)}
		}
		cert, err := pemKeyPair(b, b, s.KeyPassword)
		if err != nil {
			return nil, &SettingError{Setting: settingKeystoreLocation, File: path, Err: err}
		}
		return []tls.Certificate{cert}, nil
	}
	if typ, err = binaryStoreType(b, settingKeystoreLocation, path, typ, "ssl.keystore.type", "keystore",
		" (JCEKS and other formats: convert with keytool -importkeystore -deststoretype PKCS12)"); err != nil {
		return nil, err
	}
	if s.KeystorePassword == "" {
		return nil, settingErr(settingKeystorePassword, path, "%w: ssl.keystore.location is set but ssl.keystore.password is not", ErrInvalidSetting)
	}
	var certs []tls.Certificate
	if typ == typePKCS12 {
		certs, err = pkcs12KeyPair(b, s.KeystorePassword)
	} else {
		keyPass := s.KeyPassword
		if keyPass == "" {
			keyPass = s.KeystorePassword
		}
		certs, err = jksKeyPairs(b, s.KeystorePassword, keyPass)
	}
	if err != nil {
		return nil, &SettingError{Setting: settingKeystoreLocation, File: path, Err: err}
	}
	return certs, nil
}

// loadTruststore reads the truststore into a pool; nil means none is
// configured and the system roots apply.
func loadTruststore(s Settings, fs *fileSet) (*x509.CertPool, error) {
	typ, err := storeType(settingTruststoreType, s.TruststoreType)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch {
	case s.TruststoreCertificates != "":
		if s.TruststoreType != "" && typ != typePEM {
			return nil, &SettingError{Setting: settingTruststoreCerts, Err: fmt.Errorf("%w: inline certificates are PEM only, but ssl.truststore.type is %s", ErrInvalidSetting, typ)}
		}
		if s.TruststoreLocation != "" {
			return nil, &SettingError{Setting: settingTruststoreCerts, Err: fmt.Errorf("%w: both ssl.truststore.location and ssl.truststore.certificates are set", ErrInvalidSetting)}
		}
		if s.TruststorePassword != "" {
			return nil, &SettingError{Setting: settingTruststorePassword, Err: fmt.Errorf("%w: PEM truststores take no password", ErrInvalidSetting)}
		}
		if certs, err = pemCertificates([]byte(s.TruststoreCertificates)); err != nil {
			return nil, &SettingError{Setting: settingTruststoreCerts, Err: err}
		}
	case s.TruststoreLocation != "":
		path := s.TruststoreLocation
		b, err := fs.read(settingTruststoreLocation, path)
		if err != nil {
			return nil, err
		}
		if typ != typePEM {
			if typ, err = binaryStoreType(b, settingTruststoreLocation, path, typ, "ssl.truststore.type", "truststore", ""); err != nil {
				return nil, err
			}
		}
		switch typ {
		case typePEM:
			if s.TruststorePassword != "" {
				return nil, settingErr(settingTruststorePassword, path, "%w: PEM truststores take no password", ErrInvalidSetting)
			}
			certs, err = pemCertificates(b)
		case typePKCS12:
			certs, err = pkcs12.DecodeTrustStore(b, s.TruststorePassword)
			err = pkcs12Error(err, "PKCS12 truststore")
		case typeJKS:
			certs, err = jksTrusted(b, s.TruststorePassword)
		}
		if err != nil {
			return nil, &SettingError{Setting: settingTruststoreLocation, File: path, Err: err}
		}
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pemBlock is one armoured block. Kafka's PEM parser takes blocks whose
// base64 runs on one line or is broken anywhere (inline values in a
// properties file often are), which encoding/pem does not, hence this.
type pemBlock struct {
	typ string
	der []byte
}

func pemBlocks(b []byte) ([]pemBlock, error) {
	var out []pemBlock
	s := string(b)
	for {
		i := strings.Index(s, "-----BEGIN ")
		if i < 0 {
			return out, nil
		}
		s = s[i+len("-----BEGIN "):]
		j := strings.Index(s, "-----")
		if j < 0 {
			return nil, errors.New("PEM block with no end to its BEGIN line")
		}
		typ := s[:j]
		s = s[j+5:]
		end := "-----END " + typ + "-----"
		k := strings.Index(s, end)
		if k < 0 {
			return nil, fmt.Errorf("PEM %s block with no %q", typ, end)
		}
		body := s[:k]
		s = s[k+len(end):]
		if strings.Contains(body, "Proc-Type:") || strings.Contains(body, "DEK-Info:") {
			return nil, fmt.Errorf("PEM %s block is encrypted in OpenSSL's legacy format, which Kafka does not read either; convert it with openssl pkcs8 -topk8 -v2 aes-256-cbc", typ)
		}
		body = strings.Map(func(r rune) rune {
			switch r {
			case ' ', '\t', '\r', '\n':
				return -1
			}
			return r
		}, body)
		der, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, fmt.Errorf("PEM %s block: bad base64", typ)
		}
		out = append(out, pemBlock{typ: typ, der: der})
	}
}

func pemCertificates(b []byte) ([]*x509.Certificate, error) {
	blocks, err := pemBlocks(b)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for i, bl := range blocks {
		if bl.typ != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(bl.der)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return certs, nil
}

// pemKeyPair reads the one private key in keyPEM and the chain in
// chainPEM (the same bytes for a keystore file).
func pemKeyPair(keyPEM, chainPEM []byte, keyPassword string) (tls.Certificate, error) {
	blocks, err := pemBlocks(keyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	var key crypto.Signer
	for _, bl := range blocks {
		if !strings.HasSuffix(bl.typ, "PRIVATE KEY") {
			continue
		}
		if key != nil {
			return tls.Certificate{}, errors.New("more than one private key")
		}
		if key, err = parsePEMKey(bl, keyPassword); err != nil {
			return tls.Certificate{}, err
		}
	}
	if key == nil {
		return tls.Certificate{}, errors.New("no PEM PRIVATE KEY block")
	}
	chain, err := pemCertificates(chainPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	return keyPair(key, chain)
}

func parsePEMKey(bl pemBlock, keyPassword string) (crypto.Signer, error) {
	var k any
	var err error
	switch bl.typ {
	case "ENCRYPTED PRIVATE KEY":
		if keyPassword == "" {
			return nil, fmt.Errorf("%w: the private key is encrypted but ssl.key.password is not set", ErrInvalidSetting)
		}
		k, err = pkcs8.ParsePKCS8PrivateKey(bl.der, []byte(keyPassword))
		if err != nil {
			// The library's messages carry no secrets; say what it most
			// likely is.
			return nil, fmt.Errorf("cannot decrypt the private key (wrong ssl.key.password, or not PKCS#8 PBES2): %w", err)
		}
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(bl.der)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(bl.der)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(bl.der)
	default:
		return nil, fmt.Errorf("PEM %q block is not a private key this package reads (PRIVATE KEY, ENCRYPTED PRIVATE KEY, RSA PRIVATE KEY, EC PRIVATE KEY)", bl.typ)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", strings.ToLower(bl.typ), err)
	}
	return signer(k)
}

func signer(k any) (crypto.Signer, error) {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("private key of type %T cannot sign TLS handshakes", k)
}

// keyPair puts the certificate that matches key first, as the leaf.
func keyPair(key crypto.Signer, chain []*x509.Certificate) (tls.Certificate, error) {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	leaf := slices.IndexFunc(chain, func(c *x509.Certificate) bool {
		pub, ok := c.PublicKey.(equaler)
		return ok && pub.Equal(key.Public())
	})
	if leaf < 0 {
		return tls.Certificate{}, errors.New("the private key matches none of the certificates")
	}
	if leaf != 0 {
		chain = append([]*x509.Certificate{chain[leaf]}, slices.Delete(slices.Clone(chain), leaf, leaf+1)...)
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

func pkcs12Error(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pkcs12.ErrIncorrectPassword), errors.Is(err, pkcs12.ErrDecryption):
		return fmt.Errorf("%s: wrong password", what)
	case strings.Contains(err.Error(), "not marked as trusted"):
		return fmt.Errorf("%s holds certificates that are not trusted entries; make it with keytool -importcert, or use a PEM truststore: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func pkcs12KeyPair(b []byte, password string) ([]tls.Certificate, error) {
	k, leaf, cas, err := pkcs12.DecodeChain(b, password)
	if err != nil {
		return nil, pkcs12Error(err, "PKCS12 keystore")
	}
	key, err := signer(k)
	if err != nil {
		return nil, err
	}
	cert, err := keyPair(key, append([]*x509.Certificate{leaf}, cas...))
	if err != nil {
		return nil, err
	}
	return []tls.Certificate{cert}, nil
}

func loadJKS(b []byte, password string) (keystore.KeyStore, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(b), []byte(password)); err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return ks, errors.New("JKS store: wrong password or corrupt file")
		}
		return ks, fmt.Errorf("JKS store: %w", err)
	}
	return ks, nil
}

// jksKeyPairs returns every private key entry, in alias order; crypto/tls
// picks among them per handshake as Java's key manager does.
func jksKeyPairs(b []byte, storePassword, keyPassword string) ([]tls.Certificate, error) {
	ks, err := loadJKS(b, storePassword)
	if err != nil {
		return nil, err
	}
	var out []tls.Certificate
	for _, alias := range ks.Aliases() { // sorted
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
		if err != nil {
			return nil, fmt.Errorf("JKS key entry %q: cannot decrypt (wrong ssl.key.password?)", alias)
		}
		k, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("JKS key entry %q: %w", alias, err)
		}
		key, err := signer(k)
		if err != nil {
			return nil, fmt.Errorf("JKS key entry %q: %w", alias, err)
		}
		var chain []*x509.Certificate
		for _, c := range e.CertificateChain {
			xc, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, fmt.Errorf("JKS key entry %q: %w", alias, err)
			}
			chain = append(chain, xc)
		}
		cert, err := keyPair(key, chain)
		if err != nil {
			return nil, fmt.Errorf("JKS key entry %q: %w", alias, err)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, errors.New("JKS keystore holds no private key entry")
	}
	return out, nil
}

func jksTrusted(b []byte, password string) ([]*x509.Certificate, error) {
	if password == "" {
		return nil, fmt.Errorf("%w: reading a JKS truststore needs ssl.truststore.password (its integrity check uses it)", ErrInvalidSetting)
	}
	ks, err := loadJKS(b, password)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsTrustedCertificateEntry(alias) {
			continue
		}
		e, err := ks.GetTrustedCertificateEntry(alias)
		if err != nil {
			return nil, fmt.Errorf("JKS entry %q: %w", alias, err)
		}
		c, err := x509.ParseCertificate(e.Certificate.Content)
		if err != nil {
			return nil, fmt.Errorf("JKS entry %q: %w", alias, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("JKS truststore holds no trusted certificate entry")
	}
	return certs, nil
}

// binaryStoreType is the type of a JKS or PKCS12 store file by its first
// bytes, whichever of the two its type setting names, as Java reads
// either; a PEM file, or a file of neither kind, is an error naming the
// location setting (what: keystore or truststore; hint ends the message).
func binaryStoreType(b []byte, setting, path, configured, typeSetting, what, hint string) (string, error) {
	switch t := sniff(b); t {
	case typeJKS, typePKCS12:
		return t, nil
	case typePEM:
		return "", settingErr(setting, path, "%w: the file is PEM but "+typeSetting+" is %s; set "+typeSetting+"=PEM", ErrInvalidSetting, configured)
	}
	return "", settingErr(setting, path, "%w: neither a JKS nor a PKCS12 "+what+hint, ErrInvalidSetting)
}
