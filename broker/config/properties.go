package config

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// property is one key=value of a .properties file, with the line its
// logical line starts on, for error messages.
type property struct {
	Key, Value string
	Line       int
}

// parseProperties reads the syntax of java.util.Properties.load, which is
// how Kafka reads server.properties:
//
//   - natural lines end with \n, \r or \r\n; a logical line continues on the
//     next natural line when it ends with an odd number of backslashes, and
//     the continuation's leading whitespace is dropped;
//   - whitespace is space, \t and \f; leading whitespace is ignored; blank
//     lines are skipped;
//   - a line whose first non-white character is # or ! is a comment, and a
//     comment never continues;
//   - the key ends at the first unescaped '=', ':' or whitespace; whitespace
//     then one '=' or ':' then whitespace separate it from the value, so
//     "k=v", "k: v", "k v" and "k = v" are the same; "k" alone has the value
//     "";
//   - escapes in keys and values: \t \n \r \f, \uXXXX (UTF-16, pairs
//     joined), and a backslash before any other character is that
//     character (\= \: \# \! \\ and "\ " for a leading space);
//   - trailing whitespace of a value is kept (Kafka trims when it parses);
//   - a later duplicate key wins (the caller keeps the last).
//
// Java reads the bytes as ISO-8859-1; qk reads UTF-8, and falls back to
// ISO-8859-1 only for input that is not valid UTF-8, so both old files and
// files written today load as their authors meant.
func parseProperties(b []byte) ([]property, error) {
	text := string(b)
	if !utf8.Valid(b) {
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		text = string(r)
	}
	text = strings.TrimPrefix(text, "\uFEFF")

	var (
		out   []property
		line  = 0
		lines = splitNatural(text)
	)
	for i := 0; i < len(lines); i++ {
		line = i + 1
		l := strings.TrimLeft(lines[i], " \t\f")
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		// Join continuation lines.
		start := line
		for endsWithEscape(l) && i+1 < len(lines) {
			i++
			l = l[:len(l)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if endsWithEscape(l) { // a backslash at end of input is dropped, as in Java
			l = l[:len(l)-1]
		}
		p, err := splitKeyValue(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		p.Line = start
		out = append(out, p)
	}
	return out, nil
}

// splitNatural splits on \n, \r and \r\n.
func splitNatural(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

// endsWithEscape reports whether l ends in an odd number of backslashes,
// which escapes the line terminator.
func endsWithEscape(l string) bool {
	n := 0
	for i := len(l) - 1; i >= 0 && l[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func splitKeyValue(l string) (property, error) {
	// Find the end of the key: the first unescaped separator.
	i := 0
	for i < len(l) {
		c := l[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isPropSpace(c) {
			break
		}
		i++
	}
	if i > len(l) {
		i = len(l)
	}
	rawKey, rest := l[:i], l[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescapeProperty(rawKey)
	if err != nil {
		return property{}, err
	}
	val, err := unescapeProperty(rest)
	if err != nil {
		return property{}, err
	}
	return property{Key: key, Value: val}, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var units []uint16 // UTF-16, so \uD83D\uDE00 pairs join
	put := func(r rune) {
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			units = append(units, uint16(r1), uint16(r2))
		} else {
			units = append(units, uint16(r))
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r != '\\' {
			put(r)
			continue
		}
		if i >= len(s) {
			break
		}
		r, size = utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case 't':
			put('\t')
		case 'n':
			put('\n')
		case 'r':
			put('\r')
		case 'f':
			put('\f')
		case 'u':
			if i+4 > len(s) {
				return "", fmt.Errorf(`malformed \uxxxx escape %q`, `\u`+s[i:])
			}
			var u uint16
			for _, h := range []byte(s[i : i+4]) {
				d, ok := hexDigit(h)
				if !ok {
					return "", fmt.Errorf(`malformed \uxxxx escape %q`, `\u`+s[i:i+4])
				}
				u = u<<4 | uint16(d)
			}
			i += 4
			units = append(units, u)
		default:
			put(r)
		}
	}
	return string(utf16.Decode(units)), nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// propertiesCodec is viper's Codec for .properties, which viper 1.21 does
// not ship. Decode fills a flat map: with the "::" key delimiter qk gives
// viper, "log.dirs" stays one key instead of becoming log → dirs.
type propertiesCodec struct{}

func (propertiesCodec) Decode(b []byte, v map[string]any) error {
	props, err := parseProperties(b)
	if err != nil {
		return err
	}
	for _, p := range props {
		v[p.Key] = p.Value
	}
	return nil
}

// Encode writes sorted key=value lines that parseProperties and Java read
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

// escapeProperty escapes what parseProperties would otherwise read
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
