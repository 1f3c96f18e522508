package runnable

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFind(t *testing.T) {
	blocks, err := Find("testdata/root")
	require.NoError(t, err)
	require.Equal(t, []Block{
		{File: "README.md", Line: 10, Code: "qk topic create demo\necho \"$QK_BROKERS\"\n"},
		{File: "README.md", Line: 18, Code: ""},
		{File: "docs/guide.md", Line: 6, Code: "qk topic list\n  indented more\n"},
		{File: "docs/guide.md", Line: 12, Code: "cat <<'X'\n```\nX\n"},
	}, blocks)
	require.Equal(t, "docs/guide.md:6", blocks[2].String())
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, err string }{
		"marker then prose":   {Marker + "\nqk topic list\n", "x.md:2: " + Marker + " must be followed by a ```sh fence"},
		"marker then blank":   {Marker + "\n\n```sh\nqk topic list\n```\n", "x.md:2:"},
		"marker then bash":    {Marker + "\n```bash\nqk topic list\n```\n", "not \"```bash\""},
		"marker at the end":   {"text\n" + Marker + "\n", "x.md:2: " + Marker + " at the end of the file"},
		"unclosed":            {Marker + "\n```sh\nqk topic list\n", "x.md:2: runnable block has no closing fence"},
		"short closing fence": {Marker + "\n````sh\nqk topic list\n```\n", "no closing fence"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("x.md", []byte(tc.doc))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestParseNone(t *testing.T) {
	blocks, err := Parse("x.md", []byte("```sh\nqk broker start\n```\n<!-- not runnable -->\n```sh\nls\n```\n"))
	require.NoError(t, err)
	require.Empty(t, blocks)
	_, err = Parse("x.md", []byte(strings.Repeat("x", 1<<16)))
	require.NoError(t, err, "a long line")
}
