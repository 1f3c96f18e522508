// Package javaprops reads and writes the text format of java.util.Properties,
// which Kafka uses for server.properties, client config files and
// meta.properties. The broker's config loader, its meta.properties
// checkpoint and the perf tools' --producer.config/--consumer.config share
// this one parser (Parse), and the files qk writes in the format share its
// one writer (AppendProperties and the header lines of store.go), so what
// qk writes is what it and Java read back.
package javaprops

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Property is one key=value of a .properties file, with the line its
// logical line starts on, for error messages.
type Property struct {
	Key, Value string
	Line       int
}

// Parse reads the syntax of java.util.Properties.load, which is
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
//   - every entry is returned in order, duplicates too: a later duplicate
//     key wins (Map keeps the last).
//
// Java reads the bytes as ISO-8859-1; qk reads UTF-8, and falls back to
// ISO-8859-1 only for input that is not valid UTF-8, so both old files and
// files written today load as their authors meant.
func Parse(b []byte) ([]Property, error) {
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
		out   []Property
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

func splitKeyValue(l string) (Property, error) {
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
		return Property{}, err
	}
	val, err := unescapeProperty(rest)
	if err != nil {
		return Property{}, err
	}
	return Property{Key: key, Value: val}, nil
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

// Map returns the properties as a map; a later duplicate key wins, as in
// Java.
func Map(props []Property) map[string]string {
	m := make(map[string]string, len(props))
	for _, p := range props {
		m[p.Key] = p.Value
	}
	return m
}
