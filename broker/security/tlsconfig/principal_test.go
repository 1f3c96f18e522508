package tlsconfig

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/dn.hex (then run java DN.java < dn.hex > dn.golden there)")

var (
	oidCN     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidC      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidL      = asn1.ObjectIdentifier{2, 5, 4, 7}
	oidST     = asn1.ObjectIdentifier{2, 5, 4, 8}
	oidStreet = asn1.ObjectIdentifier{2, 5, 4, 9}
	oidO      = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU     = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidSerial = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidTitle  = asn1.ObjectIdentifier{2, 5, 4, 12}
	oidUID    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidDC     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidEmail  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidOther  = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}
)

func av(oid asn1.ObjectIdentifier, tag int, value []byte) attribute {
	return attribute{Type: oid, Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: value}}
}

func utf8(oid asn1.ObjectIdentifier, s string) attribute {
	return av(oid, asn1.TagUTF8String, []byte(s))
}
func printable(oid asn1.ObjectIdentifier, s string) attribute {
	return av(oid, asn1.TagPrintableString, []byte(s))
}

func bmp(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return b
}

// dnCases are subjects, in DER order (least specific first), whose
// formatting Java's X500Principal.getName() recorded in dn.golden.
func dnCases() []struct {
	name string
	rdns []rdnSET
} {
	return []struct {
		name string
		rdns []rdnSET
	}{
		{"simple", []rdnSET{{printable(oidC, "US")}, {utf8(oidO, "qk")}, {utf8(oidOU, "eng")}, {utf8(oidCN, "client")}}},
		{"special characters", []rdnSET{{utf8(oidO, `a,b+c"d\e<f>g;h=i#j`)}, {utf8(oidCN, "Tkac, Adam")}}},
		{"leading hash and spaces", []rdnSET{{utf8(oidOU, "#lead")}, {utf8(oidCN, "  two spaces around  ")}}},
		{"only spaces", []rdnSET{{utf8(oidCN, "   ")}}},
		{"empty value", []rdnSET{{utf8(oidCN, "")}}},
		{"multi-valued RDN", []rdnSET{{utf8(oidO, "qk")}, {utf8(oidCN, "svc"), utf8(oidUID, "u1")}}},
		{"email and serial as OIDs", []rdnSET{{utf8(oidCN, "client")}, {av(oidEmail, asn1.TagIA5String, []byte("a@b.example"))}, {printable(oidSerial, "1234")}}},
		{"DC, ST, L, STREET, UID", []rdnSET{{av(oidDC, asn1.TagIA5String, []byte("com"))}, {av(oidDC, asn1.TagIA5String, []byte("example"))}, {utf8(oidST, "MD")}, {utf8(oidL, "Fulton")}, {utf8(oidStreet, "1 Main St")}, {utf8(oidUID, "duke")}}},
		{"title and a private OID", []rdnSET{{utf8(oidTitle, "Dr")}, {utf8(oidOther, "x")}}},
		{"non-ASCII UTF8", []rdnSET{{utf8(oidCN, "Zoë 東京 🙂")}}},
		{"BMPString", []rdnSET{{av(oidCN, asn1.TagBMPString, bmp("Jürgen"))}}},
		{"T61String", []rdnSET{{av(oidCN, asn1.TagT61String, []byte{'c', 'a', 'f', 0xe9})}}},
		{"IA5String CN", []rdnSET{{av(oidCN, asn1.TagIA5String, []byte("host_1*@"))}}},
		{"NUL, CR and tab", []rdnSET{{utf8(oidCN, "a\x00b\rc\td\r")}}},
		{"UniversalString as hex", []rdnSET{{av(oidCN, 28, []byte{0, 0, 0, 'A'})}}},
		{"INTEGER value as hex", []rdnSET{{av(oidCN, asn1.TagInteger, []byte{0x05})}}},
		{"empty subject", nil},
	}
}

func marshalRDNs(t *testing.T, rdns []rdnSET) []byte {
	t.Helper()
	if rdns == nil {
		rdns = []rdnSET{}
	}
	b, err := asn1.Marshal(rdns)
	require.NoError(t, err)
	return b
}

// TestDistinguishedNameJava checks formatDN against what Java 17's
// X500Principal.getName() printed for the same DER (testdata/dn.golden).
func TestDistinguishedNameJava(t *testing.T) {
	cases := dnCases()
	if *update {
		var b strings.Builder
		for _, c := range cases {
			fmt.Fprintf(&b, "%s\t%s\n", c.name, hex.EncodeToString(marshalRDNs(t, c.rdns)))
		}
		require.NoError(t, os.WriteFile(fixture("dn.hex"), []byte(b.String()), 0o644))
	}
	golden := map[string]string{}
	b, err := os.ReadFile(fixture("dn.golden"))
	require.NoError(t, err)
	// Split on '\n' alone: a value may end in a '\r' that line scanners drop.
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		name, dn, ok := strings.Cut(line, "\t")
		if !ok {
			dn = "" // the empty subject
		}
		golden[name] = dn
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, ok := golden[c.name]
			require.True(t, ok, "no golden line; run with -update and gen.sh's java step")
			got, err := formatDN(marshalRDNs(t, c.rdns))
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// TestPrincipalFromCertificate goes from a certificate crypto/x509 made
// to the principal under DEFAULT and under a rule.
func TestPrincipalFromCertificate(t *testing.T) {
	ca := newCA(t, "ca")
	cert := issue(t, ca, pkix.Name{CommonName: "Duke", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Org"}, Country: []string{"US"}}, nil).cert
	got, err := Principal(cert, "")
	require.NoError(t, err)
	require.Equal(t, "CN=Duke,OU=ServiceUsers,O=Org,C=US", got)
	got, err = Principal(cert, "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT")
	require.NoError(t, err)
	require.Equal(t, "duke", got)
	_, err = Principal(cert, "RULE:^CN=x$/$1/")
	require.ErrorIs(t, err, ErrNoMatchingRule)
	got, err = Principal(nil, "DEFAULT")
	require.NoError(t, err)
	require.Equal(t, Anonymous, got)
	_, err = Principal(cert, "RULE:broken")
	require.ErrorIs(t, err, ErrInvalidRule)
}

// TestRules are Kafka's SslPrincipalMapperTest cases and the rules of
// its security documentation.
func TestRules(t *testing.T) {
	kafka := strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", ")
	tests := []struct {
		name    string
		rules   string
		dn      string
		want    string
		wantErr error
	}{
		{"service user, /L", kafka, "CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke", nil},
		{"two groups", kafka, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme", nil},
		{"/U", kafka, "cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME", nil},
		{"case-insensitive CN", kafka, "cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE", nil},
		{"DEFAULT last", kafka, "OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US", nil},
		{"documented example", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser", nil},
		{"documented example, no match", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=adminUser,OU=Admin,O=Unknown", "CN=adminUser,OU=Admin,O=Unknown", nil},
		{"documented example 2", "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT", "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin", nil},
		{"escaped comma in the DN", `RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`, `CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`, `Tkac\, Adam`, nil},
		{"empty is DEFAULT", "", "CN=a,O=b", "CN=a,O=b", nil},
		{"no rule matches", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=a,O=b", "", ErrNoMatchingRule},
		{"only empty rules", " , ,", "CN=a", "", ErrNoMatchingRule},
		{"group beyond the pattern's is literal", "RULE:^CN=(.*?),O=(.*?)$/$1@$3/", "CN=a,O=b", "a@$3", nil},
		{"$12 with 2 groups is group 1 then 2", "RULE:^CN=(.*?),O=(.*?)$/$12/", "CN=a,O=b", "a2", nil},
		{"$0 is the whole match", "RULE:^CN=(.*?),O=.*$/[$0]/", "CN=a,O=b", "[CN=a,O=b]", nil},
		{"escaped dollar and slash", `RULE:^CN=(.*?)$/\$1\/$1/`, "CN=a", "$1/a", nil},
		{"named group", "RULE:^CN=(?P<user>[^,]*).*$/${user}/U", "CN=bob,O=x", "BOB", nil},
		{"unmatched optional group is empty", "RULE:^CN=([^,]*)(,O=x)?.*$/$1$2/", "CN=a,O=b", "a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRules(tt.rules)
			require.NoError(t, err)
			got, err := r.Name(tt.dn)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRulesSplitting is SslPrincipalMapperTest.testRulesSplitting: the
// rules text as the mapper's toString shows it once parsed. (Kafka's ""
// is no rules at all; here "" is the setting's default, DEFAULT.)
func TestRulesSplitting(t *testing.T) {
	tests := []struct{ rules, want string }{
		{"DEFAULT", "[DEFAULT]"},
		{"RULE://", "[RULE:/]"},
		{"RULE:/.*/", "[RULE:/.*]"},
		{"RULE:/.*/L", "[RULE:/.*/L]"},
		{"RULE://,DEFAULT", "[RULE:/, DEFAULT]"},
		{"  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"},
		{"  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"},
		{"  RULE:  /     /U   ,DEFAULT  ", "[RULE:  /     /U, DEFAULT]"},
		{"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]"},
		{",   , , ,      , , ,   ", "[]"},
		{",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"},
		{",  , RULE: /   /    ,,,   DEFAULT, ,   ", "[RULE: /   , DEFAULT]"},
		{"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,", "[RULE:   /  /U, DEFAULT]"},
		{`RULE:\/\\\(\)\n\t/\/\//`, `[RULE:\/\\\(\)\n\t/\/\/]`},
		{`RULE:\**\/+/*/L,RULE:\/*\**/**/`, `[RULE:\**\/+/*/L, RULE:\/*\**/**]`},
		{
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.rules, func(t *testing.T) {
			r, err := ParseRules(tt.rules)
			require.NoError(t, err)
			require.Equal(t, tt.want, r.String())
		})
	}
}

// TestInvalidRules is SslPrincipalMapperTest.testInvalidRules plus what
// Go's regexp or Java's replacement syntax refuse.
func TestInvalidRules(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:^CN=(?=a)(.*)$/$1/",     // lookahead: not RE2
		"RULE:^CN=(.*)\\1$/$1/",       // back reference: not RE2
		"RULE:^CN=(.*)$/$x/",          // illegal group reference
		"RULE:^CN=(.*)$/${nope}/",     // no such named group
		"RULE:^CN=(.*)$/a\\/,DEFAULT", // the escaped '/' leaves the rule open
	} {
		t.Run(rules, func(t *testing.T) {
			_, err := ParseRules(rules)
			require.ErrorIs(t, err, ErrInvalidRule)
		})
	}
}
