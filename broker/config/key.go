package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/qk-project/qk/internal/javafmt"
)

// Type is the value type of a setting. The numbers are the ConfigType
// values of DescribeConfigs (kmsg.ConfigType), so a Type goes on the wire
// as int8(t) without a mapping table.
type Type int8

const (
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3 // 32-bit, as Java's int
	TypeShort    Type = 4 // 16-bit
	TypeLong     Type = 5 // 64-bit
	TypeDouble   Type = 6
	TypeList     Type = 7 // comma-separated, items trimmed
	TypeClass    Type = 8 // a Java class name: accepted and reported, never loaded
	TypePassword Type = 9 // sensitive: never printed or described
)

// String returns Kafka's name of the type, as its documentation prints it.
func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "boolean"
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeShort:
		return "short"
	case TypeLong:
		return "long"
	case TypeDouble:
		return "double"
	case TypeList:
		return "list"
	case TypeClass:
		return "class"
	case TypePassword:
		return "password"
	}
	return fmt.Sprintf("Type(%d)", int8(t))
}

// Importance is Kafka's hint of how much an operator should care.
type Importance int8

const (
	High Importance = iota
	Medium
	Low
)

func (i Importance) String() string {
	switch i {
	case High:
		return "high"
	case Medium:
		return "medium"
	case Low:
		return "low"
	}
	return fmt.Sprintf("Importance(%d)", int8(i))
}

// Kind says where a setting lives.
type Kind uint8

const (
	// KindBroker is a broker setting that no topic overrides.
	KindBroker Kind = iota + 1
	// KindTopicDefault is a broker setting that is the cluster-wide default
	// of a topic config (Key.Topic), such as log.retention.ms for
	// retention.ms.
	KindTopicDefault
	// KindTopic is a topic config, set per topic by CreateTopics and
	// AlterConfigs. Key.Synonyms names the broker settings that supply its
	// default.
	KindTopic
)

func (k Kind) String() string {
	switch k {
	case KindBroker:
		return "broker"
	case KindTopicDefault:
		return "broker default of a topic config"
	case KindTopic:
		return "topic"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// UpdateMode says whether a broker setting can change without a restart,
// in Kafka's terms (its "Dynamic Update Mode" column).
type UpdateMode uint8

const (
	// ReadOnly settings are read at start-up only.
	ReadOnly UpdateMode = iota
	// PerBroker settings can be altered for one broker.
	PerBroker
	// ClusterWide settings can be altered for one broker or as the
	// cluster-wide default.
	ClusterWide
)

func (m UpdateMode) String() string {
	switch m {
	case ReadOnly:
		return "read-only"
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	}
	return fmt.Sprintf("UpdateMode(%d)", uint8(m))
}

// Key describes one setting of the registry.
type Key struct {
	Name string
	Type Type
	// Default is the default in normalized string form (see Normalize). It
	// means nothing when Null is set.
	Default string
	// Null marks a setting with no default (Kafka's null): unset unless a
	// source sets it, and then usually a fallback applies (log.retention.ms
	// falls back to log.retention.minutes, then log.retention.hours).
	Null bool
	// KafkaDefault is Apache Kafka 3.9's default where it differs from
	// Default, for docs/config.md; empty means Kafka's default is qk's.
	// KafkaNull says Kafka has no default (null) where qk has one.
	// TestKafkaDefaultDiffers keeps them set only where the defaults
	// differ.
	KafkaDefault string
	KafkaNull    bool
	Doc          string
	Importance   Importance
	Kind         Kind
	// Valid restricts values beyond their type; nil accepts any value of
	// the type.
	Valid Validator
	// Topic is, for KindTopicDefault, the topic config this setting is the
	// default of.
	Topic string
	// Synonyms is, for KindTopic, the broker settings that supply the
	// default, highest precedence first (retention.ms: log.retention.ms,
	// log.retention.minutes, log.retention.hours). For a broker setting it is
	// the group of settings that resolve to one value, itself included,
	// highest precedence first, which DescribeConfigs reports as synonyms;
	// empty means just itself.
	Synonyms []string
	// Mode is how a broker setting may be altered at run time; topic
	// configs are always alterable.
	Mode UpdateMode
	// DynamicOnly marks a broker setting that exists only as a dynamic
	// config (/config/brokers/<id> or /config/brokers/<default>), as
	// Kafka's quota settings leader.replication.throttled.rate and
	// follower.replication.throttled.rate: Kafka's KafkaConfig does not
	// know them, so a config file that sets them is warned about and
	// ignored. qk does the same, so a file that works on Kafka means the
	// same on qk.
	DynamicOnly bool
	// PerListener marks a broker setting that may also be given for one
	// listener as listener.name.<listener name lower-cased>.<name>, which
	// wins for that listener (Kafka's ListenerName.configPrefix): the
	// ssl.* and sasl.* settings and connections.max.reauth.ms. See
	// Broker.ListenerSecurity.
	PerListener bool
	// Unused, when not empty, says why qk accepts the setting but does not
	// act on it (a Java class, a JSSE algorithm name). Load warns when a
	// source sets it, so an operator knows the value has no effect.
	Unused string
}

// Sensitive reports whether values of the key must never be shown.
func (k *Key) Sensitive() bool { return k.Type == TypePassword }

// hidden is how Print and error messages show a sensitive value.
const hidden = "[hidden]"

// Parse converts raw to the key's type and checks it against the key's
// validator. The result is bool, int16 (short), int32 (int), int64 (long),
// float64, string (string, class, password) or []string (list). The error
// is a *ValueError without a source.
func (k *Key) Parse(raw string) (any, error) {
	shown := raw
	if k.Sensitive() {
		shown = hidden // an error message must not carry a secret either
	}
	v, problem := parseType(k.Type, raw)
	if problem != "" {
		return nil, &ValueError{Key: k.Name, Value: shown, Problem: problem, Want: k.want()}
	}
	if k.Valid != nil {
		if err := k.Valid.Validate(v); err != nil {
			return nil, &ValueError{Key: k.Name, Value: shown, Problem: err.Error(), Want: k.want()}
		}
	}
	return v, nil
}

// Normalize returns raw as Kafka would print it back once parsed: trimmed,
// numbers in canonical decimal, lists joined by "," without spaces,
// doubles as Java's Double.toString.
func (k *Key) Normalize(raw string) (string, error) {
	v, err := k.Parse(raw)
	if err != nil {
		return "", err
	}
	return format(v), nil
}

// want is what the error message asks for, after "want ".
func (k *Key) want() string {
	if k.Valid != nil {
		return k.Valid.Want(k.Type)
	}
	return typeWant(k.Type)
}

func typeWant(t Type) string {
	switch t {
	case TypeBoolean:
		return "true or false"
	case TypeInt:
		return "an integer in [-2147483648, 2147483647]"
	case TypeShort:
		return "an integer in [-32768, 32767]"
	case TypeLong:
		return "an integer"
	case TypeDouble:
		return "a number"
	case TypeList:
		return "a comma-separated list"
	case TypeClass:
		return "a class name"
	}
	return "a string"
}

// parseType parses raw as Kafka's ConfigDef does for t: surrounding
// whitespace never counts, booleans ignore case, numbers are decimal (no
// octal or hex, unlike strconv's base 0). It returns a problem description
// instead of an error so callers can build one message.
func parseType(t Type, raw string) (any, string) {
	s := strings.TrimSpace(raw)
	switch t {
	case TypeBoolean:
		switch {
		case strings.EqualFold(s, "true"):
			return true, ""
		case strings.EqualFold(s, "false"):
			return false, ""
		}
		return nil, "not a boolean"
	case TypeShort, TypeInt, TypeLong:
		bits := map[Type]int{TypeShort: 16, TypeInt: 32, TypeLong: 64}[t]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return nil, "out of range for " + article(t.String())
			}
			return nil, "not " + article(t.String())
		}
		switch t {
		case TypeShort:
			return int16(n), ""
		case TypeInt:
			return int32(n), ""
		}
		return n, ""
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return nil, "not a double"
		}
		return f, ""
	case TypeList:
		if s == "" {
			return []string{}, ""
		}
		items := strings.Split(s, ",")
		for i := range items {
			items[i] = strings.TrimSpace(items[i])
		}
		return items, ""
	}
	return s, ""
}

func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// format is the inverse of parseType for a parsed value.
func format(v any) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case int16:
		return strconv.FormatInt(int64(v), 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case float64:
		return javafmt.Double(v)
	case []string:
		return strings.Join(v, ",")
	case string:
		return v
	}
	return fmt.Sprint(v)
}
