package inspect

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJavaString(t *testing.T) {
	const r = "\ufffd"
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"ascii", []byte("abc"), "abc"},
		{"valid multibyte", []byte("é€😀"), "é€😀"},
		{"lone continuation", []byte{'a', 0x80, 'b'}, "a" + r + "b"},
		{"truncated 3-byte is one replacement", []byte{0xe2, 0x82, 'A'}, r + "A"},
		{"truncated 3-byte at end", []byte{'x', 0xe2, 0x82}, "x" + r},
		{"overlong E0 80", []byte{0xe0, 0x80, 0x80}, r + r + r},
		{"encoded surrogate is one replacement", []byte{0xed, 0xa0, 0x80, 'z'}, r + "z"},
		{"truncated 4-byte", []byte{0xf0, 0x9f, 0x98, 'A'}, r + "A"},
		{"F4 above U+10FFFF", []byte{0xf4, 0x90, 0x80, 0x80}, r + r + r + r},
		{"C0 and F5 leads", []byte{0xc0, 0xaf, 0xf5}, r + r + r},
		{"null byte kept", []byte{0, 'a'}, "\x00a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, javaString(tc.in))
		})
	}
}

func TestJSONStringEscaping(t *testing.T) {
	got := string(appendJSONString(nil, "a\"b\\c\n\t\x01</>é\xff"))
	require.Equal(t, `"a\"b\\c\n\t\u0001</>é`+"\ufffd"+`"`, got)
}
