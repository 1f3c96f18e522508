package config

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

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

// Encode writes sorted key=value lines that javaprops.Parse and Java read
// back unchanged. Nested maps are flattened with '.'.
func (propertiesCodec) Encode(v map[string]any) ([]byte, error) {
	flat := map[string]string{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, val := range m {
			if sub, ok := val.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			flat[prefix+k] = stringify(val)
		}
	}
	walk("", v)
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	for _, k := range keys {
		buf.WriteString(escapeProperty(k, true))
		buf.WriteByte('=')
		buf.WriteString(escapeProperty(flat[k], false))
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// escapeProperty escapes what javaprops.Parse would otherwise read
// differently: separators in keys, comment characters and whitespace at
// the start, control characters and backslashes anywhere.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		case (r == '=' || r == ':') && key:
			b.WriteByte('\\')
			b.WriteRune(r)
		case (r == '#' || r == '!') && i == 0:
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
