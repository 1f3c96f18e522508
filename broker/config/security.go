package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Listener-prefixed settings. Kafka reads a listener's security settings
// with the listener's prefix first, listener.name.<listener name
// lower-cased>.<key> over <key> (ListenerName.configPrefix and
// AbstractConfig.valuesWithPrefixOverride), and a broker's JAAS only with
// the SASL mechanism added, listener.name.<l>.<mechanism lower-cased>.
// sasl.jaas.config (JaasContext.loadServerContext). The keys that may be
// prefixed are marked Key.PerListener.

// listenerPrefix starts every listener-prefixed setting.
const listenerPrefix = "listener.name."

// envListenerPrefix starts the environment variables of listener-prefixed
// settings: QK_LISTENER_NAME_<LISTENER>_<KEY>.
const envListenerPrefix = envPrefix + "LISTENER_NAME_"

const jaasKey = "sasl.jaas.config"

// ImplementedMechanisms are the SASL mechanisms qk serves.
var ImplementedMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// saslMechanisms are the mechanisms an environment variable of a
// mechanism-prefixed JAAS setting may name: qk's and Kafka's others, so
// that a variable for those is understood (and then refused by the check
// of sasl.enabled.mechanisms, not ignored as unknown).
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"}

// ListenerSecurity is the resolved security settings of one listener:
// listener.name.<l>.<key> over <key>.
type ListenerSecurity struct {
	Name             string // upper-case listener name
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
	SSL              SSL    // meaningful for SSL and SASL_SSL
	// SASLEnabledMechanisms is sasl.enabled.mechanisms, upper-cased.
	// Meaningful for SASL_PLAINTEXT and SASL_SSL, where Load has checked
	// that qk implements each of them.
	SASLEnabledMechanisms []string
	// JAAS maps a mechanism (upper-case, e.g. "PLAIN", "SCRAM-SHA-512") to its
	// listener.name.<l>.<mech>.sasl.jaas.config value (Kafka reads broker JAAS only prefixed).
	JAAS                     map[string]string
	ConnectionsMaxReauthMs   int64
	SASLServerMaxReceiveSize int
}

// SSL is the TLS settings of a listener, as given: qk's config package
// reads no key or certificate file (the TLS layer does).
type SSL struct {
	KeystoreType, KeystoreLocation, KeystorePassword, KeyPassword string
	KeystoreKey, KeystoreCertificateChain                         string // inline PEM
	TruststoreType, TruststoreLocation, TruststorePassword        string
	TruststoreCertificates                                        string // inline PEM
	// ClientAuth is "none", "requested" or "required", lower-cased. On a
	// SASL_SSL listener only listener.name.<l>.ssl.client.auth counts, as
	// in Kafka: the unprefixed ssl.client.auth does not apply there.
	ClientAuth                      string
	EnabledProtocols                []string
	Protocol                        string
	CipherSuites                    []string
	EndpointIdentificationAlgorithm string
	PrincipalMappingRules           string
}

// ListenerSecurity returns the security settings of the listener called
// name (any case); the zero value when there is no such listener.
func (b *Broker) ListenerSecurity(name string) ListenerSecurity {
	s, ok := b.security[strings.ToUpper(name)]
	if !ok {
		return ListenerSecurity{}
	}
	s.SASLEnabledMechanisms = slices.Clone(s.SASLEnabledMechanisms)
	s.SSL.EnabledProtocols = slices.Clone(s.SSL.EnabledProtocols)
	s.SSL.CipherSuites = slices.Clone(s.SSL.CipherSuites)
	s.JAAS = maps.Clone(s.JAAS)
	return s
}

// ListenerKeyName is the name of key prefixed for listener and, for
// sasl.jaas.config, mechanism (empty for none):
// ListenerKeyName("SASL_SSL", "SCRAM-SHA-512", "sasl.jaas.config") is
// listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config.
func ListenerKeyName(listener, mechanism, key string) string {
	n := listenerPrefix + strings.ToLower(listener) + "."
	if mechanism != "" {
		n += strings.ToLower(mechanism) + "."
	}
	return n + key
}

// listenerKey is a listener-prefixed setting, parsed.
type listenerKey struct {
	Listener  string // upper-case
	Mechanism string // upper-case, for <mechanism>.sasl.jaas.config; else empty
	Base      *Key
}

// matchListenerKey parses name (lower-case) as a prefixed setting of one
// of listeners (upper-case names). Matching against the listeners, rather
// than splitting on dots, keeps a listener name with a dot in it whole.
func matchListenerKey(name string, listeners []string) (listenerKey, bool) {
	for _, l := range listeners {
		rest, ok := strings.CutPrefix(name, ListenerKeyName(l, "", ""))
		if !ok {
			continue
		}
		if k := brokerKeys[rest]; k != nil && k.PerListener {
			return listenerKey{Listener: l, Base: k}, true
		}
		if mech, ok := strings.CutSuffix(rest, "."+jaasKey); ok && mech != "" && !strings.Contains(mech, ".") {
			return listenerKey{Listener: l, Mechanism: strings.ToUpper(mech), Base: brokerKeys[jaasKey]}, true
		}
	}
	return listenerKey{}, false
}

// listenerKeyWarning explains why a listener-prefixed name matched no
// listener's setting: the listener is not in listeners (Kafka ignores
// such a key too: nothing reads it), or the key cannot be prefixed.
func listenerKeyWarning(name string, src Source) Warning {
	rest := strings.TrimPrefix(name, listenerPrefix)
	for i := range len(rest) {
		if rest[i] != '.' {
			continue
		}
		l, key := rest[:i], rest[i+1:]
		k := brokerKeys[key]
		if k == nil {
			continue
		}
		if !k.PerListener {
			return Warning{Key: name, Source: src, Message: "unknown key, ignored: " + key +
				" cannot be set per listener; only the ssl.*, sasl.* and connections.max.reauth.ms settings can"}
		}
		if key == jaasKey {
			if j := strings.LastIndexByte(l, '.'); j > 0 {
				l = l[:j] // listener.name.<l>.<mechanism>.sasl.jaas.config
			}
		}
		return Warning{Key: name, Source: src, Message: fmt.Sprintf(
			"listener %s is not in listeners, ignored", strings.ToUpper(l))}
	}
	return unknownWarning(name, src)
}

// envWord is s as it appears in an environment variable: upper-cased,
// '.' and '-' as '_' (SCRAM-SHA-512: SCRAM_SHA_512).
func envWord(s string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(s))
}

// matchListenerEnv returns the listener-prefixed settings the variable
// v (QK_LISTENER_NAME_...) can name: QK_LISTENER_NAME_, the listener name
// as in listeners, '_', then the setting as in its own variable
// (SSL_KEYSTORE_PASSWORD) or, for JAAS, the mechanism with '-' as '_' and
// _SASL_JAAS_CONFIG. Listener names and mechanisms contain '_' and '-',
// so a variable can fit two settings (listeners SASL and SASL_PLAIN:
// QK_LISTENER_NAME_SASL_PLAIN_SASL_JAAS_CONFIG); the caller refuses those.
func matchListenerEnv(v string, listeners []string) []string {
	rest := strings.TrimPrefix(v, envListenerPrefix)
	var out []string
	for _, l := range listeners {
		key, ok := strings.CutPrefix(rest, envWord(l)+"_")
		if !ok {
			continue
		}
		if name := envNames[envPrefix+key]; name != "" && brokerKeys[name].PerListener {
			out = append(out, ListenerKeyName(l, "", name))
		}
		if mech, ok := strings.CutSuffix(key, "_"+envWord(jaasKey)); ok {
			for _, m := range saslMechanisms {
				if envWord(m) == mech {
					out = append(out, ListenerKeyName(l, m, jaasKey))
				}
			}
		}
	}
	return out
}

// listenerCandidate is a listener-prefixed value from a source, before the
// listeners are known.
type listenerCandidate struct {
	name, raw string // name lower-cased; for env, the variable
	src       Source
}

// resolveListenerCandidates matches the candidates, lowest precedence
// first, against the listeners' names and returns the winning value of
// each setting.
func resolveListenerCandidates(cands []listenerCandidate, listeners []string) (map[string]value, []Warning) {
	out := map[string]value{}
	var warns []Warning
	for _, c := range cands {
		name := c.name
		if c.src.Kind == SourceEnv {
			names := matchListenerEnv(c.name, listeners)
			switch len(names) {
			case 0:
				guess := strings.ToLower(strings.ReplaceAll(c.name[len(envPrefix):], "_", "."))
				warns = append(warns, listenerKeyWarning(guess, c.src))
				continue
			case 1:
				name = names[0]
			default:
				warns = append(warns, Warning{Key: strings.Join(names, " or "), Source: c.src,
					Message: "ambiguous variable, ignored: set the key in the config file or with --set"})
				continue
			}
		}
		if _, ok := matchListenerKey(name, listeners); !ok {
			warns = append(warns, listenerKeyWarning(name, c.src))
			continue
		}
		out[name] = value{Raw: c.raw, Source: c.src}
	}
	return out, warns
}

// listenerNames returns the names in a raw listeners value; nil when it
// does not parse (newBroker then reports the error).
func listenerNames(raw string) []string {
	items, _ := parseType(TypeList, raw)
	ls, err := parseListeners(items.([]string))
	if err != nil {
		return nil
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

// keyOf returns the registry key of a broker setting or of a
// listener-prefixed one (its base key); nil when name is neither.
func (b *Broker) keyOf(name string) *Key {
	if k := brokerKeys[name]; k != nil {
		return k
	}
	if lk, ok := b.listenerKeys[name]; ok {
		return lk.Base
	}
	return nil
}

// perListener returns the name that sets key for listener: the prefixed
// one when it is set, else key itself; ok is false when neither is set
// (a null default).
func (b *Broker) perListener(listener, key string) (name string, ok bool) {
	if p := ListenerKeyName(listener, "", key); hasKey(b.eff, p) {
		return p, true
	}
	_, ok = b.eff[key]
	return key, ok
}

// addListenerKeys normalizes the listener-prefixed static values with
// their base keys' types and validators, once the listeners are known.
func (b *Broker) addListenerKeys(in map[string]value) error {
	names := make([]string, len(b.Listeners))
	for i, l := range b.Listeners {
		names[i] = l.Name
	}
	b.listenerKeys = map[string]listenerKey{}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		v := in[name]
		lk, ok := matchListenerKey(name, names)
		if !ok { // Load drops these with a warning; this is a broken invariant's last word
			return &ValueError{Key: name, Value: hidden, Source: v.Source, Problem: "not a setting of a listener in listeners",
				Want: "listener.name.<a name in listeners, lower-cased>.<an ssl.* or sasl.* key>"}
		}
		norm, err := lk.Base.Normalize(v.Raw)
		if err != nil {
			err = withSource(err, v.Source)
			if ve, ok := err.(*ValueError); ok {
				ve.Key = name
			}
			return err
		}
		b.listenerKeys[name] = lk
		b.static[name] = value{Raw: norm, Source: v.Source}
		b.eff[name] = b.static[name]
	}
	return nil
}

// resolveSecurity builds every listener's ListenerSecurity and checks what
// qk can serve.
func (b *Broker) resolveSecurity() error {
	b.SASLMechanismInterBrokerProtocol = strings.ToUpper(b.SASLMechanismInterBrokerProtocol)
	if v, ok := b.eff["super.users"]; ok {
		b.SuperUsers, _ = ParseSuperUsers(v.Raw)
	}
	b.security = make(map[string]ListenerSecurity, len(b.Listeners))
	for _, l := range b.Listeners {
		s := b.listenerSecurity(l)
		if err := b.checkListenerSecurity(s); err != nil {
			return err
		}
		b.security[l.Name] = s
	}

	ib := b.security[b.InterBrokerListenerName]
	if strings.HasPrefix(ib.SecurityProtocol, "SASL_") &&
		!slices.Contains(ib.SASLEnabledMechanisms, b.SASLMechanismInterBrokerProtocol) {
		mkey, _ := b.perListener(ib.Name, "sasl.enabled.mechanisms")
		return b.valueErr("sasl.mechanism.inter.broker.protocol",
			fmt.Sprintf("not enabled on the inter-broker listener %s (%s=%s)", ib.Name, mkey, strings.Join(ib.SASLEnabledMechanisms, ",")),
			"one of the inter-broker listener's sasl.enabled.mechanisms")
	}
	return nil
}

func (b *Broker) listenerSecurity(l Listener) ListenerSecurity {
	str := func(key string) string {
		name, _ := b.perListener(l.Name, key)
		return b.eff[name].Raw
	}
	list := func(key string) []string {
		name, ok := b.perListener(l.Name, key)
		if !ok {
			return nil
		}
		p, _ := b.keyOf(name).Parse(b.eff[name].Raw)
		return p.([]string)
	}
	num := func(key string) int64 {
		name, _ := b.perListener(l.Name, key)
		p, _ := b.keyOf(name).Parse(b.eff[name].Raw)
		return toInt64(p)
	}
	clientAuth := str("ssl.client.auth")
	if l.SecurityProtocol == "SASL_SSL" {
		// ChannelBuilders: "SSL client authentication is enabled in
		// brokers for SASL_SSL only if listener-prefixed config is
		// specified."
		clientAuth = "none"
		if v, ok := b.eff[ListenerKeyName(l.Name, "", "ssl.client.auth")]; ok {
			clientAuth = v.Raw
		}
	}
	s := ListenerSecurity{
		Name:             l.Name,
		SecurityProtocol: l.SecurityProtocol,
		SSL: SSL{
			KeystoreType:                    str("ssl.keystore.type"),
			KeystoreLocation:                str("ssl.keystore.location"),
			KeystorePassword:                str("ssl.keystore.password"),
			KeyPassword:                     str("ssl.key.password"),
			KeystoreKey:                     str("ssl.keystore.key"),
			KeystoreCertificateChain:        str("ssl.keystore.certificate.chain"),
			TruststoreType:                  str("ssl.truststore.type"),
			TruststoreLocation:              str("ssl.truststore.location"),
			TruststorePassword:              str("ssl.truststore.password"),
			TruststoreCertificates:          str("ssl.truststore.certificates"),
			ClientAuth:                      strings.ToLower(clientAuth),
			EnabledProtocols:                list("ssl.enabled.protocols"),
			Protocol:                        str("ssl.protocol"),
			CipherSuites:                    list("ssl.cipher.suites"),
			EndpointIdentificationAlgorithm: str("ssl.endpoint.identification.algorithm"),
			PrincipalMappingRules:           str("ssl.principal.mapping.rules"),
		},
		ConnectionsMaxReauthMs:   num("connections.max.reauth.ms"),
		SASLServerMaxReceiveSize: int(num("sasl.server.max.receive.size")),
		JAAS:                     map[string]string{},
	}
	for _, m := range list("sasl.enabled.mechanisms") {
		s.SASLEnabledMechanisms = append(s.SASLEnabledMechanisms, strings.ToUpper(m))
	}
	for name, lk := range b.listenerKeys {
		if lk.Listener == l.Name && lk.Mechanism != "" {
			s.JAAS[lk.Mechanism] = b.eff[name].Raw
		}
	}
	return s
}

// mechanismsWant is what an error about sasl.enabled.mechanisms asks for.
const mechanismsWant = "mechanisms qk implements, e.g. sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512 " +
	"(Kafka's default is GSSAPI, which qk does not implement, so a SASL listener always needs this setting)"

// checkListenerSecurity refuses a listener qk cannot serve as configured.
// It reads no key or certificate file: the TLS layer does.
func (b *Broker) checkListenerSecurity(s ListenerSecurity) error {
	if strings.HasPrefix(s.SecurityProtocol, "SASL_") {
		mkey, _ := b.perListener(s.Name, "sasl.enabled.mechanisms")
		if len(s.SASLEnabledMechanisms) == 0 {
			return b.valueErr(mkey, fmt.Sprintf("listener %s (%s) enables no SASL mechanism", s.Name, s.SecurityProtocol), mechanismsWant)
		}
		for _, m := range s.SASLEnabledMechanisms {
			if !slices.Contains(ImplementedMechanisms, m) {
				return b.valueErr(mkey, fmt.Sprintf("listener %s (%s) enables %s, which qk does not implement", s.Name, s.SecurityProtocol, m), mechanismsWant)
			}
		}
		if jaas := ListenerKeyName(s.Name, "PLAIN", jaasKey); slices.Contains(s.SASLEnabledMechanisms, "PLAIN") && s.JAAS["PLAIN"] == "" {
			return b.valueErr(mkey, fmt.Sprintf("listener %s enables PLAIN but %s is not set", s.Name, jaas),
				jaas+`=org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>="<password>" ...; `+
					"listing the users PLAIN accepts, or no PLAIN")
		}
	}
	if s.SecurityProtocol == "SSL" || s.SecurityProtocol == "SASL_SSL" {
		if s.SSL.KeystoreLocation == "" && s.SSL.KeystoreKey == "" {
			return b.valueErr("listeners", fmt.Sprintf("listener %s uses %s but has no key store", s.Name, s.SecurityProtocol),
				fmt.Sprintf("ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain (also as %s)",
					ListenerKeyName(s.Name, "", "ssl.keystore.location")))
		}
		if s.SSL.KeystoreKey != "" {
			kkey, _ := b.perListener(s.Name, "ssl.keystore.key")
			if s.SSL.KeystoreCertificateChain == "" {
				return b.valueErr(kkey, "a key without ssl.keystore.certificate.chain",
					"ssl.keystore.certificate.chain set beside it (or with the same listener prefix)")
			}
			if !strings.EqualFold(s.SSL.KeystoreType, "PEM") {
				tkey, _ := b.perListener(s.Name, "ssl.keystore.type")
				return b.valueErr(tkey, "an inline key in "+kkey+" needs the PEM type", "PEM")
			}
		}
	}
	return nil
}

func hasKey(m map[string]value, name string) bool { _, ok := m[name]; return ok }
