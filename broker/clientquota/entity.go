package clientquota

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/qk-project/qk/broker/security/scram"

	"github.com/qk-project/qk/internal/javafmt"
)

// Type is a quota type: which key of an entity's config bounds what.
type Type int

// The quota types and their config keys (QuotaConfigs).
const (
	Produce            Type = iota // producer_byte_rate: bytes/s produced
	Fetch                          // consumer_byte_rate: bytes/s fetched
	Request                        // request_percentage: % of one handler thread
	ControllerMutation             // controller_mutation_rate: partitions/s (stored, not enforced)
)

// Types lists every quota type.
var Types = typeNames[:]

var typeNames = [...]Type{Produce, Fetch, Request, ControllerMutation}

// Config keys of the quota types.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
)

// Key is the type's config key.
func (t Type) Key() string {
	switch t {
	case Produce:
		return ProducerByteRate
	case Fetch:
		return ConsumerByteRate
	case Request:
		return RequestPercentage
	case ControllerMutation:
		return ControllerMutationRate
	}
	return "unknown"
}

func (t Type) String() string { return t.Key() }

// integral reports whether Kafka declares the key a LONG (the byte
// rates) rather than a DOUBLE.
func (t Type) integral() bool { return t == Produce || t == Fetch }

// TypeOf returns the type whose config key is key.
func TypeOf(key string) (Type, bool) {
	for _, t := range Types {
		if t.Key() == key {
			return t, true
		}
	}
	return 0, false
}

// IsQuotaKey reports whether key is a client quota config key
// (QuotaConfigs.isClientOrUserQuotaConfig).
func IsQuotaKey(key string) bool {
	_, ok := TypeOf(key)
	return ok
}

// DefaultName is the node name of a default entity.
const DefaultName = "<default>"

// PartKind says whether an entity has a user (or client-id) part, and
// whether it is a name or the default.
type PartKind uint8

// The part kinds.
const (
	Absent PartKind = iota
	NamedPart
	DefaultPart
)

// Part is the user or the client-id part of an entity.
type Part struct {
	Kind PartKind
	Name string // desanitized; only for NamedPart
}

// Named is a part naming a user or client id.
func Named(name string) Part { return Part{Kind: NamedPart, Name: name} }

// Default is the default part (<default> in the store, a null name on
// the wire).
var Default = Part{Kind: DefaultPart}

// Present reports whether the part is a name or the default.
func (p Part) Present() bool { return p.Kind != Absent }

// node is the part's sanitized node name.
func (p Part) node() string {
	if p.Kind == DefaultPart {
		return DefaultName
	}
	return scram.Sanitize(p.Name)
}

func (p Part) String() string {
	switch p.Kind {
	case DefaultPart:
		return DefaultName
	case NamedPart:
		return p.Name
	}
	return ""
}

// Entity is a quota entity: a user, a client id, or both; each either
// named or the default. It is comparable, so it keys maps.
type Entity struct {
	User   Part
	Client Part
}

// ErrInvalidEntity is wrapped by the errors of entity checks and paths.
var ErrInvalidEntity = errors.New("clientquota: invalid entity")

// Valid checks the entity can be stored: at least one part, and no empty
// name.
func (e Entity) Valid() error {
	if !e.User.Present() && !e.Client.Present() {
		return fmt.Errorf("%w: invalid empty client quota entity", ErrInvalidEntity)
	}
	if e.User.Kind == NamedPart && e.User.Name == "" {
		return fmt.Errorf("%w: empty user not supported", ErrInvalidEntity)
	}
	if e.Client.Kind == NamedPart && e.Client.Name == "" {
		return fmt.Errorf("%w: empty client-id not supported", ErrInvalidEntity)
	}
	return nil
}

// Path returns where the entity's config is stored, as
// /config/<entityType>/<entity> with sanitized names: ("users",
// "alice/clients/app"), ("clients", "<default>"). The change notification
// names entityType + "/" + entity.
func (e Entity) Path() (entityType, entity string) {
	switch {
	case e.User.Present() && e.Client.Present():
		return "users", e.User.node() + "/clients/" + e.Client.node()
	case e.User.Present():
		return "users", e.User.node()
	}
	return "clients", e.Client.node()
}

// ParsePath is Path's inverse: the entity stored at
// /config/<entityType>/<entity>.
func ParsePath(entityType, entity string) (Entity, error) {
	parse := func(node string) (Part, error) {
		if node == DefaultName {
			return Default, nil
		}
		if node == "" {
			return Part{}, fmt.Errorf("%w: empty name in %s/%s", ErrInvalidEntity, entityType, entity)
		}
		n, err := scram.Desanitize(node)
		if err != nil {
			return Part{}, fmt.Errorf("%w: %v", ErrInvalidEntity, err)
		}
		return Named(n), nil
	}
	switch entityType {
	case "users":
		u, rest, nested := strings.Cut(entity, "/")
		user, err := parse(u)
		if err != nil {
			return Entity{}, err
		}
		if !nested {
			return Entity{User: user}, nil
		}
		c, ok := strings.CutPrefix(rest, "clients/")
		if !ok || strings.Contains(c, "/") {
			return Entity{}, fmt.Errorf("%w: unexpected config path users/%s", ErrInvalidEntity, entity)
		}
		client, err := parse(c)
		if err != nil {
			return Entity{}, err
		}
		return Entity{User: user, Client: client}, nil
	case "clients":
		if strings.Contains(entity, "/") {
			return Entity{}, fmt.Errorf("%w: unexpected config path clients/%s", ErrInvalidEntity, entity)
		}
		client, err := parse(entity)
		if err != nil {
			return Entity{}, err
		}
		return Entity{Client: client}, nil
	}
	return Entity{}, fmt.Errorf("%w: entity type %q", ErrInvalidEntity, entityType)
}

// String is the entity as kafka-configs.sh names it: "user-principal
// 'alice', client-id 'app'", "the default user-principal".
func (e Entity) String() string {
	var parts []string
	add := func(what string, p Part) {
		switch p.Kind {
		case NamedPart:
			parts = append(parts, what+" '"+p.Name+"'")
		case DefaultPart:
			parts = append(parts, "the default "+what)
		}
	}
	add("user-principal", e.User)
	add("client-id", e.Client)
	return strings.Join(parts, ", ")
}

// Compare orders entities: users before clients-only, names before
// defaults, then by name.
func Compare(a, b Entity) int {
	cp := func(x, y Part) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), strings.Compare(x.Name, y.Name))
	}
	ua, ub := a.User.Present(), b.User.Present()
	if ua != ub {
		if ua {
			return -1
		}
		return 1
	}
	return cmp.Or(cp(a.User, b.User), cp(a.Client, b.Client))
}

// Values are one entity's quotas by config key.
type Values map[string]float64

// ErrInvalidValue is wrapped by the errors of quota value checks.
var ErrInvalidValue = errors.New("clientquota: invalid quota")

// CheckValue validates a value for a quota key as Kafka's AlterClientQuotas
// does, and returns the text to store: a byte rate must be a whole number
// (within 1e-6) and is stored as a long ("1048576"), a percentage or a
// mutation rate as Java prints a double ("12.5", "200.0"). An unknown key,
// or a negative, infinite or NaN value, is an error.
func CheckValue(key string, v float64) (string, error) {
	t, ok := TypeOf(key)
	if !ok {
		return "", fmt.Errorf("%w: invalid configuration key %s", ErrInvalidValue, key)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return "", fmt.Errorf("%w: configuration %s must be a non-negative finite number, got %v", ErrInvalidValue, key, v)
	}
	if t.integral() {
		const epsilon = 1e-6
		if v+epsilon >= math.MaxInt64 {
			return strconv.FormatInt(math.MaxInt64, 10), nil
		}
		n := int64(v + epsilon)
		if math.Abs(float64(n)-v) > epsilon {
			return "", fmt.Errorf("%w: configuration %s must be a Long value", ErrInvalidValue, key)
		}
		return strconv.FormatInt(n, 10), nil
	}
	return javafmt.Double(v), nil
}

// ParseValues reads the quota keys of a stored entity config, ignoring
// the others (a user's SCRAM credentials). A quota value that is not a
// number is reported in bad and left out.
func ParseValues(cfg map[string]string) (vals Values, bad []string) {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if !IsQuotaKey(k) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(cfg[k]), 64)
		if err != nil || math.IsNaN(f) {
			bad = append(bad, k)
			continue
		}
		if vals == nil {
			vals = Values{}
		}
		vals[k] = f
	}
	return vals, bad
}
