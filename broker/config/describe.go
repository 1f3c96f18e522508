package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ConfigSource is where a described value comes from, with the numbers of
// DescribeConfigs (kmsg.ConfigSource), so it goes on the wire as int8(s).
type ConfigSource int8

const (
	ConfigSourceUnknown              ConfigSource = 0
	ConfigSourceDynamicTopic         ConfigSource = 1 // a topic override
	ConfigSourceDynamicBroker        ConfigSource = 2 // dynamic, this broker
	ConfigSourceDynamicDefaultBroker ConfigSource = 3 // dynamic, cluster-wide
	ConfigSourceStaticBroker         ConfigSource = 4 // file, env or --set
	ConfigSourceDefault              ConfigSource = 5 // the registry's default
)

func (s ConfigSource) String() string {
	switch s {
	case ConfigSourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case ConfigSourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case ConfigSourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case ConfigSourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case ConfigSourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}

// Entry is one config of a DescribeConfigs answer.
type Entry struct {
	Name string
	// Value is nil when the setting is unset (Kafka's null) or sensitive.
	Value     *string
	Source    ConfigSource
	ReadOnly  bool
	Sensitive bool
	// Synonyms are the values that could supply this one, the effective
	// one first, as Kafka lists them: by source (topic override, dynamic
	// broker, dynamic cluster default, static, default), then by
	// precedence within a source.
	Synonyms []Synonym
	Type     Type
	Doc      string
}

// Synonym is one value of an Entry's synonym list.
type Synonym struct {
	Name   string
	Value  *string
	Source ConfigSource
}

// synonyms lists the values of the broker settings names in the layers
// where they are set, Kafka's order: layer first, then names in order.
func (b *Broker) synonyms(names []string) []Synonym {
	var out []Synonym
	add := func(name string, v *string, src ConfigSource) {
		if b.keyOf(name).Sensitive() {
			v = nil
		}
		out = append(out, Synonym{Name: name, Value: v, Source: src})
	}
	for _, n := range names {
		if v, ok := b.dynBroker[n]; ok {
			add(n, ptr(v.Raw), ConfigSourceDynamicBroker)
		}
	}
	for _, n := range names {
		if v, ok := b.dynDefault[n]; ok {
			add(n, ptr(v.Raw), ConfigSourceDynamicDefaultBroker)
		}
	}
	for _, n := range names {
		if v, ok := b.static[n]; ok && v.Source.Kind != SourceDefault {
			add(n, ptr(v.Raw), ConfigSourceStaticBroker)
		}
	}
	for _, n := range names {
		if k := brokerKeys[n]; k != nil && !k.Null { // a listener-prefixed name has no default
			def := k.Default
			if n == HTTPAdvertisedListenerKey {
				def = b.HTTPAdvertisedListener // the broker's own "default"
			}
			add(n, ptr(def), ConfigSourceDefault)
		}
	}
	return out
}

func ptr(s string) *string { return &s }

// DescribeBroker answers DescribeConfigs for this broker's resource (its
// id): every broker setting, and the listener-prefixed settings that are
// set, sorted by name. As in Kafka, a setting's synonyms start at its own
// name: describing log.retention.hours lists log.retention.hours values
// only, log.retention.ms lists all three (ms, minutes, hours); a
// listener-prefixed setting lists itself, then its unprefixed key
// (listener.name.client.plain.sasl.jaas.config: sasl.jaas.config), as
// Kafka's DynamicBrokerConfig.brokerConfigSynonyms does.
func DescribeBroker(b *Broker) []Entry {
	keys := BrokerKeys()
	out := make([]Entry, 0, len(keys))
	for _, k := range keys {
		syn := b.brokerSynonyms(k)
		e := Entry{
			Name:      k.Name,
			Source:    ConfigSourceDefault,
			ReadOnly:  k.Mode == ReadOnly,
			Sensitive: k.Sensitive(),
			Synonyms:  syn,
			Type:      k.Type,
			Doc:       k.Doc,
		}
		if v, ok := b.eff[k.Name]; ok && !k.Sensitive() {
			e.Value = ptr(v.Raw)
		}
		if len(syn) > 0 {
			e.Source = syn[0].Source
		}
		out = append(out, e)
	}
	for _, name := range slices.Sorted(maps.Keys(b.listenerKeys)) {
		k := b.listenerKeys[name].Base
		e := Entry{
			Name:      name,
			Source:    ConfigSourceStaticBroker,
			ReadOnly:  true,
			Sensitive: k.Sensitive(),
			Synonyms:  b.synonyms([]string{name, k.Name}),
			Type:      k.Type,
			Doc:       k.Doc,
		}
		if !k.Sensitive() {
			e.Value = ptr(b.eff[name].Raw)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// brokerSynonyms is Kafka's synonym list of a broker setting: its group's
// values, dropping those before the first value of the setting itself.
func (b *Broker) brokerSynonyms(k *Key) []Synonym {
	names := k.Synonyms
	if len(names) == 0 {
		names = []string{k.Name}
	}
	syn := b.synonyms(names)
	i := slices.IndexFunc(syn, func(s Synonym) bool { return s.Name == k.Name })
	if i < 0 {
		return nil
	}
	return syn[i:]
}

// DescribeBrokerDefaults answers DescribeConfigs for the default broker
// resource (name ""): only the dynamic cluster-wide settings, with only
// their cluster-wide synonyms, as Kafka does.
func DescribeBrokerDefaults(b *Broker) []Entry {
	var out []Entry
	for _, name := range slices.Sorted(maps.Keys(b.dynDefault)) {
		k := brokerKeys[name]
		var syn []Synonym
		for _, s := range b.brokerSynonyms(k) {
			if s.Source == ConfigSourceDynamicDefaultBroker {
				syn = append(syn, s)
			}
		}
		e := Entry{Name: name, Source: ConfigSourceDynamicDefaultBroker, Sensitive: k.Sensitive(),
			Synonyms: syn, Type: k.Type, Doc: k.Doc}
		if !k.Sensitive() {
			e.Value = ptr(b.dynDefault[name].Raw)
		}
		out = append(out, e)
	}
	return out
}

// DescribeTopic answers DescribeConfigs for a topic with the given
// overrides (as stored in the metadata store): every topic config, sorted
// by name, with the effective value. An override is
// DYNAMIC_TOPIC_CONFIG; otherwise the source is that of the broker
// setting that supplies the default.
//
// Synonyms list the topic override, then every broker setting of the
// topic config's group that is set. Kafka drops the group members listed
// before the first broker name (so retention.ms shows no synonyms, and
// DEFAULT_CONFIG, when server.properties sets only log.retention.hours);
// qk keeps them, because the value then really comes from
// log.retention.hours and the source says so.
func DescribeTopic(overrides map[string]string, b *Broker) []Entry {
	defaults := b.TopicDefaults()
	keys := TopicKeys()
	out := make([]Entry, 0, len(keys))
	for _, k := range keys {
		syn := b.synonyms(k.Synonyms)
		raw, _ := formatTagged(&defaults, k.Name)
		if ov, ok := overrides[k.Name]; ok {
			if norm, err := k.Normalize(ov); err == nil {
				ov = norm
			}
			raw = ov
			syn = append([]Synonym{{Name: k.Name, Value: ptr(ov), Source: ConfigSourceDynamicTopic}}, syn...)
		} else if len(k.Synonyms) == 0 {
			raw = k.Default
		}
		e := Entry{Name: k.Name, Value: ptr(raw), Source: ConfigSourceDefault, Synonyms: syn, Type: k.Type, Doc: k.Doc}
		if len(syn) > 0 {
			e.Source = syn[0].Source
		}
		out = append(out, e)
	}
	return out
}

// ValidateBrokerConfig checks a dynamic change of a broker setting, as
// AlterConfigs and IncrementalAlterConfigs receive it: perBroker for the
// resource of one broker id, false for the cluster-wide default resource
// "". Errors wrap ErrUnknownBrokerConfig, ErrReadOnly or are a
// *ValueError.
func ValidateBrokerConfig(key, value string, perBroker bool) error {
	k, ok := brokerKeys[key]
	if !ok && strings.HasPrefix(key, listenerPrefix) {
		// Kafka alters some per broker (key stores, for certificate
		// rotation); qk reads them at start-up only.
		return fmt.Errorf("%w %s: listener-prefixed settings are read at start-up; set it in the config file and restart", ErrReadOnly, key)
	}
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownBrokerConfig, key)
	}
	switch {
	case k.Mode == ReadOnly:
		return fmt.Errorf("%w %s: set it in the config file and restart", ErrReadOnly, key)
	case k.Mode == PerBroker && !perBroker:
		return fmt.Errorf("%w %s: it can be altered for one broker id only, not cluster-wide", ErrReadOnly, key)
	}
	_, err := k.Parse(value)
	return err
}

// WithDynamic returns the broker with dynamic configs applied over the
// static ones: clusterDefault from the default broker resource, perBroker
// from this broker's (it wins). Each is validated with
// ValidateBrokerConfig, and the result as a whole as Load does, so a
// change that would break a cross-setting rule is refused before it is
// stored.
func (b *Broker) WithDynamic(clusterDefault, perBroker map[string]string) (*Broker, error) {
	layer := func(m map[string]string, per bool, kind SourceKind) (map[string]value, error) {
		out := map[string]value{}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if err := ValidateBrokerConfig(name, m[name], per); err != nil {
				return nil, withSource(err, Source{Kind: kind})
			}
			out[name] = value{Raw: m[name], Source: Source{Kind: kind}}
		}
		return out, nil
	}
	dd, err := layer(clusterDefault, false, SourceDynamicDefault)
	if err != nil {
		return nil, err
	}
	db, err := layer(perBroker, true, SourceDynamicBroker)
	if err != nil {
		return nil, err
	}
	nb, err := newBroker(b.static, dd, db)
	if err != nil {
		return nil, err
	}
	nb.BrokerID = b.BrokerID // read-only, and maybe settled by WithBrokerID
	if b.HTTPAdvertisedListener != "" {
		nb = nb.WithHTTPAdvertisedListener(b.HTTPAdvertisedListener)
	}
	return nb, nil
}
