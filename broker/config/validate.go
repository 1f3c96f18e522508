package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Validator restricts the values of a setting beyond its type.
type Validator interface {
	// Validate is given the parsed value (see Key.Parse) and returns what
	// is wrong with it, phrased to follow "key=value: ".
	Validate(v any) error
	// Want describes the allowed values, phrased to follow "want ".
	Want(t Type) string
}

// Range bounds a number, inclusive at both ends, like Kafka's
// ConfigDef.Range.
type Range struct {
	Min, Max       float64
	HasMin, HasMax bool
}

// AtLeast is Kafka's Range.atLeast.
func AtLeast(min float64) Range { return Range{Min: min, HasMin: true} }

// Between is Kafka's Range.between.
func Between(min, max float64) Range { return Range{Min: min, Max: max, HasMin: true, HasMax: true} }

func (r Range) Validate(v any) error {
	var f float64
	switch v := v.(type) {
	case int16:
		f = float64(v)
	case int32:
		f = float64(v)
	case int64:
		f = float64(v)
	case float64:
		f = v
	default:
		return errors.New("not a number")
	}
	if (r.HasMin && f < r.Min) || (r.HasMax && f > r.Max) {
		return errors.New("out of range")
	}
	return nil
}

func (r Range) Want(t Type) string {
	noun := "a number"
	if t == TypeInt || t == TypeShort || t == TypeLong {
		noun = "an integer"
	}
	n := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case r.HasMin && r.HasMax:
		return fmt.Sprintf("%s in [%s, %s]", noun, n(r.Min), n(r.Max))
	case r.HasMin:
		return fmt.Sprintf("%s ≥ %s", noun, n(r.Min))
	case r.HasMax:
		return fmt.Sprintf("%s ≤ %s", noun, n(r.Max))
	}
	return noun
}

// OneOf allows a string from a fixed set. Matching is case-sensitive, as
// Kafka's ValidString is: compression.type=GZIP is rejected by Kafka too.
type OneOf []string

func (o OneOf) Validate(v any) error {
	s, _ := v.(string)
	if !slices.Contains(o, s) {
		return errors.New("not allowed")
	}
	return nil
}

func (o OneOf) Want(Type) string { return "one of " + strings.Join(o, ", ") }

// ListOf allows a list whose every item is from a fixed set, like Kafka's
// ValidList.in (cleanup.policy).
type ListOf []string

func (l ListOf) Validate(v any) error {
	items, _ := v.([]string)
	for _, it := range items {
		if !slices.Contains(l, it) {
			return fmt.Errorf("%q not allowed", it)
		}
	}
	return nil
}

func (l ListOf) Want(Type) string {
	return "a comma-separated list of " + strings.Join(l, ", ")
}

// Custom is a validator written as a function, for syntaxes such as
// listeners.
type Custom struct {
	Desc  string // returned by Want
	Check func(v any) error
}

func (c Custom) Validate(v any) error { return c.Check(v) }
func (c Custom) Want(Type) string     { return c.Desc }

// Errors. ErrInvalidValue matches every *ValueError with errors.Is. The
// API picks the Kafka code, which depends on the request: CreateTopics
// answers INVALID_CONFIG for both a bad value and ErrUnknownTopicConfig;
// Kafka's AlterConfigs answers a bad value (and a read-only broker config)
// with INVALID_REQUEST and an unknown topic config with INVALID_CONFIG.
var (
	ErrInvalidValue        = errors.New("config: invalid value")
	ErrUnknownTopicConfig  = errors.New("config: unknown topic config")
	ErrUnknownBrokerConfig = errors.New("config: unknown broker config")
	ErrReadOnly            = errors.New("config: read-only broker config")
)

// ValueError is an invalid value: which key, which value, where it came
// from and what is allowed, so an operator can fix it from the message
// alone:
//
//	config: num.io.threads=abc (from --set): not an int; want an integer ≥ 1
type ValueError struct {
	Key, Value string
	Source     Source // zero for values that came through the API
	Problem    string
	Want       string
}

func (e *ValueError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config: %s=%s", e.Key, e.Value)
	if e.Source.Kind != SourceNone {
		fmt.Fprintf(&b, " (from %s)", e.Source)
	}
	fmt.Fprintf(&b, ": %s", e.Problem)
	if e.Want != "" {
		fmt.Fprintf(&b, "; want %s", e.Want)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidValue) true.
func (e *ValueError) Is(target error) bool { return target == ErrInvalidValue }

// withSource returns err with src filled in when it is a *ValueError.
func withSource(err error, src Source) error {
	var ve *ValueError
	if errors.As(err, &ve) {
		c := *ve
		c.Source = src
		return &c
	}
	return err
}

// Validators of the registry.

// compressionTypes are Kafka's BrokerCompressionType names, in its order.
var compressionTypes = OneOf{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

var cleanupPolicies = ListOf{"compact", "delete"}

var timestampTypes = OneOf{"CreateTime", "LogAppendTime"}

var securityProtocols = OneOf{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// nonEmptyList rejects an empty list, empty items and duplicates, as
// Kafka's log.dirs validator does.
var nonEmptyList = Custom{
	Desc: "a non-empty comma-separated list without empty or duplicate items",
	Check: func(v any) error {
		items := v.([]string)
		if len(items) == 0 {
			return errors.New("empty")
		}
		return noEmptyOrDuplicate(items)
	},
}

func noEmptyOrDuplicate(items []string) error {
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if it == "" {
			return errors.New("empty item")
		}
		if seen[it] {
			return fmt.Errorf("%q listed twice", it)
		}
		seen[it] = true
	}
	return nil
}

const listenerWant = "a comma-separated list of NAME://host:port with port 0..65535, " +
	"e.g. PLAINTEXT://127.0.0.1:9092 (empty host: all interfaces, [::1] for IPv6)"

var listenersValid = Custom{
	Desc: listenerWant,
	Check: func(v any) error {
		items := v.([]string)
		if len(items) == 0 {
			return errors.New("no listener")
		}
		_, err := parseListeners(items)
		return err
	},
}

// advertisedValid also refuses the meta-addresses, which clients cannot
// connect to: Kafka refuses them too.
var advertisedValid = Custom{
	Desc: listenerWant + ", not 0.0.0.0 or ::",
	Check: func(v any) error {
		ls, err := parseListeners(v.([]string))
		if err != nil {
			return err
		}
		for _, l := range ls {
			if l.Host == "0.0.0.0" || l.Host == "::" {
				return fmt.Errorf("cannot advertise the meta-address %s", l.Host)
			}
		}
		return nil
	},
}

var protocolMapValid = Custom{
	Desc: "a comma-separated list of NAME:PROTOCOL with PROTOCOL one of " + strings.Join(securityProtocols, ", "),
	Check: func(v any) error {
		_, err := parseProtocolMap(v.(string))
		return err
	},
}

var zookeeperConnectValid = Custom{
	Desc: "host:port[,host:port...][/chroot], e.g. 127.0.0.1:2181/qk",
	Check: func(v any) error {
		_, _, err := ParseZookeeperConnect(v.(string))
		return err
	},
}

var hostPortValid = Custom{
	Desc: "host:port with port 0..65535, or empty to disable",
	Check: func(v any) error {
		s := v.(string)
		if s == "" {
			return nil
		}
		_, _, err := splitHostPort(s)
		return err
	},
}

// setByBroker refuses every value but empty: the setting reports what the
// broker found at start-up (WithHTTPAdvertisedListener), so a value
// given in a file or --set would only be a lie DescribeConfigs tells.
var setByBroker = Custom{
	Desc: "nothing: the broker sets it",
	Check: func(v any) error {
		if v.(string) != "" {
			return errors.New("it is set by the broker at start-up")
		}
		return nil
	},
}

// throttledReplicasValid is Kafka's ThrottledReplicaListValidator: "*" or
// partition:broker pairs.
var throttledReplicasValid = Custom{
	Desc: `"*" or a comma-separated list of partition:brokerId`,
	Check: func(v any) error {
		items := v.([]string)
		if len(items) == 1 && items[0] == "*" {
			return nil
		}
		for _, it := range items {
			p, b, ok := strings.Cut(it, ":")
			if !ok || !isDigits(p) || !isDigits(b) {
				return fmt.Errorf("%q is not partition:brokerId", it)
			}
		}
		return nil
	},
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// splitHostPort splits "host:port" or "[v6]:port" and checks the port.
func splitHostPort(s string) (host string, port int, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q has no :port", s)
	}
	host, ps := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return "", 0, fmt.Errorf("%q has an unclosed [", s)
		}
		host = host[1 : len(host)-1]
	}
	n, perr := strconv.Atoi(ps)
	if perr != nil || !isDigits(ps) {
		return "", 0, fmt.Errorf("port %q is not a number", ps)
	}
	if n > math.MaxUint16 {
		return "", 0, fmt.Errorf("port %d out of range", n)
	}
	return host, n, nil
}

// perIPOverridesValid is Kafka's parsing of max.connections.per.ip.overrides
// (KafkaConfig.getMap, then toInt): comma-separated host:count pairs.
var perIPOverridesValid = Custom{
	Desc: "comma-separated host:count pairs with count ≥ 0, or empty",
	Check: func(v any) error {
		_, err := ParsePerIPOverrides(v.(string))
		return err
	},
}

// ParsePerIPOverrides parses max.connections.per.ip.overrides as Kafka
// does (Csv.parseCsvMap): entries split on commas, each split on its last
// colon (so an IPv6 address keeps its colons), both sides trimmed; the
// count must be an int ≥ 0.
func ParsePerIPOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, e := range strings.Split(s, ",") {
		i := strings.LastIndexByte(e, ':')
		if i < 0 {
			return nil, fmt.Errorf("malformed key-value pair %q", strings.TrimSpace(e))
		}
		host, count := strings.TrimSpace(e[:i]), strings.TrimSpace(e[i+1:])
		if host == "" {
			return nil, fmt.Errorf("malformed key-value pair %q: no host", strings.TrimSpace(e))
		}
		n, err := strconv.ParseInt(count, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("host %s: count %q is not an integer ≥ 0", host, count)
		}
		out[host] = int(n)
	}
	return out, nil
}

// clientAuthValid is Kafka's ssl.client.auth validator,
// CaseInsensitiveValidString of SslClientAuth.
var clientAuthValid = Custom{
	Desc: "one of required, requested, none",
	Check: func(v any) error {
		switch strings.ToLower(v.(string)) {
		case "required", "requested", "none":
			return nil
		}
		return errors.New("not allowed")
	},
}

// Authorizers qk implements: AclAuthorizer, under its name since Kafka 2.4
// and the old one Kafka still maps to it.
const (
	AclAuthorizer       = "kafka.security.authorizer.AclAuthorizer"
	SimpleAclAuthorizer = "kafka.security.auth.SimpleAclAuthorizer"
)

var authorizerValid = Custom{
	Desc: "empty (no authorizer), " + AclAuthorizer + " or " + SimpleAclAuthorizer + ": qk implements AclAuthorizer only",
	Check: func(v any) error {
		switch v.(string) {
		case "", AclAuthorizer, SimpleAclAuthorizer:
			return nil
		}
		return errors.New("not an authorizer qk implements")
	},
}

// superUsersValid checks super.users as AclAuthorizer parses it: entries
// split on ';', trimmed, each a principal Type:name
// (SecurityUtils.parseKafkaPrincipal). Empty entries are skipped.
var superUsersValid = Custom{
	Desc: "semicolon-separated principals Type:name, e.g. User:admin;User:CN=broker",
	Check: func(v any) error {
		_, err := ParseSuperUsers(v.(string))
		return err
	},
}

// ParseSuperUsers splits super.users into its principals.
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		typ, name, ok := strings.Cut(p, ":")
		if !ok || typ == "" || name == "" {
			return nil, fmt.Errorf("%q is not a principal Type:name", p)
		}
		out = append(out, p)
	}
	return out, nil
}
