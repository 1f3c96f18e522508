package perf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kafka's tools print with Java's formatter; these helpers make Go print
// the same text where the two differ.

// DefaultDateFormat is ConsumerPerformance's --date-format default.
const DefaultDateFormat = "yyyy-MM-dd HH:mm:ss:SSS"

// DateFormat formats times like java.text.SimpleDateFormat, for the
// pattern letters people use (y M d H k K h m s S E a z Z X D u G),
// quoted text, and two single quotes for one.
type DateFormat struct {
	fields []dateField
}

type dateField struct {
	letter byte // 0: literal
	n      int  // repeat count
	lit    string
}

// ParseDateFormat compiles a SimpleDateFormat pattern. Letters that
// SimpleDateFormat does not know are errors, as in Java; known letters qk
// does not implement (week-based fields) are errors too, naming them.
func ParseDateFormat(pattern string) (*DateFormat, error) {
	var df DateFormat
	for i := 0; i < len(pattern); {
		c := pattern[i]
		switch {
		case c == '\'' && i+1 < len(pattern) && pattern[i+1] == '\'':
			df.fields = append(df.fields, dateField{lit: "'"})
			i += 2
		case c == '\'':
			// Quoted text up to the closing quote; '' inside is a quote.
			var lit strings.Builder
			j := i + 1
			for {
				if j >= len(pattern) {
					return nil, fmt.Errorf("date format %q: unterminated quote", pattern)
				}
				if pattern[j] == '\'' {
					if j+1 < len(pattern) && pattern[j+1] == '\'' {
						lit.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				lit.WriteByte(pattern[j])
				j++
			}
			df.fields = append(df.fields, dateField{lit: lit.String()})
			i = j + 1
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			n := 1
			for i+n < len(pattern) && pattern[i+n] == c {
				n++
			}
			if !strings.ContainsRune("yMdHkKhmsSEazZXDuG", rune(c)) {
				return nil, fmt.Errorf("date format %q: unsupported pattern letter '%c'", pattern, c)
			}
			df.fields = append(df.fields, dateField{letter: c, n: n})
			i += n
		default:
			df.fields = append(df.fields, dateField{lit: string(c)})
			i++
		}
	}
	return &df, nil
}

// Format formats t (in its location) as SimpleDateFormat would.
func (df *DateFormat) Format(t time.Time) string {
	var b []byte
	num := func(v, n int) { b = append(b, fmt.Sprintf("%0*d", n, v)...) }
	for _, f := range df.fields {
		switch f.letter {
		case 0:
			b = append(b, f.lit...)
		case 'G':
			b = append(b, "AD"...)
		case 'y':
			if f.n == 2 {
				num(t.Year()%100, 2)
			} else {
				num(t.Year(), f.n)
			}
		case 'M':
			switch {
			case f.n >= 4:
				b = append(b, t.Month().String()...)
			case f.n == 3:
				b = append(b, t.Month().String()[:3]...)
			default:
				num(int(t.Month()), f.n)
			}
		case 'd':
			num(t.Day(), f.n)
		case 'D':
			num(t.YearDay(), f.n)
		case 'H':
			num(t.Hour(), f.n)
		case 'k':
			h := t.Hour()
			if h == 0 {
				h = 24
			}
			num(h, f.n)
		case 'K':
			num(t.Hour()%12, f.n)
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, f.n)
		case 'm':
			num(t.Minute(), f.n)
		case 's':
			num(t.Second(), f.n)
		case 'S':
			// Milliseconds as a number, padded to the count, as
			// SimpleDateFormat does (not a fraction of a second).
			num(t.Nanosecond()/1e6, f.n)
		case 'E':
			if f.n >= 4 {
				b = append(b, t.Weekday().String()...)
			} else {
				b = append(b, t.Weekday().String()[:3]...)
			}
		case 'u':
			d := int(t.Weekday())
			if d == 0 {
				d = 7
			}
			num(d, f.n)
		case 'a':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'z':
			name, _ := t.Zone()
			b = append(b, name...)
		case 'Z':
			b = t.AppendFormat(b, "-0700")
		case 'X':
			if _, off := t.Zone(); off == 0 {
				b = append(b, 'Z')
				break
			}
			switch f.n {
			case 1:
				b = t.AppendFormat(b, "-07")
			case 2:
				b = t.AppendFormat(b, "-0700")
			default:
				b = t.AppendFormat(b, "-07:00")
			}
		}
	}
	return string(b)
}

// javaF is Java's %.Nf. Java's Formatter rounds the shortest decimal
// that reads back as d (Double.toString's digits) half up, where Go rounds
// the exact binary value half to even: 10.25 is "10.3" in Java, "10.2" in
// Go's %.1f. Non-finite values are spelt NaN and Infinity, which Kafka's
// tools print when an interval is zero.
func javaF(d float64, prec int) string {
	switch {
	case math.IsNaN(d):
		return "NaN"
	case math.IsInf(d, 1):
		return "Infinity"
	case math.IsInf(d, -1):
		return "-Infinity"
	}
	ip, fp, _ := strings.Cut(strconv.FormatFloat(math.Abs(d), 'f', -1, 64), ".")
	if len(fp) <= prec {
		fp += strings.Repeat("0", prec-len(fp))
	} else {
		digits := []byte(ip + fp[:prec])
		if fp[prec] >= '5' {
			i := len(digits) - 1
			for ; i >= 0 && digits[i] == '9'; i-- {
				digits[i] = '0'
			}
			if i < 0 {
				digits = append([]byte{'1'}, digits...)
			} else {
				digits[i]++
			}
		}
		ip, fp = string(digits[:len(digits)-prec]), string(digits[len(digits)-prec:])
	}
	s := ip
	if prec > 0 {
		s += "." + fp
	}
	if math.Signbit(d) {
		s = "-" + s
	}
	return s
}
