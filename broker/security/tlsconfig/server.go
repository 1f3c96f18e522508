package tlsconfig

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// checkInterval is how often, at most, a handshake stats the store files.
const checkInterval = time.Second

// Server is the TLS side of one SSL or SASL_SSL listener. Its
// configuration follows the keystore and truststore files: see Reload.
type Server struct {
	settings Settings
	params   params
	auth     tls.ClientAuthType
	rules    *Rules
	lg       *slog.Logger
	interval time.Duration

	current   atomic.Pointer[tls.Config] // what handshakes use
	lastCheck atomic.Int64               // unix nanos of the last stat pass

	mu     sync.Mutex  // serialises checks and rebuilds
	stamps []fileStamp // the files current was built from
	failed [sha256.Size]byte
}

// NewServer builds the listener's configuration from its settings and
// reads the stores once; an error here is a configuration the broker must
// not start with. (The type takes the name Server, so the constructor is
// NewServer.)
func NewServer(s Settings, lg *slog.Logger) (*Server, error) {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	lg = lg.With("component", "tls")
	p, err := parseParams(s)
	if err != nil {
		return nil, err
	}
	auth, err := clientAuth(s.ClientAuth)
	if err != nil {
		return nil, err
	}
	rules, err := ParseRules(s.PrincipalMappingRules)
	if err != nil {
		return nil, &SettingError{Setting: settingPrincipalMapping, Err: err}
	}
	if len(p.skippedProtocols) > 0 {
		lg.Warn("skipping disabled tls protocols", "protocols", strings.Join(p.skippedProtocols, ","))
	}
	if len(p.insecureSuites) > 0 {
		lg.Warn("enabling insecure cipher suites", "cipher_suites", strings.Join(p.insecureSuites, ","))
	}
	srv := &Server{settings: s, params: p, auth: auth, rules: rules, lg: lg, interval: checkInterval}
	cfg, fs, err := srv.build()
	if err != nil {
		return nil, err
	}
	srv.current.Store(cfg)
	srv.stamps = fs.stamps
	srv.lastCheck.Store(time.Now().UnixNano())
	return srv, nil
}

// build reads the stores and makes the configuration handshakes use.
func (s *Server) build() (*tls.Config, *fileSet, error) {
	fs := &fileSet{}
	certs, err := loadKeystore(s.settings, fs)
	if err != nil {
		return nil, fs, err
	}
	if len(certs) == 0 {
		return nil, fs, &SettingError{Setting: settingKeystoreLocation, Err: fmt.Errorf("%w: a TLS listener needs a keystore (ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain)", ErrInvalidSetting)}
	}
	pool, err := loadTruststore(s.settings, fs)
	if err != nil {
		return nil, fs, err
	}
	cfg := &tls.Config{
		Certificates: certs,
		ClientAuth:   s.auth,
		ClientCAs:    pool, // nil: the system roots
		MinVersion:   s.params.minVersion,
		MaxVersion:   s.params.maxVersion,
		CipherSuites: s.params.cipherSuites,
	}
	return cfg, fs, nil
}

// Config returns the configuration to give tls.NewListener or
// tls.Server; each call returns a new one, all following the same
// stores. It carries no certificate of its own: each handshake takes the
// current one through GetConfigForClient, so a reload reaches new
// connections without a restart and leaves established ones alone.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion:         s.params.minVersion,
		MaxVersion:         s.params.maxVersion,
		GetConfigForClient: s.configForClient,
	}
}

func (s *Server) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	if time.Now().UnixNano()-s.lastCheck.Load() >= int64(s.interval) {
		s.check(false)
	}
	return s.current.Load(), nil
}

// Reload checks the store files now and, when their content changed,
// rebuilds the configuration. A change that fails to parse is returned,
// logged once, and the previous configuration stays in use.
func (s *Server) Reload() error {
	return s.check(true)
}

// check compares the files with the stamps of the current configuration.
// Unforced, it reads them only when a stat shows another file, size or
// mtime, or when the last read was too soon after the mtime to trust it.
func (s *Server) check(force bool) error {
	if force {
		s.mu.Lock()
	} else if !s.mu.TryLock() {
		return nil // another handshake is checking; use what is current
	}
	defer s.mu.Unlock()
	s.lastCheck.Store(time.Now().UnixNano())
	if len(s.stamps) == 0 {
		return nil // inline PEM only: nothing to follow
	}
	if !force && !s.statChanged() {
		return nil
	}
	// Hash what is on disk now; same content under a new mtime (a touch,
	// a copy of the same file) rebuilds nothing.
	changed, sum := s.contentChanged()
	if !changed || (!force && sum == s.failed) {
		return nil // unchanged, or the breakage already warned about
	}
	cfg, fs, err := s.build()
	if err != nil {
		if sum != s.failed {
			s.failed = sum
			s.lg.Warn("tls store reload failed, keeping the previous certificates", "err", err)
		}
		return err
	}
	s.current.Store(cfg)
	s.stamps = fs.stamps
	s.failed = [sha256.Size]byte{}
	s.lg.Info("reloaded tls stores", "files", strings.Join(paths(fs.stamps), ","), "subject", subject(cfg))
	return nil
}

func (s *Server) statChanged() bool {
	for _, st := range s.stamps {
		fi, err := os.Stat(st.path)
		if err != nil || st.racy() || !os.SameFile(fi, st.info) || fi.Size() != st.info.Size() || !fi.ModTime().Equal(st.info.ModTime()) {
			return true
		}
	}
	return false
}

// contentChanged hashes the files; sum identifies the whole set, so a
// failed parse is warned about once per distinct content.
func (s *Server) contentChanged() (changed bool, sum [sha256.Size]byte) {
	h := sha256.New()
	for i, st := range s.stamps {
		b, err := os.ReadFile(st.path)
		if err != nil {
			// Hash the error so a file that stays missing warns once.
			fmt.Fprintf(h, "%d:%v", i, err)
			changed = true
			continue
		}
		fsum := sha256.Sum256(b)
		h.Write(fsum[:])
		if fsum != st.sum {
			changed = true
		}
	}
	copy(sum[:], h.Sum(nil))
	if !changed {
		// Refresh the stamps so the next stat pass is quiet again (once
		// the files are past racyWindow).
		now := time.Now()
		for i := range s.stamps {
			if fi, err := os.Stat(s.stamps[i].path); err == nil {
				s.stamps[i].info, s.stamps[i].readAt = fi, now
			}
		}
	}
	return changed, sum
}

func paths(st []fileStamp) []string {
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = s.path
	}
	return out
}

func subject(cfg *tls.Config) string {
	if len(cfg.Certificates) == 0 || cfg.Certificates[0].Leaf == nil {
		return ""
	}
	return cfg.Certificates[0].Leaf.Subject.String()
}

// Anonymous is the principal name Kafka gives a TLS client that sent no
// certificate (KafkaPrincipal.ANONYMOUS).
const Anonymous = "ANONYMOUS"

// Principal is the name part of the connection's principal (the caller
// prefixes "User:"), from the client's certificate and the listener's
// ssl.principal.mapping.rules; Anonymous without a certificate.
func (s *Server) Principal(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	return s.rules.Principal(cs.PeerCertificates[0])
}
