package javaprops

import (
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The writer reproduces java.util.Properties.store(OutputStream, comments),
// the form Kafka writes meta.properties in, so that a file qk writes is the
// file a Java broker would have written and loads back unchanged in Java
// (Properties.load(InputStream) reads ISO-8859-1) and in Parse (which reads
// UTF-8 and falls back to ISO-8859-1). store writes, in order:
//
//	comment lines    when comments is not null  → AppendComments
//	"#" + new Date() always                     → AppendDate
//	key=value lines  in the table's order       → AppendProperties
//
// The three are separate because qk does not always want the whole header:
// meta.properties carries all of it, as Kafka's own does (Kafka calls
// store(out, ""), hence its "#\n#<date>" start), while a config file qk
// encodes has no header, so that encoding the same settings twice gives the
// same bytes. Lines end in "\n", which is what store's newLine writes on
// the platforms qk runs on.

// DateLayout is java.util.Date.toString's format ("EEE MMM dd HH:mm:ss zzz
// yyyy"), which store uses for its date comment line.
const DateLayout = "Mon Jan 02 15:04:05 MST 2006"

// AppendComments appends comments as store writes its comments argument:
// "#" then the text, a line break for each \n, \r or \r\n in it followed by
// a fresh "#" unless the next line already starts with '#' or '!', and a
// final line break. Characters above U+00FF become \uXXXX (UTF-16 units);
// U+0080-U+00FF are written as their single ISO-8859-1 byte, as store's
// ISO-8859-1 writer does, so such a comment makes the file non-UTF-8 (Parse
// then reads it as ISO-8859-1, which is right because everything else the
// writer emits is ASCII). comments "" gives the lone "#" line Kafka's
// meta.properties starts with.
func AppendComments(dst []byte, comments string) []byte {
	dst = append(dst, '#')
	rs := []rune(comments)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\n' || r == '\r':
			dst = append(dst, '\n')
			if r == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
			if i+1 == len(rs) || (rs[i+1] != '#' && rs[i+1] != '!') {
				dst = append(dst, '#')
			}
		case r > 0xff:
			dst = appendUTF16Escapes(dst, r)
		default:
			dst = append(dst, byte(r))
		}
	}
	return append(dst, '\n')
}

// AppendDate appends the "#<date>" line store writes after the comments,
// with t in Date.toString form (DateLayout) in t's own location.
func AppendDate(dst []byte, t time.Time) []byte {
	dst = append(dst, '#')
	dst = t.AppendFormat(dst, DateLayout)
	return append(dst, '\n')
}

// AppendProperties appends one key=value line per property, in the order
// given (Line is ignored), escaped as store's saveConvert escapes with
// escUnicode set:
//
//   - a backslash is doubled; \t \n \r \f are written as those escapes;
//   - '=', ':', '#' and '!' get a backslash wherever they are, in keys and
//     values;
//   - a space gets a backslash everywhere in a key but only at the start of
//     a value (where load would otherwise drop it);
//   - every other character below U+0020 or above U+007E is written as
//     \uXXXX in upper-case hex, one escape per UTF-16 unit, so an emoji
//     becomes a surrogate pair such as \uD83D\uDE00.
//
// The output is pure ASCII. A byte sequence that is not UTF-8 is written
// as \uFFFD: a Java String cannot hold it either.
func AppendProperties(dst []byte, props []Property) []byte {
	for _, p := range props {
		dst = appendEscaped(dst, p.Key, true)
		dst = append(dst, '=')
		dst = appendEscaped(dst, p.Value, false)
		dst = append(dst, '\n')
	}
	return dst
}

// appendEscaped is saveConvert(s, escapeSpace, true).
func appendEscaped(dst []byte, s string, escapeSpace bool) []byte {
	for i, r := range s {
		switch r {
		case '\\':
			dst = append(dst, '\\', '\\')
		case ' ':
			if i == 0 || escapeSpace {
				dst = append(dst, '\\')
			}
			dst = append(dst, ' ')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '=', ':', '#', '!':
			dst = append(dst, '\\', byte(r))
		default:
			if r < 0x20 || r > 0x7e {
				dst = appendUTF16Escapes(dst, r)
			} else {
				dst = append(dst, byte(r))
			}
		}
	}
	return dst
}

// appendUTF16Escapes writes r as Java sees it, one \uXXXX per UTF-16 unit.
func appendUTF16Escapes(dst []byte, r rune) []byte {
	const hex = "0123456789ABCDEF"
	units, n := [2]rune{r}, 1
	if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
		units, n = [2]rune{r1, r2}, 2
	}
	for _, u := range units[:n] {
		dst = append(dst, '\\', 'u', hex[u>>12&0xF], hex[u>>8&0xF], hex[u>>4&0xF], hex[u&0xF])
	}
	return dst
}
