package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPropertiesCodecRoundTrip(t *testing.T) {
	in := map[string]any{
		"plain":           "value",
		"key with space":  " leading space",
		"k=e:y":           "a=b:c",
		"#notcomment":     "#value",
		"!bang":           "!x",
		"ctl":             "tab\there\nnewline\rcr\fff\x01",
		"backslash":       `C:\dir\`,
		"unicode":         "région 😀",
		"nested.kept":     "1",
		"num":             42,
		"list":            []any{"a", "b"},
		"empty":           "",
		"trailing spaces": "v  ",
	}
	c := propertiesCodec{}
	b, err := c.Encode(in)
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, c.Decode(b, out))
	want := map[string]any{}
	for k, v := range in {
		want[k] = stringify(v)
	}
	require.Equal(t, want, out)

	// Nested maps are written with dotted keys.
	b, err = c.Encode(map[string]any{"log": map[string]any{"dirs": "/a"}})
	require.NoError(t, err)
	require.Equal(t, "log.dirs=/a\n", string(b))

	// Java's load(InputStream) reads ISO-8859-1, so non-ASCII goes out as
	// \uXXXX, and store's separators are escaped wherever they are.
	b, err = c.Encode(map[string]any{"b": "région=a:b#c!", "a": " x"})
	require.NoError(t, err)
	require.Equal(t, "a=\\ x\nb=r\\u00E9gion\\=a\\:b\\#c\\!\n", string(b))
}
