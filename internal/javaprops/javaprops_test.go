package javaprops

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProperties(t *testing.T) {
	type kv = [2]string
	tests := []struct {
		name string
		in   string
		want []kv
	}{
		{"equals", "a=b", []kv{{"a", "b"}}},
		{"colon", "a: b", []kv{{"a", "b"}}},
		{"space", "a b", []kv{{"a", "b"}}},
		{"tab and form feed", "a\t\fb", []kv{{"a", "b"}}},
		{"spaces around equals, trailing kept", "a   =   b  ", []kv{{"a", "b  "}}},
		{"leading whitespace", "  \t a=b", []kv{{"a", "b"}}},
		{"only first separator", "a==b", []kv{{"a", "=b"}}},
		{"colon then equals", "a:=b", []kv{{"a", "=b"}}},
		{"space then colon", "a : b:c", []kv{{"a", "b:c"}}},
		{"key alone", "a", []kv{{"a", ""}}},
		{"empty value", "a=", []kv{{"a", ""}}},
		{"comments", "# c\n! c\n  # indented\na=b", []kv{{"a", "b"}}},
		{"hash inside value", "a=b#c", []kv{{"a", "b#c"}}},
		{"blank lines", "\n\n  \na=b\n\n", []kv{{"a", "b"}}},
		{"continuation", "a=b,\\\n     c", []kv{{"a", "b,c"}}},
		{"continuation twice", "a=1\\\n 2\\\n\t3", []kv{{"a", "123"}}},
		{"continuation keeps #", "a=b\\\n#c", []kv{{"a", "b#c"}}},
		{"continuation in key", "ab\\\n  cd=e", []kv{{"abcd", "e"}}},
		{"even backslashes do not continue", "a=b\\\\\nc=d", []kv{{"a", `b\`}, {"c", "d"}}},
		{"comment does not continue", "# x \\\na=b", []kv{{"a", "b"}}},
		{"backslash at end of input", "a=x\\", []kv{{"a", "x"}}},
		{"escaped separators in key", `a\=b\:c\ d=e`, []kv{{"a=b:c d", "e"}}},
		{"escapes", `a=\t\n\r\f`, []kv{{"a", "\t\n\r\f"}}},
		{"unicode escape", `a=\u0041\u00e9`, []kv{{"a", "Aé"}}},
		{"surrogate pair", `a=\uD83D\uDE00`, []kv{{"a", "😀"}}},
		{"other escapes are the char", `a=\q\\\#`, []kv{{"a", `q\#`}}},
		{"escaped leading space", `a=\ b`, []kv{{"a", " b"}}},
		{"CRLF", "a=1\r\nb=2\r\n", []kv{{"a", "1"}, {"b", "2"}}},
		{"CR", "a=1\rb=2", []kv{{"a", "1"}, {"b", "2"}}},
		{"CRLF continuation", "a=1\\\r\n  2", []kv{{"a", "12"}}},
		{"duplicates kept in order", "a=1\na=2", []kv{{"a", "1"}, {"a", "2"}}},
		{"BOM", "\uFEFFa=b", []kv{{"a", "b"}}},
		{"UTF-8 value", "a=région", []kv{{"a", "région"}}},
		{"ISO-8859-1 fallback", "a=r\xe9gion", []kv{{"a", "région"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props, err := Parse([]byte(tt.in))
			require.NoError(t, err)
			var got []kv
			for _, p := range props {
				got = append(got, kv{p.Key, p.Value})
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bad hex", "a=1\nb=\\u00zz", `line 2: malformed \uxxxx escape "\\u00zz"`},
		{"short", "a=\\u12", `line 1: malformed \uxxxx escape "\\u12"`},
		{"in key", "\\uXYZW=1", `line 1: malformed \uxxxx escape "\\uXYZW"`},
		{"line of continued entry", "a=1\\\n2\nb=\\u1", `line 3: malformed \uxxxx escape "\\u1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestPropertiesLineNumbers(t *testing.T) {
	props, err := Parse([]byte("# c\na=1\\\n 2\n\nb=3"))
	require.NoError(t, err)
	require.Equal(t, []Property{{"a", "12", 2}, {"b", "3", 5}}, props)
}

func TestMapLaterWins(t *testing.T) {
	props, err := Parse([]byte("a=1\nb=2\na=3"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "3", "b": "2"}, Map(props))
}
