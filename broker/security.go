//go:build linux

package broker

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	ksasl "github.com/twmb/franz-go/pkg/sasl"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/qk-project/qk/broker/api"
	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller/channel"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/security/plain"
	"github.com/qk-project/qk/broker/security/sasl"
	"github.com/qk-project/qk/broker/security/scram"
	"github.com/qk-project/qk/broker/security/tlsconfig"
)

// listenerSecurity is what the broker built from one listener's security
// settings: the TLS server of an SSL or SASL_SSL listener (nil
// otherwise), and how the api layer authenticates its clients.
type listenerSecurity struct {
	tls  *tlsconfig.Server
	auth *api.ListenerAuth
	// maxBeforeAuth is sasl.server.max.receive.size on SASL listeners.
	maxBeforeAuth int32
}

// buildListenerSecurity reads the key and trust stores and the JAAS
// configurations of every listener; an unreadable store or a malformed
// JAAS line stops the start with an error that names the setting.
func (s *Server) buildListenerSecurity(cfg *config.Broker) (map[string]*listenerSecurity, error) {
	out := make(map[string]*listenerSecurity, len(cfg.Listeners))
	for _, l := range cfg.Listeners {
		sec := cfg.ListenerSecurity(l.Name)
		ls := &listenerSecurity{auth: &api.ListenerAuth{SecurityProtocol: sec.SecurityProtocol}}
		switch sec.SecurityProtocol {
		case "SSL", "SASL_SSL":
			srv, err := tlsconfig.NewServer(tlsconfig.Settings(sec.SSL), s.lg.With("listener", l.Name))
			if err != nil {
				return nil, fmt.Errorf("broker: listener %s: %w", l.Name, err)
			}
			ls.tls = srv
			rules, err := tlsconfig.ParseRules(sec.SSL.PrincipalMappingRules)
			if err != nil {
				return nil, fmt.Errorf("broker: listener %s: %w", l.Name, err)
			}
			ls.auth.SSLPrincipal = func(c *x509.Certificate) (string, error) { return rules.Principal(c) }
		}
		switch sec.SecurityProtocol {
		case "SASL_PLAINTEXT", "SASL_SSL":
			sc, err := s.saslConfig(l.Name, sec)
			if err != nil {
				return nil, err
			}
			ls.auth.SASL = sc
			ls.maxBeforeAuth = int32(sec.SASLServerMaxReceiveSize)
		}
		out[l.Name] = ls
	}
	return out, nil
}

// saslConfig is a SASL listener's configuration: its mechanisms, the
// PLAIN users of its JAAS line, SCRAM credentials from the metadata
// cache (/config/users), and connections.max.reauth.ms.
func (s *Server) saslConfig(listener string, sec config.ListenerSecurity) (*sasl.Config, error) {
	sc := &sasl.Config{
		Mechanisms: sec.SASLEnabledMechanisms,
		MaxReauth:  time.Duration(sec.ConnectionsMaxReauthMs) * time.Millisecond,
		Scram: func(user string, m scram.Mechanism) (scram.Credential, bool) {
			if s.cache == nil {
				return scram.Credential{}, false
			}
			return s.cache.Snapshot().ScramCredential(user, m)
		},
	}
	for _, m := range sec.SASLEnabledMechanisms {
		if m != sasl.Plain {
			continue
		}
		key := config.ListenerKeyName(listener, m, "sasl.jaas.config")
		j, err := plain.ParseJAAS(sec.JAAS[m])
		if err != nil {
			return nil, fmt.Errorf("broker: %s: %w", key, err)
		}
		if sc.PlainUsers, err = j.Users(); err != nil {
			return nil, fmt.Errorf("broker: %s: %w", key, err)
		}
	}
	return sc, nil
}

// networkListeners are the listeners for the network layer, with TLS
// and the pre-authentication frame limit where the security protocol
// asks for them.
func networkListeners(cfg *config.Broker, sec map[string]*listenerSecurity) []network.Listener {
	ls := make([]network.Listener, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		ls[i] = network.Listener{Name: l.Name, Host: l.Host, Port: l.Port}
		if s := sec[l.Name]; s != nil {
			if s.tls != nil {
				ls[i].TLS = s.tls.Config()
			}
			ls[i].MaxRequestSizeBeforeAuth = s.maxBeforeAuth
		}
	}
	return ls
}

// interBrokerClient is how this broker connects to the others'
// inter-broker listener (replica fetchers, the controller's channel,
// AlterPartition, controlled shutdown), as Kafka's inter-broker clients
// do: TLS with the listener's own key store (as the client certificate)
// and trust store, and SASL with sasl.mechanism.inter.broker.protocol and
// the username and password of that mechanism's JAAS line.
type interBrokerClient struct {
	tls  *tls.Config
	sasl ksasl.Mechanism
}

func newInterBrokerClient(cfg *config.Broker) (*interBrokerClient, error) {
	name := cfg.InterBrokerListenerName
	sec := cfg.ListenerSecurity(name)
	c := &interBrokerClient{}
	switch sec.SecurityProtocol {
	case "SSL", "SASL_SSL":
		t, err := tlsconfig.Client(tlsconfig.Settings(sec.SSL), "")
		if err != nil {
			return nil, fmt.Errorf("broker: inter-broker listener %s: %w", name, err)
		}
		c.tls = t
	}
	switch sec.SecurityProtocol {
	case "SASL_PLAINTEXT", "SASL_SSL":
		mech := cfg.SASLMechanismInterBrokerProtocol
		key := config.ListenerKeyName(name, mech, "sasl.jaas.config")
		j, err := plain.ParseJAAS(sec.JAAS[mech])
		if err != nil {
			return nil, fmt.Errorf("broker: inter-broker SASL: %s: %w", key, err)
		}
		user, pass := j.Options["username"], j.Options["password"]
		if user == "" || pass == "" {
			return nil, fmt.Errorf("broker: inter-broker SASL: %s has no username and password options, "+
				"which the broker authenticates to the others with", key)
		}
		switch strings.ToUpper(mech) {
		case sasl.Plain:
			c.sasl = kplain.Auth{User: user, Pass: pass}.AsMechanism()
		case sasl.ScramSHA256:
			c.sasl = kscram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case sasl.ScramSHA512:
			c.sasl = kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("broker: sasl.mechanism.inter.broker.protocol %s is not implemented", mech)
		}
	}
	return c, nil
}

// channelConfig adds the inter-broker client's TLS and SASL to the
// configuration of a channel to other brokers.
func (s *Server) channelConfig(c channel.Config) channel.Config {
	if ib := s.interBroker; ib != nil {
		c.TLS, c.SASL = ib.tls, ib.sasl
	}
	return c
}
