package inspect

import (
	"strconv"
	"unicode/utf8"
)

// jsonObj builds one JSON object with its fields in the order they are
// added. The dump's JSON lines keep Kafka's field order (the order of the
// text line), which encoding/json's maps cannot, and a hand-built object
// costs nothing per record.
type jsonObj struct {
	b []byte
}

func (j *jsonObj) key(k string) {
	if len(j.b) == 0 {
		j.b = append(j.b, '{')
	} else {
		j.b = append(j.b, ',')
	}
	j.b = appendJSONString(j.b, k)
	j.b = append(j.b, ':')
}

func (j *jsonObj) str(k, v string) { j.key(k); j.b = appendJSONString(j.b, v) }
func (j *jsonObj) int(k string, v int64) {
	j.key(k)
	j.b = strconv.AppendInt(j.b, v, 10)
}
func (j *jsonObj) uint(k string, v uint64) {
	j.key(k)
	j.b = strconv.AppendUint(j.b, v, 10)
}
func (j *jsonObj) bool(k string, v bool) { j.key(k); j.b = strconv.AppendBool(j.b, v) }
func (j *jsonObj) null(k string)         { j.key(k); j.b = append(j.b, "null"...) }

// raw adds v, which must already be JSON.
func (j *jsonObj) raw(k string, v []byte) { j.key(k); j.b = append(j.b, v...) }

// rawOrString adds v as JSON when it is an object (a decoded
// __consumer_offsets key or value) and as a string otherwise (the decoder's
// "Error at offset …" and "<DELETE>" texts).
func (j *jsonObj) rawOrString(k, v string) {
	if len(v) > 0 && v[0] == '{' {
		j.raw(k, []byte(v))
		return
	}
	j.str(k, v)
}

func (j *jsonObj) strs(k string, v []string) {
	j.key(k)
	j.b = append(j.b, '[')
	for i, s := range v {
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.b = appendJSONString(j.b, s)
	}
	j.b = append(j.b, ']')
}

// done closes the object and returns its bytes (without a newline).
func (j *jsonObj) done() []byte {
	if len(j.b) == 0 {
		return []byte("{}")
	}
	return append(j.b, '}')
}

// appendJSONString quotes s the way Jackson does (Kafka's JSON): only '"',
// '\\' and control characters are escaped; non-ASCII text stays as is and
// invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
