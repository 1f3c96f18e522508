package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/viper"
)

// SourceKind is the layer a value came from, lowest precedence first.
type SourceKind uint8

const (
	SourceNone SourceKind = iota // no source: a value that came through the API
	SourceDefault
	SourceFile
	SourceEnv
	SourceSet
	// SourceDynamicDefault is a cluster-wide dynamic broker config, altered
	// on the broker resource "" (Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG).
	SourceDynamicDefault
	// SourceDynamicBroker is a dynamic config of this broker (Kafka's
	// DYNAMIC_BROKER_CONFIG).
	SourceDynamicBroker
)

// Source says where a value came from: the file path for SourceFile, the
// variable for SourceEnv.
type Source struct {
	Kind SourceKind
	Name string
}

// String is how Print and error messages show a source: "default",
// "file server.properties", "env QK_LOG_DIRS", "--set".
func (s Source) String() string {
	switch s.Kind {
	case SourceDefault:
		return "default"
	case SourceFile:
		return "file " + s.Name
	case SourceEnv:
		return "env " + s.Name
	case SourceSet:
		if s.Name != "" {
			return s.Name // a value a flag derived, such as --local-cluster's ports
		}
		return "--set"
	case SourceDynamicDefault:
		return "dynamic cluster default"
	case SourceDynamicBroker:
		return "dynamic broker config"
	}
	return "none"
}

// Warning is a problem that does not stop the broker, such as an unknown
// key. Load returns them for the caller to log.
type Warning struct {
	Key     string
	Source  Source
	Message string
}

func (w Warning) String() string {
	return fmt.Sprintf("config: %s (from %s): %s", w.Key, w.Source, w.Message)
}

// LoadOptions are the sources of a broker's configuration besides the
// defaults, lowest precedence first.
type LoadOptions struct {
	// ConfigFile is the --config file: Kafka's .properties syntax, or YAML
	// when it ends in .yaml or .yml (JSON and TOML by extension too, since
	// viper reads them). Empty: no file.
	ConfigFile string
	// Env is the environment in os.Environ form; only QK_ variables count.
	Env []string
	// ClientEnv names QK_ variables that belong to the client commands
	// (QK_BROKERS, QK_PROFILE): they are not broker settings, and are
	// neither applied nor warned about.
	ClientEnv []string
	// Sets are the --set overrides, "key=value" each, later ones winning.
	Sets []string

	// derived are settings a flag computes from the others, "key=value"
	// each, applied after Sets with Source{SourceSet, "--local-cluster"}:
	// LoadLocalCluster's per-broker id, ports and dirs.
	derived []string
}

// Load builds the broker configuration from the defaults, the file, QK_
// environment variables and --set overrides, later ones winning. Unknown
// keys are returned as warnings; the first invalid value is an error that
// names key, value, source and what is allowed.
func Load(opts LoadOptions) (*Broker, []Warning, error) {
	var warns []Warning
	v := viper.NewWithOptions(viper.KeyDelimiter(keyDelim))
	src := map[string]Source{}
	// Listener-prefixed values, lowest precedence first; which listener
	// they name is known once every source has set listeners.
	var cands []listenerCandidate

	for _, k := range brokerKeys {
		if !k.Null {
			v.SetDefault(k.Name, k.Default)
		}
	}

	if opts.ConfigFile != "" {
		file, err := readFile(opts.ConfigFile)
		if err != nil {
			return nil, nil, err
		}
		fsrc := Source{Kind: SourceFile, Name: opts.ConfigFile}
		known := map[string]any{}
		for _, name := range sortedNames(file) {
			if strings.HasPrefix(name, listenerPrefix) {
				cands = append(cands, listenerCandidate{name: name, raw: stringify(file[name]), src: fsrc})
				continue
			}
			if k, ok := brokerKeys[name]; !ok || k.DynamicOnly {
				warns = append(warns, unknownWarning(name, fsrc))
				continue
			}
			known[name] = file[name]
			src[name] = fsrc
		}
		if err := v.MergeConfigMap(known); err != nil {
			return nil, nil, fmt.Errorf("config: merge %s: %w", opts.ConfigFile, err)
		}
	}

	env, ew := envLayer(opts.Env, opts.ClientEnv)
	warns = append(warns, ew...)
	for _, e := range env {
		if e.listener {
			cands = append(cands, listenerCandidate{name: e.name, raw: e.value, src: e.src})
			continue
		}
		v.Set(e.name, e.value)
		src[e.name] = e.src
	}

	for _, s := range opts.Sets {
		name, value, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, nil, fmt.Errorf("config: --set %q: want key=value", s)
		}
		ssrc := Source{Kind: SourceSet}
		if lower := strings.ToLower(name); strings.HasPrefix(lower, listenerPrefix) {
			cands = append(cands, listenerCandidate{name: lower, raw: value, src: ssrc})
			continue
		}
		if k, known := brokerKeys[name]; !known || k.DynamicOnly {
			warns = append(warns, unknownWarning(name, ssrc))
			continue
		}
		v.Set(name, value)
		src[name] = ssrc
	}

	for _, s := range opts.derived {
		name, value, _ := strings.Cut(s, "=")
		v.Set(name, value)
		src[name] = Source{Kind: SourceSet, Name: localClusterFlag}
	}

	static := make(map[string]value, len(brokerKeys))
	for _, k := range brokerKeys {
		raw := v.Get(k.Name)
		if raw == nil {
			continue // null default, set by no source
		}
		s, ok := src[k.Name]
		if !ok {
			s = Source{Kind: SourceDefault}
		}
		static[k.Name] = value{Raw: stringify(raw), Source: s}
	}
	prefixed, pw := resolveListenerCandidates(cands, listenerNames(static["listeners"].Raw))
	warns = append(warns, pw...)
	maps.Copy(static, prefixed)
	b, err := newBroker(static, nil, nil)
	if err != nil {
		return nil, warns, err
	}
	return b, append(warns, b.unusedWarnings()...), nil
}

// unusedWarnings warns about the settings a source sets that qk accepts
// and does not act on (Key.Unused).
func (b *Broker) unusedWarnings() []Warning {
	var out []Warning
	for _, name := range slices.Sorted(maps.Keys(b.static)) {
		v := b.static[name]
		k := b.keyOf(name)
		if k.Unused == "" || v.Source.Kind == SourceDefault || b.listenerKeys[name].Mechanism != "" {
			continue
		}
		out = append(out, Warning{Key: name, Source: v.Source, Message: "accepted, not used: " + k.Unused})
	}
	return out
}

// keyDelim replaces viper's "." so Kafka's dotted names stay flat keys;
// nested YAML maps come out joined by it and are turned back into dots.
const keyDelim = "::"

// readFile decodes the --config file with viper into flat Kafka names.
func readFile(path string) (map[string]any, error) {
	codecs := viper.NewCodecRegistry()
	for _, f := range []string{"properties", "props", "prop"} {
		if err := codecs.RegisterCodec(f, propertiesCodec{}); err != nil {
			return nil, err
		}
	}
	fv := viper.NewWithOptions(viper.KeyDelimiter(keyDelim), viper.WithCodecRegistry(codecs))
	fv.SetConfigFile(path)
	fv.SetConfigType(fileFormat(path))
	if err := fv.ReadInConfig(); err != nil {
		var pe viper.ConfigParseError
		if errors.As(err, &pe) {
			err = pe.Unwrap()
		}
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	out := map[string]any{}
	for _, k := range fv.AllKeys() {
		val := fv.Get(k)
		if val == nil {
			continue // YAML "key:" or "key: ~" leaves the setting unset
		}
		name := strings.ReplaceAll(k, keyDelim, ".")
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("config: read %s: %s is given twice (nested and dotted)", path, name)
		}
		out[name] = val
	}
	return out, nil
}

// fileFormat picks the decoder by extension. Anything that is not YAML,
// JSON or TOML is read as .properties, since Kafka's files go by many
// names (server.properties, broker.conf, no extension).
func fileFormat(path string) string {
	switch strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")) {
	case "yaml", "yml":
		return "yaml"
	case "json":
		return "json"
	case "toml":
		return "toml"
	}
	return "properties"
}

type envValue struct {
	name, value string
	src         Source
	// listener marks a QK_LISTENER_NAME_ variable, whose name is the
	// variable until the listeners are known (matchListenerEnv).
	listener bool
}

// envLayer maps QK_ variables to broker settings. A variable matches a
// setting when it equals EnvName of that setting: QK_, then the name
// upper-cased with every '.' as '_'. No Kafka setting name contains '_',
// so this mapping is one-to-one and needs no guessing (a test keeps it so
// as the registry grows). A QK_ variable that matches no setting is
// reported as unknown under its guessed dotted name.
func envLayer(environ, clientEnv []string) ([]envValue, []Warning) {
	var out []envValue
	var warns []Warning
	for _, kv := range environ {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, envPrefix) || len(k) == len(envPrefix) || slices.Contains(clientEnv, k) {
			continue
		}
		src := Source{Kind: SourceEnv, Name: k}
		name, known := envNames[k]
		if known && brokerKeys[name].DynamicOnly {
			warns = append(warns, unknownWarning(name, src))
			continue
		}
		if !known && strings.HasPrefix(k, envListenerPrefix) {
			out = append(out, envValue{name: k, value: val, src: src, listener: true})
			continue
		}
		if !known {
			guess := strings.ToLower(strings.ReplaceAll(k[len(envPrefix):], "_", "."))
			warns = append(warns, unknownWarning(guess, src))
			continue
		}
		out = append(out, envValue{name: name, value: val, src: src})
	}
	// os.Environ order is arbitrary; a name set twice (impossible in a real
	// environment, possible in a test's slice) keeps the last.
	return out, warns
}

// kraftOnly are KRaft settings that a Kafka 3.x/4.x file may carry; qk
// uses ZooKeeper or its embedded store, so they are ignored with a clear
// word instead of a bare "unknown".
var kraftOnly = map[string]bool{
	"process.roles": true, "node.id": true, "controller.quorum.voters": true,
	"controller.quorum.bootstrap.servers": true, "controller.listener.names": true,
	"metadata.log.dir": true,
}

func unknownWarning(name string, src Source) Warning {
	msg := "unknown key, ignored"
	switch {
	case strings.HasPrefix(name, "sasl.kerberos."):
		msg = "Kerberos setting, ignored: qk does not implement GSSAPI"
	case kraftOnly[name]:
		msg = "KRaft setting, ignored: qk uses ZooKeeper or its embedded metadata store"
	case brokerKeys[name] != nil && brokerKeys[name].DynamicOnly:
		msg = "dynamic-only setting, ignored: alter it on the broker resource (qk config alter, kafka-configs.sh --entity-type brokers)"
	case topicKeys[name] != nil && len(topicKeys[name].Synonyms) > 0:
		msg = fmt.Sprintf("unknown key, ignored: %s is a topic config; its broker default is %s",
			name, topicKeys[name].Synonyms[0])
	}
	return Warning{Key: name, Source: src, Message: msg}
}

// stringify turns a decoded file value into the string Kafka would have
// read from a .properties file: YAML lists become comma-separated, whole
// numbers lose any ".0" a JSON decoder gave them.
func stringify(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = stringify(e)
		}
		return strings.Join(parts, ",")
	case []string:
		return strings.Join(v, ",")
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
