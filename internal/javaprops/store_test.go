package javaprops

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// storeCases are the entries both the round-trip test and the Java
// conformance test (store_java_test.go) write: every character class
// saveConvert treats specially, in keys and in values. Keys are unique, so
// the map a reader builds has one entry per case.
var storeCases = []struct {
	name       string
	key, value string
}{
	{"plain", "log.dirs", "/var/lib/qk"},
	{"empty value", "empty", ""},
	{"empty key", "", "no key"},
	{"spaces in key", " key with  spaces ", "v"},
	{"leading spaces in value", "leading", "  two leading, trailing  "},
	{"only spaces", "spaces", "   "},
	{"separators and comment chars in key", "a=b:c#d!e", "x"},
	{"separators and comment chars in value", "seps", "=:#!a=b:c#d!e"},
	{"comment char starts key", "#not.a.comment", "!nor this"},
	{"backslashes", `C:\dir\`, `\\server\share\`},
	{"backslash before u", `\u0041`, `\uXYZ`},
	{"tab newline cr ff", "ws\t\n\r\fkey", "\ttab\nnewline\rcr\fff"},
	{"other controls and DEL", "ctl\x00\x01\x1f", "\x1b[0m\x7f"},
	{"latin-1", "région", "é\u00a0ÿ\u0085"},
	{"CJK", "日本", "語"},
	{"emoji (surrogate pair)", "face😀", "😀 \U0010FFFF"},
	{"value looks like continuation", "cont", `line\`},
}

func storeProps() []Property {
	props := make([]Property, len(storeCases))
	for i, c := range storeCases {
		props[i] = Property{Key: c.key, Value: c.value}
	}
	return props
}

// storeMap is storeCases as the map a reader should build.
func storeMap() map[string]string {
	m := map[string]string{}
	for _, c := range storeCases {
		m[c.key] = c.value
	}
	return m
}

func TestStoreRoundTrip(t *testing.T) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			b := AppendProperties(nil, []Property{{Key: c.key, Value: c.value}})
			props, err := Parse(b)
			require.NoError(t, err)
			require.Equal(t, map[string]string{c.key: c.value}, Map(props), "written as %q", b)
		})
	}

	// All at once, behind a full header whose comment makes the file
	// ISO-8859-1, which Parse must then fall back to.
	b := AppendComments(nil, "qk é 日本\nsecond line")
	b = AppendDate(b, time.Now())
	b = AppendProperties(b, storeProps())
	props, err := Parse(b)
	require.NoError(t, err)
	require.Equal(t, storeMap(), Map(props))
}

func TestAppendPropertiesBytes(t *testing.T) {
	tests := []struct{ key, value, want string }{
		{"k", "v", "k=v\n"},
		{"a b", " c d ", `a\ b=\ c d ` + "\n"},
		{"a=b:c#d!e", "=:#!", `a\=b\:c\#d\!e=\=\:\#\!` + "\n"},
		{`a\b`, `c\`, `a\\b=c\\` + "\n"},
		{"\t\n\r\f", "\t\n\r\f", `\t\n\r\f=\t\n\r\f` + "\n"},
		{"\x00\x1f", "\x7f\u0080", `\u0000\u001F=\u007F\u0080` + "\n"},
		{"é", "日本", `\u00E9=\u65E5\u672C` + "\n"},
		{"😀", "\U0010FFFF", `\uD83D\uDE00=\uDBFF\uDFFF` + "\n"},
		{"bad", "\xff", `bad=\uFFFD` + "\n"},
		{"", "", "=\n"},
	}
	for _, tt := range tests {
		got := AppendProperties([]byte("prefix\n"), []Property{{Key: tt.key, Value: tt.value, Line: 9}})
		require.Equal(t, "prefix\n"+tt.want, string(got), "key %q value %q", tt.key, tt.value)
	}
}

func TestAppendComments(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "#\n"},
		{"one", "#one\n"},
		{"a\nb", "#a\n#b\n"},
		{"a\r\nb\rc", "#a\n#b\n#c\n"},
		{"a\n#b\n!c", "#a\n#b\n!c\n"},
		{"trailing\n", "#trailing\n#\n"},
		{"tab\tand = : kept", "#tab\tand = : kept\n"},
		{"é\u00ff", "#\xe9\xff\n"},
		{"日😀", `#\u65E5\uD83D\uDE00` + "\n"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, string(AppendComments(nil, tt.in)), "comments %q", tt.in)
	}
}

func TestAppendDate(t *testing.T) {
	when := time.Date(2024, time.June, 5, 7, 8, 9, 0, time.UTC)
	require.Equal(t, "x#Wed Jun 05 07:08:09 UTC 2024\n", string(AppendDate([]byte("x"), when)))
}
