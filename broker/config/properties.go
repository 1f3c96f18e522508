package config

import (
	"sort"

	"github.com/qk-project/qk/internal/javaprops"
)

// propertiesCodec is viper's Codec for .properties, which viper 1.21 does
// not ship. Decode fills a flat map: with the "::" key delimiter qk gives
// viper, "log.dirs" stays one key instead of becoming log → dirs.
type propertiesCodec struct{}

func (propertiesCodec) Decode(b []byte, v map[string]any) error {
	props, err := javaprops.Parse(b)
	if err != nil {
		return err
	}
	for _, p := range props {
		v[p.Key] = p.Value
	}
	return nil
}

// Encode writes sorted key=value lines with javaprops' writer, so Java and
// javaprops.Parse read them back unchanged. Nested maps are flattened with
// '.'. There is no comment or date header: encoding the same settings
// twice gives the same bytes.
func (propertiesCodec) Encode(v map[string]any) ([]byte, error) {
	var props []javaprops.Property
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, val := range m {
			if sub, ok := val.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			props = append(props, javaprops.Property{Key: prefix + k, Value: stringify(val)})
		}
	}
	walk("", v)
	sort.Slice(props, func(i, j int) bool { return props[i].Key < props[j].Key })
	return javaprops.AppendProperties(nil, props), nil
}
