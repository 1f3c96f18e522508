package inspect

import (
	"unicode/utf8"
)

// javaString decodes b like Java's new String(b, UTF_8), which is what
// Kafka's StringDecoder prints for --print-data-log: every malformed
// sequence becomes one U+FFFD. Java replaces the longest prefix that could
// have started a valid sequence as one unit (E2 82 41 gives "\ufffdA", not
// two replacement characters as a byte-wise decoder would) and, unlike the
// Unicode rules, accepts ED A0..BF as a lead-in and then replaces the
// whole encoded surrogate with one U+FFFD.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	const repl = "\ufffd"
	out := make([]byte, 0, len(b)+8)
	cont := func(c byte) bool { return c&0xc0 == 0x80 }
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80:
			out = append(out, c)
			i++
		case c >= 0xc2 && c <= 0xdf: // 2 bytes
			if i+1 < len(b) && cont(b[i+1]) {
				out = append(out, b[i:i+2]...)
				i += 2
			} else {
				out = append(out, repl...)
				i++
			}
		case c >= 0xe0 && c <= 0xef: // 3 bytes
			ok2 := i+1 < len(b) && cont(b[i+1]) && (c != 0xe0 || b[i+1] >= 0xa0)
			if !ok2 {
				out = append(out, repl...)
				i++
				continue
			}
			if i+2 >= len(b) || !cont(b[i+2]) {
				out = append(out, repl...)
				i += 2
				continue
			}
			if c == 0xed && b[i+1] >= 0xa0 { // an encoded surrogate
				out = append(out, repl...)
			} else {
				out = append(out, b[i:i+3]...)
			}
			i += 3
		case c >= 0xf0 && c <= 0xf4: // 4 bytes
			b2ok := i+1 < len(b) && cont(b[i+1]) &&
				(c != 0xf0 || b[i+1] >= 0x90) && (c != 0xf4 || b[i+1] <= 0x8f)
			switch {
			case !b2ok:
				out = append(out, repl...)
				i++
			case i+2 >= len(b) || !cont(b[i+2]):
				out = append(out, repl...)
				i += 2
			case i+3 >= len(b) || !cont(b[i+3]):
				out = append(out, repl...)
				i += 3
			default:
				out = append(out, b[i:i+4]...)
				i += 4
			}
		default: // continuation byte, C0, C1 or F5..FF
			out = append(out, repl...)
			i++
		}
	}
	return string(out)
}
