package tlsconfig

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var (
	// ErrInvalidRule is ssl.principal.mapping.rules text that Kafka's
	// SslPrincipalMapper would refuse, or a pattern Go cannot compile.
	ErrInvalidRule = errors.New("tlsconfig: invalid principal mapping rule")
	// ErrNoMatchingRule is a distinguished name that no rule maps (rules
	// without DEFAULT); Kafka fails the authentication.
	ErrNoMatchingRule = errors.New("tlsconfig: no principal mapping rule matches")
)

// Principal returns the name part of the principal Kafka's
// DefaultKafkaPrincipalBuilder gives cert under rules
// (ssl.principal.mapping.rules; "" is DEFAULT). The caller prefixes
// "User:". A server parses its rules once: see ParseRules.
func Principal(cert *x509.Certificate, rules string) (string, error) {
	r, err := ParseRules(rules)
	if err != nil {
		return "", err
	}
	return r.Principal(cert)
}

// DistinguishedName formats cert's subject as Java's
// X500Principal.getName() does, the string Kafka's mapping rules see.
func DistinguishedName(cert *x509.Certificate) (string, error) {
	return formatDN(cert.RawSubject)
}

// attribute is one AttributeTypeAndValue with its value still encoded:
// Java's format depends on the value's ASN.1 string type.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one RelativeDistinguishedName; encoding/asn1 reads a slice
// whose type name ends in SET as a SET OF.
type rdnSET []attribute

// rfc2253Keywords are the attribute types X500Principal.RFC2253 names by
// keyword; every other type is printed as its dotted OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
}

// formatDN is sun.security.x509.X500Name.getRFC2253Name: RDNs from the
// last in the DER (the most specific) to the first, joined by ',', the
// attributes of a multi-valued RDN in encoded order joined by '+'.
func formatDN(raw []byte) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(raw, &seq)
	if err != nil {
		return "", fmt.Errorf("tlsconfig: parse subject: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("tlsconfig: parse subject: trailing data")
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, a := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			formatAttribute(&b, a)
		}
	}
	return b.String(), nil
}

// formatAttribute is sun.security.x509.AVA.toRFC2253String.
func formatAttribute(b *strings.Builder, a attribute) {
	oid := a.Type.String()
	kw, ok := rfc2253Keywords[oid]
	val, isString := directoryString(a.Value)
	if !ok {
		kw = oid
	}
	b.WriteString(kw)
	b.WriteByte('=')
	if !ok || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	const escapees = ",=+<>#;\"\\"
	var esc []rune
	for _, c := range val {
		switch {
		case strings.ContainsRune(escapees, c):
			esc = append(esc, '\\', c)
		case c == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, c)
		}
	}
	lead := 0
	for lead < len(esc) && (esc[lead] == ' ' || esc[lead] == '\r') {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && (esc[trail] == ' ' || esc[trail] == '\r') {
		trail--
	}
	for i, c := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
}

// directoryString says whether Java formats v as text (DerValue
// isDerString, not canonical) and gives the text: the value's bytes read
// as UTF-8 whatever the string type, as Java 17 does (so a BMPString's
// zero bytes come out as \00 and a T61 'é' as U+FFFD; dn.golden pins it).
func directoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagBMPString, 27 /* GeneralString */ :
		return string(v.Bytes), true
	}
	return "", false
}

// Kafka's SslPrincipalMapper grammar, as its RULE_PATTERN and
// RULE_SPLITTER: DEFAULT, or RULE:pattern/replacement/[LU], where '\'
// escapes any character in pattern and replacement; rules are separated
// by commas, which a pattern may also contain.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// Rules are parsed ssl.principal.mapping.rules.
type Rules struct {
	text  string
	rules []rule
}

type rule struct {
	isDefault bool
	text      string         // Kafka's Rule.toString, for errors and tests
	pattern   *regexp.Regexp // as written, for replacing
	whole     *regexp.Regexp // anchored, for Java's Matcher.matches
	repl      []replPart
	lower     bool
	upper     bool
}

// replPart is a literal, or a group reference when group >= 0 (by
// number) or name != "".
type replPart struct {
	lit   string
	group int
	name  string
}

// ParseRules parses ssl.principal.mapping.rules once, with the errors
// Kafka gives for bad syntax. "" means DEFAULT, Kafka's default.
func ParseRules(text string) (*Rules, error) {
	if strings.TrimSpace(text) == "" {
		text = defaultPrincipalMapping
	}
	r := &Rules{text: text}
	for _, m := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(text), -1) {
		ru, ok, err := parseRule(m[1])
		if err != nil {
			return nil, err
		}
		if ok {
			r.rules = append(r.rules, ru)
		}
	}
	return r, nil
}

func parseRule(s string) (rule, bool, error) {
	loc := ruleParser.FindStringSubmatchIndex(s)
	if loc == nil || loc[1] != len(s) {
		end := 0
		if loc != nil {
			end = loc[1]
		}
		return rule{}, false, fmt.Errorf("%w: %q, unmatched substring %q", ErrInvalidRule, s, s[end:])
	}
	group := func(i int) (string, bool) {
		if loc[2*i] < 0 {
			return "", false
		}
		return s[loc[2*i]:loc[2*i+1]], true
	}
	if _, ok := group(1); ok {
		return rule{isDefault: true, text: defaultPrincipalMapping}, true, nil
	}
	pat, ok := group(2)
	if !ok {
		return rule{}, false, nil // an empty rule, which Kafka ignores
	}
	repl, _ := group(4)
	flag, _ := group(6)
	re, err := regexp.Compile(pat)
	if err != nil {
		return rule{}, false, fmt.Errorf("%w: %q: pattern: %v (patterns are Go RE2 regular expressions)", ErrInvalidRule, s, err)
	}
	whole := regexp.MustCompile(`\A(?:` + pat + `)\z`)
	parts, err := parseReplacement(repl, re)
	if err != nil {
		return rule{}, false, fmt.Errorf("%w: %q: replacement: %v", ErrInvalidRule, s, err)
	}
	text := "RULE:" + pat + "/" + repl
	if flag != "" {
		text += "/" + flag
	}
	return rule{text: text, pattern: re, whole: whole, repl: parts, lower: flag == "L", upper: flag == "U"}, true, nil
}

// parseReplacement reads a replacement as Java's Matcher.appendReplacement
// does after Kafka's escapeLiteralBackReferences: '\' quotes the next
// character; $n takes the longest run of digits naming an existing group
// (a first digit beyond the groups is a literal "$", as Kafka makes it);
// ${name} names a group.
func parseReplacement(s string, re *regexp.Regexp) ([]replPart, error) {
	groups := re.NumSubexp()
	var parts []replPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, replPart{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			i++
			if i == len(s) {
				return nil, errors.New("character to be escaped is missing")
			}
			lit.WriteByte(s[i])
		case '$':
			if i+1 == len(s) {
				return nil, errors.New("illegal group reference: group index is missing")
			}
			if s[i+1] == '{' {
				end := strings.IndexByte(s[i+2:], '}')
				if end < 0 {
					return nil, errors.New("named capturing group is missing trailing '}'")
				}
				name := s[i+2 : i+2+end]
				if re.SubexpIndex(name) < 0 {
					return nil, fmt.Errorf("no group with name {%s}", name)
				}
				flush()
				parts = append(parts, replPart{group: -1, name: name})
				i += 2 + end
				continue
			}
			d := s[i+1]
			if d < '0' || d > '9' {
				return nil, errors.New("illegal group reference")
			}
			n := int(d - '0')
			if n > groups {
				lit.WriteByte('$') // Kafka escapes it; the digits follow as text
				continue
			}
			j := i + 2
			for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
				next := n*10 + int(s[j]-'0')
				if next > groups {
					break
				}
				n = next
			}
			flush()
			parts = append(parts, replPart{group: n})
			i = j - 1
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

// String lists the parsed rules as Kafka's SslPrincipalMapper.toString
// does, e.g. "[RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT]".
func (r *Rules) String() string {
	texts := make([]string, len(r.rules))
	for i, ru := range r.rules {
		texts[i] = ru.text
	}
	return "[" + strings.Join(texts, ", ") + "]"
}

// Name maps a distinguished name (as DistinguishedName formats it): the
// first rule whose pattern matches all of dn gives its replacement, every
// match of the pattern replaced as Java's String.replaceAll does, then
// lower- or upper-cased for /L and /U; DEFAULT gives dn unchanged. One
// difference remains: after a non-empty match Java also replaces an empty
// match where it ended, so an unanchored "(.*)" with "x" gives Java "xx"
// and Go "x"; anchor patterns with ^ and $ as Kafka's examples do.
func (r *Rules) Name(dn string) (string, error) {
	for _, ru := range r.rules {
		if ru.isDefault {
			return dn, nil
		}
		if !ru.whole.MatchString(dn) {
			continue
		}
		out := ru.replaceAll(dn)
		switch {
		case ru.lower:
			out = strings.ToLower(out)
		case ru.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: %q under %q", ErrNoMatchingRule, dn, r.text)
}

// Principal is Name of cert's distinguished name.
func (r *Rules) Principal(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return Anonymous, nil
	}
	dn, err := DistinguishedName(cert)
	if err != nil {
		return "", err
	}
	return r.Name(dn)
}

func (ru rule) replaceAll(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range ru.pattern.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		for _, p := range ru.repl {
			g := p.group
			if p.name != "" {
				g = ru.pattern.SubexpIndex(p.name)
			}
			if g < 0 {
				b.WriteString(p.lit)
				continue
			}
			if m[2*g] >= 0 { // an unmatched group is empty, as in Java
				b.WriteString(s[m[2*g]:m[2*g+1]])
			}
		}
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
